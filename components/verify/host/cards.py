"""A host of several cards: the card the proof Pods share (`--device N`), a whole-card process on another card, and
a process whose quota env names the shared card while CUDA reaches every card.

Each proof Pod's processes get the shared card as a device plugin hands it over: `NVIDIA_VISIBLE_DEVICES` its UUID
(HAMi's deviceIDStrategy uuid, v2.9.0 pkg/device-plugin/nvidiadevice/nvinternal/plugin/server.go:849 and 868),
and, since no container runtime hides the other cards from a host process, `CUDA_VISIBLE_DEVICES` its index, the
form HAMi-core reads to map CUDA's device 0 onto NVML's card (HAMi-core src/utils.c:174-192, atoi of each entry).
On a host of one card nothing changes: the Pods get NVIDIA_VISIBLE_DEVICES alone, as before.
Standard library only.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from components.incluster.checks import cross_card
from components.incluster.expectation import Expectation, PodTry
from components.verify.host.runner import clean_env, probe

WHOLE_GPU_POD = "gpushare-whole-gpu"
"""The whole-card process: the name the cluster's whole-GPU Pod has (components/verify/workloads.py)."""
SHORT_MEMORY_ARGS = ("--hold-mib", "1", "--hold-seconds", "0", "--extra-mib", "0", "--sweep-gib", "")
"""The short memory probe a try Pod runs (workloads.try_command): the view, the preload, the largest allocation."""
DROPPED = {"--expect-limit-mib": 1, "--findings": 0, "--mechanism": 1}
"""Flags of the proof Pod's memory probe a side process sets itself (and how many values follow)."""


def several(options: Any) -> bool:
    """Whether this host has more than one card (options.cards, from runner.cards())."""
    return len(getattr(options, "cards", ()) or ()) > 1


def refusal(cards: Sequence[Mapping[str, Any]], device: int) -> str | None:
    """Why `--device` names no card of this host, or None."""
    indices = [int(c["index"]) for c in cards]
    if device in indices or (not cards and device == 0):
        return None
    return f"--device {device}: this host has the cards {indices or [0]} (nvidia-smi's index); name one of them"


def card_env(card: Mapping[str, Any]) -> dict[str, str]:
    """The env a device plugin gives a one-card container, as a host process needs it: the card's UUID, and its
    index for CUDA (which a host process otherwise sees every card beside)."""
    return {"NVIDIA_VISIBLE_DEVICES": str(card["uuid"]), "CUDA_VISIBLE_DEVICES": str(card["index"])}


def shared(options: Any) -> Mapping[str, Any] | None:
    """The card the proof Pods share, on a host of several cards."""
    return next((c for c in options.cards if int(c["index"]) == options.device), None) if several(options) else None


def whole(options: Any) -> Mapping[str, Any] | None:
    """The whole-card process's card: the lowest card the Pods do not share (card 0 unless they share it)."""
    return next((c for c in options.cards if int(c["index"]) != options.device), None) if several(options) else None


def proof_env(options: Any) -> dict[str, str]:
    """The device env of every proof Pod's processes: the shared card's on a host of several cards, else the one
    card's UUID as before (none where nvidia-smi named none)."""
    card = shared(options)
    if card is not None:
        return card_env(card)
    return {"NVIDIA_VISIBLE_DEVICES": options.gpu_uuid} if options.gpu_uuid else {}


def try_name(expect: Mapping[str, Any]) -> str:
    """The cross-card process, named as a try Pod of the stack's prefix is (`<prefix>-try-<id>`)."""
    prefix = str((expect.get("pods") or ["gpushare-proof-a"])[0]).rsplit("-", 1)[0]
    return f"{prefix}-try-{cross_card.TRY_ID}"


def side_pods(options: Any, expect: Mapping[str, Any]) -> list[str]:
    """The processes beside the proof Pods: none on one card."""
    return [WHOLE_GPU_POD, try_name(expect)] if several(options) else []


def side_memory_argv(argv: Sequence[str], mechanism: str, keep_limit: bool) -> list[str]:
    """A proof Pod's memory-probe arguments as a short try's: its own mechanism, the quota it expects only where
    `keep_limit`, no findings, no hold, sweep or extra."""
    out: list[str] = []
    words = list(argv)
    while words:
        word = words.pop(0)
        if word in DROPPED and not (keep_limit and word == "--expect-limit-mib"):
            del words[: DROPPED[word]]
            continue
        out.append(word)
    return [*out, *SHORT_MEMORY_ARGS, "--mechanism", mechanism]


def side_steps(
    host: Mapping[str, Any],
    options: Any,
    quota_env: Callable[[str], Mapping[str, str]],
    identity_env: Callable[[str], Mapping[str, str]],
    mechanism: str,
) -> dict[str, list[tuple[list[str], dict[str, str]]]]:
    """The whole-card process (no quota, its own card) and the cross-card process (the proof Pods' quota env, CUDA
    given every card): one memory-probe step each; none on one card. `quota_env(pod)` is a proof Pod's env."""
    card = whole(options)
    if card is None:
        return {}
    argv = next(iter(host["pods"].values()))["memory"]
    whole_env = {**clean_env(), **card_env(card), **identity_env(WHOLE_GPU_POD)}
    crossing = try_name(host["expect"])
    cross_env = {k: v for k, v in {**quota_env(crossing), **identity_env(crossing)}.items()
                 if k != "CUDA_VISIBLE_DEVICES"}  # fmt: skip
    return {
        WHOLE_GPU_POD: [(probe("memory", side_memory_argv(argv, "none", keep_limit=False)), whole_env)],
        crossing: [(probe("memory", side_memory_argv(argv, mechanism, keep_limit=True)), cross_env)],
    }


def on_cards(expect: Expectation, options: Any, host: Mapping[str, Any]) -> Expectation:
    """The host expectation with this host's cards: their count, and where there are several, the shared card by
    index and UUID, the whole-card process on its card and the cross-card process as a try. On one card the shared
    card is the only one, named by nothing (as in a one-card plan)."""
    count = max(len(options.cards), 1)
    card, other = shared(options), whole(options)
    if card is None or other is None:
        changed = dataclasses.replace(expect, cards_per_node=count, shared_card_index=None, shared_card_uuid=None)
        return Expectation.parse(changed.to_wire())
    crossing = PodTry(cross_card.TRY_ID, try_name(host["expect"]), cross_card.TRIED)
    changed = dataclasses.replace(
        expect, cards_per_node=count, shared_card_index=int(card["index"]), shared_card_uuid=str(card["uuid"]),
        whole_gpu_pod=WHOLE_GPU_POD, whole_gpu_card_index=int(other["index"]), node_memory_label=None,
        pod_tries=(*expect.pod_tries, crossing),
    )  # fmt: skip
    return Expectation.parse(changed.to_wire())
