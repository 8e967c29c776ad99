"""The verification as a Markdown report for someone who never saw the labs (a stack output)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from components.incluster import message
from components.incluster.expectation import Expectation

SYSTEMS = {
    "kai": "KAI Scheduler with HAMi-core (kai-resource-isolator)",
    "hami": "HAMi (scheduler, device plugin and HAMi-core)",
    "gke": "GKE's own GPU sharing (the node pool's gpu_sharing_config, GKE's device plugin)",
}
MECHANISMS = {
    "hami-core": "HAMi-core, a library preloaded into each container, rewrites the GPU's view and refuses what"
    " exceeds the quota",
    "mps": "NVIDIA MPS: one server process per card; each client's memory is capped by its pinned limit and its"
    " compute by its active-thread percentage; the view is not rewritten",
    "time-sharing": "time-sharing: the Pods take turns on the whole card; nothing limits a Pod's memory or compute",
}
COMPARISON_DOC = "docs/sharing-comparison.md"
"""The same probes and judge on HAMi-core and MPS on one card, side by side (in the repository)."""
NOT_MIG: dict[str, str] = {
    "hami-core": (
        "Software isolation, not MIG: HAMi-core (libvgpu.so, preloaded into each container) intercepts CUDA calls"
        " in user space and refuses what exceeds the quota; the Pods share the card's SMs, caches and memory"
        " bandwidth, a process that avoids the library is not limited (see verification.findings), and a"
        " misbehaving kernel is not contained by hardware. A scheduling and accounting guarantee between"
        " cooperating workloads, not a security boundary between tenants."
    ),
    "mps": (
        "NVIDIA MPS, not MIG: one MPS server per card runs every client's kernels at once, each client held to the"
        " pinned-memory limit and thread percentage in its environment; the card's view is not rewritten, the"
        " clients share memory bandwidth and caches, and a fatal fault in one client ends the others' work. A"
        " quota between cooperating workloads, not a security boundary."
    ),
    "time-sharing": (
        "Time-sharing, not MIG and not isolation: several Pods are let onto one card and the driver switches"
        " between their contexts; nothing limits a Pod's memory or compute, so memory-enforced,"
        " neighbor-isolation and compute-limited fail by design: one Pod can take the whole card from the others."
    ),
}
"""What each mechanism is not, said once: the report's last section and the `isolationNote` output."""
MIB = 1 << 20


def _cell(value: Any) -> str:
    text = "" if value is None else str(value)
    return text.replace("|", "\\|").replace("\n", " ").strip() or "—"


def _result(passed: Any) -> str:
    return {True: "✅ pass", False: "❌ fail"}.get(passed, "⏳ planned")


def _asked(expect: Expectation) -> list[str]:
    pods = expect.pods
    system = SYSTEMS.get(expect.system, expect.system)
    cores = expect.cores_percent
    lines = [
        "## What was asked",
        "",
        f"- Sharing system: {system}.",
        f"- Mechanism: `{expect.mechanism}` — {MECHANISMS.get(expect.mechanism, expect.mechanism)}. How the"
        f" mechanisms compare, measured with the same probes on one card: [{COMPARISON_DOC}]({COMPARISON_DOC}).",
        f"- {len(pods)} Pods ({', '.join(f'`{p}`' for p in pods)}) each ask for a slice of"
        f" **{expect.slice_mib} MiB**"
        + (f" and **{cores}%** of the compute" if cores is not None else "")
        + f" of one GPU with **{expect.card_mib} MiB**.",
        f"- Inside each Pod the GPU must look like a {expect.visible_mib} MiB card, and allocations"
        f" beyond the quota ({expect.limit_bytes} bytes = {expect.limit_mib:.0f} MiB) must be refused.",
        f"- Each Pod holds {expect.hold_mib} MiB while its neighbour does the same, then asks for"
        f" {expect.extra_mib} MiB more.",
    ]
    if expect.overcommit_pod and expect.overcommit_slots is not None:
        lines.append(
            f"- A third Pod, `{expect.overcommit_pod}`, asks for {expect.overcommit_slots} `nvidia.com/gpu` slots,"
            f" one more than the proof Pods leave on their node, and must stay Pending (`{expect.pending_reason}`)."
        )
    elif expect.overcommit_pod:
        lines.append(
            f"- A third Pod, `{expect.overcommit_pod}`, asks for {expect.overcommit_mib} MiB, more than the card has"
            f" left beside the slices, and must stay Pending (`{expect.pending_reason}`)."
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


def _findings(verification: Mapping[str, Any]) -> list[str]:
    findings = list(verification.get("findings") or [])
    cut = list(verification.get("cut") or [])
    hidden, total = verification.get("findingsNotShown") or 0, verification.get("findingsTotal") or len(findings)
    lines = ["## Findings (reported, never counted into the result)", ""]
    if hidden:
        lines += [
            f"{hidden} of {total} findings could not be shown here: the termination message holds"
            f" {message.LIMIT_BYTES} bytes. All of them are in {verification.get('wholeVerdict')}"
            f" ({verification.get('digest')}).",
            "",
        ]
    if not findings:
        return lines if hidden else [*lines, "No probe reported a way around the limits on this cluster."]
    lines.append("What was tried to get around the limits here, and what happened:")
    lines.append("")
    for f in findings:
        where = f" in `{f['pod']}`" if f.get("pod") else ""
        outcome = {True: "bypassed", False: "held"}.get(f.get("bypassed"), f"not tried: {f.get('why')}")
        lines.append(f"- **{f.get('id')}**{where} ({outcome}): tried {f.get('tried')}; observed {f.get('observed')}.")
    if cut:
        lines += ["", f"Shortened to fit the termination message: {'; '.join(cut)}."]
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
        f"| `{g['namespace'] + '/' if g.get('namespace') else ''}{g.get('pod')}` | {_cell(g.get('reason'))}"
        f" | {_cell(g.get('node'))} | {g.get('memMiB')} MiB | {g.get('cores')}% |"
        for g in ghosts
    ]
    return lines


def gpu_audit_section(found: Mapping[str, Any]) -> list[str]:
    """Every Pod of the cluster that can reach a GPU, counted by class (docs/audit.md); never part of the result."""
    lines = ["## Who else is on the GPUs (counted, never part of the result)", ""]
    if found.get("error"):
        return [*lines, f"The audit did not run: {found['error']}."]
    counts = found.get("counts") or {}
    lines.append(
        f"{counts.get('limited', 0)} limited, {counts.get('unlimited', 0)} unlimited and {counts.get('system', 0)}"
        f" system Pods can reach a GPU (system namespaces: {', '.join(found.get('systemNamespaces') or []) or 'none'})."
    )
    unlimited = list(found.get("unlimited") or [])
    if unlimited:
        lines += ["", "| Unlimited Pod | Why |", "|---|---|"]
        lines += [f"| `{u.get('pod')}` | {_cell(u.get('reason'))} |" for u in unlimited]
        if found.get("unlistedUnlimited"):
            lines.append(f"| … | {found['unlistedUnlimited']} more in the verifier's log |")
    return lines


def escaped_line(verification: Mapping[str, Any], expect: Expectation) -> str:
    """The doors the quota did not hold, said in the first line whether or not the check counts toward the result:
    a passed verdict never reads as "the quota holds" while memory escaped by one of them."""
    doors = list(dict.fromkeys(str(f.get("observed")) for f in verification.get("findings") or []
                               if str(f.get("id") or "").startswith("escaped-via:") and f.get("bypassed")))  # fmt: skip
    if not doors:
        return ""
    advisory = [c for c in expect.advisory if c == "allocation-paths"]
    note = " (`allocation-paths` does not count toward the result: verify.allocationPaths.counts)" if advisory else ""
    return f" **The memory quota does not hold at every door**{note}: " + "; ".join(doors) + "."


def render(verification: Mapping[str, Any], expect: Expectation) -> str:
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
            " checks passed"
            + (f"; failing: {', '.join(f'`{f}`' for f in failed)}." if failed else ".")
            + escaped_line(verification, expect)
        )
        if verification.get("error"):
            lines += ["", f"The verifier reported an error: {verification['error']}"]
        if verification.get("cut"):
            lines += [
                "",
                f"Parts were shortened to fit; the whole verdict is in {verification.get('wholeVerdict')}"
                f" ({verification.get('digest')}).",
            ]
    lines += ["", *_asked(expect), "", "## Checks" if passed is None else "## What was seen", ""]
    lines += _checks_table(checks, planned=passed is None)
    if passed is not None:
        lines += ["", *_findings(verification)]
        if expect.system == "hami" or verification.get("ghostQuota"):
            lines += ["", *_ghosts(list(verification.get("ghostQuota") or []))]
        if verification.get("gpuAudit"):
            lines += ["", *gpu_audit_section(verification["gpuAudit"])]
    lines += ["", "## What this is not", "", NOT_MIG[expect.mechanism], ""]
    return "\n".join(lines)
