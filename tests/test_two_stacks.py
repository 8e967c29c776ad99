"""Two stacks on one cluster: every object name the program chooses, cluster-wide or in a namespace both may
use, carries the stack, so neither stack's `up` meets the other's objects."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from components.plan import ROOT, Plan, run

SECOND = (
    "gpushare:hami.namespace=hami-b",
    "gpushare:gpuOperator.namespace=gpu-operator-b",
    "gpushare:verify.namespace=gpushare-proof-b",
)
"""A second stack's own namespaces: a Namespace is itself cluster-wide, so no two stacks can share one."""


def _as_stack(tmp_path: Path, name: str) -> Path:
    """The project with the `cluster` stack file under another stack's name."""
    for entry in ("Pulumi.yaml", "__main__.py", "examples"):
        (tmp_path / entry).symlink_to(ROOT / entry)
    shutil.copy(ROOT / "Pulumi.cluster.yaml", tmp_path / f"Pulumi.{name}.yaml")
    return tmp_path


def object_names(plan: Plan) -> dict[tuple[str, str, str], str]:
    """(kind, namespace or "" when cluster-wide, name) → the resource, for every object the stack creates.

    Patches are left out: they create nothing, each stack's server-side apply owns its own fields."""
    found: dict[tuple[str, str, str], str] = {}
    for resource in plan.resources:
        kind = resource["type"].rsplit(":", 1)[-1]
        if not resource["type"].startswith("kubernetes:") or kind.endswith("Patch"):
            continue
        inputs: dict[str, Any] = resource["inputs"]
        meta = inputs.get("metadata") or inputs  # a Helm release names itself at the top level
        found[(kind, str(meta.get("namespace") or ""), str(meta["name"]))] = resource["name"]
    return found


def test_two_stacks_on_one_cluster_share_no_object_name(tmp_path: Path) -> None:
    first = run("cluster")
    second = run("cluster-team-b", list(SECOND), root=_as_stack(tmp_path, "cluster-team-b"))
    ours, theirs = object_names(first), object_names(second)
    assert len(ours) > 20 and len(theirs) == len(ours)
    assert sorted(set(ours) & set(theirs)) == []
    # The gates' roles and the guard are cluster-wide, the server-version gate's Job sits in `default`.
    scoped = {name for kind, _, name in theirs if kind in ("ClusterRole", "ValidatingAdmissionPolicy", "Job")}
    assert scoped and all(name.endswith("-cluster-team-b") or name.startswith("gpushare-proof-b") for name in scoped)


def test_any_stack_name_gives_a_dns_label_of_its_own() -> None:
    import re

    from components.contracts.names import stack_scoped

    names = {
        stack: stack_scoped("hami-server-version", stack)
        for stack in ("k3s", "Prod_EU", "prod-eu", "dev.team", "a" * 80, "a" * 81)
    }
    assert names["k3s"] == "hami-server-version-k3s"
    assert all(re.fullmatch(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?", n) for n in names.values()), names
    assert len(set(names.values())) == len(names)  # Prod_EU and prod-eu, 80 and 81 a's: still apart


CHART_WIDE = {
    "cluster-hami.yaml": {("ClusterRole", "hami-scheduler"), ("MutatingWebhookConfiguration", "hami-webhook")},
    "cluster-gpu-operator.yaml": {("ClusterPolicy", "cluster-policy"), ("ClusterRole", "gpu-operator")},
}
"""Cluster-wide objects the pinned charts create whatever stack installs them: HAMi's from its release name
(hami-2.10.0 templates/_helpers.tpl `hami-vgpu.fullname`), the GPU Operator's fixed (gpu-operator-v26.7.0
templates/clusterpolicy.yaml `name: cluster-policy`, clusterrole.yaml `name: gpu-operator`)."""


def test_a_second_stack_on_one_cluster_installs_the_same_cluster_wide_chart_objects_so_it_is_not_supported(
    tmp_path: Path, rendered_dir: Path
) -> None:
    import yaml

    first = run("cluster")
    second = run("cluster-team-b", list(SECOND), root=_as_stack(tmp_path, "cluster-team-b"))
    releases = [
        {
            r["inputs"]["chart"]: r["inputs"]["name"]
            for r in plan.resources
            if r["type"] == "kubernetes:helm.sh/v3:Release"
        }
        for plan in (first, second)
    ]
    # The same release names in other namespaces: Helm renders the same cluster-wide names for both ...
    assert releases[0] == releases[1] and {"hami", "gpu-operator"} <= set(releases[0])
    for manifest, names in CHART_WIDE.items():
        docs = [d for d in yaml.safe_load_all((rendered_dir / manifest).read_text()) if d]
        rendered = {(d["kind"], d["metadata"]["name"]) for d in docs}
        assert names <= rendered, manifest
    # ... so the second `up` meets Helm's ownership check on them (docs/stacks.md, Two stacks on one cluster).
