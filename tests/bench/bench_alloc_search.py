"""Benchmark, on a real GPU: the memory probe's binary search against the labs' 256 MiB linear method.

`python3 tests/bench/bench_alloc_search.py [--repeats 3] [--cap-mib 4000]` on any GPU host (stdlib only).
Both answer "how much can this container allocate?": the binary search finds the largest single
allocation to 1 MiB; the linear method takes 256 MiB chunks until refused, so its answer is a multiple
of 256 MiB. Prints calls, seconds and precision of each, their ratios, and one JSON line last.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.abspath(ROOT))  # a script, not a test: the probes are modules of the package there

from components.incluster.probes.cuda import MIB, Cuda, ProbeError  # noqa: E402
from components.incluster.probes.memory import CHUNK_MIB, Allocator, chunks_phase, largest_allocation, search_bound  # noqa: E402


class CappedCuda:
    """A quota of `cap_mib` in front of the real driver, HAMi-core's rule: in use + request > cap is refused.

    What is already in use (the context) is charged, as HAMi-core charges it; below the cap every
    allocation is a real cuMemAlloc, so the timings are the card's.
    """

    def __init__(self, cuda: Cuda, cap_mib: int) -> None:
        free, total = cuda.mem_info()
        self.cuda, self.cap, self.used = cuda, cap_mib * MIB, total - free
        self.sizes: dict[int, int] = {}

    def mem_info(self) -> tuple[int, int]:
        return self.cap - self.used, self.cap

    def try_alloc(self, nbytes: int) -> tuple[int | None, str | None]:
        if self.used + nbytes > self.cap:
            return None, "CUDA_ERROR_OUT_OF_MEMORY"
        ptr, err = self.cuda.try_alloc(nbytes)
        if ptr is not None:
            self.used += nbytes
            self.sizes[ptr] = nbytes
        return ptr, err

    def free(self, ptr: int) -> None:
        self.cuda.free(ptr)
        self.used -= self.sizes.pop(ptr)


def main() -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.bench.bench_alloc_search", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cap-mib", type=int, default=None, help="emulate a quota of this size (no HAMi-core here)")
    args = parser.parse_args()
    cuda = Cuda()
    cuda.init()
    cuda.use_primary_context()
    target = CappedCuda(cuda, args.cap_mib) if args.cap_mib else cuda
    free, total = target.mem_info()
    free_mib, total_mib = free // MIB, total // MIB
    alloc = Allocator(target)
    print(
        f"{cuda.name()}: free {free_mib} MiB of {total_mib} MiB"
        + (f" (emulated {args.cap_mib} MiB quota)" if args.cap_mib else "")
    )

    binary_s, linear_s = [], []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        largest, binary_calls = largest_allocation(alloc.fits, free_mib, total_mib)
        binary_s.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        chunks = chunks_phase(alloc, lambda _line: None)
        linear_s.append(time.perf_counter() - t0)

    # The 1 MiB claim, checked outside the timed runs: the answer fits and one MiB more does not.
    exact = alloc.fits(largest) and not alloc.fits(largest + 1)
    report = {
        "gpu": cuda.name(),
        "emulated_cap_mib": args.cap_mib,
        "visible_total_mib": total_mib,
        "visible_free_mib": free_mib,
        "repeats": args.repeats,
        "binary": {
            "largest_single_mib": largest,
            "calls": binary_calls,
            "bound": search_bound(total_mib),
            "seconds_median": round(statistics.median(binary_s), 4),
            "precision_mib": 1 if exact else None,
            "exact_checked": exact,
        },
        "linear": {
            "allocated_mib": chunks["allocated_mib"],
            "calls": chunks["calls"],
            "seconds_median": round(statistics.median(linear_s), 4),
            "precision_mib": CHUNK_MIB,
            "short_of_binary_mib": largest - chunks["allocated_mib"],
        },
    }
    report["ratio"] = {
        "calls_linear_over_binary": round(chunks["calls"] / max(binary_calls, 1), 2),
        "seconds_linear_over_binary": round(statistics.median(linear_s) / max(statistics.median(binary_s), 1e-9), 2),
    }
    b, lin = report["binary"], report["linear"]
    print(f"binary search: {b['largest_single_mib']} MiB in {b['calls']} calls (bound {b['bound']}), "
          f"{b['seconds_median']} s, exact to 1 MiB: {exact}")  # fmt: skip
    print(f"256 MiB linear: {lin['allocated_mib']} MiB in {lin['calls']} calls, {lin['seconds_median']} s, "
          f"{lin['short_of_binary_mib']} MiB short of the single-allocation answer")  # fmt: skip
    print(f"ratio linear / binary: {report['ratio']['calls_linear_over_binary']}× the calls, "
          f"{report['ratio']['seconds_linear_over_binary']}× the time")  # fmt: skip
    print(json.dumps(report, separators=(",", ":")))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except ProbeError as exc:  # no GPU here: say so in one line
        print(f"bench_alloc_search: {exc}", file=sys.stderr)
        sys.exit(1)
