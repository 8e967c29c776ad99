"""The ready gate: its in-Pod script against a small local API server, and the objects it is allowed to read."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest

from components.incluster import ready_gate_pod
from tests.helpers.probes import ROOT

TOKEN = "gate-token"


@pytest.mark.parametrize(
    ("obj", "rule", "ready"),
    [
        ({"status": {"conditions": [{"type": "Ready", "status": "True"}]}}, "condition:Ready", True),
        ({"status": {"conditions": [{"type": "Ready", "status": "False"}]}}, "condition:Ready", False),
        ({"status": {}}, "condition:Ready", False),
        ({"status": {"state": "ready"}}, "status.state=ready", True),
        ({"status": {"state": "notReady"}}, "status.state=ready", False),
        ({}, "status.state=ready", False),
        (
            {"metadata": {"annotations": {"hami.io/node-nvidia-register": "[{}]"}}},
            "annotation:hami.io/node-nvidia-register",
            True,
        ),
        (
            {"metadata": {"annotations": {"hami.io/node-nvidia-register": " "}}},
            "annotation:hami.io/node-nvidia-register",
            False,
        ),
        (
            {"metadata": {"annotations": {"hami.io/node-handshake": "Reported"}}},
            "annotation:hami.io/node-nvidia-register",
            False,
        ),
        ({"metadata": {}}, "annotation:hami.io/node-nvidia-register", False),
    ],
)
def test_readiness_rule(obj: dict, rule: str, ready: bool) -> None:
    assert ready_gate_pod.is_ready(obj, rule) is ready


@pytest.fixture
def api(tmp_path: Path) -> Iterator[tuple[str, list[dict], Path]]:
    """A fake API server on 127.0.0.1 that answers each GET with the next object of a list."""
    answers: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.headers.get("Authorization") != f"Bearer {TOKEN}" or not answers:
                self.send_response(403 if answers else 404)
                self.end_headers()
                return
            body = json.dumps(answers.pop(0) if len(answers) > 1 else answers[0]).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    token = tmp_path / "token"
    token.write_text(TOKEN)
    yield f"http://127.0.0.1:{server.server_port}", answers, token
    server.shutdown()


def _run(base: str, token: Path, timeout: str) -> subprocess.CompletedProcess[str]:
    env = {
        "GATE_API": base,
        "GATE_TOKEN_FILE": str(token),
        "GATE_READY": "status.state=ready",
        "GATE_PATH": "/apis/nvidia.com/v1/clusterpolicies/cluster-policy",
        "GATE_TIMEOUT": timeout,
        "GATE_INTERVAL": "0.05",
    }
    argv = [sys.executable, "-m", "components.incluster.ready_gate_pod"]
    return subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, text=True, timeout=30, check=False)


def test_gate_exits_0_once_the_object_turns_ready(api) -> None:
    base, answers, token = api
    answers += [{"status": {"state": "notReady"}}, {"status": {"state": "notReady"}}, {"status": {"state": "ready"}}]
    done = _run(base, token, "20")
    assert done.returncode == 0, done.stderr
    assert "ready: /apis/nvidia.com/v1/clusterpolicies/cluster-policy" in done.stdout


def test_gate_fails_at_its_deadline_naming_what_it_last_saw(api) -> None:
    base, answers, token = api
    answers.append({"status": {"state": "notReady"}})
    done = _run(base, token, "0.3")
    assert done.returncode == 1
    assert "not ready in time" in done.stderr and "notReady" in done.stderr


def test_a_core_object_is_read_under_api_and_any_other_group_under_apis() -> None:
    from components.gpu.ready_gate import ReadyGateArgs, gate_path

    node = ReadyGateArgs(
        namespace="hami",
        api_group="",
        version="v1",
        plural="nodes",
        object_name="gpu-1",
        ready_rule="annotation:hami.io/node-nvidia-register",
        image="python",
        stack="dev",
    )
    assert gate_path(node) == "/api/v1/nodes/gpu-1"
    policy = ReadyGateArgs(
        namespace="op",
        api_group="nvidia.com",
        version="v1",
        plural="clusterpolicies",
        object_name="cluster-policy",
        ready_rule="status.state=ready",
        image="python",
        stack="dev",
    )
    assert gate_path(policy) == "/apis/nvidia.com/v1/clusterpolicies/cluster-policy"


def test_hami_waits_until_the_gpu_operators_cluster_policy_is_ready(plan_stack) -> None:
    plan = plan_stack("cluster")
    gate = plan.one("kubernetes:batch/v1:Job", "gpu-operator-ready-job")
    env = {e["name"]: e["value"] for e in gate["inputs"]["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert (env["GATE_PATH"], env["GATE_READY"]) == (
        "/apis/nvidia.com/v1/clusterpolicies/cluster-policy",
        "status.state=ready",
    )
    assert "gpu-operator-release" in gate["dependsOn"]
    # The gate runs the mounted in-cluster folder, which carries the one API client it shares with the verifier.
    container = gate["inputs"]["spec"]["template"]["spec"]["containers"][0]
    assert container["command"] == ["python3", "-m", "incluster.ready_gate_pod"]
    assert {"name": "PYTHONPATH", "value": "/opt/gpushare"} in container["env"]
    assert container["volumeMounts"][0]["mountPath"] == "/opt/gpushare/incluster"
    files = plan.one("kubernetes:core/v1:ConfigMap", "gpu-operator-ready-files")
    assert {"__init__.py", "ready_gate_pod.py", "kube.py"} <= set(files["inputs"]["data"])
    (volume,) = gate["inputs"]["spec"]["template"]["spec"]["volumes"]
    assert volume["configMap"]["name"] == files["inputs"]["metadata"]["name"] and volume["configMap"]["items"]
    assert "gpu-operator-ready-job" in plan.one("kubernetes:helm.sh/v3:Release", "hami-release")["dependsOn"]


@pytest.mark.parametrize(("stack", "gate"), [("cluster", "gpu-operator-ready-job"), ("gke", "kai-config-ready-job")])
def test_a_failed_gate_fails_the_update_at_its_deadline_and_is_replaced_next_time(
    plan_stack, stack: str, gate: str
) -> None:
    job = plan_stack(stack).one("kubernetes:batch/v1:Job", gate)
    spec, options = job["inputs"]["spec"], job["options"]
    env = {e["name"]: e["value"] for e in spec["template"]["spec"]["containers"][0]["env"]}
    # One try: the provider's Job await fails the update on BackoffLimitExceeded instead of waiting out its timeout.
    assert spec["backoffLimit"] == 0 and spec["template"]["spec"]["restartPolicy"] == "Never"
    # The cluster ends the Job after the gate's own deadline, even if its Pod never started; Pulumi's timeout after.
    assert int(env["GATE_TIMEOUT"]) < spec["activeDeadlineSeconds"] < int(options["customTimeouts"]["create"][:-1])
    # A Job that never completed is replaced by the next `pulumi up`, not waited on again.
    assert job["inputs"]["metadata"]["annotations"]["pulumi.com/replaceUnready"] == "true"
    assert "pulumi.com/skipAwait" not in job["inputs"]["metadata"]["annotations"]
    assert options["deleteBeforeReplace"] is True
    # Its last log line (what it last saw) is the message the failure carries.
    assert spec["template"]["spec"]["containers"][0]["terminationMessagePolicy"] == "FallbackToLogsOnError"


def test_no_toolkit_gate_without_a_gpu_operator(plan_stack) -> None:
    plan = plan_stack("cluster", "gpushare:toolkit=host", "gpushare:gpuOperator=null")
    assert [g["name"] for g in plan.find("gpushare:gpu:ReadyGate")] == ["hami-server-version"]


@pytest.mark.parametrize(
    ("stack", "git_version", "key"),
    [
        ("cluster", "v1.35.6", "gpushare:cluster.kubernetesVersion"),
        ("k3s", "v1.36.2+k3s1", "gpushare:k3s.version"),
    ],
)
def test_hami_waits_for_a_live_server_of_the_version_images_names(plan_stack, stack, git_version, key) -> None:
    plan = plan_stack(stack)
    job = plan.one("kubernetes:batch/v1:Job", "hami-server-version-job")
    env = {e["name"]: e["value"] for e in job["inputs"]["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["GATE_PATH"] == "/version" and env["GATE_READY"] == f"gitVersion={git_version}"
    assert key in env["GATE_HINT"]
    role = plan.one("kubernetes:rbac.authorization.k8s.io/v1:ClusterRole", "hami-server-version-reader")
    assert role["inputs"]["rules"] == [{"nonResourceURLs": ["/version"], "verbs": ["get"]}]
    assert "hami-server-version-job" in plan.one("kubernetes:helm.sh/v3:Release", "hami-release")["dependsOn"]
    # The chart's kube-scheduler tag is the server's release; `images` lists the same tag.
    assert any(i.endswith(f"/kube-scheduler:{git_version.split('+')[0]}") for i in plan.outputs["images"])


def test_a_pinned_scheduler_tag_needs_no_server_version_gate(plan_stack) -> None:
    plan = plan_stack("cluster", "gpushare:hami.schedulerImageTag=v1.35.6")
    assert not plan.find("gpushare:gpu:ReadyGate", "hami-server-version")


def test_the_version_gate_fails_naming_the_key_on_another_server(tmp_path, monkeypatch, capsys) -> None:
    from components.incluster import ready_gate_pod

    class Server:
        def __init__(self, *a, **k) -> None: ...
        def json(self, path: str) -> dict[str, str]:
            return {"gitVersion": "v1.35.2", "platform": "linux/amd64"}

    monkeypatch.setattr(ready_gate_pod.kube, "ApiClient", Server)
    for name, value in {
        "GATE_PATH": "/version",
        "GATE_READY": "gitVersion=v1.35.6",
        "GATE_TIMEOUT": "0",
        "GATE_HINT": "set gpushare:cluster.kubernetesVersion",
    }.items():
        monkeypatch.setenv(name, value)
    assert ready_gate_pod.main() == 1
    line = capsys.readouterr().err.strip()
    assert '"gitVersion": "v1.35.2"' in line and line.endswith("set gpushare:cluster.kubernetesVersion")
