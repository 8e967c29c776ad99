"""kai-resource-isolator 1.1.0-chart on GKE/COS (lab 12): where HAMi-core may land, and which keys do nothing."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from policies.model import GKE_CLUSTER, GKE_NODE_POOL, Finding, Res, dig, release_of, releases, values_of
from policies.rule import Rule

ISOLATOR_CHART = "kai-resource-isolator"
COS_WRITABLE = "/home/kubernetes/bin/nvidia/"
CHART_DEFAULT_MOUNT = "/usr/local/vgpu"
CHART_DEFAULT_PRIORITY = "system-node-critical"
SYSTEM_NAMESPACES = ("kube-system",)
PLATFORM_CONFIG = {
    "platform": {
        "type": "string",
        "enum": ["gke", "other"],
        "description": "gke: judge as GKE/COS even without a GKE cluster in the stack",
    }
}


def _on_gke(resources: Sequence[Res], config: Mapping[str, Any] | None) -> bool:
    if (config or {}).get("platform") == "other":
        return False
    return (config or {}).get("platform") == "gke" or any(r.type == GKE_CLUSTER for r in resources)


def _cos_images(resources: Sequence[Res]) -> bool:
    """GKE nodes run COS unless some pool asks for another image (COS_CONTAINERD is GKE's default)."""
    types = [
        str(dig(r.props, "nodeConfig", "imageType") or "COS_CONTAINERD").upper()
        for r in resources
        if r.type in (GKE_NODE_POOL, GKE_CLUSTER)
    ]
    return not types or any(t.startswith("COS") for t in types)


def check_isolator_vgpu_mount_writable_on_cos(
    resources: Sequence[Res], config: Mapping[str, Any] | None = None
) -> list[Finding]:
    """On COS only /home/kubernetes/bin is writable: HAMi-core must land under /home/kubernetes/bin/nvidia/."""
    if not _on_gke(resources, config) or not _cos_images(resources):
        return []
    findings = []
    for r in releases(resources, ISOLATOR_CHART):
        mount = str(dig(values_of(r.props), "paths", "containerVgpuMount") or CHART_DEFAULT_MOUNT)
        if not mount.startswith(COS_WRITABLE):
            findings.append(
                Finding(
                    f"paths.containerVgpuMount is {mount!r}: COS's root filesystem is read-only, so libsync fails with "
                    f"`Read-only file system` and libvgpu.so is never preloaded; set it to {COS_WRITABLE}vgpu",
                    r.urn,
                )
            )
    return findings


def check_isolator_host_install_base_is_ignored(
    resource_type: str, props: Mapping[str, Any], config: Mapping[str, Any] | None = None
) -> list[str]:
    """`paths.hostInstallBase` is in 1.1.0-chart's values but no template reads it."""
    release = release_of(resource_type, props, ISOLATOR_CHART)
    if release is None or dig(values_of(release), "paths", "hostInstallBase") is None:
        return []
    return [
        "paths.hostInstallBase is set but the chart's templates never read it, so it changes nothing; set "
        "paths.containerVgpuMount, which moves libsync's target, the preload file and the webhook's mounts"
    ]


def check_isolator_priority_class_allowed_on_gke(
    resources: Sequence[Res], config: Mapping[str, Any] | None = None
) -> list[Finding]:
    """GKE admits system-node-critical only in system namespaces: libsync's and the monitor's must be empty."""
    if not _on_gke(resources, config):
        return []
    findings = []
    for r in releases(resources, ISOLATOR_CHART):
        if str(r.props.get("namespace") or "default") in SYSTEM_NAMESPACES:
            continue
        values = values_of(r.props)
        parts = ["librarySync"] + (["monitor"] if dig(values, "monitor", "enabled") is True else [])
        for part in parts:
            value = dig(values, part, "priorityClassName", default=CHART_DEFAULT_PRIORITY)
            if value != "":
                findings.append(
                    Finding(
                        f"{part}.priorityClassName is {value!r} in namespace {r.props.get('namespace')!r}: GKE's "
                        'PriorityClass quota rejects the DaemonSet\'s Pods outside system namespaces; set it to ""',
                        r.urn,
                    )
                )
    return findings


RULES = [
    Rule(
        "isolator-vgpu-mount-writable-on-cos",
        "On GKE/COS, kai-resource-isolator's paths.containerVgpuMount must be under /home/kubernetes/bin/nvidia/.",
        "mandatory",
        "lab 12",
        "libsync: `Read-only file system`; libvgpu.so cannot be preloaded (/usr/local/vgpu)",
        stack_check=check_isolator_vgpu_mount_writable_on_cos,
        config=PLATFORM_CONFIG,
    ),
    Rule(
        "isolator-host-install-base-is-ignored",
        "kai-resource-isolator's paths.hostInstallBase is a no-op key in 1.1.0-chart.",
        "advisory",
        "lab 12",
        "the setting silently changes nothing; HAMi-core still lands at containerVgpuMount",
        resource_check=check_isolator_host_install_base_is_ignored,
    ),
    Rule(
        "isolator-priority-class-allowed-on-gke",
        "On GKE, kai-resource-isolator's librarySync/monitor priorityClassName must be empty outside kube-system.",
        "mandatory",
        "lab 12",
        "DaemonSet Pods rejected for system-node-critical outside system namespaces",
        stack_check=check_isolator_priority_class_allowed_on_gke,
        config=PLATFORM_CONFIG,
    ),
]
