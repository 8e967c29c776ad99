"""Memory probe: what a container is told about its GPU memory, and what it can really allocate.

Run as `python3 -m <package>.memory --json [--expect-limit-mib 4000] ...`: human lines first, one JSON object last.
Phases, in order: the view (env, /etc/ld.so.preload, UUID, NVML, cuMemGetInfo on the primary context);
HOLD (hold N MiB for S seconds, then ask M more: what overlaps between two Pods); SWEEP (the 2…6 GiB
steps); CHUNKS (256 MiB until refused); the largest single allocation by binary search to 1 MiB;
FINDINGS (with --findings: child processes that try what the mechanism may not stop: under HAMi-core a fresh
shared-cache file, one with its own limit, a cuCtxCreate context; under MPS a client's own pinned limit and a
client that leaves the MPS server).
The quota counts as enforced either way a mechanism enforces it: HAMi-core rewrites the view (total = quota)
and refuses past it with an OOM line; MPS leaves the total at the card's, shows free memory at the pinned limit
and refuses there without any line. `enforcement` records which.
Standard library only; exits non-zero with a JSON error when there is no GPU or library.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from . import provenance
from .cuda import MIB, Cuda
from .memory_child import ChildRunner, child_main, own_context_mib, run_child
from .memory_findings import all_findings
from .nvml import open_nvml
from .output import fit_result, now_iso, print_result, record_error, say, touch, write_result_file
from .process import captured_stderr, mechanism_of, parse_oom_line, preload_evidence, reported_env

# The HAMi-core env that says this process is memory-limited (HAMi sets the indexed one, KAI's binder the other).
HAMI_MEMORY_KEYS = ("CUDA_DEVICE_MEMORY_LIMIT_0", "CUDA_DEVICE_MEMORY_LIMIT")
ENV_KEYS = (
    "CUDA_DEVICE_MEMORY_LIMIT_0",
    "CUDA_DEVICE_MEMORY_LIMIT",
    "CUDA_DEVICE_SM_LIMIT",
    "NVIDIA_VISIBLE_DEVICES",
    "CUDA_VISIBLE_DEVICES",
    "CUDA_DEVICE_MEMORY_SHARED_CACHE",
    "GPU_CORE_UTILIZATION_POLICY",
    "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT",
    "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE",
    "CUDA_MPS_PIPE_DIRECTORY",
    "LD_PRELOAD",
)
CHUNK_MIB = 256
MAX_CHUNKS = 4096
"""1 TiB of chunks: a bound for a view that hides memory it does not stop us taking."""
NEAR_MIB = 64
"""How far below the reported free memory the search looks second, before halving."""
DROP_ORDER = ("hami_oom_lines", "phases.sweep", "ld_so_preload", "preload.listed", "findings", "env", "phases")
"""What the result file loses first when it must fit a 4096-byte termination message."""


def search_bound(total_mib: int) -> int:
    """The most allocation calls the search may make on a card of `total_mib`."""
    return math.ceil(math.log2(max(total_mib, 2))) + 2


def largest_allocation(alloc: Callable[[int], bool], free_mib: int, total_mib: int) -> tuple[int, int]:
    """Largest `mib` for which `alloc(mib)` succeeds, to 1 MiB, in at most search_bound(total_mib) calls.

    Assumes success is monotone (if n fits, less fits) and that total_mib + 1 does not fit. Starts at the
    reported free memory, which under a quota is often the exact answer: then two calls settle it; when
    it does not fit, 64 MiB below it, so the calls stay near the answer (on a bare card large allocations
    are what cost time).
    Returns (largest_mib, calls); 0 when not even 1 MiB fits.
    """
    calls = 0

    def fits(mib: int) -> bool:
        nonlocal calls
        calls += 1
        return alloc(mib)

    if total_mib < 1:
        return 0, 0
    lo, hi = 0, total_mib + 1  # invariant: lo fits (0 trivially), hi does not
    start = min(max(free_mib, 1), total_mib)
    if fits(start):
        lo = start
        if start < total_mib:
            if not fits(start + 1):
                return start, calls
            lo = start + 1
    elif start > 2 * NEAR_MIB and fits(start - NEAR_MIB):
        # A bare card's free memory is a few MiB more than one allocation takes: look just below it first.
        lo, hi = start - NEAR_MIB, start
    else:
        hi = start - NEAR_MIB if start > 2 * NEAR_MIB else start
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid
    return lo, calls


def enforcement(result: dict[str, Any]) -> dict[str, Any]:
    """How the quota shows itself: the view rewritten to it (HAMi-core), free memory at it (MPS), OOM lines."""
    expected = result.get("expected_limit_mib")
    total, free = result.get("visible_total_mib"), result.get("visible_free_mib")
    return {
        "view_rewritten": None if expected is None or total is None else total <= expected,
        "free_within_limit": None if expected is None or free is None else free <= expected,
        "oom_lines": len(result.get("hami_oom_lines") or []),
    }


def judge_limit(result: dict[str, Any]) -> bool | None:
    """Whether the expected quota held: nothing larger fitted, the extra ask was refused, and the view or the
    free memory shows no more than the quota (HAMi-core rewrites the total; MPS only lowers what is free).

    None when no expectation was given. A hold that failed leaves the extra ask untried, so not enforced.
    """
    expected = result.get("expected_limit_mib")
    if expected is None:
        return None
    hold = (result.get("phases") or {}).get("hold") or {}
    chunks = (result.get("phases") or {}).get("chunks") or {}
    largest = result.get("largest_alloc_mib")
    shown = enforcement(result)
    return bool(
        result.get("ok")
        and largest is not None
        and largest <= expected
        and (shown["view_rewritten"] or shown["free_within_limit"])
        and hold.get("ok") is True
        and hold.get("extra_ok") is False
        and (chunks.get("allocated_mib") or 0) <= expected
    )


def should_mark_ready(result: dict[str, Any]) -> bool:
    """The readiness file is touched only for a finished probe whose expectation (if any) held."""
    return bool(result.get("ok")) and (result.get("expected_limit_mib") is None or result.get("limit_enforced") is True)


def new_result(expected_limit_mib: int | None) -> dict[str, Any]:
    """Every key the judge reads, present from the start, so an early error still gives a complete shape."""
    return {
        "probe": "memory",
        "ok": False,
        "error": None,
        "env": reported_env(ENV_KEYS),
        "ld_so_preload": read_preload(),
        "preload": preload_evidence(),
        "mechanism": None,
        "gpu_uuid": None,
        "gpu_name": None,
        "nvml_total_mib": None,
        "nvml_free_mib": None,
        "visible_total_mib": None,
        "visible_free_mib": None,
        "expected_limit_mib": expected_limit_mib,
        "largest_alloc_mib": None,
        "search_calls": 0,
        "context_overhead_mib": None,
        "own_context_mib": None,
        "phases": {"hold": None, "sweep": [], "chunks": None},
        "findings": [],
        "hami_oom_lines": [],
        "limit_enforced": None,
        "enforcement": None,
        "keep_holding_since": None,
        "started_at": now_iso(),
        "ended_at": None,
        "cuda_error": None,
    }


def read_preload(path: str = "/etc/ld.so.preload") -> list[str]:
    """Lines of /etc/ld.so.preload (where HAMi-core's libvgpu.so is registered); empty when absent."""
    try:
        with open(path) as f:
            return [line.strip() for line in f if line.strip()]
    except OSError:
        return []


class Allocator:
    """Allocations on the current context, remembering the last CUDA error name a refusal gave."""

    def __init__(self, cuda: Any) -> None:
        self.cuda = cuda
        self.last_error: str | None = None

    def take(self, mib: float) -> tuple[int | None, str | None]:
        ptr, err = self.cuda.try_alloc(int(mib * MIB))
        if err:
            self.last_error = err
        return ptr, err

    def fits(self, mib: int) -> bool:
        """Allocate and free at once: does one allocation of `mib` succeed?"""
        ptr, _ = self.take(mib)
        if ptr is None:
            return False
        self.cuda.free(ptr)
        return True


def hold_phase(alloc: Allocator, hold_mib: int, seconds: int, extra_mib: int, log: Callable[[str], None]) -> dict:
    """Hold `hold_mib` for `seconds`, then ask `extra_mib` more, which a quota below the sum must refuse."""
    phase: dict[str, Any] = {"hold_mib": hold_mib, "ok": False, "error": None, "seconds": seconds,
                             "started_at": now_iso(), "ended_at": None,
                             "extra_mib": extra_mib, "extra_ok": False, "extra_error": None}  # fmt: skip
    held, phase["error"] = alloc.take(hold_mib)
    if held is None:
        phase["ended_at"] = now_iso()
        phase["extra_error"] = "not tried: the hold was refused"
        log(f"hold {hold_mib} MiB: refused ({phase['error']})")
        return phase
    phase["ok"] = True
    log(f"hold {hold_mib} MiB: ok, keeping it {seconds} s")
    time.sleep(seconds)
    extra, phase["extra_error"] = alloc.take(extra_mib)
    phase["extra_ok"] = extra is not None
    log(f"extra {extra_mib} MiB on top: {'ok' if extra is not None else 'refused (' + str(phase['extra_error']) + ')'}")
    if extra is not None:
        alloc.cuda.free(extra)
    alloc.cuda.free(held)
    phase["ended_at"] = now_iso()
    return phase


def sweep_phase(alloc: Allocator, gibs: Sequence[float], log: Callable[[str], None]) -> list[dict]:
    """One allocation per size, each freed before the next."""
    steps = []
    for gib in gibs:
        ptr, err = alloc.take(gib * 1024)
        log(f"sweep {gib:g} GiB: {'ok' if ptr is not None else 'refused (' + str(err) + ')'}")
        if ptr is not None:
            alloc.cuda.free(ptr)
        steps.append({"gib": float(gib), "ok": ptr is not None, "error": err})
    return steps


def chunks_phase(alloc: Allocator, log: Callable[[str], None]) -> dict:
    """256 MiB at a time, all kept, until refused; then all freed."""
    held: list[int] = []
    error = None
    while len(held) < MAX_CHUNKS:
        ptr, error = alloc.take(CHUNK_MIB)
        if ptr is None:
            break
        held.append(ptr)
    calls = len(held) + (1 if error else 0)
    for ptr in held:
        alloc.cuda.free(ptr)
    log(f"chunks of {CHUNK_MIB} MiB: {len(held) * CHUNK_MIB} MiB in {calls} calls, then {error}")
    return {"chunk_mib": CHUNK_MIB, "allocated_mib": len(held) * CHUNK_MIB, "calls": calls, "error": error}


def measure(
    cuda: Any,
    nvml: Any,
    args: argparse.Namespace,
    result: dict[str, Any],
    log: Callable[[str], None],
    runner: ChildRunner = run_child,
) -> Allocator:
    """All phases in order, filling `result` as they go (so an error midway keeps what was measured)."""
    cuda.init()
    result["gpu_name"] = cuda.name()
    result["gpu_uuid"] = (nvml.uuid() if nvml else None) or cuda.uuid()
    cuda.use_primary_context()
    result["own_context_mib"] = own_context_mib(nvml)
    if nvml:
        total, free = nvml.memory()
        result["nvml_total_mib"], result["nvml_free_mib"] = total // MIB, free // MIB
    free, total = cuda.mem_info()
    result["visible_total_mib"], result["visible_free_mib"] = total // MIB, free // MIB
    log(f"{result['gpu_name']} {result['gpu_uuid']}: cuMemGetInfo total {total // MIB} MiB, free {free // MIB} MiB; "
        f"NVML total {result['nvml_total_mib']} MiB")  # fmt: skip
    result["mechanism"] = mechanism_of(result["env"], result["preload"]["mapped"], HAMI_MEMORY_KEYS, args.mechanism)
    log(f"env {json.dumps(result['env'])}; preload {result['preload']}; mechanism {result['mechanism']}")
    alloc = Allocator(cuda)
    phases = result["phases"]
    with captured_stderr(result["hami_oom_lines"]):
        phases["hold"] = hold_phase(alloc, args.hold_mib, args.hold_seconds, args.extra_mib, log)
        phases["sweep"] = sweep_phase(alloc, args.sweep_gib, log)
        phases["chunks"] = chunks_phase(alloc, log)
        largest, calls = largest_allocation(alloc.fits, free // MIB, total // MIB)
    result["largest_alloc_mib"], result["search_calls"] = largest, calls
    log(f"largest single allocation: {largest} MiB ({calls} calls, bound {search_bound(total // MIB)})")
    expected = result["expected_limit_mib"]
    if expected is not None and largest <= expected:
        # Only under an enforced quota is the shortfall the context's charge; above it, a number means nothing.
        result["context_overhead_mib"] = expected - largest
    if args.findings:
        all_findings(alloc, result, runner, log)
    result["hami_oom_lines"] = [line for line in result["hami_oom_lines"] if parse_oom_line(line)]
    result["cuda_error"] = alloc.last_error
    result["ok"] = True
    result["enforcement"] = enforcement(result)
    result["limit_enforced"] = judge_limit(result)
    return alloc


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", action="store_true", help="print the result as one JSON object, last line")
    p.add_argument("--expect-limit-mib", type=int, default=None, help="the quota this container should get")
    p.add_argument("--hold-mib", type=int, default=3072)
    p.add_argument("--hold-seconds", type=int, default=30)
    p.add_argument("--extra-mib", type=int, default=2048)
    p.add_argument("--sweep-gib", type=lambda s: [float(x) for x in s.split(",") if x], default=[2, 3, 3.8, 4, 4.5, 6])
    p.add_argument("--findings", action="store_true", help="try what a quota may not stop, in child processes")
    p.add_argument("--mechanism", default="auto", choices=("auto", "hami-core", "mps", "none"))
    p.add_argument(
        "--result-file", default=None, help="also write the JSON here (≤ 4096 bytes), e.g. /dev/termination-log"
    )
    p.add_argument("--ready-file", default=None, help="touch this when the probe finished and the quota held")
    p.add_argument("--keep-holding", type=int, default=None, metavar="MIB", help="then hold MIB until killed")
    p.add_argument("--delay", type=float, default=0.0, help="seconds to wait before the first CUDA call")
    p.add_argument("--child", choices=("alloc", "ctx-create", "view", "largest"), help=argparse.SUPPRESS)
    p.add_argument("--child-mib", type=int, default=0, help=argparse.SUPPRESS)
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the probe; 0 when it finished (the judgement is in the JSON), 1 when it could not measure."""
    args = parse_args(argv)
    if args.child:
        return child_main(args.child, args.child_mib)
    # No context of ours while a neighbour's limited process looks up its host PID (components/verify/phases.py).
    time.sleep(max(args.delay, 0.0))
    result = new_result(args.expect_limit_mib)
    alloc = None
    try:
        cuda = Cuda()
        cuda.init()
        alloc = measure(cuda, open_nvml(cuda.uuid()), args, result, say)
    except Exception as exc:  # a probe reports, never crashes: the verifier needs the JSON
        record_error(result, exc)
    kept = None
    if alloc is not None and args.keep_holding:
        # Allocate before printing, so whoever reads the result sees a monitor already showing the hold.
        kept, err = alloc.take(args.keep_holding)
        if kept is not None:
            result["keep_holding_since"] = now_iso()
        else:
            result["keep_holding_error"] = err
    result["ended_at"] = now_iso()
    result["pod"] = provenance.block(say)
    say(f"limit_enforced: {result['limit_enforced']}" if result["ok"] else f"error: {result['error']}")
    if args.json:
        print_result(result)
    write_result_file(args.result_file, fit_result(result, DROP_ORDER))
    if should_mark_ready(result):
        touch(args.ready_file)
    if kept is not None:
        while True:  # held until the Pod is deleted
            time.sleep(3600)
    return 0 if result["ok"] and not result.get("keep_holding_error") else 1


if __name__ == "__main__":
    sys.exit(main())
