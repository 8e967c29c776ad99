"""The facts the chart and lab checks read (tests/facts/) are what ../shared holds, where a clone has it."""

from __future__ import annotations

import json
from pathlib import Path

from components.chart_images import CHARTS
from tests.facts import regenerate
from tests.helpers.helm_values import has_reference


def test_committed_facts_are_regenerated_from_the_pinned_charts_and_the_labs(charts_dir: Path, seeds_dir: Path) -> None:
    shared = charts_dir.parent.parent
    assert seeds_dir.parent == shared
    stale = [str(p) for p, text in regenerate.rendered(shared).items() if not p.is_file() or p.read_text() != text]
    assert not stale, "run: python -m tests.facts.regenerate"


def test_every_chart_the_image_table_pins_has_its_facts_committed() -> None:
    missing = [f"{t.chart}-{t.version}" for t in CHARTS.values() if not has_reference(f"{t.chart}-{t.version}")]
    assert not missing


def test_chart_facts_keep_a_multi_line_default_as_its_length_only() -> None:
    facts = json.loads((regenerate.CHARTS / "hami-2.9.0.json").read_text())
    config = facts["values"]["devicePlugin"]["nodeConfiguration"]["config"]
    assert config.startswith("<multi-line string, ") and config.endswith(" characters, not copied>")
    assert facts["chart"] == "hami-2.9.0" and len(facts["sha256"]) == 64


def test_image_maps_of_a_chart_are_its_maps_with_a_repository() -> None:
    values = {"a": {"image": {"repository": "r", "tag": "t"}}, "b": {"initImage": {"name": "n"}}, "c": {"x": 1}}
    assert regenerate.image_maps(values) == [["a", "image"], ["b", "initImage"]]
