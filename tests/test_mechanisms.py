"""Each mechanism is judged by its own evidence: HAMi-core's OOM line, MPS's pinned limit, time-sharing's nothing.

The MPS run is the recorded cluster run (T4, 4000 MiB slices, 30 % compute) edited to what the H200 showed under
`CUDA_MPS_PINNED_DEVICE_MEM_LIMIT`: the view not rewritten, free memory at the pinned limit less the context, the
largest allocation equal to that free memory, no library OOM line, and a probe that called that
`limit_enforced: false` because it only knows HAMi-core's way of refusing.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from components.incluster import judge
from components.incluster.expectation import Expectation
from tests.helpers.recorded import edit_probe, load

MPS_ENV = {"CUDA_MPS_PINNED_DEVICE_MEM_LIMIT": "0=4000M", "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": "30"}
MPS_CHECKS = ("same-gpu", "view-isolation", "quota-injection", "memory-enforced", "neighbor-isolation",
              "compute-limited")  # fmt: skip


CARD_MIB = 15360


def _as_mps(r: dict[str, Any]) -> None:
    r["env"] = {**MPS_ENV, "NVIDIA_VISIBLE_DEVICES": r["env"]["NVIDIA_VISIBLE_DEVICES"]}
    # cuMemGetInfo's total is the card less what the driver keeps back (143155 of 143771 MiB on the H200).
    r.update(visible_total_mib=CARD_MIB - 616, nvml_total_mib=CARD_MIB, visible_free_mib=3486, largest_alloc_mib=3486,
             nvml_free_mib=14900, hami_oom_lines=[], limit_enforced=False, context_overhead_mib=None,
             ld_so_preload=[], preload={"listed": [], "mapped": []})  # fmt: skip
    for step in r["phases"]["sweep"]:
        if step["gib"] * 1024 > 3486:
            step.update(ok=False, error="CUDA_ERROR_OUT_OF_MEMORY")


def mps_run() -> tuple[Expectation, dict[str, Any]]:
    expect, evidence = load("cluster")
    expect = replace(expect, system="gke", mechanism="mps", checks=MPS_CHECKS, card_mib=CARD_MIB, visible_mib=CARD_MIB,
                     limit_env=MPS_ENV, preload_library=None, node_registration=None, allocation_annotation=None,
                     overcommit_pod=None, overcommit_mib=None)  # fmt: skip
    for pod in expect.pods:
        edit_probe(evidence, pod, _as_mps)
        edit_probe(evidence, pod, lambda r: r["env"].update(CUDA_MPS_ACTIVE_THREAD_PERCENTAGE="30"), probe="compute")
        evidence["pods"][pod]["logs"] = "\n".join(
            line for line in evidence["pods"][pod]["logs"].splitlines() if "HAMI-core" not in line
        )
    return expect, evidence


def check(result: dict[str, Any], check_id: str) -> dict[str, Any]:
    return next(c for c in result["checks"] if c["id"] == check_id)


def test_mps_run_passes_on_its_own_evidence_with_no_oom_line_and_the_view_kept() -> None:
    expect, evidence = mps_run()
    result = judge.judge(expect, evidence)
    assert [c["id"] for c in result["checks"] if not c["passed"]] == [], result["checks"]
    assert "not rewritten by mps: each Pod sees the whole 15360 MiB card" in check(result, "view-isolation")["observed"]
    assert "MPS's pinned limit of 4000 MiB" in check(result, "memory-enforced")["observed"]


def test_mps_memory_enforced_fails_when_the_card_itself_was_full() -> None:
    expect, evidence = mps_run()
    edit_probe(evidence, "gpu-slice-a", lambda r: r.update(nvml_free_mib=3600))
    failed = check(judge.judge(expect, evidence), "memory-enforced")
    assert failed["passed"] is False and "a full card refuses without any limit" in failed["observed"]


def test_mps_memory_enforced_fails_when_the_refusal_is_not_at_the_free_memory_the_limit_leaves() -> None:
    expect, evidence = mps_run()
    edit_probe(evidence, "gpu-slice-b", lambda r: r.update(largest_alloc_mib=2000))
    failed = check(judge.judge(expect, evidence), "memory-enforced")
    assert failed["passed"] is False and "the refusal is not at the pinned limit" in failed["observed"]


def test_mps_memory_enforced_fails_when_free_memory_shows_no_limit() -> None:
    expect, evidence = mps_run()
    edit_probe(evidence, "gpu-slice-b", lambda r: r.update(visible_free_mib=15000, largest_alloc_mib=15000))
    failed = check(judge.judge(expect, evidence), "memory-enforced")
    assert failed["passed"] is False and "not held under the 4000 MiB pinned limit" in failed["observed"]


def test_mps_compute_is_read_from_the_thread_percentage_not_hami_cores_sm_limit() -> None:
    expect, evidence = mps_run()
    edit_probe(evidence, "gpu-slice-a", lambda r: r.update(env={"CUDA_DEVICE_SM_LIMIT": "30"}), probe="compute")
    failed = check(judge.judge(expect, evidence), "compute-limited")
    assert failed["passed"] is False and "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=None, expected 30" in failed["observed"]


def test_hami_core_view_isolation_fails_where_mps_would_report_the_whole_card_as_a_fact() -> None:
    expect, evidence = mps_run()
    failed = check(judge.judge(replace(expect, mechanism="hami-core", visible_mib=4000), evidence), "view-isolation")
    assert failed["passed"] is False and f"NVML total is {CARD_MIB} MiB, not 4000" in failed["observed"]


def test_a_kept_view_that_shows_the_slice_is_not_the_whole_card() -> None:
    expect, evidence = mps_run()
    edit_probe(evidence, "gpu-slice-b", lambda r: r.update(visible_total_mib=4000, nvml_total_mib=4000))
    failed = check(judge.judge(expect, evidence), "view-isolation")
    assert failed["passed"] is False and f"NVML total is 4000 MiB, not the card's {CARD_MIB}" in failed["observed"]


def test_time_sharing_fails_memory_and_compute_with_the_reason_and_the_measurement() -> None:
    expect, evidence = mps_run()
    expect = replace(expect, mechanism="time-sharing", limit_env={},
                     checks=("same-gpu", "view-isolation", "memory-enforced", "neighbor-isolation", "compute-limited"))
    for pod in expect.pods:
        edit_probe(evidence, pod, lambda r: r.update(visible_free_mib=14642, largest_alloc_mib=14642))
    result = judge.judge(expect, evidence)
    assert result["passed"] is False
    assert {c["id"] for c in result["checks"] if not c["passed"]} == {
        "memory-enforced", "neighbor-isolation", "compute-limited"
    }  # fmt: skip
    memory = check(result, "memory-enforced")
    assert memory["observed"] == "time-sharing enforces no memory limit: each Pod may take the whole card"
    assert "largest allocation 14642 MiB of the 14744 MiB it sees" in memory["evidence"]
    assert "fails by design" in memory["expected"]
    assert check(result, "compute-limited")["observed"].startswith("time-sharing enforces no compute limit")
