"""Placeholder until its stack issue lands: registers nothing, claims nothing."""

from __future__ import annotations

from components.config import StackConfig
from components.gpu.sharing import SharingSetup, ToolkitFacts
from components.platform.facts import ClusterFacts


def from_config(cfg: StackConfig, cluster: ClusterFacts, toolkit: ToolkitFacts) -> SharingSetup:
    return SharingSetup(proof=None)  # type: ignore[arg-type]
