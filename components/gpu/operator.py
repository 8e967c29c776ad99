"""NVIDIA GPU Operator for its container toolkit only (which toolkit a stack gets is compose/toolkit.py's choice)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi

from components.gpu.chart import ChartRelease, ChartSource, install_chart, release_images
from components.gpu.ready_gate import ReadyGate, ReadyGateArgs
from components.gpu.settings import GpuOperatorConfig
from components.images import Mirrors
from components.providers import k8s

CHART = "gpu-operator"
REPOSITORY = "https://helm.ngc.nvidia.com/nvidia"
CLUSTER_POLICY = "cluster-policy"
"""The one ClusterPolicy the chart creates; its `status.state` turns `ready` once every operand runs."""


@dataclass(frozen=True)
class GpuOperatorArgs:
    """The GPU Operator release, used for its container toolkit only."""

    settings: GpuOperatorConfig
    """The `gpushare:` section config validated, as it is: the one declaration of these settings."""
    stack: str = field(kw_only=True)
    """The stack's name (`pulumi.get_stack()`): in every name another stack on the same cluster could also give."""
    mirrors: Mirrors = field(default_factory=Mirrors)
    """Where every image of the chart and its NFD subchart is pulled from (NFD's registry.k8s.io image first of all:
    without NFD no operand DaemonSet is ever created)."""
    chart_source: ChartSource | None = None
    timeout_seconds: int = 600
    """How long Helm waits for the release."""
    ready: Sequence[pulumi.Resource] = ()
    """What the release waits for (the node labels, the cluster)."""
    gate_image: str = "python:3.12-slim-bookworm"
    """Image of the Pod that waits for the ClusterPolicy to be ready (any image with python3)."""
    refuse_unprivileged_env: bool = False
    """The toolkit ignores NVIDIA_VISIBLE_DEVICES from unprivileged containers, takes device lists as mounts."""


def toolkit_env(refuse_unprivileged_env: bool) -> list[dict[str, str]]:
    """`toolkit.env`: the toolkit container's switches, set either way (nvidia-container-toolkit v1.20.0, the
    version v26.7.0 deploys: cmd/nvidia-ctk-installer/toolkit/toolkit.go:162 and :168 read these variables)."""
    accept_env, accept_mounts = ("false", "true") if refuse_unprivileged_env else ("true", "false")
    return [
        {"name": "ACCEPT_NVIDIA_VISIBLE_DEVICES_ENVVAR_WHEN_UNPRIVILEGED", "value": accept_env},
        {"name": "ACCEPT_NVIDIA_VISIBLE_DEVICES_AS_VOLUME_MOUNTS", "value": accept_mounts},
    ]


def operator_values(args: GpuOperatorArgs) -> dict[str, Any]:
    """The Helm values: toolkit on, driver and device plugin as args say, CDI as args say."""
    values: dict[str, Any] = {
        # false: the host driver stays; an operator driver container would fight it for the kernel modules.
        "driver": {"enabled": args.settings.driver_enabled},
        # false: HAMi's device plugin is the only one; two would both advertise nvidia.com/gpu and
        # allocatable would stay at the card count instead of cards × deviceSplitCount.
        "devicePlugin": {"enabled": args.settings.device_plugin_enabled},
        # The one thing we install it for: the toolkit puts the nvidia runtimes into containerd.
        "toolkit": {"enabled": True, "env": toolkit_env(args.refuse_unprivileged_env)},
        # Under CDI the operator no longer makes nvidia containerd's default runtime (since 25.10).
        "cdi": {"enabled": args.settings.cdi_enabled},
        # Helm never deletes crds/ on uninstall; the chart's pre-delete hook does, so destroy leaves none behind.
        "operator": {"cleanupCRD": True},
    }
    return values


class GpuOperator(pulumi.ComponentResource):
    """NVIDIA GPU Operator from NVIDIA's Helm repository, in its own privileged namespace."""

    release: k8s.helm.v3.Release
    toolkit_ready: ReadyGate
    images: list[str]

    def __init__(self, name: str, args: GpuOperatorArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpushare:gpu:GpuOperator", name, None, opts)
        spec = ChartRelease(
            CHART,
            CHART,
            args.settings.version,
            args.settings.namespace,
            operator_values(args),
            repo=REPOSITORY,
            # The toolkit and validator DaemonSets mount host paths; a restricted PSA default would reject them.
            namespace_labels={"pod-security.kubernetes.io/enforce": "privileged"},
            timeout_seconds=args.timeout_seconds,
            source=args.chart_source,
            mirrors=args.mirrors,
        )
        self.release = install_chart(self, name, spec, after=args.ready)
        self.images = sorted({*release_images(spec), args.gate_image})
        # helm --wait ends with the operator Deployment; the toolkit DaemonSet (and with it the nvidia-legacy
        # runtime HAMi needs) comes later, and the ClusterPolicy's state says when.
        self.toolkit_ready = ReadyGate(
            f"{name}-ready",
            ReadyGateArgs(
                namespace=args.settings.namespace,
                api_group="nvidia.com",
                version="v1",
                plural="clusterpolicies",
                object_name=CLUSTER_POLICY,
                ready_rule="status.state=ready",
                image=args.gate_image,
                stack=args.stack,
                timeout_seconds=args.timeout_seconds,
                after=[self.release],
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.installed = pulumi.Output.all(self.release.chart, self.release.version, self.release.namespace).apply(
            lambda v: f"{v[0]} {v[1]} ({REPOSITORY}) in {v[2]}: toolkit only"
        )
        self.register_outputs({"installed": self.installed})
