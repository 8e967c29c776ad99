"""What docs/configuration.md, verification.md and the README say the code does, derived from the code."""

from __future__ import annotations

import json
import re
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


VERDICT = "docs/host-proof/h200/final-26/repeat/k3s-hami-core-1/verdict.json"
VERDICT_MARK = f"<!-- verdict:{VERDICT} -->"
SHOWN_CHARS = 72


def _cut(text: str) -> str:
    return text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS].rsplit(" ", 1)[0].rstrip(",;:") + " …"


def verdict_block(path: str = VERDICT) -> str:
    """The README's excerpt of a recorded verdict: `passed`, the mechanism, each check's result and what it saw."""
    verdict = json.loads((ROOT / path).read_text())
    rows = [
        "  " + json.dumps({"id": c["id"], "passed": c["passed"], "observed": _cut(c["observed"])}, ensure_ascii=False)
        for c in verdict["checks"]
    ]
    head = f'{{"passed": {json.dumps(verdict["passed"])}, "mechanism": {json.dumps(verdict["mechanism"])}, "checks": ['
    return "\n".join(
        ["```json", head, ",\n".join(rows), f'], "findings": [… {len(verdict["findings"])} tries …]}}', "```"]
    )


def test_the_readme_shows_the_recorded_h200_verdict_as_recorded() -> None:
    readme = (ROOT / "README.md").read_text()
    assert VERDICT_MARK in readme
    shown = readme[readme.index(VERDICT_MARK) + len(VERDICT_MARK) :].lstrip("\n")
    assert shown.startswith(verdict_block() + "\n")


def _read_the_proof() -> str:
    readme = (ROOT / "README.md").read_text()
    return readme[readme.index("### Read the proof") : readme.index(VERDICT_MARK)]


def test_the_readme_names_every_check_in_the_registrys_order() -> None:
    from components.incluster.checks.registry import CHECKS

    named = re.findall(r"\(`([a-z-]+)`", _read_the_proof().split("the evidence:", 1)[1])
    assert named == [c.id for c in CHECKS]


def test_the_readme_lists_the_outputs_every_stack_exports(plan_stack: Any) -> None:
    from components.plan import EXAMPLE_STACKS

    common = set.intersection(*(set(plan_stack(s).outputs) for s in EXAMPLE_STACKS))
    readme = (ROOT / "README.md").read_text()
    sentence = readme[readme.index("Every stack also exports") :].split(". ")[0]
    named = set(re.findall(r"`(\w+)`", sentence)) | {"verification", "report", "isolationNote"}
    assert named == common


def test_the_verification_example_names_the_proof_pods_as_the_default_prefix_does() -> None:
    from components.verify.settings import VerifyConfig

    page = (ROOT / "docs" / "verification.md").read_text()
    example = page[page.index("## Reading `verification`") :].split("```")[1]
    prefix = VerifyConfig.model_fields["pod_prefix"].default
    pods = set(re.findall(r'"pod": "([^"]+)"|"evidence": "([a-z0-9-]+):', example))
    names = {name for pair in pods for name in pair if name}
    assert names == {f"{prefix}-a"}
