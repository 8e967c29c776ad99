"""Judging the proof: the expectation and the recorded evidence → checks, findings and ghost quota.

Pure functions, standard library only: the same file runs inside the verifier Pod and in the tests. Nothing here
reads a file, the network or the clock. Every check comes from checks.CHECKS; this file only runs them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from . import escape
from .check_rule import library_mapped, preloaded
from .checks import REGISTRY
from .evidence import Evidence, probe_error
from .expectation import Expectation, PodTry
from .parse import probe_results

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


def pod_try_finding(ev: Evidence, pod_try: PodTry) -> dict[str, Any]:
    """What one Pod-level try got: more than the quota in one allocation is a way around it."""
    e, where = ev.expect, {"pod": pod_try.pod, "probe": "pod-try"}
    result = probe_results(ev.pod(pod_try.pod).get("logs") or "").get("memory")
    if result is not None and pod_try.id == escape.TRY_ID:  # no slice asked: what it reached, not past a quota
        return finding(escape.observe(result, pod_try), **where)
    if result is None or result.get("largest_alloc_mib") is None:
        why = ev.missing(pod_try.pod) if result is None else f"its probe measured no allocation{probe_error(result)}"
        return finding({"id": pod_try.id, "tried": pod_try.tried, "observed": "nothing measured", "why": why}, **where)
    largest = int(result["largest_alloc_mib"])
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


def _findings(ev: Evidence) -> list[dict[str, Any]]:
    found, seen = [], set()

    def add(raw: Mapping[str, Any], pod: str, probe: str) -> None:
        key = (pod, raw.get("id"))
        if key not in seen:
            seen.add(key)
            found.append(finding(raw, pod=pod, probe=probe))

    for name in ev.names:
        for probe in ("memory", "compute"):
            for raw in (ev.results.get(name, {}).get(probe) or {}).get("findings") or []:
                add(raw, name, probe)
    return found + [pod_try_finding(ev, t) for t in ev.expect.pod_tries]


def judge(expect: Expectation, evidence: Mapping[str, Any]) -> dict[str, Any]:
    """Evidence → {"passed", "checks", "findings", "ghostQuota"}; a check that could not run fails with why."""
    ev = Evidence(expect, evidence)
    checks = []
    for planned in planned_checks(expect):
        try:
            rule = REGISTRY[planned["id"]].rule(expect.mechanism)
            passed, observed, detail = rule.judge(ev)
        except Exception as exc:  # a malformed input fails its check, never the whole verdict
            passed, observed, detail = False, f"could not judge: {type(exc).__name__}: {exc}", ""
        checks.append({**planned, "passed": passed, "observed": observed, "evidence": detail})
    return {
        "passed": bool(checks) and all(c["passed"] for c in checks),
        "checks": checks,
        "findings": _findings(ev),
        "ghostQuota": ev.ghosts,
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
