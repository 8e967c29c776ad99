"""The platform sections a stack config composes: each is the very type its component takes (config validates it).

No Pulumi here: config checks these before the program loads.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, SecretStr, field_validator, model_validator

from components import validate
from components.contracts.settings import (
    Count,
    GceZone,
    HourlyUsd,
    LinuxUser,
    MachineType,
    Port,
    Settings,
    Text,
    checked,
)


def _apt_package(name: str) -> str:
    if not re.fullmatch(r"[a-z0-9][a-z0-9+.-]+", name):
        raise ValueError(f"{name!r} is not a Debian package name such as nvidia-open")
    return name


class GkeConfig(Settings):
    """A GKE cluster on COS with one GPU pool (lab 12)."""

    zone: GceZone = "asia-northeast1-a"
    """Zone of the zonal cluster and its GPU pool."""
    cluster_name: Annotated[Text, checked(validate.gce_name, "GKE cluster name", 40)] = "gpushare"
    """Name of the GKE cluster."""
    kubernetes_version: Annotated[Text, AfterValidator(validate.gke_version)] = "1.35."
    """A prefix ending in '.' picks the newest valid version in the zone; a full version pins it."""
    machine_type: MachineType = "n1-standard-2"
    """Machine type of the GPU pool."""
    node_count: Count = Field(3, ge=1, le=1000)
    """Nodes in the GPU pool."""
    gpu_driver_version: Literal["DEFAULT", "LATEST"] = "DEFAULT"
    """GKE-managed driver version; the toolkit is GKE's, so the driver must be too."""
    spot: bool = False
    """Spot nodes for the GPU pool."""
    machine_hourly_usd: HourlyUsd | None = None
    """What one node's machine costs an hour (on-demand or Spot, as `spot` says); gives costNote its figure."""
    gpu_hourly_usd: HourlyUsd | None = None
    """What one attached GPU costs an hour; unset, costNote gives no figure."""


class VmConfig(Settings):
    """The GCE GPU VM that becomes a one-node k3s cluster (lab 7)."""

    zone: GceZone = "us-central1-b"
    """Zone of the VM."""
    machine_type: MachineType = "g4-standard-48"
    """Machine type; G2/G4/A2/A3 carry their GPU, N1 gets `gpushare:gpu.type` attached."""
    spot: bool = True
    """Spot provisioning: cheaper, may be reclaimed at any time."""
    boot_disk_gib: Count = Field(200, ge=50, le=65536)
    """Boot disk, large enough for CUDA images."""
    image: Annotated[Text, AfterValidator(validate.gce_image)] = "ubuntu-os-cloud/ubuntu-2204-lts"
    """Boot image (Ubuntu 22.04)."""
    network: Annotated[Text, checked(validate.gce_name, "network name")] = "default"
    """VPC network of the VM and its firewall."""
    allowed_source_ranges: list[Text] = Field(default_factory=list)
    """CIDRs allowed to reach SSH and the Kubernetes API; required."""
    allow_world_open: bool = False
    """Explicit opt-in to admit 0.0.0.0/0 to SSH and the API."""
    ssh_user: LinuxUser = "ubuntu"
    """Login user for the bootstrap."""
    machine_hourly_usd: HourlyUsd | None = None
    """What the VM costs an hour (on-demand or Spot, as `spot` says; G2/G4/A2/A3 include their GPU)."""
    gpu_hourly_usd: HourlyUsd | None = None
    """What an attached GPU costs an hour (N1 machine types only)."""

    @field_validator("allowed_source_ranges")
    @classmethod
    def _cidrs(cls, ranges: list[str]) -> list[str]:
        return validate.cidrs(ranges)


class HostConfig(Settings):
    """A GPU host the user already has, made a one-node k3s cluster over SSH."""

    address: Annotated[Text, AfterValidator(validate.host_address)]
    """SSH address of the host."""
    user: LinuxUser = "ubuntu"
    """Login user with sudo."""
    port: Port = 22
    """SSH port."""
    private_key: SecretStr
    """SSH private key (set it with `pulumi config set --secret`)."""
    host_key: Annotated[Text, AfterValidator(validate.ssh_host_key)] | None = None
    """The host's SSH key (a line of `ssh-keyscan -t ed25519 <address>`); unset trusts whatever key answers."""

    @field_validator("private_key", mode="before")
    @classmethod
    def _a_key(cls, value: Any) -> Any:
        # Never quote the value back: it is a secret.
        if not isinstance(value, str) or not value.strip():
            raise ValueError(
                "empty or not text; set the key's file with `pulumi config set --secret --path "
                "gpushare:host.privateKey < ~/.ssh/id_ed25519`"
            )
        return value


class K3sConfig(Settings):
    """k3s as the bootstrap installs it, on a VM or an existing host."""

    version: Text = "v1.36.2+k3s1"
    """Pinned k3s release."""
    node_name: Annotated[Text, checked(validate.dns_subdomain, "node name")] = "gpushare-gpu"
    """Node name k3s registers."""
    install_driver: bool = True
    """Install `nvidia-open` when `nvidia-smi -L` fails (Blackwell needs the open kernel modules)."""
    driver_package: Annotated[Text, AfterValidator(_apt_package)] = "nvidia-open"
    """Driver package installed from NVIDIA's CUDA apt repository."""

    @field_validator("version")
    @classmethod
    def _pinned(cls, version: str) -> str:
        return validate.k3s_version(version)


class ClusterConfig(Settings):
    """An existing cluster reached through a kubeconfig (kubeadm, KubeKey, on-prem)."""

    kubeconfig: SecretStr | None = None
    """The kubeconfig itself (`pulumi config set --secret --path gpushare:cluster.kubeconfig < file`)."""
    kubeconfig_path: Text | None = None
    """Or a path to it."""
    context: Annotated[Text, Field(min_length=1)] | None = None
    """Context within the kubeconfig; unset uses its current context."""
    kubernetes_version: Annotated[Text, AfterValidator(validate.kubernetes_version)] = "v1.35.6"
    """The server version (`kubectl version | grep Server`)."""
    gpu_nodes: list[Text] = Field(default_factory=lambda: ["node"])
    """GPU node names (`kubectl get nodes -l nvidia.com/gpu.present=true`)."""

    @field_validator("gpu_nodes")
    @classmethod
    def _nodes(cls, nodes: list[str]) -> list[str]:
        if not nodes:
            raise ValueError("name at least one GPU node")
        for node in nodes:
            if len(node) > 253 or not validate.DNS_SUBDOMAIN.match(node):
                raise ValueError(f"{node!r} is not a node name; copy the NAME column of `kubectl get nodes`")
        if len(nodes) > 5000:
            raise ValueError(f"{len(nodes)} nodes; a Kubernetes cluster has at most 5000")
        duplicates = sorted(n for n, times in Counter(nodes).items() if times > 1)
        if duplicates:
            raise ValueError(f"{', '.join(duplicates)} listed twice")
        return nodes

    @model_validator(mode="after")
    def _one_source(self) -> ClusterConfig:
        if self.kubeconfig is not None and self.kubeconfig_path is not None:
            raise ValueError(
                "kubeconfig and kubeconfigPath are both set; keep one: `pulumi config rm --path "
                "gpushare:cluster.kubeconfigPath` (or gpushare:cluster.kubeconfig)"
            )
        if self.kubeconfig is None and self.kubeconfig_path is None:
            raise ValueError(
                "needs a kubeconfig: `pulumi config set --path gpushare:cluster.kubeconfigPath ~/.kube/config`, or "
                "the file as a secret: `pulumi config set --secret --path gpushare:cluster.kubeconfig < ~/.kube/config`"
            )
        return self
