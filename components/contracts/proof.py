"""The contract between a sharing system and the proof: how a Pod asks for a slice, and what must follow.

Each sharing component (KAI, HAMi, GKE's own MPS and time-sharing) builds a `SharingProof`; the proof workloads
read only this, and the verifier only the Expectation built from it (compose/proof.py), so neither knows which
system they prove.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import pulumi

from components.incluster.checks.registry import CHECKS
from components.incluster.expectation import Mechanism, Monitor, NodeRegistration

CheckId = str
"""One of CHECK_IDS."""
CHECK_IDS: tuple[CheckId, ...] = tuple(check.id for check in CHECKS)
"""Derived from the check objects (components/incluster/checks/registry.py), the only list of checks."""


@dataclass(frozen=True)
class SliceRequest:
    """What a Pod carries to get a slice of one card from a sharing system."""

    scheduler_name: str
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, pulumi.Input[str]] = field(default_factory=dict)
    """Pod annotations: the system's ask (KAI's `gpu-memory`), and the pin to one card, known at `pulumi up`."""
    limits: Mapping[str, str] = field(default_factory=dict)
    """Container resource limits (`nvidia.com/gpumem`); empty for KAI, whose request is an annotation."""
    env: Mapping[str, str] = field(default_factory=dict)
    """Extra container env the platform needs (library paths on GKE)."""
    privileged: bool = False
    """Only for the GKE device-injection workaround; never a multi-tenant boundary."""
    node_selector: Mapping[str, str] = field(default_factory=dict)
    """Node labels the Pod selects (GKE's sharing labels)."""
    host_ipc: bool = False
    """Share the node's IPC namespace (GKE's MPS clients reach the MPS control daemon through it)."""
    containers: int = 1
    """Containers carrying `limits` each; GKE's sharing allows one `nvidia.com/gpu` per container."""
    runtime_class_name: str | None = None
    """A RuntimeClass the Pod names itself (any Pod may): the escape try's way to the nvidia runtime under CDI."""


@dataclass(frozen=True)
class PodTry:
    """A way around the quota that a Pod's own spec can take: the slice request with that change applied."""

    id: str
    """Short and DNS-safe: the try Pod is `<podPrefix>-try-<id>`."""
    tried: str
    """What the Pod does, in one sentence (the finding's `tried`)."""
    request: SliceRequest


@dataclass(frozen=True)
class SharedCard:
    """The one card of a multi-GPU node the proof Pods are pinned to: never card 0, so a Pod the mechanism left on
    the default card shows as misplaced instead of passing `same-gpu` with its neighbour."""

    index: int
    """Its NVML index on the node (what HAMi's register annotation calls `index`)."""
    node: str
    """The node whose card it is."""
    uuid: pulumi.Input[str]
    """Its UUID: read from the node at `pulumi up`, after the sharing system registered the node's cards."""
    pin_annotation: str
    """The Pod annotation that carries `uuid` and makes the scheduler place a Pod on that card only."""


@dataclass(frozen=True)
class SharingProof:
    """What one sharing system promises for a slice of `slice_mib` (and `cores_percent`), made checkable."""

    system: Literal["kai", "hami", "gke"]
    """Who schedules the slices: KAI, HAMi, or GKE's own device plugin (the node pool's gpu_sharing_config)."""
    mechanism: Mechanism
    """What enforces the slice: `hami-core` (KAI and HAMi both preload it), `mps`, `time-sharing`."""
    requests: Sequence[SliceRequest]
    """One request per proof Pod, in order (a, b)."""
    overcommit_request: SliceRequest | None
    """The Pod that must stay Pending, or None where the system has no per-card accounting to prove."""
    pending_reason: str | None
    """What the over-commit Pod's scheduling event must name (`CardInsufficientMemory`,
    `Insufficient nvidia.com/gpu`)."""
    visible_mib: int
    """What nvidia-smi / NVML must report inside a proof Pod."""
    limit_bytes: int
    """The memory quota in bytes: HAMi-core's (its OOM line's right-hand side), MPS's pinned limit, or the card."""
    limit_env: Mapping[str, str]
    """Env every proof Pod must see (`CUDA_DEVICE_MEMORY_LIMIT_0=4000m`)."""
    preload_library: str | None
    """The library `/etc/ld.so.preload` must list (`libvgpu.so`); None where nothing is preloaded."""
    monitor: Monitor | None = None
    node_registration: NodeRegistration | None = None
    """HAMi's: `hami.io/node-nvidia-register`, resource `nvidia.com/gpu`, 10 slots per card."""
    allocation_annotation: str | None = None
    """Pod annotation naming the card a Pod got (`hami.io/vgpu-devices-allocated`)."""
    checks: Sequence[CheckId] = ()
    """The checks this system's proof runs."""
    notes: Sequence[str] = ()
    """What the outputs must say about this proof (for example: privileged Pods are no tenant boundary)."""
    overcommit_mib: int | None = None
    """The over-commit Pod's memory request, which the proof checks is sized so only the slices keep it out."""
    overcommit_slots: int | None = None
    """GKE's sharing: the `nvidia.com/gpu` slots the over-commit Pod asks for, one more than the proof Pods
    leave on their node."""
    cores_percent: int | None = None
    """The compute share the mechanism sets by itself (MPS's active thread percentage); None: none, or the
    one verify.coresPercent asks for."""
    pod_tries: Sequence[PodTry] = ()
    """Ways around the quota that exist only at Pod creation, each tried in its own short-lived Pod."""
    cards_per_node: int = 1
    """Cards on each GPU node, as config states them."""
    shared_card: SharedCard | None = None
    """Where the node has several cards: the one every slice request (proof Pods, over-commit, tries) is pinned to."""
    device_limit_env: Sequence[str] = ()
    """The per-device memory-limit variables the mechanism injects into a one-card Pod on any card
    (`CUDA_DEVICE_MEMORY_LIMIT_0` under HAMi: indexed by the Pod's visible devices, not the node's)."""
