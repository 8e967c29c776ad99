"""One count of a plan, named the same in the tree, the Markdown summary, the pull-request comment and the
policy harness: every resource the program registers (custom resources, components, explicit providers)."""

from __future__ import annotations

import pytest

from components.plan_view import comment, markdown, text
from components.plan_view.fields import role
from policies import harness


@pytest.mark.parametrize("stack", ["gke", "k3s", "cluster"])
def test_every_view_counts_the_plan_as_its_registered_resources(plan_stack, stack: str, capsys, monkeypatch) -> None:
    plan = plan_stack(stack)
    total, counts = len(plan.resources), plan.counts()
    assert counts["resources"] == total == counts["resource"] + counts["component"] + counts["provider"]
    shown = plan.count_text()
    assert shown.startswith(f"{total} resources (")
    assert text.render(plan).splitlines()[0] == f"stack {stack}: {shown}"
    assert shown in markdown.render(plan)
    monkeypatch.setattr(comment, "run", lambda name: plan)
    assert f"<summary>{stack}: {total} resources</summary>" in comment.render([stack])
    monkeypatch.setattr("components.plan.run", lambda name, overrides=None: plan)
    harness.main([stack])
    assert capsys.readouterr().out.splitlines()[-1].startswith(f"{shown}: ")


def test_a_cluster_role_on_an_api_path_shows_the_path_in_the_tree() -> None:
    rules = {
        "rules": [
            {"nonResourceURLs": ["/version"], "verbs": ["get"]},
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
        ]
    }
    assert dict(role({"metadata": {"name": "gate"}, **rules}))["may"] == "get /version\nlist pods"
