"""What runs inside Pods, in rooms a reader can find: at most ten modules at the package's top, each room's `__init__`
one line saying what lives there, no module over 400 lines, and every import pointing down: the probes import only
probes, the evidence record reads the probes' own definitions, the checks read only the record (never a probe, never
a raw line), and nothing in a room reads the top but the expectation."""

from __future__ import annotations

import ast

import pytest

from tests.conftest import ROOT
from tests.test_module_graph import import_graph

PACKAGE = "components.incluster"
INCLUSTER = ROOT / "components" / "incluster"
ROOMS = ("probes", "evidence", "checks")
MAX_LINES = 400
MAX_TOP_MODULES = 10
ALLOWED = {
    "probes": {"probes"},
    "evidence": {"evidence", "probes", "expectation"},
    "checks": {"checks", "evidence", "expectation"},
    "expectation": set(),
}
"""What each room (and the expectation, the contract both sides read) may import of the package."""
RAW = {f"{PACKAGE}.evidence.parse", f"{PACKAGE}.evidence.lines"}
"""The parsers of a Pod's raw text: the record's alone, never a check's."""


def room_of(module: str) -> str:
    """`components.incluster.checks.memory` → `checks`; a top module is its own room (`judge`)."""
    return module.removeprefix(f"{PACKAGE}.").split(".")[0] if module != PACKAGE else "__init__"


def wrong_way(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """Every (importer, imported) pair of the package's modules that points up, or sideways into another room."""
    found = []
    for module, imported in sorted(graph.items()):
        room = room_of(module)
        if not module.startswith(f"{PACKAGE}.") or room not in ALLOWED:
            continue
        for target in sorted(t for t in imported if t == PACKAGE or t.startswith(f"{PACKAGE}.")):
            raw = room == "checks" and target in RAW
            if raw or room_of(target) not in ALLOWED[room] | {room}:
                found.append((module, target))
    return found


def test_every_import_inside_the_package_points_down() -> None:
    graph = import_graph()
    assert sum(m.startswith(f"{PACKAGE}.") for m in graph) >= 40 and wrong_way(graph) == []


def test_the_direction_check_finds_a_probe_reading_a_check_and_a_check_reading_raw_lines() -> None:
    graph = {
        f"{PACKAGE}.probes.memory": {f"{PACKAGE}.checks.memory", f"{PACKAGE}.probes.cuda"},
        f"{PACKAGE}.checks.refusal": {f"{PACKAGE}.evidence.parse", f"{PACKAGE}.evidence.record"},
        f"{PACKAGE}.checks.neighbours": {f"{PACKAGE}.probes.fault"},
        f"{PACKAGE}.evidence.record": {f"{PACKAGE}.judge", f"{PACKAGE}.expectation"},
        f"{PACKAGE}.evidence.lines": {PACKAGE, f"{PACKAGE}.probes.process"},
        f"{PACKAGE}.judge": {f"{PACKAGE}.checks.registry", f"{PACKAGE}.evidence.record"},
    }
    assert wrong_way(graph) == [
        (f"{PACKAGE}.checks.neighbours", f"{PACKAGE}.probes.fault"),
        (f"{PACKAGE}.checks.refusal", f"{PACKAGE}.evidence.parse"),
        (f"{PACKAGE}.evidence.lines", PACKAGE),
        (f"{PACKAGE}.evidence.record", f"{PACKAGE}.judge"),
        (f"{PACKAGE}.probes.memory", f"{PACKAGE}.checks.memory"),
    ]


def test_the_package_keeps_at_most_ten_modules_at_its_top_and_its_three_rooms() -> None:
    top = sorted(p.name for p in INCLUSTER.glob("*.py"))
    rooms = sorted(p.parent.name for p in INCLUSTER.glob("*/__init__.py"))
    assert "__init__.py" in top and len(top) <= MAX_TOP_MODULES and rooms == sorted(ROOMS), (top, rooms)


@pytest.mark.parametrize("room", ROOMS)
def test_each_rooms_init_says_in_one_line_what_lives_there_and_holds_nothing_else(room: str) -> None:
    tree = ast.parse((INCLUSTER / room / "__init__.py").read_text())
    (only,) = tree.body
    assert isinstance(only, ast.Expr) and isinstance(only.value, ast.Constant), room
    assert isinstance(only.value.value, str) and "\n" not in only.value.value.strip(), room


def test_no_module_that_runs_inside_pods_exceeds_400_lines() -> None:
    files = sorted(INCLUSTER.rglob("*.py"))
    long = {str(p.relative_to(INCLUSTER)): n for p in files if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert len(files) >= 40 and long == {}
