"""Several cards per node: which card each Pod was given, which it sees, and which its limits name.

What same-gpu, quota-injection and view-isolation judge beyond one card (placement.py calls these): the
proof Pods share the card `sharedCardIndex` names (and its UUID, where `pulumi up` read it), each carries the pin
to it, and none sees or is limited on a card it was not given; a whole-GPU Pod is judged on its own card.
Everything read here was parsed once by the record (evidence/record.py, evidence/devices.py). Standard library only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..evidence.devices import MEMORY_LIMIT_PREFIX, Card, Devices, device_uuid
from ..evidence.record import Record
from ..expectation import Expectation
from .rule import MAX_CONTEXT_OVERHEAD_MIB, probe_error


def _listed(cards: tuple[Card, ...]) -> str:
    return ",".join(c.entry for c in cards)


def visible_problems(name: str, uuid: str, view: Devices, index: int) -> list[str]:
    """A Pod's device lists against the card it measured: NVIDIA_VISIBLE_DEVICES (where set) names that card and no
    other; CUDA_VISIBLE_DEVICES (where set) shows CUDA that card alone, by UUID or by `index` (the card's index where
    the list is read: 0 in a one-card container, the host's own index on a host)."""
    problems = []
    if view.visible:
        text = _listed(view.visible)
        if uuid not in [c.uuid for c in view.visible]:
            problems.append(f"Pod {name}: NVIDIA_VISIBLE_DEVICES={text} does not name {uuid}, so the card it measured"
                            " is not shown to be the one it was given")  # fmt: skip
        elif len(view.visible) > 1:
            others = ", ".join(c.entry for c in view.visible if c.uuid != uuid)
            problems.append(f"Pod {name}: NVIDIA_VISIBLE_DEVICES={text} names cards beside {uuid} ({others}): the Pod"
                            " was given more than the one card it shares")  # fmt: skip
    if view.cuda_visible:
        text = _listed(view.cuda_visible)
        reached = [c.entry for c in view.cuda_visible
                   if (c.uuid is not None and not uuid.startswith(c.uuid)) or (c.index is not None and c.index != index)
                   or c.word is not None]  # fmt: skip
        if reached or len(view.cuda_visible) > 1:
            problems.append(f"Pod {name}: CUDA_VISIBLE_DEVICES={text} shows CUDA {', '.join(reached) or 'more cards'}"
                            f" beside {uuid} (card {index}): it reaches a card it was not given")  # fmt: skip
    return problems


# ---------------------------------------------------------------- same-gpu


def shared_card_text(e: Expectation) -> str:
    """What same-gpu expects of the shared card, where the node has several ('' on one card)."""
    if e.shared_card_index is None:
        return ""
    text = f"; on a node of {e.cards_per_node} cards that card is card {e.shared_card_index}"
    text += f" ({e.shared_card_uuid})" if e.shared_card_uuid else ""
    if e.pin_annotation:
        text += f", each Pod pinned to it by {e.pin_annotation}"
    return text + "; no Pod sees a card it was not given"


def shared_card_problems(rec: Record, uuids: Mapping[str, Any]) -> list[str]:
    """The proof Pods against the card they must share: measured, allocated and pinned to that card."""
    e, problems = rec.expect, []
    shared, index = e.shared_card_uuid, e.shared_card_index
    for name in rec.names:
        uuid = uuids.get(name)
        if shared and uuid and uuid != shared:
            problems.append(f"Pod {name} measured {uuid}, not card {index} {shared} that the proof shares: it runs on"
                            " a card it was not given")  # fmt: skip
        cards = [d["uuid"] for d in rec.allocated(name)]
        if shared and cards and cards != [shared]:
            problems.append(f"{e.allocation_annotation} of Pod {name} gives it {cards}, not card {index} {shared}"
                            " that the proof shares")  # fmt: skip
        if e.pin_annotation and name in e.pinned_pods:
            pinned, wanted = rec.pin(name), shared or uuid
            if pinned is None:
                problems.append(f"Pod {name} carries no {e.pin_annotation}: nothing pinned it to card {index}")
            elif wanted and pinned != [wanted]:
                problems.append(f"Pod {name} is pinned by {e.pin_annotation}={','.join(pinned)}, not to card {index}"
                                f" {wanted} alone")  # fmt: skip
    return problems


def own_index(e: Expectation) -> int:
    """The index a proof Pod's CUDA_VISIBLE_DEVICES may name: the shared card's on a host, 0 inside a container."""
    return e.shared_card_index if e.host_proof and e.shared_card_index is not None else 0


# ---------------------------------------------------------------- quota-injection


def device_limit_problems(rec: Record, name: str, result: Mapping[str, Any]) -> list[str]:
    """A Pod given one card has device 0 alone: a per-device limit for any other index is a quota for a second card
    (named by both UUIDs where a list names it); HAMi's `CUDA_DEVICE_MEMORY_LIMIT_<i>` is device i's allocated MiB
    (v2.9.0 server.go:650-652, v2.10.0 :833-835)."""
    e, view, problems = rec.expect, rec.devices(name), []
    allocated = rec.allocated(name)
    given = e.shared_card_uuid or result.get("gpu_uuid") or "its card"
    for key, (index, value) in view.limit_indices().items():
        if index != 0:
            other = device_uuid(index, view.visible, allocated) or "a card no device list names"
            problems.append(f"Pod {name}: {key}{value} is a quota for its device {index}, {other}, beside {given}, the"
                            " card it was given: the Pod was given a second card")  # fmt: skip
    if e.system == "hami":
        for i, value in view.memory_limits.items():
            if i is not None and i < len(allocated) and value != f"{allocated[i]['memMiB']}m":
                problems.append(f"Pod {name}: {MEMORY_LIMIT_PREFIX}_{i}={value}, its {e.allocation_annotation}"
                                f" gives device {i} ({allocated[i]['uuid']}) {allocated[i]['memMiB']} MiB:"
                                " the env and the allocation disagree")  # fmt: skip
    return problems


def register_problems(rec: Record, node: str, devices: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """On a node of several cards the register annotation lists the Pods' card with the shared card's index, and
    lists that index for the UUID the Pods were pinned to (HAMi v2.9.0 plugin/register.go:105-111)."""
    e, reg = rec.expect, rec.expect.node_registration
    problems: list[str] = []
    index = e.shared_card_index
    if reg is None or index is None or not devices:
        return problems
    for name in rec.names:
        uuid = (rec.memory(name) or {}).get("gpu_uuid")
        if rec.node_of(name) == node and uuid is not None and uuid in devices and devices[uuid]["index"] != index:
            problems.append(f"node {node}: {reg.annotation} registers {uuid} of Pod {name} as card"
                            f" {devices[uuid]['index']}, the proof shares card {index}")  # fmt: skip
    at_index = [i for i, d in devices.items() if d["index"] == index]
    if e.shared_card_uuid and at_index != [e.shared_card_uuid]:
        problems.append(f"node {node}: {reg.annotation} registers card {index} as {at_index or 'no card'}, the proof"
                        f" Pods were pinned to {e.shared_card_uuid}")  # fmt: skip
    return problems


# ---------------------------------------------------------------- view-isolation: the whole-GPU Pod on its own card


def whole_card_text(e: Expectation) -> str:
    """What view-isolation expects of a whole-GPU Pod that runs the memory probe (a host's), '' where none does."""
    if e.whole_gpu_pod is None or e.node_memory_label or e.whole_gpu_card_index is None:
        return ""
    return (
        f"; the whole-GPU Pod on card {e.whole_gpu_card_index} sees that whole {e.card_mib} MiB card with no"
        " quota, and not the card the slices share"
    )


def whole_card_problems(rec: Record, seen: list[str]) -> list[str]:
    """The whole-GPU Pod's memory probe, judged on its own card: not the shared one, its whole view, no quota."""
    e = rec.expect
    whole, index = str(e.whole_gpu_pod), e.whole_gpu_card_index
    r = rec.memory(whole)
    if r is None:
        return [rec.problems.get(f"memory:{whole}") or f"whole-GPU Pod {whole} printed no memory probe result"]
    uuid, cuda, nvml = r.get("gpu_uuid"), r.get("visible_total_mib"), r.get("nvml_total_mib")
    seen.append(f"{whole}: {uuid} (card {index}), CUDA {cuda} MiB, NVML {nvml} MiB")
    if not uuid:
        return [f"whole-GPU Pod {whole} reported no GPU UUID{probe_error(r)}"]
    problems = []
    shared = {u for u in (e.shared_card_uuid, *((rec.memory(n) or {}).get("gpu_uuid") for n in rec.names)) if u}
    if uuid in shared:
        problems.append(f"whole-GPU Pod {whole} measured {uuid}, the card the proof Pods share: it is judged on card"
                        f" {index}, not the shared card {e.shared_card_index}")  # fmt: skip
    if nvml != e.card_mib:
        problems.append(f"whole-GPU Pod {whole}: NVML total is {nvml} MiB, not the whole card's {e.card_mib}")
    if cuda is None or not e.card_mib - MAX_CONTEXT_OVERHEAD_MIB <= int(cuda) <= e.card_mib:
        problems.append(f"whole-GPU Pod {whole}: cuMemGetInfo total is {cuda} MiB, not the whole {e.card_mib} MiB card")
    view = rec.devices(whole)
    limits = [f"{MEMORY_LIMIT_PREFIX}{'' if i is None else f'_{i}'}={v}" for i, v in view.memory_limits.items()]
    limits += [f"CUDA_MPS_PINNED_DEVICE_MEM_LIMIT {k}={v}" for k, v in view.mps_memory_limits.items()]
    if limits:
        problems.append(f"whole-GPU Pod {whole} carries {', '.join(limits)}: a whole card has no quota")
    return problems + visible_problems(whole, uuid, view, index if e.host_proof and index is not None else 0)
