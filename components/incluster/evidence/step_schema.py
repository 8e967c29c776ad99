"""What the fault and bandwidth probes print, declared: their keys, kinds, units, bounds and invariants.

The proof Pods run these two steps first (fault.py, bandwidth.py; docs/probes.md "The output contract of fault.py and
bandwidth.py"); the record (record.py) validates every such line against these before a check or a finding reads
it, and docs/evidence/{fault,bandwidth}.schema.json are generated from them. Standard library only.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..probes.timeline import stats, whole_seconds
from .probe_schema import ENV, MECHANISM, PRELOAD, PROVENANCE, UUID
from .schema import Arr, Bool, Field, Int, Invariant, Maybe, Num, Obj, Schema, Str, Time
from .strict import duplicates, instant

LAUNCHES, GBPS = "launches/s", "GB/s"
STAMP_S = 0.002
"""Instants are printed to the millisecond, durations from unrounded clocks: how far two of them may disagree."""
CHANGED_WINDOW_S = 0.01
"""A step's end against its start + window (the H200's records: never short by more than a rounding)."""
PER_S_ROUNDING = 0.051
"""GB/s a second is printed to 0.1 (launch counts are whole): how far a figure recomputed from the printed timeline may
differ from the one printed."""
HOG_OVERRUN_S = 0.5
"""The hog stops launching at its delay + seconds; the copy in flight then finishes (0.6 ms for 2 GiB on an H200)."""
GIGA = 1e9
MIB = 1 << 20
Rule = Callable[[Mapping[str, Any]], "tuple[str, str] | None"]


def timeline(rate: Schema, unit: str) -> Obj:
    """`{"t0", "per_s", "measured_s"}` (timeline.py): one entry per second from t0, the last one maybe partial."""
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


def at(r: Mapping[str, Any], key: str) -> float | None:
    value = r.get(key)
    return None if value is None else instant(value, key)


def _ordered(pairs: Sequence[tuple[str, str]], slack: float = STAMP_S) -> Rule:
    """Each (earlier, later) pair of instants, where both are present, in that order."""

    def rule(r: Mapping[str, Any]) -> tuple[str, str] | None:
        for early, late in pairs:
            a, b = _path(r, early), _path(r, late)
            if a is not None and b is not None and instant(b, late) < instant(a, early) - slack:
                return late, f"{b} is before {early} {a}: the probe's times run backwards"
        return None

    return rule


def _path(r: Mapping[str, Any], path: str) -> Any:
    value: Any = r
    for key in path.split("."):
        value = value.get(key) if isinstance(value, Mapping) else None
    return value


def _ok_without_error(r: Mapping[str, Any]) -> tuple[str, str] | None:
    return ("error", f"{r['error'][:80]!r} beside ok=true") if r.get("ok") is True and r.get("error") else None


def _lasts_its_window(r: Mapping[str, Any]) -> tuple[str, str] | None:
    """A step that ran idles to its window's end, so both Pods' next steps start together."""
    took = instant(r["ended_at"], "ended_at") - instant(r["started_at"], "started_at")
    if r.get("ok") is True and took < r["window_s"] - CHANGED_WINDOW_S:
        return "ended_at", f"{took:.3f} s after started_at, a step of {r['window_s']} s: it did not last its window"
    return None


def _error_when(r: Mapping[str, Any]) -> tuple[str, str] | None:
    if (r.get("cuda_error") is None) != (r.get("cuda_error_at") is None):
        return (
            "cuda_error_at",
            f"{r.get('cuda_error_at')} beside cuda_error {r.get('cuda_error')}: an error has"
            " its instant and an instant its error",
        )
    return None


def _own_pod(children_pids: Callable[[Mapping[str, Any]], list[int]]) -> Rule:
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


def _within_window(r: Mapping[str, Any], line: Mapping[str, Any] | None, where: str) -> tuple[str, str] | None:
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


# ---------------------------------------------------------------- fault.py

FAULT_ROLES: dict[str, tuple[str, ...]] = {
    "neighbour": ("timeline", "launches", "survived", "cuda_error", "cuda_error_at"),
    "faulter": ("fault_at", "cuda_error", "cuda_error_at", "faulted", "faulting_pid", "faulting_ended", "served",
                "serve"),
}  # fmt: skip
"""fault.ROLE_FIELDS: what each role measures beside the fields both share."""
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
                          _ordered((("started_at", "ended_at"),))),),
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
    when = at(r, "cuda_error_at")
    t0 = instant(line["t0"], "timeline.t0")
    if when is not None and not t0 - STAMP_S <= when <= t0 + line["measured_s"] + STAMP_S:
        return (
            "cuda_error_at",
            f"{r['cuda_error_at']} lies outside its own timeline ({line['t0']} +"
            f" {line['measured_s']} s): the loop stops at its error",
        )
    return _within_window(r, line, "timeline")


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
    when = at(r, "cuda_error_at")
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
    ended = at(faulting, "ended_at")
    for i, attempt in enumerate(serve):
        began = at(attempt, "started_at")
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
        "expected_error": Field(Str(choices=("CUDA_ERROR_ILLEGAL_ADDRESS",))),
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
        "pod": Field(PROVENANCE, required=False, doc="where it ran (since provenance; required when expected)"),
    },
    invariants=(
        Invariant("ok-without-error", "a probe that says ok reports no error", _ok_without_error),
        Invariant("fault-role-fields", "a neighbour reports timeline, launches, survived, cuda_error and"
                  " cuda_error_at; a faulter fault_at, cuda_error, cuda_error_at, faulted, faulting_pid,"
                  " faulting_ended, served and serve; neither the other's; once ok, each but the error measured",
                  _role_fields(FAULT_ROLES)),
        Invariant("fault-times-in-order", "started_at ≤ ended_at; a step that ran lasts its window",
                  lambda r: _ordered((("started_at", "ended_at"),))(r) or _lasts_its_window(r)),
        Invariant("error-has-its-instant", "cuda_error and cuda_error_at are set together", _error_when),
        Invariant("fault-children-once", "each child a process of its own, in its role's steps", _children_once),
        Invariant("neighbour-agrees-with-its-timeline", "launches = the sum of per_s; survived exactly when no"
                  " cuda_error; the error inside its timeline; the timeline inside the probe's start and end",
                  _neighbour_figures),
        Invariant("faulter-in-order", "fault_at ≥ started_at + delay_s; faulted exactly when cuda_error is"
                  " expected_error, at or after fault_at; faulting_pid is the first child; every serve try began"
                  " after the faulting process ended, one per fresh child; served exactly when one ran a kernel",
                  _faulter_figures),
        Invariant("fault-pod-is-this-process", "the pod block's pid is pid, its children the children's pids",
                  _own_pod(lambda r: [c["pid"] for c in r["children"]])),
    ),
    doc="the fault probe's JSON line (components/incluster/fault.py)",
)  # fmt: skip

# ---------------------------------------------------------------- bandwidth.py

GB_TIMELINE = timeline(Num(minimum=0, unit=GBPS), GBPS)
COPY = Obj(
    {
        "kernel": Field(Str(choices=("copy",))),
        "mib": Field(Int(minimum=64, unit="MiB")),
        "bytes_per_copy": Field(Int(minimum=1, unit="bytes")),
        "blocks": Field(Int(minimum=1)),
        "threads": Field(Int(minimum=1)),
    },
    invariants=(Invariant("copy-moves-both-buffers", "bytes_per_copy = 2 × mib MiB (read and written)",
                          lambda c: None if c["bytes_per_copy"] == 2 * c["mib"] * MIB else
                          ("bytes_per_copy", f"{c['bytes_per_copy']}, but 2 × {c['mib']} MiB is"
                                             f" {2 * c['mib'] * MIB}")),),
)  # fmt: skip
GBPS_STATS = Obj(
    {
        "mean": Field(Maybe(Num(minimum=0, unit=GBPS))),
        "min": Field(Maybe(Num(minimum=0, unit=GBPS))),
        "max": Field(Maybe(Num(minimum=0, unit=GBPS))),
        "seconds": Field(Int(minimum=0, unit="s")),
    },
    doc="the timeline's whole seconds: their mean, min and max",
)


def _bandwidth_figures(r: Mapping[str, Any]) -> tuple[str, str] | None:
    """gbps is its timeline's whole seconds, the timeline's bytes are the copies', and the copying lies inside the
    probe's start and end (a hog's from its delay, for its seconds)."""
    line, gbps = r.get("timeline"), r.get("gbps")
    if line and gbps:
        again = stats(whole_seconds(line))
        if gbps["seconds"] != again["seconds"]:
            return "gbps.seconds", f"{gbps['seconds']}, but the timeline holds {again['seconds']} whole seconds"
        for key in ("mean", "min", "max"):
            a, b = gbps[key], again[key]
            if (a is None) != (b is None) or (a is not None and abs(a - b) > PER_S_ROUNDING):
                return f"gbps.{key}", f"{a}, but the timeline's whole seconds give {b}"
        if gbps["mean"] is not None and not gbps["min"] <= gbps["mean"] <= gbps["max"]:
            return "gbps.mean", f"{gbps['mean']} is not between min {gbps['min']} and max {gbps['max']}"
        if r.get("ok") is True and gbps["seconds"] and not gbps["mean"]:
            return "gbps.mean", f"{gbps['mean']} GB/s over {gbps['seconds']} s of copying: a rate is more than 0"
    if line and r.get("copy"):
        moved = r["copies"] * r["copy"]["bytes_per_copy"] / GIGA
        if abs(moved - sum(line["per_s"])) > PER_S_ROUNDING * len(line["per_s"]):
            return (
                "copies",
                f"{r['copies']} copies of {r['copy']['bytes_per_copy']} bytes are {moved:.1f} GB; the"
                f" timeline holds {sum(line['per_s']):.1f}",
            )
    if line:
        t0, started = instant(line["t0"], "timeline.t0"), at(r, "copy_started_at")
        ended = at(r, "copy_ended_at")
        if started is None or abs(t0 - started) > STAMP_S:
            return "timeline.t0", f"{line['t0']}, but the copying started at {r.get('copy_started_at')}"
        if ended is None or abs(t0 + line["measured_s"] - ended) > STAMP_S:
            return (
                "timeline.measured_s",
                f"{line['measured_s']} s from t0, but the copying ended at {r.get('copy_ended_at')}",
            )
        return _within_window(r, line, "timeline") or _hog_span(r, started, ended)
    return None


def _hog_span(r: Mapping[str, Any], started: float, ended: float) -> tuple[str, str] | None:
    if r["role"] != "hog":
        return None
    begin = instant(r["started_at"], "started_at") + r["delay_s"]
    if started < begin - CHANGED_WINDOW_S:
        return "copy_started_at", f"{r['copy_started_at']} is before started_at + delay_s ({r['delay_s']} s)"
    if ended - started > r["hog_seconds"] + HOG_OVERRUN_S:
        return "copy_ended_at", f"{ended - started:.3f} s of copying, for a hog of {r['hog_seconds']} s"
    return None


def _bandwidth_roles(r: Mapping[str, Any]) -> tuple[str, str] | None:
    hog = r["role"] == "hog"
    for key in ("delay_s", "hog_seconds"):
        if (r.get(key) is not None) != hog:
            return key, f"{r.get(key)} for a {r['role']}: only the hog acts after a delay, for its seconds"
    if hog and r["delay_s"] + r["hog_seconds"] > r["window_s"] + STAMP_S:
        return "hog_seconds", f"{r['delay_s']} + {r['hog_seconds']} s do not fit its {r['window_s']} s window"
    if r.get("ok") is True and not (r.get("copy") and r.get("timeline") and r.get("gbps") and r["copies"] >= 1):
        return "copies", f"{r['copies']} copies beside ok=true: a step that ran copied"
    return None


BANDWIDTH = Obj(
    {
        "probe": Field(Str(choices=("bandwidth",))),
        "role": Field(Str(choices=("neighbour", "hog"))),
        "ok": Field(Bool()),
        "error": Field(Maybe(Str())),
        "pid": Field(Int(minimum=1)),
        "children": Field(Arr(Int(minimum=1)), doc="none: the copies run in this process"),
        "window_s": Field(Num(positive=True, unit="s")),
        "delay_s": Field(Maybe(Num(minimum=0, unit="s")), doc="hog: when it starts copying, after started_at"),
        "hog_seconds": Field(Maybe(Num(positive=True, unit="s")), doc="hog: how long it copies"),
        "mechanism": Field(MECHANISM),
        "env": Field(ENV),
        "preload": Field(PRELOAD),
        "gpu_uuid": Field(Maybe(UUID)),
        "gpu_name": Field(Maybe(Str())),
        "sm_count": Field(Maybe(Int(minimum=1))),
        "copy": Field(Maybe(COPY)),
        "copy_started_at": Field(Maybe(Time())),
        "copy_ended_at": Field(Maybe(Time())),
        "copies": Field(Int(minimum=0)),
        "timeline": Field(Maybe(GB_TIMELINE), doc="GB/s a second: bytes read and written by the copies that"
                          " finished in it"),
        "gbps": Field(Maybe(GBPS_STATS)),
        "cuda_error": Field(Maybe(Str())),
        "cuda_error_at": Field(Maybe(Time())),
        "started_at": Field(Time()),
        "ended_at": Field(Time()),
        "pod": Field(PROVENANCE, required=False, doc="where it ran (since provenance; required when expected)"),
    },
    invariants=(
        Invariant("ok-without-error", "a probe that says ok reports no error", _ok_without_error),
        Invariant("bandwidth-roles", "only a hog has delay_s and hog_seconds, inside its window; a step that ran"
                  " copied at least once", _bandwidth_roles),
        Invariant("bandwidth-times-in-order", "started_at ≤ ended_at, copy_started_at ≤ copy_ended_at; a"
                  " step that ran lasts its window", lambda r: _ordered((("started_at", "ended_at"),
                                                                 ("copy_started_at", "copy_ended_at")))(r)
                  or _lasts_its_window(r)),
        Invariant("error-has-its-instant", "cuda_error and cuda_error_at are set together", _error_when),
        Invariant("bandwidth-agrees-with-its-timeline", "gbps is the timeline's whole seconds (min ≤ mean ≤ max,"
                  " mean > 0 once it copied); copies × bytes_per_copy are the timeline's bytes; t0 is"
                  " copy_started_at and t0 + measured_s copy_ended_at; a hog copies from its delay for its"
                  " seconds", _bandwidth_figures),
        Invariant("bandwidth-pod-is-this-process", "the pod block's pid is pid, and it names no children",
                  _own_pod(lambda r: list(r["children"]))),
    ),
    doc="the bandwidth probe's JSON line (components/incluster/bandwidth.py)",
)  # fmt: skip
STEPS: dict[str, Obj] = {"fault": FAULT, "bandwidth": BANDWIDTH}
"""The proof Pods' first two steps, by their `probe` key (probe_schema.PROBES holds memory and compute)."""
