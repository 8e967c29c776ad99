"""What each probe prints, declared: the memory and compute results' keys, kinds, units, bounds and invariants.

The one source of their shape: the record (record.py) validates every probe line against these before any check
reads it, and docs/evidence/*.schema.json are generated from them. Standard library only.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from itertools import pairwise
from typing import Any

from .schema import AnyOf, Arr, Bool, Field, Int, Invariant, Map, Maybe, Num, Obj, Str, Time
from .strict import duplicates, instant

MIB_UNIT, GFMA = "MiB", "GFMA/s"
OOM_LINE = r"Device\s+\d+\s+OOM\s+\d+\s*/\s*\d+"
"""HAMi-core's refusal line (src/allocator/allocator.c:52, oom_check): what hami_oom_lines holds, nothing else."""
CHARGE_TOLERANCE_MIB = 8
"""memory_findings.CHARGE_TOLERANCE_MIB: the context-charge finding is bypassed beyond this shortfall."""
ROUNDING = 0.051
"""The timeline is printed to 0.1 and per_s_min/max to 0.01: how far two printings of one second may differ."""
TIMELINE_TOLERANCE = 0.02
"""The timeline's window mean lies within 2 % of mean_per_s (rounded, bucketed by whole seconds)."""

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


def _get(value: Mapping[str, Any], path: str) -> Any:
    for key in path.split("."):
        value = value.get(key) if isinstance(value, Mapping) else None
    return value


def _ordered(paths: tuple[str, ...]) -> Any:
    """The times at `paths` (those present) never run backwards."""

    def rule(r: Mapping[str, Any]) -> tuple[str, str] | None:
        present = [(p, _get(r, p)) for p in paths if _get(r, p) is not None]
        for (a, x), (b, y) in pairwise(present):
            if instant(y, b) < instant(x, a):
                return b, f"{y} is before {a} {x}: the probe's times run backwards"
        return None

    return rule


def _at_most(small: str, large: str, what: str) -> Any:
    def rule(r: Mapping[str, Any]) -> tuple[str, str] | None:
        x, y = _get(r, small), _get(r, large)
        if x is not None and y is not None and x > y:
            return small, f"{x} MiB is more than {large} {y} MiB: {what}"
        return None

    return rule


def _needs_card(r: Mapping[str, Any]) -> tuple[str, str] | None:
    largest, hold = r.get("largest_alloc_mib"), (r.get("phases") or {}).get("hold") or {}
    if not r.get("gpu_uuid") and (largest or hold.get("ok") is True):
        return "gpu_uuid", f"null, yet {largest or hold.get('hold_mib')} MiB was allocated: an allocation needs a card"
    return None


def _context(r: Mapping[str, Any]) -> tuple[str, str] | None:
    expected, largest, context = r.get("expected_limit_mib"), r.get("largest_alloc_mib"), r.get("context_overhead_mib")
    held = expected is not None and largest is not None and largest <= expected
    want = expected - largest if held else None
    if context != want:
        return (
            "context_overhead_mib",
            f"{context}, but expected_limit_mib {expected} less largest_alloc_mib {largest} is {want}",
        )
    return None


def _oom_lines(r: Mapping[str, Any]) -> tuple[str, str] | None:
    lines = r.get("hami_oom_lines") or []
    for i, line in enumerate(lines):
        if not re.search(OOM_LINE, line):
            return f"hami_oom_lines[{i}]", f"{line[:80]!r} is not a HAMi-core OOM line"
    counted = (r.get("enforcement") or {}).get("oom_lines")
    if counted is not None and counted != len(lines):
        return "enforcement.oom_lines", f"{counted}, but hami_oom_lines holds {len(lines)}"
    return None


def _chunks(r: Mapping[str, Any]) -> tuple[str, str] | None:
    chunks = (r.get("phases") or {}).get("chunks")
    if not chunks:
        return None
    taken = chunks["calls"] - (1 if chunks.get("error") else 0)
    if chunks["allocated_mib"] != chunks["chunk_mib"] * taken:
        return (
            "phases.chunks.allocated_mib",
            f"{chunks['allocated_mib']} MiB is not {taken} kept calls of {chunks['chunk_mib']} MiB",
        )
    return None


def _findings_once(r: Mapping[str, Any]) -> tuple[str, str] | None:
    twice = duplicates(f["id"] for f in r.get("findings") or [])
    return ("findings", f"{twice[0]} is reported twice: which one holds is not known") if twice else None


def _charge_agrees(r: Mapping[str, Any]) -> tuple[str, str] | None:
    """The context-charge finding states the figures beside it: its charge is the result's context_overhead_mib,
    its quota the expected limit, its own context NVML's, and its verdict follows from them."""
    for i, f in enumerate(r.get("findings") or []):
        if f["id"] != "context-charge" or "charged_mib" not in f:
            continue
        where = f"findings[{i}]"
        quota = r.get("expected_limit_mib") or r.get("visible_total_mib") or 0
        for key, beside in (("charged_mib", r.get("context_overhead_mib")), ("quota_mib", quota),
                            ("own_context_mib", r.get("own_context_mib"))):  # fmt: skip
            if key in f and f[key] != beside:
                return f"{where}.{key}", f"{f[key]}, but the memory figures beside it say {beside}"
        context, charged = f.get("context_mib"), f.get("charged_mib")
        if context is not None and charged is not None:
            if f.get("over_quota_mib") != max(context - charged, 0):
                return f"{where}.over_quota_mib", f"{f.get('over_quota_mib')}, but {context} - {charged} MiB"
            if f["bypassed"] is not (context - charged > CHARGE_TOLERANCE_MIB):
                return f"{where}.bypassed", f"{f['bypassed']} for a {context - charged} MiB shortfall"
    return None


ENV_LESS_IDS = ("env-less-process", "env-less-first-toucher")


def _env_less_agrees(r: Mapping[str, Any]) -> tuple[str, str] | None:
    """The env-less findings (memory_findings.env_less_findings) state the quota beside them, asked at most twice it,
    and are bypassed exactly when the child got more than the quota."""
    quota = r.get("expected_limit_mib") or r.get("visible_total_mib") or 0
    for i, f in enumerate(r.get("findings") or []):
        if f["id"] not in ENV_LESS_IDS or "quota_mib" not in f:
            continue
        where = f"findings[{i}]"
        if f["quota_mib"] != quota:
            return f"{where}.quota_mib", f"{f['quota_mib']}, but the memory figures beside it say {quota}"
        for key in ("largest_mib", "after_largest_mib"):
            got = f.get(key)
            if got is not None and (isinstance(got, bool) or not isinstance(got, int) or not 0 <= got <= 2 * quota):
                return f"{where}.{key}", f"{got}: the child asks for at most twice the {quota} MiB quota"
        if isinstance(f["bypassed"], bool) and f["bypassed"] is not ((f.get("largest_mib") or 0) > quota):
            return f"{where}.bypassed", f"{f['bypassed']} for {f.get('largest_mib')} MiB against the {quota} MiB quota"
    return None


def _ok_without_error(r: Mapping[str, Any]) -> tuple[str, str] | None:
    return ("error", f"{r['error'][:80]!r} beside ok=true") if r.get("ok") is True and r.get("error") else None


HOLD = Obj(
    {
        "hold_mib": Field(Int(minimum=0, unit=MIB_UNIT)),
        "ok": Field(Bool()),
        "error": Field(Maybe(Str())),
        "seconds": Field(Num(minimum=0, unit="s")),
        "started_at": Field(Time()),
        "ended_at": Field(Time()),
        "extra_mib": Field(Int(minimum=0, unit=MIB_UNIT)),
        "extra_ok": Field(Bool()),
        "extra_error": Field(Maybe(Str())),
    },
    invariants=(
        Invariant("hold-in-order", "the hold ends no earlier than it starts", _ordered(("started_at", "ended_at"))),
    ),
)
SWEEP_STEP = Obj({"gib": Field(Num(positive=True, unit="GiB")), "ok": Field(Bool()), "error": Field(Maybe(Str()))})
CHUNKS = Obj(
    {
        "chunk_mib": Field(Int(minimum=1, unit=MIB_UNIT)),
        "allocated_mib": Field(Int(minimum=0, unit=MIB_UNIT)),
        "calls": Field(Int(minimum=0)),
        "error": Field(Maybe(Str())),
    }
)
MEBI = Maybe(Int(minimum=0, unit=MIB_UNIT))
MEMORY = Obj(
    {
        "probe": Field(Str(choices=("memory",))),
        "ok": Field(Bool()),
        "error": Field(Maybe(Str())),
        "env": Field(ENV),
        "ld_so_preload": Field(Arr(Str())),
        "preload": Field(PRELOAD),
        "mechanism": Field(MECHANISM),
        "gpu_uuid": Field(Maybe(UUID)),
        "gpu_name": Field(Maybe(Str())),
        "nvml_total_mib": Field(MEBI),
        "nvml_free_mib": Field(MEBI),
        "visible_total_mib": Field(MEBI, doc="cuMemGetInfo's total on the primary context"),
        "visible_free_mib": Field(MEBI),
        "expected_limit_mib": Field(Maybe(Int(minimum=1, unit=MIB_UNIT))),
        "largest_alloc_mib": Field(MEBI, doc="the largest single allocation, found to 1 MiB"),
        "search_calls": Field(Int(minimum=0)),
        "context_overhead_mib": Field(MEBI),
        "own_context_mib": Field(MEBI),
        "phases": Field(
            Obj({"hold": Field(Maybe(HOLD)), "sweep": Field(Arr(SWEEP_STEP)), "chunks": Field(Maybe(CHUNKS))})
        ),
        "findings": Field(Arr(FINDING)),
        "hami_oom_lines": Field(Arr(Str())),
        "limit_enforced": Field(Maybe(Bool())),
        "enforcement": Field(
            Maybe(
                Obj(
                    {
                        "view_rewritten": Field(Maybe(Bool())),
                        "free_within_limit": Field(Maybe(Bool())),
                        "oom_lines": Field(Int(minimum=0)),
                    }
                )
            )
        ),
        "keep_holding_since": Field(Maybe(Time())),
        "keep_holding_error": Field(Maybe(Str()), required=False),
        "started_at": Field(Time()),
        "ended_at": Field(Time()),
        "cuda_error": Field(Maybe(Str())),
        "pod": Field(PROVENANCE, required=False, doc="where it ran (since provenance; required when expected)"),
    },
    invariants=(
        Invariant("ok-without-error", "a probe that says ok reports no error", _ok_without_error),
        Invariant(
            "view-free-within-total",
            "cuMemGetInfo's free ≤ its total",
            _at_most("visible_free_mib", "visible_total_mib", "free memory is part of the total"),
        ),
        Invariant(
            "nvml-free-within-total",
            "NVML's free ≤ its total",
            _at_most("nvml_free_mib", "nvml_total_mib", "free memory is part of the total"),
        ),
        Invariant(
            "largest-within-view",
            "the largest allocation ≤ the view's total (the search never passes it)",
            _at_most("largest_alloc_mib", "visible_total_mib", "the search never asks past the total"),
        ),
        Invariant(
            "allocation-needs-a-card", "a hold or an allocation that succeeded names the card (gpu_uuid)", _needs_card
        ),
        Invariant(
            "context-is-quota-less-largest",
            "context_overhead_mib = expected_limit_mib − largest_alloc_mib when the largest fits the quota, else null",
            _context,
        ),
        Invariant("chunks-add-up", "allocated_mib = chunk_mib × the calls that succeeded", _chunks),
        Invariant(
            "oom-lines-are-the-librarys",
            "each hami_oom_lines entry is a HAMi-core OOM line, and enforcement.oom_lines counts them",
            _oom_lines,
        ),
        Invariant(
            "memory-times-in-order",
            "started_at ≤ hold started ≤ hold ended ≤ keep_holding_since ≤ ended_at",
            _ordered(
                ("started_at", "phases.hold.started_at", "phases.hold.ended_at", "keep_holding_since", "ended_at")
            ),
        ),
        Invariant("findings-once", "each finding id once", _findings_once),
        Invariant(
            "env-less-agrees",
            "the env-less findings' quota_mib is the quota beside them, largest_mib and"
            " after_largest_mib at most twice it, bypassed exactly when largest_mib is above it",
            _env_less_agrees,
        ),
        Invariant(
            "context-charge-agrees",
            "the context-charge finding's charged_mib, quota_mib and own_context_mib"
            " are the figures beside it, and its over_quota_mib and bypassed follow from them",
            _charge_agrees,
        ),
    ),
    doc="the memory probe's JSON line (components/incluster/memory.py)",
)


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
        "started_at": Field(Time()),
        "ended_at": Field(Time()),
        "pod": Field(PROVENANCE, required=False, doc="where it ran (since provenance; required when expected)"),
    },
    invariants=(
        Invariant("ok-without-error", "a probe that says ok reports no error", _ok_without_error),
        Invariant(
            "judged-shape-window", "the judged shape ran the window and warm-up the probe was asked", _judged_window
        ),
        Invariant("compute-times-in-order", "started_at ≤ ended_at", _ordered(("started_at", "ended_at"))),
        Invariant("findings-once", "each finding id once", _findings_once),
    ),
    doc="the compute probe's JSON line (components/incluster/compute.py)",
)
PROBES: dict[str, Obj] = {"memory": MEMORY, "compute": COMPUTE}
"""Each probe kind the judge reads, by its `probe` key; a line of another kind is not read."""
