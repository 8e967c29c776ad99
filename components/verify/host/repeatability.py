"""The repeated host proofs in a record (`repeat/<stack>-<setup>-<i>/`, from docs/host-proof/repeat.sh) as tables.

Per stack: each run's `passed`, every check's result (fault-isolation's among them), each Pod's context charge and
judged compute share, Pod A's rate around Pod B's fault, and the proof's time; then whether every run gave the same
`passed` and the same per-check results. Standard library only.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from components.incluster.evidence.timeline import around

MARK = {True: "pass", False: "**fail**", None: "–"}
_RUN = re.compile(r"^(?P<stack>[a-z0-9]+)-(?P<setup>[a-z-]+?)-(?P<i>\d+)$")


def _load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


def repeats(record: Path) -> dict[str, list[tuple[str, dict[str, Any], dict[str, Any]]]]:
    """{stack-setup: [(run, verdict, evidence), …]} in run order."""
    found: dict[str, list[tuple[int, str, dict[str, Any], dict[str, Any]]]] = {}
    for verdict in (record / "repeat").glob("*/verdict.json"):
        match = _RUN.match(verdict.parent.name)
        if not match:
            continue
        group = f"{match['stack']}-{match['setup']}"
        evidence = _load(verdict.parent / "evidence.json") if (verdict.parent / "evidence.json").is_file() else {}
        found.setdefault(group, []).append((int(match["i"]), verdict.parent.name, _load(verdict), evidence))
    return {group: [(name, v, e) for _, name, v, e in sorted(runs)] for group, runs in sorted(found.items())}


def outcome(verdict: Mapping[str, Any]) -> tuple[Any, tuple[tuple[str, Any], ...]]:
    """What must not change between runs: `passed` and each check's result."""
    return verdict.get("passed"), tuple((c["id"], c.get("passed")) for c in verdict.get("checks") or [])


def identical(runs: list[tuple[str, dict[str, Any], dict[str, Any]]]) -> bool:
    return len({outcome(v) for _, v, _ in runs}) == 1


def _charges(verdict: Mapping[str, Any]) -> str:
    cells = []
    for f in verdict.get("findings") or []:
        if f.get("id") == "context-charge":
            over = f" (**{f.get('over_quota_mib')} over**)" if f.get("bypassed") is True else ""
            cells.append(f"{f.get('charged_mib')}{over}")
    return " / ".join(cells) or "–"


def _shares(evidence: Mapping[str, Any]) -> str:
    shares = [((out.get("compute") or {}).get("share") or {}).get("short_many") for out in evidence.values()
              if isinstance(out, dict) and out.get("compute")]  # fmt: skip
    return " / ".join(f"{s:.3f}" for s in shares if s is not None) or "–"


def _fault(evidence: Mapping[str, Any]) -> str:
    """Pod A's launches a second before and after Pod B's fault (timeline.around), or when it died."""
    pods = [out for out in evidence.values() if isinstance(out, dict) and isinstance(out.get("fault"), dict)]
    roles = {out["fault"].get("role"): out["fault"] for out in pods}
    n, f = roles.get("neighbour"), roles.get("faulter")
    if not n or not f or not n.get("timeline") or not f.get("fault_at"):
        return "–"
    seen = around(n["timeline"], f["fault_at"])

    def mean(values: list[float]) -> str:
        return f"{sum(values) / len(values):,.0f}" if values else "–"

    after = "**died**" if n.get("survived") is False else mean(seen["after"])
    return f"{mean(seen['before'])} → {after}"


def _seconds(verdict: Mapping[str, Any]) -> str:
    wall, base, pods = verdict.get("wallSeconds"), verdict.get("baselineSeconds"), verdict.get("podSeconds")
    return f"{wall} ({base} + {pods})" if base is not None else f"{wall}"


def table(record: Path, links: str = "h200/repeat") -> str:
    """One table per repeated stack, each followed by whether its verdicts were identical; each run links to its
    verdict under `links` (relative to the page the table goes in)."""
    out = []
    for group, runs in repeats(record).items():
        checks = [c["id"] for c in runs[0][1].get("checks") or []]
        computes = any(_shares(e) != "–" for _, _, e in runs)
        faults = any(_fault(e) != "–" for _, _, e in runs)
        head = ["run", "passed", *(f"`{c}`" for c in checks), "context charged, MiB (A / B)"]
        head += ["short_many share (A / B)"] if computes else []
        head += ["A's launches/s before → after B's fault"] if faults else []
        head += ["proof s (baseline + Pods)"]
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for name, verdict, evidence in runs:
            by_id = {c["id"]: c.get("passed") for c in verdict.get("checks") or []}
            row = [f"[{name}]({links}/{name}/verdict.json)", MARK[verdict.get("passed")],
                   *(MARK[by_id.get(c)] for c in checks), _charges(verdict)]  # fmt: skip
            row += [_shares(evidence)] if computes else []
            row += [_fault(evidence)] if faults else []
            row += [_seconds(verdict)]
            lines.append("| " + " | ".join(row) + " |")
        same = "yes" if identical(runs) else "**no**"
        out.append(f"`{group}`, {len(runs)} runs, Pods started in the same instant:\n\n" + "\n".join(lines)
                   + f"\n\nSame `passed` and same result for every check in every run: {same}.\n")  # fmt: skip
    return "\n".join(out)
