"""What the allocation-paths probe prints, declared: its keys, kinds, units, bounds and invariants
(probes/allocation_paths.py, probes/allocation_child.py, probes/device_nodes.py).

The record validates every allocation line against ALLOCATION before a check reads it, and
docs/evidence/allocation.schema.json is generated from it. Standard library only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..probes.allocation_child import PATHS
from .probe_fields import ENV, MECHANISM, POD, PRELOAD, UUID, ok_without_error
from .schema import Arr, Bool, Field, Int, Invariant, Maybe, Obj, Str, Time, in_order
from .strict import duplicates

MIB_UNIT = "MiB"
NODE_KINDS = ("own", "control", "card", "other")
MiB = Int(minimum=0, unit=MIB_UNIT)


def _got_within_ask(r: Mapping[str, Any]) -> tuple[str, str] | None:
    if r["got_mib"] > r["asked_mib"]:
        return "got_mib", f"{r['got_mib']} MiB is more than the {r['asked_mib']} MiB asked: a path takes what it asks"
    if r["got_mib"] > r["steps"] * r["step_mib"]:
        return "got_mib", f"{r['got_mib']} MiB in {r['steps']} steps of {r['step_mib']} MiB: more than the steps hold"
    return None


def _view_in_total(r: Mapping[str, Any]) -> tuple[str, str] | None:
    free, total = r.get("view_free_mib"), r.get("view_total_mib")
    if free is not None and total is not None and free > total:
        return "view_free_mib", f"{free} MiB is more than the view's total {total} MiB"
    return None


def _refusal_stops(r: Mapping[str, Any]) -> tuple[str, str] | None:
    """A path stops at its ask or at a refusal: short of the ask with nothing refused (and ok) is no answer."""
    if r.get("ok") is True and r["got_mib"] < r["asked_mib"] and not r.get("refused_with"):
        return "refused_with", f"null, yet only {r['got_mib']} of {r['asked_mib']} MiB was taken"
    if r.get("refused_with") and r["got_mib"] >= r["asked_mib"]:
        return "refused_with", f"{r['refused_with']}, yet the whole {r['asked_mib']} MiB ask was taken"
    return None


def _measured_when_ok(r: Mapping[str, Any]) -> tuple[str, str] | None:
    for key in ("view_total_mib", "view_free_mib", "plain_after_ok"):
        if r.get("ok") is True and r.get(key) is None:
            return key, "null beside ok=true: a path that ran reads it"
    return None


PATH = Obj(
    {
        "path": Field(Str(choices=PATHS), doc="the door tried (allocation_child.PATHS)"),
        "ok": Field(Bool()),
        "error": Field(Maybe(Str())),
        "cuda_error": Field(Maybe(Str())),
        "pid": Field(Maybe(Int(minimum=1)), doc="the child process that tried it"),
        "asked_mib": Field(MiB),
        "step_mib": Field(Int(minimum=1, unit=MIB_UNIT)),
        "got_mib": Field(MiB, doc="what it held when it stopped"),
        "steps": Field(Int(minimum=0)),
        "refused_with": Field(Maybe(Str()), doc="the CUresult that stopped it; null: it took the whole ask"),
        "view_total_mib": Field(Maybe(MiB), doc="cuMemGetInfo's total while it held"),
        "view_free_mib": Field(Maybe(MiB)),
        "nvml_process_mib": Field(Maybe(MiB), doc="NVML's count for the child (null where PIDs are not the host's)"),
        "nvml_used_mib": Field(Maybe(MiB), doc="what NVML says the whole card holds"),
        "plain_after_ok": Field(Maybe(Bool()), doc="whether one plain cuMemAlloc of a step still fitted beside it"),
        "plain_after_error": Field(Maybe(Str())),
        "free_error": Field(
            Maybe(Str()), required=False, doc="why giving it back failed (a library that never charged it)"
        ),
    },
    invariants=(
        Invariant("ok-without-error", "a path that says ok reports no error", ok_without_error),
        Invariant("got-within-ask", "got_mib ≤ asked_mib and ≤ steps × step_mib", _got_within_ask),
        Invariant("view-free-within-total", "view_free_mib ≤ view_total_mib", _view_in_total),
        Invariant("stops-at-ask-or-refusal", "short of the ask exactly when a step was refused", _refusal_stops),
        Invariant(
            "measured-when-ok", "a path that ran read the view and tried the plain allocation", _measured_when_ok
        ),
    ),
    doc="one allocation path, tried in a fresh process",
)
NODE = Obj(
    {
        "path": Field(Str(pattern=r"^/dev/")),
        "kind": Field(Str(choices=NODE_KINDS), doc="own card, control node, another card, or other (caps, IB, DRM)"),
        "opened": Field(Bool()),
        "error": Field(Maybe(Str())),
    },
    doc="one device node the container holds, tried for reading and writing",
)
SECOND = Obj(
    {
        "hold_mib": Field(MiB),
        "held": Field(Bool()),
        "hold_error": Field(Maybe(Str())),
        "answer": Field(Maybe(PATH), doc="what the later process took by cuMemAlloc while the half was held"),
    },
    doc="a second process started later in the same container, beside this one holding half the quota",
)


def _paths_once(r: Mapping[str, Any]) -> tuple[str, str] | None:
    twice = duplicates(p["path"] for p in r["paths"])
    if twice:
        return "paths", f"{twice[0]} is reported twice: which one holds is not known"
    if r.get("ok") is True and sorted(p["path"] for p in r["paths"]) != sorted(PATHS):
        missing = [p for p in PATHS if p not in {x["path"] for x in r["paths"]}]
        return "paths", f"ok=true without {', '.join(missing)}: the probe tries every path"
    return None


def _asked_alike(r: Mapping[str, Any]) -> tuple[str, str] | None:
    for p in r["paths"]:
        if p["asked_mib"] != r["asked_mib"] or p["step_mib"] != r["step_mib"]:
            return "paths", f"{p['path']} asked {p['asked_mib']} MiB in {p['step_mib']} MiB steps, not the probe's"
    expected = r.get("expected_limit_mib")
    if expected is not None and r.get("asked_mib") is not None and r["asked_mib"] <= expected:
        return "asked_mib", f"{r['asked_mib']} MiB is not past the {expected} MiB quota: nothing would be shown"
    return None


def _nodes_once(r: Mapping[str, Any]) -> tuple[str, str] | None:
    twice = duplicates(n["path"] for n in r["device_nodes"])
    return ("device_nodes", f"{twice[0]} is listed twice") if twice else None


def _second_held(r: Mapping[str, Any]) -> tuple[str, str] | None:
    s = r.get("second_process")
    if s and (s["answer"] is not None) != s["held"]:
        return "second_process.answer", "a later process asks exactly when the half quota was held"
    return None


ALLOCATION = Obj(
    {
        "probe": Field(Str(choices=("allocation",))),
        "ok": Field(Bool()),
        "error": Field(Maybe(Str())),
        "cuda_error": Field(Maybe(Str())),
        "env": Field(ENV),
        "preload": Field(PRELOAD),
        "mechanism": Field(MECHANISM),
        "gpu_uuid": Field(Maybe(UUID)),
        "nvml_total_mib": Field(Maybe(MiB)),
        "card_minor": Field(Maybe(Int(minimum=0)), doc="NVML's minor number: the N of /dev/nvidiaN"),
        "expected_limit_mib": Field(Maybe(Int(minimum=1, unit=MIB_UNIT))),
        "step_mib": Field(Int(minimum=1, unit=MIB_UNIT)),
        "asked_mib": Field(Maybe(MiB), doc="what every path asks: clearly past the quota"),
        "paths": Field(Arr(PATH)),
        "second_process": Field(Maybe(SECOND)),
        "device_nodes": Field(Arr(NODE)),
        "started_at": Field(Time()),
        "ended_at": Field(Time()),
        "pod": POD,
    },
    invariants=(
        Invariant("ok-without-error", "a probe that says ok reports no error", ok_without_error),
        Invariant("paths-once", "each path once; an ok probe tried every path", _paths_once),
        Invariant("asked-alike", "every path asks the probe's asked_mib in its step_mib, past the quota", _asked_alike),
        Invariant("nodes-once", "each device node once", _nodes_once),
        Invariant("second-asks-when-held", "the later process asks exactly when the half quota was held", _second_held),
        Invariant("allocation-times-in-order", "started_at ≤ ended_at", in_order(("started_at", "ended_at"))),
    ),
    doc="the allocation-paths probe's JSON line (components/incluster/probes/allocation_paths.py)",
)
