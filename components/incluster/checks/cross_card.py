"""A process whose quota env names one card while CUDA reaches another: what a privileged container on a node of
several cards is (it sees every card whatever NVIDIA_VISIBLE_DEVICES names), and what a device mount that is always
`/dev/nvidia0` gives a Pod placed on card 1.

The host proof runs it beside the proof Pods on a host of several cards: the Pods' quota env for the shared card
(`CUDA_DEVICE_MEMORY_LIMIT_0`, NVIDIA_VISIBLE_DEVICES naming that card) and CUDA given every card, so its device 0
is the host's card 0. HAMi-core limits CUDA device i by `<limit>_<i>` whatever card that is (HAMi-core
src/multiprocess/multiprocess_memory_limit.c:178-192): the quota follows the device index, not the card it names.
Standard library only; the judge turns the raw finding into the one finding shape.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..evidence.devices import Devices
from ..expectation import PodTry
from .rule import probe_error

TRY_ID = "cross-card"
TRIED = ("a process with the proof Pods' quota env naming the shared card (NVIDIA_VISIBLE_DEVICES and its device-0"
         " limit) while CUDA is given every card of the host")  # fmt: skip


def observe(result: Mapping[str, Any], devices: Devices, pod_try: PodTry) -> dict[str, Any]:
    """The raw finding: bypassed when the card it measured is not the one its quota env names, held when it is."""
    raw: dict[str, Any] = {"id": pod_try.id, "tried": pod_try.tried}
    uuid = result.get("gpu_uuid")
    named = [c.uuid for c in devices.visible or () if c.uuid]
    quota = ", ".join(
        f"CUDA_DEVICE_MEMORY_LIMIT{'' if i is None else f'_{i}'}={v}"
        for i, v in sorted(devices.memory_limits.items(), key=lambda kv: (kv[0] is not None, kv[0]))
    )
    if not uuid:
        return {**raw, "observed": f"no GPU reached{probe_error(result)}", "bypassed": False}
    if not named:
        return {
            **raw,
            "observed": f"reached {uuid}",
            "bypassed": None,
            "why": "NVIDIA_VISIBLE_DEVICES names no card, so which card its quota is for is not known",
        }
    largest = result.get("largest_alloc_mib")
    shown = f"{largest} MiB" if largest is not None else "not measured"
    if uuid in named:
        return {**raw, "observed": f"reached only {uuid}, the card its quota env ({quota or 'no limit'}) names:"
                f" largest single allocation {shown}", "bypassed": False, "device": uuid}  # fmt: skip
    return {
        **raw,
        "observed": f"reaches a card its quota does not name: measured {uuid} ({result.get('visible_total_mib')} MiB"
        f" visible, largest single allocation {shown}) while {quota or 'no limit'} and NVIDIA_VISIBLE_DEVICES"
        f" name {', '.join(named)}",
        "bypassed": True,
        "device": uuid,
        "named": ",".join(named),
        "allocMiB": largest,
    }
