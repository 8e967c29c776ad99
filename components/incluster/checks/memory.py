"""What the allocator refused and what two Pods held side by side: memory-enforced, neighbor-isolation.

Standard library only."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..evidence.record import Record
from ..evidence.strict import instant
from ..expectation import Expectation
from .refusal import OUT_OF_MEMORY, chunk_problems, library_lines, own_lines, refusal_problems
from .rule import (
    MAX_CONTEXT_OVERHEAD_MIB,
    SEARCH_STEP_MIB,
    Check,
    Judgement,
    Rule,
    enforces_nothing,
    library_absent,
    not_ok,
    probe_error,
    verdict,
)

# ---------------------------------------------------------------- memory-enforced


def _sweep(e: Expectation, name: str, r: Mapping[str, Any], seen: list[str], problems: list[str]) -> None:
    sweep = (r.get("phases") or {}).get("sweep") or []
    over = [s for s in sweep if s.get("ok") and float(s.get("gib", 0)) * 1024 > e.limit_mib]
    if over:
        problems.append(
            f"Pod {name}: sweep sizes above the quota succeeded: " + ", ".join(f"{s['gib']} GiB" for s in over)
        )
    if sweep:
        seen.append(
            f"{name} sweep: " + ", ".join(f"{s.get('gib')} GiB {'ok' if s.get('ok') else 'refused'}" for s in sweep)
        )
    if e.sweep_gib and not sweep:
        problems.append(f"Pod {name}: the sweep did not run")
    elif e.sweep_gib and [float(s["gib"]) for s in sweep] != [float(g) for g in e.sweep_gib]:
        sizes = ([s["gib"] for s in sweep], e.sweep_gib)
        tried, planned = (", ".join(f"{float(g):g}" for g in each) for each in sizes)
        problems.append(f"Pod {name}: the sweep tried {tried} GiB, the plan {planned}: cut short or not the plan's")
    found = r.get("largest_alloc_mib")
    largest: int = found if isinstance(found, int) else 0
    for s in sweep if isinstance(found, int) else ():
        mib = float(s["gib"]) * 1024
        if s["ok"] is (mib > largest + SEARCH_STEP_MIB) and (s["ok"] or s.get("error") == OUT_OF_MEMORY):
            what = "succeeded above" if s["ok"] else "was refused within"
            problems.append(f"Pod {name}: the sweep's {s['gib']:g} GiB {what} the largest single allocation"
                            f" ({largest} MiB): the two measure one room and disagree")  # fmt: skip


def _hold_and_extra(e: Expectation, name: str, r: Mapping[str, Any], problems: list[str]) -> dict[str, Any]:
    hold = (r.get("phases") or {}).get("hold") or {}
    if hold.get("ok") is not True:
        problems.append(
            f"Pod {name} could not hold {e.hold_mib} MiB inside its quota"
            f" ({hold.get('error') or r.get('error') or 'no hold phase'})"
        )
    elif hold.get("hold_mib") != e.hold_mib:
        problems.append(f"Pod {name} held {hold.get('hold_mib')} MiB, the plan asked for {e.hold_mib}")
    if hold.get("ok") is True and hold.get("extra_mib") != e.extra_mib:
        problems.append(f"Pod {name} asked {hold.get('extra_mib')} MiB beyond the hold, the plan asked {e.extra_mib}")
    if e.extra_mib and hold.get("extra_ok") is not False:
        problems.append(
            f"Pod {name}: {e.extra_mib} MiB beyond the hold was not refused (extra_ok={hold.get('extra_ok')})"
        )
    return hold


def _memory_hami_core_expected(e: Expectation) -> str:
    text = (
        f"{e.hold_mib} MiB fits, {e.extra_mib} MiB more is refused with HAMi-core's OOM line naming the quota"
        f" {e.limit_bytes} bytes (the probe's lines are the library's lines in the log); the largest single"
        f" allocation reaches the {e.limit_mib:.0f} MiB quota less what the context was charged (0 to"
        f" {MAX_CONTEXT_OVERHEAD_MIB} MiB, as the view shows) and never passes it; the chunks agree (the card has"
        f" {e.card_mib} MiB)"
    )
    return text + ("; in the sweep no size above the quota succeeds" if e.sweep_gib else "")


def _memory_hami_core(rec: Record) -> Judgement:
    e = rec.expect
    results, problems = rec.memories(), []
    seen: list[str] = []
    measured_contexts: set[str] = set()
    for name, r in results.items():
        problems += library_absent(e, name, r)
        problems += not_ok(name, r)
        hold = _hold_and_extra(e, name, r, problems)
        largest, total, free = r.get("largest_alloc_mib"), r.get("visible_total_mib"), r.get("visible_free_mib")
        context = int(total) - int(free) if total is not None and free is not None else None
        measured_contexts.add(str(context))
        ooms, disagree = library_lines(rec, name, r)
        problems += disagree
        seen.append(
            f"{name}: hold {hold.get('hold_mib')} MiB ok={hold.get('ok')}, +{hold.get('extra_mib')} MiB"
            f" ok={hold.get('extra_ok')} ({hold.get('extra_error')}), largest {largest} MiB, context {context} MiB"
            f" (view {total} total, {free} free), chunks {(r.get('phases') or {}).get('chunks')}, OOM limits"
            f" {sorted({o['limit'] for o in ooms})}, limit_enforced={r.get('limit_enforced')}"
        )
        if r.get("limit_enforced") is not True:
            problems.append(
                f"Pod {name}: the probe did not find the limit enforced (limit_enforced={r.get('limit_enforced')})"
            )
        # The library speaks at the boundary: a refusal without its OOM line is the card or the driver, not the quota.
        problems += refusal_problems(e, name, r, ooms, context, own_lines(rec, name)) + chunk_problems(e, name, r)
        # Judged on what the allocator refused: whatever the context was charged (0, part, all), nothing past the
        # quota fits and the refusal comes where the charge says (the charge itself is the context-charge finding).
        if largest is None or context is None:
            problems.append(f"Pod {name}: no largest allocation or context measured{probe_error(r)}")
        elif float(largest) > e.limit_mib:
            problems.append(
                f"Pod {name}: a single {largest} MiB allocation succeeded, the quota is {e.limit_mib:.0f} MiB"
            )
        elif not 0 <= context <= MAX_CONTEXT_OVERHEAD_MIB:
            problems.append(f"Pod {name}: a {context} MiB shortfall in the view is not a CUDA context")
        elif e.limit_mib - float(largest) > context + SEARCH_STEP_MIB:
            problems.append(
                f"Pod {name}: refused at {largest} MiB, {e.limit_mib - float(largest):.0f} MiB below the quota,"
                f" more than its {context} MiB context: something else than the quota refused it"
            )
        elif free is not None and float(largest) > int(free) + SEARCH_STEP_MIB:
            problems.append(f"Pod {name}: a single {largest} MiB allocation fitted where the view showed {free} MiB"
                            " free: the view and the allocator disagree")  # fmt: skip
        _sweep(e, name, r, seen, problems)
    largest_seen = "/".join(sorted({str(r.get("largest_alloc_mib")) for r in results.values()}))
    contexts = "/".join(sorted(measured_contexts))
    return verdict(
        problems,
        f"refused at the quota: HAMi-core's OOM line names {e.limit_bytes} bytes, largest single allocation"
        f" {largest_seen} MiB of the {e.limit_mib:.0f} MiB quota (the rest, {contexts} MiB, is the CUDA context)"
        f" while the card has {e.card_mib} MiB; {e.extra_mib} MiB beyond the hold refused",
        seen,
    )


def _memory_mps_expected(e: Expectation) -> str:
    return (
        f"{e.hold_mib} MiB fits, {e.extra_mib} MiB more is refused; MPS's pinned limit ({e.limit_mib:.0f} MiB)"
        " shows as free memory, the largest allocation reaches that free memory and stays below the limit,"
        " while NVML shows the card had room for the refused allocation"
    )


def _memory_mps(rec: Record) -> Judgement:
    e = rec.expect
    results, problems = rec.memories(), []
    seen = []
    for name, r in results.items():
        problems += not_ok(name, r)
        hold = _hold_and_extra(e, name, r, problems)
        if hold.get("extra_ok") is False and hold.get("extra_error") != OUT_OF_MEMORY:
            problems.append(f"Pod {name}: the extra was refused with {hold.get('extra_error')}, not {OUT_OF_MEMORY}")
        problems += chunk_problems(e, name, r)
        largest, free, card_free = r.get("largest_alloc_mib"), r.get("visible_free_mib"), r.get("nvml_free_mib")
        seen.append(
            f"{name}: hold {hold.get('hold_mib')} MiB ok={hold.get('ok')}, +{hold.get('extra_mib')} MiB"
            f" ok={hold.get('extra_ok')}, free {free} MiB, largest {largest} MiB, card free (NVML) {card_free} MiB"
        )
        if largest is None or free is None or card_free is None:
            problems.append(
                f"Pod {name}: free memory, card free memory or the largest allocation is missing{probe_error(r)}"
            )
            continue
        if float(free) >= e.limit_mib:
            problems.append(
                f"Pod {name}: free memory {free} MiB is not held under the {e.limit_mib:.0f} MiB pinned limit"
            )
        if float(largest) >= e.limit_mib:
            problems.append(
                f"Pod {name}: a single {largest} MiB allocation succeeded, the limit is {e.limit_mib:.0f} MiB"
            )
        elif (
            abs(float(largest) - float(free)) > SEARCH_STEP_MIB
            or e.limit_mib - float(largest) > MAX_CONTEXT_OVERHEAD_MIB
        ):
            problems.append(
                f"Pod {name}: refused at {largest} MiB while {free} MiB was free under a {e.limit_mib:.0f} MiB limit:"
                " the refusal is not at the pinned limit"
            )
        # The card had room: the refusal was the limit's, not a full card's.
        if float(card_free) < float(largest) + e.extra_mib:
            problems.append(
                f"Pod {name}: the card had {card_free} MiB free, not room for {largest} + {e.extra_mib} MiB:"
                " a full card refuses without any limit"
            )
        _sweep(e, name, r, seen, problems)
    return verdict(
        problems,
        f"refused at MPS's pinned limit of {e.limit_mib:.0f} MiB on a card that had room; {e.extra_mib} MiB beyond"
        " the hold refused",
        seen,
    )


def _memory_time_sharing_expected(e: Expectation) -> str:
    return "time-sharing enforces no memory limit: this check fails by design, with the Pods' largest allocation"


# ---------------------------------------------------------------- neighbor-isolation


def _neighbor_expected(e: Expectation) -> str:
    return (
        f"both Pods hold {e.hold_mib} MiB at the same time (overlapping holds, each survived), and each is refused"
        f" {e.extra_mib} MiB more inside its own quota"
    )


def _holds(rec: Record, name: str, r: Mapping[str, Any]) -> list[tuple[float, float]]:
    """The spans during which Pod `name` held its memory and survived: the hold phase, then its keep-holding
    until the container ended (or now, while it runs). The record has ordered each span's ends."""
    hold = (r.get("phases") or {}).get("hold") or {}
    spans = []
    if hold.get("ok") is True:
        spans.append((instant(hold["started_at"], "hold"), instant(hold["ended_at"], "hold")))
    since = r.get("keep_holding_since")
    if since is not None and rec.pod(name).get("phase") == "Running":
        ended = rec.container_ended_at(name)
        spans.append((instant(since, "keep_holding_since"), float("inf") if ended is None else ended))
    return spans


def _neighbor_isolation(rec: Record) -> Judgement:
    e = rec.expect
    results = rec.memories()
    problems: list[str] = []
    seen = []
    spans = {}
    for name, r in results.items():
        hold = _hold_and_extra(e, name, r, problems)
        spans[name] = _holds(rec, name, r)
        seen.append(
            f"{name}: hold {hold.get('started_at')}..{hold.get('ended_at')} ok={hold.get('ok')},"
            f" extra refused={hold.get('extra_ok') is False}, keeps holding since {r.get('keep_holding_since')}"
            f" (phase {rec.pod(name).get('phase')})"
        )
    names = list(results)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            overlap = max((min(x[1], y[1]) - max(x[0], y[0]) for x in spans[a] for y in spans[b]), default=0.0)
            if overlap <= 0:
                problems.append(f"the holds of {a} and {b} did not overlap in time: nothing was held side by side")
    return verdict(problems, f"{' and '.join(names)} held {e.hold_mib} MiB each at the same time", seen)


_TIME_SHARING_MEMORY = Rule(_memory_time_sharing_expected, enforces_nothing("memory"))
MEMORY_ENFORCED = Check(
    "memory-enforced",
    "The memory quota is enforced, not just displayed",
    {
        "hami-core": Rule(_memory_hami_core_expected, _memory_hami_core),
        "mps": Rule(_memory_mps_expected, _memory_mps),
        "time-sharing": _TIME_SHARING_MEMORY,
    },
)
NEIGHBOR_ISOLATION = Check(
    "neighbor-isolation",
    "One Pod cannot take the other's quota",
    {
        "hami-core": Rule(_neighbor_expected, _neighbor_isolation),
        "mps": Rule(_neighbor_expected, _neighbor_isolation),
        "time-sharing": _TIME_SHARING_MEMORY,
    },
)
