"""A cluster someone already runs (kubeadm, KubeKey, on-prem): reached through a kubeconfig, its GPU nodes labelled."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import yaml

from components.config import ConfigError, StackConfig
from components.platform.facts import ClusterFacts, GpuFacts
from components.platform.node_labels import NodeLabels, NodeLabelsArgs

PROJECT_ROOT = Path(__file__).resolve().parent.parent.parent
"""A relative kubeconfigPath is read from here, the directory `pulumi up` runs the program in."""

_NODE_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


@dataclass(frozen=True)
class ExistingClusterArgs:
    """How to reach the cluster, and what config says about it."""

    kubeconfig: pulumi.Input[str]
    """The kubeconfig text; a secret Output, never plain in the state."""
    context: str | None
    """Context within it; None uses its current context."""
    gpu_nodes: Sequence[str]
    """Names of the nodes that carry GPUs."""
    node_labels: Mapping[str, str] = field(default_factory=dict)
    """Labels the sharing system selects GPU nodes by; empty sets none."""


class ExistingCluster(pulumi.ComponentResource):
    """A Kubernetes provider onto an existing cluster, and the labels its GPU nodes need."""

    provider: k8s.Provider
    labels: NodeLabels

    def __init__(self, name: str, args: ExistingClusterArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpushare:platform:ExistingCluster", name, None, opts)
        self.provider = k8s.Provider(
            f"{name}-provider",
            kubeconfig=args.kubeconfig,
            context=args.context,
            # NodePatch needs server-side apply; the default, stated so nobody turns it off.
            enable_server_side_apply=True,
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.labels = NodeLabels(
            f"{name}-gpu-labels",
            NodeLabelsArgs(nodes=list(args.gpu_nodes) if args.node_labels else [], labels=args.node_labels),
            opts=pulumi.ResourceOptions(parent=self, provider=self.provider),
        )
        self.register_outputs({"labelledNodes": self.labels.labelled})


# --- pure checks of what config says about the cluster -------------------------------------------------


def read_kubeconfig(path: str, root: Path = PROJECT_ROOT) -> str:
    """The file at `path` (`~` expanded, relative to the project); a missing file is a ConfigError."""
    file = Path(path).expanduser()
    file = file if file.is_absolute() else root / file
    if not file.is_file():
        raise ConfigError(
            "gpushare:cluster.kubeconfigPath",
            f"no file at {file}; point it at your kubeconfig, or set it as a secret with "
            "`pulumi config set --secret --path gpushare:cluster.kubeconfig < ~/.kube/config`",
        )
    return file.read_text()


def check_kubeconfig(text: str, context: str | None, key: str) -> None:
    """The kubeconfig parses, and names the context the provider will use."""
    try:
        doc: Any = yaml.safe_load(text)
    except yaml.YAMLError:
        doc = None
    if not isinstance(doc, dict) or not doc.get("clusters"):
        raise ConfigError(key, "is not a kubeconfig (no clusters in it); give the file `kubectl` uses")
    contexts = sorted(c.get("name", "") for c in doc.get("contexts") or [] if isinstance(c, dict))
    if context is None:
        if not doc.get("current-context"):
            raise ConfigError("gpushare:cluster.context", f"the kubeconfig has no current-context; pick one of "
                                                          f"{', '.join(contexts) or '(none)'}")
        return
    if context not in contexts:
        raise ConfigError("gpushare:cluster.context",
                          f"{context!r} is not a context of the kubeconfig; it has {', '.join(contexts) or '(none)'}")


def check_gpu_nodes(nodes: Sequence[str]) -> list[str]:
    """Node names are DNS subdomains and listed once each."""
    for node in nodes:
        if len(node) > 253 or not _NODE_NAME.match(node):
            raise ConfigError("gpushare:cluster.gpuNodes",
                              f"{node!r} is not a node name; copy the NAME column of `kubectl get nodes`")
    duplicates = sorted({n for n in nodes if list(nodes).count(n) > 1})
    if duplicates:
        raise ConfigError("gpushare:cluster.gpuNodes", f"{', '.join(duplicates)} listed twice")
    return list(nodes)


def from_config(cfg: StackConfig) -> ClusterFacts:
    """StackConfig → the ExistingCluster component and the facts the GPU software needs."""
    section = cfg.cluster
    assert section is not None  # config requires it for platform existing
    if section.kubeconfig is not None:
        text, key = section.kubeconfig.get_secret_value(), "gpushare:cluster.kubeconfig"
    else:
        assert section.kubeconfig_path is not None
        text, key = read_kubeconfig(section.kubeconfig_path), "gpushare:cluster.kubeconfigPath"
    check_kubeconfig(text, section.context, key)
    nodes = check_gpu_nodes(section.gpu_nodes)
    kubeconfig = pulumi.Output.secret(text)
    labels = dict(cfg.hami.node_label) if cfg.sharing == "hami" and cfg.hami is not None else {}
    cluster = ExistingCluster(
        "cluster",
        ExistingClusterArgs(kubeconfig=kubeconfig, context=section.context, gpu_nodes=nodes, node_labels=labels),
    )
    return ClusterFacts(
        provider=cluster.provider,
        kubernetes_version=section.kubernetes_version,
        gpu=GpuFacts(memory_mib=cfg.card_mib, per_node=section.gpus_per_node),
        ready=cluster.labels.patches,
        outputs={"labelledNodes": cluster.labels.labelled},
    )
