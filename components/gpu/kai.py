"""KAI Scheduler v0.17.0 with GPU sharing and the HAMi-core binder plugin, its readiness gate and its queues."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi

from components.gpu.chart import ChartRelease, ChartSource, install_chart, release_images
from components.gpu.ready_gate import ReadyGate, ReadyGateArgs
from components.gpu.settings import KaiConfig
from components.images import Mirrors
from components.providers import k8s

CHART = "oci://ghcr.io/kai-scheduler/kai-scheduler/kai-scheduler"
RELEASE_NAME = "kai-scheduler"
SCHEDULER_NAME = "kai-scheduler"
QUEUE_LABEL = "kai.scheduler/queue"
GPU_MEMORY_ANNOTATION = "gpu-memory"
CONFIG_API_VERSION = "kai.scheduler/v1"
CONFIG_NAME = "kai-config"
QUEUE_API_VERSION = "scheduling.run.ai/v2"
# The chart's own default-queue resources: no quota, no limit, equal over-quota weight.
OPEN_QUEUE_RESOURCES = {r: {"quota": 0, "limit": -1, "overQuotaWeight": 1} for r in ("cpu", "gpu", "memory")}


@dataclass(frozen=True)
class KaiSchedulerArgs:
    """KAI's release and the queue the proof Pods are labelled with."""

    settings: KaiConfig
    """The `gpushare:` section config validated, as it is: the one declaration of these settings."""
    stack: str = field(kw_only=True)
    """The stack's name (`pulumi.get_stack()`): in every name another stack on the same cluster could also give."""
    ready: Sequence[pulumi.Resource] = field(default_factory=tuple)
    """What the release waits for (the GPU node pool)."""
    gate_image: str = "python:3.12-slim-bookworm"
    """Image of the Pod that waits for `kai-config` to be Ready (any image with python3)."""
    mirrors: Mirrors = field(default_factory=Mirrors)
    chart_source: ChartSource | None = None


def kai_values(args: KaiSchedulerArgs) -> dict[str, Any]:
    """Helm values: sharing on, HAMi-core binder on, CDI as the string the Config CRD requires."""
    return {
        "global": {"gpuSharing": True},
        "binder": {
            "plugins": {
                "hamicore": {"enabled": True},
                # A string: a boolean fails the kai-config hook with `cdiEnabled ... must be of type string`.
                "gpusharing": {"arguments": {"cdiEnabled": args.settings.cdi_enabled}},
            }
        },
        "defaultQueue": {
            # The chart's queues carry `helm.sh/resource-policy: keep` and outlive uninstall; ours do not.
            "createDefaultQueue": not args.settings.delete_kept_queues,
            "parentName": args.settings.parent_queue,
            "childName": args.settings.queue,
        },
    }


class KaiScheduler(pulumi.ComponentResource):
    """KAI Scheduler in its namespace, Ready once `kai-config` is, with the proof's queue."""

    release: k8s.helm.v3.Release
    config_ready: ReadyGate
    queues: list[k8s.apiextensions.CustomResource]
    ready: list[pulumi.Resource]
    images: list[str]

    def __init__(self, name: str, args: KaiSchedulerArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpushare:gpu:KaiScheduler", name, None, opts)
        # helm --wait covers the operator Deployment and the hook Job that applies kai-config;
        # the components the operator then creates are covered by kai-config's Ready below.
        spec = ChartRelease(
            RELEASE_NAME,
            CHART,
            args.settings.version,
            args.settings.namespace,
            kai_values(args),
            source=args.chart_source,
            mirrors=args.mirrors,
        )
        self.release = install_chart(self, name, spec, after=args.ready)
        self.images = sorted({*release_images(spec), args.gate_image})
        # kai-config comes from a hook and KAI's operator makes it Ready; Pulumi owns neither, so a gate waits.
        group, version = CONFIG_API_VERSION.split("/")
        self.config_ready = ReadyGate(
            f"{name}-config-ready",
            ReadyGateArgs(
                namespace=args.settings.namespace,
                api_group=group,
                version=version,
                plural="configs",
                object_name=CONFIG_NAME,
                ready_rule="condition:Ready",
                image=args.gate_image,
                stack=args.stack,
                timeout_seconds=300,
                after=[self.release],
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.queues = []
        if args.settings.delete_kept_queues:
            # Created after kai-config is Ready: before that KAI's admission webhook rejects queues.
            parent = k8s.apiextensions.CustomResource(
                f"{name}-parent-queue",
                api_version=QUEUE_API_VERSION,
                kind="Queue",
                metadata=k8s.meta.v1.ObjectMetaArgs(name=args.settings.parent_queue),
                spec={"resources": OPEN_QUEUE_RESOURCES},
                opts=pulumi.ResourceOptions(parent=self, depends_on=[self.config_ready.job]),
            )
            child = k8s.apiextensions.CustomResource(
                f"{name}-queue",
                api_version=QUEUE_API_VERSION,
                kind="Queue",
                metadata=k8s.meta.v1.ObjectMetaArgs(name=args.settings.queue),
                spec={"parentQueue": args.settings.parent_queue, "resources": OPEN_QUEUE_RESOURCES},
                # The child names its parent: created after it, deleted before it, never an orphan in between.
                opts=pulumi.ResourceOptions(parent=self, depends_on=[parent]),
            )
            self.queues = [parent, child]
        self.ready = [self.config_ready.job, *self.queues]
        self.register_outputs(
            {
                "namespace": args.settings.namespace,
                "releaseStatus": self.release.status.status,
                "queue": args.settings.queue,
                "parentQueue": args.settings.parent_queue,
                "queuesOwnedByStack": args.settings.delete_kept_queues,
            }
        )
