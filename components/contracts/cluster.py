"""What every platform hands to the GPU software: a Kubernetes provider and the facts of its GPUs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi

from components.providers import k8s


@dataclass(frozen=True)
class GoogleAuth:
    """The Google provider's own credentials (`gcp:credentials`, `gcp:accessToken`), secret, for the steps that call
    Google APIs outside the provider (the host-key read); None where unset, the environment then decides."""

    credentials: pulumi.Input[str] | None = None
    access_token: pulumi.Input[str] | None = None

    def environment(self) -> dict[str, pulumi.Input[str]]:
        """The step's environment entries, each a secret (components/platform/google_token.py reads them)."""
        named = {"GPUSHARE_GCP_CREDENTIALS": self.credentials, "GPUSHARE_GCP_ACCESS_TOKEN": self.access_token}
        return {k: pulumi.Output.secret(v) for k, v in named.items() if v is not None}


@dataclass(frozen=True)
class GpuFacts:
    """The cards of the GPU nodes, as nvidia-smi and the schedulers see them."""

    memory_mib: int
    """MiB nvidia-smi reports for one card (15360 on a T4)."""
    per_node: int
    """Cards on each GPU node."""


@dataclass(frozen=True)
class ClusterFacts:
    """A reachable cluster: the provider every Kubernetes resource uses, and what we know of it."""

    provider: k8s.Provider
    gpu: GpuFacts
    ready: Sequence[pulumi.Resource] = ()
    """What Kubernetes resources must wait for (the node pool, the bootstrap)."""
    labels_ready: Sequence[pulumi.Resource] = ()
    """What the sharing system's node agents must wait for: the GPU node labels where the stack patches nodes it
    did not create (their selector reads them); empty where labels are born with the node (GKE pool, k3s config)."""
    nodes: Sequence[pulumi.Resource] = ()
    """What the GPU nodes are, where the stack makes them (the GKE pool, the k3s VM, k3s on a host): the proof is
    replaced whenever one of them is, so its verdict is always about the nodes there are."""
    outputs: Mapping[str, Any] = field(default_factory=dict)
    """Platform-specific stack outputs (cluster name, external IP, SSH command, cost note)."""
    deleted_with: pulumi.Resource | None = None
    """What goes exactly when the cluster does, on a cluster the stack owns (GKE, the k3s VM, k3s on a host): its
    Kubernetes provider, replaced only when the cluster's identity changes; None for a cluster the stack does not
    own, whose objects are then deleted one by one through its API."""

    def options(self) -> pulumi.ResourceOptions:
        """Options of a component that lives in this cluster: its provider, and deleted with the cluster.

        The engine gives a component's deletedWith to every child that sets none (pulumi
        pkg/resource/deploy/source_eval.go, inheritFromParent), and then skips their Delete when that resource is
        deleted in the same run (pkg/resource/deploy/step.go:603-666, isDeletedWith): `destroy`, and a replaced VM
        or GKE cluster, never need the API of a cluster that is going, or already gone (a Helm release refuses to
        delete through an unreachable cluster, pulumi-kubernetes provider.go:2547, #2675). The provider, not the
        VM or cluster: a delete-first replacement marks its dependents deleted (step_generator.go:2129) but its
        root only replaced (:2002), so a deletedWith on the root is not honoured inside that chain.
        """
        return pulumi.ResourceOptions(providers=[self.provider], deleted_with=self.deleted_with)
