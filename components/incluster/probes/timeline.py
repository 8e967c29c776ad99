"""Per-second timelines on the wall clock: what the fault and bandwidth probes record (evidence/timeline.py reads them).

A timeline is `{"t0": RFC 3339 instant, "per_s": [amount finished in [t0+i, t0+i+1)], "measured_s": float}`: one
entry per second from t0 until the measurement ended (`measured_s`, to the millisecond, rounded up), the last one
covering [t0+len-1, t0+measured_s), so it may be partial. Wall-clock instants, so two Pods on one node compare
(the fault of one against the rate of the other). Standard library only; pure functions.
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any


def iso(epoch: float) -> str:
    """Seconds since the epoch → RFC 3339 UTC to the millisecond, with Z."""
    stamp = datetime.datetime.fromtimestamp(epoch, datetime.timezone.utc)  # noqa: UP017 (py3.8 hosts)
    return stamp.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def epoch(value: Any) -> float | None:
    """An RFC 3339 instant → seconds since the epoch; None when absent or malformed."""
    if not value:
        return None
    try:
        # RFC 3339 allows a lower-case t and z, as the record's own parser (evidence/strict.instant) reads them.
        return datetime.datetime.fromisoformat(str(value).upper().replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


class Recorder:
    """Amounts (launches, bytes) attributed to the second, counted from t0, in which each one finished."""

    def __init__(self, t0: float) -> None:
        self.t0 = t0
        self.per_s: list[float] = []
        self.last = t0

    def add(self, at: float, amount: float) -> None:
        index = max(int(at - self.t0), 0)
        while len(self.per_s) <= index:
            self.per_s.append(0.0)
        self.per_s[index] += amount
        self.last = max(self.last, at)

    def to_dict(self, ended: float, scale: float = 1.0, digits: int = 1) -> dict[str, Any]:
        """The timeline up to `ended` (the measurement's end), each entry × `scale`; whole numbers stay ints."""
        measured = math.ceil(max(ended - self.t0, 0.0) * 1000) / 1000  # to the ms, up: len(per_s) = ceil(measured_s)
        length = max(math.ceil(measured), 1)
        values = [v * scale for v in self.per_s[:length]] + [0.0] * max(length - len(self.per_s), 0)
        shown: list[float] = [int(v) if float(v).is_integer() else round(v, digits) for v in values]
        return {"t0": iso(self.t0), "per_s": shown, "measured_s": measured}


def _buckets(timeline: Mapping[str, Any]) -> list[tuple[float, float, float]]:
    """(start, end, amount) of every whole second of a timeline: the partial last entry left out."""
    t0 = epoch(timeline.get("t0"))
    values = timeline.get("per_s") or []
    measured = float(timeline.get("measured_s") or 0.0)
    if t0 is None:
        return []
    return [(t0 + i, t0 + i + 1, float(v)) for i, v in enumerate(values) if i + 1 <= measured + 1e-6]


def stats(values: Sequence[float]) -> dict[str, Any]:
    """Mean, min and max of whole seconds (min ≤ mean ≤ max), and how many; nulls when there are none."""
    if not values:
        return {"mean": None, "min": None, "max": None, "seconds": 0}
    # fsum: exactly rounded on every Python (3.12's sum() compensates, 3.11's does not), so probe and judge agree.
    return {"mean": round(math.fsum(values) / len(values), 1), "min": round(min(values), 1),
            "max": round(max(values), 1), "seconds": len(values)}  # fmt: skip


def whole_seconds(timeline: Mapping[str, Any], keep: Callable[[float, float], bool] | None = None) -> list[float]:
    """The amounts of the timeline's whole seconds whose [start, end) `keep` accepts (all when None)."""
    return [amount for start, end, amount in _buckets(timeline) if keep is None or keep(start, end)]
