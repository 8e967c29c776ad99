"""mypy reads every provider SDK module the program names, and skips the rest (pyproject.toml [tool.mypy]).

pulumi_gcp, pulumi_kubernetes and the kubernetes client declare every group to type checkers (2,413, 801 and 948
modules); the config reads only the modules that define what the program calls, so a name read from a module the
config skips would be Any, its call unchecked, without a word from mypy. These tests name that module.
"""

from __future__ import annotations

import ast
import importlib.util
import re
import tomllib
from fnmatch import fnmatchcase
from functools import cache
from pathlib import Path

import pytest

from components.providers import module_names
from tests.conftest import ROOT

MYPY = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
SDKS = {"gcp": "pulumi_gcp", "k8s": "pulumi_kubernetes"}
"""The names components/providers.py gives the SDKs, and the packages they are."""
SOURCES = sorted([ROOT / "__main__.py", *(ROOT / "components").rglob("*.py"), *(ROOT / "policies").rglob("*.py")])


def _follow(setting: str) -> list[str]:
    return [m for o in MYPY["overrides"] if o.get("follow_imports") == setting for m in o["module"]]


def _folder(package: str) -> Path:
    spec = importlib.util.find_spec(package)
    assert spec is not None and spec.submodule_search_locations, f"{package} is not installed"
    return Path(next(iter(spec.submodule_search_locations)))


def _module_file(module: str) -> Path | None:
    top, *rest = module.split(".")
    path = _folder(top).joinpath(*rest)
    for found in (path / "__init__.py", path.with_suffix(".py")):
        if found.is_file():
            return found
    return None


def read_by_mypy(module: str) -> bool:
    """As mypy picks the setting: a module named exactly wins over a pattern (mypy's config precedence)."""
    if module in _follow("normal"):
        return True
    return not any(fnmatchcase(module, pattern) for pattern in _follow("skip"))


def _chains(tree: ast.AST) -> set[tuple[str, ...]]:
    """Every `gcp.a.B` / `k8s.a.b.C` the code writes, longest first (an attribute chain read as its parts)."""
    found: set[tuple[str, ...]] = set()
    for node in ast.walk(tree):
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name) and node.id in SDKS and parts:
            found.add((SDKS[node.id], *reversed(parts)))
    return found


def modules_of(chain: tuple[str, ...]) -> list[str]:
    """The modules mypy must read for a name: each group package on the way, the group's inputs and outputs, and
    the module that defines the name (by the SDK generator's file names, as components/providers.py finds it)."""
    package, needed = chain[0], [chain[0]]
    for part in chain[1:]:
        if (_folder(chain[0]).joinpath(*package.split(".")[1:], part) / "__init__.py").is_file():
            package = f"{package}.{part}"
            needed.append(package)
            continue
        for sibling in ("_inputs", "outputs"):
            if _module_file(f"{package}.{sibling}") is not None:
                needed.append(f"{package}.{sibling}")
        defining = next((f"{package}.{m}" for m in module_names(part) if _module_file(f"{package}.{m}")), None)
        if defining is not None:
            needed.append(defining)
        break
    return needed


@cache
def _names() -> dict[str, list[str]]:
    """SDK module → the files whose names come from it."""
    users: dict[str, list[str]] = {}
    for path in SOURCES:
        tree = ast.parse(path.read_text())
        for chain in _chains(tree):
            for module in modules_of(chain):
                users.setdefault(module, []).append(path.relative_to(ROOT).as_posix())
        if "from kubernetes import client" in path.read_text():
            for api in re.findall(r"\bclient\.([A-Z]\w*Api)\b", path.read_text()):
                snake = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", api.removesuffix("Api")).lower()
                users.setdefault(f"kubernetes.client.api.{snake}_api", []).append(path.relative_to(ROOT).as_posix())
    return users


def test_the_sdks_are_skipped_but_for_what_the_program_names() -> None:
    assert {"pulumi_gcp.*", "pulumi_kubernetes.*", "kubernetes.client.models.*"} <= set(_follow("skip"))
    assert not read_by_mypy("pulumi_gcp.accessapproval") and not read_by_mypy("pulumi_kubernetes.apps.v1.Deployment")


@pytest.mark.parametrize("module", sorted(_names()))
def test_mypy_reads_each_sdk_module_the_program_names(module: str) -> None:
    assert _module_file(module) is not None, f"{module} is not a module of the installed SDK"
    assert read_by_mypy(module), (
        f"{', '.join(sorted(set(_names()[module])))} names {module}, which [tool.mypy] skips: add it to the "
        'overrides with follow_imports = "normal" in pyproject.toml'
    )


def test_each_module_the_config_reads_is_one_the_sdks_have() -> None:
    missing = [m for m in _follow("normal") if _module_file(m) is None]
    assert missing == [], f"pyproject.toml [tool.mypy] names modules no installed SDK has: {missing}"


def test_a_name_from_a_skipped_module_is_found() -> None:
    needed = modules_of(("pulumi_gcp", "compute", "InstanceTemplate"))
    assert needed[-1] == "pulumi_gcp.compute.instance_template" and not read_by_mypy(needed[-1])
    assert modules_of(("pulumi_kubernetes", "core", "v1", "PodSpecArgs"))[-1] == "pulumi_kubernetes.core.v1._inputs"
