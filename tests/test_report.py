"""The Markdown report: a judged run, a failing run with ghost quota, and the offline plan."""

from __future__ import annotations

from components.incluster import judge, message
from components.verify import report
from tests.helpers.recorded import load


def test_report_of_a_passing_run_says_what_was_asked_and_seen() -> None:
    expect, evidence = load("cluster")
    verification = message.expand(message.decode(message.encode(judge.judge(expect, evidence))), expect)
    text = report.render(verification, expect)
    assert "**Result: PASSED** — 8 of 8 checks passed." in text
    assert "**4000 MiB** and **30%** of the compute of one GPU with **15360 MiB**" in text
    assert text.count("✅ pass") == 8 and "❌" not in text
    assert all(f"**{f['id']}** in `{f['pod']}`" in text for f in verification["findings"])
    assert "Mechanism: `hami-core`" in text
    assert "No Pod holds HAMi quota without running." in text
    assert "not MIG" in text


def test_report_of_a_failing_run_names_the_failing_checks_and_the_ghost_quota() -> None:
    expect, evidence = load("cluster")
    pod = evidence["pods"]["gpu-slice-b"]
    pod.update(phase="Pending", logs="")
    pod["containerStatuses"] = [{"name": "probe", "state": {"waiting": {"reason": "ImagePullBackOff"}}}]
    text = report.render(judge.judge(expect, evidence), expect)
    assert "**Result: FAILED**" in text and "`same-gpu`" in text
    assert "❌ fail" in text
    assert "| `gpu-slice-b` | ImagePullBackOff | node | 4000 MiB | 30% |" in text


def test_report_escapes_table_cells() -> None:
    expect, _ = load("kai")
    verification = {
        "passed": False,
        "checks": [{"id": "same-gpu", "title": "t", "passed": False, "expected": "a|b", "observed": "x\ny"}],
        "findings": [],
    }
    text = report.render(verification, expect)
    assert "| a\\|b | x y |" in text


def test_report_of_the_offline_plan_is_planned_not_yet_run() -> None:
    expect, _ = load("kai")
    verification = {"passed": None, "checks": judge.planned_checks(expect), "findings": []}
    text = report.render(verification, expect)
    assert "**Planned, not yet run.**" in text
    assert "Result:" not in text and "✅" not in text and "❌" not in text
    assert text.count("⏳ planned") == len(expect.checks)
    assert "4147 MiB in each Pod (the card has 15360)" in text
    assert "not MIG" in text
