"""What every platform hands to the GPU software: a Kubernetes provider and the facts of its GPUs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s


@dataclass(frozen=True)
class GpuFacts:
    """The cards of the GPU nodes, as nvidia-smi and the schedulers see them."""

    gpu_type: str
    """Accelerator type or model key (`nvidia-tesla-t4`)."""
    product: str
    """`nvidia.com/gpu.product` value (`NVIDIA-Tesla-T4`)."""
    memory_mib: int
    """MiB nvidia-smi reports for one card (15360 on a T4)."""
    per_node: int
    """Cards on each GPU node."""
    node_count: int
    """GPU nodes."""


@dataclass(frozen=True)
class ClusterFacts:
    """A reachable cluster: the provider every Kubernetes resource uses, and what we know of it."""

    provider: k8s.Provider
    kubeconfig: pulumi.Output[str]
    """Secret: the kubeconfig the provider was built from."""
    kubernetes_version: pulumi.Input[str]
    """Server version (`v1.36.2+k3s1`, `1.35.6-gke.1250000`)."""
    gpu: GpuFacts
    gpu_nodes: pulumi.Input[Sequence[str]]
    """Names of the GPU nodes, where known; GKE's are known only once the pool exists."""
    ready: Sequence[pulumi.Resource] = ()
    """What Kubernetes resources must wait for (the node pool, the bootstrap)."""
    outputs: Mapping[str, Any] = field(default_factory=dict)
    """Platform-specific stack outputs (cluster name, external IP, SSH command, cost note)."""
