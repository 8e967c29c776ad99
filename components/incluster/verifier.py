"""The in-cluster verifier: reads the proof from the API server, judges it, writes the verdict.

Standard library only (urllib + ssl), run as `python3 /gpushare/verifier.py` in a slim Python image with
a read-only ServiceAccount. It waits (until the expectation's deadline) for every proof Pod's probe
JSON, gives the over-commit Pod time to be (not) scheduled, then reads Pods, their logs and events,
their nodes, and the node-local monitor's metrics through the API server's Pod proxy. It prints the
full evidence and the verdict to stdout as JSON lines and writes the compact verdict to the
termination message, where Pulumi reads it. It exits 0 whenever a verdict was written, failing or not.

Environment:
  GPUSHARE_EXPECT                 the expectation JSON (required)
  GPUSHARE_API_URL                default https://kubernetes.default.svc
  GPUSHARE_TOKEN_PATH / _CA_PATH  default the ServiceAccount mount
  GPUSHARE_ALLOW_HTTP=1           accept a plain-http API URL (tests only)
  GPUSHARE_TERMINATION_LOG        default /dev/termination-log
  GPUSHARE_POLL_SECONDS           default 5
  GPUSHARE_OVERCOMMIT_GRACE_SECONDS  default 30
"""

from __future__ import annotations

import contextlib
import json
import os
import ssl
import sys
import time
import traceback
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    import judge  # type: ignore[import-not-found]  # mounted flat beside this file in the cluster
except ImportError:
    from components.verify import judge

SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
DEFAULTS = {
    "GPUSHARE_API_URL": "https://kubernetes.default.svc",
    "GPUSHARE_TOKEN_PATH": f"{SA_DIR}/token",
    "GPUSHARE_CA_PATH": f"{SA_DIR}/ca.crt",
    "GPUSHARE_TERMINATION_LOG": "/dev/termination-log",
    "GPUSHARE_POLL_SECONDS": "5",
    "GPUSHARE_OVERCOMMIT_GRACE_SECONDS": "30",
}
LOG_TAIL_LINES = 400
"""The probe JSON is the log's last lines; the human lines before it need not all be read."""


class ApiError(Exception):
    """An API request that failed, with its HTTP status (0 when the server was not reached)."""

    def __init__(self, path: str, status: int, detail: str) -> None:
        super().__init__(f"GET {path}: {status or 'unreachable'} {detail}".strip())
        self.status = status


class ApiClient:
    """GET-only client for the Kubernetes API with a bearer token re-read on each call (tokens rotate)."""

    def __init__(
        self, base_url: str, token_path: str, ca_path: str, allow_http: bool = False, timeout: float = 15.0
    ) -> None:
        scheme = urllib.parse.urlsplit(base_url).scheme
        if scheme != "https" and not (scheme == "http" and allow_http):
            raise ValueError(f"refusing API URL {base_url!r}: https only (GPUSHARE_ALLOW_HTTP=1 is for tests)")
        self.base_url = base_url.rstrip("/")
        self.token_path = token_path
        self.timeout = timeout
        self.context: ssl.SSLContext | None = None
        if scheme == "https":
            self.context = ssl.create_default_context(cafile=ca_path if os.path.exists(ca_path) else None)

    def _token(self) -> str:
        try:
            with open(self.token_path, encoding="utf-8") as handle:
                return handle.read().strip()
        except OSError:
            return ""

    def get(self, path: str, query: Mapping[str, str] | None = None) -> bytes:
        url = self.base_url + urllib.parse.quote(path, safe="/:")
        if query:
            url += "?" + urllib.parse.urlencode(query)
        request = urllib.request.Request(url, headers={"Accept": "application/json, */*"})
        token = self._token()
        if token:
            request.add_header("Authorization", f"Bearer {token}")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout, context=self.context) as response:
                return response.read()
        except urllib.error.HTTPError as exc:
            body = exc.read().decode("utf-8", "replace")
            with contextlib.suppress(ValueError, AttributeError):
                body = json.loads(body).get("message", body)
            raise ApiError(path, exc.code, str(body)[:300]) from exc
        except (urllib.error.URLError, OSError) as exc:
            raise ApiError(path, 0, str(getattr(exc, "reason", exc))) from exc

    def json(self, path: str, query: Mapping[str, str] | None = None) -> dict[str, Any]:
        return json.loads(self.get(path, query).decode("utf-8"))

    def text(self, path: str, query: Mapping[str, str] | None = None) -> str:
        return self.get(path, query).decode("utf-8", "replace")


# ---------------------------------------------------------------- reading objects


def pod_evidence(obj: Mapping[str, Any]) -> dict[str, Any]:
    """A Pod object → the fields the judge reads (logs and events are added by the caller)."""
    meta, spec, status = obj.get("metadata") or {}, obj.get("spec") or {}, obj.get("status") or {}
    containers = spec.get("containers") or [{}]
    return {
        "name": meta.get("name"),
        "namespace": meta.get("namespace"),
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


def read_pod(client: ApiClient, namespace: str, name: str, with_log: bool) -> dict[str, Any]:
    pod = pod_evidence(client.json(_pod_path(namespace, name)))
    if with_log and pod["phase"] in ("Running", "Succeeded", "Failed"):
        pod["logs"] = client.text(_pod_path(namespace, name) + "/log", {"tailLines": str(LOG_TAIL_LINES)})
    return pod


def read_events(client: ApiClient, namespace: str, name: str) -> list[dict[str, Any]]:
    items = (
        client.json(f"/api/v1/namespaces/{namespace}/events", {"fieldSelector": f"involvedObject.name={name}"}).get(
            "items"
        )
        or []
    )
    return [
        {
            "reason": e.get("reason"),
            "message": e.get("message"),
            "source": (e.get("source") or {}).get("component") or e.get("reportingComponent"),
            "type": e.get("type"),
            "count": e.get("count"),
        }
        for e in items
    ]


def read_monitor(client: ApiClient, monitor: Mapping[str, Any], node: str) -> str:
    """The metrics text of the monitor Pod on `node`, through the API server's Pod proxy."""
    items = (
        client.json(
            f"/api/v1/namespaces/{monitor['namespace']}/pods",
            {"labelSelector": monitor["labelSelector"], "fieldSelector": f"spec.nodeName={node}"},
        ).get("items")
        or []
    )
    running = [p for p in items if (p.get("status") or {}).get("phase") == "Running"]
    if not running:
        raise LookupError(f"monitor on node {node}: no Running Pod matches {monitor['labelSelector']}")
    name = running[0]["metadata"]["name"]
    path = "/" + str(monitor.get("path") or "/metrics").lstrip("/")
    return client.text(f"/api/v1/namespaces/{monitor['namespace']}/pods/{name}:{monitor['port']}/proxy{path}")


def _has_results(expect: Mapping[str, Any], pod: Mapping[str, Any], name: str | None = None) -> bool:
    found = judge.probe_results(pod.get("logs") or "")
    measures_compute = name is None or name in (expect.get("computePods") or expect.get("pods") or [name])
    return "memory" in found and (expect.get("coresPercent") is None or not measures_compute or "compute" in found)


# ---------------------------------------------------------------- waiting and collecting


def wait_for_results(
    client: ApiClient,
    expect: Mapping[str, Any],
    clock: Callable[[], float],
    sleep: Callable[[float], None],
    poll: float,
    grace: float,
) -> list[str]:
    """Poll until every proof Pod has printed its probe JSON (or ended) and the over-commit Pod had `grace`
    seconds beside Running proof Pods; returns what was still missing at the deadline ([] when complete)."""
    namespace = expect["namespace"]
    deadline = clock() + float(expect.get("deadlineSeconds") or 900)
    running_since: float | None = None
    while True:
        waiting: list[str] = []
        all_running, any_ended = True, False
        for name in expect.get("pods") or []:
            try:
                pod = read_pod(client, namespace, name, with_log=True)
            except ApiError as exc:
                waiting.append(f"Pod {name}: {exc}")
                all_running = False
                continue
            all_running = all_running and pod["phase"] == "Running"
            any_ended = any_ended or pod["phase"] in ("Succeeded", "Failed")
            if not _has_results(expect, pod, name) and pod["phase"] not in ("Succeeded", "Failed"):
                waiting.append(f"Pod {name} ({pod['phase']}) has not printed its probe result")
        whole = expect.get("wholeGpuPod")
        if whole:
            try:
                phase = read_pod(client, namespace, whole, with_log=False)["phase"]
                if phase not in ("Succeeded", "Failed"):
                    waiting.append(f"whole-GPU Pod {whole} is {phase}")
            except ApiError as exc:
                waiting.append(f"whole-GPU Pod {whole}: {exc}")
        if expect.get("overcommitPod") and not any_ended:  # an ended proof Pod holds no slice: nothing to wait for
            if all_running and running_since is None:
                running_since = clock()
            if running_since is None or clock() - running_since < grace:
                waiting.append(f"over-commit Pod {expect['overcommitPod']} is given {grace:.0f} s to be scheduled")
        if not waiting:
            return []
        if clock() >= deadline:
            return [f"deadline of {expect.get('deadlineSeconds')} s passed while waiting: " + "; ".join(waiting)]
        sleep(poll)


def collect(client: ApiClient, expect: Mapping[str, Any]) -> dict[str, Any]:
    """Everything the judge reads, with each read's failure recorded in `errors` instead of raised."""
    namespace = expect["namespace"]
    evidence: dict[str, Any] = {"pods": {}, "nodes": {}, "metrics": {}, "errors": []}
    errors: list[str] = evidence["errors"]
    names = [*(expect.get("pods") or []), expect.get("overcommitPod"), expect.get("wholeGpuPod")]
    for name in [n for n in names if n]:
        try:
            pod = read_pod(client, namespace, name, with_log=True)
            pod["events"] = read_events(client, namespace, name)
            evidence["pods"][name] = pod
        except ApiError as exc:
            errors.append(f"Pod {name}: {exc}")
    for node in sorted({p["nodeName"] for p in evidence["pods"].values() if p.get("nodeName")}):
        try:
            evidence["nodes"][node] = node_evidence(client.json(f"/api/v1/nodes/{node}"))
        except ApiError as exc:
            errors.append(f"node {node}: {exc}")
    monitor = expect.get("monitor")
    if monitor:
        proof_nodes = {(evidence["pods"].get(n) or {}).get("nodeName") for n in expect.get("pods") or []}
        for node in sorted(n for n in proof_nodes if n):
            try:
                evidence["metrics"][node] = read_monitor(client, monitor, node)
            except (ApiError, LookupError, KeyError) as exc:
                errors.append(f"monitor on node {node}: {exc}")
    if expect.get("allocationAnnotation"):
        evidence["quotaPods"] = read_quota_pods(client, expect, errors)
    return evidence


def read_quota_pods(client: ApiClient, expect: Mapping[str, Any], errors: list[str]) -> dict[str, Any]:
    """Every Pod carrying HAMi's allocation or bind annotations (cluster-wide, else the proof namespace)."""
    keys = (expect["allocationAnnotation"], *judge.HAMI_BIND_ANNOTATIONS)
    for path in ("/api/v1/pods", f"/api/v1/namespaces/{expect['namespace']}/pods"):
        try:
            items = client.json(path).get("items") or []
        except ApiError as exc:
            errors.append(f"listing Pods for the ghost-quota diagnostic: {exc}")
            continue
        pods = {}
        for obj in items:
            pod = pod_evidence(obj)
            if any(pod["annotations"].get(k) for k in keys):
                pods[f"{pod['namespace']}/{pod['name']}"] = pod
        return pods
    return {}


def verify(
    client: ApiClient,
    expect: Mapping[str, Any],
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    poll: float = 5.0,
    grace: float = 30.0,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Wait, collect, judge: (evidence, result)."""
    missing = wait_for_results(client, expect, clock, sleep, poll, grace)
    evidence = collect(client, expect)
    evidence["errors"] = missing + evidence["errors"]
    return evidence, judge.judge(expect, evidence)


# ---------------------------------------------------------------- entry point


def _emit(kind: str, payload: Mapping[str, Any]) -> None:
    print(json.dumps({"kind": kind, **payload}, sort_keys=True), flush=True)


def main(
    env: Mapping[str, str] | None = None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> int:
    """Run the verifier; 0 when a verdict (passing or failing) reached the termination message."""
    env = dict(os.environ if env is None else env)
    setting = {**DEFAULTS, **{k: v for k, v in env.items() if k in DEFAULTS}}
    expect: dict[str, Any] = {}
    try:
        expect = json.loads(env.get("GPUSHARE_EXPECT") or "")
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
        )
        _emit("evidence", evidence)
    except Exception as exc:  # a crash still ends in a verdict, so Pulumi reads why instead of a timeout
        traceback.print_exc()
        reason = f"verifier crashed: {type(exc).__name__}: {exc}"
        result = judge.failed_verdict(expect if isinstance(expect, dict) else {}, reason)
    _emit("verification", result)
    try:
        with open(setting["GPUSHARE_TERMINATION_LOG"], "w", encoding="utf-8") as handle:
            handle.write(judge.compact(result))
    except OSError as exc:
        print(f"could not write the termination message: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
