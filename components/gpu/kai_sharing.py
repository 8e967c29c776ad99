"""What KAI Scheduler + HAMi-core on GKE owe the proof: how a proof Pod asks for a slice, and what must follow."""

from __future__ import annotations

from dataclasses import replace

from components.contracts.proof import CHECK_IDS, CheckId, PodTry, SharingProof, SliceRequest
from components.gpu.gke_cdi import CONTAINER_DRIVER_ENV
from components.gpu.isolator import PRELOAD_LIBRARY
from components.gpu.kai import GPU_MEMORY_ANNOTATION, QUEUE_LABEL, SCHEDULER_NAME
from components.incluster.expectation import Monitor
from components.sizing import kai_visible_mib

MIB = 2**20
# The monitor-bound checks need the monitor; over-commit is not KAI's per-card accounting to prove here.
KAI_CHECKS: tuple[CheckId, ...] = tuple(
    c
    for c in CHECK_IDS
    if c
    in {
        "same-gpu",
        "view-isolation",
        "quota-injection",
        "memory-enforced",
        "neighbor-isolation",
        "preload-mechanism",
        "monitor-metrics",
        "fault-isolation",
    }
)
INJECT_ANNOTATION = "kai-resource-isolator.io/inject"
DEVICE_LIMIT_ENV = "CUDA_DEVICE_MEMORY_LIMIT"
"""Un-indexed: HAMi-core applies it to every device the process sees (HAMi-core multiprocess_memory_limit.c,
do_init_device_memory_limits), so a Pod given one card has no per-device index to get wrong."""
NOTES = (
    "Sharing Pods run privileged: on GKE the device nodes are mounted into them by a Kyverno policy, so this "
    "proves CUDA-level memory quotas between cooperating Pods, not a multi-tenant security boundary.",
)


def kai_slice_request(queue: str, slice_mib: int) -> SliceRequest:
    """One proof Pod's ask: KAI's scheduler, its queue label and `gpu-memory`; never a `nvidia.com/gpu` limit.

    KAI rejects a Pod that carries both the annotation and the limit.
    """
    return SliceRequest(
        scheduler_name=SCHEDULER_NAME,
        labels={QUEUE_LABEL: queue},
        annotations={GPU_MEMORY_ANNOTATION: str(slice_mib)},
        limits={},
        # What the device-injection policy mounts still has to be found: libraries and nvidia-smi.
        env=dict(CONTAINER_DRIVER_ENV),
        privileged=True,
    )


def kai_proof(queue: str, slice_mib: int, card_mib: int, monitor: Monitor | None) -> SharingProof:
    """What KAI + HAMi-core promise for two Pods of `slice_mib` on one `card_mib` card."""
    visible = kai_visible_mib(slice_mib, card_mib)
    request = kai_slice_request(queue, slice_mib)
    # The isolator's webhook leaves a Pod alone when this annotation is "false" (any case): no ld.so.preload
    # mount (Project-HAMi/KAI-resource-isolator cmd/webhook/main.go, injectAnnotationKey).
    opt_out = PodTry(
        id="isolator-inject-false",
        tried=f'a Pod annotated {INJECT_ANNOTATION}: "false", asking for the same slice',
        request=replace(request, annotations={**request.annotations, INJECT_ANNOTATION: "false"}),
    )
    checks = KAI_CHECKS if monitor is not None else tuple(c for c in KAI_CHECKS if c != "monitor-metrics")
    return SharingProof(
        system="kai",
        mechanism="hami-core",
        requests=(request, request),
        overcommit_request=None,
        pending_reason=None,
        visible_mib=visible,
        limit_bytes=visible * MIB,
        # KAI's binder injects the un-indexed variable, not HAMi's CUDA_DEVICE_MEMORY_LIMIT_0
        # (KAI-Scheduler v0.17.0 pkg/binder/common/constants.go:8, gpu_access.go:125 SetCudaDeviceMemoryLimit).
        limit_env={DEVICE_LIMIT_ENV: f"{visible}m"},
        device_limit_env=(DEVICE_LIMIT_ENV,),
        preload_library=PRELOAD_LIBRARY,
        monitor=monitor,
        node_registration=None,
        allocation_annotation=None,
        checks=checks,
        notes=NOTES,
        pod_tries=(opt_out,),
    )
