"""Platform existing: a cluster the user already runs, reached through a kubeconfig, the GPU Operator's toolkit
(or the nodes' own) and HAMi."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar, Literal

from pydantic import Field

from components.config.kubeconfig import PATH_KEY, TEXT_KEY, ConfigError, check_kubeconfig, read_kubeconfig
from components.config.shared import HamiChartSources, Stack, check_hami
from components.contracts.guard import guard_api_problem
from components.contracts.settings import key
from components.gpu.settings import ChartSourceConfig, GpuOperatorConfig, HamiConfig
from components.platform.settings import ClusterConfig


class ExistingChartSources(HamiChartSources):
    """The charts of the existing-cluster stack; one left unset comes from its public repository."""

    gpu_operator: ChartSourceConfig | None = None
    """The `gpu-operator` chart."""


class ExistingStack(Stack):
    """Platform existing: a cluster the user already runs, reached through a kubeconfig."""

    platform: Literal["existing"]
    """Where Kubernetes comes from."""
    toolkit: Literal["gpu-operator", "host"] = "gpu-operator"
    """Who provides the NVIDIA container toolkit: the GPU Operator, or the nodes themselves (the pre-check in
    docs/stacks.md, the `cluster` stack's step 1)."""
    sharing: Literal["hami"] = "hami"
    """The GPU-sharing system."""
    cluster: ClusterConfig
    """How to reach the cluster and which nodes carry GPUs."""
    gpu_operator: GpuOperatorConfig = Field(default_factory=GpuOperatorConfig)
    """Toolkit gpu-operator: the GPU Operator release."""
    hami: HamiConfig = Field(default_factory=HamiConfig)
    """The HAMi release."""
    chart_sources: ExistingChartSources = Field(default_factory=ExistingChartSources)
    """Where each chart comes from."""

    CHOICE_SECTIONS: ClassVar[Mapping[str, Mapping[str, tuple[str, ...]]]] = {
        "toolkit": {"gpu-operator": ("gpu_operator",)},
    }
    server_version_key: ClassVar[str] = "cluster.kubernetesVersion"

    def chart_pins(self) -> dict[str, str]:
        pins = {"hami": self.hami.version}
        return {**pins, "gpu_operator": self.gpu_operator.version} if self.toolkit == "gpu-operator" else pins

    def namespaces(self) -> dict[str, str]:
        spaces = {key("hami", "namespace"): self.hami.namespace}
        if self.toolkit == "gpu-operator":
            spaces[key("gpuOperator", "namespace")] = self.gpu_operator.namespace
        return {**spaces, **super().namespaces()}

    @property
    def server_version(self) -> str:
        """The Kubernetes server version, known from config."""
        return self.cluster.kubernetes_version

    @property
    def operator_cdi(self) -> bool:
        """True under a GPU Operator with CDI on."""
        return self.toolkit == "gpu-operator" and self.gpu_operator.cdi_enabled

    def kubeconfig_text(self) -> tuple[str, str]:
        """The kubeconfig, from the secret or the file, and the key it came from."""
        if self.cluster.kubeconfig is not None:
            return self.cluster.kubeconfig.get_secret_value(), TEXT_KEY
        return read_kubeconfig(self.cluster.kubeconfig_path or ""), PATH_KEY  # the model insists on one of the two

    def check(self) -> None:
        super().check()
        if self.toolkit == "gpu-operator" and self.gpu_operator.device_plugin_enabled:
            raise ConfigError(
                key("gpuOperator", "devicePluginEnabled"),
                "true beside HAMi: two device plugins would both advertise nvidia.com/gpu; set it to false",
            )
        check_hami(self, self.hami, self.server_version, self.server_version_key, cdi_enabled=self.operator_cdi)
        problem = guard_api_problem(self.guard.mode, self.server_version)
        if problem is not None:
            raise ConfigError(key(*self.server_version_key.split(".")), problem)
        text, source = self.kubeconfig_text()
        check_kubeconfig(text, self.cluster.context, source)
