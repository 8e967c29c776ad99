"""The audit CLI and the host proof fail in one line of the project's words: a missing kubeconfig says it is
missing, an unreachable server says so without urllib3's retry text, a host without a GPU says that once."""

from __future__ import annotations

from pathlib import Path

import pytest

from components.audit.__main__ import failure_line
from components.audit.__main__ import main as audit_cli

KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
users: [{name: u, user: {token: s3cr3t-token}}]
"""


def test_a_missing_kubeconfig_is_said_to_be_missing(tmp_path: Path, capsys) -> None:
    assert audit_cli(["--kubeconfig", str(tmp_path / "gone.yaml")]) == 2
    err = capsys.readouterr().err
    assert "no such file" in err and len(err.splitlines()) == 1 and "Exception" not in err


def test_an_unreachable_server_is_said_to_be_unreachable_in_our_words(tmp_path: Path, capsys) -> None:
    path = tmp_path / "kc.yaml"
    path.write_text(KUBECONFIG)  # port 1 on the loopback: nothing listens, the connection is refused
    assert audit_cli(["--kubeconfig", str(path)]) == 2
    err = capsys.readouterr().err
    assert "the API server at https://127.0.0.1:1 cannot be reached: it refused the connection" in err
    assert len(err.splitlines()) == 1
    assert not any(word in err for word in ("MaxRetryError", "HTTPSConnectionPool", "Max retries", "s3cr3t"))


def test_a_file_that_is_no_kubeconfig_is_named_as_such(tmp_path: Path, capsys) -> None:
    path = tmp_path / "kc.yaml"
    path.write_text("clusters: [\n")
    assert audit_cli(["--kubeconfig", str(path)]) == 2
    assert "not a kubeconfig this audit can use" in capsys.readouterr().err


@pytest.mark.parametrize(("error", "said"), [
    (OSError(-2, "Name or service not known"), "its host name does not resolve"),
    (TimeoutError("timed out"), "it did not answer in time"),
])  # fmt: skip
def test_each_connection_failure_reads_as_what_it_means(error: OSError, said: str) -> None:
    line = failure_line(error, "kc.yaml", "https://203.0.113.10:6443")
    assert said in line and "https://203.0.113.10:6443" in line


def test_refused_credentials_are_named(tmp_path: Path) -> None:
    class Denied(Exception):
        status, reason = 401, "Unauthorized"

    assert "refused the credentials (HTTP 401 Unauthorized)" in failure_line(Denied(), "kc", "https://h:6443")


def test_the_host_proof_on_a_host_without_a_gpu_says_so_once_and_exits_non_zero(monkeypatch, capsys) -> None:
    from components.verify.host import __main__ as host

    monkeypatch.setattr(host, "card", lambda: {"error": "[Errno 2] No such file or directory: 'nvidia-smi'"})
    planned = []
    monkeypatch.setattr(host.expectation, "host_plan", lambda *a: planned.append(a))
    assert host.main(["k3s"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1 and "no NVIDIA GPU" in err
    assert planned == [], "the GPU is checked before the stack is planned"
