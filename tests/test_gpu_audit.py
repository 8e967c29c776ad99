"""The GPU audit: every Pod a real cluster of each stack runs lands in its class, with its reason."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from components.audit.__main__ import main as audit_cli
from components.compose.guard import system_namespaces
from components.config import parse
from components.incluster import audit
from components.incluster.verifier import collect
from components.verify.collect import CLUSTER_RULES

POD = "kubernetes:core/v1:Pod"
SYSTEM_PODS = json.loads((Path(__file__).parent / "fixtures/audit/system_pods.json").read_text())
"""Extracted by tests/fixtures/audit/extract.py from the rendered charts and the GPU Operator's v26.7.0 assets."""
STACK_NAMESPACES = {
    "k3s": ("kube-system",),
    "cluster": ("gpu-operator", "hami-system", "kube-system"),
    "gke": ("kai-resource-isolator", "kai-resource-reservation", "kai-scheduler", "kube-system", "kyverno"),
}
GPU_NODE = {"metadata": {"name": "gpu-0", "labels": {"nvidia.com/gpu.memory": "15360"}},
            "status": {"capacity": {"nvidia.com/gpu": "10"}}}  # fmt: skip
PLAIN_NODE = {"metadata": {"name": "cpu-0", "labels": {}}, "status": {"capacity": {"cpu": "4"}}}


def _pod(name: str, containers: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    annotations = spec.pop("annotations", {})
    return {"metadata": {"name": name, "namespace": "tenant", "annotations": annotations},
            "spec": {"nodeName": "gpu-0", "containers": containers, **spec}}  # fmt: skip


def _env(**values: str) -> list[dict[str, str]]:
    return [{"name": k, "value": v} for k, v in values.items()]


SLICE = {"limits": {"nvidia.com/gpu": "1", "nvidia.com/gpumem": "4000"}}
TENANT_ESCAPES = {
    "cuda-disable-control": _pod("opt-out", [{"name": "c", "resources": SLICE, "env": _env(CUDA_DISABLE_CONTROL="1")}],
                                 annotations={audit.HAMI_ALLOCATED: "GPU-0,NVIDIA,4000,0:;"}),
    "isolator-inject-false": _pod("kai-opt-out", [{"name": "c"}],
                                  annotations={"gpu-memory": "4000", audit.ISOLATOR_INJECT: "False"}),
    "visible-devices-without-request": _pod("env-escape", [{"name": "c", "env": _env(NVIDIA_VISIBLE_DEVICES="all")}]),
    "device-host-path": _pod("dev-mount", [{"name": "c"}],
                             volumes=[{"name": "d", "hostPath": {"path": "/dev/nvidia0"}}]),
    "privileged": _pod("priv", [{"name": "c", "securityContext": {"privileged": True}}]),
    "whole-gpu": _pod("whole", [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]),
    "isolator-not-injected": _pod("kai-plain", [{"name": "c"}], annotations={"gpu-memory": "4000"}),
    "time-sharing": _pod("ts", [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "1"}}}],
                         nodeSelector={audit.GKE_STRATEGY_LABEL: "time-sharing"}),
    "resource-claim": _pod("dra", [{"name": "c"}], resourceClaims=[{"name": "gpu"}]),
}  # fmt: skip


@pytest.mark.parametrize("pod", SYSTEM_PODS, ids=lambda p: f"{p['stack']}-{p['kind']}-{p['metadata']['name']}")
def test_every_system_pod_of_the_pinned_charts_is_system_or_reaches_no_gpu(pod: dict[str, Any]) -> None:
    verdict = audit.classify(pod, STACK_NAMESPACES[pod["stack"]])
    reaches = audit.gpu_access(pod)
    assert (verdict is None) == (not reaches)
    if verdict is not None:
        assert (verdict["class"], verdict["reason"]) == ("system", "system-namespace")


def test_the_device_plugins_and_monitors_reach_the_cards_through_env_or_privilege() -> None:
    reach = {(p["stack"], p["metadata"]["name"]): audit.gpu_access(p) for p in SYSTEM_PODS}
    assert "visible-devices-env" in reach[("k3s", "hami-device-plugin")]  # its vgpu-monitor: NVIDIA_VISIBLE_DEVICES
    assert "privileged" in reach[("cluster", "nvidia-dcgm-exporter")]
    assert reach[("k3s", "hami-scheduler")] == []


@pytest.mark.parametrize("reason", sorted(TENANT_ESCAPES))
def test_each_tenant_escape_is_unlimited_with_its_reason(reason: str) -> None:
    verdict = audit.classify(TENANT_ESCAPES[reason], STACK_NAMESPACES["cluster"], audit.node_facts([GPU_NODE]))
    assert verdict is not None and (verdict["class"], verdict["reason"]) == ("unlimited", reason)
    assert reason in audit.REASONS


def test_the_same_escape_in_a_system_namespace_is_system() -> None:
    pod = json.loads(json.dumps(TENANT_ESCAPES["visible-devices-without-request"]))
    pod["metadata"]["namespace"] = "kube-system"
    assert audit.classify(pod, ["kube-system"])["class"] == "system"


def test_a_kai_slice_on_a_node_without_the_memory_label_is_unlimited() -> None:
    node = {"metadata": {"name": "gpu-0", "labels": {}}, "status": {"capacity": {"nvidia.com/gpu": "1"}}}
    verdict = audit.classify(TENANT_ESCAPES["isolator-not-injected"], (), audit.node_facts([node]))
    assert verdict["reason"] == "node-without-memory-label"


def test_a_privileged_pod_on_a_node_without_gpus_reaches_none() -> None:
    pod = json.loads(json.dumps(TENANT_ESCAPES["privileged"]))
    pod["spec"]["nodeName"] = "cpu-0"
    assert audit.classify(pod, (), audit.node_facts([GPU_NODE, PLAIN_NODE])) is None


def _planned_pods(plan: Any) -> dict[str, dict[str, Any]]:
    return {r["inputs"]["metadata"]["name"]: {"metadata": r["inputs"]["metadata"], "spec": r["inputs"]["spec"]}
            for r in plan.find(POD) if r["name"].startswith("gpushare-proof-workloads")}  # fmt: skip


def test_hami_proof_pods_are_limited_once_allocated_and_its_tries_unlimited(plan_stack) -> None:
    pods = _planned_pods(plan_stack("k3s"))
    for name in ("gpushare-proof-a", "gpushare-proof-b"):
        pods[name]["metadata"]["annotations"][audit.HAMI_ALLOCATED] = "GPU-0,NVIDIA,8000,0:;"
    got = {n: audit.classify(p)["reason"] for n, p in pods.items()}
    assert got == {
        "gpushare-proof-a": "hami-allocated",
        "gpushare-proof-b": "hami-allocated",
        "gpushare-overcommit": "hami-slice-requested",  # Pending: no allocation, no card
        "gpushare-proof-try-cuda-disable-control": "cuda-disable-control",
        "gpushare-proof-try-visible-devices-all": "visible-devices-without-request",
    }


def test_kai_proof_pods_are_limited_once_the_isolator_and_the_device_policy_mutated_them(plan_stack) -> None:
    pods = _planned_pods(plan_stack("gke"))
    for pod in pods.values():  # what the device-injection policy and the isolator's webhook add at admission
        notes = pod["metadata"]["annotations"]
        if "gpu-memory" not in notes:
            continue
        pod["spec"]["volumes"] = [*pod["spec"].get("volumes", []), {"name": "d", "hostPath": {"path": "/dev/nvidia0"}}]
        if notes.get(audit.ISOLATOR_INJECT) != "false":
            pod["spec"]["containers"][0]["volumeMounts"] = [{"name": "p", "mountPath": audit.PRELOAD_PATH}]
    got = {n: audit.classify(p, STACK_NAMESPACES["gke"])["reason"] for n, p in pods.items()}
    assert got == {
        "gpushare-proof-a": "isolator-injected",
        "gpushare-proof-b": "isolator-injected",
        "gpushare-proof-try-isolator-inject-false": "isolator-inject-false",
        "gpushare-proof-try-visible-devices-all": "visible-devices-without-request",
        "gpushare-whole-gpu": "whole-gpu",  # the precondition Pod: a whole card beside the slices
    }


def test_gke_mps_proof_pods_are_limited_by_mps(plan_stack) -> None:
    pods = _planned_pods(plan_stack("gke-mps"))
    assert {n: audit.classify(p)["reason"] for n, p in pods.items() if n.endswith(("-a", "-b"))} == dict.fromkeys(
        [n for n in pods if n.endswith(("-a", "-b"))], "mps"
    )


@pytest.mark.parametrize("stack", ["k3s", "cluster", "gke"])
def test_the_stack_computes_the_system_namespaces_its_software_lives_in(plan_stack, stack: str) -> None:
    plan = plan_stack(stack)
    assert tuple(plan.outputs["gpuAudit"]["systemNamespaces"]) == STACK_NAMESPACES[stack]
    assert plan.outputs["gpuAudit"]["counts"] == {"limited": None, "unlimited": None, "system": None}
    cfg = parse({f"gpushare:{k}": v for k, v in _config(stack).items()})
    assert system_namespaces(cfg) == STACK_NAMESPACES[stack]


def _config(stack: str) -> dict[str, Any]:
    import yaml

    raw = yaml.safe_load((Path(__file__).parents[1] / f"Pulumi.{stack}.yaml").read_text())["config"]
    return {k.split(":", 1)[1]: json.dumps(v) if isinstance(v, (dict, list)) else v for k, v in raw.items()}


def test_the_verifier_may_list_pods_and_nodes_cluster_wide_and_only_read() -> None:
    verbs = {r: set(rule["verbs"]) for rule in CLUSTER_RULES for r in rule["resources"]}
    assert {"list"} <= verbs["pods"] and {"list"} <= verbs["nodes"]
    assert all(v <= {"get", "list", "watch"} for v in verbs.values())


class _Api:
    def __init__(self, objects: dict[str, Any]) -> None:
        self.objects = objects

    def json(self, path: str, query: Any = None) -> dict[str, Any]:
        if path in self.objects:
            return self.objects[path]
        from components.incluster.kube import ApiError

        raise ApiError(path, 404, "not found")


def test_the_verifier_counts_the_audit_beside_the_verdict() -> None:
    from tests.helpers.recorded import load

    expect, _ = load("k3s")
    pods = {"items": [TENANT_ESCAPES["visible-devices-without-request"]]}
    client = _Api({"/api/v1/pods": pods, "/api/v1/nodes": {"items": [GPU_NODE]}})
    found = audit.read_audit(client.json, expect.system_namespaces)
    assert found["counts"] == {"limited": 0, "unlimited": 1, "system": 0}
    summary = audit.summary(found)
    assert summary["unlimited"] == [{"pod": "tenant/env-escape", "reason": "visible-devices-without-request"}]
    assert callable(collect)


def test_the_audit_says_it_could_not_list_rather_than_counting_nothing() -> None:
    found = audit.read_audit(_Api({}).json, ["kube-system"])
    assert "could not list Pods and nodes" in found["error"]
    assert audit.summary(found)["error"] == found["error"]


def test_the_cli_exits_1_on_an_unlimited_pod_and_prints_json(capsys) -> None:
    lister = lambda: ([TENANT_ESCAPES["privileged"]], [GPU_NODE])  # noqa: E731
    assert audit_cli(["--kubeconfig", "k", "--json"], lister) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["counts"]["unlimited"] == 1 and out["pods"][0]["reason"] == "privileged"


def test_the_cli_exits_0_when_every_pod_is_limited_or_system(capsys) -> None:
    pod = json.loads(json.dumps(TENANT_ESCAPES["privileged"]))
    pod["metadata"]["namespace"] = "kube-system"
    assert audit_cli(["--kubeconfig", "k"], lambda: ([pod], [GPU_NODE])) == 0
    assert "0 limited, 0 unlimited, 1 system" in capsys.readouterr().out


def test_the_cli_exits_2_on_a_kubeconfig_it_cannot_read(tmp_path, capsys) -> None:
    assert audit_cli(["--kubeconfig", str(tmp_path / "missing")]) == 2
    assert capsys.readouterr().err.startswith("--kubeconfig ")
    assert audit_cli([]) == 2
