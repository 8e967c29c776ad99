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
import json
import os
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from . import provenance
from .compute_kernel import JUDGED_SHAPE, SHAPES, measure
from .cuda import Cuda, ProbeError
from .output import finding, fit_result, now_iso, print_result, record_error, say, touch, write_result_file
from .process import captured_stderr, host_pid_lookup, mechanism_of, preload_evidence, reported_env

TOLERANCE = 0.1
"""A shape whose share is within this of the limit is held to it; above limit + TOLERANCE it escaped."""
LIFTED_RATIO = 1.2
"""A child that set its own 'no limit' lifted it when it ran at least this many times this process's speed."""
BASELINE_SECONDS = 3
BASELINE_WARMUP_S = 0.5
"""Unlimited, each second of a shape is within 2 % of its mean (H200, 2026-12-02): 3 s after calibration's warm-up."""
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
    "lookup.lines",
    "preload",
    "findings",
    "shapes.short_many.timeline_per_s",
    "baseline",
)


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


def lookup_finding(lookup: Mapping[str, Any]) -> dict[str, Any]:
    """This process started while another joined or left the card: HAMi-core found no host PID, so no limit."""
    tried = "this process's own start: HAMi-core's cuInit takes the one PID new on the card across its context"
    return finding("host-pid-lookup", tried, f"no host PID found ({'; '.join(lookup['lines'])}): no launch of"
                   " this process is rate-limited", True)  # fmt: skip


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
                              "share": None, "findings": [], "measured_by": args.measured_by, "lookup": None,
                              "started_at": now_iso(), "ended_at": None}  # fmt: skip

    log = say
    try:
        unknown = [s for s in wanted if s not in SHAPES]
        if unknown:
            raise ProbeError(f"unknown shapes {unknown}; known: {', '.join(SHAPES)}")
        # The baseline first, alone: measured beside the limited run it would take the card from it.
        baseline = read_baseline(args.baseline, mechanism, wanted, log)
        lines: list[str] = []
        with captured_stderr(lines):  # cuInit is where HAMi-core looks up this process's host PID (src/libvgpu.c)
            cuda = Cuda()
            cuda.init()
        result["lookup"] = {**host_pid_lookup(lines, mechanism), "context_at": now_iso()}
        if result["lookup"]["host_pid_found"] is False:
            log(f"HAMi-core found no host PID for this process, so it limits none of its launches: {lines}")
            result["findings"].append(lookup_finding(result["lookup"]))
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
            result["findings"] += shape_findings(
                result["share"], limit, result["shapes"], mechanism, result["sm_count"]
            )
            result["findings"] += lift_findings(args, mechanism, limit, baseline, result["share"], log)
        result["ok"] = True
    except Exception as exc:  # a probe reports, never crashes: the verifier needs the JSON
        record_error(result, exc)
    result["ended_at"], result["pod"] = now_iso(), provenance.block(log)
    if not result["ok"]:
        log(f"error: {result['error']}")
    if args.json:
        print_result(result)
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
