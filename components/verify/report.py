"""The verification as a Markdown report for someone who never saw the labs (a stack output)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

SYSTEMS = {
    "kai": "KAI Scheduler with HAMi-core (kai-resource-isolator)",
    "hami": "HAMi (scheduler, device plugin and HAMi-core)",
}
SOFTWARE_NOTE = (
    "This is **software isolation**: HAMi-core (`libvgpu.so`, preloaded into each container) intercepts CUDA"
    " calls in user space and refuses what exceeds the quota. It is **not MIG**: the Pods share the card's"
    " SMs, caches and memory bandwidth, a process that avoids the library is not limited, and a misbehaving"
    " kernel is not contained by hardware. Treat it as a scheduling and accounting guarantee between"
    " cooperating workloads, not as a security boundary between tenants."
)
MIB = 1 << 20


def _cell(value: Any) -> str:
    text = "" if value is None else str(value)
    return text.replace("|", "\\|").replace("\n", " ").strip() or "—"


def _result(passed: Any) -> str:
    return {True: "✅ pass", False: "❌ fail"}.get(passed, "⏳ planned")


def _asked(expect: Mapping[str, Any]) -> list[str]:
    pods = expect.get("pods") or []
    system = SYSTEMS.get(str(expect.get("system")), str(expect.get("system")))
    cores = expect.get("coresPercent")
    limit_mib = int(expect.get("limitBytes") or 0) / MIB
    lines = [
        "## What was asked",
        "",
        f"- Sharing system: {system}.",
        f"- {len(pods)} Pods ({', '.join(f'`{p}`' for p in pods)}) each ask for a slice of"
        f" **{expect.get('sliceMiB')} MiB**"
        + (f" and **{cores}%** of the compute" if cores is not None else "")
        + f" of one GPU with **{expect.get('cardMiB')} MiB**.",
        f"- Inside each Pod the GPU must look like a {expect.get('visibleMiB')} MiB card, and allocations"
        f" beyond the quota ({expect.get('limitBytes')} bytes = {limit_mib:.0f} MiB) must be refused.",
        f"- Each Pod holds {expect.get('holdMiB')} MiB while its neighbour does the same, then asks for"
        f" {expect.get('extraMiB')} MiB more.",
    ]
    if expect.get("overcommitPod"):
        lines.append(
            f"- A third Pod, `{expect['overcommitPod']}`, asks for more than the card has left and must stay"
            f" Pending (`{expect.get('pendingReason')}`)."
        )
    return lines


def _checks_table(checks: list[Mapping[str, Any]], planned: bool) -> list[str]:
    if planned:
        rows = ["| Check | Status | Expected |", "|---|---|---|"]
        rows += [
            f"| {_cell(c.get('title') or c.get('id'))} (`{c.get('id')}`) | ⏳ planned | {_cell(c.get('expected'))} |"
            for c in checks
        ]
        return rows
    rows = ["| Check | Result | Expected | Observed |", "|---|---|---|---|"]
    rows += [
        f"| {_cell(c.get('title') or c.get('id'))} (`{c.get('id')}`) | {_result(c.get('passed'))}"
        f" | {_cell(c.get('expected'))} | {_cell(c.get('observed'))} |"
        for c in checks
    ]
    return rows


def _findings(findings: list[Mapping[str, Any]]) -> list[str]:
    lines = ["## Findings (reported, never counted into the result)", ""]
    if not findings:
        return [*lines, "No probe reported a way around the limits on this cluster."]
    lines.append("What software isolation did not stop here, each with what was tried and what happened:")
    lines.append("")
    for f in findings:
        where = f" in `{f['pod']}`" if f.get("pod") else ""
        lines.append(f"- **{f.get('id')}**{where}: tried {f.get('tried')}; observed {f.get('observed')}.")
    return lines


def _ghosts(ghosts: list[Mapping[str, Any]]) -> list[str]:
    lines = ["## Ghost quota", ""]
    if not ghosts:
        return [*lines, "No Pod holds HAMi quota without running."]
    lines += [
        "These Pods are not running but HAMi charged their card at bind time; the quota returns only when"
        " they are deleted:",
        "",
        "| Pod | State | Node | Memory held | Cores held |",
        "|---|---|---|---|---|",
    ]
    lines += [
        f"| `{g.get('namespace') + '/' if g.get('namespace') else ''}{g.get('pod')}` | {_cell(g.get('reason'))}"
        f" | {_cell(g.get('node'))} | {g.get('memMiB')} MiB | {g.get('cores')}% |"
        for g in ghosts
    ]
    return lines


def render(verification: Mapping[str, Any], expect: Mapping[str, Any]) -> str:
    """Markdown: what was asked, what was seen, pass/fail per check, findings, ghost quota, what this is not."""
    passed = verification.get("passed")
    checks = list(verification.get("checks") or [])
    lines = ["# GPU sharing proof", ""]
    if passed is None:
        lines += [
            "**Planned, not yet run.** The checks below run inside the cluster once `pulumi up` has created"
            " the proof Pods; their results replace this plan in the stack outputs.",
        ]
    else:
        failed = [c.get("id") for c in checks if not c.get("passed")]
        lines.append(
            f"**Result: {'PASSED' if passed else 'FAILED'}** — {len(checks) - len(failed)} of {len(checks)}"
            " checks passed" + (f"; failing: {', '.join(f'`{f}`' for f in failed)}." if failed else ".")
        )
        if verification.get("error"):
            lines += ["", f"The verifier reported an error: {verification['error']}"]
    lines += ["", *_asked(expect), "", "## Checks" if passed is None else "## What was seen", ""]
    lines += _checks_table(checks, planned=passed is None)
    if passed is not None:
        lines += ["", *_findings(list(verification.get("findings") or []))]
        if expect.get("system") == "hami" or verification.get("ghostQuota"):
            lines += ["", *_ghosts(list(verification.get("ghostQuota") or []))]
    lines += ["", "## What this is not", "", SOFTWARE_NOTE, ""]
    return "\n".join(lines)
