"""A recorded run as a run since provenance gives it: each Pod with its UID, each probe naming its Pod and pids, the
over-commit Pod created after the proof Pods and watched at every poll.

The recorded fixtures (tests/fixtures) come from before the probes printed their Pod; `tied(stack)` adds what a
plan's Pods now carry, consistently, so a test can break one tie at a time. Which pid is the probe's own: the one its
first OOM line names (the library's lines of its own process come first; the children's follow).
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from components.incluster.expectation import Expectation
from tests.helpers.recorded import load

WATCH_EVERY_S = 5
WATCH_READS = 7


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def at(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _pids(lines: list[str]) -> list[int]:
    return list(dict.fromkeys(int(m[1]) for x in lines if (m := re.search(r"\(pid:(\d+)", x))))


def tie_probe(result: dict[str, Any], name: str, uid: str, namespace: str, node: str | None, pid: int) -> None:
    """The `pod` block the probe prints: its Pod as the downward API gave it, its pid, its children's."""
    seen = _pids(result.get("hami_oom_lines") or [])
    own = seen[0] if seen else pid
    result["pod"] = {"name": name, "uid": uid, "namespace": namespace, "node": node, "pid": own,
                     "children": [p for p in seen if p != own]}  # fmt: skip


def _edit_lines(pod: dict[str, Any], change: Any) -> None:
    lines = pod["logs"].splitlines()
    for i, line in enumerate(lines):
        if line.startswith("{") and '"probe"' in line:
            result = json.loads(line)
            change(result)
            lines[i] = json.dumps(result)
    pod["logs"] = "\n".join(lines) + "\n"


def tied(stack: str) -> tuple[Expectation, dict[str, Any]]:
    """`stack`'s recorded run with provenance: it passes every check, as the recorded run does."""
    expect, evidence = load(stack)
    expect = replace(expect, provenance=True)
    created = None
    for n, name in enumerate(expect.pods):
        pod = evidence["pods"][name]
        pod.update(name=name, namespace=expect.namespace, uid=f"uid-{name}")
        created = at(pod["creationTimestamp"])
        _edit_lines(pod, lambda r, name=name, pod=pod, n=n: tie_probe(
            r, name, pod["uid"], expect.namespace, pod.get("nodeName"), 100 + n))  # fmt: skip
    oc = expect.overcommit_pod
    if oc and oc in evidence["pods"] and created is not None:
        pod = evidence["pods"][oc]
        born = created + timedelta(seconds=60)  # the workloads create it after both proof Pods
        pod.update(name=oc, namespace=expect.namespace, uid=f"uid-{oc}", creationTimestamp=iso(born))
        for event in pod.get("events") or []:
            event["lastTimestamp"] = iso(born + timedelta(seconds=1))
        pod["watch"] = [
            {"at": iso(born + timedelta(seconds=1 + WATCH_EVERY_S * i)), "phase": "Pending", "nodeName": None,
             "bound": [], "containers": [], "proofPhases": dict.fromkeys(expect.pods, "Running")}
            for i in range(WATCH_READS)
        ]  # fmt: skip
    return expect, evidence


def tie_try(expect: Expectation, evidence: dict[str, Any], pod_name: str, pid: int = 300) -> None:
    """A Pod-level try's Pod object and its probe's block, as a run since provenance has them."""
    pod = evidence["pods"][pod_name]
    first = next(iter(evidence["pods"].values()))
    pod.update(name=pod_name, namespace=expect.namespace, uid=f"uid-{pod_name}",
               creationTimestamp=pod.get("creationTimestamp") or first.get("creationTimestamp"))  # fmt: skip
    _edit_lines(pod, lambda r: tie_probe(r, pod_name, pod["uid"], expect.namespace, pod.get("nodeName"), pid))
