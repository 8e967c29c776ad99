"""Every Helm value we set must exist in the pinned chart's values.yaml: a typo'd key is silently ignored."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

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


def load_reference(charts_dir: Path, chart_dir_name: str) -> dict[str, Any]:
    path = charts_dir / chart_dir_name / "values.yaml"
    return yaml.safe_load(path.read_text())
