"""What the record (record.py) knows of Pods beyond their probes: ghost quota, why a container is not running, and
the names HAMi writes. Standard library only; pure functions over validated Pod records.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .parse import parse_allocation

HAMI_BIND_ANNOTATIONS = ("hami.io/vgpu-devices-to-allocate", "hami.io/vgpu-node", "hami.io/bind-phase")
DEFAULT_ALLOCATION_ANNOTATION = "hami.io/vgpu-devices-allocated"
NOT_RUNNING_REASONS = frozenset(
    {
        "ImagePullBackOff",
        "ErrImagePull",
        "CrashLoopBackOff",
        "CreateContainerError",
        "CreateContainerConfigError",
        "RunContainerError",
        "ContainerCannotRun",
    }
)


def waiting_reason(pod: Mapping[str, Any]) -> str | None:
    for status in pod.get("containerStatuses") or []:
        reason = ((status.get("state") or {}).get("waiting") or {}).get("reason")
        if reason:
            return str(reason)
    return None


def _held_devices(pod: Mapping[str, Any], annotation: str) -> tuple[list[dict[str, Any]], str | None]:
    annotations = pod.get("annotations") or {}
    for key in (annotation, "hami.io/vgpu-devices-to-allocate"):
        devices = parse_allocation(annotations.get(key))
        if devices:
            return devices, key
    bound = [key for key in HAMI_BIND_ANNOTATIONS if annotations.get(key)]
    return [], (bound[0] if bound else None)


def ghost_quota(
    pods: Mapping[str, Mapping[str, Any]], annotation: str = DEFAULT_ALLOCATION_ANNOTATION
) -> list[dict[str, Any]]:
    """Pods that are not running (Pending, ImagePullBackOff, CrashLoopBackOff) yet hold HAMi quota.

    HAMi charges a card at bind time, so such a Pod keeps its memory and cores until it is deleted.
    """
    ghosts = []
    for name, pod in sorted(pods.items()):
        phase = str(pod.get("phase") or "Unknown")
        waiting = waiting_reason(pod)
        if phase not in ("Pending", "Unknown") and waiting not in NOT_RUNNING_REASONS:
            continue
        devices, source = _held_devices(pod, annotation)
        if source is None:
            continue
        ghosts.append(
            {
                "pod": pod.get("name") or name,
                "namespace": pod.get("namespace"),
                "phase": phase,
                "reason": waiting or phase,
                "node": pod.get("nodeName") or (pod.get("annotations") or {}).get("hami.io/vgpu-node"),
                "annotation": source,
                "devices": devices,
                "memMiB": sum(d["memMiB"] for d in devices),
                "cores": sum(d["cores"] for d in devices),
            }
        )
    return ghosts
