"""Which cards a process was shown and which per-device limits it carries, read from its env as the mechanisms
write it and HAMi-core reads it: parsed once by the record (record.py), never by a check.

Standard library only; pure functions. A value no mechanism writes and no reader reads the same way twice (a card
named twice, a word that is no card, an MPS entry without its device) is not judgeable: which device a limit
belongs to would be a guess.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..probes.process import INDEXED, MEMORY_LIMIT_PREFIX, SM_LIMIT_PREFIX
from .strict import NotJudgeable, shown

VISIBLE_ENV = "NVIDIA_VISIBLE_DEVICES"
"""The card list a device plugin hands the container runtime: HAMi joins the allocated cards' IDs in the
allocation's order (v2.9.0 pkg/device-plugin/nvidiadevice/nvinternal/plugin/server.go:638 and 868, v2.10.0 :826
and 1058), KAI's binder its reservation Pod's card (v0.17.0 pkg/binder/plugins/gpusharing/gpu_sharing.go:73)."""
CUDA_VISIBLE_ENV = "CUDA_VISIBLE_DEVICES"
"""CUDA's own list, which HAMi-core reads as indices to map CUDA devices onto NVML's (src/utils.c:174-192); no
mechanism sets it in a Pod, the host proof sets it on a host of several cards."""
MPS_MEMORY_ENV = "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"
WORDS = ("all", "none", "void")
"""What the container toolkit reads in NVIDIA_VISIBLE_DEVICES besides cards: every card, or none."""
CDI_NAME = re.compile(r"^[a-z0-9.-]+/[a-z0-9.-]+=(.+)$")
"""`k8s.device-plugin.nvidia.com/gpu=<id>`: KAI's binder under a CDI device plugin (gpu_sharing.go:25 and 52-55)."""
UUID = re.compile(r"^(GPU|MIG)-[0-9A-Za-z-]+$")
INDEX = re.compile(r"^-?\d+$")


@dataclass(frozen=True)
class Card:
    """One entry of a device list: a card by UUID or by index, or one of WORDS."""

    entry: str
    uuid: str | None = None
    index: int | None = None

    @property
    def word(self) -> str | None:
        return self.entry if self.entry in WORDS else None


@dataclass(frozen=True)
class Devices:
    """What one probe's env says about its cards: the lists it was shown and the limits per device index (None: the
    un-indexed variable, every device)."""

    visible: tuple[Card, ...] | None = None
    """NVIDIA_VISIBLE_DEVICES in order (None: unset; GKE's device plugin mounts device nodes instead)."""
    cuda_visible: tuple[Card, ...] | None = None
    """CUDA_VISIBLE_DEVICES in order (None: unset)."""
    memory_limits: Mapping[int | None, str] = field(default_factory=dict)
    """CUDA_DEVICE_MEMORY_LIMIT_<i> by i, and the un-indexed form under None."""
    sm_limits: Mapping[int | None, str] = field(default_factory=dict)
    """CUDA_DEVICE_SM_LIMIT_<i> by i, and the un-indexed form under None (HAMi writes only that one)."""
    mps_memory_limits: Mapping[int | str, str] = field(default_factory=dict)
    """CUDA_MPS_PINNED_DEVICE_MEM_LIMIT's `<device>=<limit>` entries by device index (or UUID)."""

    def limit_indices(self) -> dict[str, tuple[int, str]]:
        """Each per-device limit that names a device index: its variable as a reason shows it → (that index, its value)
        (`CUDA_DEVICE_MEMORY_LIMIT_1=4000m`: (1, "4000m"); MPS's `1=2G` entry: (1, "2G"))."""
        found = {f"{MEMORY_LIMIT_PREFIX}_{i}=": (i, v) for i, v in self.memory_limits.items() if i is not None}
        found |= {f"{SM_LIMIT_PREFIX}_{i}=": (i, v) for i, v in self.sm_limits.items() if i is not None}
        found |= {f"{MPS_MEMORY_ENV}'s {i}=": (i, v) for i, v in self.mps_memory_limits.items() if isinstance(i, int)}
        return found


def card(entry: str, where: str) -> Card:
    """One device-list entry → a Card; NotJudgeable when it is none of a UUID, an index, a CDI name or WORDS."""
    text = entry.strip()
    cdi = CDI_NAME.match(text)
    name = cdi[1] if cdi else text
    if UUID.match(name):
        return Card(text, uuid=name)
    if INDEX.match(name):
        return Card(text, index=int(name))
    if text in WORDS:
        return Card(text)
    raise NotJudgeable(where, f"names {shown(text)}, which is no card (a UUID, an index, a CDI name, or one of"
                       f" {', '.join(WORDS)})")  # fmt: skip


def device_list(value: Any, where: str) -> tuple[Card, ...] | None:
    """A comma-separated device list → its cards in order; None when unset. A card named twice, or a word beside
    cards, is not judgeable: the order that pairs each card with its limit index would be a guess."""
    if value is None:
        return None
    cards = tuple(card(part, where) for part in str(value).split(",") if part.strip())
    names = [c.uuid or str(c.index) for c in cards if c.word is None]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise NotJudgeable(where, f"names the card {twice[0]} twice: which device index it is is not known")
    if len(cards) > 1 and any(c.word for c in cards):
        word = next(c.word for c in cards if c.word)
        raise NotJudgeable(where, f"is {shown(value)}: {word} beside cards says two things")
    return cards


def indexed_limits(env: Mapping[str, Any], prefix: str) -> dict[int | None, str]:
    """`<prefix>_<i>` by i and `<prefix>` under None, each set to a non-empty value."""
    found: dict[int | None, str] = {}
    for key, value in env.items():
        match = INDEXED.match(str(key))
        if match and match[1] == prefix and value not in (None, ""):
            found[None if match[2] is None else int(match[2])] = str(value)
    return found


def mps_limits(value: Any, where: str) -> dict[int | str, str]:
    """`0=4000M,1=2G` → {0: "4000M", 1: "2G"}: GKE writes `0=<MiB>M` for the container's own device 0
    (container-engine-accelerators pkg/gpu/nvidia/manager.go:341-344); MPS reads a device by index or UUID
    (docs.nvidia.com/deploy/mps, Appendix: Environment Variables)."""
    found: dict[int | str, str] = {}
    for part in [p.strip() for p in str(value or "").split(",") if p.strip()]:
        device, sep, limit = part.partition("=")
        key: int | str | None = int(device) if INDEX.match(device.strip()) else (
            device.strip() if UUID.match(device.strip()) else None)  # fmt: skip
        if not sep or key is None or not limit.strip():
            raise NotJudgeable(where, f"holds {shown(part)}, which is no `<device>=<limit>` entry")
        if key in found:
            raise NotJudgeable(where, f"limits device {key} twice: which limit holds is not known")
        found[key] = limit.strip()
    return found


def devices(env: Mapping[str, Any], where: str) -> Devices:
    """A probe's reported env → what it says about the process's cards; NotJudgeable naming the variable."""
    return Devices(
        visible=device_list(env.get(VISIBLE_ENV), f"{where}.{VISIBLE_ENV}"),
        cuda_visible=device_list(env.get(CUDA_VISIBLE_ENV), f"{where}.{CUDA_VISIBLE_ENV}"),
        memory_limits=indexed_limits(env, MEMORY_LIMIT_PREFIX),
        sm_limits=indexed_limits(env, SM_LIMIT_PREFIX),
        mps_memory_limits=mps_limits(env.get(MPS_MEMORY_ENV), f"{where}.{MPS_MEMORY_ENV}"),
    )


def device_uuid(position: int, shown: tuple[Card, ...] | None, allocated: list[dict[str, Any]]) -> str | None:
    """The UUID of a process's device `position`: HAMi lists the allocated cards, CUDA_DEVICE_MEMORY_LIMIT_<i> and
    NVIDIA_VISIBLE_DEVICES in one order (server.go:650-652 over the same devreq, v2.10.0 :833-835)."""
    cards = [c for c in shown or () if c.word is None]
    if position < len(cards) and cards[position].uuid:
        return cards[position].uuid
    if position < len(allocated):
        return str(allocated[position]["uuid"])
    return None
