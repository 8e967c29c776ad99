"""The verdict through the 4096-byte termination message: every check and every finding reaches `verification`."""

from __future__ import annotations

import copy
import hashlib
import json
from typing import Any

from components.incluster import judge, message
from components.verify import report
from tests.helpers.real_fixtures import REAL, real_outputs
from tests.helpers.recorded import load


def _bytes(text: str) -> int:
    return len(text.encode())


def test_a_verdict_that_fits_stays_plain_json_without_what_the_expectation_rebuilds() -> None:
    expect, evidence = load("k3s")
    result = judge.judge(expect, evidence)
    result["findings"] = result["findings"][:1]
    for c in result["checks"]:
        c["evidence"] = c["evidence"][:100]
    text = message.encode(result)
    assert _bytes(text) <= message.LIMIT_BYTES
    data = json.loads(text)
    assert tuple(c["id"] for c in data["checks"]) == expect.checks
    assert "title" not in data["checks"][0] and "expected" not in data["checks"][0]


def test_expand_restores_titles_and_expected_from_the_expectation() -> None:
    expect, evidence = load("k3s")
    result = judge.judge(expect, evidence)
    verification = message.expand(message.decode(message.encode(result)), expect)
    assert verification["passed"] is True
    assert [(c["id"], c["title"], c["expected"], c["passed"], c["observed"]) for c in verification["checks"]] == [
        (c["id"], c["title"], c["expected"], c["passed"], c["observed"]) for c in result["checks"]
    ]
    assert "cut" not in verification


def test_expand_fails_a_planned_check_the_verdict_does_not_mention() -> None:
    expect, evidence = load("k3s")
    compact = message.decode(message.encode(judge.judge(expect, evidence)))
    compact["checks"] = [c for c in compact["checks"] if c["id"] != "overcommit-rejected"]
    verification = message.expand(compact, expect)
    assert verification["passed"] is False
    assert next(c for c in verification["checks"] if c["id"] == "overcommit-rejected")["passed"] is False


def test_a_verdict_too_large_as_json_is_compressed_with_every_finding_whole() -> None:
    expect, evidence = load("cluster")
    result = judge.judge(expect, evidence)
    # The real findings, repeated per Pod and probe as a run with every finding on both Pods reports them.
    real = result["findings"]
    result["findings"] = [{**f, "pod": f"{f['pod']}-{i}"} for i in range(6) for f in real]
    plain = json.dumps(result, separators=(",", ":"))
    assert _bytes(plain) > message.LIMIT_BYTES
    text = message.encode(result)
    assert _bytes(text) <= message.LIMIT_BYTES and text.startswith(message.COMPRESSED)
    back = message.decode(text)
    assert back["findings"] == result["findings"]
    assert [c["evidence"] for c in back["checks"]] == [c["evidence"] for c in result["checks"]]
    assert "cut" not in back


def test_when_even_compression_is_not_enough_the_output_says_what_was_cut_and_where_the_whole_is() -> None:
    expect, evidence = load("cluster")
    result = copy.deepcopy(judge.judge(expect, evidence))
    # Incompressible text: hex of varied numbers, as long evidence strings would be at worst.
    for i, c in enumerate(result["checks"]):
        c["evidence"] = "".join(f"{(i * 7919 + j * 104729) % 65521:04x}" for j in range(800))
    findings = [{"pod": "p", "id": f"f{i}", "tried": "t", "observed": "o", "bypassed": True} for i in range(40)]
    result["findings"] = findings
    text = message.encode(result)
    assert _bytes(text) <= message.LIMIT_BYTES
    back = message.decode(text)
    assert [f["id"] for f in back["findings"]] == [f"f{i}" for i in range(40)]
    assert back["cut"] and "evidence" in back["cut"][0]
    assert "kind" in back["wholeVerdict"] and "verification" in back["wholeVerdict"]
    verification = message.expand(back, expect)
    assert verification["cut"] == back["cut"]
    text_report = report.render(verification, expect)
    assert "Shortened to fit the termination message" in text_report
    assert "the whole verdict is in the verifier Pod's log" in text_report
    assert "No probe reported a way around the limits" not in text_report


def test_a_tiny_limit_still_keeps_every_check_result_and_finding_id() -> None:
    expect, evidence = load("cluster")
    result = judge.judge(expect, evidence)
    text = message.encode(result, limit=1500)
    assert _bytes(text) <= 1500
    back = message.decode(text)
    assert tuple(c["id"] for c in back["checks"]) == expect.checks
    assert [f["id"] for f in back["findings"]] == [f["id"] for f in result["findings"]]
    assert back["wholeVerdict"]


def test_a_termination_message_that_is_neither_json_nor_compressed_is_refused() -> None:
    for text in ("not json", "z:!!!", "[1, 2]"):
        try:
            message.decode(text)
        except ValueError:
            continue
        raise AssertionError(f"{text!r} decoded")


def _worst_case(stack: str) -> tuple[Any, dict[str, Any]]:
    """`stack`'s recorded run judged with every check failing (its longest observations), carrying every finding
    the probes reported in any of the H200's host-proof runs (HAMi-core, MPS, bare), on every proof Pod, plus a
    Pod-level try that could not run: more than any one run of that stack can report."""
    expect, evidence = load(stack)
    for name in expect.pods:
        evidence["pods"][name]["phase"] = "Pending"  # every check fails, naming the Pod and why
    result = judge.judge(expect, evidence)
    recorded: dict[str, dict[str, Any]] = {}
    for record in sorted(p.name for p in REAL.iterdir() if p.is_dir()):
        for out in real_outputs(record).values():
            for probe, output in out.items():
                for f in output.get("findings") or []:
                    recorded.setdefault(f["id"], judge.finding(f, probe=probe))
    tries = [judge.finding({"id": "cuda-disable-control", "tried": "a Pod whose own spec sets CUDA_DISABLE_CONTROL"
                            "=true, asking for the same slice", "observed": "nothing measured",
                            "why": f"Pod {expect.pods[0]}-try has no memory probe result in its log (phase Pending)"},
                           pod=f"{expect.pods[0]}-try", probe="pod-try")]  # fmt: skip
    result["findings"] = [{**f, "pod": name} for name in expect.pods for f in recorded.values()] + tries
    return expect, result


def test_every_stacks_worst_case_verdict_fits_with_no_finding_dropped() -> None:
    for stack in ("cluster", "kai", "k3s"):
        expect, result = _worst_case(stack)
        text = message.encode(result)
        size = _bytes(text)
        assert size <= message.LIMIT_BYTES, (stack, size)
        back = message.decode(text)
        assert back["findings"] == result["findings"], stack
        assert "cut" not in back, (stack, back.get("cut"))
        assert tuple(c["id"] for c in back["checks"]) == expect.checks


def _flood(count: int) -> tuple[Any, dict[str, Any]]:
    """The recorded cluster run, passing, with `count` findings of incompressible ids: more than any message holds."""
    expect, evidence = load("cluster")
    result = copy.deepcopy(judge.judge(expect, evidence))
    assert result["passed"] is True
    result["findings"] = [{"pod": "gpu-slice-a", "id": f"{(i * 2654435761) % 4294967291:08x}-{i}", "tried": "t",
                           "observed": "o", "bypassed": True} for i in range(count)]  # fmt: skip
    return expect, result


def test_an_overflowing_verdict_keeps_passed_and_every_check_on_the_way() -> None:
    expect, result = _flood(2000)
    text = message.encode(result)
    assert _bytes(text) <= message.LIMIT_BYTES
    verification = message.expand(message.decode(text), expect)
    assert verification["passed"] is True
    assert [(c["id"], c["passed"]) for c in verification["checks"]] == [(c["id"], True) for c in result["checks"]]


def test_an_overflowing_verdict_counts_the_findings_it_could_not_show_and_names_the_whole_by_its_digest() -> None:
    expect, result = _flood(2000)
    back = message.decode(message.encode(result))
    shown = len(back.get("findings") or [])
    assert back["findingsNotShown"] == 2000 - shown > 0
    assert back["digest"] == message.digest(result)
    line = message.log_line(result)
    assert json.loads(line)["kind"] == "verification"
    assert "sha256:" + hashlib.sha256(line.encode()).hexdigest() == back["digest"]
    text_report = report.render(message.expand(back, expect), expect)
    assert f"{2000 - shown} of 2000 findings could not be shown here" in text_report
    assert back["digest"] in text_report
    assert "No probe reported a way around the limits" not in text_report
