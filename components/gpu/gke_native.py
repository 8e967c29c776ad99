"""GKE's own sharing, MPS or time-sharing: nothing to install (the node pool's gpu_sharing_config does it), and
the proof it owes.

No KAI, isolator or Kyverno: GKE's device plugin advertises `clients` slots of `nvidia.com/gpu` per card, and a
Pod asks for one slot like a whole GPU, selecting the sharing labels GKE puts on the nodes.
"""

from __future__ import annotations

from components.contracts.proof import CheckId, SharingProof, SliceRequest
from components.gke_sharing import (
    CLIENTS_LABEL,
    MPS_MEMORY_ENV,
    STRATEGY_LABEL,
    GkeStrategy,
    mps_limits,
    overcommit_slots,
)
from components.gpu.gke_cdi import CONTAINER_DRIVER_ENV

MIB = 1 << 20
GPU_RESOURCE = "nvidia.com/gpu"
DEFAULT_SCHEDULER = "default-scheduler"
# kube-scheduler's NodeResourcesFit reports a full node so (in a FailedScheduling event).
INSUFFICIENT_GPU = f"Insufficient {GPU_RESOURCE}"

# MPS limits memory and compute per client; the preload and monitor checks belong to HAMi-core.
MPS_CHECKS: tuple[CheckId, ...] = (
    "same-gpu",
    "view-isolation",
    "quota-injection",
    "memory-enforced",
    "neighbor-isolation",
    "overcommit-rejected",
    "compute-limited",
    "fault-isolation",
)
# Time-sharing injects no quota; memory and compute are still checked, so the verdict says they are not held.
TIME_SHARING_CHECKS: tuple[CheckId, ...] = (
    "same-gpu",
    "view-isolation",
    "memory-enforced",
    "neighbor-isolation",
    "overcommit-rejected",
    "compute-limited",
    "fault-isolation",
)
MPS_NOTES = (
    "GKE's MPS: each client's memory limit and thread percentage are the CUDA_MPS_PINNED_DEVICE_MEM_LIMIT and "
    "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE the device plugin sets in its environment, equal shares of the card; what a "
    "client that sets its own values gets is tried and reported in verification.findings.",
    "MPS Pods run with hostIPC: they share the node's IPC namespace with the MPS server.",
)


def native_slice_request(strategy: GkeStrategy, clients: int, slots: int = 1) -> SliceRequest:
    """A Pod that asks GKE for `slots` shared slots: one `nvidia.com/gpu` per container, the sharing labels,
    and hostIPC for MPS (GKE docs: how-to/nvidia-mps-gpus, "Deploy workloads that use NVIDIA MPS")."""
    return SliceRequest(
        scheduler_name=DEFAULT_SCHEDULER,
        limits={GPU_RESOURCE: "1"},
        env=dict(CONTAINER_DRIVER_ENV),
        node_selector={STRATEGY_LABEL: strategy, CLIENTS_LABEL: str(clients)},
        host_ipc=strategy == "mps",
        containers=slots,
    )


def mps_proof(clients: int, card_mib: int, gpus_per_node: int) -> SharingProof:
    """What GKE's MPS promises two clients of a `card_mib` card shared `clients` ways."""
    limits = mps_limits(card_mib, clients)
    return SharingProof(
        system="gke",
        mechanism="mps",
        requests=(native_slice_request("mps", clients), native_slice_request("mps", clients)),
        overcommit_request=native_slice_request("mps", clients, overcommit_slots(clients, gpus_per_node)),
        overcommit_slots=overcommit_slots(clients, gpus_per_node),
        pending_reason=INSUFFICIENT_GPU,
        # MPS limits what a client may pin, not what it is shown: the view stays the whole card.
        visible_mib=card_mib,
        limit_bytes=limits.pinned_mib * MIB,
        limit_env=limits.env(),
        # `0=` indexes the container's own devices: "always device 0 relatively" (container-engine-accelerators
        # pkg/gpu/nvidia/manager.go:343), whichever card the slot is on.
        device_limit_env=(MPS_MEMORY_ENV,),
        preload_library=None,
        cores_percent=limits.thread_percentage,
        checks=MPS_CHECKS,
        notes=MPS_NOTES,
    )


def time_sharing_proof(clients: int, card_mib: int, gpus_per_node: int) -> SharingProof:
    """What GKE's time-sharing promises: `clients` Pods per card, and no limit on any of them."""
    return SharingProof(
        system="gke",
        mechanism="time-sharing",
        requests=(native_slice_request("time-sharing", clients), native_slice_request("time-sharing", clients)),
        overcommit_request=native_slice_request("time-sharing", clients, overcommit_slots(clients, gpus_per_node)),
        overcommit_slots=overcommit_slots(clients, gpus_per_node),
        pending_reason=INSUFFICIENT_GPU,
        visible_mib=card_mib,
        # Nothing below the card: the only refusal a Pod can meet is the card running out.
        limit_bytes=card_mib * MIB,
        limit_env={},
        preload_library=None,
        checks=TIME_SHARING_CHECKS,
    )


def native_proof(strategy: GkeStrategy, clients: int, card_mib: int, gpus_per_node: int) -> SharingProof:
    """The proof of one GKE strategy."""
    build = mps_proof if strategy == "mps" else time_sharing_proof
    return build(clients, card_mib, gpus_per_node)
