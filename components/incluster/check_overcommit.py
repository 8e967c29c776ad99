"""What the scheduler did with a Pod the card has no room for: overcommit-rejected.

Standard library only."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .check_rule import Check, Judgement, Rule, verdict
from .evidence import DEFAULT_ALLOCATION_ANNOTATION, Evidence
from .expectation import Expectation
from .parse import parse_allocation, timestamp

# ---------------------------------------------------------------- overcommit-rejected

MEMORY_RESOURCE = "nvidia.com/gpumem"
"""HAMi's per-Pod memory resource, in MiB (the proof's Pods ask it: components/gpu/hami.py)."""
SLOT_RESOURCE = "nvidia.com/gpu"
FILTER_FAILURE = re.compile(r"(\d+) nodes (\w+)\(([^)]*)\)")
"""HAMi's FilteringFailed message, `%d nodes %s(%s)` with the nodes comma-joined (HAMi v2.9.0
pkg/scheduler/score.go:196, v2.10.0 pkg/scheduler/score.go:351)."""


def _asked(pod: Mapping[str, Any], resource: str) -> int | None:
    """What the Pod's own spec asks of `resource` (limits, else requests), as an integer; None when absent."""
    resources = pod.get("resources") or {}
    value = (resources.get("limits") or {}).get(resource) or (resources.get("requests") or {}).get(resource)
    try:
        return int(str(value))
    except ValueError:
        return None


def _proof_node(ev: Evidence) -> str | None:
    nodes = {ev.node_of(n) for n in ev.names}
    return nodes.pop() if len(nodes) == 1 else None


def _refusal_names_node(pod: Mapping[str, Any], reason: str, node: str | None) -> list[str]:
    """The nodes HAMi's FilteringFailed events (since the Pod's creation) name for `reason`."""
    created = timestamp(pod.get("creationTimestamp"))
    named: list[str] = []
    for x in pod.get("events") or []:
        if x.get("reason") != "FilteringFailed" or created is None or (_event_time(x) or float("-inf")) < created:
            continue
        for _count, why, nodes in FILTER_FAILURE.findall(str(x.get("message"))):
            if why == reason:
                named += [n.strip() for n in nodes.split(",") if n.strip()]
    return named


def _other_tenants(ev: Evidence, card: str | None) -> tuple[int, list[str]]:
    """The memory other Pods (running or ghost) hold on the proof Pods' card, by HAMi's allocation annotations."""
    e = ev.expect
    ours = {(e.namespace, n) for n in (*e.pods, e.overcommit_pod) if n}
    held, names = 0, []
    for key, pod in sorted(ev.quota_pods.items()):
        if (pod.get("namespace") or e.namespace, pod.get("name") or key) in ours:
            continue
        annotation = e.allocation_annotation or DEFAULT_ALLOCATION_ANNOTATION
        mib = sum(d["memMiB"] for d in parse_allocation((pod.get("annotations") or {}).get(annotation))
                  if d["uuid"] == card)  # fmt: skip
        if mib:
            held += mib
            names.append(f"{pod.get('namespace') or e.namespace}/{pod.get('name') or key} ({mib} MiB)")
    return held, names


def _overcommit_expected(e: Expectation) -> str:
    left = e.card_mib - len(e.pods) * e.slice_mib
    return (
        f"{e.overcommit_pod}, asking {e.overcommit_mib} MiB (more than the {left} MiB left beside the slices, no"
        f" more than the {e.card_mib} MiB card), stays Pending with a FilteringFailed event naming"
        f" {e.pending_reason} after its creation, while both proof Pods are Running"
    )


def _event_time(event: Mapping[str, Any]) -> float | None:
    return timestamp(event.get("lastTimestamp") or event.get("eventTime") or event.get("firstTimestamp"))


def _pending_pod_seen(name: str, pod: Mapping[str, Any]) -> str:
    """The over-commit Pod as seen: phase, node, creation and every event with its time."""
    events = pod.get("events") or []
    return (
        f"{name}: phase {pod.get('phase')}, node {pod.get('nodeName')}, created {pod.get('creationTimestamp')};"
        " events: " + "; ".join(f"{x.get('reason')} at {_event_time(x)}: {x.get('message')}" for x in events)
    )


def _refused_since_creation(pod: Mapping[str, Any], event_reason: str, reason: str) -> bool:
    """An `event_reason` event naming `reason`, no older than the Pod (an earlier Pod's event proves nothing)."""
    created = timestamp(pod.get("creationTimestamp"))
    return created is not None and any(
        x.get("reason") == event_reason and reason in str(x.get("message"))
        and (_event_time(x) or float("-inf")) >= created
        for x in pod.get("events") or []
    )  # fmt: skip


def _kept_out(ev: Evidence, pod: Mapping[str, Any], event_reason: str, held: str, given: str, why: str) -> list[str]:
    """What every over-commit must show, slices or slots: the Pod unscheduled (`given`: what it got all the same),
    refused by `event_reason` since its creation, while both proof Pods run and so hold their `held`."""
    name, reason = ev.expect.overcommit_pod or "", ev.expect.pending_reason or ""
    problems = []
    if pod.get("phase") != "Pending" or pod.get("nodeName") or given:
        problems.append(f"{name} was scheduled (phase {pod.get('phase')}, node {pod.get('nodeName')}{given}): {why}")
    if not _refused_since_creation(pod, event_reason, reason):
        problems.append(f"{name} has no {event_reason} event naming {reason} since its creation")
    return problems + [
        f"proof Pod {proof} is {phase}, not Running: its {held} was not held during the test"
        for proof in ev.names
        if (phase := ev.pod(proof).get("phase")) != "Running"
    ]


SLOT_REFUSAL_EVENT = "FailedScheduling"
"""kube-scheduler's event for a Pod no node fits (NodeResourcesFit: `Insufficient nvidia.com/gpu`)."""


def _overcommit_slots_expected(e: Expectation) -> str:
    slots = f"{e.overcommit_slots} nvidia.com/gpu slot{'' if e.overcommit_slots == 1 else 's'}"
    return (
        f"{e.overcommit_pod}, asking for {slots} on the proof Pods' node (one more than the two proof Pods leave),"
        f" stays Pending with a {SLOT_REFUSAL_EVENT} event naming {e.pending_reason} after its creation, while both"
        " proof Pods are Running"
    )


def _overcommit_slots_rejected(ev: Evidence) -> Judgement:
    """GKE's sharing counts clients per card: the Pod one slot beyond them must be kept out by kube-scheduler."""
    e = ev.expect
    name, reason = e.overcommit_pod or "", e.pending_reason or ""
    pod = ev.pods.get(name)
    if pod is None:
        return False, f"over-commit Pod {name} was not found", ""
    problems = [] if e.overcommit_slots else [f"{name} asks for no slots: it proves nothing about the client count"]
    seen = [_pending_pod_seen(name, pod)]
    asked, node = _asked(pod, SLOT_RESOURCE), _proof_node(ev)
    if asked != e.overcommit_slots:
        problems.append(f"{name}'s spec asks {asked} {SLOT_RESOURCE}, the plan {e.overcommit_slots}")
    allocatable = _asked({"resources": {"limits": (ev.nodes.get(node or "") or {}).get("allocatable") or {}}},
                         SLOT_RESOURCE)  # fmt: skip
    taken = sum(_asked(ev.pod(p), SLOT_RESOURCE) or 1 for p in ev.names)
    seen.append(f"node {node}: allocatable {SLOT_RESOURCE}={allocatable}, the proof Pods take {taken}")
    # Pending proves the client count only when the ask fits the node's slots but not beside the proof Pods.
    if allocatable is None or asked is None or not allocatable - taken < asked <= allocatable:
        problems.append(
            f"{name} asks {asked} of node {node}'s allocatable {SLOT_RESOURCE}={allocatable} with {taken} taken by"
            " the proof Pods: only an ask above what is left and within the node shows the slots keep it out"
        )
    problems += _kept_out(ev, pod, SLOT_REFUSAL_EVENT, "slot", "", "the node took more clients than its cards were"
                          " shared into")  # fmt: skip
    return verdict(problems, f"{name} is Pending with {SLOT_REFUSAL_EVENT} … {reason} while the proof Pods run", seen)


def _overcommit_rejected(ev: Evidence) -> Judgement:
    e = ev.expect
    name, reason = e.overcommit_pod or "", e.pending_reason or ""
    pod = ev.pods.get(name)
    if pod is None:
        return False, f"over-commit Pod {name} was not found", ""
    problems = []
    left = e.card_mib - len(e.pods) * e.slice_mib
    # Pending proves the slices are accounted only when nothing but the slices keeps the Pod out.
    if e.overcommit_mib is None or not left < e.overcommit_mib <= e.card_mib:
        problems.append(
            f"{name} asks {e.overcommit_mib} MiB: only a request above the {left} MiB left and at most the"
            f" {e.card_mib} MiB card shows that the slices keep it out"
        )
    seen = [_pending_pod_seen(name, pod)]
    asked, node = _asked(pod, MEMORY_RESOURCE), _proof_node(ev)
    if asked != e.overcommit_mib:
        problems.append(f"{name}'s spec asks {MEMORY_RESOURCE}={asked}, the plan {e.overcommit_mib} MiB")
    card = next((r.get("gpu_uuid") for r in (ev.memory(p) or {} for p in ev.names) if r.get("gpu_uuid")), None)
    others, tenants = _other_tenants(ev, card)
    seen.append(f"on {card}: other Pods hold {others} MiB ({', '.join(tenants) or 'none'})")
    if others and asked is not None and asked > e.card_mib - others:
        problems.append(
            f"the card also holds {others} MiB of other Pods ({', '.join(tenants)}): {name}'s {asked} MiB would not"
            f" fit beside them alone, so Pending does not show that the slices are accounted"
        )
    named = _refusal_names_node(pod, reason, node)
    if named and node not in named:
        problems.append(f"{name}'s FilteringFailed {reason} names {', '.join(named)}, not the proof Pods' node {node}")
    allocated = parse_allocation(
        (pod.get("annotations") or {}).get(e.allocation_annotation or DEFAULT_ALLOCATION_ANNOTATION)
    )
    given = f", given {allocated[0]['uuid']}" if allocated else ""
    problems += _kept_out(ev, pod, "FilteringFailed", "slice", given, "the card's memory was not accounted as one"
                          " budget")  # fmt: skip
    return verdict(problems, f"{name} is Pending with FilteringFailed … {reason} while the proof Pods run", seen)


OVERCOMMIT_REJECTED = Check(
    "overcommit-rejected",
    "The card's memory is one budget: an over-commit stays Pending",
    {
        "hami-core": Rule(_overcommit_expected, _overcommit_rejected),
        "mps": Rule(_overcommit_slots_expected, _overcommit_slots_rejected),
        "time-sharing": Rule(_overcommit_slots_expected, _overcommit_slots_rejected),
    },
)
