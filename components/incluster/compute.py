"""Compute probe: how much kernel work a container gets per second, for two kernel shapes.

Run as `python3 compute.py --json [--seconds 20] [--baseline]`: human lines first, one JSON object last.
The kernels are PTX text JIT-compiled by the driver (cuModuleLoadData): no nvcc, no compiler image.
"many_blocks" launches many short blocks over every multiprocessor; "few_blocks" two blocks that run long.
Each is launched in a loop for --seconds; the judged figure is the steady state (median per-second work
after the first 5 s), because HAMi-core's throttle only bites after 3–4 s. --baseline measures the same
launches again in a child with CUDA_DISABLE_CONTROL=true (HAMi-core then does not throttle) on the same card.
Standard library only; exits non-zero with a JSON error when there is no GPU or library.
"""

from __future__ import annotations

import argparse
import ctypes
import functools
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _cuda import Cuda, ProbeError, fit_result, now_iso, touch, write_result_file

# Each thread runs `iters` dependent FMAs and stores the result (so the loop is not optimised away).
# PTX ISA 6.0 / sm_52: old enough that every driver from the T4's (sm_75) to the H200's (sm_90) JITs it.
PTX = """
.version 6.0
.target sm_52
.address_size 64

.visible .entry spin(
    .param .u64 out,
    .param .u32 iters
)
{
    .reg .pred %p;
    .reg .b32 %r<8>;
    .reg .f32 %f<4>;
    .reg .b64 %rd<4>;

    ld.param.u64 %rd1, [out];
    ld.param.u32 %r1, [iters];
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mad.lo.s32 %r5, %r2, %r3, %r4;
    cvt.rn.f32.u32 %f1, %r5;
    mov.f32 %f2, 0f3F800000;
    mov.u32 %r6, 0;
LOOP:
    setp.ge.u32 %p, %r6, %r1;
    @%p bra DONE;
    fma.rn.f32 %f1, %f1, 0f3F7FFFEF, %f2;
    add.u32 %r6, %r6, 1;
    bra LOOP;
DONE:
    cvta.to.global.u64 %rd2, %rd1;
    mul.wide.u32 %rd3, %r5, 4;
    add.s64 %rd2, %rd2, %rd3;
    st.global.f32 [%rd2], %f1;
    ret;
}
"""
KERNEL = "spin"
SHAPES = {
    # blocks per multiprocessor (many) or in all (few), threads per block, target seconds per launch
    "many_blocks": {"blocks_per_sm": 16, "threads": 256, "target_s": 0.002},
    "few_blocks": {"blocks": 2, "threads": 128, "target_s": 0.1},
}
STEADY_AFTER_S = 5
LIMITED_BELOW = 0.8
"""A shape whose steady work is below this share of the baseline is throttled."""
DROP_ORDER = (
    "shapes.many_blocks.timeline_per_s",
    "shapes.few_blocks.timeline_per_s",
    "baseline.many_blocks.timeline_per_s",
    "baseline.few_blocks.timeline_per_s",
    "findings",
    "baseline",
)


def per_second(completions: Sequence[tuple[float, float]], seconds: int) -> list[float]:
    """(seconds since start when a launch finished, its work) → work finished in each whole second [0, seconds)."""
    buckets = [0.0] * seconds
    for at, work in completions:
        index = int(at)
        if 0 <= index < seconds:
            buckets[index] += work
    return buckets


def steady_state(timeline: Sequence[float], after_s: int = STEADY_AFTER_S) -> float | None:
    """Median per-second work after the first `after_s` seconds; the second half when the run is shorter."""
    if not timeline:
        return None
    tail = list(timeline[after_s:]) or list(timeline[len(timeline) // 2 :])
    return float(statistics.median(tail))


def ratios(limited: dict[str, Any], baseline: dict[str, Any]) -> dict[str, float | None]:
    """Steady work of each shape, limited over baseline."""
    out: dict[str, float | None] = {}
    for shape in SHAPES:
        lim, base = (limited.get(shape) or {}).get("steady_per_s"), (baseline.get(shape) or {}).get("steady_per_s")
        out[shape] = round(lim / base, 4) if lim is not None and base else None
    return out


def sm_limit(env_value: str | None) -> int | None:
    """CUDA_DEVICE_SM_LIMIT as a percentage; None when unset, unreadable, 0 (none asked) or 100."""
    try:
        value = int(env_value) if env_value not in (None, "") else None
    except ValueError:
        return None
    return value if value is not None and 0 < value < 100 else None


def findings(env_value: str | None, ratio: dict[str, float | None]) -> list[dict[str, Any]]:
    """What a container can do about its own compute limit, judged from the limited/baseline ratios."""
    limit = sm_limit(env_value)
    many, few = ratio.get("many_blocks"), ratio.get("few_blocks")
    lifted = limit is not None and many is not None and many < LIMITED_BELOW
    observed = f"many_blocks ran at {many} and few_blocks at {few} of the CUDA_DISABLE_CONTROL=true run"
    if limit is None:
        observed += f"; no compute limit is set here (CUDA_DEVICE_SM_LIMIT={env_value}), so nothing to lift"
    elif lifted:
        observed += f": the child lifted its own SM limit of {limit}%"
    else:
        observed += f": the SM limit of {limit}% did not slow many_blocks, so there was nothing to lift"
    out = [{"id": "compute-limit-disabled",
            "tried": "the same launches in a child process with CUDA_DISABLE_CONTROL=true",
            "observed": observed, "bypassed": True if lifted else None}]  # fmt: skip
    if lifted and few is not None and few >= LIMITED_BELOW:
        few_spec = SHAPES["few_blocks"]
        out.append({"id": "compute-limit-shape",
                    "tried": f"{few_spec['blocks']} blocks that run ~{few_spec['target_s']} s a launch",
                    "observed": f"few_blocks ran at {few} of unlimited while many_blocks ran at {many}: "
                                "the limit throttles only many-block launches", "bypassed": True})  # fmt: skip
    return out


def calibrate(run_once: Callable[[int], float], target_s: float, iters: int = 4096) -> int:
    """Iterations per thread that make one launch last about `target_s` (after a warm-up launch)."""
    run_once(iters)
    for _ in range(3):
        elapsed = max(run_once(iters), 1e-6)
        iters = max(256, min(int(iters * target_s / elapsed), 2**31 - 1))
        if 0.5 * target_s <= elapsed <= 2 * target_s:
            break
    return iters


def measure_shape(
    launch: Callable[[], object], work_per_launch: float, seconds: int, clock: Callable[[], float] = time.perf_counter
) -> dict[str, Any]:
    """Launch (and wait for) one shape in a loop for `seconds`; per-second work and its steady state."""
    completions: list[tuple[float, float]] = []
    durations: list[float] = []
    start = clock()
    last = start
    while last - start < seconds:
        launch()
        done = clock()
        durations.append(done - last)
        completions.append((done - start, work_per_launch))
        last = done
    elapsed = last - start
    timeline = per_second(completions, seconds)
    return {
        "launches": len(completions),
        "seconds": round(elapsed, 3),
        "work_per_s": round(work_per_launch * len(completions) / elapsed, 1) if elapsed else None,
        "timeline_per_s": [round(w, 1) for w in timeline],
        "steady_per_s": steady_state(timeline),
        "launch_ms_median": round(statistics.median(durations) * 1000, 3) if durations else None,
    }


def measure(
    cuda: Any,
    seconds: int,
    iters: dict[str, int | None],
    log: Callable[[str], None],
    clock: Callable[[], float] = time.perf_counter,
) -> dict[str, Any]:
    """Both shapes on one context, the same buffer and module; `iters` fixed by the caller or calibrated here."""
    module = cuda.load_ptx(PTX)
    fn = cuda.function(module, KERNEL)
    sms = cuda.sm_count()
    geometry = {
        name: (spec.get("blocks") or spec["blocks_per_sm"] * sms, spec["threads"]) for name, spec in SHAPES.items()
    }
    out_bytes = max(b * t for b, t in geometry.values()) * 4
    buffer, err = cuda.try_alloc(out_bytes)
    if buffer is None:
        raise ProbeError(f"cannot allocate the {out_bytes}-byte output buffer: {err}")
    shapes: dict[str, Any] = {}
    try:
        for name, (blocks, threads) in geometry.items():

            def run_once(n: int, blocks: int = blocks, threads: int = threads) -> float:
                t0 = clock()
                cuda.launch(fn, blocks, threads, [ctypes.c_uint64(buffer), ctypes.c_uint32(n)])
                cuda.synchronize()
                return clock() - t0

            n = iters.get(name) or calibrate(run_once, SHAPES[name]["target_s"])
            shape = measure_shape(functools.partial(run_once, n), float(blocks * threads * n), seconds, clock)
            shape.update({"blocks": blocks, "threads_per_block": threads, "iters": n, "unit": "fma"})
            shapes[name] = shape
            log(f"{name}: {blocks}×{threads} threads × {n} FMA, {shape['launches']} launches in {shape['seconds']} s, "
                f"steady {shape['steady_per_s']} FMA/s")  # fmt: skip
    finally:
        cuda.free(buffer)
    return shapes


def run_baseline(seconds: int, iters: dict[str, int]) -> dict[str, Any]:
    """The same launches in a child with CUDA_DISABLE_CONTROL=true: HAMi-core's own switch to stop throttling."""
    argv = [sys.executable, os.path.abspath(__file__), "--json", "--seconds", str(seconds),
            "--iters-many", str(iters["many_blocks"]), "--iters-few", str(iters["few_blocks"])]  # fmt: skip
    env = {**os.environ, "CUDA_DISABLE_CONTROL": "true"}
    timeout = 4 * seconds + 120
    try:
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        raise ProbeError(f"baseline child timed out after {timeout} s") from exc
    lines = done.stdout.strip().splitlines()
    try:
        child = json.loads(lines[-1]) if lines else {}
    except json.JSONDecodeError:
        child = {}
    if not child.get("ok"):
        raise ProbeError(f"baseline child failed (exit {done.returncode}): {child.get('error') or done.stderr[-300:]}")
    return child["shapes"]


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", action="store_true", help="print the result as one JSON object, last line")
    p.add_argument("--seconds", type=int, default=20, help="per shape (≥ 20 lets the throttle settle)")
    p.add_argument("--baseline", action="store_true", help="also measure with CUDA_DISABLE_CONTROL=true")
    p.add_argument("--iters-many", type=int, default=None, help="FMA per thread of many_blocks (default: calibrate)")
    p.add_argument("--iters-few", type=int, default=None, help="FMA per thread of few_blocks (default: calibrate)")
    p.add_argument("--result-file", default=None, help="also write the JSON here (≤ 4096 bytes)")
    p.add_argument("--ready-file", default=None, help="touch this when the probe finished")
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the probe; 0 when it measured, 1 when it could not."""
    args = parse_args(argv)
    env_sm = os.environ.get("CUDA_DEVICE_SM_LIMIT")
    result: dict[str, Any] = {"probe": "compute", "ok": False, "error": None, "gpu_uuid": None, "gpu_name": None,
                              "env": {"CUDA_DEVICE_SM_LIMIT": env_sm}, "seconds": args.seconds, "shapes": {},
                              "baseline": None, "ratio": None, "findings": [], "started_at": now_iso(),
                              "ended_at": None}  # fmt: skip

    def log(line: str) -> None:
        print(line, flush=True)

    try:
        cuda = Cuda()
        cuda.init()
        result["gpu_name"], result["gpu_uuid"] = cuda.name(), cuda.uuid()
        cuda.use_primary_context()
        name, sms = f"{result['gpu_name']} {result['gpu_uuid']}", cuda.sm_count()
        log(f"{name}: {sms} multiprocessors, CUDA_DEVICE_SM_LIMIT={env_sm}")
        result["shapes"] = measure(
            cuda, args.seconds, {"many_blocks": args.iters_many, "few_blocks": args.iters_few}, log
        )
        if args.baseline:
            log("baseline: the same launches with CUDA_DISABLE_CONTROL=true in a child process")
            result["baseline"] = run_baseline(args.seconds, {k: v["iters"] for k, v in result["shapes"].items()})
            result["ratio"] = ratios(result["shapes"], result["baseline"])
            result["findings"] = findings(env_sm, result["ratio"])
            log(f"ratio limited / baseline: {result['ratio']}")
        result["ok"] = True
    except ProbeError as exc:
        result["error"] = str(exc)
    except Exception as exc:  # a probe reports, never crashes: the verifier needs the JSON
        result["error"] = f"{type(exc).__name__}: {exc}"
    result["ended_at"] = now_iso()
    if not result["ok"]:
        log(f"error: {result['error']}")
    if args.json:
        print(json.dumps(result, separators=(",", ":")), flush=True)
    write_result_file(args.result_file, fit_result(result, DROP_ORDER))
    if result["ok"]:
        touch(args.ready_file)
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
