"""Slice sizes for the proof: pure arithmetic on the card's memory, shared by config and the proof."""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal

_STEP_MIB = 1000


def default_slice_mib(card_mib: int) -> int:
    """The slice each of two proof Pods asks for: about a twelfth of the card, at least 4000 MiB.

    97887 MiB (RTX PRO 6000) → 8000, 49140 (A6000) → 4000, 23034 (L4) → 4000, 15360 (T4) → 4000.
    """
    slice_mib = max(4000, _STEP_MIB * (card_mib // 12_000))
    if 2 * slice_mib >= card_mib:
        # A small card: a third of it, but never under 1100 MiB (a quota under 1 GiB cannot show a refusal beside
        # a CUDA context, and KAI rounds to hundredths of the card), and never more than half.
        slice_mib = min(card_mib // 2, max(1100, 100 * ((card_mib // 3) // 100)))
    return slice_mib


def remaining_mib(card_mib: int, slice_mib: int, pods: int = 2) -> int:
    """What is left on the card once the proof Pods hold their slices."""
    return card_mib - pods * slice_mib


def overcommit_mib(card_mib: int, slice_mib: int, pods: int = 2) -> int:
    """A request that fits an empty card but not one whose slices are held: midway, to the nearest 1000 MiB.

    97887 MiB with two 8000 MiB slices → 90000 (the k3s lab's figure).
    """
    low = remaining_mib(card_mib, slice_mib, pods)
    mid = round((low + card_mib) / 2 / _STEP_MIB) * _STEP_MIB
    return min(max(mid, low + 1), card_mib)


def overcommit_is_valid(card_mib: int, slice_mib: int, request_mib: int, pods: int = 2) -> bool:
    """True when the request would be refused only because the slices are held."""
    return remaining_mib(card_mib, slice_mib, pods) < request_mib <= card_mib


def kai_fraction(request_mib: int, card_mib: int) -> Decimal:
    """The GPU fraction KAI turns a `gpu-memory` request into: two decimals, half up (4096 of 15360 → 0.27)."""
    if not 0 < request_mib <= card_mib:
        raise ValueError(f"a request of {request_mib} MiB does not fit a {card_mib} MiB card")
    return (Decimal(request_mib) / Decimal(card_mib)).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)


def kai_visible_mib(request_mib: int, card_mib: int) -> int:
    """The MiB a Pod then sees and HAMi-core enforces: the fraction of the card, whole MiB (0.27 × 15360 → 4147)."""
    return math.floor(kai_fraction(request_mib, card_mib) * card_mib)


HOLD_GIB = 3.0
EXTRA_GIB = 2.0
SWEEP_GIB = (2, 3, 3.8, 4.0, 4.5, 6)
"""The proof's usual numbers, sized to a 4000 MiB slice; the defaults below follow the limit where they would not."""


def default_hold_gib(limit_mib: int | None, context_mib: int = 0) -> float:
    """3 GiB, or half the room the card's CUDA context leaves under the limit where 3 GiB would not fit beside it
    (in 1/1024 GiB steps, so whole MiB): HAMi-core charges the context to the quota before the hold.

    None: nothing limits memory (time-sharing), so the usual numbers stand.
    """
    if limit_mib is None or limit_mib - context_mib > HOLD_GIB * 1024:
        return HOLD_GIB
    return (max(limit_mib - context_mib, 2) // 2) / 1024


def default_extra_gib(limit_mib: int | None, hold_mib: int) -> float:
    """The extra ask on top of the hold: at least half a GiB past the limit, in whole GiB (2 under a 4000 MiB one).

    8000 MiB limit, 3 GiB hold → 6; 7680 (MPS on a T4) → 5; 3993 (KAI's view of 4000 on a T4) → 2.
    """
    if limit_mib is None:
        return EXTRA_GIB
    return float(max(1, math.ceil((limit_mib - hold_mib) / 1024 + 0.5)))


def default_sweep_gib(limit_mib: int | None) -> tuple[float, ...]:
    """The usual sizes, and where none passes the limit, the next two whole GiB that do (8000 MiB → …, 8, 10)."""
    if limit_mib is None or any(size * 1024 > limit_mib for size in SWEEP_GIB):
        return tuple(float(s) for s in SWEEP_GIB)
    first = limit_mib // 1024 + 1
    return (*(float(s) for s in SWEEP_GIB), float(first), float(first + 2))
