"""The release's version means something and is one everywhere, and docs/compatibility.md names the versions the
code and the stack files pin, each with how it was tested."""

from __future__ import annotations

import re
import tomllib
from typing import Any

import pytest
import yaml

from components import config, config_doc
from components.plan import EXAMPLE_STACKS, read_stack_config
from components.versions import UNKNOWN_VERSION, gpushare_version
from tests.conftest import ROOT

PAGE = ROOT / "docs" / "compatibility.md"
SEMVER = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$")
TESTED_HOW = ("mock", "rendered by Helm", "real engine: pending", "H200 host proof")
PINS = dict(re.findall(r"^([A-Za-z0-9_.-]+)==(\S+)$", (ROOT / "constraints.txt").read_text(), re.M))
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _rows() -> list[dict[str, str]]:
    lines = [line for line in PAGE.read_text().splitlines() if line.startswith("| ") and "---" not in line]
    head = [c.strip() for c in lines[0].strip("|").split("|")]
    return [dict(zip(head, (c.strip() for c in line.strip("|").split("|")), strict=True)) for line in lines[1:]]


ROWS = _rows()


def _ticked(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


def _defaults() -> dict[str, str]:
    found: dict[str, str] = {}
    for variant in config.VARIANTS.values():
        for key, default, _ in config_doc._rows(variant, f"{config.NAMESPACE}:"):
            found[key] = default.strip("`")
    return found


def _stack_values(key: str) -> set[str]:
    """Every value the example stack files give `key` (`gpushare:hami.version`)."""
    section, _, leaf = key.partition(".")
    values = set()
    for stack in EXAMPLE_STACKS:
        value: Any = read_stack_config(stack, [])[0].get(section, {})
        value = value.get(leaf) if isinstance(value, dict) else None
        if isinstance(value, str):
            values.add(value)
    return values


def test_the_version_is_semantic_and_the_stack_outputs_it(plan_stack: Any) -> None:
    assert SEMVER.match(PYPROJECT["version"]), PYPROJECT["version"]
    assert gpushare_version() == PYPROJECT["version"] != UNKNOWN_VERSION
    for stack in EXAMPLE_STACKS:
        assert plan_stack(stack).outputs["gpushareVersion"] == PYPROJECT["version"]


def test_the_changelog_has_this_release_in_keep_a_changelog_form() -> None:
    text = (ROOT / "CHANGELOG.md").read_text()
    assert "keepachangelog.com" in text and "## [Unreleased]" in text
    releases = re.findall(r"^## \[(\d[^\]]*)\] - (\d{4}-\d{2}-\d{2})$", text, re.M)
    assert releases and releases[0][0] == PYPROJECT["version"], "the newest release is not pyproject.toml's"
    sections = set(re.findall(r"^### (\w+)$", text, re.M))
    assert sections and sections <= {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}


def test_the_table_has_every_row_the_project_owes() -> None:
    names = " ".join(r["component"] for r in ROWS)
    for owed in ("Kubernetes", "driver", "CUDA", "HAMi", "KAI", "GPU Operator", "Pulumi CLI", "pulumi-kubernetes",
                 "pulumi-gcp", "pulumi-command"):  # fmt: skip
        assert owed in names, owed


@pytest.mark.parametrize("row", ROWS, ids=[r["component"] for r in ROWS])
def test_each_row_says_how_it_was_tested(row: dict[str, str]) -> None:
    assert any(how in row["tested how"] for how in TESTED_HOW), row


@pytest.mark.parametrize("row", ROWS, ids=[r["component"] for r in ROWS])
def test_each_rows_version_is_the_one_pinned(row: dict[str, str]) -> None:
    versions = _ticked(row["version"])
    where = _ticked(row["pinned in"])
    assert versions and where, row
    source = where[0]
    if source.startswith("gpushare:"):
        assert source in _defaults(), f"{source} is no config key"
        pinned = {_defaults()[source]} | _stack_values(source)
        pinned |= {m.group(1) for p in pinned if (m := re.search(r":v?(\d[\d.]*)-", p))}  # an image's tag
        assert set(versions) <= pinned, (versions, pinned)
        if len(versions) > 1:  # several supported: exactly the ones the default and the examples pin
            assert set(versions) == pinned
    elif source == "constraints.txt":
        assert [PINS.get(where[1])] == versions, (where[1], versions)
    elif source == "Pulumi.yaml":
        project = yaml.safe_load((ROOT / "Pulumi.yaml").read_text())
        assert versions == [project["requiredPulumiVersion"]]
    elif source.endswith("card.csv"):
        assert versions[0] in (ROOT / source).read_text()
    elif source == "docs/host-proof.md":  # the commit its build steps check out is the one the record ran
        record = (ROOT / "docs" / "host-proof" / "h200" / "final-26" / "README.md").read_text()
        commit = re.search(r"git checkout ([0-9a-f]{40})", (ROOT / source).read_text())
        assert commit is not None and commit.group(1).startswith(versions[0])
        assert f"HAMi-core {versions[0]}" in record
    else:
        pytest.fail(f"no way to check {source}")


def test_the_pulumi_kubernetes_floor_in_the_table_is_pyprojects() -> None:
    (dependency,) = [d for d in PYPROJECT["dependencies"] if d.startswith("pulumi-kubernetes")]
    floor = re.search(r">=([\d.]+)", dependency)
    assert floor is not None
    (row,) = [r for r in ROWS if r["component"] == "pulumi-kubernetes"]
    assert f"floor {floor.group(1)} " in row["tested how"]
