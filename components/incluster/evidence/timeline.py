"""How a reader splits a probe's timeline (probes/timeline.py): a neighbour's rate around another Pod's instant,
and alone against beside a hog. Standard library only; pure functions over validated timelines.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ..probes.timeline import epoch, stats, whole_seconds


def around(timeline: Mapping[str, Any], at: Any) -> dict[str, Any]:
    """A neighbour's rate before and after an instant (another Pod's fault): the whole seconds that ended by `at`,
    and those that began after the second `at` fell in; `inside` says whether `at` fell inside the timeline."""
    when, t0 = epoch(at), epoch(timeline.get("t0"))
    if when is None or t0 is None:
        return {"inside": False, "before": [], "after": [], "at_second": None}
    measured = float(timeline.get("measured_s") or 0.0)
    second = math.floor(when - t0)
    before = whole_seconds(timeline, lambda start, end: end <= when)
    after = whole_seconds(timeline, lambda start, end: start >= t0 + second + 1)
    return {"inside": 0 <= when - t0 <= measured, "before": before, "after": after, "at_second": second}


def split(timeline: Mapping[str, Any], busy_from: Any, busy_to: Any) -> dict[str, Any]:
    """A neighbour's whole seconds alone (wholly outside [busy_from, busy_to], a hog's copying) and beside it
    (wholly inside), with the drop: 1 − beside mean ÷ alone mean."""
    lo, hi = epoch(busy_from), epoch(busy_to)
    if lo is None or hi is None:
        return {"alone": stats(whole_seconds(timeline)), "beside": stats([]), "drop_fraction": None}
    alone = stats(whole_seconds(timeline, lambda start, end: end <= lo or start >= hi))
    beside = stats(whole_seconds(timeline, lambda start, end: start >= lo and end <= hi))
    drop = None
    if alone["mean"] and beside["mean"] is not None:
        drop = round(1 - beside["mean"] / alone["mean"], 3)
    return {"alone": alone, "beside": beside, "drop_fraction": drop}
