"""The in-cluster folder is one package: mounted as a ConfigMap folder it runs as `python3 -m incluster.<module>`,
and nothing in it imports a sibling any other way."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from components import incluster
from tests.helpers.probes import PROBES


def _mounted(tmp_path: Path) -> dict[str, str]:
    """The ConfigMap's data written as the kubelet mounts it (one file per key), and the env a Pod gets."""
    folder = tmp_path / "opt" / incluster.PACKAGE
    folder.mkdir(parents=True)
    for name, text in incluster.files().items():
        (folder / name).write_text(text)
    return {**os.environ, "PYTHONPATH": str(tmp_path / "opt"), "GPUSHARE_LIBCUDA": str(tmp_path / "libcuda.so.1")}


@pytest.mark.parametrize("probe", ["memory", "compute"])
def test_a_probe_runs_as_a_module_of_the_mounted_folder_and_prints_its_json(probe: str, tmp_path: Path) -> None:
    env = _mounted(tmp_path)
    argv = [sys.executable, *incluster.pod_command(probe, "--json")[1:]]
    extra = ["--baseline", "none"] if probe == "compute" else []
    done = subprocess.run([*argv, *extra], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    last = json.loads(done.stdout.strip().splitlines()[-1])
    assert done.returncode == 1 and last["probe"] == probe and "libcuda.so.1" in last["error"], done.stderr


def test_the_memory_probes_child_runs_as_a_module_of_the_mounted_folder(tmp_path: Path) -> None:
    env = _mounted(tmp_path)
    argv = [sys.executable, "-m", f"{incluster.PACKAGE}.memory_findings", "--child", "view", "--child-mib", "0"]
    done = subprocess.run(argv, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    assert done.returncode == 1 and answer["ok"] is False and "cannot load" in answer["error"], done.stderr


def test_the_verifier_runs_as_a_module_of_the_mounted_folder_and_writes_a_verdict(tmp_path: Path) -> None:
    env = {**_mounted(tmp_path), "GPUSHARE_EXPECT": "", "GPUSHARE_TERMINATION_LOG": str(tmp_path / "message")}
    argv = [sys.executable, *incluster.pod_command("verifier")[1:]]
    done = subprocess.run(argv, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "message").read_text())["passed"] is False


def test_no_in_cluster_module_imports_a_sibling_except_relatively() -> None:
    siblings = {p.stem for p in PROBES.glob("*.py")}
    for path in sorted(PROBES.glob("*.py")):
        text = path.read_text()
        assert "sys.path" not in text and "except ImportError" not in text, path.name
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Import):
                assert not {a.name.split(".")[0] for a in node.names} & siblings, (path.name, ast.dump(node))
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                assert node.module.split(".")[0] not in siblings, (path.name, node.module)
