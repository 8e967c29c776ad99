"""A cluster someone already runs (kubeadm, KubeKey, on-prem): reached through a kubeconfig, its GPU nodes labelled."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import pulumi

from components.platform.node_labels import NodeLabels, NodeLabelsArgs
from components.platform.settings import ClusterConfig
from components.providers import k8s


@dataclass(frozen=True)
class ExistingClusterArgs:
    """How to reach the cluster, and what config says about it."""

    settings: ClusterConfig
    """The `gpushare:` section config validated, as it is: the one declaration of these settings."""
    kubeconfig: pulumi.Input[str]
    """The kubeconfig text; a secret Output, never plain in the state."""
    node_labels: Mapping[str, str] = field(default_factory=dict)
    """Labels the sharing system selects GPU nodes by; empty sets none."""
    cluster_identifier: str | None = None
    """Which cluster this is, whatever its kubeconfig's server or CA: the provider, and every object, is replaced
    only when it changes."""


class ExistingCluster(pulumi.ComponentResource):
    """A Kubernetes provider onto an existing cluster, and the labels its GPU nodes need."""

    provider: k8s.Provider
    labels: NodeLabels

    def __init__(self, name: str, args: ExistingClusterArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpushare:platform:ExistingCluster", name, None, opts)
        self.provider = k8s.Provider(
            f"{name}-provider",
            kubeconfig=args.kubeconfig,
            context=args.settings.context,
            # NodePatch needs server-side apply; the default, stated so nobody turns it off.
            enable_server_side_apply=True,
            # Without it a rotated CA or a new server address replaces every object (pulumi-kubernetes
            # provider/pkg/provider/provider.go, DiffConfig compares the active cluster unless this is set).
            cluster_identifier=args.cluster_identifier,
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.labels = NodeLabels(
            f"{name}-gpu-labels",
            NodeLabelsArgs(nodes=list(args.settings.gpu_nodes) if args.node_labels else [], labels=args.node_labels),
            opts=pulumi.ResourceOptions(parent=self, provider=self.provider),
        )
        self.register_outputs({"labelledNodes": self.labels.labelled})
