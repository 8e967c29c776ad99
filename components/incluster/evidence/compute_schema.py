"""What the compute probe prints, declared: its keys, kinds, units, bounds and invariants (probes/compute.py).

The record validates every compute line against COMPUTE before any check reads it, and
docs/evidence/compute.schema.json is generated from it. Standard library only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..probes.process import HOST_PID_FAILED
from .probe_fields import ENV, FINDING, MECHANISM, POD, PRELOAD, UUID, findings_once, ok_without_error
from .schema import Arr, Bool, Field, Int, Invariant, Map, Maybe, Num, Obj, Str, Time, in_order

GFMA = "GFMA/s"
ROUNDING = 0.051
"""The timeline is printed to 0.1 and per_s_min/max to 0.01: how far two printings of one second may differ."""
TIMELINE_TOLERANCE = 0.02
"""The timeline's window mean lies within 2 % of mean_per_s (rounded, bucketed by whole seconds)."""


def _shape_rule(s: Mapping[str, Any]) -> tuple[str, str] | None:
    """A shape's figures against its own timeline: its length, its window's mean, its extremes, its launches."""
    timeline, warmup, window = s["timeline_per_s"], s["warmup_s"], s["window_s"]
    seconds = int(warmup + window)
    if len(timeline) != seconds:
        return (
            "timeline_per_s",
            f"{len(timeline)} seconds; its {warmup:g} s warm-up and {window:g} s window make {seconds}",
        )
    inside = timeline[int(warmup) :]
    mean, low, high = s["mean_per_s"], s["per_s_min"], s["per_s_max"]
    if inside:
        again = sum(inside) / window
        if abs(again - mean) > TIMELINE_TOLERANCE * max(abs(mean), 1.0):
            return "mean_per_s", f"{mean}, but its timeline averages {again:.2f} GFMA/s over its window"
        if high is not None and high < max(inside) - ROUNDING:
            return "per_s_max", f"{high}, below the timeline's peak {max(inside)}"
        if low is not None and low > min(inside) + ROUNDING:
            return "per_s_min", f"{low}, above the timeline's lowest second {min(inside)}"
    whole = float(warmup).is_integer() and float(window).is_integer()  # else the mean's window is not whole seconds
    if whole and low is not None and high is not None and not low - ROUNDING <= mean <= high + ROUNDING:
        return "mean_per_s", f"{mean} is not between per_s_min {low} and per_s_max {high}"
    work = s["blocks"] * s["threads"] * s["iters"] / 1e9
    done, peak = s["launches"] * work, max(timeline, default=0.0)
    # Every launch that finished inside a whole second is in the timeline; the rest finished after its last second.
    if (
        not sum(timeline) - ROUNDING * len(timeline)
        <= done
        <= sum(timeline) + (warmup + window - seconds + 1) * peak + work
    ):
        return (
            "launches",
            f"{s['launches']} launches of {work:.2f} GFMA are {done:.0f} GFMA; the timeline holds {sum(timeline):.0f}",
        )
    return None


SHAPE = Obj(
    {
        "blocks": Field(Int(minimum=1)),
        "threads": Field(Int(minimum=1)),
        "iters": Field(Int(minimum=1)),
        "launches": Field(Int(minimum=1)),
        "launch_ms_median": Field(Maybe(Num(positive=True, unit="ms"))),
        "warmup_s": Field(Num(minimum=0, unit="s")),
        "window_s": Field(Num(positive=True, unit="s")),
        "mean_per_s": Field(Num(positive=True, unit=GFMA), doc="a rate: more than 0"),
        "per_s_min": Field(Maybe(Num(minimum=0, unit=GFMA))),
        "per_s_max": Field(Maybe(Num(minimum=0, unit=GFMA))),
        "per_s_stdev": Field(Num(minimum=0, unit=GFMA)),
        "timeline_per_s": Field(Arr(Num(minimum=0, unit=GFMA))),
    },
    invariants=(Invariant("shape-agrees-with-its-timeline", "len(timeline) = int(warm-up + window); its window's"
                          " mean is mean_per_s (2 %); per_s_min ≤ mean ≤ per_s_max (over whole seconds), each within"
                          " the timeline's extremes; launches × work per launch is the timeline's work", _shape_rule),),
)  # fmt: skip
CALIBRATION = Map(Map(Num()))
SHAPES = Map(SHAPE)
BASELINE = Obj(
    {
        "source": Field(Str(choices=("child", "file"))),
        "how": Field(Str()),
        "env": Field(Maybe(ENV)),
        "preload": Field(Maybe(PRELOAD)),
        "calibration": Field(Maybe(CALIBRATION)),
        "shapes": Field(SHAPES),
    }
)


def _lookup_rule(r: Mapping[str, Any]) -> tuple[str, str] | None:
    """The lookup's verdict is its lines' (where they were kept), and exists only where HAMi-core limits the process."""
    lookup = r.get("lookup")
    if lookup is None:
        return None
    found = lookup["host_pid_found"]
    if (found is None) != (r["mechanism"] != "hami-core"):
        return "lookup.host_pid_found", f"{found} for a process limited by {r['mechanism']}"
    lines = lookup.get("lines")
    failed = lines is not None and any(mark in line for line in lines for mark in HOST_PID_FAILED)
    if found is True and failed:
        return "lookup.host_pid_found", "true, but HAMi-core's own line says it found no host PID"
    return None


LOOKUP = Obj(
    {
        "lines": Field(Arr(Str()), required=False, doc="HAMi-core's lines during cuInit (dropped first to fit)"),
        "host_pid_found": Field(Maybe(Bool()), doc="whether HAMi-core found the host PID its compute limiter needs"),
        "context_at": Field(Time(), doc="when cuInit, and with it the host-PID lookup, returned"),
    }
)


def _judged_window(r: Mapping[str, Any]) -> tuple[str, str] | None:
    shape = (r.get("shapes") or {}).get(r.get("judged_shape") or "")
    if shape and (shape["window_s"], shape["warmup_s"]) != (r["window_s"], r["warmup_s"]):
        return (
            f"shapes.{r['judged_shape']}.window_s",
            f"{shape['window_s']} s after {shape['warmup_s']} s, the probe"
            f" was asked {r['window_s']} s after {r['warmup_s']} s",
        )
    return None


COMPUTE = Obj(
    {
        "probe": Field(Str(choices=("compute",))),
        "ok": Field(Bool()),
        "error": Field(Maybe(Str())),
        "gpu_uuid": Field(Maybe(UUID)),
        "gpu_name": Field(Maybe(Str())),
        "sm_count": Field(Maybe(Int(minimum=1))),
        "env": Field(ENV),
        "preload": Field(PRELOAD),
        "mechanism": Field(MECHANISM),
        "limit_percent": Field(Maybe(Int(minimum=0, maximum=100, unit="%"))),
        "judged_shape": Field(Maybe(Str())),
        "warmup_s": Field(Num(minimum=0, unit="s")),
        "window_s": Field(Num(positive=True, unit="s")),
        "calibration": Field(CALIBRATION),
        "shapes": Field(SHAPES),
        "baseline": Field(Maybe(BASELINE)),
        "share": Field(Maybe(Map(Maybe(Num(minimum=0))))),
        "findings": Field(Arr(FINDING)),
        "measured_by": Field(Maybe(Str())),
        "lookup": Field(Maybe(LOOKUP), required=False, doc="the limited process's host-PID lookup (its cuInit)"),
        "started_at": Field(Time()),
        "ended_at": Field(Time()),
        "pod": POD,
    },
    invariants=(
        Invariant("ok-without-error", "a probe that says ok reports no error", ok_without_error),
        Invariant(
            "judged-shape-window", "the judged shape ran the window and warm-up the probe was asked", _judged_window
        ),
        Invariant(
            "compute-times-in-order",
            "started_at ≤ lookup.context_at ≤ ended_at",
            in_order(("started_at", "lookup.context_at", "ended_at")),
        ),
        Invariant(
            "lookup-agrees",
            "host_pid_found is null exactly where HAMi-core does not limit, and false where"
            " HAMi-core's kept line says it found no host PID",
            _lookup_rule,
        ),
        Invariant("findings-once", "each finding id once", findings_once),
    ),
    doc="the compute probe's JSON line (components/incluster/probes/compute.py)",
)
