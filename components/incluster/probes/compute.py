"""Compute probe: how much kernel work a container gets, per kernel shape, against an unlimited baseline.

Run as `python3 -m <package>.compute --json [--seconds 20] [--warmup 3] [--baseline child|none|FILE]`: human
lines first, one JSON object last. The kernel is PTX JIT-compiled by the driver (cuModuleLoadData): no nvcc anywhere.

Shapes (each calibrated on this card to a launch length, recorded under `calibration`):
- short_many: 100 blocks per multiprocessor, ~0.5 ms a launch. The judged shape: HAMi-core's token bucket
  charges every launch by its grid (src/multiprocess/multiprocess_utilization_watcher.c), so short launches of
  many blocks are the ones it holds to the limit.
- long_many: 16 blocks per multiprocessor, ~2 ms a launch; few_long: 2 blocks, ~100 ms. Charged as often per
  second of work as they launch, i.e. rarely: measured, and reported as findings when they escape.
The limiter works in bursts, so the judged shape's figure is its mean over `--seconds` (≥ 20) after `--warmup`;
the other two hold or escape steadily and get FINDING_SHAPE_SECONDS after FINDING_SHAPE_WARMUP_S. The per-second
timeline is kept.

The baseline is the same launches, unlimited, on the same card, measured before the limited run:
- `child` (default): a child process with the mechanism's own "no limit" setting. Under HAMi-core that is
  GPU_CORE_UTILIZATION_POLICY=disable, which the library reads (src/multiprocess/multiprocess_memory_limit.c)
  and which keeps it loaded, hooking every launch as in the limited run; a run without the library cannot be
  had inside a Pod, whose /etc/ld.so.preload loads it into every process. Under MPS it is
  CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=100 in the client.
- FILE: a compute result printed earlier by an unlimited process (the host proof runs one alone first, so that
  two limited processes can run at once, the stack's two Pods). One measured with this limit, the library loaded
  and the mechanism's "no limit" added is that finding's try itself, so no second child measures it.
- `none`: no baseline, no shares.
Standard library only; exits non-zero with a JSON error when there is no GPU or library.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from . import provenance
from .cuda import (
    Cuda,
    ProbeError,
    finding,
    fit_result,
    mechanism_of,
    now_iso,
    preload_evidence,
    reported_env,
    touch,
    write_result_file,
)

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
TOLERANCE = 0.1
"""A shape whose share is within this of the limit is held to it; above limit + TOLERANCE it escaped."""
LIFTED_RATIO = 1.2
"""A child that set its own 'no limit' lifted it when it ran at least this many times this process's speed."""
BASELINE_SECONDS = 3
BASELINE_WARMUP_S = 0.5
"""Unlimited, each second of a shape is within 2 % of its mean (H200, 2026-12-02): 3 s after calibration's warm-up."""
FINDING_SHAPE_SECONDS = 4
FINDING_SHAPE_WARMUP_S = 1
"""The shapes that only findings read: held or escaping steadily (per second 0.47–0.48 and 0.39–0.49 of unlimited,
H200), so a shorter window than the judged shape's bursts need."""
FINDING_SECONDS = 8
FINDING_WARMUP_S = 2
"""A child that tries to lift its own limit is measured on the judged shape for this long (after warm-up)."""
NO_LIMIT_ENV = {
    "hami-core": {"GPU_CORE_UTILIZATION_POLICY": "disable"},
    "mps": {"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": "100"},
}
ENV_KEYS = (
    "CUDA_DEVICE_SM_LIMIT",
    "CUDA_DEVICE_SM_LIMIT_0",
    "GPU_CORE_UTILIZATION_POLICY",
    "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE",
    "CUDA_MPS_PIPE_DIRECTORY",
    "LD_PRELOAD",
)
DROP_ORDER = (
    "baseline.shapes.short_many.timeline_per_s",
    "baseline.shapes.long_many.timeline_per_s",
    "baseline.shapes.few_long.timeline_per_s",
    "shapes.few_long.timeline_per_s",
    "shapes.long_many.timeline_per_s",
    "preload",
    "findings",
    "shapes.short_many.timeline_per_s",
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
            blocks, threads = sizes[name]

            def run_once(n: int, blocks: int = blocks, threads: int = threads) -> float:
                t0 = clock()
                cuda.launch(fn, blocks, threads, [ctypes.c_uint64(buffer), ctypes.c_uint32(n)])
                cuda.synchronize()
                return clock() - t0

            n = iters.get(name)
            if not n:
                n, took = calibrate(run_once, SHAPES[name]["target_ms"] / 1000)
                target = SHAPES[name]["target_ms"]
                calibration[name] = {"blocks": blocks, "threads": threads, "iters": n, "target_ms": target,
                                     "launch_ms": round(took * 1000, 3)}  # fmt: skip
            warm, window = shape_window(name, warmup_s, window_s)
            shape = measure_shape(lambda n=n, f=run_once: f(n), float(blocks * threads * n), warm, window, clock)
            measured[name] = {"blocks": blocks, "threads": threads, "iters": n, **shape}
            log(f"{name}: {blocks}×{threads} threads × {n} FMA, {shape['launches']} launches, "
                f"{shape['launch_ms_median']} ms each; mean {shape['mean_per_s']} GFMA/s over {window} s "
                f"(per second {shape['per_s_min']}…{shape['per_s_max']})")  # fmt: skip
    finally:
        cuda.free(buffer)
    return measured, calibration


def shares(limited: Mapping[str, Any], baseline: Mapping[str, Any]) -> dict[str, float | None]:
    """Each shape's window mean over the baseline's: the share of the card's unlimited speed this process got."""
    out: dict[str, float | None] = {}
    for name in limited:
        lim, base = (limited.get(name) or {}).get("mean_per_s"), (baseline.get(name) or {}).get("mean_per_s")
        out[name] = round(lim / base, 3) if lim is not None and base else None
    return out


# The HAMi-core env that says this process runs under the library (HAMi-core's compute or memory quota).
HAMI_COMPUTE_KEYS = ("CUDA_DEVICE_SM_LIMIT", "CUDA_DEVICE_MEMORY_LIMIT_0")


def limit_percent(env: Mapping[str, str | None], mechanism: str) -> int | None:
    """The compute limit in percent this process was given; None when none (unset, 0 or ≥ 100)."""
    keys = (
        ("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE",)
        if mechanism == "mps"
        else ("CUDA_DEVICE_SM_LIMIT_0", "CUDA_DEVICE_SM_LIMIT")
    )
    for key in keys:
        try:
            value = int(float(env.get(key) or ""))
        except ValueError:
            continue
        return value if 0 < value < 100 else None
    return None


def shape_findings(
    share: Mapping[str, float | None], limit: int | None, measured: Mapping[str, Any], mechanism: str, sm_count: int
) -> list[dict[str, Any]]:
    """Long launches of many blocks and long few-block kernels: did they escape the limit the judged shape obeys?

    MPS limits the multiprocessors a client may use, so a kernel with fewer blocks than that runs at full speed
    inside its partition: held, not escaped. HAMi-core's limit is a share of time, which such a kernel exceeds.
    """
    out = []
    judged = share.get(JUDGED_SHAPE)
    for fid, name in (("long-kernels", "long_many"), ("few-block-kernels", "few_long")):
        if name not in measured:
            continue
        m = measured[name]
        tried = f"{m['blocks']} blocks × {m['threads']} threads, {m['launch_ms_median']} ms a launch, under the limit"
        value = share.get(name)
        if limit is None or value is None or judged is None:
            why = "no compute limit is set here" if limit is None else "no unlimited baseline to compare with"
            out.append(finding(fid, tried, f"share {value}", None, why))
            continue
        observed = f"{value:.2f} of unlimited while {JUDGED_SHAPE} ran at {judged:.2f} (limit {limit / 100:.2f})"
        if mechanism == "mps" and m["blocks"] <= sm_count:
            observed += f"; its {m['blocks']} blocks fit in the {sm_count} multiprocessors this client is given"
            out.append(finding(fid, tried, observed, False))
            continue
        out.append(finding(fid, tried, observed, value > limit / 100 + TOLERANCE))
    return out


def lift_finding(fid: str, tried: str, child_share: float | None, own_share: float | None, limit: int | None,
                 error: str | None = None) -> dict[str, Any]:  # fmt: skip
    """A child that set its own 'no limit': bypassed when this process was held to its limit and the child was not."""
    if child_share is None:
        return finding(fid, tried, f"the child measured nothing ({error})", None, "the child could not measure")
    observed = f"the child ran {JUDGED_SHAPE} at {child_share:.2f} of unlimited; this process at {own_share}"
    if own_share:
        observed += f" ({child_share / own_share:.2f}×)"
    if limit is None or own_share is None or own_share > limit / 100 + TOLERANCE:
        return finding(fid, tried, observed, None, "the limit did not hold in this process, so nothing was lifted")
    # Against this process, not 1.0: the child runs beside the same neighbour, which caps what it can reach.
    return finding(fid, tried, observed, child_share >= LIFTED_RATIO * own_share)


def run_child(argv_tail: Sequence[str], env_overrides: Mapping[str, str], timeout: float) -> dict[str, Any]:
    """This probe again in a child with `env_overrides`; its JSON result, or ok false with why."""
    argv = [sys.executable, "-m", f"{__package__}.compute", "--json", *argv_tail]
    try:
        done = subprocess.run(
            argv, env={**os.environ, **env_overrides}, capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        return {"ok": False, "error": f"child timed out after {timeout:.0f} s"}
    lines = done.stdout.strip().splitlines()
    try:
        child = json.loads(lines[-1]) if lines else {}
    except json.JSONDecodeError:
        child = {}
    if not child:
        return {"ok": False, "error": f"child exited {done.returncode}: {done.stderr[-300:]}"}
    return dict(provenance.note_child(child))


def read_baseline(
    source: str, mechanism: str, shapes: Sequence[str], log: Callable[[str], None]
) -> dict[str, Any] | None:
    """The unlimited measurement to divide by: from a child with the mechanism's no-limit setting, or a file."""
    if source == "none":
        return None
    if source == "child":
        overrides = NO_LIMIT_ENV.get(mechanism, {})
        log(f"baseline: the same shapes in a child process with {overrides or 'no change'}")
        tail = ["--baseline", "none", "--seconds", str(BASELINE_SECONDS), "--warmup", str(BASELINE_WARMUP_S),
                "--shapes", ",".join(shapes)]  # fmt: skip
        child = run_child(tail, overrides, timeout=len(shapes) * (BASELINE_SECONDS + 30) + 60)
        how = f"a child process of this one with {' '.join(f'{k}={v}' for k, v in overrides.items()) or 'its env'}"
    else:
        try:
            with open(source) as handle:
                child = json.load(handle)
        except (OSError, ValueError) as exc:
            raise ProbeError(f"cannot read the baseline file {source}: {exc}") from exc
        how = f"the file {source}, measured earlier by {child.get('measured_by') or 'an unlimited process'}"
    if not child.get("ok"):
        raise ProbeError(f"the baseline failed: {child.get('error')}")
    return {"source": "child" if source == "child" else "file", "how": how, "env": child.get("env"),
            "preload": child.get("preload"), "calibration": child.get("calibration"),
            "shapes": child.get("shapes") or {}}  # fmt: skip


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", action="store_true", help="print the result as one JSON object, last line")
    p.add_argument("--seconds", type=float, default=20, help="the judged shape's window after --warmup (≥ 20)")
    p.add_argument("--warmup", type=float, default=2, help="seconds before the judged shape's window")
    p.add_argument("--baseline", default="child", help="child (default), none, or a compute result file")
    p.add_argument("--shapes", default=",".join(SHAPES), help=f"comma list of {', '.join(SHAPES)}")
    p.add_argument("--mechanism", default="auto", choices=("auto", "hami-core", "mps", "none"))
    p.add_argument("--no-findings", action="store_true", help="skip the child that tries to lift its own limit")
    p.add_argument("--measured-by", default=None, help="a note saved with the result (what made this process)")
    p.add_argument("--result-file", default=None, help="also write the JSON here (≤ 4096 bytes)")
    p.add_argument("--ready-file", default=None, help="touch this when the probe finished")
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the probe; 0 when it measured, 1 when it could not."""
    args = parse_args(argv)
    env = reported_env(ENV_KEYS)
    preload = preload_evidence()
    mechanism = mechanism_of(env, preload["mapped"], HAMI_COMPUTE_KEYS, args.mechanism)
    limit = limit_percent(env, mechanism)
    wanted = [s for s in args.shapes.split(",") if s]
    result: dict[str, Any] = {"probe": "compute", "ok": False, "error": None, "gpu_uuid": None, "gpu_name": None,
                              "sm_count": None, "env": env, "preload": preload, "mechanism": mechanism,
                              "limit_percent": limit, "judged_shape": JUDGED_SHAPE, "warmup_s": args.warmup,
                              "window_s": args.seconds, "calibration": {}, "shapes": {}, "baseline": None,
                              "share": None, "findings": [], "measured_by": args.measured_by,
                              "started_at": now_iso(), "ended_at": None}  # fmt: skip

    def log(line: str) -> None:
        print(line, flush=True)

    try:
        unknown = [s for s in wanted if s not in SHAPES]
        if unknown:
            raise ProbeError(f"unknown shapes {unknown}; known: {', '.join(SHAPES)}")
        # The baseline first, alone: measured beside the limited run it would take the card from it.
        baseline = read_baseline(args.baseline, mechanism, wanted, log)
        cuda = Cuda()
        cuda.init()
        result["gpu_name"], result["gpu_uuid"] = cuda.name(), cuda.uuid()
        cuda.use_primary_context()
        result["sm_count"] = cuda.sm_count()
        log(f"{result['gpu_name']} {result['gpu_uuid']}: {result['sm_count']} multiprocessors, {mechanism}, "
            f"limit {limit}%, libraries mapped {preload['mapped']}")  # fmt: skip
        given = {name: ((baseline or {}).get("shapes", {}).get(name) or {}) for name in wanted}
        iters = {name: m.get("iters") for name, m in given.items()}
        # The baseline's grids too: under MPS this client is told of fewer multiprocessors than the card has.
        grids = {name: m.get("blocks") for name, m in given.items()}
        result["shapes"], calibration = measure(cuda, wanted, args.warmup, args.seconds, iters, log, blocks=grids)
        result["calibration"] = calibration or (baseline or {}).get("calibration") or {}
        result["baseline"] = baseline
        if baseline is not None:
            result["share"] = shares(result["shapes"], baseline["shapes"])
            log(f"share of unlimited: {result['share']}")
            result["findings"] = shape_findings(result["share"], limit, result["shapes"], mechanism, result["sm_count"])
            result["findings"] += lift_findings(args, mechanism, limit, baseline, result["share"], log)
        result["ok"] = True
    except ProbeError as exc:
        result["error"] = str(exc)
    except Exception as exc:  # a probe reports, never crashes: the verifier needs the JSON
        result["error"] = f"{type(exc).__name__}: {exc}"
    result["ended_at"], result["pod"] = now_iso(), provenance.block(log)
    if not result["ok"]:
        log(f"error: {result['error']}")
    if args.json:
        print(json.dumps(result, separators=(",", ":")), flush=True)
    write_result_file(args.result_file, fit_result(result, DROP_ORDER))
    if result["ok"]:
        touch(args.ready_file)
    return 0 if result["ok"] else 1


def baseline_lifted(baseline: Mapping[str, Any], overrides: Mapping[str, str], limit: int | None,
                    mechanism: str) -> bool:  # fmt: skip
    """Whether a baseline file was measured by the very try: the mechanism's loaded, this limit set, its 'no limit'
    added. Then its speed is the try's, and no second child need measure it."""
    env = baseline.get("env") or {}
    loaded = mechanism != "hami-core" or bool((baseline.get("preload") or {}).get("mapped"))
    same_limit = limit is not None and limit_percent({k: v for k, v in env.items() if k not in overrides},
                                                     mechanism) == limit  # fmt: skip
    return loaded and same_limit and all(env.get(k) == v for k, v in overrides.items())


def lift_findings(args: argparse.Namespace, mechanism: str, limit: int | None, baseline: Mapping[str, Any],
                  share: Mapping[str, float | None], log: Callable[[str], None]) -> list[dict[str, Any]]:  # fmt: skip
    """The mechanism's own 'no limit' setting in a child: read off a child baseline, or tried in a child now."""
    overrides = NO_LIMIT_ENV.get(mechanism)
    if not overrides or args.no_findings:
        return []
    fid = "utilization-policy-disabled" if mechanism == "hami-core" else "mps-own-thread-percentage"
    tried = f"the same launches in a child process with {' '.join(f'{k}={v}' for k, v in overrides.items())}"
    own = share.get(JUDGED_SHAPE)
    if baseline.get("source") == "child":
        # The child baseline is this very try: it ran unlimited exactly when the child lifted its own limit.
        return [lift_finding(fid, tried, 1.0, own, limit)]
    if baseline_lifted(baseline, overrides, limit, mechanism):
        pairs, how = " ".join(f"{k}={v}" for k, v in overrides.items()), baseline.get("how")
        tried = f"the same launches in a process with this one's limit and {pairs}: the baseline itself ({how})"
        return [lift_finding(fid, tried, 1.0, own, limit)]
    tail = ["--baseline", args.baseline, "--seconds", str(FINDING_SECONDS), "--warmup", str(FINDING_WARMUP_S),
            "--shapes", JUDGED_SHAPE, "--mechanism", mechanism, "--no-findings"]  # fmt: skip
    log(f"finding {fid}: {tried}")
    child = run_child(tail, overrides, timeout=FINDING_SECONDS + 90)
    child_share = (child.get("share") or {}).get(JUDGED_SHAPE) if child.get("ok") else None
    return [lift_finding(fid, tried, child_share, own, limit, child.get("error"))]


if __name__ == "__main__":
    sys.exit(main())
