"""Every rule of the policy pack, both ways: a passing and a failing resource input, no Pulumi CLI."""

from __future__ import annotations

from typing import Any

import pytest

from policies import gpu_operator, hami, helm, isolator, kai, network, stack, workloads
from policies.model import GKE_CLUSTER, GKE_NODE_POOL, POD, RELEASE_TYPES, STACK, Res, chart_name

RELEASE = RELEASE_TYPES[0]
KAI = "oci://ghcr.io/kai-scheduler/kai-scheduler/kai-scheduler"
ISOLATOR = "oci://registry-1.docker.io/projecthami/kai-resource-isolator"


def release(
    chart: str, version: str = "1.0.0", values: dict[str, Any] | None = None, namespace: str = "default"
) -> dict[str, Any]:
    return {"chart": chart, "version": version, "namespace": namespace, "values": values or {}}


def res(type_: str, name: str, props: dict[str, Any]) -> Res:
    return Res(type_, name, props, f"urn:{name}")


def pod(
    annotations: dict[str, str] | None = None,
    limits: dict[str, Any] | None = None,
    privileged: bool = False,
    image: str = "python:3.12-slim-bookworm",
) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "app", "image": image, "resources": {"limits": limits or {}}}
    if privileged:
        container["securityContext"] = {"privileged": True}
    return {"metadata": {"name": "p", "annotations": annotations or {}}, "spec": {"containers": [container]}}


def gke_cluster() -> Res:
    return res(GKE_CLUSTER, "gke", {"minMasterVersion": "1.35.6-gke.1250000"})


def gpu_pool(labels: dict[str, str]) -> Res:
    return res(
        GKE_NODE_POOL,
        "gpu-pool",
        {"nodeConfig": {"labels": labels, "guestAccelerators": [{"type": "nvidia-tesla-t4", "count": 1}]}},
    )


def test_chart_name_reads_oci_urls_repo_names_and_files() -> None:
    assert chart_name({"chart": KAI}) == "kai-scheduler"
    assert chart_name({"chart": "hami-charts/hami"}) == "hami"
    assert chart_name({"chart": "./charts/hami-2.9.0.tgz"}) == "hami"


# --- KAI -----------------------------------------------------------------------------------------------------


def test_kai_cdi_enabled_is_a_string() -> None:
    def values(v: Any) -> dict[str, Any]:
        return {"binder": {"plugins": {"gpusharing": {"arguments": {"cdiEnabled": v}}}}}

    assert kai.check_kai_cdi_enabled_is_a_string(RELEASE, release(KAI, "v0.17.0", values("true"))) == []
    [message] = kai.check_kai_cdi_enabled_is_a_string(RELEASE, release(KAI, "v0.17.0", values(True)))
    assert "must be of type string" in message and "'true'" in message
    # another chart's boolean of the same path is none of KAI's business
    assert kai.check_kai_cdi_enabled_is_a_string(RELEASE, release("hami", "2.9.0", values(True))) == []


def test_kai_sharing_pod_requests_no_whole_gpu() -> None:
    shared = pod({"gpu-memory": "4096"})
    assert kai.check_kai_sharing_pod_requests_no_whole_gpu(POD, shared) == []
    whole = pod({"gpu-fraction": "0.5"}, {"nvidia.com/gpu": "1"})
    assert len(kai.check_kai_sharing_pod_requests_no_whole_gpu(POD, whole)) == 1
    # a plain whole-GPU Pod without KAI's annotations is fine
    assert kai.check_kai_sharing_pod_requests_no_whole_gpu(POD, pod(limits={"nvidia.com/gpu": "1"})) == []


def test_kai_sharing_pod_rule_reads_workload_pod_templates() -> None:
    template = pod({"gpu-memory": "4096"}, {"nvidia.com/gpu": 1})
    job = {"spec": {"template": template}}
    assert len(kai.check_kai_sharing_pod_requests_no_whole_gpu("kubernetes:batch/v1:Job", job)) == 1


def test_kai_node_pool_has_gpu_memory_label() -> None:
    kai_release = res(RELEASE, "kai", release(KAI, "v0.17.0"))
    good = [kai_release, gpu_pool({"nvidia.com/gpu.memory": "15360", "nvidia.com/gpu.present": "true"})]
    assert kai.check_kai_node_pool_has_gpu_memory_label(good) == []
    bad = [kai_release, gpu_pool({"nvidia.com/gpu.present": "true"})]
    [finding] = kai.check_kai_node_pool_has_gpu_memory_label(bad)
    assert finding.urn == "urn:gpu-pool" and "GPU memory" in finding.message
    # without KAI in the stack the label is not needed
    assert kai.check_kai_node_pool_has_gpu_memory_label(bad[1:]) == []


def test_isolator_monitor_node_pool_has_gpu_present_label() -> None:
    monitor = res(RELEASE, "iso", release(ISOLATOR, "1.1.0-chart", {"monitor": {"enabled": True}}))
    assert (
        kai.check_isolator_monitor_node_pool_has_gpu_present_label(
            [monitor, gpu_pool({"nvidia.com/gpu.present": "true"})]
        )
        == []
    )
    assert (
        len(
            kai.check_isolator_monitor_node_pool_has_gpu_present_label(
                [monitor, gpu_pool({"nvidia.com/gpu.memory": "15360"})]
            )
        )
        == 1
    )
    no_monitor = res(RELEASE, "iso", release(ISOLATOR, "1.1.0-chart", {"monitor": {"enabled": False}}))
    assert kai.check_isolator_monitor_node_pool_has_gpu_present_label([no_monitor, gpu_pool({})]) == []


# --- kai-resource-isolator -----------------------------------------------------------------------------------


def test_isolator_vgpu_mount_writable_on_cos() -> None:
    good = res(
        RELEASE,
        "iso",
        release(ISOLATOR, "1.1.0-chart", {"paths": {"containerVgpuMount": "/home/kubernetes/bin/nvidia/vgpu"}}),
    )
    assert isolator.check_isolator_vgpu_mount_writable_on_cos([gke_cluster(), good]) == []
    default = res(RELEASE, "iso", release(ISOLATOR, "1.1.0-chart"))
    [finding] = isolator.check_isolator_vgpu_mount_writable_on_cos([gke_cluster(), default])
    assert "/usr/local/vgpu" in finding.message and "Read-only file system" in finding.message
    # off GKE the chart's default path is writable; policy config can declare GKE without the cluster
    assert isolator.check_isolator_vgpu_mount_writable_on_cos([default]) == []
    assert len(isolator.check_isolator_vgpu_mount_writable_on_cos([default], {"platform": "gke"})) == 1


def test_isolator_host_install_base_is_ignored() -> None:
    ok = release(ISOLATOR, "1.1.0-chart", {"paths": {"containerVgpuMount": "/home/kubernetes/bin/nvidia/vgpu"}})
    assert isolator.check_isolator_host_install_base_is_ignored(RELEASE, ok) == []
    noop = release(ISOLATOR, "1.1.0-chart", {"paths": {"hostInstallBase": "/home/kubernetes/bin/nvidia"}})
    assert "never read" in isolator.check_isolator_host_install_base_is_ignored(RELEASE, noop)[0]


def test_isolator_priority_class_allowed_on_gke() -> None:
    empty = {"librarySync": {"priorityClassName": ""}, "monitor": {"enabled": True, "priorityClassName": ""}}
    good = res(RELEASE, "iso", release(ISOLATOR, "1.1.0-chart", empty, "kai-resource-isolator"))
    assert isolator.check_isolator_priority_class_allowed_on_gke([gke_cluster(), good]) == []
    monitor_default = {"librarySync": {"priorityClassName": ""}, "monitor": {"enabled": True}}
    bad = res(RELEASE, "iso", release(ISOLATOR, "1.1.0-chart", monitor_default, "kai-resource-isolator"))
    [finding] = isolator.check_isolator_priority_class_allowed_on_gke([gke_cluster(), bad])
    assert "monitor.priorityClassName is 'system-node-critical'" in finding.message
    system = res(RELEASE, "iso", release(ISOLATOR, "1.1.0-chart", {}, "kube-system"))
    assert isolator.check_isolator_priority_class_allowed_on_gke([gke_cluster(), system]) == []


# --- HAMi ----------------------------------------------------------------------------------------------------


def hami_release(version: str = "2.9.0", **values: Any) -> dict[str, Any]:
    return release("hami-charts/hami", version, values, "kube-system")


def test_hami_scheduler_tag_matches_server() -> None:
    tagged = hami_release(scheduler={"kubeScheduler": {"image": {"tag": "v1.36.2"}}})
    config = {"kubernetesVersion": "v1.36.2+k3s1"}
    assert hami.check_hami_scheduler_tag_matches_server(RELEASE, tagged, config) == []
    [message] = hami.check_hami_scheduler_tag_matches_server(RELEASE, tagged, {"kubernetesVersion": "v1.35.6"})
    assert "scheduler.kubeScheduler.image.tag" in message and "v1.35.6" in message
    suffixed = hami_release(scheduler={"kubeScheduler": {"image": {"tag": "v1.36.2+k3s1"}}})
    assert "strip it: v1.36.2" in hami.check_hami_scheduler_tag_matches_server(RELEASE, suffixed, config)[0]


def test_hami_scheduler_tag_reads_the_key_the_chart_reads() -> None:
    # imageTag is what chart 2.10.0 ignores, so a right value there does not satisfy the rule's key
    wrong_key = hami_release(
        "2.10.0", scheduler={"kubeScheduler": {"imageTag": "v1.35.6", "image": {"tag": "v1.34.0"}}}
    )
    assert hami.check_hami_scheduler_tag_matches_server(RELEASE, wrong_key, {"kubernetesVersion": "v1.35.6"})


def test_hami_scheduler_tag_matches_cluster_version() -> None:
    bootstrap = res(
        "command:remote:Command",
        "k3s-install",
        {"create": "curl -sfL https://get.k3s.io | INSTALL_K3S_VERSION=v1.36.2+k3s1 sh -"},
    )
    good = res(RELEASE, "hami", hami_release(scheduler={"kubeScheduler": {"image": {"tag": "v1.36.2"}}}))
    assert hami.check_hami_scheduler_tag_matches_cluster_version([bootstrap, good]) == []
    stale = res(RELEASE, "hami", hami_release(scheduler={"kubeScheduler": {"image": {"tag": "v1.35.6"}}}))
    [finding] = hami.check_hami_scheduler_tag_matches_cluster_version([bootstrap, stale])
    assert "the k3s release in k3s-install" in finding.message
    outputs = res(STACK, "stack", {"kubernetesVersion": "v1.35.6"})
    assert hami.check_hami_scheduler_tag_matches_cluster_version([outputs, stale]) == []


def test_hami_scheduler_imagetag_is_ignored() -> None:
    assert (
        hami.check_hami_scheduler_imagetag_is_ignored(
            RELEASE, hami_release(scheduler={"kubeScheduler": {"image": {"tag": "v1.36.2"}}})
        )
        == []
    )
    [message] = hami.check_hami_scheduler_imagetag_is_ignored(
        RELEASE, hami_release(scheduler={"kubeScheduler": {"imageTag": "v1.36.2"}})
    )
    assert "image.tag" in message


def test_hami_create_runtime_class_wrong_handler() -> None:
    assert (
        hami.check_hami_create_runtime_class_wrong_handler(
            RELEASE, hami_release(devicePlugin={"createRuntimeClass": False})
        )
        == []
    )
    assert hami.check_hami_create_runtime_class_wrong_handler(
        RELEASE, hami_release(devicePlugin={"createRuntimeClass": True})
    )


def test_hami_privileged_gpu_pod_rejected() -> None:
    privileged = res(POD, "slice", pod(limits={"nvidia.com/gpu": 1, "nvidia.com/gpumem": 4000}, privileged=True))
    new = res(RELEASE, "hami", hami_release("2.10.0"))
    [finding] = hami.check_hami_privileged_gpu_pod_rejected([new, privileged])
    assert finding.urn == "urn:slice"
    assert hami.check_hami_privileged_gpu_pod_rejected([res(RELEASE, "hami", hami_release("2.9.0")), privileged]) == []
    plain_pod = res(POD, "slice", pod(limits={"nvidia.com/gpu": 1}))
    assert hami.check_hami_privileged_gpu_pod_rejected([new, plain_pod]) == []


# --- GPU Operator --------------------------------------------------------------------------------------------


def operator_release(**values: Any) -> dict[str, Any]:
    return release("nvidia/gpu-operator", "v26.7.0", values, "gpu-operator")


def test_gpu_operator_keeps_host_driver() -> None:
    assert gpu_operator.check_gpu_operator_keeps_host_driver(RELEASE, operator_release(driver={"enabled": False})) == []
    assert gpu_operator.check_gpu_operator_keeps_host_driver(RELEASE, operator_release())  # the chart's default is on
    assert gpu_operator.check_gpu_operator_keeps_host_driver(RELEASE, operator_release(), {"hostDriver": False}) == []


def test_gpu_operator_not_on_gke_managed_drivers() -> None:
    op = res(RELEASE, "op", operator_release(driver={"enabled": False}))
    assert gpu_operator.check_gpu_operator_not_on_gke_managed_drivers([op]) == []
    [finding] = gpu_operator.check_gpu_operator_not_on_gke_managed_drivers([gke_cluster(), op])
    assert finding.urn == "urn:op"


def test_hami_device_plugin_beside_gpu_operator() -> None:
    h = res(RELEASE, "hami", hami_release("2.10.0"))
    off = res(RELEASE, "op", operator_release(devicePlugin={"enabled": False}))
    assert gpu_operator.check_hami_device_plugin_beside_gpu_operator([h, off]) == []
    on = res(RELEASE, "op", operator_release())
    assert len(gpu_operator.check_hami_device_plugin_beside_gpu_operator([h, on])) == 1
    assert gpu_operator.check_hami_device_plugin_beside_gpu_operator([on]) == []


@pytest.mark.parametrize(
    ("runtime_class", "symptom"), [("nvidia", "unresolvable CDI devices"), ("", "Incompatible strategy detected auto")]
)
def test_hami_runtime_class_under_cdi(runtime_class: str, symptom: str) -> None:
    op = res(RELEASE, "op", operator_release(cdi={"enabled": True}))
    good = res(RELEASE, "hami", hami_release("2.10.0", devicePlugin={"runtimeClassName": "nvidia-legacy"}))
    assert gpu_operator.check_hami_runtime_class_under_cdi([op, good]) == []
    bad = res(RELEASE, "hami", hami_release("2.10.0", devicePlugin={"runtimeClassName": runtime_class}))
    [finding] = gpu_operator.check_hami_runtime_class_under_cdi([op, bad])
    assert symptom in finding.message
    no_cdi = res(RELEASE, "op", operator_release(cdi={"enabled": False}))
    assert gpu_operator.check_hami_runtime_class_under_cdi([no_cdi, bad]) == []


# --- Helm, network, workloads, stack -------------------------------------------------------------------------


@pytest.mark.parametrize("version", ["", "latest", "^2.9.0", "2.x", ">=1.0.0"])
def test_helm_chart_version_pinned_refuses(version: str) -> None:
    assert helm.check_helm_chart_version_pinned(RELEASE, release("hami", version))


@pytest.mark.parametrize("version", ["2.9.0", "v0.17.0", "1.1.0-chart", "v26.7.0"])
def test_helm_chart_version_pinned_accepts(version: str) -> None:
    assert helm.check_helm_chart_version_pinned(RELEASE, release("hami", version)) == []


def firewall(ranges: list[str], ports: list[str]) -> dict[str, Any]:
    return {"sourceRanges": ranges, "allows": [{"protocol": "tcp", "ports": ports}]}


def test_firewall_ssh_api_not_world_open() -> None:
    fw = network.FIREWALL
    assert network.check_firewall_ssh_api_not_world_open(fw, firewall(["198.51.100.7/32"], ["22", "6443"])) == []
    assert len(network.check_firewall_ssh_api_not_world_open(fw, firewall(["0.0.0.0/0"], ["22", "6443"]))) == 2
    assert len(network.check_firewall_ssh_api_not_world_open(fw, firewall(["0.0.0.0/0"], ["6000-7000"]))) == 1
    assert network.check_firewall_ssh_api_not_world_open(fw, firewall(["0.0.0.0/0"], ["443"])) == []
    world_all_ports = {"sourceRanges": ["0.0.0.0/0"], "allows": [{"protocol": "tcp"}]}
    assert len(network.check_firewall_ssh_api_not_world_open(fw, world_all_ports)) == 2


def test_privileged_gpu_container_not_a_tenant_boundary() -> None:
    check = workloads.check_privileged_gpu_container_not_a_tenant_boundary
    assert check(POD, pod({"gpu-memory": "4096"})) == []
    assert "not a multi-tenant boundary" in check(POD, pod({"gpu-memory": "4096"}, privileged=True))[0]
    assert check(POD, pod(privileged=True)) == []  # privileged but no GPU: not this rule's concern


def test_cuda_image_within_driver() -> None:
    check = workloads.check_cuda_image_within_driver
    cuda124 = pod(limits={"nvidia.com/gpu": 1}, image="nvidia/cuda:12.4.1-base-ubuntu22.04")
    cuda128 = pod(limits={"nvidia.com/gpu": 1}, image="nvidia/cuda:12.8.0-base-ubuntu22.04")
    assert check(POD, cuda124, {"driverVersion": "550.54.15"}) == []
    [message] = check(POD, cuda128, {"driverVersion": "550.54.15"})
    assert "CUDA driver version is insufficient" in message and "12.4" in message
    assert check(POD, cuda128, {}) == []  # no driver known, nothing to judge
    assert check(POD, cuda128, {"driverVersion": "610.43.02"}) == []  # beyond the table: cannot say


def test_kubeconfig_output_is_secret() -> None:
    kubeconfig = "apiVersion: v1\nclusters:\n- cluster: {server: https://203.0.113.20:6443}\nusers: []\n"
    assert stack.check_kubeconfig_output_is_secret([res(STACK, "s", {"kubeconfig": "[secret]"})]) == []
    assert len(stack.check_kubeconfig_output_is_secret([res(STACK, "s", {"kubeconfig": kubeconfig})])) == 1
    assert len(stack.check_kubeconfig_output_is_secret([res(STACK, "s", {"access": kubeconfig})])) == 1
    assert stack.check_kubeconfig_output_is_secret([res(STACK, "s", {"verification": {"passed": None}})]) == []
