"""fault-isolation on the H200's records: a neighbour that runs on beside another Pod's fault passes, one that the
fault takes down fails (under MPS with the reason), and a fault that did not land inside the neighbour's window, or
did not happen, is not judgeable and says why. Every edit keeps the probe's own figures consistent (the record
refuses the rest before the check runs)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from components.incluster import judge
from components.incluster.checks.registry import REGISTRY
from tests.conftest import ROOT
from tests.helpers.neighbour_steps import DISTURBER, NEIGHBOUR, run, shifted

STACKS = ("gke", "gke-mps", "gke-time-sharing", "k3s", "cluster")


def fault_check(expect: Any, evidence: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in judge.judge(expect, evidence)["checks"] if c["id"] == "fault-isolation")


def neighbour_shifted(seconds: float) -> Any:
    def edit(results: dict[str, dict[str, Any]]) -> None:
        # The whole Pod's run, so that its own steps stay in order (one clock in a Pod).
        results[NEIGHBOUR] = shifted(results[NEIGHBOUR], seconds)

    return edit


def test_under_hami_core_the_neighbour_runs_on_beside_a_fault_and_fault_isolation_passes() -> None:
    found = fault_check(*run("cluster-hami-core"))
    assert found["passed"] is True, found["observed"]
    assert found["observed"].startswith(f"Pod {NEIGHBOUR} ran on beside Pod {DISTURBER}'s fault: 82,173 launches a"
                                        " second before it, 79,869 after")  # fmt: skip
    assert "before the fault 80,039 84,307 · its second 66,218 · after 79,869" in found["evidence"]
    assert "fresh tries pid 921 ran a kernel" in found["evidence"]


def test_under_mps_the_fault_of_one_client_takes_its_neighbour_down_and_fault_isolation_fails_saying_so() -> None:
    found = fault_check(*run("cluster-mps"))
    assert found["passed"] is False
    assert found["observed"].startswith(
        "the fault of one MPS client reaches every client of its server: Pod gpushare-proof-a died with"
        " CUDA_ERROR_ILLEGAL_ADDRESS at 2026-12-03T11:53:20.376Z, 0.15 s after Pod gpushare-proof-b's fault at"
        " 2026-12-03T11:53:20.223Z"
    )
    assert "before the fault 89,847 88,995" in found["evidence"]
    assert "the fault of one client tears down every client" in found["expected"]


def test_a_neighbour_that_died_after_the_fault_under_hami_core_fails_as_the_faults_reach() -> None:
    expect, evidence = run("cluster-mps")
    found = fault_check(dataclasses.replace(expect, mechanism="hami-core"), evidence)
    assert found["passed"] is False and found["observed"].endswith(": the fault reached its neighbour")
    assert "MPS" not in found["observed"]


@pytest.mark.parametrize(("seconds", "why"), [
    (1.5, "no whole second of its rate before it"),
    (2.5, "outside it, so nothing is shown"),
    (-2.0, "with no whole second after it to show the rate it ran on at"),
    (-6.0, "outside it, so nothing is shown"),
])  # fmt: skip
def test_a_fault_that_did_not_land_inside_the_neighbours_window_is_not_judgeable(seconds: float, why: str) -> None:
    found = fault_check(*run("cluster-hami-core", neighbour_shifted(seconds)))
    assert found["passed"] is False and found["observed"].startswith("not judgeable: the fault at ")
    assert why in found["observed"]


def test_a_neighbour_that_died_before_the_fault_did_not_die_of_it() -> None:
    found = fault_check(*run("cluster-mps", neighbour_shifted(-0.5)))
    assert found["passed"] is False
    assert "before the fault at 2026-12-03T11:53:20.223Z: its death is not the fault's" in found["observed"]


def test_a_store_to_address_zero_that_raised_no_error_made_no_fault_and_shows_nothing() -> None:
    def no_fault(results: dict[str, dict[str, Any]]) -> None:
        results[DISTURBER]["fault"].update(cuda_error=None, cuda_error_at=None, faulted=False)

    found = fault_check(*run("cluster-hami-core", no_fault))
    assert found["passed"] is False
    assert "not judgeable: Pod gpushare-proof-b's store to address 0 ended with no error" in found["observed"]


def test_a_card_that_served_no_fresh_process_after_the_fault_fails_fault_isolation() -> None:
    def unserved(results: dict[str, dict[str, Any]]) -> None:
        faulter = results[DISTURBER]["fault"]
        faulter["served"] = False
        faulter["serve"][0].update(kernel_ran=False, cuda_error="CUDA_ERROR_LAUNCH_FAILED")

    found = fault_check(*run("cluster-hami-core", unserved))
    assert (
        found["passed"] is False and "the card did not serve once the faulting process was gone" in (found["observed"])
    )


def test_a_faulting_process_that_did_not_end_fails_fault_isolation() -> None:
    found = fault_check(*run("cluster-hami-core", lambda r: r[DISTURBER]["fault"].update(faulting_ended=False)))
    assert found["passed"] is False and "(pid 909) did not end: it holds a broken context" in found["observed"]


def test_a_fault_on_another_card_than_the_neighbours_is_not_shown_to_share_one() -> None:
    other = "GPU-00000000-0000-0000-0000-000000000000"
    found = fault_check(*run("cluster-hami-core", lambda r: r[DISTURBER]["fault"].update(gpu_uuid=other)))
    assert (
        found["passed"] is False
        and f"Pod {DISTURBER}'s fault on {other}: not shown to share a card" in (found["observed"])
    )


def test_two_pods_in_each_others_roles_fail_fault_isolation_naming_them() -> None:
    def swapped(results: dict[str, dict[str, Any]]) -> None:
        results[NEIGHBOUR]["fault"], results[DISTURBER]["fault"] = (
            results[DISTURBER]["fault"],
            results[NEIGHBOUR]["fault"],
        )

    found = fault_check(*run("cluster-hami-core", swapped))
    assert found["passed"] is False
    assert (
        f"Pod {NEIGHBOUR}: its fault step ran as the faulter; the plan runs it as the neighbour" in (found["observed"])
    )


def test_a_pod_without_its_fault_step_fails_fault_isolation_with_why() -> None:
    found = fault_check(*run("cluster-hami-core", lambda r: r[DISTURBER].pop("fault")))
    assert found["passed"] is False
    assert found["observed"] == f"Pod {DISTURBER} has no fault probe result in its log (phase Succeeded)"


def test_a_fault_step_that_ends_after_the_pods_next_step_began_is_not_judgeable() -> None:
    def late(results: dict[str, dict[str, Any]]) -> None:  # its fault step alone, 8 s later
        results[NEIGHBOUR]["fault"] = shifted(results[NEIGHBOUR]["fault"], 8)

    found = fault_check(*run("cluster-hami-core", late))
    assert found["passed"] is False and found["observed"].startswith("not judgeable: gpushare-proof-a.fault.")
    assert "before its fault step ended" in found["observed"]


def test_under_provenance_a_fault_result_that_names_another_pod_is_not_judgeable() -> None:
    def tied(results: dict[str, dict[str, Any]]) -> None:
        for pod, out in results.items():
            for r in out.values():
                if isinstance(r, dict) and "pid" in r and r.get("probe") in ("fault", "bandwidth"):
                    r["pod"] = {"name": pod, "uid": f"uid-{pod}", "namespace": "gpushare-proof", "node": "host",
                                "pid": r["pid"], "children": sorted(c["pid"] for c in r["children"]
                                                                    if isinstance(c, dict))}  # fmt: skip
            out["podObject"] = {"name": pod, "uid": f"uid-{pod}", "namespace": "gpushare-proof", "nodeName": "host",
                                "phase": "Succeeded", "creationTimestamp": "2026-12-03T11:48:00.000Z"}  # fmt: skip
        results[DISTURBER]["fault"]["pod"]["uid"] = f"uid-{NEIGHBOUR}"

    expect, evidence = run("cluster-hami-core", tied)
    found = fault_check(dataclasses.replace(expect, provenance=True), evidence)
    assert found["passed"] is False
    assert (
        f"not judgeable: {DISTURBER}.fault.pod.uid: Pod {DISTURBER}: the probe ran in uid 'uid-{NEIGHBOUR}', the"
        f" API server names 'uid-{DISTURBER}': another Pod's output"
    ) in found["observed"]


@pytest.mark.parametrize("stack", STACKS)
def test_every_stacks_plan_lists_fault_isolation_with_its_expected_sentence(stack: str) -> None:
    plan = json.loads((ROOT / "tests" / "golden" / f"{stack}.json").read_text())
    planned = {c["id"]: c for c in plan["outputs"]["verification"]["checks"]}
    assert planned["fault-isolation"]["passed"] is None
    assert "stores to address 0 (CUDA_ERROR_ILLEGAL_ADDRESS)" in planned["fault-isolation"]["expected"]


def test_fault_isolation_is_offered_by_every_mechanism_that_shares_a_card() -> None:
    assert set(REGISTRY["fault-isolation"].rules) == {"hami-core", "mps", "time-sharing"}
    assert REGISTRY["fault-isolation"].reads == ("pods", "fault")


def test_the_record_renders_fault_isolation_in_the_repeatability_and_neighbour_tables(tmp_path: Any) -> None:
    import shutil

    from components.verify.host import record, repeatability
    from tests.helpers.neighbour_steps import FOLDER

    for i, setup in enumerate(("cluster-hami-core", "cluster-mps"), start=1):
        shutil.copytree(FOLDER / setup, tmp_path / "repeat" / f"cluster-hami-core-{i}")
    shutil.copytree(FOLDER, tmp_path / "neighbour-steps")
    assert record.rejudge(tmp_path)[:2] == ["cluster-hami-core-1", "cluster-hami-core-2"]
    table = repeatability.table(tmp_path)
    assert "| `compute-limited` | `fault-isolation` |" in table and "A's launches/s before → after B's fault" in table
    rows = [line for line in table.splitlines() if line.startswith("| [cluster-hami-core-")]
    assert rows[0].endswith(
        "| pass | pass | 518 / 438 (**80 over**) | 0.291 / 0.289 | 82,173 → 79,869 | 69.3 (11.6 + 57.7) |"
    )
    assert "| **fail** |" in rows[1] and "| 89,421 → **died** |" in rows[1]
    assert "Same `passed` and same result for every check in every run: **no**." in table
    neighbours_table = record.neighbour_table(tmp_path)
    assert "| [cluster-mps](h200/neighbour-steps/cluster-mps/verdict.json) | mps | **died** 0.15 s after" in (
        neighbours_table
    )
