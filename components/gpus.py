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
