"""What each GPU model looks like from inside a container: the numbers the labs read off nvidia-smi."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GpuModel:
    """One GPU model as a scheduler and a probe see it."""

    accelerator: str
    """The cloud accelerator name (GCE `acceleratorType`), or a free-form model key for on-prem cards."""
    product: str
    """The `nvidia.com/gpu.product` label value, as GPU Feature Discovery would write it."""
    memory_mib: int
    """Total memory as nvidia-smi reports it: a T4 is 15360 MiB, not 16 GiB."""
    bundled_with_machine: bool = False
    """True where the GCE machine type carries the GPU itself (G2, G4, A2, A3), so no guest accelerator is set."""


GPU_MODELS: dict[str, GpuModel] = {
    m.accelerator: m
    for m in (
        GpuModel("nvidia-tesla-t4", "NVIDIA-Tesla-T4", 15360),
        GpuModel("nvidia-l4", "NVIDIA-L4", 23034, bundled_with_machine=True),
        GpuModel("nvidia-rtx-a6000", "NVIDIA-RTX-A6000", 49140),
        GpuModel("nvidia-tesla-a100", "NVIDIA-A100-SXM4-40GB", 40960, bundled_with_machine=True),
        GpuModel("nvidia-a100-80gb", "NVIDIA-A100-SXM4-80GB", 81920, bundled_with_machine=True),
        GpuModel(
            "nvidia-rtx-pro-6000",
            "NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition",
            97887,
            bundled_with_machine=True,
        ),
    )
}


def gpu_memory_mib(accelerator: str, override: int | None = None) -> int:
    """The card's memory in MiB: the override when given, else the table's nvidia-smi figure."""
    if override is not None:
        return override
    try:
        return GPU_MODELS[accelerator].memory_mib
    except KeyError:
        known = ", ".join(sorted(GPU_MODELS))
        raise KeyError(f"no memory figure for GPU type {accelerator!r} (known: {known})") from None


# --- which GCE machine family carries or takes which card ----------------------------------------------------
# Source: Compute Engine "GPU machine types" (cloud.google.com/compute/docs/gpus) and "Accelerator-optimized
# machine family" (cloud.google.com/compute/docs/accelerator-optimized-machines): A2/A3/G2/G4 carry their GPU,
# N1 takes an attached T4, V100, P4 or P100. Reviewed against those pages; extend it only from them.

ATTACHED_TO_N1 = ("nvidia-tesla-t4", "nvidia-tesla-v100", "nvidia-tesla-p4", "nvidia-tesla-p100")
"""The GPUs GCE attaches to an N1 machine (`guest_accelerator`)."""

BUNDLED: dict[str, str] = {
    "g2-standard": "nvidia-l4",
    "g4-standard": "nvidia-rtx-pro-6000",
    "a2-highgpu": "nvidia-tesla-a100",
    "a2-megagpu": "nvidia-tesla-a100",
    "a2-ultragpu": "nvidia-a100-80gb",
    "a3-highgpu": "nvidia-h100-80gb",
    "a3-edgegpu": "nvidia-h100-80gb",
    "a3-megagpu": "nvidia-h100-mega-80gb",
}
"""Machine series (type without its size) → the GPU it carries."""

BUNDLED_COUNT: dict[str, int] = {
    **{f"g2-standard-{n}": 1 for n in (4, 8, 12, 16, 32)}, "g2-standard-24": 2, "g2-standard-48": 4,
    "g2-standard-96": 8,
    "g4-standard-48": 1, "g4-standard-96": 2, "g4-standard-192": 4, "g4-standard-384": 8,
}
"""GPUs a G2 or G4 machine type carries (A2 and A3 name theirs: a2-highgpu-4g carries 4)."""


def machine_gpu_problem(machine_type: str, gpu_type: str, per_node: int) -> tuple[str, str] | None:
    """(`machineType` or `gpu.type` or `gpu.perNode`, why) when GCE would refuse this card on this machine."""
    series, _, size = machine_type.rpartition("-")
    family = machine_type.split("-", 1)[0]
    if family == "n1":
        if gpu_type in ATTACHED_TO_N1:
            return None
        carriers = sorted(s for s, g in BUNDLED.items() if g == gpu_type)
        if carriers:
            return "machineType", (f"{machine_type} takes only {', '.join(ATTACHED_TO_N1)}; {gpu_type} comes built "
                                   f"into {' or '.join(c + '-*' for c in carriers)} machine types: use one of those")
        return "gpu.type", f"{gpu_type} cannot be attached to an N1 machine; use one of {', '.join(ATTACHED_TO_N1)}"
    carried = BUNDLED.get(series)
    if carried is None:
        known = ", ".join(["n1-*", *sorted(f"{s}-*" for s in BUNDLED)])
        return "machineType", f"{machine_type} carries no GPU and takes none; use a GPU machine type ({known})"
    if carried != gpu_type:
        return "gpu.type", (f"{machine_type} carries {carried}, not {gpu_type}; set it to {carried} (or pick a "
                            f"machine type that carries {gpu_type})")
    count = BUNDLED_COUNT.get(machine_type) or (int(size[:-1]) if size.endswith("g") and size[:-1].isdigit() else None)
    if count is None:
        return "machineType", f"{machine_type} is not a {series} machine type GCE offers"
    if count != per_node:
        return "gpu.perNode", f"{per_node}, but {machine_type} carries {count} × {carried}; set it to {count}"
    return None
