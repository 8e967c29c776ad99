"""How much of the card's compute each Pod got against an unlimited baseline: compute-limited.

Standard library only."""

from __future__ import annotations

try:
    from .check_rule import (
        COMPUTE_TOLERANCE,
        MIN_COMPUTE_SECONDS,
        Check,
        Judgement,
        Rule,
        enforces_nothing,
        library_absent,
        not_ok,
        verdict,
    )
    from .evidence import Evidence, probe_error
    from .expectation import Expectation
except ImportError:  # mounted flat in a Pod
    from check_rule import (  # type: ignore[no-redef]
        COMPUTE_TOLERANCE,
        MIN_COMPUTE_SECONDS,
        Check,
        Judgement,
        Rule,
        enforces_nothing,
        library_absent,
        not_ok,
        verdict,
    )
    from evidence import Evidence, probe_error  # type: ignore[no-redef]
    from expectation import Expectation  # type: ignore[no-redef]


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


def _compute_limited(ev: Evidence) -> Judgement:
    e = ev.expect
    if e.cores_percent is None:
        return False, "no coresPercent was requested, so there is no compute limit to test", ""
    key = COMPUTE_LIMIT_ENV[e.mechanism]
    target = e.cores_percent / 100
    problems, seen = [], []
    for name in e.compute_pods or tuple(ev.names):
        r = ev.compute(name)
        if r is None:
            problems.append(ev.missing(name, "compute"))
            continue
        problems += library_absent(e, name, r)
        judged = str(r.get("judged_shape") or "short_many")
        share = (r.get("share") or {}).get(judged)
        m = (r.get("shapes") or {}).get(judged) or {}
        base = (((r.get("baseline") or {}).get("shapes") or {}).get(judged)) or {}
        limit = (r.get("env") or {}).get(key)
        memory_uuid = (ev.memory(name) or {}).get("gpu_uuid")
        seen.append(
            f"{name}: {judged} ({m.get('blocks')} blocks, {m.get('launch_ms_median')} ms a launch) mean"
            f" {m.get('mean_per_s')} GFMA/s over {m.get('window_s')} s after {m.get('warmup_s')} s (per second"
            f" {m.get('per_s_min')}…{m.get('per_s_max')}) against {base.get('mean_per_s')} GFMA/s unlimited"
            f" ({(r.get('baseline') or {}).get('how')}): share {share}; every shape {r.get('share')}; {key}={limit}"
            f" on {r.get('gpu_uuid')}"
        )
        problems += not_ok(name, r)
        if str(limit) != str(e.cores_percent):
            problems.append(f"Pod {name}: measured under {key}={limit}, expected {e.cores_percent}")
        window = m.get("window_s")
        if not isinstance(window, (int, float)) or window < MIN_COMPUTE_SECONDS:
            problems.append(f"Pod {name}: a {window} s window is too short (≥ {MIN_COMPUTE_SECONDS} s)")
        if not r.get("gpu_uuid") or r.get("gpu_uuid") != memory_uuid:
            problems.append(
                f"Pod {name}: compute ran on {r.get('gpu_uuid')}, the memory probe on {memory_uuid}: not shown to be"
                " the shared card"
            )
        if share is None:
            problems.append(f"Pod {name}: no share of an unlimited baseline{probe_error(r)}")
        elif abs(float(share) - target) > COMPUTE_TOLERANCE:
            wanted = f"{target:.2f} ± {COMPUTE_TOLERANCE}"
            problems.append(f"Pod {name}: {judged} ran at {float(share):.2f}, expected {wanted}")
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
)
