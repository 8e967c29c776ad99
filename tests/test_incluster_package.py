"""The in-cluster package as a Pod mounts it: the planned ConfigMap and volume rebuild the package tree, every module
of it imports from that tree with the standard library alone, and the probes, the memory probe's child and the
verifier run from it as `python3 -m incluster.<module>`. Inside the package a module imports the others only
relatively, so the same files are `incluster.` in a Pod and `components.incluster.` on a host."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from components import incluster
from components.plan_view.model import Plan
from tests.conftest import _cached_plan

CONFIG_MAP = "kubernetes:core/v1:ConfigMap"
WORKLOADS = ("kubernetes:core/v1:Pod", "kubernetes:batch/v1:Job")
SOURCE = Path(incluster.__file__).parent
MODULES = sorted(
    ".".join([incluster.PACKAGE, *Path(path).with_suffix("").parts]).removesuffix(".__init__")
    for path in incluster.paths()
)
"""Every module of the package as a Pod names it: `incluster`, `incluster.probes`, `incluster.probes.memory`…"""


def pod_specs(plan: Plan) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Each planned Pod spec, a Job's template too, by its resource name."""
    for resource in (r for t in WORKLOADS for r in plan.find(t)):
        spec = resource["inputs"]["spec"]
        yield resource["name"], spec.get("template", {}).get("spec", spec)


def mounts(plan: Plan) -> list[tuple[str, Mapping[str, Any], Mapping[str, Any], Mapping[str, Any]]]:
    """(workload, its container's mount, the volume, the ConfigMap it names) for every mount of the package."""
    maps = {r["inputs"]["metadata"]["name"]: r for r in plan.find(CONFIG_MAP)}
    found = []
    for name, spec in pod_specs(plan):
        volumes = {v["name"]: v for v in spec.get("volumes") or [] if "configMap" in v}
        for container in spec["containers"]:
            for mount in container.get("volumeMounts") or []:
                if mount["name"] in volumes and mount["mountPath"] == incluster.MOUNT_PATH:
                    volume = volumes[mount["name"]]
                    found.append((name, mount, volume, maps[volume["configMap"]["name"]]))
    return found


def build(root: Path, mount: Mapping[str, Any], volume: Mapping[str, Any], config_map: Mapping[str, Any]) -> Path:
    """The folder the kubelet makes of a ConfigMap volume (`items`: each key at its path, only those; without
    `items`, each key a file of its name), under `root`; the mount's parent, which PYTHONPATH names, back."""
    folder = root / mount["mountPath"].lstrip("/")
    data = config_map["inputs"]["data"]
    items = volume["configMap"].get("items") or [{"key": k, "path": k} for k in data]
    for item in items:
        target = folder / item["path"]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(data[item["key"]])
    return folder.parent


@pytest.fixture(scope="module")
def k3s() -> Plan:
    """The k3s stack as planned (read, never edited): proof Pods, try Pods, the verifier and a ready gate."""
    return _cached_plan("k3s", ())


@pytest.fixture
def pod_root(k3s: Plan, tmp_path: Path) -> Path:
    """Proof Pod A's mount, built from the plan: the folder on its PYTHONPATH."""
    (_, mount, volume, config_map) = next(m for m in mounts(k3s) if m[0].endswith("-pod-a"))
    return build(tmp_path, mount, volume, config_map)


def stdlib_env(root: Path, tmp_path: Path) -> dict[str, str]:
    """A Pod's env: the mount on PYTHONPATH, no driver library (a probe then reports its error as JSON)."""
    return {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(root), "PYTHONDONTWRITEBYTECODE": "1",
            "GPUSHARE_LIBCUDA": str(tmp_path / "libcuda.so.1")}  # fmt: skip


def run_stdlib(argv: list[str], root: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """`python3 -S …`: no site-packages, as in a python:3.12-slim Pod where nothing else is installed."""
    return subprocess.run([sys.executable, "-S", *argv], env=stdlib_env(root, tmp_path), cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)  # fmt: skip


def test_every_workload_mounts_the_whole_package_tree_from_its_planned_config_map(k3s: Plan, tmp_path: Path) -> None:
    found = mounts(k3s)
    names = {name for name, *_ in found}
    assert {
        "gpushare-proof-verifier-pod",
        "hami-server-version-job",
        "gpushare-proof-workloads-pod-a",
        "gpushare-proof-workloads-try-visible-devices-all",
    } <= names, names
    for i, (name, mount, volume, config_map) in enumerate(found):
        root = build(tmp_path / str(i), mount, volume, config_map)
        built = {p.relative_to(root / incluster.PACKAGE).as_posix(): p.read_text()
                 for p in (root / incluster.PACKAGE).rglob("*.py")}  # fmt: skip
        assert built == {path: (SOURCE / path).read_text() for path in incluster.paths()}, name
        assert mount["readOnly"] is True and volume["configMap"]["defaultMode"] == 0o444, name


def test_the_config_map_keys_hold_no_slash_and_the_items_name_every_key_once(k3s: Plan) -> None:
    for name, _, volume, config_map in mounts(k3s):
        keys = list(config_map["inputs"]["data"])
        assert all("/" not in k for k in keys) and "probes.memory.py" in keys, name
        assert sorted(i["key"] for i in volume["configMap"]["items"]) == sorted(keys), name
        paths = {i["path"] for i in volume["configMap"]["items"]}
        assert paths >= {"__init__.py", "probes/__init__.py", "probes/memory.py", "checks/registry.py"}, name


def test_every_module_imports_from_the_planned_mount_with_the_standard_library_alone(
    pod_root: Path, tmp_path: Path
) -> None:
    program = (
        "import importlib, json, sys\n"
        f"names = {MODULES!r}\n"
        "for name in names:\n"
        "    importlib.import_module(name)\n"
        "print(json.dumps(sorted({m.__file__ for n, m in sys.modules.items() if n.split('.')[0] == 'incluster'})))\n"
    )
    done = run_stdlib(["-c", program], pod_root, tmp_path)
    assert done.returncode == 0, done.stderr
    loaded = json.loads(done.stdout)
    assert len(MODULES) >= 40 and len(loaded) == len(MODULES)
    assert all(path.startswith(str(pod_root / incluster.PACKAGE)) for path in loaded)


@pytest.mark.parametrize("probe", ["memory", "compute", "fault", "bandwidth"])
def test_a_probe_runs_as_a_module_of_the_planned_mount_and_prints_its_json(
    probe: str, pod_root: Path, tmp_path: Path
) -> None:
    argv = incluster.pod_command(f"probes.{probe}", "--json")[1:]
    extra = {"compute": ["--baseline", "none"], "fault": ["--window", "1"], "bandwidth": ["--window", "1"]}
    done = run_stdlib([*argv, *extra.get(probe, [])], pod_root, tmp_path)
    last = json.loads(done.stdout.strip().splitlines()[-1])
    assert done.returncode == 1 and last["probe"] == probe and "libcuda.so.1" in last["error"], done.stderr


def test_the_memory_probes_child_runs_as_a_module_of_the_planned_mount(pod_root: Path, tmp_path: Path) -> None:
    argv = incluster.pod_command("probes.memory_child", "--child", "view", "--child-mib", "0")[1:]
    done = run_stdlib(argv, pod_root, tmp_path)
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    assert done.returncode == 1 and answer["ok"] is False and "cannot load" in answer["error"], done.stderr


def test_the_verifier_runs_as_a_module_of_the_planned_mount_and_writes_a_verdict(k3s: Plan, tmp_path: Path) -> None:
    (_, mount, volume, config_map) = next(m for m in mounts(k3s) if m[0] == "gpushare-proof-verifier-pod")
    root = build(tmp_path, mount, volume, config_map)
    env = {**stdlib_env(root, tmp_path), "GPUSHARE_EXPECT": "", "GPUSHARE_TERMINATION_LOG": str(tmp_path / "message")}
    done = subprocess.run([sys.executable, "-S", *incluster.pod_command("verifier")[1:]], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "message").read_text())["passed"] is False


def test_no_in_cluster_module_imports_another_of_the_package_except_relatively() -> None:
    for path in incluster.paths():
        text = (SOURCE / path).read_text()
        assert "sys.path" not in text and "except ImportError" not in text, path
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Import):
                assert not any(a.name.split(".")[0] in ("components", incluster.PACKAGE) for a in node.names), path
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                assert node.module.split(".")[0] not in ("components", incluster.PACKAGE), (path, node.module)
