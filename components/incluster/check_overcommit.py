"""What the scheduler did with a Pod the card has no room for: overcommit-rejected.

Standard library only."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

try:
    from .check_rule import Check, Judgement, Rule, verdict
    from .evidence import DEFAULT_ALLOCATION_ANNOTATION, Evidence
    from .expectation import Expectation
    from .parse import parse_allocation, timestamp
except ImportError:  # mounted flat in a Pod
    from check_rule import Check, Judgement, Rule, verdict  # type: ignore[no-redef]
    from evidence import DEFAULT_ALLOCATION_ANNOTATION, Evidence  # type: ignore[no-redef]
    from expectation import Expectation  # type: ignore[no-redef]
    from parse import parse_allocation, timestamp  # type: ignore[no-redef]


# ---------------------------------------------------------------- overcommit-rejected


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


def _proof_pods_not_running(ev: Evidence, held: str) -> list[str]:
    """The over-commit Pod proves the accounting only while both proof Pods hold their `held` (slice or slot)."""
    return [
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
    if pod.get("phase") != "Pending" or pod.get("nodeName"):
        problems.append(
            f"{name} was scheduled (phase {pod.get('phase')}, node {pod.get('nodeName')}): the node took more"
            " clients than its cards were shared into"
        )
    if not _refused_since_creation(pod, SLOT_REFUSAL_EVENT, reason):
        problems.append(f"{name} has no {SLOT_REFUSAL_EVENT} event naming {reason} since its creation")
    problems += _proof_pods_not_running(ev, "slot")
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
    allocated = parse_allocation(
        (pod.get("annotations") or {}).get(e.allocation_annotation or DEFAULT_ALLOCATION_ANNOTATION)
    )
    if pod.get("phase") != "Pending" or pod.get("nodeName") or allocated:
        problems.append(
            f"{name} was scheduled (phase {pod.get('phase')}, node {pod.get('nodeName')}"
            + (f", given {allocated[0]['uuid']}" if allocated else "")
            + "): the card's memory was not accounted as one budget"
        )
    if not _refused_since_creation(pod, "FilteringFailed", reason):
        problems.append(f"{name} has no FilteringFailed event naming {reason} since its creation")
    problems += _proof_pods_not_running(ev, "slice")
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
