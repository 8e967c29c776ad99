"""The compute probe's kernel and how one shape of it is measured: the PTX, the three shapes, calibration to a launch
length, and a window's mean and spread per second (compute.py's docstring says why these shapes).

Standard library only; `measure` takes the CUDA bindings (cuda.Cuda, or a test's stand-in).
"""

from __future__ import annotations

import ctypes
import functools
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .cuda import ProbeError

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
JUDGED_SHAPE = "short_many"
SHAPES: dict[str, dict[str, Any]] = {
    # blocks per multiprocessor (or in all), threads per block, the launch length calibrated to
    "short_many": {"blocks_per_sm": 100, "threads": 256, "target_ms": 0.5},
    "long_many": {"blocks_per_sm": 16, "threads": 256, "target_ms": 2.0},
    "few_long": {"blocks": 2, "threads": 128, "target_ms": 100.0},
}
GIGA = 1e9
FINDING_SHAPE_SECONDS = 3
FINDING_SHAPE_WARMUP_S = 1
"""The shapes that only findings read: held or escaping steadily (per second 0.47–0.48 and 0.39–0.49 of unlimited,
H200), so a shorter window than the judged shape's bursts need."""


def per_second(completions: Sequence[tuple[float, float]], seconds: int) -> list[float]:
    """(seconds since start when a launch finished, its work) → work finished in each whole second [0, seconds)."""
    buckets = [0.0] * seconds
    for at, work in completions:
        index = int(at)
        if 0 <= index < seconds:
            buckets[index] += work
    return buckets


def window_stats(completions: Sequence[tuple[float, float]], warmup_s: float, window_s: float) -> dict[str, Any]:
    """Mean work per second over [warmup_s, warmup_s + window_s), and the spread of its whole seconds."""
    end = warmup_s + window_s
    done = sum(work for at, work in completions if warmup_s <= at < end)
    seconds = per_second(completions, int(end))[int(warmup_s) :]
    return {
        "mean_per_s": done / window_s if window_s > 0 else None,
        "per_s_min": min(seconds) if seconds else None,
        "per_s_max": max(seconds) if seconds else None,
        "per_s_stdev": statistics.pstdev(seconds) if len(seconds) > 1 else 0.0,
    }


def measure_shape(
    launch: Callable[[], object],
    work_per_launch: float,
    warmup_s: float,
    window_s: float,
    clock: Callable[[], float] = time.perf_counter,
) -> dict[str, Any]:
    """Launch (and wait for) one shape in a loop for warmup_s + window_s; the window's mean and spread, in GFMA/s."""
    completions: list[tuple[float, float]] = []
    durations: list[float] = []
    start = last = clock()
    while last - start < warmup_s + window_s:
        launch()
        done = clock()
        durations.append(done - last)
        completions.append((done - start, work_per_launch / GIGA))
        last = done
    stats = window_stats(completions, warmup_s, window_s)
    return {
        "launches": len(completions),
        "launch_ms_median": round(statistics.median(durations) * 1000, 3) if durations else None,
        "warmup_s": warmup_s,
        "window_s": window_s,
        **{k: (round(v, 2) if isinstance(v, float) else v) for k, v in stats.items()},
        "timeline_per_s": [round(w, 1) for w in per_second(completions, int(warmup_s + window_s))],
    }


def calibrate(run_once: Callable[[int], float], target_s: float, iters: int = 256) -> tuple[int, float]:
    """Iterations per thread that make one launch last about `target_s`, and the launch length measured with them."""
    run_once(iters)  # warm-up: module load, first-launch costs
    elapsed = max(run_once(iters), 1e-6)
    for _ in range(6):
        if 0.8 * target_s <= elapsed <= 1.25 * target_s:
            break
        iters = max(16, min(int(iters * target_s / elapsed), 2**31 - 1))
        elapsed = statistics.median(run_once(iters) for _ in range(3))
    return iters, elapsed


def geometry(sm_count: int) -> dict[str, tuple[int, int]]:
    """(blocks, threads per block) of each shape on a card of `sm_count` multiprocessors."""
    return {
        name: (spec.get("blocks") or spec["blocks_per_sm"] * sm_count, spec["threads"]) for name, spec in SHAPES.items()
    }


def shape_window(name: str, warmup_s: float, window_s: float) -> tuple[float, float]:
    """(warm-up, window) of one shape: the judged shape's as given, the others' never longer than theirs."""
    if name == JUDGED_SHAPE:
        return warmup_s, window_s
    return min(warmup_s, FINDING_SHAPE_WARMUP_S), min(window_s, FINDING_SHAPE_SECONDS)


def measure(
    cuda: Any,
    shapes: Sequence[str],
    warmup_s: float,
    window_s: float,
    iters: Mapping[str, int | None],
    log: Callable[[str], None],
    clock: Callable[[], float] = time.perf_counter,
    blocks: Mapping[str, int | None] | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Each shape in turn on one context: (measurements, calibration). `iters` given → no calibration for that
    shape; `blocks` given → that grid instead of this card's."""
    module = cuda.load_ptx(PTX)
    fn = cuda.function(module, KERNEL)
    sizes = geometry(cuda.sm_count())
    for name, count in (blocks or {}).items():
        if count and name in sizes:
            sizes[name] = (int(count), sizes[name][1])
    out_bytes = max(b * t for b, t in sizes.values()) * 4
    buffer, err = cuda.try_alloc(out_bytes)
    if buffer is None:
        raise ProbeError(f"cannot allocate the {out_bytes}-byte output buffer: {err}")
    measured: dict[str, Any] = {}
    calibration: dict[str, Any] = {}
    try:
        for name in shapes:
            grid, threads = sizes[name]

            def run_once(n: int, grid: int = grid, threads: int = threads) -> float:
                t0 = clock()
                cuda.launch(fn, grid, threads, [ctypes.c_uint64(buffer), ctypes.c_uint32(n)])
                cuda.synchronize()
                return clock() - t0

            n = iters.get(name)
            if not n:
                n, took = calibrate(run_once, SHAPES[name]["target_ms"] / 1000)
                target = SHAPES[name]["target_ms"]
                calibration[name] = {"blocks": grid, "threads": threads, "iters": n, "target_ms": target,
                                     "launch_ms": round(took * 1000, 3)}  # fmt: skip
            warm, window = shape_window(name, warmup_s, window_s)
            shape = measure_shape(functools.partial(run_once, n), float(grid * threads * n), warm, window, clock)
            measured[name] = {"blocks": grid, "threads": threads, "iters": n, **shape}
            log(f"{name}: {grid}×{threads} threads × {n} FMA, {shape['launches']} launches, "
                f"{shape['launch_ms_median']} ms each; mean {shape['mean_per_s']} GFMA/s over {window} s "
                f"(per second {shape['per_s_min']}…{shape['per_s_max']})")  # fmt: skip
    finally:
        cuda.free(buffer)
    return measured, calibration
