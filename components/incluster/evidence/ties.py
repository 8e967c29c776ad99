"""What ties a validated probe result to the Pod that produced it, and what shows it is another's.

Each function takes results and Pod records the record (record.py) has already validated and returns a problem,
(field, why), or nothing: a result printed before its Pod existed or after it was read, the very output of another
Pod's process, a Pod identity (downward API) other than the one the API server names, an OOM line of a process that
is neither the probe nor its child, an audit that says the Pod opted out of the library its probe found loaded.
Standard library only; pure functions.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from itertools import pairwise
from typing import Any

from .parse import oom_processes
from .strict import instant, normal_path

CLOCK_SKEW_SECONDS = 5.0
"""How far a node's clock (the probe's times) may run behind the API server's (the Pod's creationTimestamp) or the
verifier's (when it read the Pod)."""
CACHE_ENV = "CUDA_DEVICE_MEMORY_SHARED_CACHE"
"""HAMi gives each container its own file (`<hook path>/vgpu/<uuid>.cache`: HAMi v2.9.0
pkg/device-plugin/nvidiadevice/nvinternal/plugin/server.go:655, v2.10.0 :838); KAI sets none."""
STAMP_SECONDS = 0.002
"""One Pod's probes print one clock's instants to the millisecond: no skew lies between its own steps."""
PROBE_TIMES = ("started_at", "ended_at", "phases.hold.started_at", "phases.hold.ended_at")
_LINE_PID = re.compile(r"\(pid:(\d+)")
LIBRARY_ABSENT_REASONS = ("cuda-disable-control", "isolator-inject-false", "isolator-not-injected")
"""The audit's reasons that say HAMi-core is not in the Pod at all (the top's audit.py REASONS)."""
Problem = tuple[str, str]


def at(result: Mapping[str, Any], path: str) -> Any:
    value: Any = result
    for key in path.split("."):
        value = value.get(key) if isinstance(value, Mapping) else None
    return value


def line_pid(line: str) -> int | None:
    """The process a HAMi-core line names (`(pid:1002 thread=…`): its getpid() (src/include/log_utils.h LOG_ERROR)."""
    match = _LINE_PID.search(line)
    return int(match[1]) if match else None


def own_pids(results: Iterable[Mapping[str, Any]]) -> set[int] | None:
    """The processes a Pod's probes say they were (each probe and its children), or None without provenance."""
    blocks = [r["pod"] for r in results if r.get("pod")]
    if not blocks:
        return None
    return {pid for b in blocks for pid in (b["pid"], *b["children"])}


def same_process(a: Mapping[str, Any], b: Mapping[str, Any]) -> str | None:
    """What shows two probe results to come from one process, else None.

    A (pid, thread) pair in HAMi-core's OOM lines (the thread is pthread_self(), an address that differs between
    processes even where PID namespaces repeat PIDs); one per-container cache file, however spelled; every
    timestamp the same instant, in whatever zone; one Pod UID.
    """
    shared = sorted(oom_processes(a.get("hami_oom_lines") or []) & oom_processes(b.get("hami_oom_lines") or []))
    if shared:
        named = ", ".join(f"pid {pid} thread {thread}" for pid, thread in shared)
        return f"the same HAMi-core process in their OOM lines ({named})"
    cache_a, cache_b = (a.get("env") or {}).get(CACHE_ENV), (b.get("env") or {}).get(CACHE_ENV)
    if cache_a and cache_b and normal_path(cache_a) == normal_path(cache_b):
        return f"the same {CACHE_ENV}={normal_path(cache_a)}, a file HAMi makes for one container"
    times = [(at(a, k), at(b, k)) for k in PROBE_TIMES if at(a, k) is not None and at(b, k) is not None]
    # Three or more: two probes that measured nothing (no GPU) may start and end in the same millisecond.
    if len(times) >= 3 and all(instant(x, "a") == instant(y, "b") for x, y in times):
        return "identical timestamps (" + ", ".join(str(x) for x, _ in times) + ")"
    copied = _same_timeline(a, b)
    if copied:
        return copied
    uid_a, uid_b = (a.get("pod") or {}).get("uid"), (b.get("pod") or {}).get("uid")
    if uid_a and uid_a == uid_b:
        return f"the same Pod UID {uid_a}"
    return None


TIMELINE_SECONDS = 3
"""Two processes never measure the same rate, to the tenth, over this many whole seconds running."""


def _timelines(r: Mapping[str, Any]) -> dict[str, list[Any]]:
    """A result's measured per-second series: its judged compute shape's, a step's timeline."""
    judged = r.get("judged_shape") or "short_many"  # a few-block shape's seconds come in whole launches: they repeat
    shape = (r.get("shapes") or {}).get(judged)
    found = {f"shapes.{judged}": shape.get("timeline_per_s") if isinstance(shape, dict) else None}
    found["timeline"] = (r.get("timeline") or {}).get("per_s") if isinstance(r.get("timeline"), dict) else None
    return {k: v for k, v in found.items() if isinstance(v, list) and len(v) >= TIMELINE_SECONDS and any(v)}


def _same_timeline(a: Mapping[str, Any], b: Mapping[str, Any]) -> str | None:
    """Two results measuring the very same per-second series: one measurement given twice (two timestamps alone
    do not tell a compute line copied whole)."""
    ta, tb = _timelines(a), _timelines(b)
    same = sorted(k for k in ta if ta[k] == tb.get(k))
    return f"the same measured seconds in {same[0]} ({', '.join(map(str, ta[same[0]][:3]))}, …)" if same else None


def time_problem(name: str, probe: str, result: Mapping[str, Any], pod: Mapping[str, Any]) -> Problem | None:
    """The result's times against its Pod's: created ≤ started, and ended ≤ when the container ended and when the
    verifier read the Pod (each within the clock skew)."""
    created = pod.get("creationTimestamp")
    started = instant(result["started_at"], "started_at")
    if created is not None and started < instant(created, "creationTimestamp") - CLOCK_SKEW_SECONDS:
        return "started_at", (f"Pod {name}: its {probe} probe started at {result['started_at']}, before the Pod was"
                              f" created ({created}): the output of an earlier Pod")  # fmt: skip
    last = max(instant(result[k], k) for k in ("ended_at", "started_at", "keep_holding_since") if result.get(k))
    read = pod.get("readAt")
    if read is not None and last > instant(read, "readAt") + CLOCK_SKEW_SECONDS:
        return "ended_at", f"Pod {name}: its {probe} probe ended after the verifier read it ({read})"
    for status in pod.get("containerStatuses") or []:
        finished = ((status.get("state") or {}).get("terminated") or {}).get("finishedAt")
        if finished and last > instant(finished, "finishedAt") + CLOCK_SKEW_SECONDS:
            return "ended_at", f"Pod {name}: its {probe} probe ended after its container did ({finished})"
    return None


def sequence_problem(name: str, results: Mapping[str, Mapping[str, Any]]) -> Problem | None:
    """In one Pod, compute runs to its end before memory starts (workloads.container_command: `compute; exec
    memory`, the host proof's steps in order)."""
    compute, memory = results.get("compute"), results.get("memory")
    if (
        compute
        and memory
        and instant(compute["ended_at"], "c") > instant(memory["started_at"], "m") + CLOCK_SKEW_SECONDS
    ):
        return "started_at", (
            f"Pod {name}: its memory probe started at {memory['started_at']}, before its compute"
            f" probe ended ({compute['ended_at']}): the Pod runs them one after the other"
        )
    return None


POD_ORDER = ("fault", "bandwidth", "compute", "allocation", "memory")
"""A proof Pod's steps in the order it runs them (workloads.container_command, the host proof's pod_steps)."""
STEP_PROBES = ("fault", "bandwidth")


def steps_problems(name: str, results: Mapping[str, Mapping[str, Any]]) -> list[tuple[str, str, str]]:
    """The fault and bandwidth steps each end before the Pod's next step starts: (probe, field, why) for each step
    result out of that order (the step is refused, and the next one too where it is a step)."""
    ran = [(probe, results[probe]) for probe in POD_ORDER if probe in results]
    found: list[tuple[str, str, str]] = []
    for (first, a), (second, b) in pairwise(ran):
        if first not in STEP_PROBES:
            continue
        if instant(b["started_at"], "b") < instant(a["ended_at"], "a") - STAMP_SECONDS:
            why = (f"Pod {name}: its {second} probe started at {b['started_at']}, before its {first} step ended"
                   f" ({a['ended_at']}): the Pod runs them one after the other")  # fmt: skip
            found.append((first, "ended_at", why))
            found.append((second, "started_at", why))  # what it measured ran beside the step
    return found


def beside_compute(name: str, other: str, results: Mapping[str, Mapping[str, Any]],
                   others: Mapping[str, Mapping[str, Any]]) -> Problem | None:  # fmt: skip
    """Pod `other`'s fault and bandwidth steps end before Pod `name`'s compute starts: both Pods' steps come first
    (workloads.container_command), so a copy or a fault inside the compute window is another run's timing."""
    compute = results.get("compute")
    if not compute:
        return None
    for probe in STEP_PROBES:
        step = others.get(probe)
        if step and instant(step["ended_at"], "s") > instant(compute["started_at"], "c") + STAMP_SECONDS:
            return "started_at", (
                f"Pod {name}: its compute probe started at {compute['started_at']}, while Pod"
                f" {other}'s {probe} step ran until {step['ended_at']}: it measured beside it"
            )
    return beside_lookup(name, other, compute, others)


def beside_lookup(
    name: str, other: str, compute: Mapping[str, Any], others: Mapping[str, Mapping[str, Any]]
) -> Problem | None:
    """No step of Pod `other` runs while Pod `name`'s limited process looks up its host PID (from its start to its
    cuInit's return): HAMi-core takes the one PID new on the card across that instant (src/utils.c: getextrapid), so
    a process of `other`'s starting or leaving then gives the limiter no PID, or the wrong one."""
    context_at = (compute.get("lookup") or {}).get("context_at")
    if context_at is None:
        return None
    start, end = instant(compute["started_at"], "c"), instant(context_at, "l")
    for probe in POD_ORDER:
        step = others.get(probe)
        if step and instant(step["started_at"], "s") < end and instant(step["ended_at"], "e") > start:
            return "lookup.context_at", (
                f"Pod {name}'s limited process looked up its host PID from {compute['started_at']} to {context_at},"
                f" while Pod {other}'s {probe} step ran ({step['started_at']} – {step['ended_at']}): a process"
                " starting or leaving the card then hands HAMi-core's limiter no PID or the wrong one"
            )
    return None


def provenance_problem(name: str, namespace: str, result: Mapping[str, Any], pod: Mapping[str, Any]) -> Problem | None:
    """The Pod the probe says it ran in (its downward-API env) is the one the API server names: name, UID,
    namespace and node."""
    block = result.get("pod")
    if not block:
        return "pod", f"Pod {name}: the probe reports no Pod of its own (name, UID, node, pid): not tied to a Pod"
    if not pod.get("uid") or not pod.get("creationTimestamp"):
        return "pod.uid", f"Pod {name}: the API server's Pod object carries no UID or creation time to tie it to"
    if pod.get("namespace") not in (None, namespace):
        return "pod.namespace", (f"Pod {name}: the API server names it in namespace {pod['namespace']!r}, the plan"
                                 f" runs the proof in {namespace!r}: another run's Pod")  # fmt: skip
    wanted = {"name": name, "uid": pod["uid"], "namespace": namespace, "node": pod.get("nodeName")}
    for key, value in wanted.items():
        if block.get(key) != value:
            return f"pod.{key}", (f"Pod {name}: the probe ran in {key} {block.get(key)!r}, the API server names"
                                  f" {value!r}: another Pod's output")  # fmt: skip
    return None


def audit_problem(name: str, namespace: str, audit: Mapping[str, Any], mapped: bool) -> Problem | None:
    """The audit (read from the Pod's spec) says the Pod keeps HAMi-core out, yet its probe found the library
    loaded: the spec and the process cannot both be this Pod's."""
    for row in audit.get("pods") or []:
        if row["pod"] == f"{namespace}/{name}" and row["reason"] in LIBRARY_ABSENT_REASONS and mapped:
            return "gpuAudit", (
                f"Pod {name}: the GPU audit says its spec keeps HAMi-core out ({row['reason']}), yet"
                " its probe found the library mapped: the spec and the process disagree"
            )
    return None
