"""Typed stack configuration: the only code that reads `pulumi.Config`.

A stack's config is one platform choice: `gpushare:platform` picks a variant (gke, k3s-vm, existing-host,
existing), and each variant carries exactly its own sections, one GPU description (`gpushare:gpu`), and the
toolkit and sharing choices it allows, with the labs' defaults. Nested objects are set in the stack file or
with `pulumi config set --path gpushare:verify.sliceMiB 4000`. Validation runs before any resource is
registered and fails with one line that names the full key and the fix (`ConfigError`).
"""

from __future__ import annotations

import difflib
import json
import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, get_args

from pydantic import (
    AfterValidator,
    AliasGenerator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    SecretStr,
    StrictStr,
    TypeAdapter,
    ValidationError,
    field_validator,
    model_validator,
)

from components import validate
from components.chart_images import CHARTS
from components.contracts.errors import InputError
from components.contracts.guard import GuardSettings
from components.gke_sharing import MAX_CLIENTS, MIN_CLIENTS, mps_limits
from components.gpus import GPU_MODELS, gpu_memory_mib
from components.images import Mirrors, mirror_prefix_problem, registry_host_problem
from components.sizing import default_slice_mib, kai_visible_mib, overcommit_is_valid, overcommit_mib, remaining_mib
from components.versions import kubernetes_release

NAMESPACE = "gpushare"

Platform = Literal["gke", "k3s-vm", "existing-host", "existing"]
PLATFORMS: tuple[Platform, ...] = ("gke", "k3s-vm", "existing-host", "existing")
GkeSharing = Literal["kai", "mps", "time-sharing"]
"""Sharing systems on GKE: KAI with HAMi-core, or GKE's own MPS or time-sharing (the node pool's)."""
GKE_NATIVE: tuple[GkeSharing, ...] = ("mps", "time-sharing")
"""Sharing that GKE's own device plugin does, set on the GPU node pool."""


class ConfigError(InputError):
    """A config value that cannot work: `key` is the full config key, the message says the fix."""


def _alias(field_name: str) -> str:
    """camelCase with units kept readable: `gpu_memory_mib` → `gpuMemoryMiB`."""
    first, *rest = field_name.split("_")
    camel = first + "".join(part[:1].upper() + part[1:] for part in rest)
    return camel.replace("Mib", "MiB").replace("Gib", "GiB")


def _key(*path: str | int) -> str:
    parts = [str(p) for p in path]
    return f"{NAMESPACE}:{'.'.join(parts)}" if parts else NAMESPACE


class _Model(BaseModel):
    """Frozen, camelCase keys, unknown keys refused, defaults validated, attribute docstrings kept."""

    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        alias_generator=AliasGenerator(validation_alias=_alias, serialization_alias=_alias),
        validate_default=True,
        use_attribute_docstrings=True,
    )

    @model_validator(mode="before")
    @classmethod
    def _no_yes_no_for_a_number(cls, data: Any) -> Any:
        # pydantic reads true as 1; as text, a count or size written as true/false fails as what it is.
        if isinstance(data, dict):
            data = dict(data)
            for name, field in cls.model_fields.items():
                value = data.get(_alias(name))
                if isinstance(value, bool) and {int, float} & {field.annotation, *get_args(field.annotation)}:
                    data[_alias(name)] = str(value).lower()
        return data


def _apt_package(name: str) -> str:
    if not re.fullmatch(r"[a-z0-9][a-z0-9+.-]+", name):
        raise ValueError(f"{name!r} is not a Debian package name such as nvidia-open")
    return name


def _priority_class(name: str) -> str:
    """Empty (no PriorityClass) or a PriorityClass name."""
    return name and validate.dns_subdomain(name, "PriorityClass name")


def _pod_prefix(prefix: str) -> str:
    """Pods are `<prefix>-a`/`-b` and their names are label values too: a DNS label of at most 61 characters."""
    validate.dns_label(prefix, "Pod name prefix")
    if len(prefix) > 61:
        raise ValueError(f"{len(prefix)} characters: the Pod names <prefix>-a are label values (at most 63); "
                         "shorten it to 61")
    return prefix


def _checked(check: Any, *args: Any) -> AfterValidator:
    return AfterValidator(lambda value: check(value, *args))


K8sNamespace = Annotated[str, _checked(validate.dns_label, "namespace")]
Labels = Annotated[dict[str, str], AfterValidator(validate.labels)]
GceZone = Annotated[str, AfterValidator(validate.gce_zone)]
MachineType = Annotated[str, AfterValidator(validate.gce_machine_type)]
Accelerator = Annotated[str, AfterValidator(validate.accelerator)]
ImageRef = Annotated[str, AfterValidator(validate.image_reference)]
Registry = Annotated[str, AfterValidator(validate.registry)]
LinuxUser = Annotated[str, AfterValidator(validate.linux_user)]
AbsolutePath = Annotated[str, AfterValidator(validate.absolute_path)]
Port = Annotated[int, AfterValidator(validate.port)]
def _size_not_yes_no(value: Any) -> Any:
    # pydantic reads true as 1.0, also inside a list (sweepGiB) where the model-level check does not reach.
    if isinstance(value, bool):
        raise ValueError(f"{str(value).lower()} is not a size; give a number of GiB such as 3")
    return value


FiniteGiB = Annotated[float, BeforeValidator(_size_not_yes_no), Field(gt=0, allow_inf_nan=False)]
HourlyUsd = Annotated[float, Field(ge=0, le=10_000, allow_inf_nan=False)]


# --- the cards -------------------------------------------------------------------------------------------


class GpuConfig(_Model):
    """The cards of the GPU nodes: one description per stack, whatever the platform."""

    type: Accelerator = "nvidia-tesla-t4"
    """The cards' accelerator type (GCE `acceleratorType`), or their model key in the GPU table."""
    memory_mib: int | None = Field(None, gt=0)
    """MiB nvidia-smi reports per card; unset takes it from the GPU table."""
    per_node: int = Field(1, ge=1, le=16)
    """Cards on each GPU node."""


class HostGpuConfig(GpuConfig):
    """The card of a one-node k3s cluster (lab 7's RTX PRO 6000 Blackwell by default)."""

    type: Accelerator = "nvidia-rtx-pro-6000"
    """The card's accelerator type, or its model key in the GPU table."""


# --- platforms -------------------------------------------------------------------------------------------


class GkeConfig(_Model):
    """A GKE cluster on COS with one GPU pool (lab 12)."""

    zone: GceZone = "asia-northeast1-a"
    """Zone of the zonal cluster and its GPU pool."""
    cluster_name: Annotated[str, _checked(validate.gce_name, "GKE cluster name", 40)] = "kai-hami-test"
    """Name of the GKE cluster."""
    kubernetes_version: Annotated[str, AfterValidator(validate.gke_version)] = "1.35."
    """A prefix ending in '.' picks the newest valid version in the zone; a full version pins it."""
    machine_type: MachineType = "n1-standard-2"
    """Machine type of the GPU pool."""
    node_count: int = Field(3, ge=1, le=1000)
    """Nodes in the GPU pool."""
    gpu_driver_version: Literal["DEFAULT", "LATEST"] = "DEFAULT"
    """GKE-managed driver version; the toolkit is GKE's, so the driver must be too."""
    spot: bool = False
    """Spot nodes for the GPU pool."""
    machine_hourly_usd: HourlyUsd | None = None
    """What one node's machine costs an hour (on-demand or Spot, as `spot` says); gives costNote its figure."""
    gpu_hourly_usd: HourlyUsd | None = None
    """What one attached GPU costs an hour; unset, costNote gives no figure."""


class VmConfig(_Model):
    """The GCE GPU VM that becomes a one-node k3s cluster (lab 7)."""

    zone: GceZone = "us-central1-b"
    """Zone of the VM."""
    machine_type: MachineType = "g4-standard-48"
    """Machine type; G2/G4/A2/A3 carry their GPU, N1 gets `gpushare:gpu.type` attached."""
    spot: bool = True
    """Spot provisioning: cheaper, may be reclaimed at any time."""
    boot_disk_gib: int = Field(200, ge=50, le=65536)
    """Boot disk, large enough for CUDA images."""
    image: Annotated[str, AfterValidator(validate.gce_image)] = "ubuntu-os-cloud/ubuntu-2204-lts"
    """Boot image (Ubuntu 22.04)."""
    network: Annotated[str, _checked(validate.gce_name, "network name")] = "default"
    """VPC network of the VM and its firewall."""
    allowed_source_ranges: list[str] = Field(default_factory=list)
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


class HostConfig(_Model):
    """A GPU host the user already has, made a one-node k3s cluster over SSH."""

    address: Annotated[str, AfterValidator(validate.host_address)]
    """SSH address of the host."""
    user: LinuxUser = "ubuntu"
    """Login user with sudo."""
    port: Port = 22
    """SSH port."""
    private_key: SecretStr
    """SSH private key (set it with `pulumi config set --secret`)."""
    host_key: Annotated[str, AfterValidator(validate.ssh_host_key)] | None = None
    """The host's SSH key (a line of `ssh-keyscan -t ed25519 <address>`); unset trusts whatever key answers."""


class K3sConfig(_Model):
    """k3s as the bootstrap installs it, on a VM or an existing host."""

    version: str = "v1.36.2+k3s1"
    """Pinned k3s release."""
    node_name: Annotated[str, _checked(validate.dns_subdomain, "node name")] = "hami-lab-rtx6000"
    """Node name k3s registers."""
    install_driver: bool = True
    """Install `nvidia-open` when `nvidia-smi -L` fails (Blackwell needs the open kernel modules)."""
    driver_package: Annotated[str, AfterValidator(_apt_package)] = "nvidia-open"
    """Driver package installed from NVIDIA's CUDA apt repository."""

    @field_validator("version")
    @classmethod
    def _pinned(cls, version: str) -> str:
        return validate.k3s_version(version)


class ClusterConfig(_Model):
    """An existing cluster reached through a kubeconfig (kubeadm, KubeKey, on-prem)."""

    kubeconfig: SecretStr | None = None
    """The kubeconfig itself (`pulumi config set --secret --path gpushare:cluster.kubeconfig < file`)."""
    kubeconfig_path: str | None = None
    """Or a path to it."""
    context: Annotated[str, Field(min_length=1)] | None = None
    """Context within the kubeconfig; unset uses its current context."""
    kubernetes_version: Annotated[str, AfterValidator(validate.kubernetes_version)] = "v1.35.6"
    """The server version (`kubectl version | grep Server`)."""
    gpu_nodes: list[str] = Field(default_factory=lambda: ["node"])
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
        duplicates = sorted({n for n in nodes if nodes.count(n) > 1})
        if duplicates:
            raise ValueError(f"{', '.join(duplicates)} listed twice")
        return nodes

    @model_validator(mode="after")
    def _one_source(self) -> ClusterConfig:
        if (self.kubeconfig is None) == (self.kubeconfig_path is None):
            raise ValueError("set exactly one of kubeconfig (secret) and kubeconfigPath")
        return self


# --- GPU software ----------------------------------------------------------------------------------------


class KaiConfig(_Model):
    """KAI Scheduler with GPU sharing and the HAMi-core binder."""

    version: Annotated[str, _checked(validate.pinned_chart, "v0.17.0", True)] = "v0.17.0"
    """Pinned chart version."""
    namespace: K8sNamespace = "kai-scheduler"
    """Namespace of the release."""
    cdi_enabled: StrictStr = "true"
    """`binder.plugins.gpusharing.arguments.cdiEnabled`; a string, since the Config CRD types it so."""
    queue: Annotated[str, _checked(validate.dns_label, "queue name")] = "default-queue"
    """Queue the proof Pods are labelled with."""
    parent_queue: Annotated[str, _checked(validate.dns_label, "queue name")] = "default-parent-queue"
    """Parent of `queue`; KAI creates both and keeps them on uninstall."""
    delete_kept_queues: bool = True
    """Delete the queues KAI keeps (`helm.sh/resource-policy: keep`) when the stack is destroyed."""


    @field_validator("cdi_enabled", mode="before")
    @classmethod
    def _cdi_string(cls, value: Any) -> Any:
        if not isinstance(value, str):
            raise ValueError(
                f"must be the string \"true\" or \"false\", not {type(value).__name__} {value!r}: "
                "the Config CRD rejects a boolean; quote it"
            )
        if value not in ("true", "false"):
            raise ValueError(f"must be \"true\" or \"false\", not {value!r}")
        return value


class IsolatorConfig(_Model):
    """kai-resource-isolator: ships HAMi-core to the nodes, injects it, and monitors it."""

    version: Annotated[str, _checked(validate.pinned_chart, "1.1.0-chart", False)] = "1.1.0-chart"
    """Pinned chart version."""
    namespace: K8sNamespace = "kai-resource-isolator"
    """Namespace of the release."""
    container_vgpu_mount: AbsolutePath = "/home/kubernetes/bin/nvidia/vgpu"
    """Where HAMi-core lands on the node; on COS only /home/kubernetes/bin is writable."""
    library_sync_priority_class: Annotated[str, AfterValidator(_priority_class)] = ""
    """Empty: GKE refuses system-node-critical outside system namespaces."""
    monitor_priority_class: Annotated[str, AfterValidator(_priority_class)] = ""
    """Empty, for the same reason."""
    monitor_enabled: bool = True
    """The per-node monitor whose metrics the proof reads."""



class GkeCdiConfig(_Model):
    """The GKE 1.35/COS/CDI workarounds; each switch names the symptom it fixes."""

    nvidia_runtime_class: bool = True
    """Create RuntimeClass `nvidia` (handler runc): fixes `RuntimeClass "nvidia" not found`."""
    runtime_class_handler: Annotated[str, _checked(validate.dns_label, "RuntimeClass handler")] = "runc"
    """Handler of that RuntimeClass; GKE's CDI path has no nvidia handler."""
    kyverno: bool = True
    """Install Kyverno for the two injection policies below."""
    kyverno_version: Annotated[str, _checked(validate.pinned_chart, "3.8.2", False)] = "3.8.2"
    """Pinned Kyverno chart (current when the lab was verified)."""
    kyverno_namespace: K8sNamespace = "kyverno"
    """Namespace of the Kyverno release."""
    inject_nvml_library_path: bool = True
    """Policy: NVML path for KAI's reservation Pods; fixes `ERROR_LIBRARY_NOT_FOUND`."""
    inject_gpu_devices: bool = True
    """Policy: /dev/nvidia*, nvidia-smi and driver libraries for sharing Pods, which see no devices otherwise."""
    nvidia_install_dir: AbsolutePath = "/home/kubernetes/bin/nvidia"
    """Where GKE installs the driver on COS."""



class HamiConfig(_Model):
    """HAMi: scheduler extender, device plugin and HAMi-core."""

    version: Annotated[str, _checked(validate.pinned_chart, "2.10.0", False)] = "2.10.0"
    """Pinned chart version (2.9.0 and 2.10.0 are supported)."""
    namespace: K8sNamespace = "hami-system"
    """Namespace of the release."""
    scheduler_image_tag: Annotated[str, AfterValidator(validate.kubernetes_version)] | None = None
    """kube-scheduler image tag; unset, the chart takes the server's own version; a pin must equal the known one."""
    device_split_count: int = Field(10, ge=1)
    """Pods that may share one card."""
    node_label: Labels = Field(default_factory=lambda: {"gpu": "on"}, min_length=1)
    """The label HAMi's device plugin selects nodes by."""
    runtime_class_name: Annotated[str, _checked(validate.dns_subdomain, "RuntimeClass name")] | None = None
    """Device plugin RuntimeClass; unset picks `nvidia-legacy` under a CDI GPU Operator, none otherwise."""
    wait_timeout_seconds: int = Field(300, ge=30, le=3600)
    """How long the install may take."""


    @field_validator("version")
    @classmethod
    def _supported(cls, version: str) -> str:
        if version not in ("2.9.0", "2.10.0"):
            raise ValueError(f"{version!r} is not a HAMi chart this project knows; use 2.9.0 or 2.10.0")
        return version


class GpuOperatorConfig(_Model):
    """NVIDIA GPU Operator, used only for its container toolkit."""

    version: Annotated[str, _checked(validate.pinned_chart, "v26.7.0", True)] = "v26.7.0"
    """Pinned chart version."""
    namespace: K8sNamespace = "gpu-operator"
    """Namespace of the release."""
    driver_enabled: bool = False
    """False: the host driver stays; the operator's would fight it."""
    device_plugin_enabled: bool = False
    """False: HAMi's device plugin is the only one; two would both advertise nvidia.com/gpu."""
    cdi_enabled: bool = True
    """The chart's CDI default since 25.10; it decides HAMi's RuntimeClass."""



# --- verification ----------------------------------------------------------------------------------------


class VerifyConfig(_Model):
    """The proof: Pods that share one card, and the verifier that judges them."""

    enabled: bool = True
    """Run the proof at all."""
    namespace: K8sNamespace = "gpushare-proof"
    """Namespace of the proof Pods and the verifier."""
    pod_prefix: Annotated[str, AfterValidator(_pod_prefix)] = "gpushare-proof"
    """Proof Pods are `<prefix>-a` and `<prefix>-b`."""
    slice_mib: int | None = Field(None, gt=0)
    """Memory each proof Pod asks for; unset scales with the card."""
    cores_percent: int | None = Field(None, ge=1, le=100)
    """Compute share each proof Pod asks for (HAMi `gpucores`); unset asks none."""
    overcommit_mib: int | None = Field(None, gt=0)
    """The third Pod's request; unset is computed to fit an empty card but not the remainder."""
    probe_image: ImageRef = "python:3.12-slim-bookworm"
    """Image of the proof Pods and the verifier: any image with python3."""
    smi_image: ImageRef = "nvidia/cuda:12.4.1-base-ubuntu22.04"
    """Image of the whole-GPU precondition Pod that runs nvidia-smi."""
    hold_gib: FiniteGiB = 3.0
    """What each proof Pod holds while its neighbour allocates."""
    hold_seconds: int = Field(30, ge=1, le=3600)
    """How long it holds, long enough for the two holds to overlap."""
    extra_gib: FiniteGiB = 2.0
    """What it then asks for on top, which must be refused."""
    sweep_gib: list[FiniteGiB] = Field(default_factory=lambda: [2, 3, 3.8, 4.0, 4.5, 6], min_length=1)
    """Single allocations tried one by one, each freed again."""
    compute_seconds: int = Field(20, ge=5, le=600)
    """Each compute probe shape runs this long; the throttle bites after 3–4 s."""
    deadline_seconds: int = Field(900, ge=60, le=7200)
    """How long the verifier waits for the proof Pods."""
    fail_on_violation: bool = True
    """Fail `pulumi up` when a check fails, once results are known."""
    pod_tries: bool = True
    """Also try the ways around the quota that a Pod's own spec can take, each in a short-lived Pod (findings)."""
    run_id: Annotated[str, Field(min_length=1, max_length=63)] = "1"
    """Change it (`pulumi config set --path gpushare:verify.runId 2`) to run the proof again on fresh Pods."""

    @field_validator("run_id", mode="before")
    @classmethod
    def _run_id_text(cls, value: Any) -> Any:
        return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


class GkeSharingConfig(_Model):
    """GKE's own GPU sharing (sharing mps or time-sharing): the node pool's gpu_sharing_config."""

    max_shared_clients_per_gpu: int = 2
    """Pods that share one card; MPS gives each 1/N of its memory and threads. The proof's two Pods fill 2."""

    @field_validator("max_shared_clients_per_gpu")
    @classmethod
    def _clients(cls, clients: int) -> int:
        if not MIN_CLIENTS <= clients <= MAX_CLIENTS:
            raise ValueError(f"{clients} is outside what GKE accepts; give {MIN_CLIENTS} to {MAX_CLIENTS}")
        return clients


# --- where charts come from -------------------------------------------------------------------------------


class ChartSourceConfig(_Model):
    """Where one chart comes from instead of its public repository; the version stays the pinned one."""

    repository: str | None = None
    """`oci://host/path` (the chart is `<repository>/<chart>`) or an `https://` Helm repository."""
    path: str | None = None
    """A local directory holding the unpacked chart (`helm pull --untar`), at the pinned version."""

    @field_validator("repository")
    @classmethod
    def _scheme(cls, repository: str | None) -> str | None:
        if repository is not None and (not repository.startswith(("oci://", "https://", "http://"))
                                       or any(c.isspace() for c in repository)):
            raise ValueError(
                f"{repository!r} is neither oci://host/path nor an https:// Helm repository; write it as "
                "oci://harbor.example.com/charts"
            )
        return repository

    @model_validator(mode="after")
    def _one_source(self) -> ChartSourceConfig:
        if (self.repository is None) == (self.path is None):
            raise ValueError("set exactly one of repository and path")
        return self


class GkeChartSources(_Model):
    """The charts of the gke stack; one left unset comes from its public repository."""

    kai: ChartSourceConfig | None = None
    """The `kai-scheduler` chart."""
    isolator: ChartSourceConfig | None = None
    """The `kai-resource-isolator` chart."""
    kyverno: ChartSourceConfig | None = None
    """The `kyverno` chart."""


class HamiChartSources(_Model):
    """The chart of a k3s stack; unset, it comes from its public repository."""

    hami: ChartSourceConfig | None = None
    """The `hami` chart."""


class ExistingChartSources(HamiChartSources):
    """The charts of the existing-cluster stack; one left unset comes from its public repository."""

    gpu_operator: ChartSourceConfig | None = None
    """The `gpu-operator` chart."""


PROJECT_ROOT = Path(__file__).resolve().parent.parent
"""The directory `pulumi up` runs the program in: a relative chartSources path or kubeconfigPath is read from here."""

CHART_NAMES = {"hami": "hami", "gpu_operator": "gpu-operator", "kai": "kai-scheduler",
               "isolator": "kai-resource-isolator", "kyverno": "kyverno"}
"""Each chartSources key's chart, as its Chart.yaml names it."""


# --- the stack: one variant per platform -----------------------------------------------------------------


class _Stack(_Model):
    """What every variant has: the cards, an optional registry mirror, and the proof."""

    gpu: GpuConfig = Field(default_factory=GpuConfig)
    """The cards of the GPU nodes."""
    image_registry: Registry | None = None
    """One mirror for every upstream registry that `registryMirrors` does not name (the host kept as a path segment)."""
    registry_mirrors: dict[str, str] = Field(default_factory=dict)
    """Upstream registry host → mirror, such as `{"docker.io": "harbor.example.com/dockerhub"}`."""
    verify: VerifyConfig = Field(default_factory=VerifyConfig)
    """The proof and its verifier."""
    guard: GuardSettings = GuardSettings()
    """Which new Pods the API server refuses for opting out of their quota (components/gpu/guard.py)."""

    CHOICE_SECTIONS: ClassVar[Mapping[str, Mapping[str, tuple[str, ...]]]] = {}
    """choice field → its value → the sections only that value reads; set for another value, they are refused."""

    @property
    def mirrors(self) -> Mirrors:
        """Where every image is pulled from."""
        return Mirrors(by_host=dict(self.registry_mirrors), default=self.image_registry or None)

    def chart_pins(self) -> dict[str, str]:
        """chartSources key → the chart version this stack pins (the charts it installs)."""
        return {}

    @property
    def gpu_type(self) -> str:
        return self.gpu.type

    @property
    def card_mib(self) -> int:
        """Memory of one card as nvidia-smi reports it."""
        return gpu_memory_mib(self.gpu.type, self.gpu.memory_mib)

    @property
    def slice_mib(self) -> int:
        return self.verify.slice_mib or default_slice_mib(self.card_mib)

    @property
    def overcommit_mib(self) -> int:
        return self.verify.overcommit_mib or overcommit_mib(self.card_mib, self.slice_mib)

    @property
    def quota_mib(self) -> int:
        """What HAMi-core enforces in each proof Pod: the slice itself, unless the scheduler rounds it."""
        return self.slice_mib

    def check(self) -> None:
        """The checks that need more than one key; each raises ConfigError naming the key that must change."""
        _check_choice_sections(self)
        _check_gpu(self)
        _check_slices(self)
        _check_proof_numbers(self)
        _check_mirrors(self)
        _check_chart_sources(self)
        _check_image_tables(self)


class GkeStack(_Stack):
    """Platform gke: a GKE cluster on COS with one GPU pool, KAI Scheduler and HAMi-core (lab 12)."""

    platform: Literal["gke"]
    """Where Kubernetes comes from."""
    toolkit: Literal["gke-managed"] = "gke-managed"
    """Who provides the NVIDIA container toolkit: on GKE, GKE itself."""
    sharing: GkeSharing = "kai"
    """The GPU-sharing system."""
    gke: GkeConfig = Field(default_factory=GkeConfig)
    """The cluster and its GPU pool."""
    kai: KaiConfig = Field(default_factory=KaiConfig)
    """Sharing kai: KAI Scheduler."""
    isolator: IsolatorConfig = Field(default_factory=IsolatorConfig)
    """Sharing kai: kai-resource-isolator."""
    gke_cdi: GkeCdiConfig = Field(default_factory=GkeCdiConfig)
    """Sharing kai: the GKE/COS/CDI workarounds."""
    gke_sharing: GkeSharingConfig = Field(default_factory=GkeSharingConfig)
    """Sharing mps or time-sharing: how many Pods share each card of the GPU pool."""
    chart_sources: GkeChartSources = Field(default_factory=GkeChartSources)
    """Where each chart comes from."""

    def chart_pins(self) -> dict[str, str]:
        if self.sharing != "kai":
            return {}
        pins = {"kai": self.kai.version, "isolator": self.isolator.version}
        return {**pins, "kyverno": self.gke_cdi.kyverno_version} if self.gke_cdi.kyverno else pins

    CHOICE_SECTIONS: ClassVar[Mapping[str, Mapping[str, tuple[str, ...]]]] = {
        "sharing": {"kai": ("kai", "isolator", "gke_cdi"), "mps": ("gke_sharing",), "time-sharing": ("gke_sharing",)},
    }

    @property
    def slice_mib(self) -> int:
        if self.sharing == "mps":
            return mps_limits(self.card_mib, self.gke_sharing.max_shared_clients_per_gpu).pinned_mib
        if self.sharing == "time-sharing":
            return self.card_mib  # each Pod is handed the whole card, in turns
        return super().slice_mib

    @property
    def quota_mib(self) -> int:
        """Under KAI the request becomes a fraction of the card (two decimals), and HAMi-core enforces that."""
        if self.sharing == "kai":
            return kai_visible_mib(self.slice_mib, self.card_mib)
        return super().quota_mib

    def check(self) -> None:
        super().check()
        _check_gke_native(self)
        if self.guard.refuse_unprivileged_env:
            raise ConfigError(_key("guard", "refuseUnprivilegedEnv"), "GKE's managed runtime has no NVIDIA toolkit to"
                              " configure: remove it (`pulumi config rm --path gpushare:guard.refuseUnprivilegedEnv`)")
        if self.sharing == "kai" and self.verify.cores_percent is not None:
            raise ConfigError(
                _key("verify", "coresPercent"),
                "KAI's gpu-memory request carries no compute share, so there is no compute limit to prove; remove "
                "it (compute-limited is a HAMi check)",
            )


class K3sStack(_Stack):
    """A one-node k3s cluster the bootstrap installs, the toolkit on the host, HAMi."""

    toolkit: Literal["host"] = "host"
    """Who provides the NVIDIA container toolkit: the bootstrap installs it on the host before k3s."""
    sharing: Literal["hami"] = "hami"
    """The GPU-sharing system."""
    gpu: HostGpuConfig = Field(default_factory=HostGpuConfig)
    """The card of the node."""
    k3s: K3sConfig = Field(default_factory=K3sConfig)
    """k3s as the bootstrap installs it."""
    hami: HamiConfig = Field(default_factory=HamiConfig)
    """The HAMi release."""
    chart_sources: HamiChartSources = Field(default_factory=HamiChartSources)
    """Where the HAMi chart comes from."""

    def chart_pins(self) -> dict[str, str]:
        return {"hami": self.hami.version}

    @property
    def server_version(self) -> str:
        """The Kubernetes server version, known from config: the k3s release."""
        return self.k3s.version

    server_version_key: ClassVar[str] = "k3s.version"

    def check(self) -> None:
        super().check()
        _check_hami(self, self.hami, cdi_enabled=False)


class K3sVmStack(K3sStack):
    """Platform k3s-vm: a GCE GPU VM made a one-node k3s cluster (lab 7)."""

    platform: Literal["k3s-vm"]
    """Where Kubernetes comes from."""
    vm: VmConfig = Field(default_factory=VmConfig)
    """The GCE GPU VM."""

    def check(self) -> None:
        if self.gpu.per_node != 1:
            raise ConfigError(_key("gpu", "perNode"), f"{self.gpu.per_node}: the VM gets one card; set it to 1")
        super().check()
        _check_network(self.vm)


class ExistingHostStack(K3sStack):
    """Platform existing-host: a GPU host the user already has, made a one-node k3s cluster over SSH."""

    platform: Literal["existing-host"]
    """Where Kubernetes comes from."""
    host: HostConfig
    """Where the SSH bootstrap goes."""


class ExistingStack(_Stack):
    """Platform existing: a cluster the user already runs, reached through a kubeconfig."""

    platform: Literal["existing"]
    """Where Kubernetes comes from."""
    toolkit: Literal["gpu-operator", "host"] = "gpu-operator"
    """Who provides the NVIDIA container toolkit: the GPU Operator, or the nodes themselves (README's pre-check)."""
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

    def chart_pins(self) -> dict[str, str]:
        pins = {"hami": self.hami.version}
        return {**pins, "gpu_operator": self.gpu_operator.version} if self.toolkit == "gpu-operator" else pins
    server_version_key: ClassVar[str] = "cluster.kubernetesVersion"

    @property
    def server_version(self) -> str:
        """The Kubernetes server version, known from config."""
        return self.cluster.kubernetes_version

    @property
    def operator_cdi(self) -> bool:
        """True under a GPU Operator with CDI on."""
        return self.toolkit == "gpu-operator" and self.gpu_operator.cdi_enabled

    def check(self) -> None:
        super().check()
        if self.toolkit == "gpu-operator" and self.gpu_operator.device_plugin_enabled:
            raise ConfigError(
                _key("gpuOperator", "devicePluginEnabled"),
                "true beside HAMi: two device plugins would both advertise nvidia.com/gpu; set it to false",
            )
        _check_hami(self, self.hami, cdi_enabled=self.operator_cdi)


StackConfig = Annotated[GkeStack | K3sVmStack | ExistingHostStack | ExistingStack, Field(discriminator="platform")]
"""A stack's whole config: one variant per platform."""
VARIANTS: dict[str, type[_Stack]] = {
    "gke": GkeStack,
    "k3s-vm": K3sVmStack,
    "existing-host": ExistingHostStack,
    "existing": ExistingStack,
}
_ADAPTER: TypeAdapter[StackConfig] = TypeAdapter(StackConfig)

MOVED_KEYS: dict[tuple[str, str], str] = {
    **{(section, "gpuType"): "gpu.type" for section in ("gke", "vm", "host", "cluster")},
    **{(section, "gpuMemoryMiB"): "gpu.memoryMiB" for section in ("gke", "vm", "host", "cluster")},
    ("gke", "gpuCount"): "gpu.perNode",
    ("cluster", "gpusPerNode"): "gpu.perNode",
}
"""Keys that moved into the one GPU description: old section and key → the new key."""
REPLACED_KEYS: dict[tuple[str, str], str] = {
    (section, "hourlyCostUsd"): "replaced by a figure computed from the pool's shape: set "
    f"{_key(section, 'machineHourlyUsd')} and {_key(section, 'gpuHourlyUsd')} (per machine and per GPU, at your "
    "provider's on-demand or Spot prices)"
    for section in ("gke", "vm")
}
"""Keys whose meaning changed: old section and key → what to set instead."""

_WRONG_CHOICE: dict[tuple[str, str, str], str] = {
    ("gke", "toolkit", "gpu-operator"): "GKE installs and manages the driver and toolkit itself, and a GPU Operator "
    "over GKE-managed drivers breaks them; remove the key (gke-managed is the only toolkit on gke)",
    ("gke", "toolkit", "host"): "GKE installs and manages the driver and toolkit itself; remove the key "
    "(gke-managed is the only toolkit on gke)",
    ("gke", "sharing", "hami"): "GKE's own device plugin always runs, and HAMi's device plugin cannot share a card "
    "with another; use kai, or GKE's own mps or time-sharing",
    ("k3s-vm", "toolkit", "*"): "the k3s bootstrap installs the NVIDIA Container Toolkit on the host before k3s; "
    "remove the key (host is the only toolkit here)",
    ("existing-host", "toolkit", "*"): "the k3s bootstrap installs the NVIDIA Container Toolkit on the host before "
    "k3s; remove the key (host is the only toolkit here)",
    ("existing", "toolkit", "gke-managed"): "gke-managed is only for platform gke; use gpu-operator or host",
    ("k3s-vm", "sharing", "kai"): "kai is wired for platform gke only (its isolator settings are GKE/COS ones); "
    "remove the key (hami is the sharing system here)",
    ("existing-host", "sharing", "kai"): "kai is wired for platform gke only (its isolator settings are GKE/COS "
    "ones); remove the key (hami is the sharing system here)",
    ("existing", "sharing", "kai"): "kai is wired for platform gke only (its isolator settings are GKE/COS ones); "
    "remove the key (hami is the sharing system here)",
}
"""Why a toolkit or sharing value is refused on a platform (`*`: any value but the one allowed)."""
_WRONG_CHOICE.update({
    (platform, "sharing", native): f"{native} is GKE's own GPU sharing (the node pool's gpu_sharing_config), not "
    "available here; remove the key (hami is the sharing system here)"
    for platform in ("k3s-vm", "existing-host", "existing") for native in GKE_NATIVE
})


# --- checks that need more than one key ------------------------------------------------------------------


def _check_choice_sections(cfg: _Stack) -> None:
    """A section only another choice reads (say `gpuOperator` with `toolkit: host`) is a leftover: refused."""
    for choice, sections_by_value in cfg.CHOICE_SECTIONS.items():
        chosen = getattr(cfg, choice)
        for value, sections in sections_by_value.items():
            if value == chosen:
                continue
            for section in sections:
                if section in cfg.model_fields_set and section not in sections_by_value.get(chosen, ()):
                    raise ConfigError(
                        _key(_alias(section)),
                        f"is read only with {choice} {value}, not {chosen}; remove it "
                        f"(`pulumi config rm {_key(_alias(section))}`) or set {_key(choice)} to {value}",
                    )


def _check_mirrors(cfg: _Stack) -> None:
    for host, prefix in cfg.registry_mirrors.items():
        problem = registry_host_problem(host) or mirror_prefix_problem(prefix)
        if problem:
            raise ConfigError(f'{_key("registryMirrors")}["{host}"]', problem)


VERSION_KEYS = {"hami": ("hami", "version"), "gpu_operator": ("gpuOperator", "version"),
                "kai": ("kai", "version"), "isolator": ("isolator", "version"),
                "kyverno": ("gkeCdi", "kyvernoVersion")}
"""Each chartSources key's pinned-version key."""


def _check_image_tables(cfg: _Stack) -> None:
    """A chart version the image table lacks: its images could be neither listed in `images` nor mirrored."""
    for name, version in cfg.chart_pins().items():
        chart = CHART_NAMES[name]
        if (chart, version) in CHARTS:
            continue
        known = sorted(v for c, v in CHARTS if c == chart)
        raise ConfigError(
            _key(*VERSION_KEYS[name]),
            f"{chart} {version} is not in the chart image table (components/chart_images.py knows "
            f"{', '.join(known)}), so its images could be neither listed nor mirrored; use {known[-1]}",
        )


def _check_chart_sources(cfg: _Stack) -> None:
    """A local chart must be the chart and version the stack pins: Helm installs a directory as it finds it."""
    import yaml  # here: only a local chart needs it

    sources = getattr(cfg, "chart_sources", None)
    for name, version in cfg.chart_pins().items():
        source = getattr(sources, name, None)
        if source is None or source.path is None:
            continue
        key = _key("chartSources", _alias(name), "path")
        directory = Path(source.path).expanduser()
        # Relative to the project directory, where `pulumi up` runs the program and Helm resolves the path.
        chart_file = (directory if directory.is_absolute() else PROJECT_ROOT / directory) / "Chart.yaml"
        if not chart_file.is_file():
            raise ConfigError(key, f"{chart_file} does not exist; unpack the chart there with `helm pull "
                                   f"--untar --version {version}`")
        try:
            meta = yaml.safe_load(chart_file.read_bytes().decode("utf-8"))
        except (UnicodeDecodeError, yaml.YAMLError, OSError):
            meta = None
        if not isinstance(meta, dict):
            raise ConfigError(key, f"{chart_file} is not a chart's Chart.yaml (not a YAML mapping); unpack the chart "
                                   f"there with `helm pull --untar --version {version}`")
        found = (str(meta.get("name")), str(meta.get("version")))
        if found[0] != CHART_NAMES[name] or found[1].lstrip("v") != version.lstrip("v"):
            raise ConfigError(key, f"{chart_file} is {found[0]} {found[1]}, but this stack pins "
                                   f"{CHART_NAMES[name]} {version}; unpack that version there")


def _check_network(vm: VmConfig) -> None:
    if not vm.allowed_source_ranges:
        raise ConfigError(
            _key("vm", "allowedSourceRanges"),
            "required: the CIDRs allowed to reach SSH and the Kubernetes API, such as your IP as 203.0.113.7/32",
        )
    if validate.covers_whole_internet(vm.allowed_source_ranges) and not vm.allow_world_open:
        ranges = ", ".join(vm.allowed_source_ranges)
        raise ConfigError(
            _key("vm", "allowedSourceRanges"),
            f"{ranges} opens SSH and the Kubernetes API to the whole internet; give your own range, or set "
            "gpushare:vm.allowWorldOpen to true to accept that",
        )


def _check_gpu(cfg: _Stack) -> None:
    if cfg.gpu.memory_mib is None and cfg.gpu.type not in GPU_MODELS:
        raise ConfigError(
            _key("gpu", "memoryMiB"),
            f"GPU type {cfg.gpu.type!r} is not in the GPU table ({', '.join(sorted(GPU_MODELS))}); set "
            "gpushare:gpu.memoryMiB to what nvidia-smi reports",
        )


def _check_slices(cfg: _Stack) -> None:
    if getattr(cfg, "sharing", None) in GKE_NATIVE:
        return  # GKE sets the slice from the clients per card (_check_gke_native)
    card, slice_mib = cfg.card_mib, cfg.slice_mib
    if slice_mib > card:
        raise ConfigError(
            _key("verify", "sliceMiB"),
            f"{slice_mib} MiB is larger than the card ({card} MiB on {cfg.gpu_type}); set it below {card // 2}",
        )
    if 2 * slice_mib > card:
        raise ConfigError(
            _key("verify", "sliceMiB"),
            f"two slices of {slice_mib} MiB do not fit one {card} MiB card, so the Pods cannot share it; set it "
            f"to at most {card // 2}",
        )
    if cfg.verify.overcommit_mib is not None and not overcommit_is_valid(card, slice_mib, cfg.overcommit_mib):
        left = remaining_mib(card, slice_mib)
        raise ConfigError(
            _key("verify", "overcommitMiB"),
            f"{cfg.overcommit_mib} MiB must be above what two slices leave ({left} MiB) and at most the card "
            f"({card} MiB), or the Pod is not proof of per-card accounting; leave it unset to compute it",
        )


def _check_gke_native(cfg: GkeStack) -> None:
    """GKE's own sharing fixes the slice itself: refuse the verify settings that contradict it, with what works."""
    if cfg.sharing not in GKE_NATIVE:
        return
    clients, v = cfg.gke_sharing.max_shared_clients_per_gpu, cfg.verify
    if cfg.sharing == "mps":
        limits = mps_limits(cfg.card_mib, clients)
        if v.slice_mib is not None and v.slice_mib != limits.pinned_mib:
            raise ConfigError(_key("verify", "sliceMiB"), f"{v.slice_mib} MiB: MPS slices are equal, the card's "
                              f"{cfg.card_mib} MiB over {clients} clients; set it to {limits.pinned_mib} or leave it "
                              "unset (or change gkeSharing.maxSharedClientsPerGpu)")
        if v.cores_percent is not None and v.cores_percent != limits.thread_percentage:
            raise ConfigError(_key("verify", "coresPercent"), f"{v.cores_percent}%: MPS gives each of {clients} "
                              f"clients {limits.thread_percentage}% of the threads; set it to "
                              f"{limits.thread_percentage} or leave it unset")
        hold, extra = round(v.hold_gib * 1024), round(v.extra_gib * 1024)
        if hold >= limits.pinned_mib:
            raise ConfigError(_key("verify", "holdGiB"), f"{v.hold_gib:g} GiB does not fit under MPS's "
                              f"{limits.pinned_mib} MiB limit; set it below {limits.pinned_mib / 1024:.2f}")
        if hold + extra <= limits.pinned_mib:
            raise ConfigError(_key("verify", "extraGiB"), f"{v.hold_gib:g} GiB held + {v.extra_gib:g} GiB more "
                              f"fits under MPS's {limits.pinned_mib} MiB limit, so nothing would be refused; set it "
                              f"above {(limits.pinned_mib - hold) / 1024:.2f}")
    else:
        for key, value in (("sliceMiB", v.slice_mib), ("coresPercent", v.cores_percent)):
            if value is not None:
                raise ConfigError(_key("verify", key), "time-sharing hands each Pod the whole card with no memory "
                                  "or compute limit, so there is none to ask for; remove it")
    if v.overcommit_mib is not None:
        raise ConfigError(_key("verify", "overcommitMiB"), f"GKE's {cfg.sharing} counts Pods, not MiB: the "
                          f"over-commit Pod asks for one slot more than the {clients} × {cfg.gpu.per_node} slots of "
                          "its node leave free; remove it")


def _check_proof_numbers(cfg: _Stack) -> None:
    """The proof's own numbers against the quota: the hold fits it, and the hold plus the extra does not."""
    if getattr(cfg, "sharing", None) in GKE_NATIVE:
        return  # GKE's own sharing: MPS's limit is checked in _check_gke_native, time-sharing has none
    v, quota = cfg.verify, cfg.quota_mib
    hold, extra = round(v.hold_gib * 1024), round(v.extra_gib * 1024)
    if hold > quota:
        raise ConfigError(
            _key("verify", "holdGiB"),
            f"{v.hold_gib:g} GiB ({hold} MiB) is more than each proof Pod's quota ({quota} MiB), so the hold itself "
            f"would be refused; set it to at most {quota / 1024:.2f}",
        )
    if not any(size * 1024 > quota for size in v.sweep_gib):
        raise ConfigError(
            _key("verify", "sweepGiB"),
            f"no size above the {quota} MiB quota ({quota / 1024:.2f} GiB), so the sweep cannot show the quota hold; "
            f"add one such as {math.ceil(quota / 1024) + 1}",
        )
    if hold + extra <= quota:
        raise ConfigError(
            _key("verify", "extraGiB"),
            f"the hold ({hold} MiB) plus {v.extra_gib:g} GiB ({extra} MiB) still fits the {quota} MiB quota, so "
            f"nothing would be refused; set it above {(quota - hold) / 1024:.2f}",
        )


def _check_split_count(hami: HamiConfig) -> None:
    """Both slice Pods and the over-commit Pod must find a slot on one card, or the last is refused for a slot."""
    placed = 3
    if hami.device_split_count < placed:
        raise ConfigError(
            _key("hami", "deviceSplitCount"),
            f"{hami.device_split_count} slots per card, but the proof places {placed} Pods on one card (two slices "
            f"and the over-commit Pod, which must be refused for memory, not for a slot); set it to at least "
            f"{placed}",
        )


def _check_hami(cfg: K3sStack | ExistingStack, hami: HamiConfig, *, cdi_enabled: bool) -> None:
    _check_split_count(hami)
    if hami.scheduler_image_tag is not None:
        wanted = kubernetes_release(cfg.server_version)
        if hami.scheduler_image_tag != wanted:
            raise ConfigError(
                _key("hami", "schedulerImageTag"),
                f"{hami.scheduler_image_tag!r} does not match the server version {cfg.server_version} "
                f"({cfg.server_version_key}); HAMi's kube-scheduler must run {wanted}: set it to {wanted} or leave "
                "it unset",
            )
    if hami.runtime_class_name == "nvidia" and cdi_enabled:
        raise ConfigError(
            _key("hami", "runtimeClassName"),
            "'nvidia' under a GPU Operator with CDI on makes HAMi's Pods fail with `unresolvable CDI devices`; "
            "use nvidia-legacy or leave it unset",
        )
    if hami.runtime_class_name == "nvidia-legacy" and not cdi_enabled:
        raise ConfigError(
            _key("hami", "runtimeClassName"),
            "nvidia-legacy exists only while the GPU Operator's CDI is on; leave it unset",
        )


# --- reading ---------------------------------------------------------------------------------------------


def _sections_of(variant: type[_Stack]) -> set[str]:
    return {_alias(name) for name in variant.model_fields}


def _owners(key: str) -> list[str]:
    return [platform for platform, variant in VARIANTS.items() if key in _sections_of(variant)]


def _check_shape(data: Mapping[str, Any]) -> type[_Stack]:
    """Before pydantic: the platform, then no section of another platform, then no key that moved."""
    platform = data.get("platform")
    if platform is None:
        raise ConfigError(_key("platform"), f"required: one of {', '.join(PLATFORMS)}")
    if not isinstance(platform, str) or platform not in VARIANTS:
        raise ConfigError(
            _key("platform"),
            f"{platform!r} is not allowed; expected 'gke', 'k3s-vm', 'existing-host' or 'existing'",
        )
    variant = VARIANTS[platform]
    own = _sections_of(variant)
    for key, value in data.items():
        if key in own:
            if isinstance(value, Mapping):
                for inner in value:
                    if (key, str(inner)) in REPLACED_KEYS:
                        raise ConfigError(_key(key, inner), REPLACED_KEYS[(key, str(inner))])
                    moved = MOVED_KEYS.get((key, str(inner)))
                    if moved is not None:
                        raise ConfigError(_key(key, inner), f"moved: set {_key(moved)} instead (one GPU description "
                                                            "for every platform)")
            continue
        owners = _owners(key)
        if owners:
            raise ConfigError(
                _key(key),
                f"belongs to platform {' or '.join(owners)}, not {platform}; remove it "
                f"(`pulumi config rm {_key(key)}`)",
            )
    for choice in ("toolkit", "sharing"):
        value = data.get(choice)
        allowed = _literal_values(variant, choice)
        if value is not None and value not in allowed:
            reason = _WRONG_CHOICE.get((platform, choice, str(value))) or _WRONG_CHOICE.get((platform, choice, "*"))
            if reason is None:
                reason = f"expected {' or '.join(repr(v) for v in allowed)} on platform {platform}"
            raise ConfigError(_key(choice), f"{value!r} on platform {platform}: {reason}")
    return variant


def _literal_values(variant: type[_Stack], field_name: str) -> tuple[Any, ...]:
    return tuple(getattr(variant.model_fields[field_name].annotation, "__args__", ()))


def _first_error(err: ValidationError, variant: type[_Stack]) -> ConfigError:
    """One line from pydantic's errors: the full key, and for an unknown key the nearest known one."""
    e = err.errors()[0]
    loc = [str(p) for p in e["loc"]]
    if loc and loc[0] in VARIANTS:  # the discriminated union puts the platform first
        loc = loc[1:]
    if e["type"] == "extra_forbidden":
        parent_fields = _fields_at(variant, loc[:-1])
        close = difflib.get_close_matches(loc[-1], parent_fields, n=1)
        hint = f"did you mean {close[0]}?" if close else f"known keys: {', '.join(sorted(parent_fields))}"
        return ConfigError(_key(*loc), f"unknown key; {hint}")
    if e["type"] == "missing":
        doc = variant.model_fields[loc[0]].description if len(loc) == 1 and loc[0] in variant.model_fields else None
        return ConfigError(_key(*loc), f"required for platform {_platform_of(variant)}"
                                       f"{': ' + doc if doc else ''}; set it in the stack file (see README)")
    message = e["msg"].removeprefix("Value error, ")
    if e["type"] in ("int_parsing", "float_parsing") and e.get("input") in ("true", "false"):
        message = f"{e['input']} is a yes/no, not a number; give a number"
    if e["type"] == "literal_error":
        message = f"{e['input']!r} is not allowed; {message[0].lower()}{message[1:]}"
    return ConfigError(_key(*loc), message)


def _platform_of(variant: type[_Stack]) -> str:
    return next(p for p, v in VARIANTS.items() if v is variant)


def _fields_at(variant: type[BaseModel], loc: list[str]) -> list[str]:
    model: type[BaseModel] | None = variant
    for part in loc:
        if model is None:
            return []
        field = next((f for n, f in model.model_fields.items() if _alias(n) == part), None)
        if field is None:
            return []
        model = _model_of(field.annotation)
    return [_alias(n) for n in model.model_fields] if model else []


def _model_of(annotation: Any) -> type[BaseModel] | None:
    for candidate in (annotation, *getattr(annotation, "__args__", ())):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return candidate
    return None


def parse(raw: Mapping[str, Any]) -> StackConfig:
    """Validate `gpushare:`-namespaced values (strings hold JSON, as Pulumi passes them) into a StackConfig."""
    data: dict[str, Any] = {}
    for full_key, value in raw.items():
        namespace, _, key = full_key.partition(":")
        if namespace != NAMESPACE:
            continue
        if isinstance(value, str):
            try:
                decoded = json.loads(value)
                value = decoded if isinstance(decoded, (dict, list)) else value
            except json.JSONDecodeError:
                pass
        data[key] = value
    variant = _check_shape(data)
    try:
        cfg = _ADAPTER.validate_python(data)
    except ValidationError as err:
        raise _first_error(err, variant) from None
    cfg.check()
    return cfg


def load() -> StackConfig:
    """Read this stack's `gpushare:` config from the Pulumi runtime and validate it."""
    from components.pulumi_internals import config_values  # here, so the models import without the runtime

    return parse(config_values(NAMESPACE))
