"""GPU workloads: privileged containers (the GKE injection workaround) and CUDA images the driver can run."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from policies.model import dig, is_privileged, pod_shape, requests_nvidia
from policies.rule import Rule

KAI_ANNOTATIONS = ("gpu-memory", "gpu-fraction")
CUDA_IMAGE = re.compile(r"(?:^|/)nvidia/cuda:(\d+)\.(\d+)(?:\.\d+)?-")
DRIVER_MAX_CUDA = {
    525: (12, 0),
    530: (12, 1),
    535: (12, 2),
    545: (12, 3),
    550: (12, 4),
    555: (12, 5),
    560: (12, 6),
    565: (12, 7),
    570: (12, 8),
    575: (12, 9),
    580: (13, 0),
}
"""Driver branch → newest CUDA it supports (NVIDIA's CUDA/driver table; above 580 the table says nothing)."""
DRIVER_CONFIG = {"driverVersion": {"type": "string", "description": "the nodes' NVIDIA driver, e.g. 580.126.20"}}


def _gpu_pod(annotations: Mapping[str, Any], container: Mapping[str, Any]) -> bool:
    return requests_nvidia(container) or any(a in annotations for a in KAI_ANNOTATIONS)


def check_privileged_gpu_container_not_a_tenant_boundary(
    resource_type: str, props: Mapping[str, Any], config: Mapping[str, Any] | None = None
) -> list[str]:
    """A privileged GPU container sees every device and the host: sharing then is not a multi-tenant boundary."""
    shape = pod_shape(resource_type, props)
    if shape is None:
        return []
    return [
        f"container {c.get('name', '?')!r} is a privileged GPU container: not a multi-tenant boundary (it can "
        "reach every /dev/nvidia* and bypass HAMi-core); run only trusted workloads on this card"
        for c in shape.containers
        if is_privileged(c) and _gpu_pod(shape.annotations, c)
    ]


def max_cuda(driver: str) -> tuple[int, int] | None:
    """Newest CUDA a driver runs (`550.54.15` → (12, 4)); None where the table cannot say."""
    branch = str(driver).strip().split(".")[0]
    if not branch.isdigit() or int(branch) > max(DRIVER_MAX_CUDA):
        return None
    known = [b for b in DRIVER_MAX_CUDA if b <= int(branch)]
    return DRIVER_MAX_CUDA[max(known)] if known else None


def check_cuda_image_within_driver(
    resource_type: str, props: Mapping[str, Any], config: Mapping[str, Any] | None = None
) -> list[str]:
    """An `nvidia/cuda:X.Y.Z-…` image must not need a newer CUDA than the configured driver supports."""
    driver = (config or {}).get("driverVersion")
    limit = max_cuda(str(driver)) if driver else None
    shape = pod_shape(resource_type, props)
    if shape is None or limit is None:
        return []
    problems = []
    for c in shape.containers:
        match = CUDA_IMAGE.search(str(dig(c, "image") or ""))
        if match and (int(match[1]), int(match[2])) > limit:
            problems.append(
                f"container {c.get('name', '?')!r} runs {c['image']} (CUDA {match[1]}.{match[2]}) but driver "
                f"{driver} supports CUDA {limit[0]}.{limit[1]} at most: `CUDA driver version is insufficient`; "
                f"use an nvidia/cuda:{limit[0]}.{limit[1]}.x image or older (12.4.1 ran in lab 12)"
            )
    return problems


RULES = [
    Rule(
        "privileged-gpu-container-not-a-tenant-boundary",
        "Privileged GPU containers (the GKE device-injection workaround) are not a multi-tenant boundary.",
        "advisory",
        "lab 12",
        "a tenant's container can reach the whole card and the host",
        resource_check=check_privileged_gpu_container_not_a_tenant_boundary,
    ),
    Rule(
        "cuda-image-within-driver",
        "A CUDA image must not need a newer CUDA than the nodes' driver (policy config driverVersion) supports.",
        "mandatory",
        "lab 12",
        "`CUDA driver version is insufficient for CUDA runtime version`",
        resource_check=check_cuda_image_within_driver,
        config=DRIVER_CONFIG,
    ),
]
