"""kai-resource-isolator 1.1.0-chart: ships HAMi-core to the nodes, injects it into sharing Pods, monitors it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi

from components.gpu.chart import ChartRelease, ChartSource, install_chart, release_images
from components.gpu.settings import IsolatorConfig
from components.images import Mirrors
from components.incluster.expectation import Monitor
from components.providers import k8s

# Docker Hub's registry host as Helm's OCI client contacts it; `docker.io` is a name only image references alias.
CHART = "oci://registry-1.docker.io/projecthami/kai-resource-isolator"
RELEASE_NAME = "kai-resource-isolator"
MONITOR_SELECTOR = "app.kubernetes.io/component=kai-vgpu-monitor"
MONITOR_PORT = 9394
PRELOAD_LIBRARY = "libvgpu.so"


@dataclass(frozen=True)
class ResourceIsolatorArgs:
    """The isolator's release: where HAMi-core lands on the node, PriorityClasses, the monitor."""

    settings: IsolatorConfig
    """The `gpushare:` section config validated, as it is: the one declaration of these settings."""
    ready: Sequence[pulumi.Resource] = field(default_factory=tuple)
    mirrors: Mirrors = field(default_factory=Mirrors)
    chart_source: ChartSource | None = None


def isolator_values(args: ResourceIsolatorArgs) -> dict[str, Any]:
    """Helm values; `paths.hostInstallBase` is never set: the 1.1.0 templates do not read it."""
    return {
        # COS's root is read-only (libsync: `Read-only file system`); /home/kubernetes/bin is writable.
        "paths": {"containerVgpuMount": args.settings.container_vgpu_mount},
        # Empty: GKE refuses system-node-critical Pods outside system namespaces.
        "librarySync": {"priorityClassName": args.settings.library_sync_priority_class},
        "monitor": {
            "enabled": args.settings.monitor_enabled,
            "priorityClassName": args.settings.monitor_priority_class,
        },
    }


class ResourceIsolator(pulumi.ComponentResource):
    """The isolator in its namespace; Ready when its libsync and monitor DaemonSets and webhook are."""

    release: k8s.helm.v3.Release
    monitor: Monitor | None
    images: list[str]

    def __init__(self, name: str, args: ResourceIsolatorArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpushare:gpu:ResourceIsolator", name, None, opts)
        # helm --wait: both DaemonSets rolled out on every GPU node and the webhook Deployment Available,
        # so no sharing Pod is admitted before the webhook can inject HAMi-core.
        spec = ChartRelease(
            RELEASE_NAME,
            CHART,
            args.settings.version,
            args.settings.namespace,
            isolator_values(args),
            source=args.chart_source,
            mirrors=args.mirrors,
        )
        self.release = install_chart(self, name, spec, after=args.ready)
        self.images = release_images(spec)
        self.monitor = (
            Monitor(namespace=args.settings.namespace, label_selector=MONITOR_SELECTOR, port=MONITOR_PORT)
            if args.settings.monitor_enabled
            else None
        )
        self.register_outputs(
            {
                "namespace": args.settings.namespace,
                "releaseStatus": self.release.status.status,
                "vgpuMount": args.settings.container_vgpu_mount,
                "preload": f"{args.settings.container_vgpu_mount}/{PRELOAD_LIBRARY}",
                "monitorSelector": MONITOR_SELECTOR if self.monitor else None,
                "monitorPort": MONITOR_PORT if self.monitor else None,
            }
        )
