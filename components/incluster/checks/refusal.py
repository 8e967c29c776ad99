"""What the allocator refused, cross-examined: HAMi-core's OOM lines in the probe's JSON against the library's own
lines in the Pod's log, each line against what HAMi-core prints, and each refusal the probe claims (the extra, the
chunk after the last) against the line that must come with it. Read by memory-enforced.

HAMi-core prints `Device <d> OOM <usage + request> / <limit>` only when usage + request exceeds the limit
(src/allocator/allocator.c:51-52, oom_check), where usage is what its cache file charges: the context, then what
the process holds. Standard library only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..evidence.record import Record
from ..expectation import Expectation
from .rule import MAX_CONTEXT_OVERHEAD_MIB, MIB, SEARCH_STEP_MIB

OUT_OF_MEMORY = "CUDA_ERROR_OUT_OF_MEMORY"
"""What cuMemAlloc returns when HAMi-core (or MPS's pinned limit) refuses; any other error is something else."""
LINE_SLACK_MIB = 2
"""How far an OOM line's request may sit from usage + ask as the probe measured them (the view is read in MiB)."""


def own_lines(rec: Record, name: str) -> list[dict[str, int]]:
    """The OOM lines of the probe's own process: a child's line never shows the probe's own refusal."""
    return rec.oom_lines(name).own


def library_lines(rec: Record, name: str, r: Mapping[str, Any]) -> tuple[list[dict[str, int]], list[str]]:
    """The Pod's OOM lines, once the probe's JSON and the library's lines in the log agree; else the disagreement.

    The probe captures the library's stderr and replays it, so every line in the log is in its JSON, and every
    JSON line of the probe's own process is in the log (its children's lines reach only the JSON). The own process
    is the pid the probe reports for itself (provenance); before provenance, the first JSON line's. A line of a
    process that is neither the probe nor its child is not the Pod's refusal: it is not counted."""
    in_json, in_log, own_pid, foreign, lines, _ = rec.oom_lines(name)
    problems = []
    unknown = [x for x in in_log if x not in in_json]
    if unknown:
        problems.append(f"Pod {name}: its log holds {len(unknown)} HAMi-core OOM line(s) its probe's JSON lacks"
                        f" ({unknown[0]!r}): the JSON is not the library's account")  # fmt: skip
    if own_pid is not None:
        own = f"(pid:{own_pid} "
        unprinted = [x for x in in_json if own in x and x not in in_log]
    else:
        own = in_json[0].split(")]:")[0] if in_json else ""
        unprinted = [x for x in in_json if own and x.startswith(own) and x not in in_log]
    if unprinted:
        problems.append(f"Pod {name}: its probe's JSON lists {len(unprinted)} OOM line(s) of its own process that"
                        f" the library never printed in the log ({unprinted[0]!r})")  # fmt: skip
    if foreign and not lines:
        problems.append(
            f"Pod {name}: its {foreign} HAMi-core OOM line(s) name processes that are neither its probe"
            " nor the probe's children: not this Pod's refusals"
        )
    return lines, problems


def refusal_problems(e: Expectation, name: str, r: Mapping[str, Any], lines: list[dict[str, int]],
                     context: int | None, own: list[dict[str, int]] | None = None) -> list[str]:  # fmt: skip
    """Each line is one HAMi-core prints, names the quota, and the extra the probe says was refused has its line."""
    problems = []
    if not lines:
        return [f"Pod {name}: no HAMi-core OOM line, so no refusal is shown to come from the quota"]
    forged = [o for o in lines if o["requested"] <= o["limit"]]
    if forged:
        o = forged[0]
        problems.append(f"Pod {name}: an OOM line asks {o['requested']} of {o['limit']} bytes; HAMi-core never prints"
                        " one for a request within its limit")  # fmt: skip
    wrong = sorted({o["limit"] for o in lines if o["limit"] != e.limit_bytes})
    if wrong:
        problems.append(f"Pod {name}: HAMi-core's OOM line reports the limit {wrong}, expected {e.limit_bytes}")
    hold = (r.get("phases") or {}).get("hold") or {}
    if hold.get("ok") is True and hold.get("extra_ok") is False:
        ask = (e.hold_mib + e.extra_mib) * MIB
        # With the context measured the line asks exactly context + hold + extra (a sweep's line is no stand-in).
        low, high = (ask, ask + (MAX_CONTEXT_OVERHEAD_MIB + LINE_SLACK_MIB) * MIB) if context is None else (
            ask + (context - LINE_SLACK_MIB) * MIB, ask + (context + LINE_SLACK_MIB) * MIB)  # fmt: skip
        charged = range(low, high + 1)
        mine = lines if own is None else own  # the probe's own process asked the extra, never its children
        if hold.get("extra_error") != OUT_OF_MEMORY or not any(o["requested"] in charged for o in mine):
            problems.append(
                f"Pod {name}: the {e.extra_mib} MiB extra was refused with {hold.get('extra_error')} and no HAMi-core"
                f" line asks its {e.hold_mib} + {e.extra_mib} MiB: the refusal is not shown to be the quota's"
            )
    largest, total = r.get("largest_alloc_mib"), r.get("visible_total_mib")
    if context is not None and largest is not None and total is not None and largest < total:
        # Below the view's total the search asked largest + 1 MiB and was refused: the library's line says so.
        ask = (context + largest + 1) * MIB
        if not any(abs(o["requested"] - ask) <= LINE_SLACK_MIB * MIB for o in lines):
            problems.append(
                f"Pod {name}: {largest + 1} MiB was refused with no HAMi-core line asking its"
                f" {context} + {largest + 1} MiB: the boundary is not shown to be the quota's"
            )
    chunks = (r.get("phases") or {}).get("chunks") or {}
    got, size = chunks.get("allocated_mib"), chunks.get("chunk_mib")
    if context is not None and got is not None and size is not None and chunks.get("error") == OUT_OF_MEMORY:
        ask = (context + got + size) * MIB
        if not any(abs(o["requested"] - ask) <= LINE_SLACK_MIB * MIB for o in lines):
            problems.append(f"Pod {name}: the chunk after {got} MiB was refused with no HAMi-core line asking its"
                            f" {context} + {got} + {size} MiB")  # fmt: skip
    return problems


def chunk_problems(e: Expectation, name: str, r: Mapping[str, Any]) -> list[str]:
    """The chunk phase against the quota and the largest single allocation: both measure the same room."""
    chunks = (r.get("phases") or {}).get("chunks")
    largest = r.get("largest_alloc_mib")
    if chunks is None:
        return [f"Pod {name}: no chunk phase recorded"]
    got, size = chunks["allocated_mib"], chunks["chunk_mib"]  # integers, chunk_mib ≥ 1: the record checked them
    problems = []
    if got > e.limit_mib:
        problems.append(f"Pod {name}: the chunks got {got} MiB past the {e.limit_mib:.0f} MiB quota")
    if largest is not None and not largest - size < got <= largest + SEARCH_STEP_MIB:
        problems.append(f"Pod {name}: the chunks got {got} MiB in {size} MiB steps, the largest single allocation"
                        f" was {largest} MiB: they measure the same room and disagree")  # fmt: skip
    if chunks.get("error") != OUT_OF_MEMORY:
        problems.append(f"Pod {name}: the chunks stopped on {chunks.get('error')}, not {OUT_OF_MEMORY}")
    return problems
