"""What the fault probe prints, declared: its keys, kinds, units, bounds and invariants (probes/fault.py).

The proof Pods run this step first (docs/probes.md "The output contract of fault.py and bandwidth.py"); the record
validates every fault line against FAULT before a check reads it, and docs/evidence/fault.schema.json is generated
from it. Standard library only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..probes.fault import END_MARGIN_S, EXPECTED_ERROR, ROLE_FIELDS
from .probe_fields import (
    CHANGED_WINDOW_S,
    ENV,
    MECHANISM,
    POD,
    PRELOAD,
    STAMP_S,
    UUID,
    error_when,
    instant_at,
    lasts_its_window,  # fmt: skip
    ok_without_error,
    own_pod,
    timeline,
    within_window,
)
from .schema import Arr, Bool, Field, Int, Invariant, Maybe, Num, Obj, Rule, Str, Time, all_of, in_order
from .strict import duplicates, instant

LAUNCHES = "launches/s"


def _role_fields(fields: Mapping[str, tuple[str, ...]]) -> Rule:
    """A result carries its own role's fields (null until measured) and no other role's; once ok, measured."""

    def rule(r: Mapping[str, Any]) -> tuple[str, str] | None:
        own = fields[r["role"]]
        for role, keys in fields.items():
            for key in keys:
                if role != r["role"] and key not in own and key in r:
                    return key, f"a {r['role']} does not measure {key} (a {role}'s field)"
        missing = [k for k in own if k not in r]
        if missing:
            return missing[0], f"missing: a {r['role']} reports it"
        errors = ("cuda_error", "cuda_error_at")
        unmeasured = [k for k in own if r.get("ok") is True and r[k] is None and k not in errors]
        if unmeasured:
            return unmeasured[0], f"null beside ok=true: a {r['role']} that ran measured it"
        return None

    return rule


FAULT_ROLES: Mapping[str, tuple[str, ...]] = ROLE_FIELDS
"""What each role measures beside the fields both share: the probe's own list."""
FAULT_STEPS = ("neighbour", "faulting", "fresh")
CHILD = Obj(
    {
        "step": Field(Str(choices=FAULT_STEPS)),
        "pid": Field(Int(minimum=1)),
        "exit_code": Field(Maybe(Int())),
        "started_at": Field(Maybe(Time())),
        "ended_at": Field(Maybe(Time())),
        "ok": Field(Maybe(Bool())),
        "error": Field(Maybe(Str())),
    },
    invariants=(Invariant("child-times-in-order", "a child ends no earlier than it starts",
                          in_order(("started_at", "ended_at"), slack=STAMP_S)),),
    doc="one CUDA child process of the fault probe, in the order it ran",
)  # fmt: skip
SERVE_TRY = Obj(
    {
        "pid": Field(Int(minimum=1)),
        "started_at": Field(Maybe(Time())),
        "ended_at": Field(Maybe(Time())),
        "kernel_ran": Field(Maybe(Bool())),
        "cuda_error": Field(Maybe(Str())),
        "error": Field(Maybe(Str())),
    },
    doc="a fresh process after the fault, running one kernel",
)
LAUNCH_TIMELINE = timeline(Int(minimum=0, unit=LAUNCHES), LAUNCHES)


def _neighbour_figures(r: Mapping[str, Any]) -> tuple[str, str] | None:
    """The neighbour's launches are its timeline's, it survived exactly when no error ended it, and its error fell
    inside its timeline (the loop stops at it)."""
    line = r.get("timeline")
    if r["role"] != "neighbour" or not line:
        return None
    if r.get("launches") is not None and r["launches"] != sum(line["per_s"]):
        return "launches", f"{r['launches']}, but the timeline's seconds add up to {sum(line['per_s'])}"
    if r.get("survived") is not None and r["survived"] is not (r.get("cuda_error") is None):
        return "survived", f"{r['survived']} beside cuda_error {r.get('cuda_error')}"
    when = instant_at(r, "cuda_error_at")
    t0 = instant(line["t0"], "timeline.t0")
    if when is not None and not t0 - STAMP_S <= when <= t0 + line["measured_s"] + STAMP_S:
        return (
            "cuda_error_at",
            f"{r['cuda_error_at']} lies outside its own timeline ({line['t0']} +"
            f" {line['measured_s']} s): the loop stops at its error",
        )
    return within_window(r, line, "timeline")


def _faulter_figures(r: Mapping[str, Any]) -> tuple[str, str] | None:
    """The faulter faulted at or after its delay, its error is the expected one exactly when it says it faulted, its
    faulting process is its first child, and every fresh try began after that process ended."""
    if r["role"] != "faulter" or r.get("fault_at") is None:
        return None
    fault_at = instant(r["fault_at"], "fault_at")
    start = instant(r["started_at"], "started_at")
    if r.get("delay_s") is None:
        return "delay_s", "null: a faulter faults at its delay"
    if fault_at < start + r["delay_s"] - CHANGED_WINDOW_S:
        return "fault_at", f"{r['fault_at']} is before started_at + delay_s ({r['started_at']} + {r['delay_s']} s)"
    if fault_at > instant(r["ended_at"], "ended_at") + STAMP_S:
        return "fault_at", f"{r['fault_at']} is after the probe ended ({r['ended_at']})"
    if r.get("faulted") is not None and r["faulted"] is not (r.get("cuda_error") == r["expected_error"]):
        return "faulted", f"{r['faulted']} beside cuda_error {r.get('cuda_error')} (expected {r['expected_error']})"
    when = instant_at(r, "cuda_error_at")
    if when is not None and when < fault_at - STAMP_S:
        return "cuda_error_at", f"{r['cuda_error_at']} is before the fault at {r['fault_at']}"
    children = r["children"]
    faulting = children[0] if children and children[0]["step"] == "faulting" else None
    if faulting is None or r.get("faulting_pid") != faulting["pid"]:
        return (
            "faulting_pid",
            f"{r.get('faulting_pid')}, but the first child is {children[:1]}: the faulting"
            " process is the faulter's first child",
        )
    fresh = [c["pid"] for c in children[1:] if c["step"] == "fresh"]
    serve = r.get("serve") or []
    if [s["pid"] for s in serve] != fresh:
        return "serve", f"tries by {[s['pid'] for s in serve]}, but the fresh children were {fresh}"
    ended = instant_at(faulting, "ended_at")
    for i, attempt in enumerate(serve):
        began = instant_at(attempt, "started_at")
        if ended is not None and began is not None and began < ended - STAMP_S:
            return (
                f"serve[{i}].started_at",
                f"{attempt['started_at']} is before the faulting process ended"
                f" ({faulting['ended_at']}): a fresh try runs after it",
            )
    if r.get("served") is not None and r["served"] is not any(s.get("kernel_ran") is True for s in serve):
        return "served", f"{r['served']}, but its tries ran a kernel: {[s.get('kernel_ran') for s in serve]}"
    return None


def _children_once(r: Mapping[str, Any]) -> tuple[str, str] | None:
    twice = duplicates(c["pid"] for c in r["children"])
    if twice or r["pid"] in {c["pid"] for c in r["children"]}:
        return "children", f"pid {(twice or [r['pid']])[0]} twice: each child is a process of its own"
    wanted = {"neighbour": {"neighbour"}, "faulter": {"faulting", "fresh"}}[r["role"]]
    odd = [c["step"] for c in r["children"] if c["step"] not in wanted]
    return ("children", f"a {r['role']}'s child ran the {odd[0]} step") if odd else None


FAULT = Obj(
    {
        "probe": Field(Str(choices=("fault",))),
        "role": Field(Str(choices=tuple(FAULT_ROLES))),
        "ok": Field(Bool()),
        "error": Field(Maybe(Str())),
        "pid": Field(Int(minimum=1), doc="this process, which never touches CUDA"),
        "children": Field(Arr(CHILD)),
        "window_s": Field(Num(positive=True, unit="s"), doc="the step's length, the same in both Pods"),
        "delay_s": Field(Maybe(Num(minimum=0, unit="s")), doc="faulter: when it faults, after started_at"),
        "expected_error": Field(Str(choices=(EXPECTED_ERROR,))),
        "mechanism": Field(MECHANISM),
        "env": Field(ENV),
        "preload": Field(PRELOAD),
        "gpu_uuid": Field(Maybe(UUID)),
        "gpu_name": Field(Maybe(Str())),
        "started_at": Field(Time()),
        "ended_at": Field(Time()),
        "timeline": Field(Maybe(LAUNCH_TIMELINE), required=False, doc="neighbour: launches a second"),
        "launches": Field(Maybe(Int(minimum=0)), required=False, doc="neighbour: the sum of its timeline"),
        "survived": Field(Maybe(Bool()), required=False, doc="neighbour: no CUDA error until its window's end"),
        "cuda_error": Field(Maybe(Str()), required=False, doc="the CUresult that ended its CUDA work"),
        "cuda_error_at": Field(Maybe(Time()), required=False),
        "fault_at": Field(Maybe(Time()), required=False, doc="faulter: when the bad kernel was launched"),
        "faulted": Field(Maybe(Bool()), required=False, doc="faulter: cuda_error is expected_error"),
        "faulting_pid": Field(Maybe(Int(minimum=1)), required=False),
        "faulting_ended": Field(Maybe(Bool()), required=False, doc="faulter: the faulting process exited"),
        "served": Field(Maybe(Bool()), required=False, doc="faulter: a fresh process then ran a kernel"),
        "serve": Field(Maybe(Arr(SERVE_TRY)), required=False),
        "pod": POD,
    },
    invariants=(
        Invariant("ok-without-error", "a probe that says ok reports no error", ok_without_error),
        Invariant("fault-role-fields", "a neighbour reports timeline, launches, survived, cuda_error and"
                  " cuda_error_at; a faulter fault_at, cuda_error, cuda_error_at, faulted, faulting_pid,"
                  " faulting_ended, served and serve; neither the other's; once ok, each but the error measured",
                  _role_fields(FAULT_ROLES)),
        Invariant("fault-times-in-order", "started_at ≤ ended_at; a step that ran lasts its window",
                  all_of(in_order(("started_at", "ended_at"), slack=STAMP_S), lasts_its_window)),
        Invariant("error-has-its-instant", "cuda_error and cuda_error_at are set together", error_when),
        Invariant("fault-children-once", "each child a process of its own, in its role's steps", _children_once),
        Invariant("neighbour-agrees-with-its-timeline", "launches = the sum of per_s; survived exactly when no"
                  " cuda_error; the error inside its timeline; the timeline inside the probe's start and end",
                  _neighbour_figures),
        Invariant("faulter-in-order", "fault_at ≥ started_at + delay_s; faulted exactly when cuda_error is"
                  " expected_error, at or after fault_at; faulting_pid is the first child; every serve try began"
                  " after the faulting process ended, one per fresh child; served exactly when one ran a kernel",
                  _faulter_figures),
        Invariant("fault-pod-is-this-process", "the pod block's pid is pid, its children the children's pids",
                  own_pod(lambda r: [c["pid"] for c in r["children"]])),
    ),
    doc="the fault probe's JSON line (components/incluster/probes/fault.py)",
)  # fmt: skip


def planned_end(neighbour: Mapping[str, Any]) -> float:
    """When a neighbour's launch loop was planned to end: its window from started_at, less the probe's margin."""
    return instant(neighbour["started_at"], "started_at") + neighbour["window_s"] - END_MARGIN_S
