"""Platform gke: a GKE cluster on COS with one GPU pool, shared by KAI Scheduler with HAMi-core (the GKE lab) or by
GKE's own MPS or time-sharing."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import ClassVar, Literal

from pydantic import Field

from components.config.kubeconfig import ConfigError
from components.config.shared import MIN_LIMIT_MIB, Stack
from components.contracts.settings import Settings, key
from components.gke_sharing import GkeStrategy, mps_limits
from components.gpu.settings import (
    ChartSourceConfig,
    GkeCdiConfig,
    GkeSharingConfig,
    IsolatorConfig,
    KaiConfig,
)
from components.gpus import bundled_gpu_count, machine_gpu_problem, zone_gpu_problem
from components.platform.settings import GkeConfig
from components.sizing import kai_visible_mib

GkeSharing = Literal["kai", "mps", "time-sharing"]
"""Sharing systems on GKE: KAI with HAMi-core, or GKE's own MPS or time-sharing (the node pool's)."""
GKE_NATIVE: tuple[GkeStrategy, ...] = ("mps", "time-sharing")
"""Sharing that GKE's own device plugin does, set on the GPU node pool."""
KAI_RESERVATION_NAMESPACE = "kai-resource-reservation"
"""Where KAI v0.17.0 runs its reservation Pods: the chart's `global.resourceReservation.namespace`
(tests/facts/charts/kai-scheduler-v0.17.0.json), which the chart creates and kai.py leaves unchanged."""


class GkeChartSources(Settings):
    """The charts of the gke stack; one left unset comes from its public repository."""

    kai: ChartSourceConfig | None = None
    """The `kai-scheduler` chart."""
    isolator: ChartSourceConfig | None = None
    """The `kai-resource-isolator` chart."""
    kyverno: ChartSourceConfig | None = None
    """The `kyverno` chart."""


class GkeStack(Stack):
    """Platform gke: a GKE cluster on COS with one GPU pool, KAI Scheduler and HAMi-core (the GKE lab)."""

    platform: Literal["gke"]
    """Where Kubernetes comes from."""
    toolkit: Literal["gke-managed"] = "gke-managed"
    """Who provides the NVIDIA container toolkit: on GKE, GKE itself."""
    sharing: GkeSharing = "kai"
    """The GPU-sharing system."""
    gke: GkeConfig = Field(default_factory=GkeConfig)
    """The cluster and its GPU pool."""
    kai: KaiConfig = Field(default_factory=KaiConfig)
    """Sharing kai: KAI Scheduler."""
    isolator: IsolatorConfig = Field(default_factory=IsolatorConfig)
    """Sharing kai: kai-resource-isolator."""
    gke_cdi: GkeCdiConfig = Field(default_factory=GkeCdiConfig)
    """Sharing kai: the GKE/COS/CDI workarounds."""
    gke_sharing: GkeSharingConfig = Field(default_factory=GkeSharingConfig)
    """Sharing mps or time-sharing: how many Pods share each card of the GPU pool."""
    chart_sources: GkeChartSources = Field(default_factory=GkeChartSources)
    """Where each chart comes from."""

    CHOICE_SECTIONS: ClassVar[Mapping[str, Mapping[str, tuple[str, ...]]]] = {
        "sharing": {"kai": ("kai", "isolator", "gke_cdi"), "mps": ("gke_sharing",), "time-sharing": ("gke_sharing",)},
    }

    def chart_pins(self) -> dict[str, str]:
        if self.sharing != "kai":
            return {}
        pins = {"kai": self.kai.version, "isolator": self.isolator.version}
        return {**pins, "kyverno": self.gke_cdi.kyverno_version} if self.gke_cdi.kyverno else pins

    def namespaces(self) -> dict[str, str]:
        if self.sharing != "kai":
            return super().namespaces()
        spaces = {key("kai", "namespace"): self.kai.namespace, key("isolator", "namespace"): self.isolator.namespace}
        if self.gke_cdi.kyverno:
            spaces[key("gkeCdi", "kyvernoNamespace")] = self.gke_cdi.kyverno_namespace
        return {**spaces, **super().namespaces()}

    @property
    def slice_mib(self) -> int:
        if self.sharing == "mps":
            return mps_limits(self.card_mib, self.gke_sharing.max_shared_clients_per_gpu).pinned_mib
        if self.sharing == "time-sharing":
            return self.card_mib  # each Pod is handed the whole card, in turns
        return super().slice_mib

    @property
    def quota_mib(self) -> int:
        """Under KAI the request becomes a fraction of the card (two decimals), and HAMi-core enforces that."""
        if self.sharing == "kai":
            return kai_visible_mib(self.slice_mib, self.card_mib)
        return super().quota_mib

    @property
    def limit_mib(self) -> int | None:
        return None if self.sharing == "time-sharing" else self.quota_mib

    def check(self) -> None:
        check_one_card(self)
        check_machine(self)
        super().check()
        check_gke_native(self)
        check_kai_reservation(self)
        if self.guard.refuse_unprivileged_env:
            raise ConfigError(
                key("guard", "refuseUnprivilegedEnv"),
                "GKE's managed runtime has no NVIDIA toolkit to"
                " configure: remove it (`pulumi config rm --path gpushare:guard.refuseUnprivilegedEnv`)",
            )
        if self.sharing == "kai" and self.verify.cores_percent is not None:
            raise ConfigError(
                key("verify", "coresPercent"),
                "KAI's gpu-memory request carries no compute share, so there is no compute limit to "
                "prove; remove it (compute-limited is a HAMi check)",
            )


SEVERAL_CARDS_WHY: dict[GkeSharing, str] = {
    # KAI-Scheduler v0.17.0 pkg/scheduler/gpu_sharing/gpuSharing.go:77 (a new gpu-group is a fresh UUID, no card),
    # pkg/resourcereservation/discovery/discovery.go:38 (the card is what the reservation Pod's NVML finds), and
    # pkg/binder/plugins/gpusharing/gpu_sharing.go:73 (NVIDIA_VISIBLE_DEVICES names it, which GKE's `runc` handler
    # ignores); components/gpu/gke_cdi.py's policy mutates at admission, before the binder knows that card.
    "kai": "KAI puts a fraction on whichever card its reservation Pod is given, and no Pod annotation chooses "
    "one; the gkeCdi device policy mounts the devices at admission, before that card is known, so a "
    "privileged Pod would compute on card 0 whatever KAI gave it",
    # container-engine-accelerators pkg/gpu/nvidia/manager.go:195 (slots nvidiaN/vgpuM of every card) and
    # beta_plugin.go:100 (no GetPreferredAllocation): the kubelet picks any free slot, on any card.
    "mps": "GKE's device plugin hands each Pod any free nvidiaN/vgpuM slot the kubelet picks, and no Pod "
    "setting chooses the card, so two Pods share one card only by chance",
    "time-sharing": "GKE's device plugin hands each Pod any free nvidiaN/vgpuM slot the kubelet picks, and no "
    "Pod setting chooses the card, so two Pods share one card only by chance",
}
"""Why a GKE sharing system cannot pin the proof's two Pods to one card of a node that has several."""


def check_one_card(cfg: GkeStack) -> None:
    """Every GKE sharing proves one card per node: a pool whose nodes carry several is refused with the reason."""
    carried = bundled_gpu_count(cfg.gke.machine_type)
    cards = carried if carried is not None else cfg.gpu.per_node
    if cards <= 1:
        return
    where = key("gpu", "perNode") if carried is None else key("gke", "machineType")
    shown = f"{cards} cards per node" if carried is None else f"{cfg.gke.machine_type} carries {cards} cards"
    raise ConfigError(
        where,
        f"{shown}: under sharing {cfg.sharing} the proof cannot pin its two Pods to one card "
        f"({SEVERAL_CARDS_WHY[cfg.sharing]}); use one card per node (n1-* with gpu.perNode 1, "
        "g2-standard-4 … -16, g4-standard-48, a2-highgpu-1g) and more nodes "
        "(gpushare:gke.nodeCount)",
    )


def check_machine(cfg: GkeStack) -> None:
    """The card on the pool's machine type, in the pool's zone, as GCE would take it (components/gpus.py's tables)."""
    problem = machine_gpu_problem(cfg.gke.machine_type, cfg.gpu.type, cfg.gpu.per_node)
    if problem is not None:
        where, why = problem
        raise ConfigError(key("gke", "machineType") if where == "machineType" else key(*where.split(".")), why)
    zone_problem = zone_gpu_problem(cfg.gke.zone, cfg.gpu.type) if cfg.gpu.zone_check else None
    if zone_problem is not None:
        raise ConfigError(key("gke", "zone"), zone_problem)


def check_kai_reservation(cfg: GkeStack) -> None:
    """KAI's chart owns its reservation namespace: a namespace of the stack there would be deleted under KAI."""
    if cfg.sharing != "kai":
        return
    for full_key, namespace in cfg.namespaces().items():
        if namespace == KAI_RESERVATION_NAMESPACE:
            raise ConfigError(
                full_key,
                f"{namespace} is KAI Scheduler's own namespace for its reservation Pods (the "
                "chart's global.resourceReservation.namespace); give this one a namespace of "
                "its own such as gpushare-proof",
            )


def check_gke_native(cfg: GkeStack) -> None:
    """GKE's own sharing fixes the slice itself: refuse the verify settings that contradict it, with what works."""
    if cfg.sharing not in GKE_NATIVE or not cfg.verify.enabled:
        return  # with the proof off nothing asks for memory: any client count GKE takes is fine
    clients, v = cfg.gke_sharing.max_shared_clients_per_gpu, cfg.verify
    if cfg.sharing == "mps":
        limits = mps_limits(cfg.card_mib, clients)
        if limits.pinned_mib < MIN_LIMIT_MIB:
            fix = (
                f"set {key('gkeSharing', 'maxSharedClientsPerGpu')} to {max(2, cfg.card_mib // MIN_LIMIT_MIB)}"
                if cfg.card_mib >= 2 * MIN_LIMIT_MIB
                else f"the proof needs a card of {2 * MIN_LIMIT_MIB} MiB"
            )
            where = (
                key("gkeSharing", "maxSharedClientsPerGpu")
                if cfg.card_mib >= 2 * MIN_LIMIT_MIB
                else key("gpu", "memoryMiB")
            )
            raise ConfigError(
                where,
                f"MPS would give each of {clients} clients {limits.pinned_mib} MiB of the "
                f"{cfg.card_mib} MiB card, too little to hold memory and show a refusal; {fix}",
            )
        if v.slice_mib is not None and v.slice_mib != limits.pinned_mib:
            raise ConfigError(
                key("verify", "sliceMiB"),
                f"{v.slice_mib} MiB: MPS slices are equal, the card's "
                f"{cfg.card_mib} MiB over {clients} clients; set it to {limits.pinned_mib} or leave it "
                "unset (or change gkeSharing.maxSharedClientsPerGpu)",
            )
        if v.cores_percent is not None and v.cores_percent != limits.thread_percentage:
            raise ConfigError(
                key("verify", "coresPercent"),
                f"{v.cores_percent}%: MPS gives each of {clients} "
                f"clients {limits.thread_percentage}% of the threads; set it to "
                f"{limits.thread_percentage} or leave it unset",
            )
        hold, extra = round(cfg.hold_gib * 1024), round(cfg.extra_gib * 1024)
        if hold >= limits.pinned_mib:
            raise ConfigError(
                key("verify", "holdGiB"),
                f"{cfg.hold_gib:g} GiB does not fit under MPS's "
                f"{limits.pinned_mib} MiB limit; set it below {limits.pinned_mib / 1024:.2f} or leave "
                "it unset",
            )
        if hold + extra <= limits.pinned_mib:
            raise ConfigError(
                key("verify", "extraGiB"),
                f"{cfg.hold_gib:g} GiB held + {cfg.extra_gib:g} GiB more "
                f"fits under MPS's {limits.pinned_mib} MiB limit, so nothing would be refused; set it "
                f"above {(limits.pinned_mib - hold) / 1024:.2f} or leave it unset",
            )
    else:
        for name, value in (("sliceMiB", v.slice_mib), ("coresPercent", v.cores_percent)):
            if value is not None:
                raise ConfigError(
                    key("verify", name),
                    "time-sharing hands each Pod the whole card with no memory "
                    "or compute limit, so there is none to ask for; remove it",
                )
        if round(cfg.hold_gib * 1024) > cfg.card_mib:
            raise ConfigError(
                key("verify", "holdGiB"),
                f"{cfg.hold_gib:g} GiB is more than the whole card "
                f"({cfg.card_mib} MiB on {cfg.gpu_type}), which is all a time-shared Pod can get; set it "
                f"to at most {math.floor(cfg.card_mib / 1024 * 100) / 100:.2f} or leave it unset",
            )
    if v.overcommit_mib is not None:
        raise ConfigError(
            key("verify", "overcommitMiB"),
            f"GKE's {cfg.sharing} counts Pods, not MiB: the "
            f"over-commit Pod asks for one slot more than the {clients} × {cfg.gpu.per_node} slots of "
            "its node leave free; remove it",
        )
