"""Every text in tests/facts/yaml_v3/cases.json reads as gopkg.in/yaml.v3 v3.0.1 reads it (decoded.json, written by
the Go program beside it): tabs, escapes, directives, tags, merge keys, timestamps and numbers alike."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.config.misread import misread
from components.config.stack_yaml import YamlError, as_program_sees, load
from components.plan import main
from tests.conftest import ROOT

FACTS: list[dict[str, Any]] = json.loads((ROOT / "tests/facts/yaml_v3/decoded.json").read_text())


def _ours(text: str) -> tuple[Any, bool]:
    try:
        document = load(text)
        return json.loads(json.dumps(as_program_sees(document, "x") if document is not None else None)), True
    except (yaml.YAMLError, YamlError):
        return None, False


@pytest.mark.parametrize("fact", FACTS, ids=[repr(f["text"])[:60] for f in FACTS])
def test_a_stack_file_reads_as_yaml_v3_reads_it(fact: dict[str, Any]) -> None:
    value, read = _ours(fact["text"])
    assert read == ("error" not in fact), fact.get("error") or "yaml.v3 reads it"
    if read:
        assert value == fact.get("value")


def test_the_facts_hold_refusals_and_readings_of_tabs() -> None:
    tabbed = [f for f in FACTS if "\t" in f["text"]]
    assert any("error" in f for f in tabbed) and any("error" not in f for f in tabbed)


STACK_FILES = [
    # (stack file, the key its refusal names, the fix it gives)
    ("config:\n  gpushare:platform: gke\n  gpushare:verify:\n    sliceMiB: 4000\n\tholdSeconds: 30\n",
     "gpushare:verify", "indent with spaces"),
    ("config:\n  gpushare:platform: gke\n  gpushare:verify:\n    sliceMiB: |\n      \tx\n",
     "gpushare:verify.sliceMiB", "indent with spaces"),
    ("config:\n  gpushare:platform: gke\n  gpushare:verify:\n    sliceMiB: 1\n    sliceMiB: 2\n",
     "gpushare:verify.sliceMiB", "keep one"),
    ("config:\n  gpushare:platform: gke\n  verify:\n    <<: 5\n", "gpushare:verify.<<", "fix the value"),
    ("config:\n  gpushare:platform: gke\n  gpushare:gke:\n    zone: !!int abc\n", "gpushare:gke.zone", "fix the value"),
    ("config:\n  gpushare:platform: gke\n  gpushare:verify: &v {sliceMiB: [*v]}\n", "gpushare:verify", "fix"),
]  # fmt: skip


@pytest.mark.parametrize(("text", "full_key", "fix"), STACK_FILES, ids=[s[1] for s in STACK_FILES])
def test_a_stack_file_yaml_v3_refuses_is_refused_naming_the_key_it_breaks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, full_key: str, fix: str
) -> None:
    (tmp_path / "Pulumi.s.yaml").write_text(text)
    (tmp_path / "__main__.py").write_text((ROOT / "__main__.py").read_text())
    assert main(["s", "--root", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: Pulumi.s.yaml ({full_key}): ") and len(err.splitlines()) == 1 and fix in err


_PLAIN = re.compile(r"config:\n  gpushare:v: ([0-9A-Za-z+.~-][ -~]*)\n")
"""A fact whose one value is a plain, single-line, printable scalar (no tag, quote, flow or comment)."""


def _told_otherwise(written: str, value: Any) -> bool:
    """What yaml.v3 hands on differs from the scalar as written: a date as Go's time text, a leading 0 as octal."""
    if isinstance(value, str):
        return value != written
    decimal = re.fullmatch(r"[-+]?0[0-9_]+", written)
    return bool(decimal) and isinstance(value, int) and value != int(written.replace("_", ""))


PLAIN = [
    (m[1], f["value"]["config"]["gpushare:v"])
    for f in FACTS
    if "value" in f and (m := _PLAIN.fullmatch(f["text"])) and "#" not in m[1]
    and not isinstance(f["value"]["config"]["gpushare:v"], (dict, list))
]  # fmt: skip


@pytest.mark.parametrize(("written", "value"), PLAIN, ids=[p[0][:40] for p in PLAIN])
def test_a_plain_scalar_is_refused_exactly_where_yaml_v3_reads_a_date_or_an_octal(written: str, value: Any) -> None:
    found = misread(load(f"v: {written}\n")["v"], "gpushare:v")
    assert (found is not None) == _told_otherwise(written, value), f"yaml.v3 hands on {value!r}"


def test_the_facts_hold_dates_and_octals_both_refused_and_read() -> None:
    told = [written for written, value in PLAIN if _told_otherwise(written, value)]
    assert any(w.startswith("2026-") for w in told) and any(w.lstrip("+-").startswith("0") for w in told)
    assert {"0o17", "08", "00"} <= {w for w, v in PLAIN if not _told_otherwise(w, v)}
