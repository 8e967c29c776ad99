"""What every platform variant has: the cards, the registry mirrors, the chart sources and the proof, and the
checks across sections that hold on every platform."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import ClassVar

from pydantic import Field

from components.chart_images import CHARTS, ChartImages
from components.config.kubeconfig import ConfigError, project_dir
from components.contracts.guard import GuardSettings
from components.contracts.settings import (
    SYSTEM_NAMESPACES,
    Accelerator,
    Count,
    Registry,
    Settings,
    Text,
    alias,
    key,
)
from components.gpu.settings import ChartSourceConfig, HamiConfig
from components.gpus import GPU_MODELS, context_mib, gpu_memory_mib
from components.images import (
    DOCKER_HUB,
    Mirrors,
    is_registry_host,
    mirror_prefix_problem,
    registry_host_problem,
    upstream_host,
)
from components.incluster.checks.compute import BAND_POINTS, UNLIMITED_POINTS, highest_shown
from components.sizing import (
    default_extra_gib,
    default_hold_gib,
    default_slice_mib,
    default_sweep_gib,
    overcommit_is_valid,
    overcommit_mib,
    remaining_mib,
)
from components.validate import file_problem, quoted, registry_port_problem
from components.verify.settings import VerifyConfig
from components.versions import kubernetes_release

MAX_CARD_MIB = 256 * 1024
"""More memory than any GPU has (a B200 has 180 GB): a figure above it is a typo, not a card."""
MIN_LIMIT_MIB = 1024
"""The smallest memory limit the proof can show: a CUDA context alone takes a few hundred MiB, then the hold."""


class GpuConfig(Settings):
    """The cards of the GPU nodes: one description per stack, whatever the platform."""

    type: Accelerator = "nvidia-tesla-t4"
    """The cards' accelerator type (GCE `acceleratorType`), or their model key in the GPU table."""
    memory_mib: Count | None = Field(None, gt=0, le=MAX_CARD_MIB)
    """MiB nvidia-smi reports per card (at most 262144, more than any GPU has); unset takes it from the GPU table."""
    per_node: Count = Field(1, ge=1, le=16)
    """Cards on each GPU node; above 1, HAMi's proof Pods share card 1 (its UUID read from the node at `pulumi up`),
    and GKE's sharing systems refuse it (docs/stacks.md, "Several cards per node")."""
    zone_check: bool = True
    """Refuse a GCE zone that components/gpus.py's zone table says lacks the card; false trusts the zone given."""


class HostGpuConfig(GpuConfig):
    """The cards of a one-node k3s cluster (the k3s lab's one RTX PRO 6000 Blackwell by default)."""

    type: Accelerator = "nvidia-rtx-pro-6000"
    """The cards' accelerator type, or their model key in the GPU table."""


class Stack(Settings):
    """What every variant has: the cards, an optional registry mirror, and the proof."""

    gpu: GpuConfig = Field(default_factory=GpuConfig)
    """The cards of the GPU nodes."""
    image_registry: Registry | None = None
    """One mirror for every upstream registry that `registryMirrors` does not name (the host kept as a path segment)."""
    registry_mirrors: dict[Text, Text] = Field(default_factory=dict)
    """Upstream registry host → mirror, such as `{"docker.io": "harbor.example.com/dockerhub"}`."""
    verify: VerifyConfig = Field(default_factory=VerifyConfig)
    """The proof and its verifier."""
    guard: GuardSettings = GuardSettings()
    """Which new Pods the API server refuses for opting out of their quota (components/gpu/guard.py)."""

    CHOICE_SECTIONS: ClassVar[Mapping[str, Mapping[str, tuple[str, ...]]]] = {}
    """choice field → its value → the sections only that value reads; set for another value, they are refused."""

    @property
    def mirrors(self) -> Mirrors:
        """Where every image is pulled from (Docker Hub's aliases and any spelling are one upstream)."""
        return Mirrors(
            by_host={upstream_host(h): p for h, p in self.registry_mirrors.items()}, default=self.image_registry or None
        )

    def chart_pins(self) -> dict[str, str]:
        """chartSources key → the chart version this stack pins (the charts it installs)."""
        return {}

    def namespaces(self) -> dict[str, str]:
        """Full key → the namespace it names, for every namespace this stack puts something in."""
        return {key("verify", "namespace"): self.verify.namespace} if self.verify.enabled else {}

    @property
    def gpu_type(self) -> str:
        return self.gpu.type

    @property
    def card_mib(self) -> int:
        """Memory of one card as nvidia-smi reports it."""
        return gpu_memory_mib(self.gpu.type, self.gpu.memory_mib)

    @property
    def context_mib(self) -> int:
        """What one proof process's CUDA context takes of its quota on the planned card (the GPU table)."""
        return context_mib(self.gpu.type)

    @property
    def slice_mib(self) -> int:
        return self.verify.slice_mib or default_slice_mib(self.card_mib)

    @property
    def overcommit_mib(self) -> int:
        return self.verify.overcommit_mib or overcommit_mib(self.card_mib, self.slice_mib)

    @property
    def quota_mib(self) -> int:
        """What HAMi-core enforces in each proof Pod: the slice itself, unless the scheduler rounds it."""
        return self.slice_mib

    @property
    def limit_mib(self) -> int | None:
        """The memory limit the proof's numbers are sized against; None where nothing limits memory."""
        return self.quota_mib

    @property
    def hold_gib(self) -> float:
        """What each proof Pod holds: as set, else 3 GiB, or half the limit where that is less."""
        if self.verify.hold_gib is not None:
            return self.verify.hold_gib
        return default_hold_gib(self.limit_mib, self.context_mib)

    @property
    def extra_gib(self) -> float:
        """What it then asks for on top: as set, else enough to pass the limit."""
        if self.verify.extra_gib is not None:
            return self.verify.extra_gib
        return default_extra_gib(self.limit_mib, round(self.hold_gib * 1024))

    @property
    def sweep_gib(self) -> tuple[float, ...]:
        """Sizes tried one by one: as set, else the usual ones and, where none passes the limit, two that do."""
        return tuple(self.verify.sweep_gib) if self.verify.sweep_gib is not None else default_sweep_gib(self.limit_mib)

    def check(self) -> None:
        """The checks that need more than one key; each raises ConfigError naming the key that must change."""
        check_choice_sections(self)
        check_gpu(self)
        check_slices(self)
        check_proof_numbers(self)
        check_compute_share(self)
        check_namespaces(self)
        check_mirrors(self)
        check_chart_sources(self)
        check_image_tables(self)


CHART_NAMES = {
    "hami": "hami",
    "gpu_operator": "gpu-operator",
    "kai": "kai-scheduler",
    "isolator": "kai-resource-isolator",
    "kyverno": "kyverno",
}
"""Each chartSources key's chart, as its Chart.yaml names it."""
VERSION_KEYS = {
    "hami": ("hami", "version"),
    "gpu_operator": ("gpuOperator", "version"),
    "kai": ("kai", "version"),
    "isolator": ("isolator", "version"),
    "kyverno": ("gkeCdi", "kyvernoVersion"),
}
"""Each chartSources key's pinned-version key."""


class HamiChartSources(Settings):
    """The chart of a k3s stack; unset, it comes from its public repository."""

    hami: ChartSourceConfig | None = None
    """The `hami` chart."""


def check_choice_sections(cfg: Stack) -> None:
    """A section only another choice reads (say `gpuOperator` with `toolkit: host`) is a leftover: refused."""
    for choice, sections_by_value in cfg.CHOICE_SECTIONS.items():
        chosen = getattr(cfg, choice)
        for value, sections in sections_by_value.items():
            if value == chosen:
                continue
            for section in sections:
                if section in cfg.model_fields_set and section not in sections_by_value.get(chosen, ()):
                    raise ConfigError(
                        key(alias(section)),
                        f"is read only with {choice} {value}, not {chosen}; remove it "
                        f"(`pulumi config rm {key(alias(section))}`) or set {key(choice)} to {value}",
                    )


def check_gpu(cfg: Stack) -> None:
    if cfg.gpu.memory_mib is None and cfg.gpu.type not in GPU_MODELS:
        raise ConfigError(
            key("gpu", "memoryMiB"),
            f"GPU type {quoted(cfg.gpu.type)} is not in the GPU table ({', '.join(sorted(GPU_MODELS))}); set "
            "gpushare:gpu.memoryMiB to what nvidia-smi reports",
        )


def _at_most(mib: int) -> str:
    """GiB rounded down, so the figure offered never passes the limit it names."""
    return f"{math.floor(mib / 1024 * 100) / 100:.2f}"


def check_slices(cfg: Stack) -> None:
    if getattr(cfg, "sharing", None) in ("mps", "time-sharing") or not cfg.verify.enabled:
        return  # GKE sets the slice from the clients per card (gke.check_gke_native); no proof, no slices
    card, slice_mib = cfg.card_mib, cfg.slice_mib
    if card < 2 * MIN_LIMIT_MIB:
        raise ConfigError(
            key("gpu", "memoryMiB"),
            f"a {card} MiB card cannot hold two proof slices of at least {MIN_LIMIT_MIB} MiB; the "
            f"proof needs a card of {2 * MIN_LIMIT_MIB} MiB or more",
        )
    if slice_mib > card:
        raise ConfigError(
            key("verify", "sliceMiB"),
            f"{slice_mib} MiB is larger than the card ({card} MiB on {cfg.gpu_type}); set it below {card // 2}",
        )
    if 2 * slice_mib > card:
        raise ConfigError(
            key("verify", "sliceMiB"),
            f"two slices of {slice_mib} MiB do not fit one {card} MiB card, so the Pods cannot share "
            f"it; set it to at most {card // 2}",
        )
    if cfg.quota_mib < MIN_LIMIT_MIB:
        raise ConfigError(
            key("verify", "sliceMiB"),
            f"{slice_mib} MiB gives each proof Pod a quota of {cfg.quota_mib} MiB, too small to hold "
            f"memory beside a CUDA context and show a refusal; set it between {least_slice_mib(cfg)} "
            f"and {card // 2}",
        )
    if cfg.verify.overcommit_mib is not None and not overcommit_is_valid(card, slice_mib, cfg.overcommit_mib):
        left = remaining_mib(card, slice_mib)
        raise ConfigError(
            key("verify", "overcommitMiB"),
            f"{cfg.overcommit_mib} MiB must be above what two slices leave ({left} MiB) and at most the "
            f"card ({card} MiB), or the Pod is not proof of per-card accounting; leave it unset to "
            "compute it",
        )


def least_slice_mib(cfg: Stack) -> int:
    """The smallest slice (in 100 MiB steps) whose quota, as this stack's scheduler rounds it, holds the proof."""
    for slice_mib in range(MIN_LIMIT_MIB, cfg.card_mib // 2 + 1, 100):
        trial = cfg.model_copy(update={"verify": cfg.verify.model_copy(update={"slice_mib": slice_mib})})
        if trial.quota_mib >= MIN_LIMIT_MIB:
            return slice_mib
    return cfg.card_mib // 2


def check_proof_numbers(cfg: Stack) -> None:
    """The proof's own numbers against the quota: the hold fits it, and the hold plus the extra does not."""
    if getattr(cfg, "sharing", None) in ("mps", "time-sharing") or not cfg.verify.enabled:
        return  # GKE's own sharing: checked in gke.check_gke_native; with the proof off no numbers are used
    quota = cfg.quota_mib
    hold, extra = round(cfg.hold_gib * 1024), round(cfg.extra_gib * 1024)
    room = quota - cfg.context_mib  # HAMi-core charges the context to the quota before the hold
    if hold > room:
        raise ConfigError(
            key("verify", "holdGiB"),
            f"{cfg.hold_gib:g} GiB ({hold} MiB) does not fit each proof Pod's {quota} MiB quota beside the "
            f"{cfg.context_mib} MiB CUDA context of a {cfg.gpu_type} card, so the hold itself would be refused; "
            f"set it to at most {_at_most(max(room, 0))} or leave it unset",
        )
    if not any(size * 1024 > quota for size in cfg.sweep_gib):
        raise ConfigError(
            key("verify", "sweepGiB"),
            f"no size above the {quota} MiB quota ({quota / 1024:.2f} GiB), so the sweep cannot show "
            f"the quota hold; add one such as {quota // 1024 + 1}, or leave it unset",
        )
    if hold + extra <= quota:
        raise ConfigError(
            key("verify", "extraGiB"),
            f"the hold ({hold} MiB) plus {cfg.extra_gib:g} GiB ({extra} MiB) still fits the {quota} MiB "
            f"quota, so nothing would be refused; set it above {(quota - hold) / 1024:.2f} or leave it "
            "unset",
        )


def check_compute_share(cfg: Stack) -> None:
    """A compute share the proof can tell from none: in a cluster only Pod A computes, and the limiter lets one Pod
    alone run up to its ask plus the overshoot measured on the H200 (components/incluster/checks/compute.py)."""
    cores = cfg.verify.cores_percent
    if cores is None or not cfg.verify.enabled or cores <= highest_shown("alone"):
        return
    band, unlimited = BAND_POINTS["alone"] / 100, UNLIMITED_POINTS["alone"] / 100
    raise ConfigError(
        key("verify", "coresPercent"),
        f"{cores}%: the limiter lets a Pod run up to {band:.2f} above its ask (the H200), so at"
        f" {cores / 100:.2f} it cannot be told from a Pod with no limit ({unlimited:.2f}); set it to at"
        f" most {highest_shown('alone')} or leave it unset",
    )


def check_namespaces(cfg: Stack) -> None:
    """A namespace the stack creates is its own: never the cluster's, never created twice."""
    seen: dict[str, str] = {}
    proof = key("verify", "namespace")
    for full_key, namespace in cfg.namespaces().items():
        if namespace in SYSTEM_NAMESPACES:
            if full_key == proof:
                raise ConfigError(
                    full_key,
                    f"{namespace} is the cluster's own namespace; the proof's namespace is "
                    "created and deleted with the stack, so give it one of its own such as "
                    "gpushare-proof",
                )
            continue  # a release goes into kube-system or default; the stack neither creates nor deletes them
        if namespace in seen:
            raise ConfigError(
                full_key,
                f"{namespace} is also {seen[namespace]}; each creates and deletes its "
                "namespace, so two would claim one: give this one a namespace of its own",
            )
        seen[namespace] = full_key


def check_mirrors(cfg: Stack) -> None:
    upstreams: dict[str, str] = {}
    used = image_hosts(cfg)
    for host, prefix in cfg.registry_mirrors.items():
        full_key = f"{key('registryMirrors')}[{json.dumps(host)}]"  # a map entry, as --path takes it
        problem = (
            registry_host_problem(host)
            or mirror_prefix_problem(prefix)
            or registry_port_problem(host)
            or registry_port_problem(prefix.split("/")[0])
        )
        if problem:
            raise ConfigError(full_key, problem)
        upstream = upstream_host(host)
        if upstream in upstreams:
            raise ConfigError(full_key, f"{host} and {upstreams[upstream]} are one upstream ({upstream}); keep one")
        upstreams[upstream] = host
        if upstream not in used:
            raise ConfigError(
                full_key,
                f"no image of this stack comes from {upstream} (they come from "
                f"{', '.join(sorted(used))}); remove it or correct the host",
            )


def image_hosts(cfg: Stack) -> set[str]:
    """Every upstream registry an image of this stack may come from: the proof's images and the charts'."""
    hosts = {_upstream_of(cfg.verify.probe_image), _upstream_of(cfg.verify.smi_image)}
    for name, version in cfg.chart_pins().items():
        chart = CHARTS.get((CHART_NAMES[name], version))
        if chart is not None:
            hosts |= chart_hosts(chart, getattr(cfg, name, None))
    return hosts


def _upstream_of(reference: str) -> str:
    """The upstream registry an image reference names; Docker Hub where its first segment is no host."""
    first, _, rest = reference.partition("/")
    return upstream_host(first) if rest and is_registry_host(first) else DOCKER_HUB


def chart_hosts(chart: ChartImages, section: object = None) -> set[str]:
    """The registries the chart's images come from; HAMi's kube-scheduler from `hami.schedulerImage`."""
    found: set[str] = set()
    for image in chart.images:
        location = image.location_default or image.location_fallback if image.location is not None else None
        text = f"{location}/{image.name_default}" if location else image.name_default
        if chart.chart == "hami" and image.role == "kube-scheduler":
            text = getattr(section, "scheduler_image", text)
        found.add(_upstream_of(text))
    return found


def check_image_tables(cfg: Stack) -> None:
    """A chart version the image table lacks: its images could be neither listed in `images` nor mirrored."""
    for name, version in cfg.chart_pins().items():
        chart = CHART_NAMES[name]
        if (chart, version) in CHARTS:
            continue
        known = sorted(v for c, v in CHARTS if c == chart)
        raise ConfigError(
            key(*VERSION_KEYS[name]),
            f"{chart} {version} is not in the chart image table (components/chart_images.py knows "
            f"{', '.join(known)}), so its images could be neither listed nor mirrored; use {known[-1]}",
        )


def check_chart_sources(cfg: Stack) -> None:
    """A source for a chart the stack installs; a local chart must be the chart and version the stack pins."""
    import yaml  # here: only a local chart needs it

    sources = getattr(cfg, "chart_sources", None)
    pins = cfg.chart_pins()
    if sources is not None:
        for name in sorted(sources.model_fields_set):
            if getattr(sources, name) is not None and name not in pins:
                raise ConfigError(
                    key("chartSources", alias(name)),
                    f"this stack does not install the {CHART_NAMES[name]} chart with these settings; "
                    f"remove it (`pulumi config rm --path {key('chartSources', alias(name))}`)",
                )
    for name, version in pins.items():
        source = getattr(sources, name, None)
        if source is None or source.path is None:
            continue
        full_key = key("chartSources", alias(name), "path")
        directory = Path(source.path).expanduser()
        # Relative to the project directory, where `pulumi up` runs the program and Helm resolves the path.
        chart_file = (directory if directory.is_absolute() else project_dir() / directory) / "Chart.yaml"
        problem = file_problem(chart_file)
        if problem is not None:
            raise ConfigError(
                full_key,
                f"{quoted(str(chart_file))}: {problem}; unpack the chart there with `helm "
                f"pull --untar --version {version}`",
            )
        try:
            meta = yaml.safe_load(chart_file.read_bytes().decode("utf-8"))
        except (UnicodeDecodeError, yaml.YAMLError, OSError):
            meta = None
        if not isinstance(meta, dict):
            raise ConfigError(
                full_key,
                f"{chart_file} is not a chart's Chart.yaml (not a YAML mapping); unpack the "
                f"chart there with `helm pull --untar --version {version}`",
            )
        found = (str(meta.get("name")), str(meta.get("version")))
        if found[0] != CHART_NAMES[name] or found[1].lstrip("v") != version.lstrip("v"):
            raise ConfigError(
                full_key,
                f"{chart_file} is {found[0]} {found[1]}, but this stack pins "
                f"{CHART_NAMES[name]} {version}; unpack that version there",
            )


def check_hami(
    cfg: Stack, hami: HamiConfig, server_version: str, server_version_key: str, *, cdi_enabled: bool
) -> None:
    """HAMi's own numbers: room for the proof's three Pods, a scheduler tag the server runs, the right runtime."""
    placed = 3  # both slices and the over-commit Pod, which must be refused for memory, not for a slot
    if hami.device_split_count < placed:
        raise ConfigError(
            key("hami", "deviceSplitCount"),
            f"{hami.device_split_count} slots per card, but the proof places {placed} Pods on one card "
            "(two slices and the over-commit Pod, which must be refused for memory, not for a slot); "
            f"set it to at least {placed}",
        )
    if hami.scheduler_image_tag is not None:
        wanted = kubernetes_release(server_version)
        if hami.scheduler_image_tag != wanted:
            raise ConfigError(
                key("hami", "schedulerImageTag"),
                f"{quoted(hami.scheduler_image_tag)} does not match the server version {server_version} "
                f"({server_version_key}); HAMi's kube-scheduler must run {wanted}: set it to {wanted} "
                "or leave it unset",
            )
    if hami.runtime_class_name == "nvidia" and cdi_enabled:
        raise ConfigError(
            key("hami", "runtimeClassName"),
            "'nvidia' under a GPU Operator with CDI on makes HAMi's Pods fail with `unresolvable CDI "
            "devices`; use nvidia-legacy or leave it unset",
        )
    if hami.runtime_class_name == "nvidia-legacy" and not cdi_enabled:
        raise ConfigError(
            key("hami", "runtimeClassName"),
            "nvidia-legacy exists only while the GPU Operator's CDI is on; leave it unset",
        )
