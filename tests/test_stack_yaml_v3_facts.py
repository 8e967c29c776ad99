"""Every text in tests/facts/yaml_v3/cases.json reads as gopkg.in/yaml.v3 v3.0.1 reads it (decoded.json, written by
the Go program beside it): tabs, escapes, directives, tags, merge keys, timestamps and numbers alike."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from components.config.stack_yaml import YamlError, as_program_sees, load
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
