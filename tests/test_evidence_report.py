"""The over-commit watched over the whole proof window, the report's way out, the audit and the findings: evidence
odd in one way each fails the check (or the finding) that reads it, and the verdict always reaches the report.

Each case starts from a recorded run that passes (tests/fixtures; `tied` adds what a run since provenance
carries) and makes one edit; tests/test_evidence_record.py has the record's other kinds.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from components.incluster import audit, judge, message
from tests.helpers.recorded import as_another_process, edit_probe, load, probe_line, unlimited_view
from tests.helpers.tied import tied
from tests.test_guard import admitted


def overcommit(expect: Any, evidence: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in judge.judge(expect, evidence)["checks"] if c["id"] == "overcommit-rejected")


def failed(expect: Any, evidence: dict[str, Any], *words: str) -> None:
    found = overcommit(expect, evidence)
    assert found["passed"] is False, found["observed"]
    for word in words:
        assert word in found["observed"], (word, found["observed"])


# ---------------------------------------------------------------- over-commit, over the whole proof window

OC = "gpu-slice-oversubscribe"


def test_a_later_filtering_succeed_onto_the_proof_node_is_a_placement() -> None:
    expect, evidence = load("cluster")
    pod = evidence["pods"][OC]
    pod["events"].append({"reason": "FilteringSucceed", "message": "find fit node(node)",
                          "lastTimestamp": pod["events"][0]["lastTimestamp"]})  # fmt: skip
    failed(expect, evidence, "was placed after all", "FilteringSucceed")


def test_a_refusal_that_names_no_node_does_not_name_the_proof_node() -> None:
    expect, evidence = load("cluster")
    evidence["pods"][OC]["events"][0]["message"] = "1 nodes CardInsufficientMemory()"
    failed(expect, evidence, "names no node")


def test_hamis_bind_annotations_already_set_are_a_placement() -> None:
    expect, evidence = load("cluster")
    evidence["pods"][OC]["annotations"] = {"hami.io/vgpu-node": "node", "hami.io/bind-phase": "allocating"}
    failed(expect, evidence, "bound by hami.io/vgpu-node")


def test_a_running_container_is_a_placement() -> None:
    expect, evidence = load("cluster")
    evidence["pods"][OC]["containerStatuses"] = [{"name": "probe", "state": {"running": {}}}]
    failed(expect, evidence, "containers ['running']")


def test_an_ask_of_two_whole_cards_on_a_one_card_node_is_kept_out_by_the_count() -> None:
    expect, evidence = load("cluster")
    evidence["pods"][OC]["resources"]["limits"]["nvidia.com/gpu"] = "2"
    failed(expect, evidence, "asks 2 whole cards")


def test_the_tied_runs_watch_passes_as_recorded() -> None:
    expect, evidence = tied("cluster")
    assert overcommit(expect, evidence)["passed"] is True
    assert len(evidence["pods"][OC]["watch"]) >= 2


def test_a_proof_pod_that_ended_while_the_overcommit_pod_waited_did_not_hold_its_slice() -> None:
    expect, evidence = tied("cluster")
    evidence["pods"][OC]["watch"][-1]["proofPhases"]["gpu-slice-a"] = "Succeeded"
    failed(expect, evidence, "proof Pod gpu-slice-a was Succeeded")


def test_an_overcommit_pod_scheduled_midway_through_the_watch_was_not_kept_out() -> None:
    expect, evidence = tied("cluster")
    evidence["pods"][OC]["watch"][3].update(phase="Running", nodeName="node")
    failed(expect, evidence, "scheduled during the proof")


def test_one_look_at_the_overcommit_pod_is_not_a_watch() -> None:
    expect, evidence = tied("cluster")
    evidence["pods"][OC]["watch"] = evidence["pods"][OC]["watch"][:1]
    failed(expect, evidence, "watched 1 times")


def test_reads_while_the_proof_pods_were_starting_are_before_the_window_not_against_it() -> None:
    expect, evidence = tied("cluster")
    watch = evidence["pods"][OC]["watch"]
    watch[0]["proofPhases"]["gpu-slice-b"] = "Pending"  # B was still pulling its image at the first poll
    assert overcommit(expect, evidence)["passed"] is True
    for w in watch[:-1]:
        w["proofPhases"]["gpu-slice-b"] = "Pending"  # ... and at every poll but the last: no window to speak of
    failed(expect, evidence, "watched 1 times over 0 s beside Running proof Pods")


def test_a_proof_pod_created_after_the_overcommit_pod_never_met_it() -> None:
    expect, evidence = tied("cluster")
    evidence["pods"]["gpu-slice-a"]["creationTimestamp"] = "2026-12-02T18:05:00Z"  # after the over-commit Pod
    failed(expect, evidence, "was created after")


# ---------------------------------------------------------------- the report's way out


def test_one_check_id_twice_failed_then_passed_is_not_a_pass() -> None:
    expect, evidence = load("cluster")
    verdict = judge.judge(expect, evidence)
    first = verdict["checks"][0]
    verdict["checks"] = [{**first, "passed": False, "observed": "failed"}, *verdict["checks"]]
    expanded = message.expand(message.decode(message.encode(verdict)), expect)
    assert expanded["passed"] is False
    shown = next(c for c in expanded["checks"] if c["id"] == first["id"])
    assert shown["passed"] is False and "2 times" in shown["observed"]


def test_a_check_no_plan_names_is_not_a_pass() -> None:
    expect, evidence = load("cluster")
    verdict = judge.judge(expect, evidence)
    verdict["checks"].append({"id": "always-fine", "passed": True, "observed": "", "evidence": ""})
    expanded = message.expand(message.decode(message.encode(verdict)), expect)
    assert expanded["passed"] is False and "always-fine" in expanded["error"]


def test_a_lone_surrogate_in_a_findings_text_still_yields_a_verdict() -> None:
    expect, evidence = load("cluster")
    verdict = judge.judge(expect, evidence)
    verdict["findings"][0]["tried"] += " in TMPDIR=/tmp/\udcff"  # a non-UTF-8 byte, through surrogateescape
    decoded = message.decode(message.encode(verdict))
    assert decoded["passed"] is True and "\ufffd" in decoded["findings"][0]["tried"]
    message.log_line(verdict).encode("utf-8")  # the verifier's log line too


def test_a_lone_surrogate_in_a_probes_finding_fails_its_checks_and_the_verdict_is_written() -> None:
    expect, evidence = load("cluster")
    edit_probe(evidence, "gpu-slice-a", lambda r: r["findings"][0].update(tried="TMPDIR=/tmp/\udcff"))
    verdict = judge.judge(expect, evidence)
    assert verdict["passed"] is False
    assert "lone surrogate" in next(c for c in verdict["checks"] if c["id"] == "memory-enforced")["observed"]
    assert message.decode(message.encode(verdict))["passed"] is False


# ---------------------------------------------------------------- the audit: one path rule, here and in the guard


def _host_path_pod(path: str) -> dict[str, Any]:
    return {"metadata": {"name": "dev", "namespace": "tenant"},
            "spec": {"nodeName": "gpu-0", "containers": [{"name": "c"}],
                     "volumes": [{"name": "d", "hostPath": {"path": path}}]}}  # fmt: skip


@pytest.mark.parametrize("path", ["/dev//nvidia0", "/dev/./nvidia0", "/dev/.", "//dev/nvidiactl", "/./", "/dev/"])
def test_a_device_path_however_spelled_is_seen_by_the_audit_and_refused_by_the_guard(path: str) -> None:
    found = audit.classify(_host_path_pod(path))
    assert found is not None and (found["class"], found["reason"]) == ("unlimited", "device-host-path")
    assert admitted(_host_path_pod(path), ["device-host-path"]) == ["device-host-path"]


@pytest.mark.parametrize("path", ["/var/lib/kubelet", "/dev/shm", "/devnvidia", "/opt/dev/nvidia0", "dev/nvidia0"])
def test_a_path_that_is_no_device_is_left_to_the_pod(path: str) -> None:
    assert audit.classify(_host_path_pod(path)) is None
    assert admitted(_host_path_pod(path), ["device-host-path"]) == []


SEGMENTS = st.lists(st.sampled_from(["", ".", "..", "dev", "nvidia0", "nvidiactl", "shm", "x"]), max_size=5)


@settings(max_examples=150, deadline=None)
@given(parts=SEGMENTS, absolute=st.booleans())
def test_the_guards_cel_rule_and_the_audit_read_every_path_alike(parts: list[str], absolute: bool) -> None:
    path = ("/" if absolute else "") + "/".join(parts)
    if not path:
        return
    pattern = audit.device_path_pattern()
    assert bool(re.search(pattern, path)) is audit.is_device_path(path), path
    assert admitted(_host_path_pod(path), ["device-host-path"]) == (["device-host-path"] if audit.is_device_path(
        path) else []), path  # fmt: skip


def test_the_audit_naming_a_proof_pod_opted_out_while_its_probe_found_the_library_fails() -> None:
    expect, evidence = load("k3s")
    pod = expect.pods[0]
    evidence["gpuAudit"] = {"counts": {"limited": 1, "unlimited": 1, "system": 0}, "systemNamespaces": [],
                            "pods": [{"pod": f"{expect.namespace}/{pod}", "node": None, "class": "unlimited",
                                      "reason": "cuda-disable-control", "access": ["gpu-request"]}]}  # fmt: skip
    found = next(c for c in judge.judge(expect, evidence)["checks"] if c["id"] == "memory-enforced")
    assert found["passed"] is False and "the spec and the process disagree" in found["observed"]


# ---------------------------------------------------------------- the findings, cross-examined


def test_a_context_charge_finding_that_contradicts_the_memory_figures_beside_it_is_not_believed() -> None:
    expect, evidence = load("cluster")

    def uncharged(r: dict[str, Any]) -> None:  # the finding says 0 MiB was charged; the result says 518
        charge = next(f for f in r["findings"] if f["id"] == "context-charge")
        charge.update(charged_mib=0, over_quota_mib=charge["context_mib"], bypassed=True)

    edit_probe(evidence, "gpu-slice-a", uncharged)
    verdict = judge.judge(expect, evidence)
    found = next(f for f in verdict["findings"] if f["id"] == "context-charge" and f["pod"] == "gpu-slice-a")
    assert found["bypassed"] is None and "charged_mib" in found["why"], found
    assert verdict["passed"] is False


def test_a_try_that_allocated_100000_mib_with_no_card_is_not_reported_held() -> None:
    from dataclasses import replace

    from components.incluster.checks import escape
    from components.incluster.expectation import PodTry

    expect, evidence = load("k3s")
    memory = as_another_process(probe_line(evidence, "hami-share-a"))
    unlimited_view(memory, 100_000, 100_000)
    memory.update(gpu_uuid=None, preload={"listed": [], "mapped": []})
    pod_try = PodTry(escape.TRY_ID, "hami-share-try-visible-devices-all", escape.TRIED)
    evidence["pods"][pod_try.pod] = {"phase": "Succeeded", "logs": json.dumps(memory) + "\n"}
    found = next(f for f in judge.judge(replace(expect, pod_tries=(pod_try,)), copy.deepcopy(evidence))["findings"]
                 if f["id"] == escape.TRY_ID)  # fmt: skip
    assert found["bypassed"] is None and "an allocation needs a card" in found["why"], found
