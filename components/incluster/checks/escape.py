"""The escape a Pod takes without asking any scheduler: no GPU request, `NVIDIA_VISIBLE_DEVICES=all`.

Under the nvidia runtime (k3s's default; the GPU Operator's classes) the toolkit's hook hands such a container
every card unless it refuses the variable from unprivileged containers (nvidia-container-toolkit v1.20.0
internal/config/image/cuda_image.go:281). Its Pod runs the short memory probe: what it reports is what it reached.
Standard library only; the judge turns the raw finding into the one finding shape.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..expectation import PodTry
from .rule import probe_error

TRY_ID = "visible-devices-all"
ENV = {"NVIDIA_VISIBLE_DEVICES": "all"}
TRIED = "a Pod with no GPU request setting NVIDIA_VISIBLE_DEVICES=all, beside the proof Pods"


def observe(result: Mapping[str, Any], pod_try: PodTry) -> dict[str, Any]:
    """The raw finding from the try Pod's memory probe: bypassed when it reached a GPU at all, held when CUDA found
    none (the judge says why a Pod that reported nothing measured nothing)."""
    raw: dict[str, Any] = {"id": pod_try.id, "tried": pod_try.tried}
    if not result.get("gpu_uuid"):
        # The probe ran and CUDA found no device (or no driver library at all): the runtime handed it nothing.
        return {**raw, "observed": f"no GPU reached{probe_error(result)}", "bypassed": False}
    largest = result.get("largest_alloc_mib")
    return {
        **raw,
        "observed": f"reached {result.get('gpu_name')} {result['gpu_uuid']} with no GPU requested:"
        f" {result.get('visible_total_mib')} MiB visible, largest single allocation"
        f" {largest if largest is not None else 'not measured'} MiB",
        "bypassed": True,
        "device": result["gpu_uuid"],
        "allocMiB": largest,
    }
