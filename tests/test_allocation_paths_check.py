"""allocation-paths judged on a recorded run (tests/fixtures, tied as a run since provenance) whose proof Pods carry
the allocation step's line as the probe prints it (run against the ctypes-level fake libcuda): every door held,
one door escaped, the check advisory, and the record's refusals of lines no probe prints."""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from typing import Any

import pytest

from components.incluster.checks.allocation_paths import CHECK_ID
from components.incluster.expectation import Expectation
from components.incluster.judge import judge
from components.incluster.probes import allocation_child, allocation_paths
from components.verify.report import render
from tests.helpers.fake_libcuda import FakeLibcuda
from tests.helpers.recorded import edit_probe, probe_line
from tests.helpers.tied import tie_probe, tied
from tests.test_probe_allocation_paths import MOST, FakeNvml, _cuda

EVERY_DOOR = MOST | {"cuMemCreate", "cuMemAllocFromPoolAsync:own"}


def allocation_line(quota: int, hooked: set[str], fresh_second: bool = False) -> dict[str, Any]:
    """What the probe prints on a card whose quota counts only the `hooked` entry points."""
    lib = FakeLibcuda(card_mib=80_000, quota_mib=quota, hooked=hooked)

    def runner(path: str, ask: int, step: int) -> dict[str, Any]:
        # A fresh quota for a later process: as if the first one held nothing.
        child = FakeLibcuda(80_000, quota, hooked) if fresh_second and path == "cuMemAlloc" and lib.live else lib
        return allocation_child.try_path(_cuda(child), FakeNvml(child), path, ask, step)

    args = argparse.Namespace(expect_limit_mib=quota, paths=list(allocation_child.PATHS), second_process=True,
                              mechanism="hami-core")  # fmt: skip
    result = allocation_paths.new_result(quota)
    allocation_paths.measure(_cuda(lib), FakeNvml(lib), args, result, lambda _l: None, runner)
    return result


def with_allocation(hooked: set[str], *, advisory: bool = False, **line: Any) -> tuple[Expectation, dict[str, Any]]:
    expect, evidence = tied("cluster")
    expect = replace(expect, checks=(*expect.checks, CHECK_ID), allocation_paths=True,
                     advisory=(CHECK_ID,) if advisory else ())  # fmt: skip
    quota = int(expect.limit_mib)
    for n, name in enumerate(expect.pods):
        pod = evidence["pods"][name]
        memory = probe_line(evidence, name)
        result = allocation_line(quota, hooked, **line)
        result["started_at"] = result["ended_at"] = memory["started_at"]  # the step ends as memory starts
        tie_probe(result, name, pod["uid"], expect.namespace, pod.get("nodeName"), 200 + n)
        pod["logs"] += json.dumps(result) + "\n"
    return expect, evidence


def check(verdict: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in verdict["checks"] if c["id"] == CHECK_ID)


def result_line(verdict: dict[str, Any], expect: Expectation) -> str:
    return next(x for x in render(verdict, expect).splitlines() if x.startswith("**Result"))


def test_every_door_held_passes_and_the_result_line_names_no_escape() -> None:
    expect, evidence = with_allocation(EVERY_DOOR)
    verdict = judge(expect, evidence)
    assert check(verdict)["passed"] is True, check(verdict)["observed"]
    assert verdict["passed"] is True
    assert not [f for f in verdict["findings"] if str(f["id"]).startswith("escaped-via:")]
    assert "does not hold" not in result_line(verdict, expect)


def test_a_door_the_quota_does_not_count_fails_the_check_with_its_figures() -> None:
    expect, evidence = with_allocation(MOST)  # neither cuMemCreate nor an own pool counted
    verdict = judge(expect, evidence)
    quota = f"{expect.limit_mib:.0f}"
    assert check(verdict)["passed"] is False and verdict["passed"] is False
    ask = allocation_paths.ask_for(int(expect.limit_mib))
    assert f"escaped-via: cuMemCreate, took {ask} MiB of a {quota} MiB quota" in check(verdict)["observed"]
    assert f"escaped-via: cuMemAllocFromPoolAsync (own pool), took {ask} MiB" in check(verdict)["observed"]
    escaped = {(f["pod"], f["id"]) for f in verdict["findings"] if f["bypassed"] and "escaped-via" in f["id"]}
    assert escaped == {(p, f"escaped-via:{d}") for p in expect.pods
                       for d in ("cuMemCreate", "cuMemAllocFromPoolAsync (own pool)")}  # fmt: skip
    assert "cuMemCreate" in result_line(verdict, expect)


def test_an_advisory_check_leaves_passed_alone_yet_no_result_line_reads_as_the_quota_holding() -> None:
    expect, evidence = with_allocation(MOST, advisory=True)
    verdict = judge(expect, evidence)
    assert check(verdict)["passed"] is False
    assert verdict["passed"] is True  # every other check of the recorded run passes
    line = result_line(verdict, expect)
    assert line.startswith("**Result: PASSED**")
    assert "The memory quota does not hold at every door" in line and "escaped-via: cuMemCreate" in line
    assert "does not count toward the result" in line


def test_a_later_process_given_a_fresh_quota_is_a_finding() -> None:
    expect, evidence = with_allocation(EVERY_DOOR, fresh_second=True)
    found = [f for f in judge(expect, evidence)["findings"] if f["id"] == "second-process"]
    assert [f["bypassed"] for f in found] == [True, True]
    expect, evidence = with_allocation(EVERY_DOOR)
    found = [f for f in judge(expect, evidence)["findings"] if f["id"] == "second-process"]
    assert [f["bypassed"] for f in found] == [False, False]


def test_a_device_node_of_another_card_opened_is_a_finding() -> None:
    expect, evidence = with_allocation(EVERY_DOOR)
    name = expect.pods[0]

    def opened(r: dict[str, Any]) -> None:
        r["device_nodes"] = [{"path": "/dev/nvidia1", "kind": "card", "opened": True, "error": None},
                             {"path": "/dev/nvidiactl", "kind": "control", "opened": True, "error": None}]  # fmt: skip

    edit_probe(evidence, name, opened, probe="allocation")
    found = {f["pod"]: f for f in judge(expect, evidence)["findings"] if f["id"] == "device-nodes"}
    assert found[name]["bypassed"] is True and "/dev/nvidia1" in found[name]["observed"]
    assert found[expect.pods[1]]["bypassed"] is False


@pytest.mark.parametrize(
    ("change", "why"),
    [
        (lambda r: r["paths"][0].update(got_mib=r["paths"][0]["asked_mib"] + 512), "more than the"),
        (lambda r: r["paths"][0].update(path="cudaMallocHost"), "cudaMallocHost"),
        (lambda r: r["paths"][1].update(got_mib=-1), "-1"),
        (lambda r: r["paths"].pop(), "without cuGraphAddMemAllocNode"),
        (lambda r: r["paths"].append(dict(r["paths"][0])), "reported twice"),
        (lambda r: r.update(asked_mib=1024), "not the probe's"),
        (lambda r: r.update(expected_limit_mib=7000), "not past the 7000 MiB quota"),
    ],
)
def test_a_line_no_probe_prints_is_refused_and_fails_the_check(change: Any, why: str) -> None:
    expect, evidence = with_allocation(EVERY_DOOR)
    edit_probe(evidence, expect.pods[0], change, probe="allocation")
    verdict = judge(expect, evidence)
    assert check(verdict)["passed"] is False
    assert why in check(verdict)["observed"]


def test_a_path_whose_first_step_failed_for_another_reason_than_memory_shows_nothing() -> None:
    expect, evidence = with_allocation(EVERY_DOOR)

    def unsupported(r: dict[str, Any]) -> None:
        r["paths"][2].update(got_mib=0, steps=1, refused_with="CUDA_ERROR_NOT_SUPPORTED")

    edit_probe(evidence, expect.pods[0], unsupported, probe="allocation")
    observed = check(judge(expect, evidence))["observed"]
    assert "cuMemCreate failed at its first step with CUDA_ERROR_NOT_SUPPORTED" in observed


def test_a_pod_without_the_step_s_line_fails_the_check() -> None:
    expect, evidence = tied("cluster")
    expect = replace(expect, checks=(*expect.checks, CHECK_ID), allocation_paths=True)
    verdict = judge(expect, evidence)
    assert check(verdict)["passed"] is False and "no allocation probe result" in check(verdict)["observed"]


def test_a_line_of_another_pod_is_not_this_pod_s() -> None:
    expect, evidence = with_allocation(EVERY_DOOR)
    edit_probe(evidence, expect.pods[0], lambda r: r["pod"].update(uid="uid-someone-else"), probe="allocation")
    assert check(judge(expect, evidence))["passed"] is False
