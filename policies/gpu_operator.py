"""NVIDIA GPU Operator beside HAMi (the T4 write-up) and beside GKE (lab 12): never two drivers, never two plugins."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from policies.model import GKE_CLUSTER, Finding, Res, dig, release_of, releases, values_of
from policies.rule import Rule

OPERATOR_CHART = "gpu-operator"
HAMI_CHART = "hami"
CDI_RUNTIME_CLASS = "nvidia-legacy"
HOST_DRIVER_CONFIG = {
    "hostDriver": {
        "type": "boolean",
        "default": True,
        "description": "false when the operator is meant to install the driver",
    }
}


def _enabled(values: Mapping[str, Any], section: str, chart_default: bool = True) -> bool:
    value = dig(values, section, "enabled", default=chart_default)
    return value is True or str(value).lower() == "true"


def check_gpu_operator_keeps_host_driver(
    resource_type: str, props: Mapping[str, Any], config: Mapping[str, Any] | None = None
) -> list[str]:
    """On hosts that have a driver, the operator's driver DaemonSet must stay off (the chart's default is on)."""
    release = release_of(resource_type, props, OPERATOR_CHART)
    if release is None or (config or {}).get("hostDriver", True) is False:
        return []
    if not _enabled(values_of(release), "driver"):
        return []
    return [
        "driver.enabled is not false: the operator's driver container would fight the host's driver "
        "(580.126.20 in the T4 setup); set driver.enabled=false, or policy config hostDriver=false if the "
        "hosts have none"
    ]


def check_gpu_operator_not_on_gke_managed_drivers(
    resources: Sequence[Res], config: Mapping[str, Any] | None = None
) -> list[Finding]:
    """GKE installs and manages the driver, device plugin and toolkit itself."""
    if not any(r.type == GKE_CLUSTER for r in resources):
        return []
    return [
        Finding(
            "a gpu-operator release in a stack with a GKE cluster: GKE manages the NVIDIA driver, device "
            "plugin and toolkit, and an operator over them breaks both; remove the release and use GKE's "
            "(gpuDriverVersion on the node pool)",
            r.urn,
        )
        for r in releases(resources, OPERATOR_CHART)
    ]


def check_hami_device_plugin_beside_gpu_operator(
    resources: Sequence[Res], config: Mapping[str, Any] | None = None
) -> list[Finding]:
    """HAMi brings its own device plugin; the operator's must be off, or both advertise nvidia.com/gpu."""
    if not releases(resources, HAMI_CHART):
        return []
    return [
        Finding(
            "devicePlugin.enabled is not false on the gpu-operator release while HAMi is in the stack: two "
            "device plugins both advertise nvidia.com/gpu and allocatable stays 1 instead of "
            "cards × deviceSplitCount; set devicePlugin.enabled=false",
            r.urn,
        )
        for r in releases(resources, OPERATOR_CHART)
        if _enabled(values_of(r.props), "devicePlugin")
    ]


def check_hami_runtime_class_under_cdi(
    resources: Sequence[Res], config: Mapping[str, Any] | None = None
) -> list[Finding]:
    """Under an operator with CDI on (the default since 25.10), HAMi's class must be `nvidia-legacy`."""
    cdi_operators = [r for r in releases(resources, OPERATOR_CHART) if _enabled(values_of(r.props), "cdi")]
    if not cdi_operators:
        return []
    findings = []
    for r in releases(resources, HAMI_CHART):
        name = str(dig(values_of(r.props), "devicePlugin", "runtimeClassName") or "")
        if name == CDI_RUNTIME_CLASS:
            continue
        symptom = (
            "workload Pods fail with `unresolvable CDI devices` (the nvidia class injects through CDI and "
            "no spec exists)"
            if name == "nvidia"
            else "the device plugin fails with `Incompatible strategy detected auto` (runc stays the default)"
        )
        findings.append(
            Finding(
                f"devicePlugin.runtimeClassName is {name!r} under a GPU Operator with CDI on: "
                f"{symptom}; set it to {CDI_RUNTIME_CLASS}",
                r.urn,
            )
        )
    return findings


RULES = [
    Rule(
        "gpu-operator-keeps-host-driver",
        "A GPU Operator on hosts with a driver must set driver.enabled=false.",
        "mandatory",
        "operator",
        "the operator's driver DaemonSet fights the host driver",
        resource_check=check_gpu_operator_keeps_host_driver,
        config=HOST_DRIVER_CONFIG,
    ),
    Rule(
        "gpu-operator-not-on-gke-managed-drivers",
        "Never a GPU Operator on GKE-managed drivers.",
        "mandatory",
        "lab 12",
        "GKE's managed driver and device plugin break under a second stack",
        stack_check=check_gpu_operator_not_on_gke_managed_drivers,
    ),
    Rule(
        "hami-device-plugin-beside-gpu-operator",
        "With HAMi in the stack, the GPU Operator's devicePlugin.enabled must be false.",
        "mandatory",
        "lab 7, operator",
        "allocatable nvidia.com/gpu stays 1: two device plugins report the card",
        stack_check=check_hami_device_plugin_beside_gpu_operator,
    ),
    Rule(
        "hami-runtime-class-under-cdi",
        "HAMi under a GPU Operator with CDI on needs devicePlugin.runtimeClassName=nvidia-legacy.",
        "mandatory",
        "operator",
        "`unresolvable CDI devices` (nvidia) or `Incompatible strategy detected auto` (unset)",
        stack_check=check_hami_runtime_class_under_cdi,
    ),
]
