"""What several probes' lines share, declared once: the env, the preload, the mechanism, the card, the Pod block, a
finding and a per-second timeline, and the invariants more than one probe states. The probes' own schemas
(memory_schema.py, compute_schema.py, fault_schema.py, bandwidth_schema.py) are built of these. Standard library only.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from .schema import AnyOf, Arr, Bool, Field, Int, Invariant, Map, Maybe, Num, Obj, Rule, Schema, Str, Time
from .strict import duplicates, instant

STAMP_S = 0.002
"""Instants are printed to the millisecond, durations from unrounded clocks: how far two of them may disagree."""
CHANGED_WINDOW_S = 0.01
"""A step's end against its start + window (the H200's records: never short by more than a rounding)."""

MECHANISM = Maybe(Str(choices=("hami-core", "mps", "none")))
UUID = Str(pattern=r"^GPU-[0-9A-Za-z-]+$")
PRELOAD = Obj({"listed": Field(Arr(Str())), "mapped": Field(Arr(Str()))},
              doc="what /etc/ld.so.preload and LD_PRELOAD list, and what /proc/self/maps shows loaded")  # fmt: skip
ENV = Map(Maybe(Str()))
FINDING = Obj(
    {
        "id": Field(Str()),
        "tried": Field(Str()),
        "observed": Field(Str()),
        "bypassed": Field(Maybe(Bool())),
        "why": Field(Maybe(Str()), required=False),
    },
    extra=AnyOf((Maybe(Num()), Str(), Bool(), Map(Maybe(Num())))),
    doc="one way around the quota, tried: bypassed true/false, or null with why",
)
PROVENANCE = Obj(
    {
        "name": Field(Maybe(Str()), doc="GPUSHARE_POD_NAME: metadata.name, from the downward API"),
        "uid": Field(Maybe(Str()), doc="GPUSHARE_POD_UID: metadata.uid"),
        "namespace": Field(Maybe(Str()), doc="GPUSHARE_POD_NAMESPACE: metadata.namespace"),
        "node": Field(Maybe(Str()), doc="GPUSHARE_NODE_NAME: spec.nodeName"),
        "pid": Field(Int(minimum=1), doc="the probe's own process, as HAMi-core's lines name it (getpid())"),
        "children": Field(Arr(Int(minimum=1)), doc="the child processes it ran, each by the pid it printed"),
    },
    doc="the Pod the probe ran in, as the API server gave it to the container, and the probe's processes",
)
POD = Field(PROVENANCE, required=False, doc="where it ran (since provenance; required when expected)")
"""The `pod` key every probe line carries since provenance."""


def ok_without_error(r: Mapping[str, Any]) -> tuple[str, str] | None:
    return ("error", f"{r['error'][:80]!r} beside ok=true") if r.get("ok") is True and r.get("error") else None


def findings_once(r: Mapping[str, Any]) -> tuple[str, str] | None:
    twice = duplicates(f["id"] for f in r.get("findings") or [])
    return ("findings", f"{twice[0]} is reported twice: which one holds is not known") if twice else None


def timeline(rate: Schema, unit: str) -> Obj:
    """`{"t0", "per_s", "measured_s"}` (probes/timeline.py): one entry a second from t0, the last one maybe partial."""
    return Obj(
        {
            "t0": Field(Time(), doc="the instant the first entry's second starts"),
            "per_s": Field(Arr(rate), doc=f"what finished in each second from t0, in {unit}"),
            "measured_s": Field(Num(minimum=0, unit="s"), doc="from t0 to the measurement's end, to the ms"),
        },
        invariants=(Invariant("timeline-length", "len(per_s) = ceil(measured_s), at least 1 (a recording that"
                              " rounded measured_s to the nearest ms may hold one entry more)", _length),),
    )  # fmt: skip


def _length(t: Mapping[str, Any]) -> tuple[str, str] | None:
    measured, count = t["measured_s"], len(t["per_s"])
    low, high = max(math.ceil(measured), 1), max(math.ceil(measured + 0.001), 1)
    if not low <= count <= high:
        return "per_s", f"{count} entries for {measured} s measured: one a second makes {low}"
    return None


def instant_at(r: Mapping[str, Any], key: str) -> float | None:
    """The instant at `key`, None where the key is null."""
    value = r.get(key)
    return None if value is None else instant(value, key)


def lasts_its_window(r: Mapping[str, Any]) -> tuple[str, str] | None:
    """A step that ran idles to its window's end, so both Pods' next steps start together."""
    took = instant(r["ended_at"], "ended_at") - instant(r["started_at"], "started_at")
    if r.get("ok") is True and took < r["window_s"] - CHANGED_WINDOW_S:
        return "ended_at", f"{took:.3f} s after started_at, a step of {r['window_s']} s: it did not last its window"
    return None


def error_when(r: Mapping[str, Any]) -> tuple[str, str] | None:
    if (r.get("cuda_error") is None) != (r.get("cuda_error_at") is None):
        return (
            "cuda_error_at",
            f"{r.get('cuda_error_at')} beside cuda_error {r.get('cuda_error')}: an error has"
            " its instant and an instant its error",
        )
    return None


def own_pod(children_pids: Callable[[Mapping[str, Any]], list[int]]) -> Rule:
    """The `pod` block (provenance) names this process and the children it ran."""

    def rule(r: Mapping[str, Any]) -> tuple[str, str] | None:
        block = r.get("pod")
        if not block:
            return None
        if block["pid"] != r["pid"]:
            return "pod.pid", f"{block['pid']}, but the probe says it is process {r['pid']}"
        if sorted(block["children"]) != sorted(children_pids(r)):
            return "pod.children", f"{block['children']}, but its children were {sorted(children_pids(r))}"
        return None

    return rule


def within_window(r: Mapping[str, Any], line: Mapping[str, Any] | None, where: str) -> tuple[str, str] | None:
    """The timeline lies inside this process's own start and end."""
    if not line:
        return None
    t0 = instant(line["t0"], f"{where}.t0")
    end = t0 + line["measured_s"]
    if t0 < instant(r["started_at"], "started_at") - STAMP_S:
        return f"{where}.t0", f"{line['t0']} is before the probe started ({r['started_at']})"
    if end > instant(r["ended_at"], "ended_at") + STAMP_S:
        return f"{where}.measured_s", f"{line['measured_s']} s from t0 ends after the probe did ({r['ended_at']})"
    return None
