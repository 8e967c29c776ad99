"""What the bandwidth probe prints, declared: its keys, kinds, units, bounds and invariants (probes/bandwidth.py).

The proof Pods run this step second (docs/probes.md "The output contract of fault.py and bandwidth.py"); the record
validates every bandwidth line against BANDWIDTH before a finding reads it, and docs/evidence/bandwidth.schema.json
is generated from it. Standard library only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..probes.timeline import stats, whole_seconds
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
from .schema import Arr, Bool, Field, Int, Invariant, Maybe, Num, Obj, Str, Time, all_of, in_order
from .strict import instant

GBPS = "GB/s"
PER_S_ROUNDING = 0.051
"""GB/s a second is printed to 0.1 (launch counts are whole): how far a figure recomputed from the printed timeline may
differ from the one printed."""
MEAN_ROUNDING = 0.101
"""The mean printed to 0.1 of seconds printed to 0.1: a half rounds either way when another sum of the same seconds
lands a hair off it (3.11's float sum, 3.12's compensated one: 2051.9 and 2052.0 of 8207.8 over 4 s, an H100 run)."""
HOG_OVERRUN_S = 0.5
"""The hog stops launching at its delay + seconds; the copy in flight then finishes (0.6 ms for 2 GiB on an H200)."""
GIGA = 1e9
MIB = 1 << 20

MAX_GBPS = 20_000.0
"""More than any card's memory moves (the H200's 4.8 TB/s, a B200's 8; a copy here counts bytes read and written,
3,792 GB/s at most on the H200): a figure above it is no measurement."""
GB_TIMELINE = timeline(Num(minimum=0, maximum=MAX_GBPS, unit=GBPS), GBPS)
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
        "mean": Field(Maybe(Num(minimum=0, maximum=MAX_GBPS, unit=GBPS))),
        "min": Field(Maybe(Num(minimum=0, maximum=MAX_GBPS, unit=GBPS))),
        "max": Field(Maybe(Num(minimum=0, maximum=MAX_GBPS, unit=GBPS))),
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
            slack = MEAN_ROUNDING if key == "mean" else PER_S_ROUNDING
            if (a is None) != (b is None) or (a is not None and abs(a - b) > slack):
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
        t0, started = instant(line["t0"], "timeline.t0"), instant_at(r, "copy_started_at")
        ended = instant_at(r, "copy_ended_at")
        if started is None or abs(t0 - started) > STAMP_S:
            return "timeline.t0", f"{line['t0']}, but the copying started at {r.get('copy_started_at')}"
        if ended is None or abs(t0 + line["measured_s"] - ended) > STAMP_S:
            return (
                "timeline.measured_s",
                f"{line['measured_s']} s from t0, but the copying ended at {r.get('copy_ended_at')}",
            )
        return within_window(r, line, "timeline") or _hog_span(r, started, ended)
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
        "pod": POD,
    },
    invariants=(
        Invariant("ok-without-error", "a probe that says ok reports no error", ok_without_error),
        Invariant("bandwidth-roles", "only a hog has delay_s and hog_seconds, inside its window; a step that ran"
                  " copied at least once", _bandwidth_roles),
        Invariant("bandwidth-times-in-order", "started_at ≤ ended_at, copy_started_at ≤ copy_ended_at; a"
                  " step that ran lasts its window", all_of(in_order(("started_at", "ended_at"),
                                                                     ("copy_started_at", "copy_ended_at"),
                                                                     slack=STAMP_S), lasts_its_window)),
        Invariant("error-has-its-instant", "cuda_error and cuda_error_at are set together", error_when),
        Invariant("bandwidth-agrees-with-its-timeline", "gbps is the timeline's whole seconds (min ≤ mean ≤ max,"
                  " mean > 0 once it copied); copies × bytes_per_copy are the timeline's bytes; t0 is"
                  " copy_started_at and t0 + measured_s copy_ended_at; a hog copies from its delay for its"
                  " seconds", _bandwidth_figures),
        Invariant("bandwidth-pod-is-this-process", "the pod block's pid is pid, and it names no children",
                  own_pod(lambda r: list(r["children"]))),
    ),
    doc="the bandwidth probe's JSON line (components/incluster/probes/bandwidth.py)",
)  # fmt: skip
