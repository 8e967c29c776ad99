"""GKE's own GPU sharing in numbers: its strategies, how many clients a card takes, and what MPS gives each.

Ground floor: config refuses with these numbers, the GKE platform sets the node pool from them, and the
sharing component builds its proof from them, without importing one another.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

GkeStrategy = Literal["mps", "time-sharing"]
API_STRATEGY: dict[GkeStrategy, Literal["MPS", "TIME_SHARING"]] = {"mps": "MPS", "time-sharing": "TIME_SHARING"}
"""GPUSharingConfig.GPUSharingStrategy, the node pool's `gpu_sharing_config.gpu_sharing_strategy`."""
# The labels GKE puts on a sharing pool's nodes, which Pods select (GKE docs: concepts/timesharing-gpus, "Request").
STRATEGY_LABEL = "cloud.google.com/gke-gpu-sharing-strategy"
CLIENTS_LABEL = "cloud.google.com/gke-max-shared-clients-per-gpu"
# GKE takes 2–48 clients per GPU (ComputeClass gpuSharing.maxSharedClientsPerGPU; MPS serves 48 clients a GPU).
MIN_CLIENTS, MAX_CLIENTS = 2, 48
MPS_MEMORY_ENV = "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"
MPS_THREADS_ENV = "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"
MIB = 1 << 20


@dataclass(frozen=True)
class MpsLimits:
    """What GKE's device plugin injects into a container that asks for `nvidia.com/gpu: 1` on an MPS node."""

    thread_percentage: int
    pinned_mib: int

    def env(self) -> dict[str, str]:
        """The two variables as the device plugin writes them; the memory one names device 0, the only one."""
        return {MPS_THREADS_ENV: str(self.thread_percentage), MPS_MEMORY_ENV: f"0={self.pinned_mib}M"}


def mps_limits(card_mib: int, clients: int, requested: int = 1) -> MpsLimits:
    """Equal shares of one card: `requested` × 100 / clients percent and `requested` × memory / clients MiB.

    Integer division, as container-engine-accelerators pkg/gpu/nvidia/manager.go `Envs()` does it on NVML's
    total memory in bytes (`card_mib` is that total in MiB as nvidia-smi shows it).
    """
    return MpsLimits(
        thread_percentage=requested * 100 // clients,
        pinned_mib=requested * card_mib * MIB // clients // MIB,
    )


def slots_per_node(clients: int, gpus_per_node: int) -> int:
    """`nvidia.com/gpu` a sharing node advertises: every card offers `clients` slots."""
    return clients * gpus_per_node


def overcommit_slots(clients: int, gpus_per_node: int, proof_pods: int = 2) -> int:
    """Slots the over-commit Pod asks for on the proof Pods' node: one more than they leave free."""
    return slots_per_node(clients, gpus_per_node) - proof_pods + 1
