"""Placeholder until the verification issue lands: registers nothing, claims nothing."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from components.config import StackConfig
from components.gpu.sharing import SharingSetup
from components.platform.facts import ClusterFacts


@dataclass(frozen=True)
class ProofOutputs:
    outputs: dict[str, Any] = field(default_factory=dict)


def from_config(cfg: StackConfig, cluster: ClusterFacts, sharing: SharingSetup) -> ProofOutputs:
    return ProofOutputs({"verification": {"passed": None, "checks": [], "findings": []}})
