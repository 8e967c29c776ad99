"""How much of the card's compute each Pod got against an unlimited baseline: compute-limited.

Standard library only."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .check_rule import (
    COMPUTE_TOLERANCE,
    MIN_COMPUTE_SECONDS,
    Check,
    Judgement,
    Rule,
    enforces_nothing,
    library_absent,
    library_mapped,
    not_ok,
    preloaded,
    verdict,
)
from .evidence import probe_error
from .expectation import Expectation
from .record import Record

# ---------------------------------------------------------------- compute-limited


COMPUTE_LIMIT_ENV = {"hami-core": "CUDA_DEVICE_SM_LIMIT", "mps": "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"}
"""The env each mechanism reads its compute share from (HAMi-core's limiter; MPS's thread percentage)."""


def _compute_expected(e: Expectation) -> str:
    target = (e.cores_percent or 0) / 100
    return (
        f"short many-block launches under {COMPUTE_LIMIT_ENV[e.mechanism]}={e.cores_percent} run at {target:.2f} ±"
        f" {COMPUTE_TOLERANCE} of the unlimited baseline, as the mean over ≥ {MIN_COMPUTE_SECONDS} s after warm-up"
        " on the proof Pods' card"
    )


JUDGED_SHAPE = "short_many"
"""The shape this check judges, whatever the probe says it judged: short many-block launches (the title)."""
SHARE_ROUNDING = 0.0051
"""The probe rounds a share to 3 places: a reported share further than this from its two means is not theirs."""
GRID_KEYS = ("blocks", "threads", "iters")
"""A shape's own figures (timeline, mean, extremes, launches) agree with each other, or the record refused them
(probe_schema.shape-agrees-with-its-timeline): here the shapes are compared with each other and the plan."""
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


def _compute_limited(rec: Record) -> Judgement:
    e = rec.expect
    if e.cores_percent is None:
        return False, "no coresPercent was requested, so there is no compute limit to test", ""
    key = COMPUTE_LIMIT_ENV[e.mechanism]
    target = e.cores_percent / 100
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
            f" shape {r.get('share')}; {key}={limit} on {r.get('gpu_uuid')}"
        )
        problems += not_ok(name, r)
        if r.get("judged_shape") not in (None, JUDGED_SHAPE):
            problems.append(f"Pod {name}: the probe judged {r.get('judged_shape')}; this check judges {JUDGED_SHAPE}")
        if str(limit) != str(e.cores_percent):
            problems.append(f"Pod {name}: measured under {key}={limit}, expected {e.cores_percent}")
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
        if share is not None and abs(share - target) > COMPUTE_TOLERANCE:
            wanted = f"{target:.2f} ± {COMPUTE_TOLERANCE}"
            problems.append(f"Pod {name}: {JUDGED_SHAPE} ran at {share:.2f}, expected {wanted}")
    return verdict(problems, f"short many-block launches run at about {target:.2f} of the baseline", seen)


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
