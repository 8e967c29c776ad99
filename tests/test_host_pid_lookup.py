"""HAMi-core finds a process's host PID as the one PID new on the card across its context's creation
(src/utils.c: set_task_pid, getextrapid): a neighbour's context made in that instant hands the compute limiter the
wrong PID and the limit does not hold (docs/host-proof/h200/final-26). The proof never makes that instant itself."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from components.incluster.evidence.strict import instant
from components.incluster.probes import compute, memory
from components.verify import phases, workloads
from components.verify.host import expectation, repeatability
from components.verify.host.runner import run_pods
from tests.conftest import ROOT


@pytest.fixture(scope="module")
def cluster() -> dict[str, Any]:
    return expectation.host_plan("cluster")


def _delay(argv: list[str]) -> float | None:
    return float(argv[argv.index("--delay") + 1]) if "--delay" in argv else None


def test_pod_b_waits_until_pod_as_limited_process_has_its_host_pid_before_its_memory_step(
    cluster: dict[str, Any],
) -> None:
    a, b = cluster["pods"].values()
    waited = _delay(b["memory"])
    assert waited == workloads.COMPUTE_LOOKUP_DELAY_S
    # B may lead A by CLUSTER_LEAD_S; A's limited process makes its context after its baseline child and its start.
    lookup_done = len(compute.SHAPES) * (compute.BASELINE_WARMUP_S + compute.BASELINE_SECONDS) + 2 * phases.INIT_S
    assert waited is not None and waited > phases.CLUSTER_LEAD_S + lookup_done
    assert _delay(a["memory"]) is None  # the computing Pod itself goes straight on


def test_without_a_compute_quota_pod_b_starts_its_memory_step_at_once() -> None:
    probes = workloads.ProbeSettings(expect_limit_mib=4000, hold_mib=3072, hold_seconds=5, extra_mib=2048,
                                     sweep_gib=(2.0,), cores_percent=None)  # fmt: skip
    memory_step = workloads.container_command(probes, pod="b")[2].split("; ")[-1]
    assert memory_step.startswith("exec python3 -m incluster.probes.memory") and "--delay" not in memory_step


def test_the_memory_probe_reads_its_delay_in_seconds() -> None:
    assert memory.parse_args(["--delay", "18.8"]).delay == 18.8
    assert memory.parse_args([]).delay == 0.0


@pytest.mark.parametrize("bad", [{"baseline_s": -1.0}, {"baseline_s": 1.0, "lead_s": -0.5}])
def test_a_negative_phase_length_is_refused(bad: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="seconds ≥ 0"):
        phases.memory_delay(**bad)


def test_a_host_drops_the_pods_delay_its_pods_meet_instead(cluster: dict[str, Any]) -> None:
    b = cluster["pods"]["gpushare-proof-b"]["memory"]
    assert "--delay" in b and "--delay" not in expectation.host_memory_argv(b, 5, "hami-core")


def _stamp(after_s: float = 0.0) -> list[str]:
    return [sys.executable, "-c", f"import time; time.sleep({after_s}); print(time.time())"]


def test_host_pods_start_their_memory_step_together_once_every_step_before_it_ended() -> None:
    steps = {
        "a": [(_stamp(1.0), {}), (_stamp(), {})],  # A computes first: its step before memory takes a second
        "b": [(_stamp(), {})],
        "side": [(_stamp(), {})],  # not one of the proof Pods: it does not wait for them
    }
    runs = run_pods(steps, timeout=60, together=("a", "b"))
    a_compute_ended, a_memory = (float(x) for x in runs["a"].logs.split())
    b_memory, side = float(runs["b"].logs), float(runs["side"].logs)
    assert b_memory >= a_compute_ended and abs(b_memory - a_memory) < 0.5
    assert side < a_compute_ended


FINAL = ROOT / "docs" / "host-proof" / "h200" / "final-26"


def _offset_and_share(evidence: dict[str, Any]) -> tuple[float, float]:
    a, b = evidence["gpushare-proof-a"]["compute"], evidence["gpushare-proof-b"]["memory"]
    return instant(b["started_at"], "started_at") - instant(a["started_at"], "started_at"), a["share"]["short_many"]


def test_the_h200_gives_every_stack_the_same_verdict_at_every_quota_three_runs_each() -> None:
    runs = repeatability.repeats(FINAL)
    assert {group: len(r) for group, r in runs.items()} == {
        "cluster20-hami-core": 3, "cluster40-hami-core": 3, "cluster60-hami-core": 3,
        "gke-hami-core": 3, "k3s-hami-core": 3}  # fmt: skip
    assert all(repeatability.identical(r) and all(v["passed"] for _, v, _ in r) for r in runs.values())
    for group in ("cluster20-hami-core", "cluster40-hami-core", "cluster60-hami-core"):
        ask = int(group[7:9]) / 100
        for _, _, evidence in runs[group]:
            offset, share = _offset_and_share(evidence)
            assert offset > 5 and share <= ask + 0.12  # B's memory after A's compute; the limit held


def test_before_the_pods_met_the_limit_failed_exactly_where_bs_memory_process_started_first() -> None:
    runs = repeatability.repeats(FINAL / "host-pid-race")
    assert not repeatability.identical(runs["cluster40-hami-core"])  # the flip the proof no longer makes itself
    for group, found in runs.items():
        for _, verdict, evidence in found:
            offset, share = _offset_and_share(evidence)
            limited = {c["id"]: c["passed"] for c in verdict["checks"]}["compute-limited"]
            assert limited is (offset > 0), (group, offset, share)
            assert limited or share > 0.95  # the limiter read another process's PID: A ran unlimited
