"""Every import points one way: config → platform → gpu → verify → outputs, contracts on the ground floor."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import ROOT

COMPONENTS = ROOT / "components"
FORBIDDEN = {
    "contracts": ("components.config", "components.compose", "components.platform", "components.gpu",
                  "components.verify"),
    "platform": ("components.config", "components.compose", "components.gpu", "components.verify"),
    "gpu": ("components.config", "components.compose", "components.platform", "components.verify"),
    "verify": ("components.config", "components.compose", "components.platform", "components.gpu"),
    # What runs inside Pods is mounted alone: it imports nothing of the program.
    "incluster": ("components.config", "components.compose", "components.platform", "components.gpu",
                  "components.verify", "components.contracts"),
}  # fmt: skip


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
    return found


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_layer_imports_nothing_above_it(layer: str) -> None:
    for path in sorted((COMPONENTS / layer).rglob("*.py")):
        wrong = {m for m in imported_modules(path) for f in FORBIDDEN[layer] if m == f or m.startswith(f + ".")}
        assert not wrong, f"{path.relative_to(ROOT)} imports {sorted(wrong)}"


def test_config_imports_only_the_ground_floor() -> None:
    above = ("components.compose", "components.platform", "components.gpu", "components.verify")
    wrong = {m for m in imported_modules(COMPONENTS / "config.py") for f in above if m == f or m.startswith(f + ".")}
    assert not wrong


def test_no_component_asserts_what_config_already_guarantees() -> None:
    offenders = [str(p.relative_to(ROOT)) for p in COMPONENTS.rglob("*.py") if "assert cfg" in p.read_text()]
    assert offenders == []
