"""HAMi (scheduler extender, device plugin, HAMi-core) from its Helm chart, aware of 2.9.0 and 2.10.0.

The value paths are per chart version and each exists in that version's values.yaml (a test checks it),
since Helm ignores a misspelt key without a word.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi

from components.chart_images import Path, put
from components.contracts.proof import CheckId, PodTry, SharedCard, SharingProof, SliceRequest
from components.gpu.chart import ChartRelease, ChartSource, install_chart, release_images
from components.gpu.hami_cards import SHARED_CARD_INDEX, USE_UUID_ANNOTATION, registered_card
from components.gpu.ready_gate import ReadyGate, ReadyGateArgs
from components.gpu.settings import HamiConfig
from components.images import Mirrors
from components.incluster.expectation import NodeRegistration
from components.providers import k8s

CHART = "hami"
REPO = "https://project-hami.github.io/HAMi"
SCHEDULER_NAME = "hami-scheduler"
LEGACY_RUNTIME_CLASS = "nvidia-legacy"
REGISTER_ANNOTATION = "hami.io/node-nvidia-register"
ALLOCATED_ANNOTATION = "hami.io/vgpu-devices-allocated"
# The device plugin indexes CUDA_DEVICE_MEMORY_LIMIT_<i> by the container's own devices, i over its allocation
# (HAMi v2.9.0 pkg/device-plugin/nvidiadevice/nvinternal/plugin/server.go:650, v2.10.0 :833): a one-card Pod
# gets `_0` whichever card of the node it is on, and HAMi-core reads `_<i>` for its CUDA device i
# (HAMi-core src/multiprocess/multiprocess_memory_limit.c, do_init_device_memory_limits).
DEVICE_LIMIT_ENV = "CUDA_DEVICE_MEMORY_LIMIT_0"
REGISTER_TIMEOUT_SECONDS = 120
"""The device plugin writes its register annotation on start, then every 30 s (v2.9.0 plugin/register.go:244)."""


@dataclass(frozen=True)
class ChartKeys:
    """Where one chart version reads each value we set (images: components/chart_images.py)."""

    scheduler_tag: Path
    split_count: Path = ("devicePlugin", "deviceSplitCount")
    node_selector: Path | None = ("devicePlugin", "nvidiaNodeSelector")
    runtime_class: Path = ("devicePlugin", "runtimeClassName")
    create_runtime_class: Path | None = ("devicePlugin", "createRuntimeClass")
    device_list_strategy: Path = ("devicePlugin", "deviceListStrategy")


_SCHEDULER_IMAGE: Path = ("scheduler", "kubeScheduler", "image")
_IMAGE_TAG: Path = (*_SCHEDULER_IMAGE, "tag")
CHART_SCHEDULER_IMAGE = ("registry.cn-hangzhou.aliyuncs.com", "google_containers/kube-scheduler")
"""The kube-scheduler image the 2.9.0 and 2.10.0 charts default to (charts/hami/values.yaml, held to the chart's
image table by tests/test_hami.py): a regional mirror, kept only where config names it."""

CHART_KEYS: dict[str, ChartKeys] = {
    "2.9.0": ChartKeys(scheduler_tag=_IMAGE_TAG),
    "2.10.0": ChartKeys(scheduler_tag=_IMAGE_TAG),
}
"""The chart versions this component knows."""


def scheduler_tag_path(version: str) -> Path:
    """The key the chart reads the kube-scheduler tag from: `image.tag` since 2.7, where `imageTag` is ignored."""
    if version in CHART_KEYS:
        return CHART_KEYS[version].scheduler_tag
    major, minor = (int(part) for part in version.lstrip("v").split(".")[:2])
    return _IMAGE_TAG if (major, minor) >= (2, 7) else ("scheduler", "kubeScheduler", "imageTag")


def runtime_class_for(cdi_enabled: bool, override: str | None = None) -> str | None:
    """`nvidia-legacy` under a CDI GPU Operator (`nvidia` there fails with `unresolvable CDI devices`), else none."""
    if override is not None:
        return override
    return LEGACY_RUNTIME_CLASS if cdi_enabled else None


@dataclass(frozen=True)
class HamiArgs:
    """One HAMi release: chart version, where it goes, and what its scheduler and device plugin need."""

    settings: HamiConfig
    """The `gpushare:` section config validated, as it is: the one declaration of these settings."""
    stack: str = field(kw_only=True)
    """The stack's name (`pulumi.get_stack()`): in every name another stack on the same cluster could also give."""
    server_version: str | None = None
    """The server's release as config knows it (`v1.36.2`): the tag the chart derives, listed in `images`."""
    runtime_class_name: str | None = None
    """The device plugin's RuntimeClass as the toolkit decides it (`runtime_class_for`), not as config left it."""
    mirrors: Mirrors = field(default_factory=Mirrors)
    chart_source: ChartSource | None = None
    ready: Sequence[pulumi.Resource] = ()
    """What the release waits for (the platform, the toolkit, the node labels)."""
    server_git_version: str | None = None
    """The server's full version as config states it (`v1.36.2+k3s1`): a gate checks the live server's `/version`
    says so before the chart is installed, so `images` (and a mirror filled from it) hold the tag the chart uses."""
    server_version_key: str = "gpushare:cluster.kubernetesVersion"
    """The config key that states it, named when the gate fails."""
    gate_image: str = "python:3.12-slim-bookworm"
    gate_timeout_seconds: int = 60
    device_list_strategy: str | None = None
    """`volume-mounts` where the toolkit refuses NVIDIA_VISIBLE_DEVICES from unprivileged containers; None: the
    chart's `envvar`."""
    cards_per_node: int = 1
    """Cards on each GPU node; above 1, the release reads which card the proof shares from `proof_node`."""
    proof_node: str | None = None
    """The node the proof Pods run on (the k3s node, the first of cluster.gpuNodes): where its card 1 is read."""


def hami_values(args: HamiArgs) -> dict[str, Any]:
    """The chart values for `args`, at the paths `args.settings.version` reads."""
    keys = CHART_KEYS[args.settings.version]
    values: dict[str, Any] = {}
    # Unset, the chart takes the tag from the server it is installed on (charts/hami/templates/_helpers.tpl,
    # `resolvedKubeSchedulerTag`), which is right even where config's version is not.
    if args.settings.scheduler_image_tag is not None:
        put(values, keys.scheduler_tag, args.settings.scheduler_image_tag)
    registry, _, repository = args.settings.scheduler_image.partition("/")
    if (registry, repository) != CHART_SCHEDULER_IMAGE:  # the chart's own: set nothing, so the values read as before
        # Set here, the registry would override mirror_values' rewrite of the chart default: mirror it ourselves.
        put(values, (*_SCHEDULER_IMAGE, "registry"), args.mirrors.location(registry))
        put(values, (*_SCHEDULER_IMAGE, "repository"), repository)
    put(values, keys.split_count, args.settings.device_split_count)
    if keys.node_selector is not None:
        put(values, keys.node_selector, dict(args.settings.node_label))
    if args.runtime_class_name is not None:
        put(values, keys.runtime_class, args.runtime_class_name)
    if args.device_list_strategy is not None:
        put(values, keys.device_list_strategy, args.device_list_strategy)
    if keys.create_runtime_class is not None:
        # The chart would create the class with the wrong handler; the toolkit (or GPU Operator) owns it.
        put(values, keys.create_runtime_class, False)
    return values


def server_version_gate(args: HamiArgs) -> ReadyGateArgs:
    """A Job that reads `/version` and passes only if its gitVersion is the one config states."""
    wanted = args.server_git_version or ""
    return ReadyGateArgs(
        namespace="default",  # HAMi's own namespace may not exist yet: the gate runs before the chart
        api_group="",
        version="",
        plural="",
        object_name="version",
        non_resource_path="/version",
        ready_rule=f"gitVersion={wanted}",
        image=args.gate_image,
        stack=args.stack,
        timeout_seconds=args.gate_timeout_seconds,
        after=args.ready,
        hint=f"the server is not {wanted}: set {args.server_version_key} to its gitVersion (kubectl version), "
        "or pin gpushare:hami.schedulerImageTag",
    )


def hami_release(args: HamiArgs) -> ChartRelease:
    return ChartRelease(
        CHART,
        CHART,
        args.settings.version,
        args.settings.namespace,
        hami_values(args),
        repo=REPO,
        timeout_seconds=args.settings.wait_timeout_seconds,
        source=args.chart_source,
        mirrors=args.mirrors,
        server_version=args.server_version,
    )


def registration_gate(args: HamiArgs, node: str, after: Sequence[pulumi.Resource]) -> ReadyGateArgs:
    """A Job that waits until HAMi's device plugin has written the node's register annotation."""
    return ReadyGateArgs(
        namespace=args.settings.namespace,
        api_group="",
        version="v1",
        plural="nodes",
        object_name=node,
        ready_rule=f"annotation:{REGISTER_ANNOTATION}",
        image=args.gate_image,
        timeout_seconds=REGISTER_TIMEOUT_SECONDS,
        after=after,
        stack=args.stack,
        hint=f"HAMi's device plugin never registered node {node}'s cards: is it running there (its DaemonSet in "
        f"{args.settings.namespace}), and is {node} the GPU node?",
    )


class Hami(pulumi.ComponentResource):
    """The HAMi Helm release, waited on until its scheduler and device plugin are up; on a multi-GPU node, also
    the card the proof shares, read from the node once HAMi registered it."""

    release: k8s.helm.v3.Release
    images: list[str]
    shared_card: SharedCard | None

    def __init__(self, name: str, args: HamiArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpushare:gpu:Hami", name, None, opts)
        spec = hami_release(args)
        after: list[pulumi.Resource] = list(args.ready)
        extra_images: set[str] = set()
        if args.settings.scheduler_image_tag is None and args.server_git_version is not None:
            # Unpinned, the chart takes the kube-scheduler tag from the live server (`resolvedKubeSchedulerTag`),
            # `images` from config: the gate fails, naming the key, where the two disagree.
            gate = ReadyGate(f"{name}-server-version", server_version_gate(args), pulumi.ResourceOptions(parent=self))
            after.append(gate.job)
            extra_images.add(args.gate_image)
        self.release = install_chart(self, name, spec, after=after)
        self.shared_card = None
        if args.cards_per_node > 1 and args.proof_node is not None:
            self.shared_card = self._shared_card(name, args, args.proof_node)
            extra_images.add(args.gate_image)
        self.images = sorted({*release_images(spec), *extra_images})
        self.register_outputs(
            {
                "version": args.settings.version,
                "schedulerImageTag": args.settings.scheduler_image_tag,
                "status": self.release.status,
                "sharedCard": self.shared_card.uuid if self.shared_card else None,
            }
        )

    def _shared_card(self, name: str, args: HamiArgs, node: str) -> SharedCard:
        """Card 1 of `node`, by the register annotation: read only after a gate saw HAMi write it (the DaemonSet is
        Ready before its first registration), so the UUID is the live card's, not a guess."""
        gate = ReadyGate(
            f"{name}-registered", registration_gate(args, node, [self.release]), pulumi.ResourceOptions(parent=self)
        )
        # The ID is unknown until the gate Job exists, and a read with an unknown ID is skipped in a preview
        # (pulumi pkg/resource/deploy/step.go, ReadStep.Apply): no preview reads a cluster that is not up yet.
        read = k8s.core.v1.Node.get(
            f"{name}-node",
            gate.job.id.apply(lambda _: node),
            opts=pulumi.ResourceOptions(parent=self, depends_on=[gate.job]),
        )
        uuid = read.metadata.apply(
            lambda meta: registered_card((meta.annotations or {}).get(REGISTER_ANNOTATION), SHARED_CARD_INDEX, node)
        )
        return SharedCard(index=SHARED_CARD_INDEX, node=node, uuid=uuid, pin_annotation=USE_UUID_ANNOTATION)


def hami_proof(
    slice_mib: int,
    overcommit_mib: int,
    cores_percent: int | None,
    device_split_count: int,
    cards_per_node: int,
    shared_card: SharedCard | None = None,
) -> SharingProof:
    """What HAMi promises for two Pods of `slice_mib` (and `cores_percent`) on one card, made checkable; on a
    multi-GPU node every slice request is pinned to `shared_card`."""
    limits = {"nvidia.com/gpu": "1", "nvidia.com/gpumem": str(slice_mib)}
    env = {DEVICE_LIMIT_ENV: f"{slice_mib}m"}
    # HAMi's filter skips every card whose UUID the annotation does not list (v2.9.0 pkg/device/nvidia/device.go:765
    # and pkg/device/devices.go:652 CheckUUID; v2.10.0 device.go:755): the Pod lands on that card or stays Pending.
    pin = {shared_card.pin_annotation: shared_card.uuid} if shared_card is not None else {}
    checks: list[CheckId] = [
        "same-gpu",
        "view-isolation",
        "quota-injection",
        "memory-enforced",
        "neighbor-isolation",
        "preload-mechanism",
        "overcommit-rejected",
    ]
    if cores_percent is not None:
        limits["nvidia.com/gpucores"] = str(cores_percent)
        env["CUDA_DEVICE_SM_LIMIT"] = str(cores_percent)
        checks.append("compute-limited")
    checks.append("fault-isolation")  # the card is shared: one Pod's fault must not end the other
    # HAMi's device plugin mounts no /etc/ld.so.preload for a container whose env sets CUDA_DISABLE_CONTROL
    # true (HAMi pkg/device-plugin/nvidiadevice/nvinternal/plugin/server.go, Allocate).
    disable_control = PodTry(
        id="cuda-disable-control",
        tried="a Pod whose own spec sets CUDA_DISABLE_CONTROL=true, asking for the same slice",
        request=SliceRequest(
            scheduler_name=SCHEDULER_NAME, annotations=pin, limits=limits, env={"CUDA_DISABLE_CONTROL": "true"}
        ),
    )
    # HAMi 2.10.0 rejects GPU Pods with a privileged container, so no proof Pod is privileged.
    request = SliceRequest(scheduler_name=SCHEDULER_NAME, annotations=pin, limits=limits, privileged=False)
    # On the proof's card, or another card would take it and nothing would stay Pending.
    overcommit = SliceRequest(
        scheduler_name=SCHEDULER_NAME,
        annotations=pin,
        limits={"nvidia.com/gpu": "1", "nvidia.com/gpumem": str(overcommit_mib)},
        privileged=False,
    )
    return SharingProof(
        system="hami",
        mechanism="hami-core",
        requests=(request, request),
        overcommit_request=overcommit,
        pending_reason="CardInsufficientMemory",
        overcommit_mib=overcommit_mib,
        pod_tries=(disable_control,),
        visible_mib=slice_mib,
        limit_bytes=slice_mib * 2**20,
        limit_env=env,
        preload_library="libvgpu.so",
        node_registration=NodeRegistration(
            annotation=REGISTER_ANNOTATION,
            resource="nvidia.com/gpu",
            slots_per_card=device_split_count,
            cards_per_node=cards_per_node,
        ),
        allocation_annotation=ALLOCATED_ANNOTATION,
        checks=tuple(checks),
        cards_per_node=cards_per_node,
        shared_card=shared_card,
        device_limit_env=(DEVICE_LIMIT_ENV,),
    )
