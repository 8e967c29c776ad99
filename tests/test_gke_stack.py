"""The whole `gke` stack as `python -m components.plan gke` plans it: components, outputs, order."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from components.plan import Plan

SHARING_READY = (
    "kai-config-ready-job",
    "kai-queue",
    "kai-parent-queue",
    "isolator-release",
    "gke-cdi-runtime-class",
    "gke-cdi-nvml-library-path",
    "gke-cdi-gpu-devices",
)


def _before(plan: Plan, name: str) -> set[str]:
    """Everything `name` waits for: its dependencies and its ancestors' dependencies, transitively."""
    by_name = {r["name"]: r for r in plan.resources}
    seen: set[str] = set()
    todo = [name]
    while todo:
        r: dict[str, Any] | None = by_name.get(todo.pop())
        if r is None:
            continue
        for dep in [*r["dependsOn"], *([r["parent"]] if r["parent"] else [])]:
            if dep not in seen:
                seen.add(dep)
                todo.append(dep)
    return seen


def test_gke_stack_plans_every_component(plan_stack: Callable[..., Plan]) -> None:
    plan = plan_stack("gke")
    for type_, name in (
        ("gpushare:platform:GkeCluster", "gke"),
        ("gpushare:gpu:KaiScheduler", "kai"),
        ("gpushare:gpu:ResourceIsolator", "isolator"),
        ("gpushare:gpu:GkeCdiWorkarounds", "gke-cdi"),
    ):
        plan.one(type_, name)
    releases = {r["inputs"]["chart"] for r in plan.find("kubernetes:helm.sh/v3:Release")}
    assert {
        "oci://ghcr.io/kai-scheduler/kai-scheduler/kai-scheduler",
        "oci://registry-1.docker.io/projecthami/kai-resource-isolator",
        "kyverno",
    } <= releases


def test_gke_stack_outputs(plan_stack: Callable[..., Plan]) -> None:
    out = plan_stack("gke").outputs
    assert out["kubeconfig"] == "[secret]"
    assert out["clusterName"] == "kai-hami-test"
    assert out["nodePoolName"] == "gpu-pool"
    assert out["gpuNodeCount"] == 3
    assert out["costNote"].startswith("no figure (3 × n1-standard-2 + 3 × nvidia-tesla-t4, on-demand)")
    assert "verification" in out


def test_gke_proof_pods_come_after_everything(plan_stack: Callable[..., Plan]) -> None:
    plan = plan_stack("gke")
    pods = [p for p in plan.find("kubernetes:core/v1:Pod") if p["parent"] != "kai-config-ready"]
    assert pods, "the gke stack plans no proof Pods"
    for pod in pods:
        missing = [name for name in SHARING_READY if name not in _before(plan, pod["name"])]
        assert missing == [], f"{pod['name']} does not wait for {missing}"


def test_cluster_is_outside_a_release_channel_so_any_valid_master_version_is_accepted(plan_stack):
    cluster = plan_stack("gke").one("gcp:container/cluster:Cluster")
    assert cluster["inputs"]["releaseChannel"] == {"channel": "UNSPECIFIED"}
    assert cluster["inputs"]["minMasterVersion"] == "1.35.6-gke.1250000"  # the newest 1.35 the mock zone offers
