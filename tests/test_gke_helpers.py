"""Pure helpers of the gke stack: kubeconfig, version choice, KAI's fraction rounding, policies, the proof."""

from __future__ import annotations

from decimal import Decimal

import pytest
import yaml

from components.gpu.gke_cdi import gpu_devices_policy, nvml_library_path_policy
from components.gpu.kai import KaiSchedulerArgs, kai_values
from components.gpu.kai_sharing import kai_proof
from components.gpu.settings import KaiConfig
from components.incluster.expectation import Monitor
from components.platform.gke import kai_node_labels, newest_version
from components.platform.kubeconfig import gke_kubeconfig
from components.sizing import kai_fraction, kai_visible_mib

MONITOR = Monitor("kai-resource-isolator", "app.kubernetes.io/component=kai-vgpu-monitor", 9394)


def test_kubeconfig_authenticates_with_gke_gcloud_auth_plugin() -> None:
    doc = yaml.safe_load(gke_kubeconfig("kai-hami-test", "203.0.113.10", "Q0E="))
    user = doc["users"][0]["user"]
    assert "token" not in user
    assert user["exec"]["command"] == "gke-gcloud-auth-plugin"
    assert user["exec"]["apiVersion"] == "client.authentication.k8s.io/v1beta1"
    assert "gcloud components install gke-gcloud-auth-plugin" in user["exec"]["installHint"]
    cluster = doc["clusters"][0]["cluster"]
    assert cluster == {"server": "https://203.0.113.10", "certificate-authority-data": "Q0E="}
    assert doc["current-context"] == "kai-hami-test"
    assert doc["contexts"][0]["context"] == {"cluster": "kai-hami-test", "user": "kai-hami-test"}


def test_kubeconfig_refuses_an_empty_endpoint() -> None:
    with pytest.raises(ValueError, match="endpoint"):
        gke_kubeconfig("c", "", "Q0E=")


def test_newest_version_compares_patches_numerically() -> None:
    offered = ["1.36.1-gke.1100000", "1.35.9-gke.1400000", "1.35.10-gke.1000000", "1.35.10-gke.900000"]
    assert newest_version(offered, "1.35.") == "1.35.10-gke.1000000"


def test_newest_version_without_an_offered_prefix_says_so() -> None:
    with pytest.raises(ValueError, match=r"no GKE version starting with '1\.35\.'"):
        newest_version(["1.34.9-gke.1400000"], "1.35.")


def test_node_labels_are_the_four_kai_reads() -> None:
    assert kai_node_labels("NVIDIA-Tesla-T4", 15360, 1) == {
        "nvidia.com/gpu.memory": "15360",
        "nvidia.com/gpu.product": "NVIDIA-Tesla-T4",
        "nvidia.com/gpu.count": "1",
        "nvidia.com/gpu.present": "true",
    }


def test_kai_fraction_rounds_to_two_decimals() -> None:
    assert kai_fraction(4096, 15360) == Decimal("0.27")
    assert kai_fraction(7680, 15360) == Decimal("0.50")
    assert kai_fraction(8000, 97887) == Decimal("0.08")


def test_kai_visible_mib_of_4096_on_a_t4_is_4147() -> None:
    assert kai_visible_mib(4096, 15360) == 4147
    assert kai_visible_mib(7680, 15360) == 7680


def test_kai_fraction_refuses_a_request_larger_than_the_card() -> None:
    with pytest.raises(ValueError, match="does not fit"):
        kai_fraction(16000, 15360)


def _kai_args(delete_kept_queues: bool) -> KaiSchedulerArgs:
    settings = KaiConfig(queue="q", parent_queue="pq", delete_kept_queues=delete_kept_queues)
    return KaiSchedulerArgs(settings, stack="test")


def test_kai_values_leave_queues_to_the_stack_when_it_deletes_them() -> None:
    assert kai_values(_kai_args(True))["defaultQueue"] == {
        "createDefaultQueue": False,
        "parentName": "pq",
        "childName": "q",
    }
    assert kai_values(_kai_args(False))["defaultQueue"]["createDefaultQueue"] is True


def test_nvml_policy_targets_kai_reservation_pods() -> None:
    rule = nvml_library_path_policy("kai-resource-reservation")["rules"][0]
    assert rule["match"]["any"][0]["resources"] == {"kinds": ["Pod"], "namespaces": ["kai-resource-reservation"]}
    container = rule["mutate"]["patchStrategicMerge"]["spec"]["containers"][0]
    assert container["(name)"] == "*"
    assert container["env"] == [{"name": "LD_LIBRARY_PATH", "value": "/usr/local/nvidia/lib64"}]


def test_gpu_devices_policy_mounts_the_one_card_the_control_devices_and_the_driver_dir() -> None:
    rule = gpu_devices_policy("/home/kubernetes/bin/nvidia")["rules"][0]
    assert rule["match"]["any"][0]["resources"]["annotations"] == {"gpu-memory": "?*"}
    spec = rule["mutate"]["patchStrategicMerge"]["spec"]
    host_paths = {v["name"]: v["hostPath"]["path"] for v in spec["volumes"]}
    mounts = {m["name"]: m["mountPath"] for m in spec["containers"][0]["volumeMounts"]}
    for dev in ("nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia0"):
        assert host_paths[f"dev-{dev}"] == mounts[f"dev-{dev}"] == f"/dev/{dev}"
    # Admission comes before KAI's binder picks a card: a second card would be mounted for every Pod alike.
    assert not [
        name
        for name in host_paths
        if name.startswith("dev-nvidia") and name[len("dev-nvidia") :].isdigit() and name != "dev-nvidia0"
    ]
    assert host_paths["gke-nvidia-install"] == "/home/kubernetes/bin/nvidia"
    assert mounts["gke-nvidia-install"] == "/usr/local/nvidia"
    assert set(host_paths) == set(mounts)


def test_kai_proof_asks_by_annotation_and_never_by_gpu_limit() -> None:
    proof = kai_proof("default-queue", 4096, 15360, MONITOR)
    assert len(proof.requests) == 2
    for request in proof.requests:
        assert request.scheduler_name == "kai-scheduler"
        assert request.labels == {"kai.scheduler/queue": "default-queue"}
        assert request.annotations == {"gpu-memory": "4096"}
        assert "nvidia.com/gpu" not in request.limits
        assert request.privileged is True
        assert request.env["LD_LIBRARY_PATH"] == "/usr/local/nvidia/lib64"
        assert request.env["PATH"].split(":")[0] == "/usr/local/nvidia/bin"


def test_kai_proof_limits_follow_the_fraction() -> None:
    proof = kai_proof("default-queue", 4096, 15360, MONITOR)
    assert proof.visible_mib == 4147
    assert proof.limit_bytes == 4348444672
    assert proof.limit_env == {"CUDA_DEVICE_MEMORY_LIMIT": "4147m"}
    assert proof.preload_library == "libvgpu.so"
    assert proof.overcommit_request is None and proof.allocation_annotation is None
    assert proof.node_registration is None
    assert proof.monitor == MONITOR
    assert set(proof.checks) == {
        "same-gpu",
        "view-isolation",
        "quota-injection",
        "memory-enforced",
        "neighbor-isolation",
        "preload-mechanism",
        "monitor-metrics",
        "fault-isolation",
    }
    assert any("multi-tenant" in note for note in proof.notes)


def test_kai_proof_without_monitor_does_not_promise_monitor_metrics() -> None:
    proof = kai_proof("default-queue", 4096, 15360, None)
    assert "monitor-metrics" not in proof.checks
    assert proof.monitor is None
