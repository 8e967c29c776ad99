"""Each mechanism is judged by its own evidence: HAMi-core's OOM line, MPS's pinned limit, time-sharing's nothing.

The MPS run is the H200's (tests/fixtures/real/h200/cluster-mps): the cluster stack's two Pods as MPS clients
with `CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=4000M` and 30 % of the threads. The view is not rewritten, free memory
sits at the pinned limit less the context, the largest allocation equals that free memory, and no library prints
an OOM line.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from components.incluster import judge
from components.incluster.expectation import Expectation
from tests.helpers.recorded import edit_probe, probe_line, real_run, set_largest

MPS_ENV = {"CUDA_MPS_PINNED_DEVICE_MEM_LIMIT": "0=4000M", "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": "30"}
MPS_CHECKS = ("same-gpu", "view-isolation", "quota-injection", "memory-enforced", "neighbor-isolation",
              "compute-limited")  # fmt: skip


def mps_run() -> tuple[Expectation, dict[str, Any]]:
    """The H200's MPS run, judged as GKE's MPS sharing would ask: the card as NVML reports it, the MPS env."""
    expect, evidence = real_run("cluster", "cluster-mps")
    card = probe_line(evidence, "gpu-slice-a")["nvml_total_mib"]
    expect = replace(expect, system="gke", mechanism="mps", checks=MPS_CHECKS, card_mib=card, visible_mib=card,
                     limit_env=MPS_ENV, preload_library=None, node_registration=None, allocation_annotation=None,
                     overcommit_pod=None, overcommit_mib=None)  # fmt: skip
    return expect, evidence


def check(result: dict[str, Any], check_id: str) -> dict[str, Any]:
    return next(c for c in result["checks"] if c["id"] == check_id)


def test_the_h200s_mps_run_passes_on_its_own_evidence_with_no_oom_line_and_the_view_kept() -> None:
    expect, evidence = mps_run()
    result = judge.judge(expect, evidence)
    assert [c["id"] for c in result["checks"] if not c["passed"]] == [], result["checks"]
    view = check(result, "view-isolation")["observed"]
    assert f"not rewritten by mps: each Pod sees the whole {expect.card_mib} MiB card" in view
    assert "MPS's pinned limit of 4000 MiB" in check(result, "memory-enforced")["observed"]
    assert {f["id"] for f in result["findings"] if f["bypassed"]} >= {"mps-own-pinned-limit"}


def test_mps_memory_enforced_fails_when_the_card_itself_was_full() -> None:
    expect, evidence = mps_run()
    edit_probe(evidence, "gpu-slice-a", lambda r: r.update(nvml_free_mib=r["largest_alloc_mib"] + 100))
    failed = check(judge.judge(expect, evidence), "memory-enforced")
    assert failed["passed"] is False and "a full card refuses without any limit" in failed["observed"]


def test_mps_memory_enforced_fails_when_the_refusal_is_not_at_the_free_memory_the_limit_leaves() -> None:
    expect, evidence = mps_run()
    edit_probe(evidence, "gpu-slice-b", lambda r: set_largest(r, 2000))
    failed = check(judge.judge(expect, evidence), "memory-enforced")
    assert failed["passed"] is False and "the refusal is not at the pinned limit" in failed["observed"]


def test_mps_memory_enforced_fails_when_free_memory_shows_no_limit() -> None:
    expect, evidence = mps_run()

    def no_limit(r: dict[str, Any]) -> None:
        r["visible_free_mib"] = 15000
        set_largest(r, 15000)
        r["findings"] = []  # no limit held: nothing to get around (memory_findings.all_findings)

    edit_probe(evidence, "gpu-slice-b", no_limit)
    failed = check(judge.judge(expect, evidence), "memory-enforced")
    assert failed["passed"] is False and "not held under the 4000 MiB pinned limit" in failed["observed"]


def test_mps_compute_is_read_from_the_thread_percentage_not_hami_cores_sm_limit() -> None:
    expect, evidence = mps_run()
    edit_probe(
        evidence,
        "gpu-slice-a",
        lambda r: r["env"].update(CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=None, CUDA_DEVICE_SM_LIMIT="30"),
        probe="compute",
    )
    failed = check(judge.judge(expect, evidence), "compute-limited")
    assert failed["passed"] is False and "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=None, expected 30" in failed["observed"]


def test_hami_core_view_isolation_fails_where_mps_would_report_the_whole_card_as_a_fact() -> None:
    expect, evidence = mps_run()
    failed = check(judge.judge(replace(expect, mechanism="hami-core", visible_mib=4000), evidence), "view-isolation")
    assert failed["passed"] is False and f"NVML total is {expect.card_mib} MiB, not 4000" in failed["observed"]


def test_a_kept_view_that_shows_the_slice_is_not_the_whole_card() -> None:
    expect, evidence = mps_run()
    edit_probe(
        evidence,
        "gpu-slice-b",
        lambda r: r.update(visible_total_mib=4000, nvml_total_mib=4000, nvml_free_mib=min(r["nvml_free_mib"], 4000)),
    )
    failed = check(judge.judge(expect, evidence), "view-isolation")
    assert failed["passed"] is False
    assert f"NVML total is 4000 MiB, not the card's {expect.card_mib}" in failed["observed"]


def test_time_sharing_fails_memory_and_compute_with_the_reason_and_the_measurement() -> None:
    expect, evidence = mps_run()
    expect = replace(
        expect,
        mechanism="time-sharing",
        limit_env={},
        checks=("same-gpu", "view-isolation", "memory-enforced", "neighbor-isolation", "compute-limited"),
    )
    result = judge.judge(expect, evidence)
    assert result["passed"] is False
    assert {c["id"] for c in result["checks"] if not c["passed"]} == {
        "memory-enforced", "neighbor-isolation", "compute-limited"
    }  # fmt: skip
    memory = check(result, "memory-enforced")
    assert memory["observed"] == "time-sharing enforces no memory limit: each Pod may take the whole card"
    a = probe_line(evidence, "gpu-slice-a")
    assert (
        f"largest allocation {a['largest_alloc_mib']} MiB of the {a['visible_total_mib']} MiB it sees"
        in (memory["evidence"])
    )
    assert "fails by design" in memory["expected"]
    assert check(result, "compute-limited")["observed"].startswith("time-sharing enforces no compute limit")


def test_the_h200s_bare_card_fails_every_check_hami_core_is_held_to() -> None:
    """No library at all: both Pods hold side by side, but nothing refuses, nothing is mapped, no OOM line."""
    expect, evidence = real_run("cluster", "cluster-bare")
    result = judge.judge(expect, evidence)
    failed = {c["id"] for c in result["checks"] if not c["passed"]}
    assert {"view-isolation", "memory-enforced", "neighbor-isolation", "preload-mechanism"} <= failed
    assert "not mapped into the probe process" in check(result, "memory-enforced")["observed"]
    assert result["passed"] is False
