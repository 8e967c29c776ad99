"""The verifier's HTTP client against a small fake API server on 127.0.0.1 serving the recorded objects."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from components.incluster import message, verifier
from tests.helpers.recorded import load_raw as load

VERIFIER = Path(__file__).resolve().parent.parent / "components" / "incluster" / "verifier.py"
TOKEN = "test-token"


def pod_object(name: str, namespace: str, pod: dict[str, Any]) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": pod.get("uid"),
            "annotations": pod.get("annotations") or {},
            "creationTimestamp": pod.get("creationTimestamp"),
        },
        "spec": {
            "nodeName": pod.get("nodeName"),
            "containers": [{"name": "probe", "resources": pod["resources"]}],
        },
        "status": {"phase": pod["phase"], "containerStatuses": pod.get("containerStatuses") or []},
    }


class FakeApi:
    """The recorded evidence served as Kubernetes API objects; records every request path."""

    def __init__(self, expect: dict[str, Any], evidence: dict[str, Any]) -> None:
        self.namespace = expect["namespace"]
        self.monitor = expect.get("monitor")
        self.evidence = evidence
        self.requests: list[str] = []
        self.unauthorized = 0

    def answer(self, path: str, query: dict[str, list[str]]) -> tuple[int, str, str]:
        ns, pods, nodes = self.namespace, self.evidence["pods"], self.evidence["nodes"]
        prefix = f"/api/v1/namespaces/{ns}/pods/"
        if path.startswith(prefix) and path.endswith("/log"):
            name = path[len(prefix) : -len("/log")]
            return (200, "text/plain", pods[name]["logs"]) if name in pods else (404, "", "")
        if path.startswith(prefix):
            name = path[len(prefix) :]
            if name not in pods:
                return 404, "application/json", json.dumps({"message": f'pods "{name}" not found'})
            return 200, "application/json", json.dumps(pod_object(name, ns, pods[name]))
        if path == f"/api/v1/namespaces/{ns}/events":
            name = query["fieldSelector"][0].removeprefix("involvedObject.name=")
            items = [{**e, "source": {"component": e.get("source")}} for e in pods.get(name, {}).get("events", [])]
            return 200, "application/json", json.dumps({"items": items})
        if path.startswith("/api/v1/nodes/"):
            node = nodes.get(path.removeprefix("/api/v1/nodes/"))
            if node is None:
                return 404, "application/json", "{}"
            obj = {
                "metadata": {"labels": node["labels"], "annotations": node["annotations"]},
                "status": {"allocatable": node["allocatable"], "capacity": node["capacity"]},
            }
            return 200, "application/json", json.dumps(obj)
        if self.monitor and path == f"/api/v1/namespaces/{self.monitor['namespace']}/pods":
            assert query["labelSelector"] == [self.monitor["labelSelector"]]
            node = query["fieldSelector"][0].removeprefix("spec.nodeName=")
            items = [
                {
                    "metadata": {"name": f"monitor-{n}"},
                    "spec": {"nodeName": n},
                    "status": {"phase": "Running"},
                }
                for n in self.evidence["metrics"]
                if n == node
            ]
            return 200, "application/json", json.dumps({"items": items})
        if self.monitor and path.startswith(f"/api/v1/namespaces/{self.monitor['namespace']}/pods/monitor-"):
            rest = path.split("/pods/monitor-", 1)[1]
            node, _, tail = rest.partition(f":{self.monitor['port']}/proxy")
            if tail == self.monitor["path"] and node in self.evidence["metrics"]:
                return 200, "text/plain", self.evidence["metrics"][node]
            return 404, "", ""
        if path in ("/api/v1/pods", f"/api/v1/namespaces/{ns}/pods"):
            items = [pod_object(name, ns, pod) for name, pod in pods.items()]
            return 200, "application/json", json.dumps({"items": items})
        return 404, "application/json", json.dumps({"message": f"no route {path}"})


@pytest.fixture
def serve() -> Iterator[Any]:
    servers: list[ThreadingHTTPServer] = []

    def _serve(api: FakeApi) -> str:
        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                url = urlsplit(self.path)
                api.requests.append(self.path)
                if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                    api.unauthorized += 1
                    status, kind, body = 401, "application/json", '{"message":"Unauthorized"}'
                else:
                    status, kind, body = api.answer(url.path, parse_qs(url.query))
                data = body.encode()
                self.send_response(status)
                self.send_header("Content-Type", kind or "text/plain")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        servers.append(server)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield _serve
    for server in servers:
        server.shutdown()
        server.server_close()


class FakeClock:
    """Time that moves only when the verifier sleeps, so waiting needs no real seconds."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def run_verifier(
    tmp_path: Path, url: str, expect: dict[str, Any], clock: FakeClock | None = None, **extra_env: str
) -> tuple[int, Any]:
    token = tmp_path / "token"
    token.write_text(TOKEN + "\n")
    termination = tmp_path / "termination-log"
    env = {
        "GPUSHARE_EXPECT": json.dumps(expect),
        "GPUSHARE_API_URL": url,
        "GPUSHARE_TOKEN_PATH": str(token),
        "GPUSHARE_CA_PATH": str(tmp_path / "absent-ca.crt"),
        "GPUSHARE_ALLOW_HTTP": "1",
        "GPUSHARE_TERMINATION_LOG": str(termination),
        "GPUSHARE_POLL_SECONDS": "5",
        "GPUSHARE_OVERCOMMIT_GRACE_SECONDS": "30",
        **extra_env,
    }
    clock = clock or FakeClock()
    rc = verifier.main(env, clock=clock, sleep=clock.sleep)
    return rc, message.decode(termination.read_text()) if termination.exists() else None


def test_verifier_passes_the_recorded_kai_run(tmp_path: Path, serve: Any, capsys: pytest.CaptureFixture[str]) -> None:
    expect, evidence = load("kai")
    api = FakeApi(expect, evidence)
    rc, verdict = run_verifier(tmp_path, serve(api), expect)
    assert rc == 0
    assert verdict["passed"] is True, verdict
    assert [c["id"] for c in verdict["checks"]] == expect["checks"]
    assert api.unauthorized == 0
    node = "gke-kai-hami-test-default-pool-370c394b-pm4j"
    assert any(f"fieldSelector=spec.nodeName%3D{node}" in p for p in api.requests)
    assert any(p.endswith(f"/pods/monitor-{node}:9394/proxy/metrics") for p in api.requests)
    assert any("fieldSelector=involvedObject.name%3Dkai-hami-lab12-a" in p for p in api.requests)
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    kinds = [line["kind"] for line in lines]
    assert kinds == ["evidence", "verification"]
    assert lines[0]["metrics"][node].startswith("# HELP")
    assert lines[1]["checks"][0]["title"]


def test_verifier_fails_the_broken_hami_run_and_still_exits_zero(tmp_path: Path, serve: Any) -> None:
    expect, evidence = load("k3s")
    evidence["pods"]["hami-oversubscribe"].update(phase="Running", nodeName="hami-lab-rtx6000", events=[])
    lines = evidence["pods"]["hami-share-a"]["logs"].splitlines()
    memory = json.loads(lines[-1])
    memory["ld_so_preload"] = []
    memory["preload"] = {"listed": [], "mapped": []}
    evidence["pods"]["hami-share-a"]["logs"] = "\n".join([*lines[:-1], json.dumps(memory)]) + "\n"
    api = FakeApi(expect, evidence)
    rc, verdict = run_verifier(tmp_path, serve(api), expect)
    assert rc == 0
    assert verdict["passed"] is False
    failed = {c["id"]: c for c in verdict["checks"] if not c["passed"]}
    assert set(failed) == {"overcommit-rejected", "preload-mechanism", "memory-enforced"}
    assert "the library is not there" in failed["memory-enforced"]["observed"]
    assert "was scheduled" in failed["overcommit-rejected"]["observed"]
    assert any(p.startswith("/api/v1/nodes/hami-lab-rtx6000") for p in api.requests)


def test_verifier_gives_the_overcommit_pod_its_grace_period(tmp_path: Path, serve: Any) -> None:
    expect, evidence = load("k3s")
    clock = FakeClock()
    rc, verdict = run_verifier(tmp_path, serve(FakeApi(expect, evidence)), expect, clock)
    assert rc == 0 and verdict["passed"] is True
    assert clock.now >= 30


def test_verifier_reports_the_deadline_when_the_proof_pods_never_appear(tmp_path: Path, serve: Any) -> None:
    expect, evidence = load("kai")
    expect["deadlineSeconds"] = 60
    evidence["pods"] = {}
    clock = FakeClock()
    rc, verdict = run_verifier(tmp_path, serve(FakeApi(expect, evidence)), expect, clock)
    assert rc == 0 and verdict["passed"] is False
    assert 60 <= clock.now < 70
    assert all("was not found" in c["observed"] for c in verdict["checks"])


def test_verifier_writes_a_failing_verdict_when_it_crashes(tmp_path: Path, serve: Any) -> None:
    expect, _ = load("kai")
    del expect["namespace"]
    rc, verdict = run_verifier(
        tmp_path, serve(FakeApi({**expect, "namespace": "x"}, {"pods": {}, "nodes": {}})), expect
    )
    assert rc == 0
    assert verdict["passed"] is False
    assert "verifier crashed: ValueError: expectation.namespace is missing" in verdict["error"]
    assert all(c["passed"] is False for c in verdict["checks"])


def test_verifier_refuses_plain_http_without_the_test_switch(tmp_path: Path) -> None:
    expect, _ = load("kai")
    termination = tmp_path / "termination-log"
    env = {
        "GPUSHARE_EXPECT": json.dumps(expect),
        "GPUSHARE_API_URL": "http://127.0.0.1:9",
        "GPUSHARE_TERMINATION_LOG": str(termination),
    }
    assert verifier.main(env) == 0
    verdict = message.decode(termination.read_text())
    assert verdict["passed"] is False and "https only" in verdict["error"]


def test_verifier_sends_the_service_account_token(tmp_path: Path, serve: Any) -> None:
    expect, evidence = load("kai")
    api = FakeApi(expect, evidence)
    url = serve(api)
    (tmp_path / "token").write_text("wrong\n")
    client = verifier.ApiClient(url, str(tmp_path / "token"), str(tmp_path / "ca"), allow_http=True)
    with pytest.raises(verifier.ApiError) as raised:
        client.json("/api/v1/nodes/x")
    assert raised.value.status == 401 and api.unauthorized == 1


def test_everything_that_runs_in_pods_imports_only_the_standard_library() -> None:
    """The in-cluster package is mounted into a python:3.12-slim Pod, where nothing else is installed."""
    import ast
    import sys

    for path in sorted(VERIFIER.parent.rglob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                roots = [alias.name.split(".")[0] for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                roots = [node.module.split(".")[0]]
            else:
                continue
            for root in roots:
                assert root in sys.stdlib_module_names or root == "__future__", (
                    path,
                    root,
                )


def test_verifier_gives_pod_level_tries_a_bounded_wait_and_reports_one_that_never_ran(
    tmp_path: Path, serve: Any
) -> None:
    expect, evidence = load("k3s")
    expect["podTries"] = [{"id": "cuda-disable-control", "pod": "hami-share-try-cuda-disable-control",
                           "tried": "a Pod setting CUDA_DISABLE_CONTROL=true"}]  # fmt: skip
    evidence["pods"]["hami-share-try-cuda-disable-control"] = {
        "phase": "Pending", "nodeName": None, "annotations": {}, "logs": "", "events": [],
        "resources": {"limits": {}}, "containerStatuses": [],
    }  # fmt: skip
    clock = FakeClock()
    rc, verdict = run_verifier(tmp_path, serve(FakeApi(expect, evidence)), expect, clock)
    assert rc == 0 and verdict["passed"] is True  # a try never changes the verdict
    assert 30 + 120 <= clock.now < 30 + 120 + 10  # the over-commit grace, then the tries' grace, not the deadline
    found = next(f for f in verdict["findings"] if f["id"] == "cuda-disable-control")
    assert found["bypassed"] is None and "phase Pending" in found["why"]


def test_the_verifiers_whole_verdict_line_is_the_one_a_cut_message_names_by_digest(
    tmp_path: Path, serve: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    expect, evidence = load("kai")
    run_verifier(tmp_path, serve(FakeApi(expect, evidence)), expect)
    printed = next(line for line in capsys.readouterr().out.splitlines() if '"kind": "verification"' in line)
    verdict = {k: v for k, v in json.loads(printed).items() if k != "kind"}
    assert message.digest(verdict) == "sha256:" + hashlib.sha256(printed.encode()).hexdigest()


def test_the_verifier_reads_the_overcommit_pod_at_every_poll_and_judges_every_read(
    tmp_path: Path, serve: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.helpers.tied import tied

    typed, evidence = tied("k3s")  # a run since provenance: Pods with UIDs, probes naming their Pods
    expect = typed.to_wire()
    rc, verdict = run_verifier(tmp_path, serve(FakeApi(expect, evidence)), expect)
    assert rc == 0 and verdict["passed"] is True, verdict
    printed = next(json.loads(x) for x in capsys.readouterr().out.splitlines() if '"kind": "evidence"' in x)
    watch = printed["pods"][typed.overcommit_pod]["watch"]
    assert len(watch) >= 7 and {w["phase"] for w in watch} == {"Pending"}  # every 5 s for the 30 s grace
    assert all(set(w["proofPhases"].values()) == {"Running"} for w in watch)
    assert all(p["readAt"] for name, p in printed["pods"].items() if name in typed.pods)
