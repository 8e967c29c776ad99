"""Small files with one job: every module of what runs inside Pods stays under 500 lines (one module per family)."""

from __future__ import annotations

from tests.conftest import ROOT

MAX_LINES = 500
INCLUSTER = ROOT / "components" / "incluster"


def test_no_module_that_runs_inside_pods_exceeds_500_lines() -> None:
    files = sorted(INCLUSTER.rglob("*.py"))
    long = {str(p.relative_to(INCLUSTER)): n for p in files if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert len(files) >= 40 and long == {}
