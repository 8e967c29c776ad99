"""The pull-request preview can reach each stack it previews: the credentials and the tools its kubeconfig runs."""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml

from tests.conftest import ROOT

WORKFLOW = yaml.safe_load((ROOT / ".github" / "workflows" / "preview.yml").read_text())
PREVIEW_STEPS: list[dict[str, Any]] = WORKFLOW["jobs"]["preview"]["steps"]


def runs_for(step: dict[str, Any], stack: str) -> bool:
    """Whether a step's `if` admits `stack` when the repository has its credentials."""
    condition = step.get("if")
    if condition is None:
        return True
    python = (
        condition.replace("&&", " and ")
        .replace("||", " or ")
        .replace("env.CAN_PREVIEW", "'true'")
        .replace("matrix.stack", repr(stack))
    )
    assert re.fullmatch(r"[\w\s'=!()-]+", python), f"cannot read the condition {condition!r}"
    return bool(eval(python))  # a condition built only from the literals above


def steps_before_preview(stack: str) -> list[dict[str, Any]]:
    index = next(i for i, s in enumerate(PREVIEW_STEPS) if str(s.get("uses", "")).startswith("pulumi/actions@"))
    assert runs_for(PREVIEW_STEPS[index], stack)
    return [s for s in PREVIEW_STEPS[:index] if runs_for(s, stack)]


def stacks_on(*platforms: str) -> list[str]:
    """The stacks whose stack file sets one of these platforms."""
    found = {
        p.name.removeprefix("Pulumi.").removesuffix(".yaml"): yaml.safe_load(p.read_text())["config"]
        for p in ROOT.glob("Pulumi.*.yaml")
    }
    return sorted(stack for stack, config in found.items() if config["gpushare:platform"] in platforms)


GKE_STACKS = stacks_on("gke")


def test_every_gke_stack_is_found() -> None:
    assert {"gke", "gke-mps", "gke-time-sharing"} <= set(GKE_STACKS)


@pytest.mark.parametrize("stack", stacks_on("gke", "k3s-vm"))
def test_gcp_stacks_are_previewed_with_the_service_accounts_credentials(stack: str) -> None:
    uses = [str(s.get("uses", "")) for s in steps_before_preview(stack)]
    assert any(u.startswith("google-github-actions/auth@") for u in uses)


@pytest.mark.parametrize("stack", GKE_STACKS)
def test_gke_preview_installs_the_auth_plugin_its_kubeconfig_runs(stack: str) -> None:
    from components.platform.kubeconfig import GKE_AUTH_PLUGIN

    setup = [s for s in steps_before_preview(stack) if str(s.get("uses", "")).startswith("google-github-actions/setup")]
    assert setup and GKE_AUTH_PLUGIN in setup[0]["with"]["install_components"]
    assert not [s for s in steps_before_preview("cluster") if "setup-gcloud" in str(s.get("uses", ""))]


def test_cluster_preview_writes_the_kubeconfig_the_stack_file_points_at() -> None:
    stack_file = yaml.safe_load((ROOT / "Pulumi.cluster.yaml").read_text())
    path = stack_file["config"]["gpushare:cluster"]["kubeconfigPath"]
    written = " ".join(str(s.get("run", "")) for s in steps_before_preview("cluster"))
    assert f"> {path}" in written


def test_every_install_uses_the_constraints_file() -> None:
    installs = [
        s["run"]
        for job in WORKFLOW["jobs"].values()
        for s in job.get("steps", [])
        if "pip install" in str(s.get("run", ""))
    ]
    assert installs and all("-c constraints.txt" in run for run in installs)
