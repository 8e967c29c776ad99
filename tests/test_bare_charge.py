"""A bare run (no library loaded) reports no context charge: with nothing enforcing a quota, what the card refused
is the neighbour's memory, not a charge. Judged from the recorded bare runs on the H200."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from components.incluster import judge
from components.verify.host import neighbours, record
from tests.conftest import ROOT

BARE = sorted(p.parent for p in (ROOT / "docs" / "host-proof" / "h200").rglob("*-bare/expect.json"))


def _findings(folder: Path) -> list[dict[str, Any]]:
    verdict = json.loads((folder / "verdict.json").read_text())
    outputs = {p: o for p, o in json.loads((folder / "evidence.json").read_text()).items() if p != "alone"}
    expect = neighbours.fitted(record._expectation(folder, verdict), outputs)
    return judge.judge(expect, {"pods": neighbours.pod_logs(outputs)})["findings"]


def test_a_bare_run_whose_card_refused_below_the_quota_is_among_the_records() -> None:
    """The case the fix is for: final-26/k3s-bare's Pod B was refused at 5009 MiB of an 8000 MiB quota."""
    outputs = json.loads((ROOT / "docs/host-proof/h200/final-26/k3s-bare/evidence.json").read_text())
    memory = outputs["gpushare-proof-b"]["memory"]
    assert memory["preload"]["mapped"] == [] and memory["largest_alloc_mib"] < memory["expected_limit_mib"]


@pytest.mark.parametrize("folder", BARE, ids=lambda p: str(p.relative_to(ROOT / "docs" / "host-proof" / "h200")))
def test_no_bare_run_reports_a_context_charge(folder: Path) -> None:
    charges = [f for f in _findings(folder) if f["id"] == "context-charge"]
    assert charges, "every Pod still names the finding"
    for found in charges:
        assert found["bypassed"] is None and not re.search(r"charged \d+ MiB", found["observed"]), found
        assert "nothing enforces a quota" in found["why"]
