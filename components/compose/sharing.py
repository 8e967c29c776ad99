"""Config → what makes GPUs shareable: KAI Scheduler + HAMi-core or GKE's own MPS / time-sharing on GKE, or HAMi,
and the proof each owes."""

from __future__ import annotations

from collections.abc import Sequence

import pulumi

from components.config import ExistingStack, GkeStack, K3sStack, StackConfig
from components.contracts.cluster import ClusterFacts
from components.contracts.sharing import SharingSetup, ToolkitFacts
from components.gke_sharing import GkeStrategy
from components.gpu.gke_cdi import KAI_RESERVATION_NAMESPACE, GkeCdiWorkarounds, GkeCdiWorkaroundsArgs
from components.gpu.gke_native import native_proof
from components.gpu.hami import Hami, HamiArgs, hami_proof, runtime_class_for
from components.gpu.isolator import ResourceIsolator, ResourceIsolatorArgs
from components.gpu.kai import KaiScheduler, KaiSchedulerArgs
from components.gpu.kai_sharing import kai_proof
from components.images import mirrored
from components.versions import kubernetes_release


def sharing(cfg: StackConfig, cluster: ClusterFacts, toolkit: ToolkitFacts) -> SharingSetup:
    """The sharing system `cfg.sharing` names, installed on the cluster, with its proof contract."""
    match cfg:
        case GkeStack(sharing="kai"):
            return kai_sharing(cfg, cluster, toolkit)
        case GkeStack():
            return gke_native_sharing(cfg, cluster, toolkit)
        case K3sStack() | ExistingStack():
            return hami_sharing(cfg, cluster, toolkit)


# --- KAI on GKE ------------------------------------------------------------------------------------------


def kai_scheduler_args(cfg: GkeStack, ready: Sequence[pulumi.Resource]) -> KaiSchedulerArgs:
    gate_image = mirrored(cfg.verify.probe_image, cfg.mirrors)
    return KaiSchedulerArgs(
        settings=cfg.kai,
        stack=pulumi.get_stack(),
        ready=tuple(ready),
        gate_image=gate_image,
        mirrors=cfg.mirrors,
        chart_source=cfg.chart_sources.kai,
    )


def isolator_args(cfg: GkeStack, ready: Sequence[pulumi.Resource]) -> ResourceIsolatorArgs:
    return ResourceIsolatorArgs(
        settings=cfg.isolator, ready=tuple(ready), mirrors=cfg.mirrors, chart_source=cfg.chart_sources.isolator
    )


def gke_cdi_args(cfg: GkeStack, ready: Sequence[pulumi.Resource]) -> GkeCdiWorkaroundsArgs:
    return GkeCdiWorkaroundsArgs(
        settings=cfg.gke_cdi,
        reservation_namespace=KAI_RESERVATION_NAMESPACE,
        ready=tuple(ready),
        mirrors=cfg.mirrors,
        kyverno_source=cfg.chart_sources.kyverno,
    )


def kai_sharing(cfg: GkeStack, cluster: ClusterFacts, toolkit: ToolkitFacts) -> SharingSetup:
    """The workarounds, KAI and the isolator on the cluster's provider, and the KAI proof."""
    opts = cluster.options()
    after = [*cluster.ready, *toolkit.ready]
    workarounds = GkeCdiWorkarounds("gke-cdi", gke_cdi_args(cfg, after), opts)
    scheduler = KaiScheduler("kai", kai_scheduler_args(cfg, after), opts)
    hami_core = ResourceIsolator("isolator", isolator_args(cfg, after), opts)
    proof = kai_proof(cfg.kai.queue, cfg.slice_mib, cluster.gpu.memory_mib, hami_core.monitor)
    return SharingSetup(
        proof=proof,
        ready=[*scheduler.ready, hami_core.release, *workarounds.ready],
        outputs={"kaiQueue": cfg.kai.queue, "sliceVisibleMiB": proof.visible_mib},
        images=sorted({*scheduler.images, *hami_core.images, *workarounds.images}),
    )


# --- GKE's own MPS or time-sharing -----------------------------------------------------------------------


def gke_native_sharing(cfg: GkeStack, cluster: ClusterFacts, toolkit: ToolkitFacts) -> SharingSetup:
    """Nothing to install (the node pool's gpu_sharing_config shares the cards): the proof GKE's sharing owes."""
    strategy: GkeStrategy = "mps" if cfg.sharing == "mps" else "time-sharing"
    clients = cfg.gke_sharing.max_shared_clients_per_gpu
    proof = native_proof(strategy, clients, cluster.gpu.memory_mib, cluster.gpu.per_node)
    outputs: dict[str, object] = {"gpuSharingStrategy": strategy, "maxSharedClientsPerGpu": clients}
    if proof.mechanism == "mps":
        outputs["mpsLimitEnv"] = dict(proof.limit_env)
    return SharingSetup(proof=proof, ready=[*cluster.ready, *toolkit.ready], outputs=outputs)


# --- HAMi ------------------------------------------------------------------------------------------------


def hami_args(cfg: K3sStack | ExistingStack, cluster: ClusterFacts, toolkit: ToolkitFacts) -> HamiArgs:
    return HamiArgs(
        settings=cfg.hami,
        stack=pulumi.get_stack(),
        # Unpinned, the chart takes the tag from the server; config's version names it in `images`.
        server_version=kubernetes_release(cfg.server_version),
        server_git_version=cfg.server_version,
        server_version_key=f"gpushare:{cfg.server_version_key}",
        gate_image=mirrored(cfg.verify.probe_image, cfg.mirrors),
        runtime_class_name=runtime_class_for(toolkit.cdi_enabled, cfg.hami.runtime_class_name),
        mirrors=cfg.mirrors,
        chart_source=cfg.chart_sources.hami,
        ready=[*cluster.ready, *cluster.labels_ready, *toolkit.ready],  # its device plugin selects the labels
        # HAMi's device plugin passes its cards as mounts then (its getAllocateResponse, volume-mounts strategy).
        device_list_strategy="volume-mounts" if cfg.guard.refuse_unprivileged_env else None,
        cards_per_node=cluster.gpu.per_node,
        proof_node=proof_node(cfg) if cfg.verify.enabled else None,  # no proof, no card to read
    )


def proof_node(cfg: K3sStack | ExistingStack) -> str:
    """The node the proof Pods share a card of: k3s's one node, or the first GPU node config names."""
    return cfg.k3s.node_name if isinstance(cfg, K3sStack) else cfg.cluster.gpu_nodes[0]


def hami_sharing(cfg: K3sStack | ExistingStack, cluster: ClusterFacts, toolkit: ToolkitFacts) -> SharingSetup:
    """HAMi at `hami.version`, its scheduler tag the server's (or the pin), and its proof contract."""
    args = hami_args(cfg, cluster, toolkit)
    component = Hami("hami", args, cluster.options())
    proof = hami_proof(
        cfg.slice_mib,
        cfg.overcommit_mib,
        cfg.verify.cores_percent,
        cfg.hami.device_split_count,
        cluster.gpu.per_node,
        component.shared_card,
    )
    return SharingSetup(
        proof=proof,
        ready=[component.release],
        outputs={
            "hamiVersion": cfg.hami.version,
            "schedulerImageTag": cfg.hami.scheduler_image_tag or args.server_version,
        },
        images=component.images,
    )
