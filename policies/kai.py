"""KAI Scheduler (lab 12): the Config CRD's string types, sharing Pods, and the node labels KAI reads."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from policies.model import (
    GKE_CLUSTER,
    GKE_NODE_POOL,
    Finding,
    Res,
    dig,
    pod_shape,
    release_of,
    releases,
    values_of,
)
from policies.rule import Rule

KAI_CHART = "kai-scheduler"
ISOLATOR_CHART = "kai-resource-isolator"
SHARING_ANNOTATIONS = ("gpu-memory", "gpu-fraction")
GPU_MEMORY_LABEL = "nvidia.com/gpu.memory"
GPU_PRESENT_LABEL = "nvidia.com/gpu.present"


def check_kai_cdi_enabled_is_a_string(
    resource_type: str, props: Mapping[str, Any], config: Mapping[str, Any] | None = None
) -> list[str]:
    """`binder.plugins.gpusharing.arguments.cdiEnabled` must be the string "true"/"false", never a boolean."""
    release = release_of(resource_type, props, KAI_CHART)
    if release is None:
        return []
    value = dig(values_of(release), "binder", "plugins", "gpusharing", "arguments", "cdiEnabled")
    if value is None or isinstance(value, str):
        return []
    return [
        f"binder.plugins.gpusharing.arguments.cdiEnabled is {type(value).__name__} {value!r}; the Config CRD "
        f"types it as a string and kai-config-deployer fails with `must be of type string`: give the string "
        f"{str(value).lower()!r} (helm --set-string)"
    ]


def check_kai_sharing_pod_requests_no_whole_gpu(
    resource_type: str, props: Mapping[str, Any], config: Mapping[str, Any] | None = None
) -> list[str]:
    """A Pod annotated `gpu-memory`/`gpu-fraction` shares a card through KAI; `nvidia.com/gpu` would claim one."""
    shape = pod_shape(resource_type, props)
    if shape is None:
        return []
    annotated = [a for a in SHARING_ANNOTATIONS if a in shape.annotations]
    if not annotated:
        return []
    return [
        f"container {c.get('name', '?')!r} requests nvidia.com/gpu beside the KAI {annotated[0]} annotation: "
        "the device plugin then hands it a whole card and KAI's share is not what runs; drop the "
        "nvidia.com/gpu request and keep the annotation"
        for c in shape.containers
        if any(k == "nvidia.com/gpu" for key in ("requests", "limits") for k in (dig(c, "resources", key) or {}))
    ]


def _gpu_pools(resources: Sequence[Res]) -> list[tuple[Res, Mapping[str, Any]]]:
    """GKE node configs that carry GPUs: node pools, and a cluster's own default-pool nodeConfig."""
    pools = []
    for r in resources:
        if r.type not in (GKE_NODE_POOL, GKE_CLUSTER):
            continue
        node_config = dig(r.props, "nodeConfig")
        if not isinstance(node_config, Mapping) or not node_config.get("guestAccelerators"):
            continue
        if r.type == GKE_CLUSTER and r.props.get("removeDefaultNodePool") is True:
            continue
        pools.append((r, node_config))
    return pools


def check_kai_node_pool_has_gpu_memory_label(
    resources: Sequence[Res], config: Mapping[str, Any] | None = None
) -> list[Finding]:
    """With KAI in the stack, every GKE GPU pool is born with `nvidia.com/gpu.memory` (MiB, from nvidia-smi)."""
    if not releases(resources, KAI_CHART):
        return []
    findings = []
    for pool, node_config in _gpu_pools(resources):
        value = dig(node_config, "labels", GPU_MEMORY_LABEL)
        if value is None or not str(value).isdigit() or int(str(value)) <= 0:
            findings.append(
                Finding(
                    f"GPU node pool {pool.name} has no {GPU_MEMORY_LABEL} label (found {value!r}): KAI caches the node "
                    "without GPU memory, so sharing Pods stay Pending with `didn't have enough resources: GPU memory`; "
                    f'set nodeConfig.labels["{GPU_MEMORY_LABEL}"] to the MiB nvidia-smi reports (15360 on a T4)',
                    pool.urn,
                )
            )
    return findings


def check_isolator_monitor_node_pool_has_gpu_present_label(
    resources: Sequence[Res], config: Mapping[str, Any] | None = None
) -> list[Finding]:
    """The isolator's monitor selects `nvidia.com/gpu.present=true`, which GKE's own stack never sets."""
    monitors = [
        r
        for r in releases(resources, ISOLATOR_CHART)
        if dig(values_of(r.props), "monitor", "enabled") is True
        and dig(values_of(r.props), "monitor", "nodeSelector") is None
    ]
    if not monitors:
        return []
    return [
        Finding(
            f'GPU node pool {pool.name} lacks {GPU_PRESENT_LABEL}="true": the kai-resource-isolator monitor selects '
            "it and never runs there, so no hami_vgpu_memory_* series exist; set "
            f'nodeConfig.labels["{GPU_PRESENT_LABEL}"] = "true"',
            pool.urn,
        )
        for pool, node_config in _gpu_pools(resources)
        if str(dig(node_config, "labels", GPU_PRESENT_LABEL)) != "true"
    ]


RULES = [
    Rule(
        "kai-cdi-enabled-is-a-string",
        "KAI's binder.plugins.gpusharing.arguments.cdiEnabled must be a string, not a boolean.",
        "mandatory",
        "lab 12",
        'kai-config-deployer hook fails: `cdiEnabled ... must be of type string: "boolean"`',
        resource_check=check_kai_cdi_enabled_is_a_string,
    ),
    Rule(
        "kai-sharing-pod-requests-no-whole-gpu",
        "A Pod with KAI's gpu-memory/gpu-fraction annotation must not also request nvidia.com/gpu.",
        "mandatory",
        "lab 12",
        "the Pod gets a whole card from the device plugin instead of its KAI share",
        resource_check=check_kai_sharing_pod_requests_no_whole_gpu,
    ),
    Rule(
        "kai-node-pool-has-gpu-memory-label",
        "GKE GPU node pools that KAI shares need the nvidia.com/gpu.memory label.",
        "mandatory",
        "lab 12",
        "sharing Pods Pending: `didn't have enough resources: GPU memory`; no limit written",
        stack_check=check_kai_node_pool_has_gpu_memory_label,
    ),
    Rule(
        "isolator-monitor-node-pool-has-gpu-present-label",
        "GKE GPU node pools need nvidia.com/gpu.present=true for the kai-resource-isolator monitor.",
        "mandatory",
        "lab 12",
        "no monitor Pod on the workload's node; the metrics query finds no series",
        stack_check=check_isolator_monitor_node_pool_has_gpu_present_label,
    ),
]
