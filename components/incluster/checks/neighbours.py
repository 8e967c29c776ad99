"""What a neighbour does to a Pod on the same card: fault-isolation (a check) and bandwidth-neighbour (a finding).

Both proof Pods run the fault and bandwidth steps first (workloads.neighbour_commands): Pod A measures (a launch
loop, then a streaming copy) while Pod B faults its own context inside A's window, then copies flat out beside A.
The fault and the hog land where components/verify/phases.py sized them; where they landed is read from the
instants both probes print (timeline.around, timeline.split), never assumed. Standard library only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..evidence.fault_schema import EXPECTED_ERROR, planned_end
from ..evidence.record import Record
from ..evidence.strict import instant
from ..evidence.timeline import around, split
from ..expectation import Expectation
from .rule import Check, Judgement, Rule, everywhere, not_ok

FAULT_ISOLATION_ID = "fault-isolation"
BANDWIDTH_FINDING_ID = "bandwidth-neighbour"
BANDWIDTH_DROP_TOLERANCE = 0.1
"""A neighbour that lost more than this share of its alone bandwidth beside the hog lost it to the hog: alone, a
streaming copy's whole seconds lie within 1 % of each other bare and 3 % under MPS on the H200
(docs/host-proof/h200/bandwidth)."""
SURVIVED_SHARE = 0.1
"""A neighbour runs on when each whole second after the fault launches at least this share of its slowest second
before it: on the H200 a limited loop's whole seconds stayed within a factor 3 of each other (neighbour-steps)."""
STAMP_S = 0.002
"""Instants are printed to the millisecond."""


def _rate(values: list[float]) -> str:
    return f"{sum(values) / len(values):,.0f}" if values else "–"


def _seconds(values: list[float]) -> str:
    return " ".join(f"{v:,.0f}" for v in values) or "none"


def _fault_expected(e: Expectation) -> str:
    a, b = e.pods[0], e.pods[1]
    text = (
        f"Pod {b}'s own kernel stores to address 0 ({EXPECTED_ERROR}) while Pod {a} launches kernels in a loop,"
        f" with at least one whole second of {a}'s rate before the fault and one after the second it falls in;"
        f" {b}'s faulting process ends, a fresh process then runs a kernel, and {a} runs on at a rate above 0"
    )
    if e.mechanism == "mps":
        text += (" (under MPS the fault of one client tears down every client of its server, measured on the H200:"
                 " this check fails where that happens)")  # fmt: skip
    return text


def _landed(a: str, n: Mapping[str, Any], f: Mapping[str, Any]) -> tuple[dict[str, Any], str | None]:
    """Where B's fault fell in A's timeline, and why it is not judgeable when it did not land inside A's window."""
    line, fault_at = n["timeline"], f["fault_at"]
    seen = around(line, fault_at)
    offset = instant(fault_at, "fault_at") - instant(line["t0"], "t0")
    where = f"the fault at {fault_at} came {offset:.2f} s into Pod {a}'s {line['measured_s']} s launch loop"
    if not seen["inside"] and n.get("survived") is not False:
        return seen, f"not judgeable: {where}: outside it, so nothing is shown"
    if not seen["before"]:
        return seen, f"not judgeable: {where}: no whole second of its rate before it"
    if not all(v > 0 for v in seen["before"]):
        return (
            seen,
            f"not judgeable: Pod {a} launched nothing in a whole second before the fault"
            f" ({_seconds(seen['before'])}): there is no rate to keep",
        )
    if n.get("survived") is False:
        died = instant(n["cuda_error_at"], "cuda_error_at")
        if died < instant(fault_at, "fault_at") - STAMP_S:
            return (
                seen,
                f"not judgeable: Pod {a} died with {n['cuda_error']} at {n['cuda_error_at']}, before the"
                f" fault at {fault_at}: its death is not the fault's",
            )
        if instant(fault_at, "fault_at") + 1 > planned_end(n):
            return seen, f"not judgeable: {where}: within a second of the loop's planned end, no second after it"
    elif not seen["after"]:
        return (
            seen,
            f"not judgeable: {where}: in second {seen['at_second']} of {len(line['per_s'])}, with no whole"
            " second after it to show the rate it ran on at",
        )
    return seen, None


def _fault_isolation(rec: Record) -> Judgement:
    e = rec.expect
    a, b = e.pods[0], e.pods[1]
    n, f = rec.step("fault", a) or {}, rec.step("fault", b) or {}
    problems = not_ok(a, n) + not_ok(b, f)
    for name, r, role in ((a, n, "neighbour"), (b, f, "faulter")):
        if r.get("role") != role:
            problems.append(f"Pod {name}: its fault step ran as the {r.get('role')}; the plan runs it as the {role}")
    if problems:
        return False, "; ".join(problems), ""
    line = n["timeline"] or {}
    per_s = line.get("per_s") or []
    seen = [f"{a}: {n['launches']} launches from {line.get('t0')}, a second: {_seconds(per_s)}; "
            + ("survived its window" if n["survived"] else f"died with {n['cuda_error']} at {n['cuda_error_at']}"),
            f"{b}: stored to address 0 at {f['fault_at']} (pid {f['faulting_pid']}), got {f['cuda_error']} at"
            f" {f['cuda_error_at']}, {'ended' if f['faulting_ended'] else 'did not end'}; fresh tries "
            + ", ".join(f"pid {s['pid']} {'ran a kernel' if s.get('kernel_ran') else 'ran none'}"
                        f" at {s.get('started_at')}" for s in f["serve"] or []),
            f"mechanism {n['mechanism']} / {f['mechanism']}, card {n['gpu_uuid']} / {f['gpu_uuid']}"]  # fmt: skip
    if not n["gpu_uuid"] or n["gpu_uuid"] != f["gpu_uuid"]:
        problems.append(f"Pod {a}'s loop ran on {n['gpu_uuid']}, Pod {b}'s fault on {f['gpu_uuid']}: not shown to"
                        " share a card")  # fmt: skip
    measured = {m.get("gpu_uuid") for x in (a, b) if (m := rec.memory(x)) is not None}
    if n["gpu_uuid"] and measured and n["gpu_uuid"] not in measured:
        problems.append(f"the fault steps ran on {n['gpu_uuid']}, a card neither memory probe measured"
                        f" ({', '.join(sorted(str(u) for u in measured))}): not the proof's shared card")  # fmt: skip
    if not f["faulted"]:
        problems.append(f"not judgeable: Pod {b}'s store to address 0 ended with {f['cuda_error'] or 'no error'},"
                        f" not {EXPECTED_ERROR}: no fault was made, so nothing is shown")  # fmt: skip
    if problems:
        return False, "; ".join(problems), "; ".join(seen)
    landed, why = _landed(a, n, f)
    at_second = landed["at_second"]
    at = per_s[at_second] if at_second is not None and 0 <= at_second < len(per_s) else None
    seen.insert(
        0,
        f"{a}'s launches a second: before the fault {_seconds(landed['before'])} · its second"
        f" {_seconds([at] if at is not None else [])} · after {_seconds(landed['after'])}",
    )
    if why:
        return False, why, "; ".join(seen)
    if not f["faulting_ended"]:
        problems.append(f"Pod {b}'s faulting process (pid {f['faulting_pid']}) did not end: it holds a broken context")
    if not f["served"]:
        problems.append(f"no fresh process in Pod {b} ran a kernel after the fault: the card did not serve once the"
                        " faulting process was gone")  # fmt: skip
    if n["survived"] is False:
        late = instant(n["cuda_error_at"], "cuda_error_at") - instant(f["fault_at"], "fault_at")
        died = (f"Pod {a} died with {n['cuda_error']} at {n['cuda_error_at']}, {late:.2f} s after Pod {b}'s fault at"
                f" {f['fault_at']}")  # fmt: skip
        problems.insert(0, f"the fault of one MPS client reaches every client of its server: {died}"
                        if e.mechanism == "mps" else f"{died}: the fault reached its neighbour")  # fmt: skip
    elif not sum(landed["after"]) > 0:
        problems.append(f"Pod {a} launched nothing after the fault ({_seconds(landed['after'])}): it stopped")
    elif min(landed["after"]) < SURVIVED_SHARE * min(landed["before"]):
        problems.append(f"Pod {a} launched {_seconds(landed['after'])} a second after the fault against"
                        f" {_seconds(landed['before'])} before: below {SURVIVED_SHARE} of its slowest second before,"
                        " it did not run on")  # fmt: skip
    before, after = _rate(landed["before"]), _rate(landed["after"])
    return (not problems, "; ".join(problems) or f"Pod {a} ran on beside Pod {b}'s fault: {before} launches a second"
            f" before it, {after} after; {b}'s faulting process ended with {EXPECTED_ERROR} and a fresh process then"
            " ran a kernel", "; ".join(seen))  # fmt: skip


FAULT_ISOLATION = Check(
    FAULT_ISOLATION_ID,
    "A neighbour that faults does not take you down",
    everywhere(Rule(_fault_expected, _fault_isolation)),
    reads=("pods", "fault"),
)


# ---------------------------------------------------------------- bandwidth-neighbour (a finding)


def bandwidth_planned(rec: Record) -> bool:
    """Whether the proof ran the neighbour steps: the fault-isolation check is planned, or a Pod printed the step."""
    printed = any(rec.step("bandwidth", n) or (rec.unjudged.get(n) or {}).get("bandwidth") for n in rec.names)
    return FAULT_ISOLATION_ID in rec.expect.checks or bool(printed)


def bandwidth_finding(rec: Record) -> dict[str, Any]:
    """Pod A's streaming bandwidth alone and beside Pod B's copy (split by B's copying span): the drop, the
    mechanism. Never counted into `passed`: memory bandwidth is what no software sharing isolates."""
    a, b = rec.expect.pods[0], rec.expect.pods[1]
    h = rec.step("bandwidth", b) or {}
    tried = (f"Pod {b} streaming a device-to-device copy flat out for {h.get('hog_seconds')} s beside Pod {a}'s own"
             " copy loop on the same card")  # fmt: skip
    out: dict[str, Any] = {"id": BANDWIDTH_FINDING_ID, "tried": tried, "pod": a, "probe": "bandwidth"}
    blocked = [rec.problems[p] for p in (f"pod:{a}", f"bandwidth:{a}", f"pod:{b}", f"bandwidth:{b}")
               if p in rec.problems]  # fmt: skip
    if blocked:
        return {**out, "observed": "nothing judged", "bypassed": None, "why": "; ".join(dict.fromkeys(blocked))}
    n = rec.step("bandwidth", a) or {}
    why = [f"Pod {name}: its bandwidth step ran as the {r['role']}, the plan runs it as the {role}"
           for name, r, role in ((a, n, "neighbour"), (b, h, "hog")) if r["role"] != role]  # fmt: skip
    why += [f"Pod {name}: the step reported ok={r['ok']} ({r.get('error') or r.get('cuda_error')})"
            for name, r in ((a, n), (b, h)) if r["ok"] is not True or r.get("cuda_error")]  # fmt: skip
    if not why and n["gpu_uuid"] != h["gpu_uuid"]:
        why.append(f"Pod {a} copied on {n['gpu_uuid']}, Pod {b} on {h['gpu_uuid']}: not shown to share a card")
    if why:
        return {**out, "observed": "nothing judged", "bypassed": None, "why": "; ".join(why)}
    parts = split(n["timeline"], h["copy_started_at"], h["copy_ended_at"])
    alone, beside = parts["alone"], parts["beside"]
    figures = {"alone_gbps": alone, "beside_gbps": beside, "hog_gbps": h["gbps"]["mean"],
               "drop_fraction": parts["drop_fraction"], "mechanism": n["mechanism"]}  # fmt: skip
    span = f"{b} copied {h['copy_started_at']} – {h['copy_ended_at']}"
    if not alone["seconds"] or not beside["seconds"]:
        return {**out, **figures, "observed": f"{span}: {beside['seconds']} whole seconds of {a}'s timeline beside"
                f" it, {alone['seconds']} outside", "bypassed": None,
                "why": "the hog's copying did not cover a whole second of the neighbour's timeline with one alone"
                       " beside it: no drop is shown"}  # fmt: skip
    drop = parts["drop_fraction"]
    observed = (
        f"{a} streamed {alone['mean']:,.0f} GB/s alone ({alone['min']:,.0f} – {alone['max']:,.0f},"
        f" {alone['seconds']} s) and {beside['mean']:,.0f} GB/s beside {b}'s copy ({beside['seconds']} s;"
        f" {span} at {h['gbps']['mean']:,.0f} GB/s): a drop of {drop:.2f} under {n['mechanism']}"
    )
    return {**out, **figures, "observed": observed, "bypassed": drop > BANDWIDTH_DROP_TOLERANCE}
