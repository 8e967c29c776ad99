"""Every import points one way: config → platform → gpu → verify → outputs, contracts on the ground floor."""

from __future__ import annotations

import ast
import subprocess
import sys
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


SETTINGS = sorted(COMPONENTS.glob("*/settings.py"))
"""The sections a component takes and config validates, one module per layer."""


def test_config_imports_only_the_ground_floor_and_the_sections_beside_the_components() -> None:
    above = ("components.compose", "components.platform", "components.gpu", "components.verify")
    for path in sorted((COMPONENTS / "config").glob("*.py")):
        wrong = {
            m
            for m in imported_modules(path)
            for f in above
            if (m == f or m.startswith(f + ".")) and not (m.endswith(".settings") or ".settings." in m)
        }
        assert not wrong, f"{path.relative_to(ROOT)} imports {sorted(wrong)}"


def test_each_layer_declares_its_sections_beside_its_components() -> None:
    assert [p.parent.name for p in SETTINGS] == ["contracts", "gpu", "platform", "verify"]


@pytest.mark.parametrize("path", SETTINGS, ids=[p.parent.name for p in SETTINGS])
def test_a_section_module_imports_no_pulumi_and_nothing_above_the_ground_floor(path: Path) -> None:
    allowed = ("components.validate", "components.contracts.settings", "components.gke_sharing")
    wrong = {
        m
        for m in imported_modules(path)
        if m.startswith(("pulumi", "components.")) and not m.startswith(allowed) and m != "components"
    }
    assert not wrong, f"{path.relative_to(ROOT)} imports {sorted(wrong)}"


def test_a_refusal_loads_neither_pulumi_nor_the_composition_layer() -> None:
    program = (
        "import sys\n"
        "from components.config import ConfigError, parse\n"
        "try:\n"
        "    parse({'gpushare:platform': 'gke', 'gpushare:verify': '{\"sliceMiB\": 0}'})\n"
        "except ConfigError as err:\n"
        "    print(err.key)\n"
        "print(sorted(m for m in sys.modules if m == 'pulumi' or m.startswith(('pulumi.', 'components.compose'))))\n"
    )
    out = subprocess.run([sys.executable, "-c", program], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == ["gpushare:verify.sliceMiB", "[]"]


def test_no_component_asserts_what_config_already_guarantees() -> None:
    offenders = [str(p.relative_to(ROOT)) for p in COMPONENTS.rglob("*.py") if "assert cfg" in p.read_text()]
    assert offenders == []
