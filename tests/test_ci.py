"""`.ci/run` runs every offline check the pull-request workflow runs: lint, format, types, tests, golden plans and
the policy pack on each stack's offline plan."""

from __future__ import annotations

import re

import yaml

from tests.conftest import ROOT

CI = (ROOT / ".ci" / "run").read_text()
WORKFLOW = yaml.safe_load((ROOT / ".github" / "workflows" / "preview.yml").read_text())
TOOL = re.compile(r"\.venv/bin/(python -m [\w.]+|\w+(?: \w+)?)")
"""A command by its tool: `ruff check`, `mypy`, `python -m policies.harness`."""
POSTS = "python -m components.plan_view.comment"
"""The pull-request comment: only a pull request has one to post."""


def _tools(text: str) -> set[str]:
    return {m.group(1) for m in TOOL.finditer(text)}


def test_ci_runs_each_offline_check_of_the_pull_request_workflow() -> None:
    offline = "\n".join(str(step.get("run", "")) for step in WORKFLOW["jobs"]["offline"]["steps"])
    checks = _tools(offline) - {POSTS}
    assert {"ruff check", "ruff format", "mypy", "pytest", "python -m tests.golden.regenerate"} <= checks
    assert sorted(checks - _tools(CI)) == []


def test_ci_checks_the_golden_plans_without_writing_and_packs_every_configured_stack() -> None:
    assert ".venv/bin/python -m tests.golden.regenerate --check" in CI
    assert "for config in policies/config/*.json" in CI and "policies.harness" in CI
    assert CI.index(".venv/bin/pip install") < CI.index(".venv/bin/mypy") < CI.index(".venv/bin/pytest -q")
