"""Pod-level ways around the quota: each tried in its own short-lived Pod, reported as a finding, never counted."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from components.incluster import judge
from components.incluster.expectation import PodTry
from tests.helpers.recorded import as_another_process, load, probe_line, unlimited_view

POD = "kubernetes:core/v1:Pod"


def _try_pod(plan: Any, try_id: str) -> dict[str, Any]:
    return plan.one(POD, f"gpushare-proof-workloads-try-{try_id}")


def _expect(plan: Any) -> dict[str, Any]:
    pod = plan.one(POD, "gpushare-proof-verifier-pod")
    return json.loads(next(e["value"] for e in pod["inputs"]["spec"]["containers"][0]["env"]
                           if e["name"] == "GPUSHARE_EXPECT"))  # fmt: skip


def test_hami_tries_a_pod_whose_spec_sets_cuda_disable_control(plan_stack) -> None:
    plan = plan_stack("k3s")
    pod = _try_pod(plan, "cuda-disable-control")["inputs"]
    slice_pod = plan.one(POD, "gpushare-proof-workloads-pod-a")["inputs"]
    container = pod["spec"]["containers"][0]
    assert {"name": "CUDA_DISABLE_CONTROL", "value": "true"} in container["env"]
    assert container["resources"] == slice_pod["spec"]["containers"][0]["resources"]  # the same slice
    assert "--findings" not in container["command"] and "--keep-holding" not in container["command"]
    assert _expect(plan)["podTries"][:1] == [{"id": "cuda-disable-control", "pod": pod["metadata"]["name"],
                                          "tried": "a Pod whose own spec sets CUDA_DISABLE_CONTROL=true, asking for"
                                                   " the same slice"}]  # fmt: skip


def test_kai_tries_a_pod_the_isolator_is_told_to_skip(plan_stack) -> None:
    pod = _try_pod(plan_stack("gke"), "isolator-inject-false")["inputs"]
    assert pod["metadata"]["annotations"]["kai-resource-isolator.io/inject"] == "false"
    assert pod["metadata"]["annotations"]["gpu-memory"]  # still asks KAI for the same slice


def test_the_switch_turns_the_tries_off(plan_stack) -> None:
    plan = plan_stack("k3s", "gpushare:verify.podTries=false")
    assert not [r for r in plan.find(POD) if "-try-" in r["name"]]
    assert _expect(plan)["podTries"] == []


def _with_try(stack: str, memory: dict[str, Any] | None) -> tuple[Any, dict[str, Any]]:
    expect, evidence = load(stack)
    pod_try = PodTry("cuda-disable-control", "hami-share-try-cuda-disable-control", "a Pod setting the variable")
    expect = replace(expect, pod_tries=(pod_try,))
    if memory is not None:
        evidence["pods"][pod_try.pod] = {"phase": "Succeeded", "nodeName": "hami-lab-rtx6000",
                                         "logs": json.dumps(memory) + "\n"}  # fmt: skip
    return expect, evidence


def test_a_try_that_allocates_past_the_quota_is_a_bypass_finding_and_the_verdict_still_passes() -> None:
    _, evidence = load("k3s")
    # The recorded slice's probe line, as the try Pod would print it without the library: the whole card.
    memory = {**as_another_process(probe_line(evidence, "hami-share-a")), "preload": {"listed": [], "mapped": []}}
    unlimited_view(memory, 97871, 97000)
    expect, evidence = _with_try("k3s", memory)
    result = judge.judge(expect, evidence)
    found = next(f for f in result["findings"] if f["id"] == "cuda-disable-control")
    assert found["bypassed"] is True and found["probe"] == "pod-try"
    assert found["observed"] == (
        "largest single allocation 97000 MiB against the 8000 MiB quota; libvgpu.so not mapped into the process"
    )
    assert result["passed"] is True


def test_a_try_the_library_still_held_is_reported_as_held() -> None:
    _, evidence = load("k3s")
    expect, evidence = _with_try("k3s", as_another_process(probe_line(evidence, "hami-share-a")))
    found = next(f for f in judge.judge(expect, evidence)["findings"] if f["id"] == "cuda-disable-control")
    assert found["bypassed"] is False and "libvgpu.so mapped" in found["observed"]


def test_a_try_that_never_ran_says_why_with_bypassed_null() -> None:
    expect, evidence = _with_try("k3s", None)
    found = next(f for f in judge.judge(expect, evidence)["findings"] if f["id"] == "cuda-disable-control")
    assert found["bypassed"] is None
    assert "Pod hami-share-try-cuda-disable-control was not found" in found["why"]
