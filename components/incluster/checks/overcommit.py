"""What the scheduler did with a Pod the card has no room for: overcommit-rejected.

Judged on everything the record saw of the over-commit Pod over the proof window: its events since its creation,
its annotations and containers when last read, and (where the verifier watched it: `provenance`) every read it made
while waiting, each beside the proof Pods' phases. Standard library only."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..evidence.pods import HAMI_BIND_ANNOTATIONS
from ..evidence.record import Record
from ..evidence.strict import instant
from ..expectation import Expectation
from .rule import Check, Judgement, Rule, verdict

# ---------------------------------------------------------------- overcommit-rejected

MEMORY_RESOURCE = "nvidia.com/gpumem"
"""HAMi's per-Pod memory resource, in MiB (the proof's Pods ask it: components/gpu/hami.py)."""
SLOT_RESOURCE = "nvidia.com/gpu"
FILTER_FAILURE = re.compile(r"(\d+) nodes (\w+)\(([^)]*)\)")
"""HAMi's FilteringFailed message, `%d nodes %s(%s)` with the nodes comma-joined (HAMi v2.9.0
pkg/scheduler/score.go:196, v2.10.0 pkg/scheduler/score.go:351)."""
SCHEDULED_EVENTS = ("FilteringSucceed", "Scheduled", "Binding", "BindingSucceed")
"""Events that say a scheduler placed the Pod (HAMi v2.9.0 pkg/scheduler/scheduler.go records FilteringSucceed and
the bind events; kube-scheduler records Scheduled)."""
WATCH_MIN_READS = 2
WATCH_MIN_SECONDS = 10.0
"""The verifier reads the over-commit Pod at every poll (5 s) for its grace (30 s): at least two reads, 10 s apart."""


def _asked(pod: Mapping[str, Any], resource: str) -> int | None:
    """What the Pod's own spec asks of `resource` (limits, else requests), as an integer; None when absent."""
    resources = pod.get("resources") or {}
    value = (resources.get("limits") or {}).get(resource) or (resources.get("requests") or {}).get(resource)
    try:
        return int(str(value))
    except ValueError:
        return None


def _proof_node(rec: Record) -> str | None:
    nodes = {rec.node_of(n) for n in rec.names}
    return nodes.pop() if len(nodes) == 1 else None


def _since_creation(rec: Record, name: str) -> list[tuple[str | None, str, float | None]]:
    """The Pod's events no older than the Pod (an earlier Pod's event of the same name proves nothing)."""
    created = rec.created(name)
    return [x for x in rec.events(name) if created is not None and x[2] is not None and x[2] >= created]


def _refusal_names(rec: Record, name: str, reason: str) -> list[str]:
    """The nodes HAMi's FilteringFailed events (since the Pod's creation) name for `reason`."""
    named: list[str] = []
    for event_reason, message, _ in _since_creation(rec, name):
        if event_reason != "FilteringFailed":
            continue
        for _count, why, nodes in FILTER_FAILURE.findall(message):
            if why == reason:
                named += [n.strip() for n in nodes.split(",") if n.strip()]
    return named


def _other_tenants(rec: Record, card: str | None) -> tuple[int, list[str]]:
    """The memory other Pods (running or ghost) hold on the proof Pods' card, by HAMi's allocation annotations."""
    e = rec.expect
    ours = {(e.namespace, n) for n in (*e.pods, e.overcommit_pod) if n}
    held, names = 0, []
    for key, pod in sorted(rec.quota_pods.items()):
        if (pod.get("namespace") or e.namespace, pod.get("name") or key) in ours:
            continue
        mib = sum(d["memMiB"] for d in rec.quota_allocated(key) if d["uuid"] == card)
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


def _pending_pod_seen(rec: Record, name: str, pod: Mapping[str, Any]) -> str:
    """The over-commit Pod as seen: phase, node, creation, every event with its time, the watch's reads."""
    watch = pod.get("watch") or []
    return (
        f"{name}: phase {pod.get('phase')}, node {pod.get('nodeName')}, created {pod.get('creationTimestamp')};"
        " events: "
        + "; ".join(f"{r} at {at}: {m}" for r, m, at in rec.events(name))
        + (f"; watched {len(watch)} times, {watch[0]['at']} … {watch[-1]['at']}" if watch else "")
    )


def _containers_started(pod: Mapping[str, Any]) -> list[str]:
    states = [next(iter(s.get("state") or {}), "waiting") for s in pod.get("containerStatuses") or []]
    return [s for s in states if s != "waiting"]


def _watch_problems(rec: Record, name: str, pod: Mapping[str, Any]) -> list[str]:
    """Every read the verifier made of the Pod while it waited: Pending, on no node, bound to nothing, its container
    not started; and from the first read that found both proof Pods Running (before it, they were starting), both
    still Running at every read, the reads enough and long enough apart to be the proof window."""
    watch = pod.get("watch") or []
    created = rec.created(name)
    if watch and created is not None and instant(watch[0]["at"], "watch") < created:
        return [f"{name} was watched from {watch[0]['at']}, before it was created"]
    for w in watch:
        if w["phase"] != "Pending" or w["nodeName"] or w["bound"] or [c for c in w["containers"] if c != "waiting"]:
            return [f"{name} at {w['at']}: phase {w['phase']}, node {w['nodeName']}, bound {w['bound']}, containers"
                    f" {w['containers']}: it was scheduled during the proof"]  # fmt: skip
    start = next((i for i, w in enumerate(watch) if all(w["proofPhases"].get(p) == "Running" for p in rec.names)),
                 len(watch))  # fmt: skip
    window = watch[start:]
    times = [instant(w["at"], "watch") for w in window]
    if len(window) < WATCH_MIN_READS or times[-1] - times[0] < WATCH_MIN_SECONDS:
        span = f"{times[-1] - times[0]:.0f} s" if times else "no time"
        return [f"{name} was watched {len(window)} times over {span} beside Running proof Pods: the verifier reads it"
                f" at every poll, at least {WATCH_MIN_READS} times over {WATCH_MIN_SECONDS:.0f} s"]  # fmt: skip
    for w in window:
        ended = [p for p in rec.names if w["proofPhases"].get(p) != "Running"]
        if ended:
            return [f"at {w['at']} proof Pod {ended[0]} was {w['proofPhases'].get(ended[0])}, not Running: its slice"
                    " was not held while the over-commit Pod waited"]  # fmt: skip
    return []


def _kept_out(rec: Record, pod: Mapping[str, Any], event_reason: str, held: str, given: str, why: str) -> list[str]:
    """What every over-commit must show, slices or slots: the Pod unscheduled (`given`: what it got all the same),
    refused by `event_reason` since its creation and never placed since, while both proof Pods run and so hold
    their `held`: created before it, never ended before it was read, Running when read."""
    name, reason = rec.expect.overcommit_pod or "", rec.expect.pending_reason or ""
    problems = []
    bound = [k for k in HAMI_BIND_ANNOTATIONS if (pod.get("annotations") or {}).get(k)]
    started = _containers_started(pod)
    if pod.get("phase") != "Pending" or pod.get("nodeName") or given or bound or started:
        extra = (f", bound by {', '.join(bound)}" if bound else "") + (f", containers {started}" if started else "")
        problems.append(f"{name} was scheduled (phase {pod.get('phase')}, node {pod.get('nodeName')}{given}{extra}):"
                        f" {why}")  # fmt: skip
    events = _since_creation(rec, name)
    if not any(r == event_reason and reason in m for r, m, _ in events):
        problems.append(f"{name} has no {event_reason} event naming {reason} since its creation")
    placed = [f"{r} at {at}" for r, _, at in events if r in SCHEDULED_EVENTS]
    if placed:
        problems.append(f"{name} was placed after all ({', '.join(placed)}): {why}")
    created = rec.created(name)
    for proof in rec.names:
        phase = rec.pod(proof).get("phase")
        if phase != "Running":
            problems.append(f"proof Pod {proof} is {phase}, not Running: its {held} was not held during the test")
            continue
        ended, born = rec.container_ended_at(proof), rec.created(proof)
        if created is not None and ended is not None and ended < created:
            problems.append(f"proof Pod {proof} ended before {name} was created: its {held} was not held")
        if rec.expect.provenance and created is not None and born is not None and born > created:
            problems.append(f"proof Pod {proof} was created after {name}: {name} did not meet its {held}")
    if rec.expect.provenance:
        problems += _watch_problems(rec, name, pod)
    return problems


SLOT_REFUSAL_EVENT = "FailedScheduling"
"""kube-scheduler's event for a Pod no node fits (NodeResourcesFit: `Insufficient nvidia.com/gpu`)."""


def _overcommit_slots_expected(e: Expectation) -> str:
    slots = f"{e.overcommit_slots} nvidia.com/gpu slot{'' if e.overcommit_slots == 1 else 's'}"
    return (
        f"{e.overcommit_pod}, asking for {slots} on the proof Pods' node (one more than the two proof Pods leave),"
        f" stays Pending with a {SLOT_REFUSAL_EVENT} event naming {e.pending_reason} after its creation, while both"
        " proof Pods are Running"
    )


def _overcommit_slots_rejected(rec: Record) -> Judgement:
    """GKE's sharing counts clients per card: the Pod one slot beyond them must be kept out by kube-scheduler."""
    e = rec.expect
    name, reason = e.overcommit_pod or "", e.pending_reason or ""
    pod = rec.pods.get(name)
    if pod is None:
        return False, f"over-commit Pod {name} was not found", ""
    problems = [] if e.overcommit_slots else [f"{name} asks for no slots: it proves nothing about the client count"]
    seen = [_pending_pod_seen(rec, name, pod)]
    asked, node = _asked(pod, SLOT_RESOURCE), _proof_node(rec)
    if asked != e.overcommit_slots:
        problems.append(f"{name}'s spec asks {asked} {SLOT_RESOURCE}, the plan {e.overcommit_slots}")
    allocatable = _asked({"resources": {"limits": (rec.nodes.get(node or "") or {}).get("allocatable") or {}}},
                         SLOT_RESOURCE)  # fmt: skip
    taken = sum(_asked(rec.pod(p), SLOT_RESOURCE) or 1 for p in rec.names)
    seen.append(f"node {node}: allocatable {SLOT_RESOURCE}={allocatable}, the proof Pods take {taken}")
    # Pending proves the client count only when the ask fits the node's slots but not beside the proof Pods.
    if allocatable is None or asked is None or not allocatable - taken < asked <= allocatable:
        problems.append(
            f"{name} asks {asked} of node {node}'s allocatable {SLOT_RESOURCE}={allocatable} with {taken} taken by"
            " the proof Pods: only an ask above what is left and within the node shows the slots keep it out"
        )
    problems += _kept_out(rec, pod, SLOT_REFUSAL_EVENT, "slot", "", "the node took more clients than its cards were"
                          " shared into")  # fmt: skip
    return verdict(problems, f"{name} is Pending with {SLOT_REFUSAL_EVENT} … {reason} while the proof Pods run", seen)


def _overcommit_rejected(rec: Record) -> Judgement:
    e = rec.expect
    name, reason = e.overcommit_pod or "", e.pending_reason or ""
    pod = rec.pods.get(name)
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
    seen = [_pending_pod_seen(rec, name, pod)]
    asked, node = _asked(pod, MEMORY_RESOURCE), _proof_node(rec)
    if asked != e.overcommit_mib:
        problems.append(f"{name}'s spec asks {MEMORY_RESOURCE}={asked}, the plan {e.overcommit_mib} MiB")
    cards = _asked(pod, SLOT_RESOURCE)
    per_node = e.node_registration.cards_per_node if e.node_registration else 1
    if cards is not None and cards > per_node:
        problems.append(f"{name} asks {cards} whole cards of a node with {per_node}: the count keeps it out, not"
                        " the memory")  # fmt: skip
    card = next((r.get("gpu_uuid") for r in rec.memories().values() if r.get("gpu_uuid")), None)
    if e.pin_annotation and name in e.pinned_pods:  # kept out of the shared card only if it asked for that card
        pinned, wanted = rec.pin(name), e.shared_card_uuid or card
        if pinned is None:
            problems.append(f"{name} carries no {e.pin_annotation}: Pending says nothing about the shared card")
        elif wanted and pinned != [wanted]:
            problems.append(f"{name} is pinned by {e.pin_annotation}={','.join(pinned)}, not to the shared card"
                            f" {wanted} alone: Pending says nothing about that card's slices")  # fmt: skip
    others, tenants = _other_tenants(rec, card)
    seen.append(f"on {card}: other Pods hold {others} MiB ({', '.join(tenants) or 'none'})")
    if others and asked is not None and asked > e.card_mib - others:
        problems.append(
            f"the card also holds {others} MiB of other Pods ({', '.join(tenants)}): {name}'s {asked} MiB would not"
            f" fit beside them alone, so Pending does not show that the slices are accounted"
        )
    named = _refusal_names(rec, name, reason)
    if named and node not in named:
        problems.append(f"{name}'s FilteringFailed {reason} names {', '.join(named)}, not the proof Pods' node {node}")
    elif not named and any(r == "FilteringFailed" and reason in m for r, m, _ in _since_creation(rec, name)):
        problems.append(f"{name}'s FilteringFailed {reason} names no node: it does not say the proof Pods' node"
                        f" {node} refused it")  # fmt: skip
    allocated = rec.allocated(name)
    given = f", given {allocated[0]['uuid']}" if allocated else ""
    problems += _kept_out(rec, pod, "FilteringFailed", "slice", given, "the card's memory was not accounted as one"
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
    reads=("pods", "memory", "overcommit", "nodes", "quota-pods"),
)
