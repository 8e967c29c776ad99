"""Contradictions the judge once passed, each built by editing one real record (tests/fixtures, from the H200 host
proof; docs/host-proof/h200/neighbour-steps): each is now a refused record or a failed check, naming what disagrees."""

from __future__ import annotations

import json
from typing import Any

import pytest

from components.incluster import judge, message
from components.incluster.expectation import Expectation
from tests.conftest import ROOT
from tests.helpers import neighbour_steps
from tests.helpers.recorded import edit_probe, load, probe_line

A, B = neighbour_steps.NEIGHBOUR, neighbour_steps.DISTURBER


def check(expect: Expectation, evidence: dict[str, Any], check_id: str) -> dict[str, Any]:
    return next(c for c in judge.judge(expect, evidence)["checks"] if c["id"] == check_id)


def failed(expect: Expectation, evidence: dict[str, Any], check_id: str, *words: str) -> None:
    found = check(expect, evidence, check_id)
    assert found["passed"] is False, found
    for word in words:
        assert word in found["observed"], (word, found["observed"])


def test_the_recorded_runs_pass_before_any_edit() -> None:
    expect, evidence = load("cluster")
    assert all(check(expect, evidence, c)["passed"] for c in ("compute-limited", "memory-enforced"))
    stepped, logs = neighbour_steps.run("cluster-hami-core")
    assert check(stepped, logs, "fault-isolation")["passed"] is True
    assert check(stepped, logs, "compute-limited")["passed"] is True


def test_one_pods_compute_line_copied_into_the_other_is_refused() -> None:
    """Two timestamps are all a compute line has: its measured seconds tell one process's output given twice."""
    expect, evidence = load("cluster")
    copied = probe_line(evidence, "gpu-slice-a", "compute")
    edit_probe(evidence, "gpu-slice-b", lambda r: (r.clear(), r.update(copied)), "compute")
    failed(expect, evidence, "compute-limited", "the same measured seconds in shapes.short_many",
           "one process's output given as both")  # fmt: skip


def _at(value: str, seconds: float) -> str:
    return str(neighbour_steps.shifted(value, seconds))


def test_a_step_overlapping_the_same_pods_compute_window_is_refused() -> None:
    def overlap(results: dict[str, dict[str, Any]]) -> None:  # A's compute starts 1 s before its copy loop ended
        results[A]["compute"]["started_at"] = _at(results[A]["bandwidth"]["ended_at"], -1)

    expect, evidence = neighbour_steps.run("cluster-hami-core", overlap)
    failed(expect, evidence, "compute-limited", f"{A}.compute.started_at", "before its bandwidth step ended")


def test_the_neighbours_copy_inside_the_other_pods_compute_window_is_refused() -> None:
    def late(results: dict[str, dict[str, Any]]) -> None:  # B's copy step ends inside A's compute, before B's own
        results[B]["bandwidth"]["ended_at"] = _at(results[A]["compute"]["started_at"], 0.05)

    expect, evidence = neighbour_steps.run("cluster-hami-core", late)
    failed(expect, evidence, "compute-limited", f"Pod {B}'s bandwidth step ran until", "it measured beside it")


def test_fault_steps_on_a_card_neither_memory_probe_measured_fail_fault_isolation() -> None:
    other = "GPU-00000000-0000-0000-0000-0000000000ff"

    def elsewhere(results: dict[str, dict[str, Any]]) -> None:
        for pod in (A, B):
            results[pod]["fault"].update(gpu_uuid=other)
            results[pod]["fault"]["env"]["NVIDIA_VISIBLE_DEVICES"] = other

    expect, evidence = neighbour_steps.run("cluster-hami-core", elsewhere)
    failed(expect, evidence, "fault-isolation", f"the fault steps ran on {other}, a card neither memory probe")


def test_survival_claimed_from_one_launch_a_second_fails_fault_isolation() -> None:
    def crawling(results: dict[str, dict[str, Any]]) -> None:  # after the fault's second, one launch a second
        fault = results[A]["fault"]
        per_s = fault["timeline"]["per_s"]
        fault["launches"] -= sum(per_s[3:]) - len(per_s[3:])
        per_s[3:] = [1] * len(per_s[3:])

    expect, evidence = neighbour_steps.run("cluster-hami-core", crawling)
    failed(expect, evidence, "fault-isolation", "a second after the fault", "it did not run on")


def test_a_lower_case_t_and_z_are_read_alike_by_every_time_parser() -> None:
    """RFC 3339 allows them; the record read them while the timelines' parser did not, and the fault went unseen."""

    def lower(results: dict[str, dict[str, Any]]) -> None:
        for pod in (A, B):
            results[pod]["fault"] = json.loads(json.dumps(results[pod]["fault"]).replace("T11:", "t11:")
                                               .replace('Z"', 'z"'))  # fmt: skip

    expect, evidence = neighbour_steps.run("cluster-hami-core", lower)
    original, plain = neighbour_steps.run("cluster-hami-core")
    assert (
        check(expect, evidence, "fault-isolation")["observed"] == check(original, plain, "fault-isolation")["observed"]
    )


def test_the_probes_extra_ask_other_than_the_plans_fails_memory_enforced() -> None:
    expect, evidence = load("cluster")
    edit_probe(evidence, "gpu-slice-a", lambda r: r["phases"]["hold"].update(extra_mib=expect.extra_mib + 1024))
    failed(expect, evidence, "memory-enforced", f"asked {expect.extra_mib + 1024} MiB beyond the hold, the plan"
           f" asked {expect.extra_mib}")  # fmt: skip


def test_the_probes_compute_percentage_other_than_the_plans_fails_compute_limited() -> None:
    expect, evidence = load("cluster")
    edit_probe(evidence, "gpu-slice-a", lambda r: r.update(limit_percent=60), "compute")
    failed(expect, evidence, "compute-limited", "limit_percent 60, the plan asks 30")


def test_an_indexed_sm_limit_beside_the_plain_one_fails_compute_limited() -> None:
    expect, evidence = load("cluster")
    edit_probe(evidence, "gpu-slice-a", lambda r: r["env"].update(CUDA_DEVICE_SM_LIMIT_0="100"), "compute")
    failed(expect, evidence, "compute-limited", "CUDA_DEVICE_SM_LIMIT_0=100 beside CUDA_DEVICE_SM_LIMIT=30")


def test_a_key_given_twice_in_the_termination_message_is_refused() -> None:
    verdict = json.loads((ROOT / "docs/host-proof/h200/cluster-bare/verdict.json").read_text())
    compact = {"passed": verdict["passed"], "checks": [{"id": c["id"], "passed": c["passed"]} for c in verdict["checks"]
                                                       if c["passed"] is False]}  # fmt: skip
    text = json.dumps(compact)
    twice = text.replace('"passed": false}', '"passed": false, "passed": true}', 1)  # a failed check "passed" too
    assert twice != text and message.decode(text) == compact
    with pytest.raises(ValueError, match="appears twice"):
        message.decode(twice)


def test_an_extra_allocations_refusal_shown_only_by_a_child_processs_line_fails_memory_enforced() -> None:
    """The probe's own line for its hold + extra removed; a child's line rewritten to ask the same bytes."""
    expect, evidence = load("cluster")
    lines = probe_line(evidence, "gpu-slice-a")["hami_oom_lines"]
    own = lines[0].split(")]:")[0]
    ask = (expect.hold_mib + expect.extra_mib) * (1 << 20)
    extra = next(x for x in lines if x.startswith(own) and ask <= int(x.split(" OOM ")[1].split(" /")[0]) <= ask
                 + (1 << 30))  # fmt: skip
    asked = extra.split(" OOM ")[1].split(" /")[0]
    child = next(x for x in lines if not x.startswith(own))
    forged = child.replace(child.split(" OOM ")[1].split(" /")[0], asked)
    edited = [forged if x == child else x for x in lines if x != extra]

    def moved(r: dict[str, Any]) -> None:
        r["hami_oom_lines"] = edited
        r["enforcement"]["oom_lines"] = len(edited)

    edit_probe(evidence, "gpu-slice-a", moved)
    log = [x for x in evidence["pods"]["gpu-slice-a"]["logs"].splitlines() if x != extra]
    evidence["pods"]["gpu-slice-a"]["logs"] = "\n".join(forged if x == child else x for x in log) + "\n"
    failed(expect, evidence, "memory-enforced", f"the {expect.extra_mib} MiB extra was refused", "not shown to be the"
           " quota's")  # fmt: skip


def test_a_sweep_cut_short_fails_memory_enforced() -> None:
    expect, evidence = load("cluster")
    edit_probe(evidence, "gpu-slice-a", lambda r: r["phases"].update(sweep=r["phases"]["sweep"][:2]))
    failed(expect, evidence, "memory-enforced", "the sweep tried 2, 3 GiB, the plan 2, 3, 3.8, 4, 4.5, 6")


def test_a_sweep_step_contradicting_the_largest_allocation_fails_memory_enforced() -> None:
    """3 GiB refused while a single 3482 MiB allocation fitted the same room."""
    expect, evidence = load("cluster")
    edit_probe(evidence, "gpu-slice-a",
               lambda r: r["phases"]["sweep"][1].update(ok=False, error="CUDA_ERROR_OUT_OF_MEMORY"))  # fmt: skip
    failed(expect, evidence, "memory-enforced", "the sweep's 3 GiB was refused within the largest single allocation"
           " (3482 MiB)")  # fmt: skip


def test_a_run_in_a_namespace_other_than_the_plans_is_refused() -> None:
    """Pod object and probe agree with each other on another namespace: another run's Pods, not this plan's."""
    from tests.helpers.tied import tied

    expect, evidence = tied("cluster")
    for pod in expect.pods:
        evidence["pods"][pod]["namespace"] = "someone-else"
        for probe in ("memory", "compute"):
            edit_probe(evidence, pod, lambda r: r["pod"].update(namespace="someone-else"), probe)
    failed(expect, evidence, "memory-enforced", "namespace 'someone-else', the plan runs the proof in")


def test_a_crashed_verifiers_long_error_survives_the_termination_messages_cuts() -> None:
    """A recorded verdict with a long error beside it (as a crash reports one): every observation is cut to fit 4096
    bytes, the error with them, never dropped."""
    import hashlib

    verdict = json.loads((ROOT / "docs/host-proof/h200/cluster-bare/verdict.json").read_text())
    error = "Traceback: " + "".join(hashlib.sha256(str(i).encode()).hexdigest() for i in range(150))
    text = message.encode({**verdict, "passed": False, "error": error})
    assert len(text.encode()) <= message.LIMIT_BYTES
    decoded = message.decode(text)
    assert "everything but each check's result and each finding's id" in decoded["cut"][-1]
    assert decoded["error"].startswith("Traceback: 5feceb66") and len(decoded["error"]) == message.BARE_ERROR_CHARS


def test_the_over_commit_pods_pin_is_read_by_overcommit_rejected() -> None:
    """On a two-card node the over-commit Pod pinned to the other card (or to none) is kept out of that card, not
    the shared one: its Pending says nothing about the slices (tests/test_two_card_judge.two_cards, a real run)."""
    from tests.test_two_card_judge import CARD_0, PIN, two_cards

    expect, evidence, _ = two_cards()
    assert check(expect, evidence, "overcommit-rejected")["passed"] is True
    name = str(expect.overcommit_pod)
    evidence["pods"][name]["annotations"][PIN] = CARD_0
    failed(expect, evidence, "overcommit-rejected", f"{name} is pinned by {PIN}={CARD_0}, not to the shared card")
    del evidence["pods"][name]["annotations"][PIN]
    failed(expect, evidence, "overcommit-rejected", f"{name} carries no {PIN}")


def test_a_bandwidth_no_card_can_move_is_refused() -> None:
    """A's copy loop a thousand times faster throughout, its figures agreeing with each other: 2.5 PB/s."""

    def impossible(results: dict[str, dict[str, Any]]) -> None:
        step = results[A]["bandwidth"]
        step["timeline"]["per_s"] = [x * 1000 for x in step["timeline"]["per_s"]]
        step["gbps"].update({k: step["gbps"][k] * 1000 for k in ("mean", "min", "max")})
        step["copies"] *= 1000

    expect, evidence = neighbour_steps.run("cluster-hami-core", impossible)
    (found,) = [f for f in judge.judge(expect, evidence)["findings"] if f["id"] == "bandwidth-neighbour"]
    assert found["bypassed"] is None and f"not judgeable: {A}.bandwidth." in found["why"], found
    assert "above" in found["why"] or "more than" in found["why"], found["why"]
