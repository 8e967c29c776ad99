"""What each GPU model looks like from inside a container: the numbers the labs read off nvidia-smi."""

from __future__ import annotations

import re
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
    context_mib: int | None = None
    """What one process's CUDA context takes of the card, as HAMi-core charges it to the quota; None where it was never
    measured (CONTEXT_UNMEASURED_MIB stands in)."""


GPU_MODELS: dict[str, GpuModel] = {
    m.accelerator: m
    for m in (
        # The T4's context: the seed's OOM line 4401922048 B asks 4 GiB + 102 MiB (tests/facts/oom_lines.json).
        GpuModel("nvidia-tesla-t4", "NVIDIA-Tesla-T4", 15360, context_mib=102),
        GpuModel("nvidia-l4", "NVIDIA-L4", 23034, bundled_with_machine=True),
        GpuModel("nvidia-rtx-a6000", "NVIDIA-RTX-A6000", 49140),
        GpuModel("nvidia-tesla-a100", "NVIDIA-A100-SXM4-40GB", 40960, bundled_with_machine=True),
        GpuModel("nvidia-a100-80gb", "NVIDIA-A100-SXM4-80GB", 81920, bundled_with_machine=True),
        GpuModel(
            "nvidia-rtx-pro-6000",
            "NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition",
            97887,
            bundled_with_machine=True,
            context_mib=437,  # measured in the k3s lab (components/incluster/checks/rule.py)
        ),
        # The H200's figures: docs/host-proof/h200/card.csv; its context charged 518 MiB (docs/host-proof.md).
        GpuModel("nvidia-h200-141gb", "NVIDIA-H200", 143771, bundled_with_machine=True, context_mib=518),
    )
}
CONTEXT_UNMEASURED_MIB = 518
"""A card whose context was never measured is sized with the largest context measured (the H200's)."""


def context_mib(accelerator: str) -> int:
    """One process's CUDA context on the card, in MiB: the table's figure, else the largest measured."""
    model = GPU_MODELS.get(accelerator)
    return model.context_mib if model is not None and model.context_mib is not None else CONTEXT_UNMEASURED_MIB


def _model_words(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower().replace("nvidia", ""))


def model_of(smi_name: str) -> GpuModel | None:
    """The table's model for a name nvidia-smi prints (`Tesla T4`, `NVIDIA H200`), else None."""
    words = _model_words(smi_name)
    return next((m for m in GPU_MODELS.values() if _model_words(m.product) == words), None)


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
# Source: Compute Engine "GPU machine types" (cloud.google.com/compute/docs/gpus: A2/A3/A4/G2/G4 carry their GPU,
# N1 takes an attached T4, V100, P4 or P100, T4/P4/P100 in 1, 2 or 4, V100 also 8), "General-purpose machine family"
# (cloud.google.com/compute/docs/general-purpose-machines: the N1 sizes) and SkyPilot's catalog, built from the
# Compute Engine API (skypilot-org/skypilot-catalog catalogs/v8/gcp/vms.csv @006059e0: its a2-*, a3-*, a4-* rows),
# read 2026-12-02. Extend it only from them; a type not here is refused as one GCE does not offer.

ATTACHED_TO_N1 = ("nvidia-tesla-t4", "nvidia-tesla-v100", "nvidia-tesla-p4", "nvidia-tesla-p100")
"""The GPUs GCE attaches to an N1 machine (`guest_accelerator`)."""

ATTACHED_COUNTS: dict[str, tuple[int, ...]] = {
    "nvidia-tesla-t4": (1, 2, 4),
    "nvidia-tesla-p4": (1, 2, 4),
    "nvidia-tesla-p100": (1, 2, 4),
    "nvidia-tesla-v100": (1, 2, 4, 8),
}
"""How many of each attached GPU one N1 machine takes: GCE refuses any other count."""

_N1_SIZES = (2, 4, 8, 16, 32, 64, 96)
N1_MACHINE_TYPES = frozenset({"n1-standard-1", *(f"n1-{kind}-{n}" for kind in ("standard", "highmem", "highcpu")
                                                  for n in _N1_SIZES)})  # fmt: skip
"""Every predefined N1 machine type (shared-core f1-micro and g1-small take no GPU)."""

BUNDLED: dict[str, str] = {
    "g2-standard": "nvidia-l4",
    "g4-standard": "nvidia-rtx-pro-6000",
    "a2-highgpu": "nvidia-tesla-a100",
    "a2-megagpu": "nvidia-tesla-a100",
    "a2-ultragpu": "nvidia-a100-80gb",
    "a3-highgpu": "nvidia-h100-80gb",
    "a3-edgegpu": "nvidia-h100-80gb",
    "a3-megagpu": "nvidia-h100-mega-80gb",
    "a3-ultragpu": "nvidia-h200-141gb",
    "a4-highgpu": "nvidia-b200",
}
"""Machine series (type without its size) → the GPU it carries."""

BUNDLED_COUNT: dict[str, int] = {
    **{f"g2-standard-{n}": 1 for n in (4, 8, 12, 16, 32)},
    "g2-standard-24": 2,
    "g2-standard-48": 4,
    "g2-standard-96": 8,
    "g4-standard-48": 1,
    "g4-standard-96": 2,
    "g4-standard-192": 4,
    "g4-standard-384": 8,
    **{f"a2-highgpu-{n}g": n for n in (1, 2, 4, 8)},
    "a2-megagpu-16g": 16,
    **{f"a2-ultragpu-{n}g": n for n in (1, 2, 4, 8)},
    **{f"a3-highgpu-{n}g": n for n in (1, 2, 4, 8)},
    "a3-edgegpu-8g": 8,
    "a3-edgegpu-8g-nolssd": 8,
    "a3-megagpu-8g": 8,
    "a3-ultragpu-8g": 8,
    "a3-ultragpu-8g-nolssd": 8,
    "a4-highgpu-8g": 8,
}
"""Every machine type that carries its GPU, and how many it carries."""


def _series(machine_type: str) -> str:
    return next((s for s in BUNDLED if machine_type.startswith(f"{s}-")), machine_type.rpartition("-")[0])


def bundled_gpu_count(machine_type: str) -> int | None:
    """How many GPUs a G2, G4, A2, A3 or A4 machine type carries (a2-highgpu-4g: 4); None for any other type."""
    return BUNDLED_COUNT.get(machine_type)


def machine_gpu_problem(machine_type: str, gpu_type: str, per_node: int) -> tuple[str, str] | None:
    """(`machineType` or `gpu.type` or `gpu.perNode`, why) when GCE would refuse this card on this machine."""
    series = _series(machine_type)
    family = machine_type.split("-", 1)[0]
    if family == "n1":
        if machine_type not in N1_MACHINE_TYPES:
            return "machineType", (
                f"{machine_type} is not an N1 machine type GCE offers; N1 comes as n1-standard-1 "
                f"and n1-standard, n1-highmem or n1-highcpu with {', '.join(map(str, _N1_SIZES))} "
                "vCPUs (components/gpus.py)"
            )
        if gpu_type in ATTACHED_TO_N1:
            counts = ATTACHED_COUNTS[gpu_type]
            if per_node not in counts:
                allowed = ", ".join(map(str, counts[:-1])) + f" or {counts[-1]}"
                return "gpu.perNode", (
                    f"{per_node}, but GCE attaches {allowed} × {gpu_type} to an N1 machine; set it to one of those"
                )
            return None
        carriers = sorted(s for s, g in BUNDLED.items() if g == gpu_type)
        if carriers:
            return "machineType", (
                f"{machine_type} takes only {', '.join(ATTACHED_TO_N1)}; {gpu_type} comes built "
                f"into {' or '.join(c + '-*' for c in carriers)} machine types: use one of those"
            )
        return "gpu.type", f"{gpu_type} cannot be attached to an N1 machine; use one of {', '.join(ATTACHED_TO_N1)}"
    carried = BUNDLED.get(series)
    if carried is None:
        known = ", ".join(["n1-*", *sorted(f"{s}-*" for s in BUNDLED)])
        return "machineType", f"{machine_type} carries no GPU and takes none; use a GPU machine type ({known})"
    if carried != gpu_type:
        return "gpu.type", (
            f"{machine_type} carries {carried}, not {gpu_type}; set it to {carried} (or pick a "
            f"machine type that carries {gpu_type})"
        )
    count = bundled_gpu_count(machine_type)
    if count is None:
        sizes = ", ".join(sorted((t for t in BUNDLED_COUNT if _series(t) == series), key=BUNDLED_COUNT.__getitem__))
        return "machineType", f"{machine_type} is not among the {series} machine types GCE offers; use one of {sizes}"
    if count != per_node:
        return "gpu.perNode", f"{per_node}, but {machine_type} carries {count} × {carried}; set it to {count}"
    return None


# --- which zones offer which card -----------------------------------------------------------------------------
# Source: SkyPilot's catalog (github.com/skypilot-org/skypilot-catalog catalogs/v8/gcp/vms.csv @006059e0), which
# that project builds from the Compute Engine API, read 2026-12-02: the L4 row is the zones listing g2-standard-4
# (one L4); the T4, V100, P4 and P100 rows are its attached-GPU rows (empty InstanceType, AcceleratorCount 1:
# `,,,T4,1,...`). It lists no g4-standard type (g2-standard-96 is followed by m1) nor an RTX PRO 6000: no row here.
# Google's own list is cloud.google.com/compute/docs/gpus/gpu-regions-zones. Only cards read there have a row: a
# card without one is never refused for its zone. Zones change, so a stale row can be overridden
# (`gpushare:gpu.zoneCheck: false`); there is no live check, as pulumi-gcp 10.2.0 has no acceleratorTypes invoke
# (compute/ has get_machine_types and get_zones, nothing for accelerators).

ZONES_READ = "2026-12-02"
"""When GPU_ZONES was read from its source."""

GPU_ZONES: dict[str, tuple[str, ...]] = {
    "nvidia-l4": (
        "asia-east1-a",
        "asia-east1-b",
        "asia-east1-c",
        "asia-northeast1-a",
        "asia-northeast1-b",
        "asia-northeast1-c",
        "asia-northeast3-a",
        "asia-northeast3-b",
        "asia-south1-a",
        "asia-south1-b",
        "asia-south1-c",
        "asia-southeast1-a",
        "asia-southeast1-b",
        "asia-southeast1-c",
        "europe-west1-b",
        "europe-west1-c",
        "europe-west2-a",
        "europe-west2-b",
        "europe-west3-a",
        "europe-west3-b",
        "europe-west4-a",
        "europe-west4-b",
        "europe-west4-c",
        "europe-west6-b",
        "europe-west6-c",
        "me-central2-a",
        "me-central2-c",
        "northamerica-northeast1-b",
        "northamerica-northeast1-c",
        "northamerica-northeast2-a",
        "northamerica-northeast2-b",
        "us-central1-a",
        "us-central1-b",
        "us-central1-c",
        "us-east1-b",
        "us-east1-c",
        "us-east1-d",
        "us-east4-a",
        "us-east4-c",
        "us-west1-a",
        "us-west1-b",
        "us-west1-c",
        "us-west4-a",
        "us-west4-c",
    ),
    "nvidia-tesla-t4": (
        "asia-east1-a",
        "asia-east1-c",
        "asia-east2-a",
        "asia-east2-c",
        "asia-northeast1-a",
        "asia-northeast1-c",
        "asia-northeast3-b",
        "asia-northeast3-c",
        "asia-south1-a",
        "asia-south1-b",
        "asia-southeast1-a",
        "asia-southeast1-b",
        "asia-southeast1-c",
        "asia-southeast2-a",
        "asia-southeast2-b",
        "australia-southeast1-a",
        "australia-southeast1-c",
        "europe-central2-b",
        "europe-central2-c",
        "europe-west1-b",
        "europe-west1-c",
        "europe-west1-d",
        "europe-west2-a",
        "europe-west2-b",
        "europe-west3-b",
        "europe-west4-a",
        "europe-west4-b",
        "europe-west4-c",
        "me-west1-b",
        "me-west1-c",
        "northamerica-northeast1-c",
        "southamerica-east1-a",
        "southamerica-east1-b",
        "southamerica-east1-c",
        "us-central1-a",
        "us-central1-b",
        "us-central1-c",
        "us-central1-f",
        "us-east1-b",
        "us-east1-c",
        "us-east1-d",
        "us-east4-a",
        "us-east4-b",
        "us-east4-c",
        "us-west1-a",
        "us-west1-b",
        "us-west2-b",
        "us-west2-c",
        "us-west3-b",
        "us-west4-a",
        "us-west4-b",
    ),
    "nvidia-tesla-v100": (
        "asia-east1-c",
        "europe-west4-a",
        "europe-west4-b",
        "europe-west4-c",
        "us-central1-a",
        "us-central1-b",
        "us-central1-c",
        "us-central1-f",
        "us-east1-b",
        "us-east1-c",
        "us-west1-a",
        "us-west1-b",
    ),
    "nvidia-tesla-p4": (
        "asia-southeast1-a",
        "asia-southeast1-b",
        "asia-southeast1-c",
        "australia-southeast1-a",
        "australia-southeast1-b",
        "europe-west4-b",
        "europe-west4-c",
        "northamerica-northeast1-a",
        "northamerica-northeast1-b",
        "northamerica-northeast1-c",
        "us-central1-a",
        "us-central1-c",
        "us-east4-a",
        "us-east4-b",
        "us-east4-c",
        "us-west2-b",
        "us-west2-c",
    ),
    "nvidia-tesla-p100": (
        "asia-east1-a",
        "asia-east1-c",
        "australia-southeast1-b",
        "europe-west1-b",
        "europe-west1-d",
        "europe-west4-a",
        "us-central1-c",
        "us-central1-f",
        "us-east1-b",
        "us-east1-c",
        "us-west1-a",
        "us-west1-b",
    ),
}
"""Accelerator → the zones that offer one of it (sorted), for the cards the source was read for."""


def _nearness(zone: str, other: str) -> tuple[int, str]:
    """Same region first, then the same area (`us-`, `europe-west`), then the rest, each alphabetical."""
    region, other_region = zone.rpartition("-")[0], other.rpartition("-")[0]
    if region == other_region:
        return 0, other
    area, other_area = region.rstrip("0123456789"), other_region.rstrip("0123456789")
    if area == other_area:
        return 1, other
    return (2, other) if area.split("-")[0] == other_area.split("-")[0] else (3, other)


def zone_gpu_problem(zone: str, gpu_type: str) -> str | None:
    """Why GCE would refuse `gpu_type` in `zone` by GPU_ZONES, with the nearest zones that offer it; None if fine."""
    zones = GPU_ZONES.get(gpu_type)
    if zones is None or zone in zones:
        return None
    nearest = sorted(zones, key=lambda z: _nearness(zone, z))[:5]
    return (
        f"{zone} offers no {gpu_type} (zones read {ZONES_READ}, components/gpus.py); use a zone that does, "
        f"nearest first: {', '.join(nearest)} — or, if Compute Engine now offers it there (`gcloud compute "
        f"accelerator-types list --filter=zone:{zone}`), set gpushare:gpu.zoneCheck to false"
    )
