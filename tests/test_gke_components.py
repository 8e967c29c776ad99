"""The gke stack's own components under Pulumi mocks: GKE, KAI, the isolator and the GKE/CDI workarounds.

They are planned through a program that stops before the proof (it exports what the proof would receive), so
these tests judge the platform and sharing side alone; tests/test_gke_stack.py plans the whole stack.
"""

from __future__ import annotations

import atexit
import json
import shutil
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Any

import pytest

from components.plan import Plan, run
from tests.helpers.helm_values import load_reference, missing_paths
from tests.helpers.k8s_schema import is_custom_kind, objects_in, validate

ROOT = Path(__file__).resolve().parent.parent
RELEASE = "kubernetes:helm.sh/v3:Release"
POLICY = "kubernetes:kyverno.io/v1:ClusterPolicy"
QUEUE = "kubernetes:scheduling.run.ai/v2:Queue"

PARTS_PROGRAM = """
import dataclasses
import pulumi
from components import compose, config

cfg = config.load()
cluster = compose.platform(cfg)
toolkit = compose.toolkit(cfg, cluster)
sharing = compose.sharing(cfg, cluster, toolkit)
for name, value in {**cluster.outputs, **sharing.outputs}.items():
    pulumi.export(name, value)
pulumi.export("readyUrns", [r.urn for r in sharing.ready])
pulumi.export("proof", dataclasses.asdict(sharing.proof))
"""


@lru_cache(maxsize=32)
def parts(*overrides: str) -> Plan:
    """The gke stack's platform and sharing components, planned under mocks (cached per overrides)."""
    return run("gke", list(overrides), root=_parts_root())


@lru_cache(maxsize=1)
def _parts_root() -> Path:
    root = Path(tempfile.mkdtemp(prefix="gpushare-gke-"))
    atexit.register(shutil.rmtree, root, True)
    (root / "Pulumi.gke.yaml").write_text((ROOT / "Pulumi.gke.yaml").read_text())
    (root / "__main__.py").write_text(PARTS_PROGRAM)
    return root


def inputs(plan: Plan, type_: str, name: str) -> dict[str, Any]:
    return plan.one(type_, name)["inputs"]


def release(plan: Plan, name: str) -> dict[str, Any]:
    return inputs(plan, RELEASE, name)


# --- GKE --------------------------------------------------------------------------------------------------


def test_gke_cluster_is_zonal_cos_and_destroyable() -> None:
    cluster = inputs(parts(), "gcp:container/cluster:Cluster", "gke-cluster")
    assert cluster["location"] == "asia-northeast1-a"
    assert cluster["name"] == "kai-hami-test"
    assert cluster["deletionProtection"] is False
    assert cluster["removeDefaultNodePool"] is True
    assert cluster["initialNodeCount"] == 1
    # node_config shapes only the removed default pool and is ForceNew (terraform-provider-google
    # google/services/container/node_config.go, schemaNodeConfig): left out, it can never diff. COS is the pool's.
    assert "nodeConfig" not in cluster
    assert (
        inputs(parts(), "gcp:container/nodePool:NodePool", "gke-gpu-pool")["nodeConfig"]["imageType"]
        == "COS_CONTAINERD"
    )


def test_gke_version_is_the_newest_offered_1_35() -> None:
    cluster = inputs(parts(), "gcp:container/cluster:Cluster", "gke-cluster")
    # The mock zone offers 1.36.1, 1.35.6 and 1.35.5: the prefix must exclude 1.36 and pick 1.35.6.
    assert cluster["minMasterVersion"] == "1.35.6-gke.1250000"
    pool = inputs(parts(), "gcp:container/nodePool:NodePool", "gke-gpu-pool")
    # The pool starts at the master's version and follows GKE's upgrades: no version of its own to fight them.
    assert "version" not in pool


def test_gke_full_version_pins_it() -> None:
    plan = parts("gpushare:gke.kubernetesVersion=1.35.5-gke.1080000")
    assert inputs(plan, "gcp:container/cluster:Cluster", "gke-cluster")["minMasterVersion"] == "1.35.5-gke.1080000"


def test_gpu_pool_is_three_n1_standard_2_with_one_t4_and_gke_driver() -> None:
    pool = inputs(parts(), "gcp:container/nodePool:NodePool", "gke-gpu-pool")
    assert pool["nodeCount"] == 3
    assert pool["cluster"] == "kai-hami-test"
    node = pool["nodeConfig"]
    assert node["machineType"] == "n1-standard-2"
    assert node["imageType"] == "COS_CONTAINERD"
    assert node["guestAccelerators"] == [
        {"type": "nvidia-tesla-t4", "count": 1, "gpuDriverInstallationConfig": {"gpuDriverVersion": "DEFAULT"}}
    ]


def test_gpu_pool_labels_carry_what_kai_reads() -> None:
    labels = inputs(parts(), "gcp:container/nodePool:NodePool", "gke-gpu-pool")["nodeConfig"]["labels"]
    assert labels == {
        "nvidia.com/gpu.memory": "15360",
        "nvidia.com/gpu.product": "NVIDIA-Tesla-T4",
        "nvidia.com/gpu.count": "1",
        "nvidia.com/gpu.present": "true",
    }


def test_gpu_memory_label_follows_the_override() -> None:
    plan = parts("gpushare:gpu.memoryMiB=15000")
    labels = inputs(plan, "gcp:container/nodePool:NodePool", "gke-gpu-pool")["nodeConfig"]["labels"]
    assert labels["nvidia.com/gpu.memory"] == "15000"


def test_gpu_pool_never_disables_gke_device_plugin() -> None:
    pool = parts().one("gcp:container/nodePool:NodePool", "gke-gpu-pool")
    assert "gke-no-default-nvidia-gpu-device-plugin" not in json.dumps(pool)


def test_kubeconfig_is_secret_and_feeds_the_provider() -> None:
    plan = parts()
    assert plan.outputs["kubeconfig"] == "[secret]"
    provider = inputs(plan, "pulumi:providers:kubernetes", "gke-k8s")
    assert provider["kubeconfig"] == "[secret]"
    assert "gke-cluster" in plan.one("pulumi:providers:kubernetes", "gke-k8s")["dependsOn"]


def test_gke_outputs_name_cluster_pool_nodes_and_cost() -> None:
    out = parts().outputs
    assert out["clusterName"] == "kai-hami-test"
    assert out["nodePoolName"] == "gpu-pool"
    assert out["gpuNodeCount"] == 3
    assert "3 × n1-standard-2 + 3 × nvidia-tesla-t4, on-demand" in out["costNote"]


# --- KAI --------------------------------------------------------------------------------------------------


def test_kai_cdi_enabled_is_a_string() -> None:
    value = release(parts(), "kai-release")["values"]["binder"]["plugins"]["gpusharing"]["arguments"]["cdiEnabled"]
    assert isinstance(value, str)
    assert value == "true"


def test_kai_release_is_v0_17_0_with_sharing_and_hamicore() -> None:
    kai = release(parts(), "kai-release")
    assert kai["chart"] == "oci://ghcr.io/kai-scheduler/kai-scheduler/kai-scheduler"
    assert kai["version"] == "v0.17.0"
    assert kai["namespace"] == "kai-scheduler"
    assert kai["values"]["global"]["gpuSharing"] is True
    assert kai["values"]["binder"]["plugins"]["hamicore"]["enabled"] is True
    assert kai["skipAwait"] is False


def test_kai_release_after_node_pool() -> None:
    assert "gke-gpu-pool" in parts().one(RELEASE, "kai-release")["dependsOn"]


def test_kai_waits_for_kai_config_ready() -> None:
    plan = parts()
    gate = plan.one("kubernetes:batch/v1:Job", "kai-config-ready-job")
    env = {e["name"]: e["value"] for e in gate["inputs"]["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["GATE_PATH"] == "/apis/kai.scheduler/v1/configs/kai-config"
    assert env["GATE_READY"] == "condition:Ready"
    # The provider's Job await: done when Complete, failed at once when the Job fails.
    assert "pulumi.com/waitFor" not in gate["inputs"]["metadata"]["annotations"]
    assert "kai-release" in gate["dependsOn"]
    role = plan.one("kubernetes:rbac.authorization.k8s.io/v1:ClusterRole", "kai-config-ready-reader")
    assert role["inputs"]["rules"] == [
        {"apiGroups": ["kai.scheduler"], "resources": ["configs"], "resourceNames": ["kai-config"], "verbs": ["get"]}
    ]


def test_kai_kept_queues_are_stack_owned_and_go_before_the_release() -> None:
    plan = parts()
    assert release(plan, "kai-release")["values"]["defaultQueue"]["createDefaultQueue"] is False
    parent = plan.one(QUEUE, "kai-parent-queue")
    child = plan.one(QUEUE, "kai-queue")
    assert parent["inputs"]["metadata"]["name"] == "default-parent-queue"
    assert child["inputs"]["metadata"]["name"] == "default-queue"
    assert child["inputs"]["spec"]["parentQueue"] == "default-parent-queue"
    # Destroy runs dependents first: child queue, parent queue, the kai-config gate, then the release.
    assert child["dependsOn"] == ["kai-parent-queue"]
    assert parent["dependsOn"] == ["kai-config-ready-job"]
    assert "retainOnDelete" not in json.dumps([parent, child])


def test_kai_delete_kept_queues_off_leaves_them_to_the_chart() -> None:
    plan = parts("gpushare:kai.deleteKeptQueues=false")
    assert plan.find(QUEUE) == []
    assert release(plan, "kai-release")["values"]["defaultQueue"]["createDefaultQueue"] is True


def test_kai_queue_is_named_from_config() -> None:
    plan = parts("gpushare:kai.queue=team-a")
    assert plan.one(QUEUE, "kai-queue")["inputs"]["metadata"]["name"] == "team-a"
    assert release(plan, "kai-release")["values"]["defaultQueue"]["childName"] == "team-a"
    assert plan.outputs["proof"]["requests"][0]["labels"] == {"kai.scheduler/queue": "team-a"}


# --- kai-resource-isolator --------------------------------------------------------------------------------


def test_isolator_mount_is_under_writable_home() -> None:
    iso = release(parts(), "isolator-release")
    assert iso["values"]["paths"]["containerVgpuMount"] == "/home/kubernetes/bin/nvidia/vgpu"


def test_isolator_never_sets_host_install_base() -> None:
    assert "hostInstallBase" not in release(parts(), "isolator-release")["values"]["paths"]


def test_isolator_priority_classes_are_empty_and_monitor_on() -> None:
    iso = release(parts(), "isolator-release")
    assert iso["chart"] == "oci://registry-1.docker.io/projecthami/kai-resource-isolator"
    assert iso["version"] == "1.1.0-chart"
    assert iso["namespace"] == "kai-resource-isolator"
    assert iso["values"]["librarySync"]["priorityClassName"] == ""
    assert iso["values"]["monitor"] == {"enabled": True, "priorityClassName": ""}
    assert iso["skipAwait"] is False


def test_isolator_monitor_target_reaches_the_proof() -> None:
    assert parts().outputs["proof"]["monitor"] == {
        "namespace": "kai-resource-isolator",
        "label_selector": "app.kubernetes.io/component=kai-vgpu-monitor",
        "port": 9394,
        "path": "/metrics",
    }


# --- GKE/CDI workarounds ----------------------------------------------------------------------------------


def test_runtime_class_nvidia_uses_runc() -> None:
    rc = inputs(parts(), "kubernetes:node.k8s.io/v1:RuntimeClass", "gke-cdi-runtime-class")
    assert rc["metadata"]["name"] == "nvidia"
    assert rc["handler"] == "runc"


def test_kyverno_is_3_8_2_from_its_repo() -> None:
    kyverno = release(parts(), "gke-cdi-kyverno-release")
    assert kyverno["chart"] == "kyverno"
    assert kyverno["version"] == "3.8.2"
    assert kyverno["repositoryOpts"]["repo"] == "https://kyverno.github.io/kyverno/"
    assert kyverno["namespace"] == "kyverno"


def test_policies_after_kyverno_and_wait_for_ready() -> None:
    plan = parts()
    names = {p["inputs"]["metadata"]["name"]: p for p in plan.find(POLICY)}
    assert set(names) == {"inject-nvidia-library-path", "inject-gpu-devices"}
    for policy in names.values():
        assert policy["dependsOn"] == ["gke-cdi-kyverno-release"]
        assert policy["inputs"]["metadata"]["annotations"]["pulumi.com/waitFor"] == "condition=Ready"


@pytest.mark.parametrize(
    ("switch", "gone"),
    [
        ("nvidiaRuntimeClass", ("kubernetes:node.k8s.io/v1:RuntimeClass", "gke-cdi-runtime-class")),
        ("kyverno", (RELEASE, "gke-cdi-kyverno-release")),
        ("injectNvmlLibraryPath", (POLICY, "gke-cdi-nvml-library-path")),
        ("injectGpuDevices", (POLICY, "gke-cdi-gpu-devices")),
    ],
)
def test_each_workaround_is_a_switch(switch: str, gone: tuple[str, str]) -> None:
    assert parts().find(*gone), f"{gone[1]} is missing with every switch on"
    assert parts(f"gpushare:gkeCdi.{switch}=false").find(*gone) == []


def test_policies_without_kyverno_release_follow_the_node_pool() -> None:
    plan = parts("gpushare:gkeCdi.kyverno=false")
    for policy in plan.find(POLICY):
        assert policy["dependsOn"] == ["gke-gpu-pool"]


# --- the graph as a whole ---------------------------------------------------------------------------------


def test_sharing_ready_holds_what_the_proof_must_wait_for() -> None:
    ready = {urn.rsplit("::", 1)[-1] for urn in parts().outputs["readyUrns"]}
    assert ready == {
        "kai-config-ready-job",
        "kai-parent-queue",
        "kai-queue",
        "isolator-release",
        "gke-cdi-runtime-class",
        "gke-cdi-nvml-library-path",
        "gke-cdi-gpu-devices",
    }


def test_proof_contract_is_computed_from_the_card() -> None:
    proof = parts().outputs["proof"]
    assert proof["system"] == "kai"
    assert proof["visible_mib"] == 4147
    assert proof["limit_bytes"] == 4147 * 2**20
    assert proof["limit_env"] == {"CUDA_DEVICE_MEMORY_LIMIT": "4147m"}
    assert [r["annotations"] for r in proof["requests"]] == [{"gpu-memory": "4096"}] * 2
    # A 4000 MiB slice is 0.26 of the card: the figure moves with the config, not a typed-in 4147.
    assert parts("gpushare:verify.sliceMiB=4000").outputs["proof"]["visible_mib"] == 3993


def test_every_kubernetes_resource_uses_the_cluster_provider() -> None:
    for r in parts().resources:
        if r["type"].startswith("kubernetes:"):
            assert r.get("options", {}).get("provider") == "gke-k8s", r["name"]


def test_every_helm_value_path_exists_in_reference_charts() -> None:
    plan = parts()
    for name, chart in (
        ("kai-release", "kai-scheduler-v0.17.0"),
        ("isolator-release", "kai-resource-isolator-1.1.0-chart"),
        ("gke-cdi-kyverno-release", "kyverno-3.8.2"),
    ):
        values = release(plan, name)["values"]
        assert missing_paths(values, load_reference(chart)) == [], name


def test_every_kubernetes_object_validates() -> None:
    objects = [o for o in objects_in(parts()) if not is_custom_kind(o)]
    assert {o["kind"] for o in objects} == {
        "Namespace",
        "RuntimeClass",
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "ConfigMap",
        "Job",
    }  # the last five: the gate
    assert [c for c in map(validate, objects) if c] == []


def test_component_outputs_registered() -> None:
    out = parts().component_outputs
    assert out["gke"]["clusterName"] == "kai-hami-test"
    assert out["gke"]["kubeconfig"] == "[secret]"
    assert out["kai"]["queue"] == "default-queue" and out["kai"]["releaseStatus"] == "deployed"
    assert out["isolator"]["preload"] == "/home/kubernetes/bin/nvidia/vgpu/libvgpu.so"
    assert out["gke-cdi"]["policies"] == ["inject-nvidia-library-path", "inject-gpu-devices"]
    assert out["gke-cdi"]["runtimeClass"] == "nvidia"
