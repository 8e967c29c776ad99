"""How much of the card's compute each Pod got against an unlimited baseline: compute-limited, and how close each Pod
came to its ask (a figure, and far below it the under-delivered finding).

The check judges that the limit holds: no Pod's share above its ask by more than the limiter's overshoot measured on
the H200 (docs/host-proof/h200/compute-curve), alone or two Pods computing at once, whichever the expectation's
`computePods` says. A Pod that got less than its share is a quality figure, not a breach. Standard library only."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..evidence.record import Record
from ..expectation import Expectation
from .rule import (
    MIN_COMPUTE_SECONDS,
    Check,
    Judgement,
    Rule,
    enforces_nothing,
    library_absent,
    library_mapped,
    not_ok,
    preloaded,
    probe_error,
    verdict,
)

# ---------------------------------------------------------------- compute-limited


COMPUTE_LIMIT_ENV = {"hami-core": "CUDA_DEVICE_SM_LIMIT", "mps": "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"}
"""The env each mechanism reads its compute share from (HAMi-core's limiter; MPS's thread percentage)."""


BAND_POINTS = {"alone": 12, "pair": 8}
"""How far above its ask, in hundredths of the unlimited baseline, the limiter lets one Pod's judged share go, on the
H200 under HAMi-core (docs/host-proof/h200/compute-curve): alone, the largest overshoot of 20 limited processes was
+0.11 (at 50 %); two at once +0.074 (20 % each). MPS stayed within both (0.293–0.294 at 30 %)."""
UNLIMITED_POINTS = {"alone": 100, "pair": 40}
"""What a process with no limit gets, in hundredths of the unlimited baseline: alone, the baseline itself; two at once,
0.40 each on the H200 (cluster-bare: 0.402 / 0.402; two at 60 %, where the limiter never binds: 0.412 / 0.412)."""
UNDER_DELIVERED_RATIO = 0.8
"""Below this share of its ask a Pod is under-delivered (a finding): alone the limiter never delivered less than its
ask on the H200 (1.05 to 1.10 of it); two Pods at 40 % each got 0.82 of theirs, at 60 % 0.69."""
UNDER_DELIVERED_ID = "under-delivered"


def band_mode(e: Expectation) -> str:
    """`pair` where two or more Pods compute at once (the host proof), `alone` where one does (a cluster: Pod A)."""
    return "pair" if len(e.compute_pods or e.pods) >= 2 else "alone"


def highest_shown(mode: str) -> int:
    """The highest coresPercent whose limit can be told from none: ask + band below what no limit gets."""
    return UNLIMITED_POINTS[mode] - BAND_POINTS[mode] - 1


def cannot_show(e: Expectation) -> str | None:
    """Why the limit cannot be shown at this quota (a process with no limit would pass), else None."""
    mode, cores = band_mode(e), e.cores_percent or 0
    if cores <= highest_shown(mode):
        return None
    who = "two Pods computing at once" if mode == "pair" else "one Pod computing alone"
    return (
        f"not judgeable: with {who}, a process with no limit gets {UNLIMITED_POINTS[mode] / 100:.2f} of the"
        f" unlimited baseline on the H200, within {cores / 100:.2f} + the limiter's {BAND_POINTS[mode] / 100:.2f}"
        f" overshoot: the limit cannot be shown at coresPercent {cores} (at most {highest_shown(mode)})"
    )


def _compute_expected(e: Expectation) -> str:
    target, mode = (e.cores_percent or 0) / 100, band_mode(e)
    held = cannot_show(e)
    if held:
        return held
    who = "two Pods computing at once" if mode == "pair" else "one Pod computing alone"
    return (
        f"short many-block launches under {COMPUTE_LIMIT_ENV[e.mechanism]}={e.cores_percent} run at no more than"
        f" {target:.2f} + {BAND_POINTS[mode] / 100:.2f} of the unlimited baseline (the limiter's overshoot on the"
        f" H200, {who}), as the mean over ≥ {MIN_COMPUTE_SECONDS} s after warm-up on the proof Pods' card; how close"
        f" each came to {target:.2f} is a figure, below {UNDER_DELIVERED_RATIO} of it the {UNDER_DELIVERED_ID}"
        " finding"
    )


def delivered(m: Mapping[str, Any], base: Mapping[str, Any], target: float) -> str:
    """How close a Pod came to its ask: its share ÷ the ask, and its whole seconds' shares (min – max, sd)."""
    mean, base_mean = m.get("mean_per_s"), base.get("mean_per_s")
    if mean is None or not base_mean or not target:
        return "delivered ÷ asked: no figure"
    share = mean / base_mean

    def part(key: str) -> str:
        value = m.get(key)
        return "–" if value is None else f"{value / base_mean:.2f}"

    return (
        f"delivered ÷ asked {share / target:.2f} (share {share:.3f} of {target:.2f}; its seconds"
        f" {part('per_s_min')} – {part('per_s_max')}, sd {part('per_s_stdev')})"
    )


JUDGED_SHAPE = "short_many"
"""The shape this check judges, whatever the probe says it judged: short many-block launches (the title)."""
SHARE_ROUNDING = 0.0051
"""The probe rounds a share to 3 places: a reported share further than this from its two means is not theirs."""
GRID_KEYS = ("blocks", "threads", "iters")
"""A shape's own figures (timeline, mean, extremes, launches) agree with each other, or the record refused them
(compute_schema's shape-agrees-with-its-timeline): here the shapes are compared with each other and the plan."""
NO_LIMIT = {
    "hami-core": ("GPU_CORE_UTILIZATION_POLICY", "disable"),
    "mps": ("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "100"),
}
"""The setting that lifts each mechanism's compute limit (HAMi-core's policy, read in
src/multiprocess/multiprocess_memory_limit.c; MPS's full thread percentage)."""


def _baseline_problems(e: Expectation, name: str, r: Mapping[str, Any], m: Mapping[str, Any],
                       base: Mapping[str, Any]) -> list[str]:  # fmt: skip
    """The baseline (`base`) is the same launches as the measured run (`m`), unlimited, in the same stack: library,
    grid and limit compared."""
    problems = []
    baseline = r.get("baseline") or {}
    env = baseline.get("env")
    if not isinstance(env, Mapping):
        return [f"Pod {name}: the baseline reports no env, so it is not shown to be unlimited"]
    if library_mapped(e, r) != library_mapped(e, baseline):
        where = ("the measured run", "the baseline") if library_mapped(e, r) else ("the baseline", "the measured run")
        problems.append(f"Pod {name}: {preloaded(e)} was mapped into {where[0]} but not into {where[1]}: the share"
                        " compares two different stacks")  # fmt: skip
    key = COMPUTE_LIMIT_ENV[e.mechanism]
    lift_key, lift_value = NO_LIMIT[e.mechanism]
    limit = env.get(key)
    limited = limit not in (None, "", "0", "100") and (e.mechanism == "mps" or library_mapped(e, baseline))
    if limited and str(env.get(lift_key) or "").lower() != lift_value:
        problems.append(f"Pod {name}: the baseline ran under {key}={limit} with {lift_key}={env.get(lift_key)}:"
                        " it was limited too, so no share of it is a share of the card")  # fmt: skip
    grid, base_grid = [m.get(k) for k in GRID_KEYS], [base.get(k) for k in GRID_KEYS]
    if grid != base_grid:
        problems.append(f"Pod {name}: the baseline ran {base_grid[0]} blocks × {base_grid[1]} threads ×"
                        f" {base_grid[2]} iterations, the measured run {grid[0]} blocks × {grid[1]} threads ×"
                        f" {grid[2]}: not the same launches")  # fmt: skip
    return problems


def _share(name: str, r: Mapping[str, Any], m: Mapping[str, Any], base: Mapping[str, Any],
           problems: list[str]) -> float | None:  # fmt: skip
    """The share recomputed from the two means, after comparing it with the share the probe reported."""
    reported = (r.get("share") or {}).get(JUDGED_SHAPE)
    mean, base_mean = m.get("mean_per_s"), base.get("mean_per_s")
    if mean is None or not base_mean:
        problems.append(f"Pod {name}: no share of an unlimited baseline{probe_error(r)}")
        return None
    share = mean / base_mean
    if reported is None or abs(float(reported) - share) > SHARE_ROUNDING:
        problems.append(f"Pod {name}: the probe reports share {reported}, its mean_per_s {mean} over the baseline's"
                        f" {base_mean} is {share:.3f}")  # fmt: skip
    return share


def _lookup_failed(name: str, r: Mapping[str, Any]) -> list[str]:
    """A limited process HAMi-core found no host PID for: the library limits none of its launches."""
    lookup = r.get("lookup") or {}
    if lookup.get("host_pid_found") is not False:
        return []
    said = "; ".join(lookup.get("lines") or []) or "its lines were dropped to fit"
    return [f"Pod {name}: HAMi-core found no host PID for the limited process ({said}), so it rate-limits none of"
            " its launches (src/cuda/memory.c: cuLaunchKernel calls rate_limiter only when pidfound): a process"
            " that starts while another joins or leaves the card runs unlimited"]  # fmt: skip


def _compute_limited(rec: Record) -> Judgement:
    e = rec.expect
    if e.cores_percent is None:
        return False, "no coresPercent was requested, so there is no compute limit to test", ""
    key = COMPUTE_LIMIT_ENV[e.mechanism]
    target, mode = e.cores_percent / 100, band_mode(e)
    band = BAND_POINTS[mode] / 100
    problems, seen = [], []
    for name in e.compute_pods or tuple(rec.names):
        r = rec.compute(name) or {}
        problems += library_absent(e, name, r)
        m = (r.get("shapes") or {}).get(JUDGED_SHAPE) or {}
        base = (((r.get("baseline") or {}).get("shapes") or {}).get(JUDGED_SHAPE)) or {}
        env = r.get("env") or {}
        limit = env.get(key)
        memory_uuid = (rec.memory(name) or {}).get("gpu_uuid")
        seen.append(
            f"{name}: {JUDGED_SHAPE} ({m.get('blocks')} blocks, {m.get('launch_ms_median')} ms a launch) mean"
            f" {m.get('mean_per_s')} GFMA/s over {m.get('window_s')} s after {m.get('warmup_s')} s (per second"
            f" {m.get('per_s_min')}…{m.get('per_s_max')}) against {base.get('mean_per_s')} GFMA/s unlimited"
            f" ({(r.get('baseline') or {}).get('how')}): share {(r.get('share') or {}).get(JUDGED_SHAPE)}; every"
            f" shape {r.get('share')}; {key}={limit} on {r.get('gpu_uuid')}; {delivered(m, base, target)}"
        )
        problems += not_ok(name, r)
        problems += _lookup_failed(name, r)
        if r.get("judged_shape") not in (None, JUDGED_SHAPE):
            problems.append(f"Pod {name}: the probe judged {r.get('judged_shape')}; this check judges {JUDGED_SHAPE}")
        if str(limit) != str(e.cores_percent):
            problems.append(f"Pod {name}: measured under {key}={limit}, expected {e.cores_percent}")
        if r.get("limit_percent") is not None and r["limit_percent"] != e.cores_percent:
            problems.append(f"Pod {name}: the probe measured against limit_percent {r['limit_percent']}, the plan"
                            f" asks {e.cores_percent}")  # fmt: skip
        indexed = env.get(f"{COMPUTE_LIMIT_ENV['hami-core']}_0")
        if e.mechanism == "hami-core" and indexed not in (None, "") and str(indexed) != str(limit):
            # HAMi-core takes CUDA_DEVICE_SM_LIMIT_<i> over the plain one (multiprocess_memory_limit.c:195-210).
            problems.append(f"Pod {name}: CUDA_DEVICE_SM_LIMIT_0={indexed} beside {key}={limit}: HAMi-core applies the"
                            " indexed one to device 0")  # fmt: skip
        lift_key, lift_value = NO_LIMIT[e.mechanism]
        if e.mechanism == "hami-core" and str(env.get(lift_key) or "").lower() == lift_value:
            problems.append(f"Pod {name}: its own process ran with {lift_key}={env.get(lift_key)}, which lifts the"
                            " limit it was measured under")  # fmt: skip
        window = m.get("window_s")
        if window is None or window < MIN_COMPUTE_SECONDS:
            problems.append(f"Pod {name}: a {window} s window is too short (≥ {MIN_COMPUTE_SECONDS} s)")
        if base:
            problems += _baseline_problems(e, name, r, m, base)
        if not r.get("gpu_uuid") or r.get("gpu_uuid") != memory_uuid:
            problems.append(
                f"Pod {name}: compute ran on {r.get('gpu_uuid')}, the memory probe on {memory_uuid}: not shown to be"
                " the shared card"
            )
        share = _share(name, r, m, base, problems)
        if share is not None and share > target + band:
            problems.append(f"Pod {name}: {JUDGED_SHAPE} ran at {share:.2f}, expected at most {target:.2f} + {band:.2f}"
                            f" (the limiter's overshoot, {mode}): the limit did not hold")  # fmt: skip
    held = cannot_show(e)
    if held:  # said first: no share here could show the limit, whatever else is wrong
        problems.insert(0, held)
    return verdict(problems, f"no Pod's short many-block launches ran above {target:.2f} + {band:.2f} of the baseline"
                   f" ({mode})", seen)  # fmt: skip


def under_delivered(rec: Record) -> list[dict[str, Any]]:
    """A Pod whose judged share, judgeable, came below UNDER_DELIVERED_RATIO of its ask: a figure of how the card was
    shared, never a reason for compute-limited to pass or fail."""
    e = rec.expect
    if e.cores_percent is None or e.mechanism not in COMPUTE_LIMIT_ENV:
        return []
    target, mode, found = e.cores_percent / 100, band_mode(e), []
    for name in e.compute_pods or tuple(rec.names):
        r = rec.compute(name)
        if r is None or any(p in rec.problems for p in ("evidence", f"compute:{name}", f"pod:{name}")):
            continue
        m = (r.get("shapes") or {}).get(JUDGED_SHAPE) or {}
        base = (((r.get("baseline") or {}).get("shapes") or {}).get(JUDGED_SHAPE)) or {}
        if not m.get("mean_per_s") or not base.get("mean_per_s") or r.get("ok") is not True:
            continue
        share = m["mean_per_s"] / base["mean_per_s"]
        if share >= UNDER_DELIVERED_RATIO * target:
            continue
        key = COMPUTE_LIMIT_ENV[e.mechanism]
        found.append({
            "id": UNDER_DELIVERED_ID, "pod": name, "probe": "compute",
            "tried": f"{JUDGED_SHAPE} launches under {key}={e.cores_percent} ({mode}), against the unlimited baseline",
            "observed": f"it ran at {share:.3f} of the baseline: {delivered(m, base, target)}; below"
                        f" {UNDER_DELIVERED_RATIO} of its ask, so it got less than it asked for",
            "bypassed": False, "share": round(share, 3), "asked": target, "delivered_ratio": round(share / target, 3),
            "per_s_share": {k: round(m[k] / base["mean_per_s"], 3) for k in ("per_s_min", "per_s_max", "per_s_stdev")
                            if m.get(k) is not None},
        })  # fmt: skip
    return found


def _compute_time_sharing_expected(e: Expectation) -> str:
    return "time-sharing enforces no compute limit: this check fails by design (each Pod gets whole time slices)"


COMPUTE_LIMITED = Check(
    "compute-limited",
    "The compute quota holds short many-block launches to their share",
    {
        "hami-core": Rule(_compute_expected, _compute_limited),
        "mps": Rule(_compute_expected, _compute_limited),
        "time-sharing": Rule(_compute_time_sharing_expected, enforces_nothing("compute")),
    },
    reads=("compute",),
)
