"""The in-cluster verifier: reads the proof from the API server, judges it, writes the verdict.

Standard library only (its API client is kube.py), run as `python3 -m incluster.verifier` in a slim Python
image with a read-only ServiceAccount. It waits (until the expectation's deadline) for every proof Pod's probe
JSON, gives the over-commit Pod time to be (not) scheduled, then reads Pods, their logs and events,
their nodes, and the node-local monitor's metrics through the API server's Pod proxy. It prints the
full evidence and the verdict to stdout as JSON lines and writes the verdict to the termination message
(message.py: compressed when it must be, never a finding dropped), where Pulumi reads it. It exits 0 whenever
a verdict was written, failing or not.

Environment:
  GPUSHARE_EXPECT                 the expectation JSON (expectation.py; required)
  GPUSHARE_API_URL                default https://kubernetes.default.svc
  GPUSHARE_TOKEN_PATH / _CA_PATH  default the ServiceAccount mount
  GPUSHARE_ALLOW_HTTP=1           accept a plain-http API URL (tests only)
  GPUSHARE_TERMINATION_LOG        default /dev/termination-log
  GPUSHARE_POLL_SECONDS           default 5
  GPUSHARE_OVERCOMMIT_GRACE_SECONDS  default 30
  GPUSHARE_TRY_GRACE_SECONDS      default 120: how long Pod-level tries may still run once the proof is complete
  GPUSHARE_UNSCHEDULABLE_GRACE_SECONDS  default 120: how long a proof Pod may stay Unschedulable before the
                                  verifier ends, with the scheduler's reason, instead of waiting out its deadline
"""

from __future__ import annotations

import os
import sys
import time
import traceback
from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from typing import Any

from . import audit, judge, message
from .evidence.parse import probe_results
from .evidence.pods import HAMI_BIND_ANNOTATIONS
from .expectation import Expectation
from .kube import IN_CLUSTER_URL, SA_DIR, ApiClient, ApiError
from .scheduling import UnplacedClock, unschedulable

DEFAULTS = {
    "GPUSHARE_API_URL": IN_CLUSTER_URL,
    "GPUSHARE_TOKEN_PATH": f"{SA_DIR}/token",
    "GPUSHARE_CA_PATH": f"{SA_DIR}/ca.crt",
    "GPUSHARE_TERMINATION_LOG": "/dev/termination-log",
    "GPUSHARE_POLL_SECONDS": "5",
    "GPUSHARE_OVERCOMMIT_GRACE_SECONDS": "30",
    "GPUSHARE_TRY_GRACE_SECONDS": "120",
    "GPUSHARE_UNSCHEDULABLE_GRACE_SECONDS": "120",
}
LOG_TAIL_LINES = 400
"""The probe JSON is the log's last lines; the human lines before it need not all be read."""


# ---------------------------------------------------------------- reading objects


def pod_evidence(obj: Mapping[str, Any]) -> dict[str, Any]:
    """A Pod object → the fields the judge reads (logs and events are added by the caller)."""
    meta, spec, status = obj.get("metadata") or {}, obj.get("spec") or {}, obj.get("status") or {}
    containers = spec.get("containers") or [{}]
    return {
        "name": meta.get("name"),
        "namespace": meta.get("namespace"),
        "uid": meta.get("uid"),
        "creationTimestamp": meta.get("creationTimestamp"),
        "phase": status.get("phase"),
        "nodeName": spec.get("nodeName"),
        "annotations": dict(meta.get("annotations") or {}),
        "containerStatuses": [
            {k: s.get(k) for k in ("name", "ready", "restartCount", "state")}
            for s in status.get("containerStatuses") or []
        ],
        "resources": containers[0].get("resources") or {},
        "logs": "",
        "events": [],
    }


def node_evidence(obj: Mapping[str, Any]) -> dict[str, Any]:
    meta, status = obj.get("metadata") or {}, obj.get("status") or {}
    return {
        "labels": dict(meta.get("labels") or {}),
        "annotations": dict(meta.get("annotations") or {}),
        "allocatable": dict(status.get("allocatable") or {}),
        "capacity": dict(status.get("capacity") or {}),
    }


def _pod_path(namespace: str, name: str) -> str:
    return f"/api/v1/namespaces/{namespace}/pods/{name}"


def read_pod(client: ApiClient, namespace: str, name: str, with_log: bool, wall: Callable[[], str] | None = None,
             unplaced: list[str | None] | None = None) -> dict[str, Any]:  # fmt: skip
    """The Pod as pod_evidence keeps it, its log's tail, and (given `wall`) when it was read: no probe time of its
    may come later. Given `unplaced`, appends the scheduler's reason it is not placed (None when it is)."""
    obj = client.json(_pod_path(namespace, name))
    if unplaced is not None:
        unplaced.append(unschedulable(obj.get("status")))
    pod = pod_evidence(obj)
    if with_log and pod["phase"] in ("Running", "Succeeded", "Failed"):
        pod["logs"] = client.text(_pod_path(namespace, name) + "/log", {"tailLines": str(LOG_TAIL_LINES)})
    if wall is not None:
        pod["readAt"] = wall()
    return pod


def wall_clock(clock: Callable[[], float]) -> Callable[[], str]:
    """UTC wall time (RFC 3339, ms) that advances with `clock`: the verifier's reads, stamped on one time line."""
    origin_wall, origin = time.time(), clock()

    def now() -> str:
        stamp = datetime.fromtimestamp(origin_wall + clock() - origin, timezone.utc)  # noqa: UP017 (py3.10 hosts)
        return stamp.isoformat(timespec="milliseconds").replace("+00:00", "Z")

    return now


def watch_entry(pod: Mapping[str, Any], proof_phases: Mapping[str, Any], at: str) -> dict[str, Any]:
    """One read of the over-commit Pod (object_schema.WATCH_ENTRY): its phase, node, HAMi's bind annotations,
    its containers' states, and each proof Pod's phase in the same poll."""
    annotations = pod.get("annotations") or {}
    return {
        "at": at,
        "phase": pod.get("phase"),
        "nodeName": pod.get("nodeName"),
        "bound": [k for k in HAMI_BIND_ANNOTATIONS if annotations.get(k)],
        "containers": [next(iter(s.get("state") or {}), "waiting") for s in pod.get("containerStatuses") or []],
        "proofPhases": dict(proof_phases),
    }


def read_events(client: ApiClient, namespace: str, name: str) -> list[dict[str, Any]]:
    query = {"fieldSelector": f"involvedObject.name={name}"}
    items = client.json(f"/api/v1/namespaces/{namespace}/events", query).get("items") or []
    return [
        {
            "reason": e.get("reason"),
            "message": e.get("message"),
            "source": (e.get("source") or {}).get("component") or e.get("reportingComponent"),
            "type": e.get("type"),
            "count": e.get("count"),
            # When it last happened: the judge counts only events since the Pod's creation.
            "lastTimestamp": e.get("lastTimestamp") or e.get("eventTime") or e.get("firstTimestamp"),
        }
        for e in items
    ]


def read_monitor(client: ApiClient, expect: Expectation, node: str) -> str:
    """The metrics text of the monitor Pod on `node`, through the API server's Pod proxy."""
    monitor = expect.monitor
    if monitor is None:
        raise LookupError("no monitor is expected")
    query = {"labelSelector": monitor.label_selector, "fieldSelector": f"spec.nodeName={node}"}
    items = client.json(f"/api/v1/namespaces/{monitor.namespace}/pods", query).get("items") or []
    running = [p for p in items if (p.get("status") or {}).get("phase") == "Running"]
    if not running:
        raise LookupError(f"monitor on node {node}: no Running Pod matches {monitor.label_selector}")
    name = running[0]["metadata"]["name"]
    path = "/" + monitor.path.lstrip("/")
    return client.text(f"/api/v1/namespaces/{monitor.namespace}/pods/{name}:{monitor.port}/proxy{path}")


def _has_results(expect: Expectation, pod: Mapping[str, Any], name: str) -> bool:
    found = probe_results(pod.get("logs") or "")
    measures_compute = name in (expect.compute_pods or expect.pods)
    return "memory" in found and (expect.cores_percent is None or not measures_compute or "compute" in found)


# ---------------------------------------------------------------- waiting and collecting


def wait_for_results(
    client: ApiClient,
    expect: Expectation,
    clock: Callable[[], float],
    sleep: Callable[[float], None],
    poll: float,
    grace: float,
    try_grace: float = 120.0,
    watch: list[dict[str, Any]] | None = None,
    wall: Callable[[], str] | None = None,
    unschedulable_grace: float = 120.0,
) -> list[str]:
    """Poll until every proof Pod has printed its probe JSON (or ended) and the over-commit Pod had `grace` seconds
    beside Running proof Pods, then up to `try_grace` more for the Pod-level tries to end; returns what was still
    missing at the deadline ([] when complete), or sooner once a proof Pod (the over-commit Pod is Pending by
    design) has been Unschedulable for `unschedulable_grace` seconds. Every poll's read of the over-commit Pod
    goes to `watch`."""
    namespace = expect.namespace
    deadline = clock() + float(expect.deadline_seconds)
    running_since: float | None = None
    settled_since: float | None = None
    wall = wall or wall_clock(clock)
    unplaced = UnplacedClock()
    while True:
        waiting: list[str] = []
        all_running, any_ended = True, False
        phases: dict[str, Any] = {}
        for name in expect.pods:
            reason: list[str | None] = []
            try:
                pod = read_pod(client, namespace, name, with_log=True, unplaced=reason)
            except ApiError as exc:
                waiting.append(f"Pod {name}: {exc}")
                all_running = False
                phases[name] = None
                continue
            phases[name] = pod["phase"]
            unplaced.saw(name, reason[0], clock())
            all_running = all_running and pod["phase"] == "Running"
            any_ended = any_ended or pod["phase"] in ("Succeeded", "Failed")
            if not _has_results(expect, pod, name) and pod["phase"] not in ("Succeeded", "Failed"):
                waiting.append(f"Pod {name} ({pod['phase']}) has not printed its probe result")
        whole = expect.whole_gpu_pod
        if whole:
            reason = []
            try:
                phase = read_pod(client, namespace, whole, with_log=False, unplaced=reason)["phase"]
                unplaced.saw(whole, reason[0], clock())
                if phase not in ("Succeeded", "Failed"):
                    waiting.append(f"whole-GPU Pod {whole} is {phase}")
            except ApiError as exc:
                waiting.append(f"whole-GPU Pod {whole}: {exc}")
        if expect.overcommit_pod and watch is not None:
            try:
                watch.append(watch_entry(read_pod(client, namespace, expect.overcommit_pod, False), phases, wall()))
            except ApiError as exc:
                waiting.append(f"over-commit Pod {expect.overcommit_pod}: {exc}")
        if expect.overcommit_pod and not any_ended:  # an ended proof Pod holds no slice: nothing to wait for
            if all_running and running_since is None:
                running_since = clock()
            if running_since is None or clock() - running_since < grace:
                waiting.append(f"over-commit Pod {expect.overcommit_pod} is given {grace:.0f} s to be scheduled")
        stuck = unplaced.overdue(clock(), unschedulable_grace)
        if stuck:  # the scheduler's verdict is in: waiting out the deadline would only delay it
            return stuck
        if not waiting:
            # Pod-level tries only add findings: they get a bounded wait once the proof itself is complete.
            settled_since = clock() if settled_since is None else settled_since
            trying = _tries_running(client, expect)
            if not trying or clock() - settled_since >= try_grace:
                return []
            waiting = trying
        if clock() >= deadline:
            return [f"deadline of {expect.deadline_seconds} s passed while waiting: " + "; ".join(waiting)]
        sleep(poll)


def _tries_running(client: ApiClient, expect: Expectation) -> list[str]:
    """The Pod-level tries that have not ended yet."""
    running = []
    for pod_try in expect.pod_tries:
        try:
            phase = read_pod(client, expect.namespace, pod_try.pod, with_log=False)["phase"]
        except ApiError as exc:
            running.append(f"Pod-level try {pod_try.pod}: {exc}")
            continue
        if phase not in ("Succeeded", "Failed"):
            running.append(f"Pod-level try {pod_try.pod} is {phase}")
    return running


def collect(client: ApiClient, expect: Expectation, wall: Callable[[], str] | None = None) -> dict[str, Any]:
    """Everything the judge reads, with each read's failure recorded in `errors` instead of raised."""
    namespace = expect.namespace
    evidence: dict[str, Any] = {"pods": {}, "nodes": {}, "metrics": {}, "errors": []}
    errors: list[str] = evidence["errors"]
    names = [*expect.pods, expect.overcommit_pod, expect.whole_gpu_pod, *(t.pod for t in expect.pod_tries)]
    for name in [n for n in names if n]:
        try:
            pod = read_pod(client, namespace, name, with_log=True, wall=wall)
            pod["events"] = read_events(client, namespace, name)
            evidence["pods"][name] = pod
        except ApiError as exc:
            errors.append(f"Pod {name}: {exc}")
    for node in sorted({p["nodeName"] for p in evidence["pods"].values() if p.get("nodeName")}):
        try:
            evidence["nodes"][node] = node_evidence(client.json(f"/api/v1/nodes/{node}"))
        except ApiError as exc:
            errors.append(f"node {node}: {exc}")
    if expect.monitor is not None:
        proof_nodes = {(evidence["pods"].get(n) or {}).get("nodeName") for n in expect.pods}
        for node in sorted(n for n in proof_nodes if n):
            try:
                evidence["metrics"][node] = read_monitor(client, expect, node)
            except (ApiError, LookupError, KeyError) as exc:
                errors.append(f"monitor on node {node}: {exc}")
    if expect.allocation_annotation:
        evidence["quotaPods"] = read_quota_pods(client, expect, errors)
    evidence["gpuAudit"] = audit.read_audit(client.json, expect.system_namespaces)
    return evidence


def read_quota_pods(client: ApiClient, expect: Expectation, errors: list[str]) -> dict[str, Any]:
    """Every Pod carrying HAMi's allocation or bind annotations (cluster-wide, else the proof namespace)."""
    keys = (expect.allocation_annotation, *HAMI_BIND_ANNOTATIONS)
    for path in ("/api/v1/pods", f"/api/v1/namespaces/{expect.namespace}/pods"):
        try:
            items = client.json(path).get("items") or []
        except ApiError as exc:
            errors.append(f"listing Pods for the ghost-quota diagnostic: {exc}")
            continue
        pods = {}
        for obj in items:
            pod = pod_evidence(obj)
            if any(pod["annotations"].get(k) for k in keys if k):
                pods[f"{pod['namespace']}/{pod['name']}"] = pod
        return pods
    return {}


def verify(
    client: ApiClient,
    expect: Expectation,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    poll: float = 5.0,
    grace: float = 30.0,
    try_grace: float = 120.0,
    unschedulable_grace: float = 120.0,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Wait (watching the over-commit Pod), collect, judge: (evidence, result)."""
    watch: list[dict[str, Any]] = []
    wall = wall_clock(clock)
    missing = wait_for_results(client, expect, clock, sleep, poll, grace, try_grace, watch, wall, unschedulable_grace)
    evidence = collect(client, expect, wall)
    evidence["errors"] = missing + evidence["errors"]
    if expect.overcommit_pod in evidence["pods"]:
        evidence["pods"][expect.overcommit_pod]["watch"] = watch
    # Counted beside the verdict, never into `passed`; the full per-Pod list stays in the evidence (the log).
    return evidence, {**judge.judge(expect, evidence), "gpuAudit": audit.summary(evidence["gpuAudit"])}


# ---------------------------------------------------------------- entry point


def main(
    env: Mapping[str, str] | None = None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> int:
    """Run the verifier; 0 when a verdict (passing or failing) reached the termination message."""
    env = dict(os.environ if env is None else env)
    setting = {**DEFAULTS, **{k: v for k, v in env.items() if k in DEFAULTS}}
    expect: Expectation | None = None
    try:
        expect = Expectation.parse(env.get("GPUSHARE_EXPECT") or "")
        if expect.host_proof:  # a plan never sets it: it would skip what only a Pod shows
            raise ValueError("expectation.hostProof is true: a host proof's expectation is not a cluster's")
        client = ApiClient(
            setting["GPUSHARE_API_URL"],
            setting["GPUSHARE_TOKEN_PATH"],
            setting["GPUSHARE_CA_PATH"],
            allow_http=env.get("GPUSHARE_ALLOW_HTTP") == "1",
        )
        evidence, result = verify(
            client,
            expect,
            clock,
            sleep,
            poll=float(setting["GPUSHARE_POLL_SECONDS"]),
            grace=float(setting["GPUSHARE_OVERCOMMIT_GRACE_SECONDS"]),
            try_grace=float(setting["GPUSHARE_TRY_GRACE_SECONDS"]),
            unschedulable_grace=float(setting["GPUSHARE_UNSCHEDULABLE_GRACE_SECONDS"]),
        )
        print(message.log_line(evidence, "evidence"), flush=True)
    except Exception as exc:  # a crash still ends in a verdict, so Pulumi reads why instead of a timeout
        traceback.print_exc()
        reason = f"verifier crashed: {type(exc).__name__}: {exc}"
        result = judge.failed_verdict(expect, reason)
    print(message.log_line(result), flush=True)  # the whole verdict: what a cut termination message's digest names
    try:
        text = message.encode(result)
    except Exception as exc:  # a verdict that cannot be written is itself a verdict: every check failed, why
        text = message.encode(judge.failed_verdict(expect, f"the verdict could not be encoded: {exc!r}"))
    try:
        with open(setting["GPUSHARE_TERMINATION_LOG"], "w", encoding="utf-8") as handle:
            handle.write(text)
    except OSError as exc:
        print(f"could not write the termination message: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
