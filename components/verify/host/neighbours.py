"""The neighbour steps of recorded host proofs, judged by this repository's judge: fault-isolation and the
bandwidth-neighbour finding per run, as the rows and sentences docs/host-proof/README.md and
docs/sharing-comparison.md quote. Standard library only.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from components.incluster import judge
from components.incluster.checks.neighbours import BANDWIDTH_FINDING_ID, FAULT_ISOLATION_ID
from components.incluster.evidence import ties
from components.incluster.evidence.timeline import around
from components.incluster.expectation import Expectation

POD_ORDER = ties.POD_ORDER
"""A proof Pod's probes in the order it ran them: its log as the verifier reads it (one list, the record's)."""
FOLDER = "neighbour-steps"


def pod_logs(outputs: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """A record's probe output (Pod → probe → result) as Pod objects with logs: the library's OOM lines, then each
    probe's JSON line in the Pod's order; the Pod object it was judged on where the run kept one."""
    pods = {}
    for pod, out in outputs.items():
        lines = list((out.get("memory") or {}).get("hami_oom_lines") or [])
        lines += [json.dumps(out[probe]) for probe in POD_ORDER if isinstance(out.get(probe), dict)]
        pods[pod] = {**(out.get("podObject") or {"name": pod, "phase": "Succeeded", "nodeName": "host"}),
                     "logs": "\n".join(lines) + "\n"}  # fmt: skip
    return pods


def with_fault_isolation(expect: Expectation) -> Expectation:
    """A run's expectation with fault-isolation, which a plan from before the neighbour steps lacks."""
    if FAULT_ISOLATION_ID in expect.checks:
        return expect
    return dataclasses.replace(expect, checks=(*expect.checks, FAULT_ISOLATION_ID))


def fitted(expect: Expectation, outputs: Mapping[str, Mapping[str, Any]]) -> Expectation:
    """A recorded run's expectation as its Pods ran: with fault-isolation where they ran the neighbour steps (a plan
    from before them lacks it), without it where they did not (a record from before them); without allocation-paths
    where no Pod ran the allocation step."""
    if not any(isinstance(out, Mapping) and "allocation" in out for out in outputs.values()):
        # A record from before the allocation step: nothing of it to judge (docs/verification.md allocation-paths).
        expect = dataclasses.replace(expect, checks=tuple(c for c in expect.checks if c != "allocation-paths"),
                                     allocation_paths=False, advisory=())  # fmt: skip
    if any(isinstance(out, Mapping) and "fault" in out for out in outputs.values()):
        return with_fault_isolation(expect)
    return dataclasses.replace(expect, checks=tuple(c for c in expect.checks if c != FAULT_ISOLATION_ID))


def summary(expect: Expectation, outputs: Mapping[str, Mapping[str, Any]]) -> dict[str, Any] | None:
    """What one run's neighbour steps showed, judged again; None for a run without them."""
    a, b = expect.pods[0], expect.pods[1]
    n, f = (outputs.get(a) or {}).get("fault"), (outputs.get(b) or {}).get("fault")
    if not isinstance(n, dict) or not isinstance(f, dict):
        return None
    verdict = judge.judge(with_fault_isolation(expect), {"pods": pod_logs(outputs)})
    check = next(c for c in verdict["checks"] if c["id"] == FAULT_ISOLATION_ID)
    finding: dict[str, Any] = next((x for x in verdict["findings"] if x["id"] == BANDWIDTH_FINDING_ID), {})
    seen = around(n.get("timeline") or {}, f.get("fault_at")) if n.get("timeline") else {}
    per_s = (n.get("timeline") or {}).get("per_s") or []
    second = seen.get("at_second")
    return {"mechanism": n.get("mechanism"), "check": check, "bandwidth": finding, "survived": n.get("survived"),
            "before": seen.get("before") or [], "after": seen.get("after") or [],
            "at": per_s[second] if second is not None and 0 <= second < len(per_s) else None,
            "died_at": n.get("cuda_error_at"), "fault_at": f.get("fault_at")}  # fmt: skip


def runs(record: Path, expectation: Callable[[Path], Expectation]) -> dict[str, dict[str, Any]]:
    """Each run under `record/neighbour-steps/` that has the steps: its folder name → its summary."""
    found = {}
    for folder in sorted((record / FOLDER).glob("*/evidence.json")):
        outputs = {p: o for p, o in json.loads(folder.read_text()).items() if p != "alone" and isinstance(o, dict)}
        got = summary(expectation(folder.parent), outputs)
        if got is not None:
            found[folder.parent.name] = got
    return found


def _n(values: list[float]) -> str:
    return " ".join(f"{v:,.0f}" for v in values) or "–"


def fault_cell(s: Mapping[str, Any]) -> str:
    """`ran on: 80,039 84,307 · 66,218 · 79,869` or `died 0.15 s after: 89,847 88,995 · 32,468 · –`."""
    from components.incluster.evidence.strict import instant

    at = _n([s["at"]] if s["at"] is not None else [])
    if s["survived"] is False and s["died_at"] and s["fault_at"]:
        late = instant(s["died_at"], "died_at") - instant(s["fault_at"], "fault_at")
        fate = f"**died** {late:.2f} s after"
    else:
        fate = "ran on"
    passed = {True: "passes", False: "**fails**", None: "–"}[s["check"]["passed"]]
    return f"{fate} ({_n(s['before'])} · {at} · {_n(s['after'])}); `fault-isolation` {passed}"


def bandwidth_cell(s: Mapping[str, Any]) -> str:
    """`3,769 → 1,142 (drop 0.70)`, or why it was not judged."""
    f = s["bandwidth"]
    if not f or f.get("bypassed") is None:
        return f"not judged: {(f or {}).get('why') or 'no bandwidth step'}".replace("|", "/")
    return f"{f['alone_gbps']['mean']:,.0f} → {f['beside_gbps']['mean']:,.0f} (drop {f['drop_fraction']:.2f})"


def table_rows(found: Mapping[str, Mapping[str, Any]], mechanisms: list[str]) -> list[str]:
    """Two rows for the comparison table, one cell per mechanism column, from the runs of that mechanism."""
    by_mech = {s["mechanism"]: s for s in found.values()}
    rows = []
    for label, cell in (("a neighbour's fault: Pod A's launches a second before · the fault's second · after",
                         fault_cell),
                        ("Pod A's streaming copy alone → beside Pod B's, GB/s (drop)", bandwidth_cell)):  # fmt: skip
        cells = [cell(by_mech[m]) if m in by_mech else "–" for m in mechanisms]
        rows.append(f"| {label} |" + "".join(f" {c} |" for c in cells))
    return rows
