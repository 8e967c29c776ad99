"""The GKE platform (lab 12): a zonal COS cluster with one GPU pool, whose nodes carry the labels KAI reads or
GKE's own sharing config."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal

import pulumi

from components.contracts.errors import InputError
from components.platform.kubeconfig import gke_kubeconfig
from components.platform.settings import GkeConfig
from components.providers import gcp, k8s

IMAGE_TYPE = "COS_CONTAINERD"
# GKE skips its own device plugin on nodes with this label; KAI's reservation Pods need that plugin.
NO_DEVICE_PLUGIN_LABEL = "gke-no-default-nvidia-gpu-device-plugin"
_GKE_VERSION = re.compile(r"^(\d+)\.(\d+)\.(\d+)(?:-gke\.(\d+))?$")


def is_version_prefix(version: str) -> bool:
    """`1.35.` asks for the newest 1.35 patch in the zone; `1.35.6-gke.1250000` pins one."""
    return version.endswith(".")


def newest_version(versions: Iterable[str], prefix: str, config_key: str = "gpushare:gke.kubernetesVersion") -> str:
    """The highest GKE version starting with `prefix`, compared numerically (1.35.10 beats 1.35.9)."""

    def key(version: str) -> tuple[int, ...]:
        match = _GKE_VERSION.match(version)
        return tuple(int(g or 0) for g in match.groups()) if match else (-1,)

    candidates = [v for v in versions if v.startswith(prefix)]
    if not candidates:
        raise InputError(
            config_key,
            f"no GKE version starting with {prefix!r} is offered in this zone; pick another "
            "zone or an offered version (`gcloud container get-server-config --zone ZONE`)",
        )
    return max(candidates, key=key)


def kai_node_labels(product: str, memory_mib: int, gpus_per_node: int) -> dict[str, str]:
    """The labels GPU Feature Discovery would write and KAI reads; GKE's device plugin writes none of them.

    Without `nvidia.com/gpu.memory` KAI's binder writes no memory limit at all, and the isolator's monitor
    schedules only onto `nvidia.com/gpu.present=true` nodes.
    """
    return {
        "nvidia.com/gpu.memory": str(memory_mib),
        "nvidia.com/gpu.product": product,
        "nvidia.com/gpu.count": str(gpus_per_node),
        "nvidia.com/gpu.present": "true",
    }


@dataclass(frozen=True)
class GpuSharingArgs:
    """The GPU pool's `guest_accelerator.gpu_sharing_config`: GKE's device plugin shares each card itself."""

    strategy: Literal["MPS", "TIME_SHARING"]
    max_shared_clients_per_gpu: int


@dataclass(frozen=True)
class GkeClusterArgs:
    """A zonal GKE cluster with one GPU node pool."""

    settings: GkeConfig
    """The `gpushare:` section config validated, as it is: the one declaration of these settings."""
    kubernetes_version: str
    """A prefix ending in '.' (newest offered) or a full GKE version (pinned)."""
    gpu_type: str
    gpus_per_node: int
    gpu_memory_mib: int
    gpu_sharing: GpuSharingArgs | None = None
    """None: whole cards, shared (if at all) by software on top (KAI)."""
    node_labels: Mapping[str, str] = field(default_factory=dict)
    """Labels the GPU nodes are born with (what KAI reads); GKE adds its own sharing labels itself."""


class GkeCluster(pulumi.ComponentResource):
    """GKE on COS: default pool removed, a GPU pool with GKE-managed drivers, a kubeconfig and a provider."""

    cluster: gcp.container.Cluster
    node_pool: gcp.container.NodePool
    kubeconfig: pulumi.Output[str]
    provider: k8s.Provider
    version: pulumi.Output[str]

    def __init__(self, name: str, args: GkeClusterArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpushare:platform:GkeCluster", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)

        if is_version_prefix(args.kubernetes_version):
            offered = gcp.container.get_engine_versions_output(
                location=args.settings.zone,
                version_prefix=args.kubernetes_version,
                opts=pulumi.InvokeOutputOptions(parent=self),
            )
            version = offered.valid_master_versions.apply(lambda vs: newest_version(vs, args.kubernetes_version))
        else:
            version = pulumi.Output.from_input(args.kubernetes_version)

        self.cluster = gcp.container.Cluster(
            f"{name}-cluster",
            name=args.settings.cluster_name,
            location=args.settings.zone,
            min_master_version=version,
            # validMasterVersions are valid outside a release channel; in GKE's default REGULAR channel a patch
            # offered only in RAPID is refused ("Master version must be one of REGULAR channel supported versions").
            release_channel=gcp.container.ClusterReleaseChannelArgs(channel="UNSPECIFIED"),
            # The GPU pool below is the only pool; GKE insists on creating a default one first.
            remove_default_node_pool=True,
            initial_node_count=1,
            # Off, or `pulumi destroy` fails with "cannot destroy cluster because deletion_protection is true".
            deletion_protection=False,
            # No node_config: it shapes only the default pool removed above, and is Optional+Computed+ForceNew
            # (terraform-provider-google v7.45.0 google/services/container/node_config.go:279-284), so any value
            # read back from the API (resource_container_cluster.go:3667) could only ever force a replacement.
            opts=pulumi.ResourceOptions(
                parent=self,
                # A version prefix is resolved once, at creation: a later `up` that finds a newer patch must not
                # upgrade the master (and roll the GPU nodes under a running proof). GKE's own upgrades stay.
                ignore_changes=["minMasterVersion"],
                # The name is fixed and ForceNew (resource_container_cluster.go:293-296): a replacement created
                # first would fail with 409 already exists (pulumi/pulumi#4128).
                delete_before_replace=True,
            ),
        )

        labels = dict(args.node_labels)
        sharing = args.gpu_sharing
        self.node_pool = gcp.container.NodePool(
            f"{name}-gpu-pool",
            name="gpu-pool",
            cluster=self.cluster.name,
            location=args.settings.zone,
            node_count=args.settings.node_count,
            # No `version`: the pool starts at the master's and follows GKE's auto-upgrade; a pinned one would
            # fight every upgrade GKE makes; ignoreChanges: the version GKE moved it to is no diff.
            node_config=gcp.container.NodePoolNodeConfigArgs(
                machine_type=args.settings.machine_type,
                image_type=IMAGE_TYPE,
                spot=args.settings.spot,
                oauth_scopes=["https://www.googleapis.com/auth/cloud-platform"],
                # Set where the node is born, so KAI never caches a node without them (no restart needed).
                labels=labels or None,
                guest_accelerators=[
                    gcp.container.NodePoolNodeConfigGuestAcceleratorArgs(
                        type=args.gpu_type,
                        count=args.gpus_per_node,
                        gpu_driver_installation_config=(
                            gcp.container.NodePoolNodeConfigGuestAcceleratorGpuDriverInstallationConfigArgs(
                                gpu_driver_version=args.settings.gpu_driver_version
                            )
                        ),
                        gpu_sharing_config=(
                            gcp.container.NodePoolNodeConfigGuestAcceleratorGpuSharingConfigArgs(
                                gpu_sharing_strategy=sharing.strategy,
                                max_shared_clients_per_gpu=sharing.max_shared_clients_per_gpu,
                            )
                            if sharing is not None
                            else None
                        ),
                    )
                ],
            ),
            # The pool's name is fixed and ForceNew (resource_container_node_pool.go:510): delete first, as above.
            opts=pulumi.ResourceOptions(
                parent=self, ignore_changes=["version"], deleted_with=self.cluster, delete_before_replace=True
            ),
        )

        self.version = self.cluster.master_version
        self.kubeconfig = pulumi.Output.secret(
            pulumi.Output.all(self.cluster.endpoint, self.cluster.master_auth.cluster_ca_certificate).apply(
                lambda parts: gke_kubeconfig(args.settings.cluster_name, parts[0] or "", parts[1] or "")
            )
        )
        self.provider = k8s.Provider(
            f"{name}-k8s",
            kubeconfig=self.kubeconfig,
            # The provider (and every object on it) is replaced only when this changes, not whenever the
            # kubeconfig does (pulumi-kubernetes provider/pkg/provider/provider.go, DiffConfig).
            cluster_identifier=self.cluster.id.apply(lambda cluster_id: f"gke:{cluster_id}"),
            opts=child,
        )
        self.register_outputs(
            {
                "clusterName": self.cluster.name,
                "nodePoolName": self.node_pool.name,
                "masterVersion": self.version,
                "nodeLabels": labels,
                "kubeconfig": self.kubeconfig,
            }
        )
