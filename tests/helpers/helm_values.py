"""Every Helm value we set must exist in the pinned chart's values.yaml: a typo'd key is silently ignored."""

from __future__ import annotations

import json
from typing import Any

from tests.facts.regenerate import CHARTS as CHART_FACTS

# Maps a chart's reference values are open under: any key may be set inside them.
_OPEN = (dict,)


def leaf_paths(values: dict[str, Any], prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Dotted paths of every value set; a dict is walked, anything else is a leaf."""
    paths: list[tuple[str, ...]] = []
    for key, value in values.items():
        path = (*prefix, key)
        if isinstance(value, dict) and value:
            paths.extend(leaf_paths(value, path))
        else:
            paths.append(path)
    return paths


def missing_paths(values: dict[str, Any], reference: dict[str, Any]) -> list[str]:
    """Paths in `values` that the reference does not have; inside an empty map of the reference, anything goes."""
    missing = []
    for path in leaf_paths(values):
        node: Any = reference
        for i, key in enumerate(path):
            if isinstance(node, dict) and key in node:
                node = node[key]
                continue
            if isinstance(node, dict) and not node and i > 0:
                break  # an open map such as nodeSelector: {} or labels: {}
            missing.append(".".join(path))
            break
    return missing


def chart_facts(chart_dir_name: str) -> dict[str, Any]:
    """The pinned chart's facts (tests/facts/charts/<chart>-<version>.json, from its values.yaml)."""
    return json.loads((CHART_FACTS / f"{chart_dir_name}.json").read_text())


def has_reference(chart_dir_name: str) -> bool:
    return (CHART_FACTS / f"{chart_dir_name}.json").is_file()


def load_reference(chart_dir_name: str) -> dict[str, Any]:
    """The pinned chart's values.yaml defaults, as tests/facts keeps them: `python -m tests.facts.regenerate`."""
    return chart_facts(chart_dir_name)["values"]


def image_maps(chart_dir_name: str) -> set[tuple[str, ...]]:
    """The paths of the maps in the pinned values.yaml that spell an image."""
    return {tuple(path) for path in chart_facts(chart_dir_name)["imageMaps"]}
