"""The GKE 1.35 / COS / CDI workarounds KAI sharing needs there; each is a switch that names its symptom.

They hold for the GKE path lab 12 verified, not for KAI + HAMi-core in general: a cluster whose runtime has an
`nvidia` handler, or whose device plugin allocates devices to `gpu-memory` Pods, should turn them off.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi

from components.gpu.chart import ChartRelease, ChartSource, install_chart, release_images
from components.gpu.kai import GPU_MEMORY_ANNOTATION
from components.gpu.settings import GkeCdiConfig
from components.images import Mirrors
from components.providers import k8s

KYVERNO_REPO = "https://kyverno.github.io/kyverno/"
POLICY_API_VERSION = "kyverno.io/v1"
NVML_POLICY = "inject-nvidia-library-path"
DEVICES_POLICY = "inject-gpu-devices"
# Where GKE's device plugin mounts the driver into a container (container-engine-accelerators
# cmd/nvidia_gpu/nvidia_gpu.go, -container-path); the probe image's Python finds libcuda only through this.
CONTAINER_NVIDIA_DIR = "/usr/local/nvidia"
CONTAINER_LIBRARY_PATH = f"{CONTAINER_NVIDIA_DIR}/lib64"
CONTAINER_BIN_PATH = f"{CONTAINER_NVIDIA_DIR}/bin"
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
CONTAINER_DRIVER_ENV = {"LD_LIBRARY_PATH": CONTAINER_LIBRARY_PATH, "PATH": f"{CONTAINER_BIN_PATH}:{SYSTEM_PATH}"}
"""What a GPU container on GKE needs to find the mounted driver: its libraries and nvidia-smi."""
CONTROL_DEVICES = ("nvidiactl", "nvidia-uvm", "nvidia-uvm-tools")


def _all_containers(patch: dict[str, Any]) -> dict[str, Any]:
    # `(name): "*"` is Kyverno's conditional anchor: the patch applies to every container of the Pod.
    return {"(name)": "*", **patch}


def nvml_library_path_policy(reservation_namespace: str) -> dict[str, Any]:
    """ClusterPolicy spec: KAI's reservation Pods find NVML under /usr/local/nvidia/lib64.

    GKE's device plugin mounts the driver there but puts it on no search path (`ERROR_LIBRARY_NOT_FOUND`).
    """
    return {
        "background": False,  # admission only: running Pods are never rewritten
        "rules": [
            {
                "name": "nvml-library-path",
                "match": {"any": [{"resources": {"kinds": ["Pod"], "namespaces": [reservation_namespace]}}]},
                "mutate": {
                    "patchStrategicMerge": {
                        "spec": {
                            "containers": [
                                _all_containers({"env": [{"name": "LD_LIBRARY_PATH", "value": CONTAINER_LIBRARY_PATH}]})
                            ]
                        }
                    }
                },
            }
        ],
    }


ONLY_CARD = "nvidia0"
"""The node's one card. Kyverno mutates at admission, before KAI's binder knows which card the Pod's reservation
got, so the policy cannot mount the allocated card of a multi-GPU node: config/gke.py refuses gpu.perNode above 1."""


def gpu_devices_policy(nvidia_install_dir: str) -> dict[str, Any]:
    """ClusterPolicy spec: Pods that ask KAI for `gpu-memory` get the device nodes, nvidia-smi and the libraries.

    GKE's device plugin never runs Allocate() for them (they request no `nvidia.com/gpu`), so they would see no
    `/dev/nvidia*` at all. The device nodes work only in privileged containers.
    """
    devices = [*CONTROL_DEVICES, ONLY_CARD]
    volumes: list[dict[str, Any]] = [
        {"name": "gke-nvidia-install", "hostPath": {"path": nvidia_install_dir, "type": "Directory"}}
    ]
    mounts: list[dict[str, Any]] = [{"name": "gke-nvidia-install", "mountPath": CONTAINER_NVIDIA_DIR, "readOnly": True}]
    for device in devices:
        volumes.append({"name": f"dev-{device}", "hostPath": {"path": f"/dev/{device}", "type": "CharDevice"}})
        mounts.append({"name": f"dev-{device}", "mountPath": f"/dev/{device}"})
    return {
        "background": False,
        "rules": [
            {
                "name": "gpu-devices",
                "match": {"any": [{"resources": {"kinds": ["Pod"], "annotations": {GPU_MEMORY_ANNOTATION: "?*"}}}]},
                "mutate": {
                    "patchStrategicMerge": {
                        "spec": {"containers": [_all_containers({"volumeMounts": mounts})], "volumes": volumes}
                    }
                },
            }
        ],
    }


@dataclass(frozen=True)
class GkeCdiWorkaroundsArgs:
    """Which workarounds to apply, and the facts they need."""

    settings: GkeCdiConfig
    """The `gpushare:` section config validated, as it is: the one declaration of these settings."""
    reservation_namespace: str
    """Where KAI's binder creates its reservation Pods (`global.resourceReservation.namespace`)."""
    ready: Sequence[pulumi.Resource] = field(default_factory=tuple)
    mirrors: Mirrors = field(default_factory=Mirrors)
    """Where Kyverno's images come from."""
    kyverno_source: ChartSource | None = None


class GkeCdiWorkarounds(pulumi.ComponentResource):
    """RuntimeClass `nvidia`, Kyverno and its two injection policies, each on its own switch."""

    runtime_class: k8s.node.v1.RuntimeClass | None
    kyverno_release: k8s.helm.v3.Release | None
    policies: list[k8s.apiextensions.CustomResource]
    ready: list[pulumi.Resource]
    images: list[str]

    def __init__(self, name: str, args: GkeCdiWorkaroundsArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpushare:gpu:GkeCdiWorkarounds", name, None, opts)
        self.runtime_class = None
        if args.settings.nvidia_runtime_class:
            # Symptom: `RuntimeClass "nvidia" not found`. In KAI v0.17.0 it is KAI's admission that sets
            # runtimeClassName: nvidia on every gpu-memory Pod (not the reservation Pods); GKE's CDI has only runc.
            self.runtime_class = k8s.node.v1.RuntimeClass(
                f"{name}-runtime-class",
                metadata=k8s.meta.v1.ObjectMetaArgs(name="nvidia"),
                handler=args.settings.runtime_class_handler,
                opts=pulumi.ResourceOptions(parent=self, depends_on=list(args.ready)),
            )

        self.kyverno_release = None
        self.images = []
        policy_after: list[pulumi.Resource] = list(args.ready)
        if args.settings.kyverno:
            spec = ChartRelease(
                "kyverno",
                "kyverno",
                args.settings.kyverno_version,
                args.settings.kyverno_namespace,
                # The pre-delete hook removes Kyverno's webhooks, or they outlive it and block Pod admission.
                values={"webhooksCleanup": {"enabled": True}},
                repo=KYVERNO_REPO,
                source=args.kyverno_source,
                mirrors=args.mirrors,
            )
            self.kyverno_release = install_chart(self, f"{name}-kyverno", spec, after=args.ready)
            self.images = release_images(spec)
            policy_after = [self.kyverno_release]

        self.policies = []
        if args.settings.inject_nvml_library_path:
            # Symptom: KAI's reservation Pods fail with `ERROR_LIBRARY_NOT_FOUND` (NVML is off the search path).
            self.policies.append(
                self._policy(
                    name,
                    "nvml-library-path",
                    NVML_POLICY,
                    nvml_library_path_policy(args.reservation_namespace),
                    policy_after,
                )
            )
        if args.settings.inject_gpu_devices:
            # Symptom: sharing Pods see no `/dev/nvidia*`: GKE's device plugin never Allocate()s gpu-memory Pods.
            self.policies.append(
                self._policy(
                    name,
                    "gpu-devices",
                    DEVICES_POLICY,
                    gpu_devices_policy(args.settings.nvidia_install_dir),
                    policy_after,
                )
            )

        self.ready = [r for r in (self.runtime_class, *self.policies) if r is not None]
        self.register_outputs(
            {
                "runtimeClass": "nvidia" if self.runtime_class else None,
                "kyvernoStatus": self.kyverno_release.status.status if self.kyverno_release else None,
                "policies": [
                    p
                    for p, on in (
                        (NVML_POLICY, args.settings.inject_nvml_library_path),
                        (DEVICES_POLICY, args.settings.inject_gpu_devices),
                    )
                    if on
                ],
            }
        )

    def _policy(
        self, name: str, role: str, policy_name: str, spec: dict[str, Any], after: list[pulumi.Resource]
    ) -> k8s.apiextensions.CustomResource:
        return k8s.apiextensions.CustomResource(
            f"{name}-{role}",
            api_version=POLICY_API_VERSION,
            kind="ClusterPolicy",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=policy_name,
                # Ready means Kyverno has loaded the policy into its webhook; before that Pods pass unmutated.
                annotations={"pulumi.com/waitFor": "condition=Ready", "pulumi.com/timeoutSeconds": "180"},
            ),
            spec=spec,
            opts=pulumi.ResourceOptions(parent=self, depends_on=after),
        )


# KAI v0.17.0's `global.resourceReservation.namespace` default, which kai.py leaves unchanged.
KAI_RESERVATION_NAMESPACE = "kai-resource-reservation"
