"""What the memory probe prints, declared: its keys, kinds, units, bounds and invariants (probes/memory.py).

The record validates every memory line against MEMORY before any check reads it, and docs/evidence/memory.schema.json
is generated from it. Standard library only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..probes.memory_findings import CHARGE_TOLERANCE_MIB
from ..probes.process import OOM_LINE
from .probe_fields import ENV, FINDING, MECHANISM, POD, PRELOAD, UUID, findings_once, ok_without_error
from .schema import Arr, Bool, Field, Int, Invariant, Maybe, Num, Obj, Str, Time, at, in_order

MIB_UNIT = "MiB"


def _at_most(small: str, large: str, what: str) -> Any:
    def rule(r: Mapping[str, Any]) -> tuple[str, str] | None:
        x, y = at(r, small), at(r, large)
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
    want = expected - largest if expected is not None and largest is not None and largest <= expected else None
    if context != want:
        return (
            "context_overhead_mib",
            f"{context}, but expected_limit_mib {expected} less largest_alloc_mib {largest} is {want}",
        )
    return None


def _oom_lines(r: Mapping[str, Any]) -> tuple[str, str] | None:
    lines = r.get("hami_oom_lines") or []
    for i, line in enumerate(lines):
        if not OOM_LINE.search(line):
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
    """The env-less findings (probes/memory_findings.env_less_findings) state the quota beside them, asked at most
    twice it, and are bypassed exactly when the child got more than the quota."""
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
        Invariant("hold-in-order", "the hold ends no earlier than it starts", in_order(("started_at", "ended_at"))),
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
        "pod": POD,
    },
    invariants=(
        Invariant("ok-without-error", "a probe that says ok reports no error", ok_without_error),
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
            in_order(
                ("started_at", "phases.hold.started_at", "phases.hold.ended_at", "keep_holding_since", "ended_at")
            ),
        ),
        Invariant("findings-once", "each finding id once", findings_once),
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
    doc="the memory probe's JSON line (components/incluster/probes/memory.py)",
)
