"""The GPU software sections a stack config composes: each is the very type its component takes.

No Pulumi here: config checks these before the program loads.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, Field, field_validator, model_validator

from components import validate
from components.contracts.settings import AbsolutePath, Count, K8sNamespace, Labels, Settings, Text, checked
from components.gke_sharing import MAX_CLIENTS, MIN_CLIENTS


class ChartSourceConfig(Settings):
    """Where one chart comes from instead of its public repository; the version stays the pinned one."""

    repository: Annotated[Text, AfterValidator(validate.chart_repository)] | None = None
    """`oci://host/path` (the chart is `<repository>/<chart>`) or an `https://` Helm repository."""
    path: Annotated[Text, Field(min_length=1)] | None = None
    """A local directory holding the unpacked chart (`helm pull --untar`), at the pinned version."""

    @model_validator(mode="after")
    def _one_source(self) -> ChartSourceConfig:
        if (self.repository is None) == (self.path is None):
            raise ValueError(
                "set exactly one of repository and path; a chart left out comes from its public repository"
            )
        return self


def _priority_class(name: str) -> str:
    """Empty (no PriorityClass) or a PriorityClass name."""
    return name and validate.dns_subdomain(name, "PriorityClass name")


class KaiConfig(Settings):
    """KAI Scheduler with GPU sharing and the HAMi-core binder."""

    version: Annotated[Text, checked(validate.pinned_chart, "v0.17.0", True)] = "v0.17.0"
    """Pinned chart version."""
    namespace: K8sNamespace = "kai-scheduler"
    """Namespace of the release."""
    cdi_enabled: str = "true"
    """`binder.plugins.gpusharing.arguments.cdiEnabled`; a string, since the Config CRD types it so."""
    queue: Annotated[Text, checked(validate.dns_label, "queue name")] = "default-queue"
    """Queue the proof Pods are labelled with."""
    parent_queue: Annotated[Text, checked(validate.dns_label, "queue name")] = "default-parent-queue"
    """Parent of `queue`; the stack creates both and deletes them on destroy (with `deleteKeptQueues` false, KAI's
    chart creates them and keeps them after uninstall)."""
    delete_kept_queues: bool = True
    """Delete the queues KAI keeps (`helm.sh/resource-policy: keep`) when the stack is destroyed."""

    @field_validator("cdi_enabled", mode="before")
    @classmethod
    def _cdi_string(cls, value: Any) -> Any:
        if not isinstance(value, str):
            raise ValueError(
                f'must be the string "true" or "false", not {type(value).__name__} {value!r}: '
                "the Config CRD rejects a boolean; quote it"
            )
        if value not in ("true", "false"):
            raise ValueError(f'must be "true" or "false", not {value!r}')
        return value


class IsolatorConfig(Settings):
    """kai-resource-isolator: ships HAMi-core to the nodes, injects it, and monitors it."""

    version: Annotated[Text, checked(validate.pinned_chart, "1.1.0-chart", False)] = "1.1.0-chart"
    """Pinned chart version."""
    namespace: K8sNamespace = "kai-resource-isolator"
    """Namespace of the release."""
    container_vgpu_mount: AbsolutePath = "/home/kubernetes/bin/nvidia/vgpu"
    """Where HAMi-core lands on the node; on COS only /home/kubernetes/bin is writable."""
    library_sync_priority_class: Annotated[Text, AfterValidator(_priority_class)] = ""
    """Empty: GKE refuses system-node-critical outside system namespaces."""
    monitor_priority_class: Annotated[Text, AfterValidator(_priority_class)] = ""
    """Empty, for the same reason."""
    monitor_enabled: bool = True
    """The per-node monitor whose metrics the proof reads."""


class GkeCdiConfig(Settings):
    """The GKE 1.35/COS/CDI workarounds; each switch names the symptom it fixes."""

    nvidia_runtime_class: bool = True
    """Create RuntimeClass `nvidia` (handler runc): fixes `RuntimeClass "nvidia" not found`."""
    runtime_class_handler: Annotated[Text, checked(validate.dns_label, "RuntimeClass handler")] = "runc"
    """Handler of that RuntimeClass; GKE's CDI path has no nvidia handler."""
    kyverno: bool = True
    """Install Kyverno for the two injection policies below."""
    kyverno_version: Annotated[Text, checked(validate.pinned_chart, "3.8.2", False)] = "3.8.2"
    """Pinned Kyverno chart (current when the lab was verified)."""
    kyverno_namespace: K8sNamespace = "kyverno"
    """Namespace of the Kyverno release."""
    inject_nvml_library_path: bool = True
    """Policy: NVML path for KAI's reservation Pods; fixes `ERROR_LIBRARY_NOT_FOUND`."""
    inject_gpu_devices: bool = True
    """Policy: /dev/nvidia*, nvidia-smi and driver libraries for sharing Pods, which see no devices otherwise."""
    nvidia_install_dir: AbsolutePath = "/home/kubernetes/bin/nvidia"
    """Where GKE installs the driver on COS."""


class HamiConfig(Settings):
    """HAMi: scheduler extender, device plugin and HAMi-core."""

    version: Annotated[Text, checked(validate.pinned_chart, "2.10.0", False)] = "2.10.0"
    """Pinned chart version (2.9.0 and 2.10.0 are supported)."""
    namespace: K8sNamespace = "hami-system"
    """Namespace of the release."""
    scheduler_image: Annotated[Text, AfterValidator(validate.image_repository)] = "registry.k8s.io/kube-scheduler"
    """kube-scheduler image, without its tag: upstream's; the chart's own default is a regional mirror,
    `registry.cn-hangzhou.aliyuncs.com/google_containers/kube-scheduler`, which the example stacks keep."""
    scheduler_image_tag: Annotated[Text, AfterValidator(validate.kubernetes_version)] | None = None
    """kube-scheduler image tag; unset, the chart takes the server's own version; a pin must equal the known one."""
    device_split_count: Count = Field(10, ge=1)
    """Pods that may share one card."""
    node_label: Labels = Field(default_factory=lambda: {"gpu": "on"}, min_length=1)
    """The label HAMi's device plugin selects nodes by."""
    runtime_class_name: Annotated[Text, checked(validate.dns_subdomain, "RuntimeClass name")] | None = None
    """Device plugin RuntimeClass; unset picks `nvidia-legacy` under a CDI GPU Operator, none otherwise."""
    wait_timeout_seconds: Count = Field(300, ge=30, le=3600)
    """How long the install may take."""

    @field_validator("version")
    @classmethod
    def _supported(cls, version: str) -> str:
        if version not in ("2.9.0", "2.10.0"):
            raise ValueError(f"{version!r} is not a HAMi chart this project knows; use 2.9.0 or 2.10.0")
        return version


class GpuOperatorConfig(Settings):
    """NVIDIA GPU Operator, used only for its container toolkit."""

    version: Annotated[Text, checked(validate.pinned_chart, "v26.7.0", True)] = "v26.7.0"
    """Pinned chart version."""
    namespace: K8sNamespace = "gpu-operator"
    """Namespace of the release."""
    driver_enabled: bool = False
    """False: the host driver stays; the operator's would fight it."""
    device_plugin_enabled: bool = False
    """False: HAMi's device plugin is the only one; two would both advertise nvidia.com/gpu."""
    cdi_enabled: bool = True
    """The chart's CDI default since 25.10; it decides HAMi's RuntimeClass."""


class GkeSharingConfig(Settings):
    """GKE's own GPU sharing (sharing mps or time-sharing): the node pool's gpu_sharing_config."""

    max_shared_clients_per_gpu: Count = 2
    """Pods that share one card; MPS gives each 1/N of its memory and threads. The proof's two Pods fill 2."""

    @field_validator("max_shared_clients_per_gpu")
    @classmethod
    def _clients(cls, clients: int) -> int:
        if not MIN_CLIENTS <= clients <= MAX_CLIENTS:
            raise ValueError(f"{clients} is outside what GKE accepts; give {MIN_CLIENTS} to {MAX_CLIENTS}")
        return clients
