"""Config → who provides the NVIDIA container toolkit: the GPU Operator (toolkit only), or nothing to install."""

from __future__ import annotations

import pulumi

from components.config import ExistingStack, StackConfig
from components.contracts.cluster import ClusterFacts
from components.contracts.sharing import ToolkitFacts
from components.gpu.operator import GpuOperator, GpuOperatorArgs
from components.images import mirrored

NOTHING = {"host": "nothing: toolkit from the host", "gke-managed": "nothing: toolkit from GKE"}


def gpu_operator_args(cfg: ExistingStack, cluster: ClusterFacts) -> GpuOperatorArgs:
    return GpuOperatorArgs(
        settings=cfg.gpu_operator,
        stack=pulumi.get_stack(),
        mirrors=cfg.mirrors,
        chart_source=cfg.chart_sources.gpu_operator,
        ready=cluster.ready,
        gate_image=mirrored(cfg.verify.probe_image, cfg.mirrors),
        refuse_unprivileged_env=cfg.guard.refuse_unprivileged_env,
    )


def toolkit(cfg: StackConfig, cluster: ClusterFacts) -> ToolkitFacts:
    """The GPU Operator for `toolkit: gpu-operator`; for host and gke-managed, nothing."""
    if not (isinstance(cfg, ExistingStack) and cfg.toolkit == "gpu-operator"):
        return ToolkitFacts(cdi_enabled=False, outputs={"installed": NOTHING[cfg.toolkit]})
    operator = GpuOperator("gpu-operator", gpu_operator_args(cfg, cluster), opts=cluster.options())
    return ToolkitFacts(
        cdi_enabled=cfg.gpu_operator.cdi_enabled,
        ready=[operator.toolkit_ready.job],
        outputs={"installed": operator.installed},
        images=operator.images,
    )
