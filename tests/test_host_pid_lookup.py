"""HAMi-core finds a process's host PID as the one PID new on the card across its context's creation
(src/utils.c: set_task_pid, getextrapid): a neighbour's context made in that instant hands the compute limiter the
wrong PID and the limit does not hold (docs/host-proof/h200/final-26). The proof never makes that instant itself."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from components.incluster import judge
from components.incluster.evidence.strict import instant
from components.incluster.probes import compute, memory
from components.incluster.probes.process import host_pid_lookup
from components.verify import phases, workloads
from components.verify.host import expectation, repeatability
from components.verify.host.proof import LOOKUP_WAIT_S, HostOptions, meets, pod_steps
from components.verify.host.runner import run_pods
from tests.conftest import ROOT
from tests.helpers import neighbour_steps

A, B = neighbour_steps.NEIGHBOUR, neighbour_steps.DISTURBER


@pytest.fixture(scope="module")
def cluster() -> dict[str, Any]:
    return expectation.host_plan("cluster")


def _delay(argv: list[str]) -> float | None:
    return float(argv[argv.index("--delay") + 1]) if "--delay" in argv else None


def test_pod_b_waits_out_pod_as_host_pid_lookup_before_its_allocation_step(cluster: dict[str, Any]) -> None:
    a, b = cluster["pods"].values()
    waited = _delay(b["allocation_paths"])
    assert waited == workloads.COMPUTE_LOOKUP_DELAY_S
    # B may lead A by CLUSTER_LEAD_S; A's limited process makes its context after its baseline child and its start.
    lookup_done = len(compute.SHAPES) * (compute.BASELINE_WARMUP_S + compute.BASELINE_SECONDS) + 2 * phases.INIT_S
    assert waited is not None and waited > phases.CLUSTER_LEAD_S + lookup_done
    assert _delay(b["memory"]) is None  # its allocation step already began after the lookup
    assert _delay(a["allocation_paths"]) is None and _delay(a["memory"]) is None  # the computing Pod goes straight on


def test_pod_a_computes_straight_after_the_neighbour_steps_then_tries_the_allocation_paths(
    cluster: dict[str, Any],
) -> None:
    a, b = cluster["pods"].values()
    assert list(a) == ["fault", "bandwidth", "compute", "allocation_paths", "memory"]
    assert list(b) == ["fault", "bandwidth", "allocation_paths", "memory"]


def _probes(**changes: Any) -> workloads.ProbeSettings:
    base: dict[str, Any] = dict(expect_limit_mib=4000, hold_mib=3072, hold_seconds=5, extra_mib=2048,
                                sweep_gib=(2.0,), cores_percent=None)  # fmt: skip
    return workloads.ProbeSettings(**{**base, **changes})


def test_without_a_compute_quota_pod_b_starts_its_memory_step_at_once() -> None:
    memory_step = workloads.container_command(_probes(), pod="b")[2].split("; ")[-1]
    assert memory_step.startswith("exec python3 -m incluster.probes.memory") and "--delay" not in memory_step


def test_without_the_allocation_step_pod_b_waits_before_its_memory_step() -> None:
    memory_step = workloads.container_command(_probes(cores_percent=30), pod="b")[2].split("; ")[-1]
    assert f"--delay {workloads.COMPUTE_LOOKUP_DELAY_S:g}" in memory_step


def test_the_memory_probe_reads_its_delay_in_seconds() -> None:
    assert memory.parse_args(["--delay", "18.8"]).delay == 18.8
    assert memory.parse_args([]).delay == 0.0


@pytest.mark.parametrize("bad", [{"baseline_s": -1.0}, {"baseline_s": 1.0, "lead_s": -0.5}])
def test_a_negative_phase_length_is_refused(bad: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="seconds ≥ 0"):
        phases.lookup_delay(**bad)


def test_a_host_drops_the_pods_delays_and_gives_b_its_own_short_wait_after_the_pods_meet(
    cluster: dict[str, Any], tmp_path: Path
) -> None:
    options = HostOptions(setup="hami-core", lib="/lib/libvgpu.so", workdir=tmp_path)
    a, b = cluster["pods"].values()
    a_steps = pod_steps(a, {}, options, ["--baseline", "none"], computes=True)
    b_steps = pod_steps(b, {}, options, None, computes=True)
    b_alloc, b_memory = b_steps[2][0], b_steps[3][0]
    assert b_alloc[b_alloc.index("--delay") + 1] == f"{LOOKUP_WAIT_S:g}" and b_alloc.count("--delay") == 1
    assert "--delay" not in b_memory
    assert all("--delay" not in argv for argv, _ in a_steps[2:])
    assert meets({"a": a_steps, "b": b_steps}, ["a", "b"], 2) == [{"a": 2, "b": 2}, {"a": 4, "b": 3}]


def _stamp(after_s: float = 0.0) -> list[str]:
    return [sys.executable, "-c", f"import time; time.sleep({after_s}); print(time.time())"]


def test_host_pods_meet_before_the_steps_each_meet_names_once_every_step_before_it_ended() -> None:
    steps = {
        "a": [(_stamp(1.0), {}), (_stamp(), {}), (_stamp(), {})],  # A's neighbour step takes a second
        "b": [(_stamp(), {}), (_stamp(1.0), {}), (_stamp(), {})],  # B's next step takes a second
        "side": [(_stamp(), {})],  # not one of the proof Pods: it does not wait for them
    }
    runs = run_pods(steps, timeout=60, meets=[{"a": 1, "b": 1}, {"a": 2, "b": 2}])
    a_first, _, a_last = (float(x) for x in runs["a"].logs.split())
    _, b_second, b_last = (float(x) for x in runs["b"].logs.split())
    side = float(runs["side"].logs)
    assert b_second >= a_first + 1.0  # B's second step slept a second after the meet, after A's first ended
    assert a_last >= b_second and abs(a_last - b_last) < 0.5
    assert side < a_first


def _lookup(results: dict[str, dict[str, Any]], after_s: float, lines: list[str], found: bool) -> None:
    compute_result = results[A]["compute"]
    at = str(neighbour_steps.shifted(compute_result["started_at"], after_s))
    compute_result["lookup"] = {"lines": lines, "host_pid_found": found, "context_at": at}


INITIALIZED = "[HAMI-core Msg(1871:140621995435840:libvgpu.c:911)]: Initialized"
NO_HOST_PID = "[HAMI-core ERROR (pid:1871 thread=140621995435840 utils.c:158)]: host pid is error!"


ALONE = ROOT / "docs" / "host-proof" / "h200" / "final-26" / "repeat"
"""Recorded `cluster` runs where, as in a cluster, Pod A alone computes (cluster20: SM 20, compute-limited passed)."""


def _alone(edit: Any) -> tuple[Any, dict[str, Any]]:
    return neighbour_steps.run("cluster20-hami-core-1", edit, ALONE)


def _compute_limited(evidence: dict[str, Any], expect: Any) -> dict[str, Any]:
    return next(c for c in judge.judge(expect, evidence)["checks"] if c["id"] == "compute-limited")


def test_a_lookup_no_neighbour_step_met_leaves_compute_limited_passing() -> None:
    expect, evidence = _alone(lambda r: _lookup(r, 0.5, [INITIALIZED], True))
    assert _compute_limited(evidence, expect)["passed"] is True


def test_a_neighbour_step_inside_the_limited_processs_host_pid_lookup_is_refused() -> None:
    def met(results: dict[str, dict[str, Any]]) -> None:
        _lookup(results, 0.5, [INITIALIZED], True)
        results[B]["memory"]["started_at"] = str(neighbour_steps.shifted(results[A]["compute"]["started_at"], 0.2))

    expect, evidence = _alone(met)
    found = _compute_limited(evidence, expect)
    assert found["passed"] is False
    assert f"{A}.compute.lookup.context_at" in found["observed"] and "looked up its host PID" in found["observed"]


def test_a_limited_process_hami_core_found_no_host_pid_for_fails_compute_limited_with_the_librarys_line() -> None:
    expect, evidence = _alone(lambda r: _lookup(r, 0.5, [NO_HOST_PID], False))
    found = _compute_limited(evidence, expect)
    assert found["passed"] is False
    assert "found no host PID" in found["observed"] and "host pid is error!" in found["observed"]


def test_a_lookup_said_found_beside_the_librarys_own_failure_line_is_refused() -> None:
    expect, evidence = _alone(lambda r: _lookup(r, 0.5, [NO_HOST_PID], True))
    found = _compute_limited(evidence, expect)
    assert found["passed"] is False and "lookup.host_pid_found" in found["observed"]


def test_the_lookup_keeps_hami_cores_failure_line_first_and_says_not_found() -> None:
    lines = [INITIALIZED] * 8 + [NO_HOST_PID, "a line of the probe's own"]
    lookup = host_pid_lookup(lines, "hami-core")
    assert lookup["host_pid_found"] is False and lookup["lines"][0] == NO_HOST_PID
    assert len(lookup["lines"]) == 6 and "a line of the probe's own" not in lookup["lines"]
    assert host_pid_lookup([INITIALIZED], "hami-core")["host_pid_found"] is True
    assert host_pid_lookup([], "mps")["host_pid_found"] is None


def test_the_probe_reports_a_failed_lookup_as_a_finding_that_bypassed_the_limit() -> None:
    found = compute.lookup_finding(host_pid_lookup([NO_HOST_PID], "hami-core"))
    assert found["id"] == "host-pid-lookup" and found["bypassed"] is True and "host pid is error!" in found["observed"]


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
