"""Judging the proof: the expectation and the recorded evidence → checks, findings and ghost quota.

Pure functions, standard library only: the same file runs inside the verifier Pod and in the tests. Nothing here
reads a file, the network or the clock. The evidence is read once into the record (evidence/record.py); every check
comes from checks/registry.CHECKS and reads only the record: a part it reads that is not judgeable fails it with the
reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .checks import allocation_paths, cross_card, escape
from .checks.compute import under_delivered
from .checks.neighbours import bandwidth_finding, bandwidth_planned
from .checks.registry import REGISTRY
from .checks.rule import library_mapped, preloaded, probe_error
from .evidence.record import Record
from .expectation import Expectation, PodTry
from .probes.memory_findings import library_loaded
from .probes.memory_findings import uncharged as uncharged_finding

FINDING_KEYS = ("id", "tried", "observed", "bypassed", "why")
"""Every finding carries these (`why` only when `bypassed` is null); `pod` and `probe` say where it came from."""


def planned_checks(expect: Expectation) -> list[dict[str, Any]]:
    """Every check the expectation names, with its expected sentence and nothing observed yet."""
    planned = []
    for check_id in expect.checks:
        check = REGISTRY.get(check_id)
        try:
            if check is None:
                raise LookupError(f"unknown check id {check_id!r}")
            title, expected = check.title, check.rule(expect.mechanism).expected(expect)
        except LookupError as exc:
            title, expected = check_id, f"not judgeable: {exc}"
        planned.append(
            {"id": check_id, "title": title, "expected": expected, "observed": None, "passed": None, "evidence": None}
        )
    return planned


def finding(raw: Mapping[str, Any], **where: Any) -> dict[str, Any]:
    """A probe's or a Pod-level try's finding in the one shape every finding has."""
    out = {**where, **{k: raw.get(k) for k in ("id", "tried", "observed")}}
    bypassed = raw.get("bypassed")
    out["bypassed"] = bypassed if isinstance(bypassed, bool) else None
    if out["bypassed"] is None:
        out["why"] = str(raw.get("why") or raw.get("error") or "nothing could be tried; the probe gave no reason")
    extra = {k: v for k, v in raw.items() if k not in (*FINDING_KEYS, *out) and v is not None}
    return {**out, **extra}


def _unjudged_findings(rec: Record, name: str, probe: str, why: str, **where: Any) -> list[dict[str, Any]]:
    """The findings a result that failed the record listed: each named, none believed (bypassed null, the reason)."""
    raw = ((rec.unjudged.get(name) or {}).get(probe) or {}).get("findings")
    ids = (
        [f.get("id") for f in raw if isinstance(f, dict) and isinstance(f.get("id"), str)]
        if isinstance(raw, list)
        else []
    )
    return [finding({"id": fid, "tried": "(as the probe reported it)", "observed": "not judged", "why": why}, **where)
            for fid in dict.fromkeys(ids)]  # fmt: skip


def pod_try_finding(rec: Record, pod_try: PodTry) -> dict[str, Any]:
    """What one Pod-level try got: more than the quota in one allocation is a way around it."""
    e, where = rec.expect, {"pod": pod_try.pod, "probe": "pod-try"}
    blocked = [rec.problems[p] for p in (f"pod:{pod_try.pod}", f"memory:{pod_try.pod}") if p in rec.problems]
    result = rec.memory(pod_try.pod)
    if blocked or result is None:
        why = "; ".join(dict.fromkeys(blocked)) or "its probe printed no memory result"
        return finding({"id": pod_try.id, "tried": pod_try.tried, "observed": "nothing measured", "why": why}, **where)
    if pod_try.id == escape.TRY_ID:  # no slice asked: what it reached, not past a quota
        return finding(escape.observe(result, pod_try), **where)
    if pod_try.id == cross_card.TRY_ID:  # the card it reached against the card its quota names
        return finding(cross_card.observe(result, rec.devices(pod_try.pod), pod_try), **where)
    if result.get("largest_alloc_mib") is None:
        why = f"its probe measured no allocation{probe_error(result)}"
        return finding({"id": pod_try.id, "tried": pod_try.tried, "observed": "nothing measured", "why": why}, **where)
    largest = result["largest_alloc_mib"]
    library, loaded = preloaded(e), library_mapped(e, result)
    observed = (
        f"largest single allocation {largest} MiB against the {e.limit_mib:.0f} MiB quota;"
        f" {library} {'mapped' if loaded else 'not mapped'} into the process"
    )
    if largest <= e.limit_mib and not loaded:
        # Nothing held the quota, yet nothing past it fitted: the card (other tenants) refused, not the library.
        why = (f"{library} was not loaded, so no quota applied, yet the card gave no more than {largest} MiB: whether"
               " the try gets past the quota is not shown either way")  # fmt: skip
        return finding({"id": pod_try.id, "tried": pod_try.tried, "observed": observed, "why": why}, **where)
    return finding({"id": pod_try.id, "tried": pod_try.tried, "observed": observed, "bypassed": largest > e.limit_mib},
                   **where)  # fmt: skip


def _findings(rec: Record) -> list[dict[str, Any]]:
    found, seen = [], set()

    def add(raw: Mapping[str, Any], pod: str, probe: str) -> None:
        key = (pod, raw.get("id"))
        if key not in seen:
            seen.add(key)
            found.append(finding(raw, pod=pod, probe=probe))

    for name in rec.names:
        for probe in ("memory", "compute"):
            result = (rec.results.get(name) or {}).get(probe)
            if result is not None:
                for raw in result["findings"]:
                    # With no library mapped nothing charges a quota: a neighbour's memory is no context charge.
                    uncharged = raw["id"] == "context-charge" and probe == "memory" and not library_loaded(result)
                    add(uncharged_finding() if uncharged else raw, name, probe)
            elif f"{probe}:{name}" in rec.problems:
                for raw in _unjudged_findings(rec, name, probe, rec.problems[f"{probe}:{name}"]):
                    add(raw, name, probe)
    for name, raw in allocation_paths.findings(rec):
        add(raw, name, "allocation")
    across = [bandwidth_finding(rec)] if bandwidth_planned(rec) else []
    return (
        found
        + [finding(f, pod=f["pod"], probe=f["probe"]) for f in [*across, *under_delivered(rec)]]
        + [pod_try_finding(rec, t) for t in rec.expect.pod_tries]
    )


def judge(expect: Expectation, evidence: Mapping[str, Any]) -> dict[str, Any]:
    """Evidence → {"passed", "checks", "findings", "ghostQuota"}; a check that could not run fails with why."""
    rec = Record(expect, evidence)
    checks = []
    for planned in planned_checks(expect):
        try:
            check = REGISTRY[planned["id"]]
            rule = check.rule(expect.mechanism)
            blocked = rec.blocked(check.reads)
            passed, observed, detail = (False, "; ".join(blocked), "") if blocked else rule.judge(rec)
        except Exception as exc:  # a check's own fault fails that check, never the whole verdict
            passed, observed, detail = False, f"could not judge: {type(exc).__name__}: {exc}", ""
        checks.append({**planned, "passed": passed, "observed": observed, "evidence": detail})
    counted = [c for c in checks if c["id"] not in expect.advisory]
    return {
        "passed": bool(counted) and all(c["passed"] for c in counted),
        "checks": checks,
        "findings": _findings(rec),
        "ghostQuota": rec.ghosts,
    }


def failed_verdict(expect: Expectation | None, reason: str) -> dict[str, Any]:
    """The verdict when nothing could be judged (the verifier crashed): every planned check fails with `reason`."""
    planned = planned_checks(expect) if expect is not None else []
    checks = [{**c, "passed": False, "observed": reason, "evidence": ""} for c in planned]
    if not checks:
        checks = [
            {"id": "verifier", "title": "The verifier ran", "expected": "a verdict", "passed": False,
             "observed": reason, "evidence": ""}
        ]  # fmt: skip
    return {"passed": False, "checks": checks, "findings": [], "ghostQuota": [], "error": reason}
