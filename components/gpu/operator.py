"""Placeholder until its stack issue lands: registers nothing, claims nothing."""

from __future__ import annotations

from components.config import StackConfig
from components.gpu.sharing import ToolkitFacts
from components.platform.facts import ClusterFacts


def from_config(cfg: StackConfig, cluster: ClusterFacts) -> ToolkitFacts:
    return ToolkitFacts(source=cfg.toolkit)
