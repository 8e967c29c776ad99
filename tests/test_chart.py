"""Every chart goes in the same way: pinned, in a namespace the stack owns (never a shared one), Helm waiting."""

from __future__ import annotations

import pytest

from tests.conftest import STACKS

RELEASE = "kubernetes:helm.sh/v3:Release"


@pytest.mark.parametrize("stack", STACKS)
def test_every_release_waits_and_sits_in_a_namespace_destroy_removes(stack: str, plan_stack) -> None:
    plan = plan_stack(stack)
    namespaces = {r["inputs"]["metadata"]["name"]: r["name"] for r in plan.find("kubernetes:core/v1:Namespace")}
    for release in plan.find(RELEASE):
        inputs = release["inputs"]
        assert inputs.get("skipAwait") is not True and inputs.get("waitForJobs") is True, release["name"]
        assert "createNamespace" not in inputs  # Helm's namespace would outlive `pulumi destroy`
        if inputs["namespace"] in ("kube-system", "default"):
            assert inputs["namespace"] not in namespaces
        else:
            assert namespaces[inputs["namespace"]] in release["dependsOn"], release["name"]
