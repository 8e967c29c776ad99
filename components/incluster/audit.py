"""Which Pods can reach a GPU, and is each held to a quota? One classification, read from Pod specs alone.

Standard library only: the verifier runs it inside the cluster (the `gpuAudit` output) and
`python -m components.audit` runs it from a laptop. It reads a Pod's spec, metadata and status, never what runs
inside. Every Pod that can reach a GPU lands in one class, with the first reason that applies:

- `system`: in a namespace of the GPU software itself (device plugin, toolkit, monitor need the whole card);
- `unlimited`: a way around every quota (opt-outs, env or device paths without a request, a whole card, ...);
- `limited`: the mechanism's quota evidence is on the Pod (HAMi's allocation, the isolator's preload, MPS).

Limits: an image's own ENV (NVIDIA's CUDA images set NVIDIA_VISIBLE_DEVICES=all) is not in the spec; only the
toolkit switch (`accept-nvidia-visible-devices-envvar-when-unprivileged = false`) closes that.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from .evidence.strict import backsteps, normal_path

LIMITED, UNLIMITED, SYSTEM = "limited", "unlimited", "system"
CLASSES = (LIMITED, UNLIMITED, SYSTEM)
GPU_RESOURCE_PREFIX = "nvidia.com/"
VISIBLE_DEVICES = "NVIDIA_VISIBLE_DEVICES"
# The toolkit reads these values as "no device" (nvidia-container-toolkit internal/config/image/cuda_image.go).
NO_DEVICE_VALUES = ("", "void", "none")
DISABLE_CONTROL = "CUDA_DISABLE_CONTROL"
# HAMi's device plugin reads it with Go's strconv.ParseBool (HAMi pkg/device-plugin/nvidiadevice/nvinternal/plugin/
# server.go, Allocate): these are its true values.
PARSE_BOOL_TRUE = ("1", "t", "T", "TRUE", "true", "True")
HAMI_ALLOCATED = "hami.io/vgpu-devices-allocated"
# HAMi's slice resources (the hami-scheduler-device ConfigMap the chart renders: resourceMemoryName, ...).
HAMI_SLICE_RESOURCES = ("nvidia.com/gpumem", "nvidia.com/gpumem-percentage")
KAI_SLICE_ANNOTATIONS = ("gpu-memory", "gpu-fraction")
ISOLATOR_INJECT = "kai-resource-isolator.io/inject"
PRELOAD_PATH = "/etc/ld.so.preload"
NODE_MEMORY_LABEL = "nvidia.com/gpu.memory"
GKE_STRATEGY_LABEL = "cloud.google.com/gke-gpu-sharing-strategy"
DEVICE_PATH_PREFIXES = ("/dev/nvidia",)
WHOLE_DEVICE_TREES = ("/", "/dev")
"""Paths in their normal form (strict.normal_path): `/dev/`, `/dev/.` and `//dev` are `/dev`."""

REASONS: dict[str, str] = {
    "system-namespace": "a namespace of the GPU software itself, which needs the whole card",
    "cuda-disable-control": "CUDA_DISABLE_CONTROL=true in its spec: HAMi's device plugin mounts no ld.so.preload",
    "isolator-inject-false": f'{ISOLATOR_INJECT}: "false": the isolator injects no HAMi-core',
    "visible-devices-without-request": "NVIDIA_VISIBLE_DEVICES in a container that requests no GPU: the nvidia"
    " runtime hands it the cards outside every scheduler's accounting",
    "device-host-path": "a hostPath of the GPU device nodes: the cards without any request",
    "isolator-not-injected": "asks KAI for a slice but carries no ld.so.preload mount: HAMi-core is not injected",
    "node-without-memory-label": f"asks KAI for a slice on a node without {NODE_MEMORY_LABEL}, where the isolator"
    " injects nothing",
    "whole-gpu": "a whole nvidia.com/gpu with no slice: no memory quota",
    "time-sharing": "GKE time-sharing: a slot per Pod, no memory or compute limit",
    "resource-claim": "a DRA resource claim: the audit does not read what the claim holds",
    "privileged": "a privileged container: every device node of its node, no request",
    "hami-allocated": "HAMi allocated a slice (its allocation annotation): HAMi-core holds it to the quota",
    "hami-slice-requested": "asks HAMi for a slice, not yet allocated: the quota comes with the allocation",
    "isolator-injected": "asks KAI for a slice and the isolator mounted HAMi-core's ld.so.preload",
    "mps": "GKE MPS: the device plugin sets each client's pinned memory and thread limit",
}
"""Every reason the audit gives, with its sentence (docs/audit.md lists them by class)."""


def _containers(spec: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    groups = ("initContainers", "containers", "ephemeralContainers")
    return [c for g in groups for c in (spec.get(g) or []) if isinstance(c, Mapping)]


def _env(container: Mapping[str, Any], name: str) -> str | None:
    """The literal value of `name` ("?" when it comes from elsewhere), or None when unset."""
    for item in container.get("env") or []:
        if item.get("name") == name:
            return str(item["value"]) if item.get("value") is not None else "?" if item.get("valueFrom") else ""
    return None


def _gpu_resources(container: Mapping[str, Any]) -> set[str]:
    resources = container.get("resources") or {}
    names = {*(resources.get("limits") or {}), *(resources.get("requests") or {})}
    return {n for n in names if n.startswith(GPU_RESOURCE_PREFIX)}


def _asks_visible_devices(container: Mapping[str, Any]) -> bool:
    value = _env(container, VISIBLE_DEVICES)
    return value is not None and value.strip().lower() not in NO_DEVICE_VALUES


def is_device_path(path: str) -> bool:
    """A hostPath that reaches the GPU device nodes, judged on its normal form (`/dev//nvidia0` is `/dev/nvidia0`);
    one with a `..` segment is not resolved but counted (the API server refuses it: validatePathNoBacksteps)."""
    normal = normal_path(path)
    return backsteps(path) or normal.startswith(DEVICE_PATH_PREFIXES) or normal in WHOLE_DEVICE_TREES


_SKIP = r"/(\.?/)*"
"""One separator as the kernel reads it: `/` followed by any `./` and `/`."""


def device_path_pattern() -> str:
    """`is_device_path` as one RE2 pattern (the admission guard's CEL `matches`): the same paths, spelled any way."""

    def segments(path: str) -> list[str]:
        return [re.escape(s) for s in path.split("/") if s]

    trees = [r"^/(\.?/)*\.?$" if not segments(t) else "^" + _SKIP + _SKIP.join(segments(t)) + r"(/\.?)*$"
             for t in WHOLE_DEVICE_TREES]  # fmt: skip
    prefixes = ["^" + _SKIP + _SKIP.join(segments(p)) for p in DEVICE_PATH_PREFIXES]
    return "|".join([*trees, *prefixes, r"(^|/)\.\.(/|$)"])


def _device_host_paths(spec: Mapping[str, Any]) -> list[str]:
    paths = [str((v.get("hostPath") or {}).get("path") or "") for v in spec.get("volumes") or [] if v.get("hostPath")]
    return [p for p in paths if is_device_path(p)]


def _privileged(container: Mapping[str, Any]) -> bool:
    return bool((container.get("securityContext") or {}).get("privileged"))


def gpu_access(pod: Mapping[str, Any]) -> list[str]:
    """The ways this Pod reaches a GPU, from its spec and annotations ([]: it cannot)."""
    spec, annotations = pod.get("spec") or {}, (pod.get("metadata") or {}).get("annotations") or {}
    containers = _containers(spec)
    ways = []
    if any(_gpu_resources(c) for c in containers):
        ways.append("gpu-request")
    if any(annotations.get(a) for a in KAI_SLICE_ANNOTATIONS):
        ways.append("kai-slice")
    if any(_asks_visible_devices(c) for c in containers):
        ways.append("visible-devices-env")
    if _device_host_paths(spec):
        ways.append("device-host-path")
    if spec.get("resourceClaims"):
        ways.append("resource-claim")
    if any(_privileged(c) for c in containers):
        ways.append("privileged")
    return ways


def _verdict(pod: Mapping[str, Any], klass: str, reason: str, ways: Sequence[str]) -> dict[str, Any]:
    meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    return {
        "pod": f"{meta.get('namespace') or 'default'}/{meta.get('name')}",
        "node": spec.get("nodeName"),
        "class": klass,
        "reason": reason,
        "access": list(ways),
    }


def classify(
    pod: Mapping[str, Any],
    system_namespaces: Iterable[str] = (),
    nodes: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, Any] | None:
    """One Pod → {"pod", "node", "class", "reason", "access"}, or None when it cannot reach a GPU.

    `nodes` (node_facts: name → {"gpu", "labels"}) sharpens what the spec alone cannot say: KAI's memory label,
    GKE's sharing strategy, and whether a privileged Pod sits on a GPU node at all (None: any node may be one).
    """
    ways = gpu_access(pod)
    meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    node = spec.get("nodeName")
    facts = (nodes or {}).get(node) if node else None
    labels = None if facts is None else facts.get("labels") or {}
    if ways == ["privileged"] and facts is not None and not facts.get("gpu"):
        return None  # a privileged Pod on a node with no GPU reaches none
    if not ways:
        return None
    if meta.get("namespace") in set(system_namespaces):
        return _verdict(pod, SYSTEM, "system-namespace", ways)
    containers = _containers(spec)
    annotations = meta.get("annotations") or {}
    if "kai-slice" in ways:
        if str(annotations.get(ISOLATOR_INJECT, "")).strip().lower() == "false":
            return _verdict(pod, UNLIMITED, "isolator-inject-false", ways)
        if any(m.get("mountPath") == PRELOAD_PATH for c in containers for m in c.get("volumeMounts") or []):
            return _verdict(pod, LIMITED, "isolator-injected", ways)
        if labels is not None and NODE_MEMORY_LABEL not in labels:
            return _verdict(pod, UNLIMITED, "node-without-memory-label", ways)
        return _verdict(pod, UNLIMITED, "isolator-not-injected", ways)
    if any(_env(c, DISABLE_CONTROL) in PARSE_BOOL_TRUE for c in containers):
        return _verdict(pod, UNLIMITED, "cuda-disable-control", ways)
    if any(_asks_visible_devices(c) and not _gpu_resources(c) for c in containers):
        return _verdict(pod, UNLIMITED, "visible-devices-without-request", ways)
    if "device-host-path" in ways:
        return _verdict(pod, UNLIMITED, "device-host-path", ways)
    requested = {r for c in containers for r in _gpu_resources(c)}
    if requested:
        if any(r in requested for r in HAMI_SLICE_RESOURCES):
            allocated = bool(annotations.get(HAMI_ALLOCATED))
            return _verdict(pod, LIMITED, "hami-allocated" if allocated else "hami-slice-requested", ways)
        strategy = (labels or {}).get(GKE_STRATEGY_LABEL) or (spec.get("nodeSelector") or {}).get(GKE_STRATEGY_LABEL)
        if strategy == "mps":
            return _verdict(pod, LIMITED, "mps", ways)
        if strategy == "time-sharing":
            return _verdict(pod, UNLIMITED, "time-sharing", ways)
        return _verdict(pod, UNLIMITED, "whole-gpu", ways)
    if "resource-claim" in ways:
        return _verdict(pod, UNLIMITED, "resource-claim", ways)
    return _verdict(pod, UNLIMITED, "privileged", ways)


def is_gpu_node(labels: Mapping[str, str], capacity: Mapping[str, Any] | None = None) -> bool:
    """A node with GPUs: it offers an nvidia.com/ resource, or GKE, NFD or the GPU Operator label it so."""
    if any(str(k).startswith(GPU_RESOURCE_PREFIX) for k in (capacity or {})):
        return True
    return bool(
        labels.get("cloud.google.com/gke-accelerator")
        or labels.get("nvidia.com/gpu.present") == "true"
        or labels.get(NODE_MEMORY_LABEL)
        or labels.get("feature.node.kubernetes.io/pci-10de.present") == "true"
    )


def node_facts(nodes: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Node objects → name → {"gpu": has GPUs, "labels": its labels}."""
    facts = {}
    for obj in nodes:
        meta, status = obj.get("metadata") or {}, obj.get("status") or {}
        labels = {str(k): str(v) for k, v in (meta.get("labels") or {}).items()}
        facts[str(meta.get("name"))] = {"gpu": is_gpu_node(labels, status.get("capacity")), "labels": labels}
    return facts


def audit(
    pods: Iterable[Mapping[str, Any]],
    system_namespaces: Iterable[str] = (),
    nodes: Iterable[Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """Every Pod that can reach a GPU, classified: {"counts": {class: n}, "pods": [...]}, unlimited first."""
    namespaces = sorted(set(system_namespaces))
    facts = None if nodes is None else node_facts(nodes)
    found = [v for v in (classify(p, namespaces, facts) for p in pods) if v is not None]
    order = {UNLIMITED: 0, SYSTEM: 1, LIMITED: 2}
    found.sort(key=lambda v: (order[v["class"]], v["pod"]))
    return {
        "counts": {k: sum(1 for v in found if v["class"] == k) for k in CLASSES},
        "pods": found,
        "systemNamespaces": namespaces,
    }


def summary(result: Mapping[str, Any], listed: int = 20) -> dict[str, Any]:
    """The audit for the termination message: the counts and up to `listed` unlimited Pods (the log has all)."""
    unlimited = [
        {k: v.get(k) for k in ("pod", "reason")} for v in result.get("pods") or [] if v.get("class") == UNLIMITED
    ]
    if result.get("error"):
        return {"error": result["error"], "systemNamespaces": list(result.get("systemNamespaces") or [])}
    out: dict[str, Any] = {"counts": dict(result.get("counts") or {}), "unlimited": unlimited[:listed],
                           "systemNamespaces": list(result.get("systemNamespaces") or [])}  # fmt: skip
    if len(unlimited) > listed:
        out["unlistedUnlimited"] = len(unlimited) - listed
    return out


def read_audit(list_json: Callable[[str], Mapping[str, Any]], system_namespaces: Iterable[str]) -> dict[str, Any]:
    """List every Pod and node through `list_json(path)` (the verifier's API client) and audit them; a listing
    that fails gives {"error"} instead, never a guess."""
    try:
        pods = list_json("/api/v1/pods").get("items") or []
        nodes = list_json("/api/v1/nodes").get("items") or []
    except Exception as exc:  # the API client's error, whatever its type: the audit says it could not list
        return {"error": f"could not list Pods and nodes: {exc}", "systemNamespaces": sorted(system_namespaces)}
    return audit(pods, system_namespaces, nodes)


def planned(system_namespaces: Iterable[str]) -> dict[str, Any]:
    """The audit before the verifier ran: what it will count, nothing counted."""
    return {"counts": {k: None for k in CLASSES}, "unlimited": [], "systemNamespaces": sorted(system_namespaces)}
