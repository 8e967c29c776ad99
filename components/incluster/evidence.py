"""The evidence arranged for the checks: per proof Pod its probe results, its Pod object, its node; and ghost quota.

`evidence` is what the verifier collected: {"pods": {name: pod}, "nodes": {name: node}, "metrics": {node: text},
"errors": [str]}, optionally "quotaPods" (every Pod that carries HAMi annotations, for the ghost-quota diagnostic).
Standard library only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .expectation import Expectation
from .parse import oom_processes, parse_allocation, probe_results, timestamp

CLOCK_SKEW_SECONDS = 5.0
"""How far a node's clock (the probe's started_at) may run behind the API server's (the Pod's creationTimestamp)."""
CACHE_ENV = "CUDA_DEVICE_MEMORY_SHARED_CACHE"
"""HAMi gives each container its own file (`<hook path>/vgpu/<uuid>.cache`: HAMi v2.9.0
pkg/device-plugin/nvidiadevice/nvinternal/plugin/server.go:655, v2.10.0 :838); KAI sets none."""
PROBE_TIMES = ("started_at", "ended_at", "phases.hold.started_at", "phases.hold.ended_at")
HAMI_BIND_ANNOTATIONS = ("hami.io/vgpu-devices-to-allocate", "hami.io/vgpu-node", "hami.io/bind-phase")
DEFAULT_ALLOCATION_ANNOTATION = "hami.io/vgpu-devices-allocated"
NOT_RUNNING_REASONS = frozenset(
    {
        "ImagePullBackOff",
        "ErrImagePull",
        "CrashLoopBackOff",
        "CreateContainerError",
        "CreateContainerConfigError",
        "RunContainerError",
        "ContainerCannotRun",
    }
)


def waiting_reason(pod: Mapping[str, Any]) -> str | None:
    for status in pod.get("containerStatuses") or []:
        reason = ((status.get("state") or {}).get("waiting") or {}).get("reason")
        if reason:
            return str(reason)
    return None


def _held_devices(pod: Mapping[str, Any], annotation: str) -> tuple[list[dict[str, Any]], str | None]:
    annotations = pod.get("annotations") or {}
    for key in (annotation, "hami.io/vgpu-devices-to-allocate"):
        devices = parse_allocation(annotations.get(key))
        if devices:
            return devices, key
    bound = [key for key in HAMI_BIND_ANNOTATIONS if annotations.get(key)]
    return [], (bound[0] if bound else None)


def ghost_quota(
    pods: Mapping[str, Mapping[str, Any]], annotation: str = DEFAULT_ALLOCATION_ANNOTATION
) -> list[dict[str, Any]]:
    """Pods that are not running (Pending, ImagePullBackOff, CrashLoopBackOff) yet hold HAMi quota.

    HAMi charges a card at bind time, so such a Pod keeps its memory and cores until it is deleted.
    """
    ghosts = []
    for name, pod in sorted(pods.items()):
        phase = str(pod.get("phase") or "Unknown")
        waiting = waiting_reason(pod)
        if phase not in ("Pending", "Unknown") and waiting not in NOT_RUNNING_REASONS:
            continue
        devices, source = _held_devices(pod, annotation)
        if source is None:
            continue
        ghosts.append(
            {
                "pod": pod.get("name") or name,
                "namespace": pod.get("namespace"),
                "phase": phase,
                "reason": waiting or phase,
                "node": pod.get("nodeName") or (pod.get("annotations") or {}).get("hami.io/vgpu-node"),
                "annotation": source,
                "devices": devices,
                "memMiB": sum(d["memMiB"] for d in devices),
                "cores": sum(d["cores"] for d in devices),
            }
        )
    return ghosts


class Evidence:
    """The evidence of one run against one expectation, with the reason a Pod has no result."""

    def __init__(self, expect: Expectation, evidence: Mapping[str, Any]) -> None:
        self.expect = expect
        self.pods: Mapping[str, Any] = evidence.get("pods") or {}
        self.nodes: Mapping[str, Any] = evidence.get("nodes") or {}
        self.metrics: Mapping[str, str] = evidence.get("metrics") or {}
        self.errors: list[str] = [str(e) for e in evidence.get("errors") or []]
        self.names: list[str] = list(expect.pods)
        self.quota_pods: Mapping[str, Any] = evidence.get("quotaPods") or {}
        self.ghosts = ghost_quota(
            self.quota_pods or self.pods, expect.allocation_annotation or DEFAULT_ALLOCATION_ANNOTATION
        )
        self.results = {name: probe_results((self.pods.get(name) or {}).get("logs", "")) for name in self.names}

    def memory(self, name: str) -> dict[str, Any] | None:
        return self.results.get(name, {}).get("memory")

    def compute(self, name: str) -> dict[str, Any] | None:
        return self.results.get(name, {}).get("compute")

    def pod(self, name: str) -> Mapping[str, Any]:
        return self.pods.get(name) or {}

    def node_of(self, name: str) -> str | None:
        return self.pod(name).get("nodeName")

    def missing(self, name: str, probe: str = "memory") -> str:
        """Why Pod `name` has no `probe` result: its phase, waiting reason, ghost quota, verifier errors."""
        pod = self.pods.get(name)
        late = any(e.startswith("deadline") for e in self.errors)
        if pod is None:
            return f"Pod {name} was not found" + (" before the verifier's deadline" if late else "")
        text = f"Pod {name} has no {probe} probe result in its log (phase {pod.get('phase') or 'Unknown'}"
        waiting = waiting_reason(pod)
        if waiting:
            text += f", waiting: {waiting}"
        text += ")"
        ghost = next((g for g in self.ghosts if g["pod"] == name), None)
        if ghost:
            text += f"; it holds {ghost['memMiB']} MiB / {ghost['cores']}% of HAMi quota while not running"
        return text + ("; the verifier's deadline passed" if late else "")

    def all_memory(self) -> tuple[dict[str, dict[str, Any]], list[str]]:
        """Every proof Pod's memory result, why each missing one is missing, and what ties none to its Pod."""
        found, problems = {}, []
        for name in self.names:
            result = self.memory(name)
            if result is None:
                problems.append(self.missing(name))
            else:
                found[name] = result
                problems += self.tied(name, "memory")
        return found, problems

    def tied(self, name: str, probe: str) -> list[str]:
        """Why Pod `name`'s `probe` result is not shown to be its own: printed before the Pod existed, or the very
        output of another proof Pod's process (the same HAMi-core process, cache file or timestamps)."""
        result = self.results.get(name, {}).get(probe) or {}
        problems = []
        # Absent on a host (processes have no creation time); the verifier records it for every Pod it reads.
        created, started = timestamp(self.pod(name).get("creationTimestamp")), timestamp(result.get("started_at"))
        if created is not None and (started is None or started < created - CLOCK_SKEW_SECONDS):
            problems.append(
                f"Pod {name}: its {probe} probe started at {result.get('started_at')}, before the Pod was created"
                f" ({self.pod(name).get('creationTimestamp')}): the output of an earlier Pod"
            )
        for other in self.names:
            theirs = self.results.get(other, {}).get(probe)
            if other == name or theirs is None:
                continue
            same = same_process(result, theirs)
            if same:
                problems.append(f"Pods {name} and {other} report {same}: one process's output given as both")
        return problems

    def container_ended_at(self, name: str) -> float | None:
        """When the Pod's container terminated (None while it runs or when unknown)."""
        for status in self.pod(name).get("containerStatuses") or []:
            terminated = (status.get("state") or {}).get("terminated")
            if terminated:
                return timestamp(terminated.get("finishedAt")) or float("-inf")
        return None


def _field(result: Mapping[str, Any], path: str) -> Any:
    value: Any = result
    for key in path.split("."):
        value = value.get(key) if isinstance(value, Mapping) else None
    return value


def same_process(a: Mapping[str, Any], b: Mapping[str, Any]) -> str | None:
    """What shows two probe results to come from one process, else None.

    A (pid, thread) pair in HAMi-core's OOM lines (the thread is pthread_self(), an address that differs between
    processes even where PID namespaces repeat PIDs); one per-container cache file; every timestamp to the ms.
    """
    shared = sorted(oom_processes(a.get("hami_oom_lines") or []) & oom_processes(b.get("hami_oom_lines") or []))
    if shared:
        named = ", ".join(f"pid {pid} thread {thread}" for pid, thread in shared)
        return f"the same HAMi-core process in their OOM lines ({named})"
    cache_a, cache_b = (a.get("env") or {}).get(CACHE_ENV), (b.get("env") or {}).get(CACHE_ENV)
    if cache_a and cache_a == cache_b:
        return f"the same {CACHE_ENV}={cache_a}, a file HAMi makes for one container"
    times = [(_field(a, k), _field(b, k)) for k in PROBE_TIMES if _field(a, k) is not None]
    if len(times) >= 2 and all(x == y for x, y in times):
        return "identical timestamps (" + ", ".join(str(x) for x, _ in times) + ")"
    return None


def probe_error(result: Mapping[str, Any]) -> str:
    """` (probe error: …)` when the probe reported one, else empty."""
    error = result.get("error") or result.get("cuda_error")
    return f" (probe error: {error})" if error else ""
