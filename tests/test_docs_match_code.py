"""What docs/configuration.md, verification.md and the README say the code does, derived from the code."""

from __future__ import annotations

from typing import Any

from tests.conftest import ROOT

QUEUE = "kubernetes:scheduling.run.ai/v2:Queue"
RELEASE = "kubernetes:helm.sh/v3:Release"


def _queues(plan: Any) -> tuple[list[str], bool]:
    made = sorted(r["inputs"]["metadata"]["name"] for r in plan.resources if r["type"] == QUEUE)
    return made, plan.one(RELEASE, "kai-release")["inputs"]["values"]["defaultQueue"]["createDefaultQueue"]


def test_the_stack_owns_the_queues_unless_delete_kept_queues_is_false(plan_stack: Any) -> None:
    row = next(line for line in (ROOT / "docs" / "configuration.md").read_text().splitlines()
               if line.startswith("| `gpushare:kai.parentQueue`"))  # fmt: skip
    assert "the stack creates both and deletes them on destroy" in row and "`deleteKeptQueues` false" in row
    assert _queues(plan_stack("gke")) == (["default-parent-queue", "default-queue"], False)
    assert _queues(plan_stack("gke", "gpushare:kai.deleteKeptQueues=false")) == ([], True)


def test_the_configuration_page_points_at_the_pre_check_where_it_is() -> None:
    row = next(line for line in (ROOT / "docs" / "configuration.md").read_text().splitlines()
               if line.startswith("| `gpushare:toolkit` | existing"))  # fmt: skip
    assert "the pre-check in docs/stacks.md" in row
    assert "### 1. The pre-check" in (ROOT / "docs" / "stacks.md").read_text()
