"""Platforms k3s-vm and existing-host: a one-node k3s cluster the bootstrap installs (on a GCE GPU VM, or over
SSH on a host the user has), the toolkit on the host, HAMi (the k3s lab)."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from components import validate
from components.config.kubeconfig import ConfigError
from components.config.shared import HamiChartSources, HostGpuConfig, Stack, check_hami
from components.contracts.guard import guard_api_problem
from components.contracts.settings import key
from components.gpu.settings import HamiConfig
from components.gpus import machine_gpu_problem, zone_gpu_problem
from components.platform.settings import HostConfig, K3sConfig, VmConfig


class K3sStack(Stack):
    """A one-node k3s cluster the bootstrap installs, the toolkit on the host, HAMi."""

    toolkit: Literal["host"] = "host"
    """Who provides the NVIDIA container toolkit: the bootstrap installs it on the host before k3s."""
    sharing: Literal["hami"] = "hami"
    """The GPU-sharing system."""
    gpu: HostGpuConfig = Field(default_factory=HostGpuConfig)
    """The cards of the node."""
    k3s: K3sConfig = Field(default_factory=K3sConfig)
    """k3s as the bootstrap installs it."""
    hami: HamiConfig = Field(default_factory=HamiConfig)
    """The HAMi release."""
    chart_sources: HamiChartSources = Field(default_factory=HamiChartSources)
    """Where the HAMi chart comes from."""

    server_version_key: ClassVar[str] = "k3s.version"

    def chart_pins(self) -> dict[str, str]:
        return {"hami": self.hami.version}

    def namespaces(self) -> dict[str, str]:
        return {key("hami", "namespace"): self.hami.namespace, **super().namespaces()}

    @property
    def server_version(self) -> str:
        """The Kubernetes server version, known from config: the k3s release."""
        return self.k3s.version

    def check(self) -> None:
        super().check()
        check_hami(self, self.hami, self.server_version, self.server_version_key, cdi_enabled=False)
        problem = guard_api_problem(self.guard.mode, self.server_version)
        if problem is not None:
            raise ConfigError(key(*self.server_version_key.split(".")), problem)
        for label in sorted(self.hami.node_label):  # k3s hands them to its kubelet as --node-labels
            problem = validate.kubelet_label_problem(label)
            if problem:
                raise ConfigError(key("hami", "nodeLabel", label), problem)


class K3sVmStack(K3sStack):
    """Platform k3s-vm: a GCE GPU VM made a one-node k3s cluster (the k3s lab)."""

    platform: Literal["k3s-vm"]
    """Where Kubernetes comes from."""
    vm: VmConfig = Field(default_factory=VmConfig)
    """The GCE GPU VM."""

    def check(self) -> None:
        # Several cards are the machine's (g4-standard-96: 2) or attached (N1: 1, 2 or 4 T4s); HAMi pins the proof
        # Pods to card 1 (components/gpu/hami.py), so gpu.perNode only has to say what GCE gives the VM.
        problem = machine_gpu_problem(self.vm.machine_type, self.gpu.type, self.gpu.per_node)
        if problem is not None:
            where, why = problem
            raise ConfigError(key("vm", "machineType") if where == "machineType" else key(*where.split(".")), why)
        zone_problem = zone_gpu_problem(self.vm.zone, self.gpu.type) if self.gpu.zone_check else None
        if zone_problem is not None:
            raise ConfigError(key("vm", "zone"), zone_problem)
        super().check()
        check_network(self.vm)


class ExistingHostStack(K3sStack):
    """Platform existing-host: a GPU host the user already has, made a one-node k3s cluster over SSH."""

    platform: Literal["existing-host"]
    """Where Kubernetes comes from."""
    host: HostConfig
    """Where the SSH bootstrap goes."""


def check_network(vm: VmConfig) -> None:
    if not vm.allowed_source_ranges:
        raise ConfigError(
            key("vm", "allowedSourceRanges"),
            "required: the CIDRs allowed to reach SSH and the Kubernetes API, such as your IP as "
            "203.0.113.7/32 (`pulumi config set --path 'gpushare:vm.allowedSourceRanges[0]' "
            "203.0.113.7/32`)",
        )
    if validate.covers_whole_internet(vm.allowed_source_ranges) and not vm.allow_world_open:
        ranges = ", ".join(vm.allowed_source_ranges)
        raise ConfigError(
            key("vm", "allowedSourceRanges"),
            f"{ranges} opens SSH and the Kubernetes API to the whole internet; give your own range, or "
            "set gpushare:vm.allowWorldOpen to true to accept that",
        )
