"""docs/testing.md names every test module that can skip, and the plan pages' resource counts are the plan's."""

from __future__ import annotations

import re
from typing import Any

from tests.conftest import ROOT

SKIPS = re.compile(r"\b(charts|rendered|seeds)_dir\b|pytest\.mark\.skipif|pytest\.skip\(")
"""What makes a test skip: a fixture of ../shared (tests/conftest.py `_present`), or a skip of its own."""


def test_the_testing_page_names_every_module_that_can_skip() -> None:
    modules = sorted(f"tests/{p.name}" for p in (ROOT / "tests").glob("test_*.py") if SKIPS.search(p.read_text()))
    assert "tests/test_facts.py" in modules
    page = (ROOT / "docs" / "testing.md").read_text()
    listed = sorted(set(re.findall(r"^- `(tests/test_\w+\.py)`", page, re.M)))
    assert listed == modules


def test_the_plan_page_quotes_the_k3s_count(plan_stack: Any) -> None:
    page = (ROOT / "docs" / "plan.md").read_text()
    quoted = re.search(r"`k3s`'s `(\d+ resources \([^)]*\))`", page)
    assert quoted is not None and quoted.group(1) == plan_stack("k3s").count_text()


def test_the_comment_of_an_unchanged_stack_is_what_the_pull_request_page_says(plan_stack: Any) -> None:
    from components.plan_view import comment

    text = comment.render(["k3s"])  # against its own golden plan: no change
    assert "- k3s: no change" in text
    assert f"<details><summary>k3s: {plan_stack('k3s').count_text(parts=False)}</summary>" in text
    assert "```mermaid" not in text and "`hami-release`" not in text.split("</summary>")[0]
    page = (ROOT / "docs" / "pull-requests.md").read_text()
    assert "A stack that does not change gets one folded line" in page and "by name and no graph" in page
