"""Dependency floors match the SDK features the program uses, and constraints.txt pins a set inside them."""

from __future__ import annotations

import re
import tomllib

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from components.pulumi_internals import READ_AGAINST
from tests.conftest import ROOT

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
REQUIREMENTS = [Requirement(r) for r in PYPROJECT["project"]["dependencies"]] + [
    Requirement(r) for group in PYPROJECT["project"]["optional-dependencies"].values() for r in group
]
PINS = {
    canonicalize_name(name): Version(version)
    for name, version in re.findall(r"^([A-Za-z0-9_.-]+)==(\S+)$", (ROOT / "constraints.txt").read_text(), re.M)
}
FEATURE_FLOORS = {
    # what the program writes: (package, the first release that has it)
    "replacement_trigger=": ("pulumi", "3.214.0"),
    "host_key=": ("pulumi-command", "1.1.0"),
    "logging=": ("pulumi-command", "0.11.1"),
    "cluster_identifier=": ("pulumi-kubernetes", "4.17.1"),
    "jsonpath={.status[?@": ("pulumi-kubernetes", "4.24.0"),  # an RFC 9535 filter in waitFor
    "pulumi.com/replaceUnready": ("pulumi-kubernetes", "3.2.0"),
}
SOURCE = "\n".join(p.read_text() for p in sorted((ROOT / "components").rglob("*.py")))


def floor(package: str) -> Version:
    (requirement,) = [r for r in REQUIREMENTS if canonicalize_name(r.name) == canonicalize_name(package)]
    lows = [Version(s.version) for s in requirement.specifier if s.operator in (">=", "==", "~=")]
    assert lows, f"{package} has no floor in pyproject.toml"
    return max(lows)


@pytest.mark.parametrize("feature", sorted(FEATURE_FLOORS))
def test_floor_allows_no_release_without_a_feature_the_program_uses(feature: str) -> None:
    package, first = FEATURE_FLOORS[feature]
    assert feature in SOURCE, f"{feature} is no longer used: drop it from FEATURE_FLOORS"
    assert floor(package) >= Version(first), f"{package} must be >={first}: the program uses {feature}"


def test_constraints_pin_every_dependency_inside_its_range() -> None:
    for requirement in REQUIREMENTS:
        pinned = PINS.get(canonicalize_name(requirement.name))
        assert pinned is not None, f"constraints.txt pins no {requirement.name}"
        assert requirement.specifier.contains(pinned, prereleases=True), f"{requirement.name}=={pinned}: {requirement}"


def test_constraints_pin_the_sdks_the_private_names_were_read_against() -> None:
    assert {name: str(PINS[canonicalize_name(name)]) for name in READ_AGAINST} == READ_AGAINST


def test_every_page_gives_the_floor_one_reason_the_feature_table_backs() -> None:
    """pyproject.toml's comment and the README name the feature that sets each floor, at FEATURE_FLOORS' release."""
    for package, text in (("pulumi-kubernetes", "filter in a `waitFor` expression"),):
        first = max((Version(v) for feature, (p, v) in FEATURE_FLOORS.items() if p == package), default=None)
        assert first is not None and floor(package) == Version(f"{first.major}.{first.minor}")
        line = next(line for line in (ROOT / "pyproject.toml").read_text().splitlines() if f'"{package}>=' in line)
        assert f"waitFor ({first})" in line, line
        readme = (ROOT / "README.md").read_text()
        assert f"{package} {first.major}.{first.minor} for the {text}" in readme
