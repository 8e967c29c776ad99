"""Two `cluster` stacks on one control plane (docs/day-two.md, Two stacks on one cluster), then a destroy after the
control plane is gone (docs/stacks.md: it fails, nothing is dropped, `pulumi stack rm --force` forgets the stack).
Last of the session (the file name): it stops the API server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from e2e.conftest import new_stack
from e2e.controlplane import ControlPlane
from e2e.stack import Stack


@pytest.fixture(scope="module")
def first(control_plane: ControlPlane, work: Path, chart_dirs: Path) -> Iterator[Stack]:
    yield new_stack(control_plane, work, chart_dirs, name="first", folder="first")


@pytest.fixture(scope="module")
def second(control_plane: ControlPlane, work: Path, chart_dirs: Path) -> Iterator[Stack]:
    s = new_stack(control_plane, work, chart_dirs, name="second", folder="second")
    cfg = s.config()
    # A second stack sets its own namespaces (docs/day-two.md); every other name carries the stack's name.
    s.set_config("gpushare:verify", {**cfg["gpushare:verify"], "namespace": "gpushare-proof-second"})
    s.set_config("gpushare:hami", {**cfg["gpushare:hami"], "namespace": "hami-second"})
    s.set_config("gpushare:gpuOperator", {**cfg["gpushare:gpuOperator"], "namespace": "gpu-operator-second"})
    yield s


OWNED_BY_ANOTHER_RELEASE = "exists and cannot be imported into the current release: invalid ownership metadata"
"""Helm's refusal of a cluster-scoped object another release made (the GPU Operator chart's NFD ClusterRole)."""


def test_a_second_stack_on_one_cluster_fails_at_the_first_chart_and_leaves_the_first_alone(
    first: Stack, second: Stack
) -> None:
    up = first.run("up")
    assert "error" not in up, up["error"]
    preview = second.run("preview")
    assert "error" not in preview, preview["error"]  # the preview refuses nothing: a chart's objects are Helm's
    up = second.run("up")
    assert OWNED_BY_ANOTHER_RELEASE in up.get("error", ""), up.get("error")
    gone = second.run("destroy")
    assert "error" not in gone, gone["error"]
    again = first.run("preview", "--expect-no-changes")
    assert "error" not in again, again["error"]


def test_destroy_after_the_control_plane_is_gone_fails_and_stack_rm_force_forgets(
    first: Stack, control_plane: ControlPlane
) -> None:
    control_plane.stop(("kwok", "kube-scheduler", "kube-controller-manager", "kube-apiserver"))
    result = first.run("destroy", timeout=600)
    assert "error" in result
    listed = first.cli("stack", "export")
    assert listed.returncode == 0 and '"kubernetes:helm.sh/v3:Release"' in listed.stdout  # nothing dropped
    removed = first.cli("stack", "rm", "--force", "--yes")
    assert removed.returncode == 0, removed.stderr
    assert first.cli("stack", "select").returncode != 0
