"""Placeholder until its stack issue lands: registers nothing, claims nothing."""

from __future__ import annotations

from components.config import StackConfig
from components.gpus import GPU_MODELS
from components.platform.facts import ClusterFacts, GpuFacts


def from_config(cfg: StackConfig) -> ClusterFacts:
    model = GPU_MODELS.get(cfg.gpu_type)
    gpu = GpuFacts(cfg.gpu_type, model.product if model else cfg.gpu_type, cfg.card_mib, 1, 1)
    return ClusterFacts(provider=None, kubeconfig=None, kubernetes_version="", gpu=gpu, gpu_nodes=[])  # type: ignore[arg-type]
