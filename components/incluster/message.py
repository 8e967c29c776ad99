"""The verdict through the verifier's termination message (4096 bytes), with nothing lost on the way.

The message holds what the expectation cannot rebuild (each check's result, observation and evidence; every
finding; ghost quota). As plain JSON when it fits; else zlib-compressed and base64-encoded behind `z:`; only when
even that does not fit are the longest texts cut. The overflow goes to the verifier's log: its verdict line
(`log_line`) is the whole verdict, and a message that had to cut names that line by its sha256 (`digest`), says
what was cut, and counts the findings it could not show (`findingsNotShown`). `passed` and every check's result
always travel. No write access is needed for the overflow: the ServiceAccount stays read-only. Standard library only.
"""

from __future__ import annotations

import base64
import hashlib
import json
import zlib
from collections.abc import Mapping
from typing import Any

from .evidence.strict import loads
from .expectation import Expectation
from .judge import planned_checks

LIMIT_BYTES = 4096
"""Kubernetes keeps at most 4096 bytes of a container's termination message."""
COMPRESSED = "z:"
WHOLE_VERDICT = 'the verifier Pod\'s log, on the JSON line with "kind": "verification"'
CHECK_KEYS = ("id", "passed", "observed", "evidence")


def log_line(payload: Mapping[str, Any], kind: str = "verification") -> str:
    """One JSON line of the verifier's log: the evidence, or the whole verdict (the line `digest` names)."""
    return json.dumps(_clean({"kind": kind, **payload}), sort_keys=True)


def digest(result: Mapping[str, Any]) -> str:
    """`sha256:<hex>` of the verdict's log line: which line of the verifier's log is the whole of a cut message."""
    return "sha256:" + hashlib.sha256(log_line(result).encode()).hexdigest()


def _clean(value: Any) -> Any:
    """The verdict as UTF-8 can carry it: a lone surrogate (a non-UTF-8 byte that reached a text through
    surrogateescape) becomes U+FFFD, so no finding's text can leave the verdict unwritten."""
    if isinstance(value, str):
        return value if _utf8(value) else "".join("\ufffd" if "\ud800" <= c <= "\udfff" else c for c in value)
    if isinstance(value, Mapping):
        return {_clean(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _slim(result: Mapping[str, Any]) -> dict[str, Any]:
    """The verdict less what the expectation rebuilds (titles, expected sentences)."""
    out: dict[str, Any] = {
        "passed": bool(result.get("passed")),
        "checks": [{k: c.get(k) for k in CHECK_KEYS} for c in result.get("checks") or []],
        "findings": [dict(f) for f in result.get("findings") or []],
        "ghostQuota": [dict(g) for g in result.get("ghostQuota") or []],
    }
    if result.get("error"):
        out["error"] = result["error"]
    if result.get("gpuAudit") is not None:
        out["gpuAudit"] = result["gpuAudit"]
    return out


def _cut_text(value: Any, size: int) -> Any:
    if not isinstance(value, str) or len(value) <= size:
        return value
    return value[: max(size - 1, 0)] + "…"


def _pack(verdict: Mapping[str, Any], limit: int) -> str:
    plain = json.dumps(verdict, separators=(",", ":"), ensure_ascii=False)
    if len(plain.encode()) <= limit:
        return plain
    return COMPRESSED + base64.b64encode(zlib.compress(plain.encode(), 9)).decode("ascii")


def _fits(text: str, limit: int) -> bool:
    return len(text.encode()) <= limit


# What is cut first is what the verifier's log keeps in full and a reader needs least: evidence, then observations,
# then ghost-quota device lists, then findings' free text; last, findings beyond what fits, counted (never silently).
_CUTS: tuple[tuple[str, str, tuple[str, ...], int], ...] = (
    ("checks", "evidence", ("evidence",), 400),
    ("checks", "evidence", ("evidence",), 120),
    ("checks", "evidence", ("evidence",), 0),
    ("ghostQuota", "devices", ("devices",), -1),
    ("checks", "observed", ("observed",), 400),
    ("findings", "tried, observed and why", ("tried", "observed", "why"), 200),
    ("checks", "observed", ("observed",), 120),
    ("findings", "tried, observed and why", ("tried", "observed", "why"), 60),
    ("findings", "extra fields", (), -2),
)


def encode(result: Mapping[str, Any], limit: int = LIMIT_BYTES) -> str:
    """The verdict as a termination message of at most `limit` bytes: `passed` and every check's result always; every
    finding while they fit, then as many as fit and the count of the rest."""
    result = _clean(result)
    verdict = _slim(result)
    text = _pack(verdict, limit)
    if _fits(text, limit):
        return text
    cut: list[str] = []
    for section, label, keys, size in _CUTS:
        for item in verdict[section]:
            if size == -1:
                item.pop("devices", None)
            elif size == -2:
                for key in [k for k in item if k not in ("pod", "probe", "id", "bypassed", "tried", "observed", "why")]:
                    item.pop(key)
            else:
                for key in keys:
                    item[key] = _cut_text(item.get(key), size) if size else None
        note = f"{section}' {label}" + (f" to {size} characters" if size > 0 else " dropped")
        cut.append(note)
        verdict["cut"], verdict["wholeVerdict"], verdict["digest"] = cut, WHOLE_VERDICT, digest(result)
        text = _pack(verdict, limit)
        if _fits(text, limit):
            return text
    return _bare(verdict, cut, digest(result), limit)


BARE_ERROR_CHARS = 600
"""How much of the verifier's error the barest message keeps, from its start."""


def _bare(verdict: Mapping[str, Any], cut: list[str], named: str, limit: int) -> str:
    """`passed`, every check's result, and as many findings (pod, id, bypassed) as fit; the rest counted."""
    findings = [{k: f.get(k) for k in ("pod", "id", "bypassed")} for f in verdict["findings"]]

    def packed(shown: int) -> str:
        left = len(findings) - shown
        return _pack({
            "passed": verdict["passed"],
            "checks": [{"id": c["id"], "passed": c["passed"]} for c in verdict["checks"]],
            "findings": findings[:shown],
            **({"findingsNotShown": left, "findingsTotal": len(findings)} if left else {}),
            **({"gpuAudit": {"counts": verdict["gpuAudit"].get("counts")}} if verdict.get("gpuAudit") else {}),
            # A crashed verifier's error is why nothing else was observed: cut, never dropped.
            **({"error": _cut_text(verdict["error"], BARE_ERROR_CHARS)} if verdict.get("error") else {}),
            "cut": [*cut, "everything but each check's result and each finding's id"
                    + (f"; {left} of {len(findings)} findings not shown" if left else "")],
            "wholeVerdict": WHOLE_VERDICT,
            "digest": named,
        }, limit)  # fmt: skip

    low, high = 0, len(findings)  # the most findings that fit: packed(low) fits, packed(high + 1) does not
    if _fits(packed(high), limit):
        return packed(high)
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (mid, high) if _fits(packed(mid), limit) else (low, mid)
    return packed(low)


def decode(message: str) -> dict[str, Any]:
    """A termination message → the verdict it carries (ValueError when it is neither JSON nor `z:` + zlib)."""
    text = message.strip()
    if text.startswith(COMPRESSED):
        try:
            text = zlib.decompress(base64.b64decode(text[len(COMPRESSED) :])).decode()
        except (ValueError, zlib.error) as exc:
            raise ValueError(f"the compressed verdict does not decode: {exc}") from exc
    value = loads(text, "the termination message")  # a key given twice (json.loads keeps the last) is refused
    if not isinstance(value, dict):
        raise ValueError("the verdict is not a JSON object")
    return value


def expand(compact: Mapping[str, Any], expect: Expectation) -> dict[str, Any]:
    """A decoded termination message + the expectation → the stack output `verification`."""
    reported = [c for c in compact.get("checks") or [] if isinstance(c, Mapping)]
    ids = [c.get("id") for c in reported]
    twice = {i for i in ids if ids.count(i) > 1}
    got = {c.get("id"): c for c in reported}
    planned_ids = [c["id"] for c in planned_checks(expect)]
    unplanned = [i for i in ids if i not in planned_ids]
    checks = []
    for planned in planned_checks(expect):
        c = got.get(planned["id"])
        if planned["id"] in twice:  # which of its results holds is not known: neither is taken
            reason = f"the verifier reported check {planned['id']} {ids.count(planned['id'])} times"
            checks.append({**planned, "passed": False, "observed": reason, "evidence": ""})
        elif c is None:
            reason = compact.get("error") or "the verifier reported no result for this check"
            checks.append({**planned, "passed": False, "observed": reason, "evidence": ""})
        else:
            checks.append(
                {**planned, "passed": c.get("passed") is True, "observed": c.get("observed"),
                 "evidence": c.get("evidence")}
            )  # fmt: skip
    verification: dict[str, Any] = {
        "passed": compact.get("passed") is True and bool(checks) and all(c["passed"] for c in checks) and not unplanned,
        "checks": checks,
        "findings": list(compact.get("findings") or []),
        "ghostQuota": list(compact.get("ghostQuota") or []),
    }
    for key in ("error", "cut", "wholeVerdict", "gpuAudit", "digest", "findingsNotShown", "findingsTotal"):
        if compact.get(key):
            verification[key] = compact[key]
    if unplanned:
        verification["error"] = f"the verifier reported checks no plan names: {', '.join(map(str, unplanned))}"
    return verification
