"""Bandwidth probe: a streaming device-to-device copy, GB/s per second, as a neighbour or as the hog beside it.

Run as a module, `python3 -m <package>.bandwidth --json --role neighbour|hog --window S [--delay S --hog-seconds S]
[--mib 1024]`: human lines first, one JSON object last (docs/probes.md lists every field). A copy kernel (16-byte
loads and stores, grid-stride) copies one buffer of `--mib` into another, launched and synchronised in a loop; a
second counts the bytes read and written by the copies that finished in it (1 GB = 10^9 bytes). Both roles last
exactly `--window` seconds, so the steps after this one start together in both Pods:
- neighbour: copies from its start to the window's end;
- hog: copies flat out from `--delay` after its start for `--hog-seconds`, then frees its buffers and idles.
A kernel, not cuMemcpyDtoD, so a compute limit (HAMi-core's token bucket, MPS's thread percentage) holds it as it
holds a real workload's kernels. Nothing here is judged: memory bandwidth is shared by every software mechanism.
The PTX is JIT-compiled by the driver (cuModuleLoadData). Standard library only.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from . import provenance
from .cuda import MIB, Cuda, ProbeError
from .fault import ENV_KEYS, HAMI_KEYS, sleep_until, timed_loop
from .output import now_iso, print_result, record_error, say
from .process import mechanism_of, preload_evidence, reported_env
from .timeline import iso, stats, whole_seconds

# copy(dst, src, n): n 16-byte words, each thread striding by the grid. PTX 6.0 / sm_52 (a T4's or an H200's driver).
PTX = """
.version 6.0
.target sm_52
.address_size 64

.visible .entry copy(.param .u64 dst, .param .u64 src, .param .u64 n)
{
    .reg .pred %p;
    .reg .b32 %r<10>;
    .reg .b64 %rd<10>;
    ld.param.u64 %rd1, [dst];
    ld.param.u64 %rd2, [src];
    ld.param.u64 %rd3, [n];
    cvta.to.global.u64 %rd1, %rd1;
    cvta.to.global.u64 %rd2, %rd2;
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %ntid.x;
    mov.u32 %r3, %tid.x;
    mov.u32 %r4, %nctaid.x;
    mad.lo.u32 %r5, %r1, %r2, %r3;
    cvt.u64.u32 %rd4, %r5;
    mul.wide.u32 %rd5, %r4, %r2;
LOOP:
    setp.ge.u64 %p, %rd4, %rd3;
    @%p bra DONE;
    shl.b64 %rd6, %rd4, 4;
    add.s64 %rd7, %rd2, %rd6;
    add.s64 %rd8, %rd1, %rd6;
    ld.global.v4.u32 {%r6, %r7, %r8, %r9}, [%rd7];
    st.global.v4.u32 [%rd8], {%r6, %r7, %r8, %r9};
    add.s64 %rd4, %rd4, %rd5;
    bra LOOP;
DONE:
    ret;
}
"""
BLOCKS_PER_SM = 8
THREADS = 256
MIN_MIB = 64
"""The copy halves its buffers until both fit under the quota, down to this."""
END_MARGIN_S = 0.2
"""The copying ends this long before the window, so buffers are freed and the result printed in time."""
GIGA = 1e9

Clock = Callable[[], float]


class Copier:
    """Two buffers of `mib` (halved until both fit) and the copy kernel, on this process's primary context."""

    def __init__(self, cuda: Any, mib: int) -> None:
        self.cuda = cuda
        module = cuda.load_ptx(PTX)
        self.fn = cuda.function(module, "copy")
        self.blocks = max(min(BLOCKS_PER_SM * cuda.sm_count(), 65535), 1)
        self.buffers: list[int] = []
        while mib >= MIN_MIB:
            first, err = cuda.try_alloc(mib * MIB)
            second, err2 = cuda.try_alloc(mib * MIB) if first is not None else (None, err)
            if first is not None and second is not None:
                self.buffers = [first, second]
                break
            if first is not None:
                cuda.free(first)
            last = err2 or err
            mib //= 2
        else:
            raise ProbeError(f"cannot allocate two {MIN_MIB} MiB copy buffers: {last}")
        self.mib = mib

    @property
    def bytes_moved(self) -> int:
        """Bytes one copy reads and writes."""
        return 2 * self.mib * MIB

    def copy(self) -> None:
        words = ctypes.c_uint64(self.mib * MIB // 16)
        dst, src = (ctypes.c_uint64(b) for b in self.buffers)
        self.cuda.launch(self.fn, self.blocks, THREADS, [dst, src, words])
        self.cuda.synchronize()

    def free(self) -> None:
        for buffer in self.buffers:
            self.cuda.free(buffer)
        self.buffers = []


def copy_loop(copy: Callable[[], None], bytes_moved: int, until: float, clock: Clock = time.time) -> dict[str, Any]:
    """Copy until `until` or the first CUDA error: GB/s per second (bytes read + written), copies, the error."""
    timeline, copies, now, error = timed_loop(copy, bytes_moved, until, clock)
    line = timeline.to_dict(now, scale=1 / GIGA)
    return {
        "timeline": line,
        "copies": copies,
        "gbps": stats(whole_seconds(line)),
        "copy_started_at": iso(timeline.t0),
        "copy_ended_at": iso(now),
        **error,
    }


def measure(args: argparse.Namespace, result: dict[str, Any], cuda: Any, clock: Clock = time.time,
            sleep: Callable[[float], None] = time.sleep) -> None:  # fmt: skip
    """The role on one context: copy (from the start, or from --delay for --hog-seconds), free, idle to the end."""
    start = clock()
    end = start + args.window
    cuda.init()
    result["gpu_name"], result["gpu_uuid"] = cuda.name(), cuda.uuid()
    cuda.use_primary_context()
    result["sm_count"] = cuda.sm_count()
    copier = Copier(cuda, args.mib)
    result["copy"] = {"kernel": "copy", "mib": copier.mib, "bytes_per_copy": copier.bytes_moved,
                      "blocks": copier.blocks, "threads": THREADS}  # fmt: skip
    try:
        until = end - END_MARGIN_S
        if args.role == "hog":
            sleep_until(start + args.delay, clock, sleep)
            until = min(start + args.delay + args.hog_seconds, until)
        result.update(copy_loop(copier.copy, copier.bytes_moved, until, clock))
    finally:
        if result.get("cuda_error") is None:
            copier.free()
    result["ok"] = True
    sleep_until(end, clock, sleep)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", action="store_true", help="print the result as one JSON object, last line")
    p.add_argument("--role", choices=("neighbour", "hog"), default="neighbour")
    p.add_argument("--window", type=float, default=8.0, help="seconds this step lasts, in either role")
    p.add_argument("--delay", type=float, default=3.5, help="hog: seconds after its start that it starts copying")
    p.add_argument("--hog-seconds", type=float, default=3.0, help="hog: how long it copies")
    p.add_argument("--mib", type=int, default=1024, help="the size of one copy (two buffers of it)")
    p.add_argument("--mechanism", default="auto", choices=("auto", "hami-core", "mps", "none"))
    args = p.parse_args(argv)
    if args.window <= 0 or args.mib < MIN_MIB:
        p.error(f"--window must be > 0 and --mib ≥ {MIN_MIB} (got {args.window} s, {args.mib} MiB)")
    if args.role == "hog" and (args.delay < 0 or args.hog_seconds <= 0 or args.delay + args.hog_seconds > args.window):
        p.error(f"--delay {args.delay} + --hog-seconds {args.hog_seconds} must fit inside --window {args.window}")
    return args


def main(argv: Sequence[str] | None = None, cuda: Any = None) -> int:
    """Run the role; 0 when it copied (the figures are in the JSON), 1 when it could not."""
    args = parse_args(argv)
    env = reported_env(ENV_KEYS)
    preload = preload_evidence()
    result: dict[str, Any] = {
        "probe": "bandwidth", "role": args.role, "ok": False, "error": None, "pid": os.getpid(), "children": [],
        "window_s": args.window, "delay_s": args.delay if args.role == "hog" else None,
        "hog_seconds": args.hog_seconds if args.role == "hog" else None,
        "mechanism": mechanism_of(env, preload["mapped"], HAMI_KEYS, args.mechanism), "env": env,
        "preload": preload, "gpu_uuid": None, "gpu_name": None, "sm_count": None, "copy": None,
        "copy_started_at": None, "copy_ended_at": None, "copies": 0, "timeline": None, "gbps": None,
        "cuda_error": None, "cuda_error_at": None, "started_at": now_iso(), "ended_at": None,
    }  # fmt: skip
    try:
        measure(args, result, cuda or Cuda())
    except Exception as exc:  # a probe reports, never crashes: the verifier needs the JSON
        record_error(result, exc)
    result["ended_at"] = now_iso()
    result["pod"] = provenance.block(say)
    gbps = result.get("gbps") or {}
    say(f"{args.role}: {result['copies']} copies of {(result.get('copy') or {}).get('mib')} MiB, GB/s per second "
        f"{(result.get('timeline') or {}).get('per_s')} (mean {gbps.get('mean')})" if result["ok"]
        else f"error: {result['error']}")  # fmt: skip
    if args.json:
        print_result(result)
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
