"""The provider SDKs' groups (components/providers.py): every name is the object the group's own __init__.py binds,
and a plan imports a group's module only for a name the program reads from it."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, STACKS

ROOTS = {"gcp": "pulumi_gcp", "k8s": "pulumi_kubernetes", "command": "pulumi_command"}

PROBE = """
import json, sys
from components import plan, providers

stacks, groups = json.loads(sys.argv[1]), json.loads(sys.argv[2])
for stack in stacks:
    plan.run(stack, [])
compute = [m for m in sys.modules if m.startswith("pulumi_gcp.compute.")]
found = {"whole": providers.loaded_whole(), "groups": {},
         "compute": {m.rpartition(".")[2]: getattr(sys.modules[m], "__all__", []) for m in compute}}
packages = {}
for name in groups:  # each reached as the program reaches it, before any __init__.py below runs
    root, *parts = name.split(".")
    packages[name] = sys.modules[root]
    for part in parts:
        packages[name] = getattr(packages[name], part)
for name, package in packages.items():
    bound = {"__name__": name, "__package__": name, "__path__": package.__path__, "__spec__": package.__spec__}
    exec(package.__spec__.loader.get_code(name), bound)  # what the group's own __init__.py binds
    names = sorted(n for n, v in bound.items() if (getattr(v, "__module__", None) or getattr(v, "__name__", "") or "")
                   .startswith(name + ".") and not n.startswith("__"))
    placed = [n for n in names if package.place(n)]
    same = [n for n in placed if vars(package)[n] is bound[n]]
    later = [n for n in names if n not in placed]
    same += [n for n in later if getattr(package, n) is bound[n]]
    owners = {}
    modules = [m for m, v in sys.modules.items() if m.rpartition(".")[0] == name and not hasattr(v, "__path__")]
    for module in modules:
        for n in [] if module.endswith(".outputs") else getattr(sys.modules[module], "__all__", ()):
            owners.setdefault(n, []).append(module)
    found["groups"][name] = {"names": len(names), "same": len(same), "later": later,
                             "whole": name in providers.loaded_whole(),
                             "clashes": {n: o for n, o in owners.items() if len(o) > 1}}
print(json.dumps(found))
"""


def names_read() -> set[str]:
    """Every `gcp.x.Name`, `k8s.x.v1.Name`, `command.x.Name` the program's modules read, as dotted module paths."""
    found: set[str] = set()
    for path in sorted((ROOT / "components").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            parts: list[str] = []
            while isinstance(node, ast.Attribute):
                parts.insert(0, node.attr)
                node = node.value
            if isinstance(node, ast.Name) and node.id in ROOTS and parts:
                found.add(".".join([ROOTS[node.id], *parts]))
    return found


def groups_read() -> list[str]:
    """The group packages among what the program reads (a folder with an __init__.py)."""
    folders = {root: Path(__import__(root).__file__).parent for root in ROOTS.values()}
    groups = set()
    for dotted in names_read():
        root, *parts = dotted.split(".")
        for depth in range(1, len(parts)):
            if (folders[root].joinpath(*parts[:depth]) / "__init__.py").is_file():
                groups.add(".".join([root, *parts[:depth]]))
    return sorted(groups)


@pytest.fixture(scope="module")
def probed() -> dict:
    """The five stacks planned in a fresh process, then every name of every group the program reads compared."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(STACKS), json.dumps(groups_read())],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout.splitlines()[-1])


def test_every_name_of_a_group_the_program_reads_is_the_object_its_own_init_binds(probed: dict) -> None:
    groups = probed["groups"]
    assert {"pulumi_gcp.compute", "pulumi_kubernetes.core.v1", "pulumi_command.remote"} <= set(groups)
    assert {name: g["clashes"] for name, g in groups.items() if g["clashes"]} == {}  # so load order changes nothing
    assert {name: g["same"] for name, g in groups.items()} == {name: g["names"] for name, g in groups.items()}
    assert groups["pulumi_gcp.compute"]["names"] > 2000
    # A name no module is named for (helm.v3's Chart, in helm.py) loads the group whole, as its __init__.py would.
    assert {name for name, g in groups.items() if g["whole"]} == {name for name, g in groups.items() if g["later"]}


def test_a_plan_imports_a_group_module_only_for_a_name_the_program_reads(probed: dict) -> None:
    assert probed["whole"] == []
    read = {dotted.rpartition(".")[2] for dotted in names_read() if dotted.startswith("pulumi_gcp.compute.")}
    every_resource_module_imports = {"_inputs", "outputs"}
    extra = {
        module
        for module, exported in probed["compute"].items()
        if module not in every_resource_module_imports and not read & set(exported)
    }
    assert "instance" in probed["compute"]
    assert extra == set()  # not the group's other 287 modules
