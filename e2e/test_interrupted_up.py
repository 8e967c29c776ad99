"""An `up` killed during the HAMi release's Helm wait, then the recovery docs/troubleshooting.md gives (An interrupted
`up`): `pulumi cancel`, `pulumi refresh --clear-pending-creates`, `pulumi up`; a preview after it shows no change.

Its own stack, after test_cluster_stack.py destroyed that one (the file name orders it): one `cluster` stack a
cluster. SIGKILL, not SIGINT: a first SIGINT or SIGTERM only cancels, and the CLI waits for the step in flight
(pulumi v3.276.0 pkg/backend/cancellation_scope.go); what leaves a pending operation is the process gone at once (a
second Ctrl-C, a CI job's kill after its grace, a closed laptop), and SIGKILL of the process group is that.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from e2e.conftest import new_stack
from e2e.controlplane import ControlPlane
from e2e.stack import Stack

HAMI_RELEASE = "kubernetes:helm.sh/v3:Release::hami-release"
HELD_BY = "nvidia-legacy"
"""The RuntimeClass HAMi's device plugin DaemonSet needs: without it the release's Helm wait holds (docs/testing.md)."""


@pytest.fixture(scope="module")
def stack(control_plane: ControlPlane, work: Path, chart_dirs: Path) -> Iterator[Stack]:
    s = new_stack(control_plane, work, chart_dirs, name="interrupted", folder="interrupted")
    yield s
    if s.cli("stack", "ls").returncode == 0:
        s.cli("cancel", "--yes")
        s.run("destroy")


def checkpoint(stack: Stack) -> dict[str, Any]:
    """The stack's state as the file backend holds it (`{}` while it is being written or not yet there)."""
    path = stack.state / ".pulumi" / "stacks" / "gpushare" / f"{stack.name}.json"
    try:
        return dict(json.loads(path.read_text()).get("checkpoint", {}).get("latest") or {})
    except (OSError, json.JSONDecodeError):
        return {}


def pending(stack: Stack) -> list[str]:
    """Each pending operation as `type::name OPERATION` (`creating`, `updating`, `deleting`)."""
    ops = checkpoint(stack).get("pending_operations") or []
    return [f"{op['resource']['urn'].split('$')[-1]} {op['type']}" for op in ops]


def locks(stack: Stack) -> list[Path]:
    return sorted((stack.state / ".pulumi" / "locks").rglob("*.json"))


def wait_for(what: str, check: Any, seconds: float = 180) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.2)
    raise AssertionError(f"{what} not seen in {seconds} s")


LOCKED = "the stack is currently locked by 1 lock(s)"
PENDING_WARNING = "Attempting to deploy or update resources with 1 pending operations from previous deployment"
"""CLI v3.276.0's warning on an `up` over pending operations: it goes on (pkg/resource/deploy/deployment_executor.go,
printPendingOperationsWarning)."""
NAME_IN_USE = "cannot re-use a name that is still in use"
"""Helm's refusal to install a release whose record is left `pending-install` (helm pkg/action/install.go)."""


def helm_records(plane: ControlPlane, namespace: str, release: str) -> dict[str, str]:
    """Helm's release records (its storage Secrets, owner=helm) of `release`: name → status."""
    found = plane.api("GET", f"/api/v1/namespaces/{namespace}/secrets?labelSelector=owner%3Dhelm%2Cname%3D{release}")
    return {s["metadata"]["name"]: s["metadata"]["labels"]["status"] for s in found["items"]}


def test_an_up_killed_during_a_helm_wait_recovers_by_cancel_refresh_and_up(
    stack: Stack, control_plane: ControlPlane
) -> None:
    runtime_class = control_plane.api("GET", f"/apis/node.k8s.io/v1/runtimeclasses/{HELD_BY}")
    control_plane.api("DELETE", f"/apis/node.k8s.io/v1/runtimeclasses/{HELD_BY}")
    proc = stack.start("up")
    try:
        wait_for("the HAMi release's pending create", lambda: any(HAMI_RELEASE in p for p in pending(stack)))
        time.sleep(3)  # Helm has made the release's objects and waits on its DaemonSet
    finally:
        Stack.kill(proc)
    left = pending(stack)
    records = helm_records(control_plane, "hami-system", "hami")
    print(f"killed: pending operations {left}; {len(locks(stack))} lock file(s); Helm's records {records}")
    stack.transcript.append(f"$ pulumi up --stack {stack.name}   (SIGKILL during the HAMi release's Helm wait)\n"
                            f"pending operations: {left}\nHelm's records of hami: {records}\n")  # fmt: skip
    assert left == [f"{HAMI_RELEASE} creating"]
    assert len(locks(stack)) == 1
    assert list(records.values()) == ["pending-install"]
    control_plane.api("POST", "/apis/node.k8s.io/v1/runtimeclasses", {
        "apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": HELD_BY},
        "handler": runtime_class["handler"],
    })  # fmt: skip

    # docs/troubleshooting.md, An interrupted `up`: the lock first.
    locked = stack.run("up")
    assert LOCKED in locked.get("error", ""), locked.get("error")
    cancel = stack.cli("cancel", "--yes")
    assert cancel.returncode == 0 and not locks(stack), cancel.stderr
    # Without the refresh the CLI warns and goes on; the release's create meets Helm's record of the first try.
    over = stack.run("up")
    assert any(PENDING_WARNING in d for d in over["diagnostics"]), over["diagnostics"]
    assert NAME_IN_USE in over.get("error", ""), over.get("error")
    refresh = stack.run("refresh", "--clear-pending-creates")
    assert "error" not in refresh, refresh["error"]
    assert pending(stack) == []
    again = stack.run("up")
    assert NAME_IN_USE in again.get("error", ""), again.get("error")  # the refresh cannot see Helm's record
    # Helm's record of the interrupted install, and only that one (kubectl delete secret -l ...,status=pending-install).
    for name in records:
        control_plane.api("DELETE", f"/api/v1/namespaces/hami-system/secrets/{name}")
    up = stack.run("up")
    assert "error" not in up, up["error"]
    assert list(helm_records(control_plane, "hami-system", "hami").values()) == ["deployed"]
    still = stack.run("preview", "--expect-no-changes")
    assert "error" not in still, still["error"]
