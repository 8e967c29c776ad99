"""The contract between a sharing system and the proof: how a Pod asks for a slice, and what must follow.

Each sharing component (KAI, HAMi) builds a `SharingProof`; the proof workloads and the verifier read only
this, so neither knows which system they prove.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from components.incluster.checks import CHECKS
from components.incluster.expectation import Mechanism

CheckId = str
"""One of CHECK_IDS."""
CHECK_IDS: tuple[CheckId, ...] = tuple(check.id for check in CHECKS)
"""Derived from the check objects (components/incluster/checks.py), the only list of checks."""


@dataclass(frozen=True)
class SliceRequest:
    """What a Pod carries to get a slice of one card from a sharing system."""

    scheduler_name: str
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    limits: Mapping[str, str] = field(default_factory=dict)
    """Container resource limits (`nvidia.com/gpumem`); empty for KAI, whose request is an annotation."""
    env: Mapping[str, str] = field(default_factory=dict)
    """Extra container env the platform needs (library paths on GKE)."""
    privileged: bool = False
    """Only for the GKE device-injection workaround; never a multi-tenant boundary."""


@dataclass(frozen=True)
class MonitorTarget:
    """A per-node metrics endpoint the verifier reads through the API server's Pod proxy."""

    namespace: str
    label_selector: str
    port: int
    path: str = "/metrics"


@dataclass(frozen=True)
class SharingProof:
    """What one sharing system promises for a slice of `slice_mib` (and `cores_percent`), made checkable."""

    system: Literal["kai", "hami"]
    mechanism: Mechanism
    """What enforces the slice: `hami-core` (KAI and HAMi both preload it), `mps`, `time-sharing`."""
    requests: Sequence[SliceRequest]
    """One request per proof Pod, in order (a, b)."""
    overcommit_request: SliceRequest | None
    """The Pod that must stay Pending, or None where the system has no per-card accounting to prove."""
    pending_reason: str | None
    """The scheduler event reason the over-commit Pod must show (`CardInsufficientMemory`)."""
    visible_mib: int
    """What nvidia-smi / NVML must report inside a proof Pod."""
    limit_bytes: int
    """The quota HAMi-core enforces, in bytes (the OOM line's right-hand side)."""
    limit_env: Mapping[str, str]
    """Env every proof Pod must see (`CUDA_DEVICE_MEMORY_LIMIT_0=4000m`)."""
    preload_library: str
    """The library `/etc/ld.so.preload` must list (`libvgpu.so`)."""
    monitor: MonitorTarget | None = None
    node_registration: Mapping[str, Any] | None = None
    """HAMi: {"annotation": "hami.io/node-nvidia-register", "resource": "nvidia.com/gpu", "slotsPerCard": 10}."""
    allocation_annotation: str | None = None
    """Pod annotation naming the card a Pod got (`hami.io/vgpu-devices-allocated`)."""
    checks: Sequence[CheckId] = ()
    """The checks this system's proof runs."""
    notes: Sequence[str] = ()
    overcommit_mib: int | None = None
    """The over-commit Pod's memory request, which the proof checks is sized so only the slices keep it out."""
    """What the outputs must say about this proof (for example: privileged Pods are no tenant boundary)."""
