"""The built wheel carries what the code reads at run time, installs into a virtualenv of its own, and plans the
example stacks, and a project of a user's own, from folders outside the repository.

Offline: the wheel is built with the set-up's own setuptools (`--no-build-isolation`), installed with `--no-index
--no-deps`, and the fresh virtualenv reads the pinned dependencies from this one's site-packages through a .pth
file, after its own: the `components` and `policies` it imports are the wheel's.
"""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import venv
import zipfile
from pathlib import Path

import pytest

from tests.conftest import ROOT

PACKAGES = ("components", "policies")


def _committed(*pathspecs: str) -> list[str]:
    """The tracked files under folders or matching patterns: what a clone has, whatever else lies in this checkout."""
    done = subprocess.run(["git", "ls-files", *pathspecs], cwd=ROOT, capture_output=True, text=True)
    if done.returncode == 0:
        return sorted(done.stdout.split())
    found = [p for spec in pathspecs for p in ((ROOT / spec).rglob("*") if (ROOT / spec).is_dir() else ROOT.glob(spec))]
    return sorted(str(p.relative_to(ROOT)) for p in found if p.is_file() and "__pycache__" not in p.parts)


def _project_files() -> tuple[str, ...]:
    """setup.py's PROJECT_FILES, read without running setup()."""
    tree = ast.parse((ROOT / "setup.py").read_text())
    (value,) = [
        n.value for n in tree.body if isinstance(n, ast.Assign) and ast.unparse(n.targets[0]) == "PROJECT_FILES"
    ]
    return tuple(ast.literal_eval(value))


def _pip(*args: str | Path) -> None:
    done = subprocess.run([sys.executable, "-m", "pip", *map(str, args)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What a build reads, copied out of the checkout (builds write build/ and *.egg-info beside their sources)."""
    tree = tmp_path_factory.mktemp("src")
    for name in ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "LICENSE", *_project_files()):
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, tree / name)
    for package in PACKAGES:
        shutil.copytree(ROOT / package, tree / package, ignore=shutil.ignore_patterns("__pycache__"))
    return tree


@pytest.fixture(scope="module")
def wheel(source: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    _pip("wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q", "-w", out, source)
    (built,) = out.glob("gpushare-*.whl")
    return built


def _names(wheel: Path) -> set[str]:
    return {n for n in zipfile.ZipFile(wheel).namelist() if ".dist-info/" not in n}


def test_the_wheel_carries_every_data_file_of_its_packages(wheel: Path) -> None:
    data = [f for f in _committed(*PACKAGES) if not f.endswith(".py")]
    assert "components/plan_view/plan.schema.json" in data and "policies/PulumiPolicy.yaml" in data
    assert sorted(set(data) - _names(wheel)) == []


def test_the_wheel_carries_the_example_project_and_no_other_stack(wheel: Path) -> None:
    project = sorted(
        n.removeprefix("components/project/") for n in _names(wheel) if n.startswith("components/project/")
    )
    stacks = _committed("Pulumi.*.yaml")
    assert project == sorted(_project_files()) and [s for s in project if s.startswith("Pulumi.")] == sorted(
        ["Pulumi.yaml", *stacks]
    )
    assert {"__main__.py", "examples/kubeconfig.placeholder.yaml"} <= set(project)


def test_a_wheel_built_from_the_sdist_carries_the_same_files(source: Path, wheel: Path, tmp_path: Path) -> None:
    made = subprocess.run(
        [sys.executable, "-c", f"from setuptools import build_meta; print(build_meta.build_sdist({str(tmp_path)!r}))"],
        cwd=source, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr[-3000:]
    with tarfile.open(tmp_path / made.stdout.split()[-1]) as sdist:
        if hasattr(tarfile, "data_filter"):  # 3.11.4 and later
            sdist.extractall(tmp_path / "unpacked", filter="data")
        else:
            sdist.extractall(tmp_path / "unpacked")
    (unpacked,) = (tmp_path / "unpacked").iterdir()
    _pip("wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q", "-w", tmp_path / "out", unpacked)
    (again,) = (tmp_path / "out").glob("gpushare-*.whl")
    assert sorted(_names(again) ^ _names(wheel)) == []


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtualenv holding the wheel; the pinned dependencies are this one's, read after its own."""
    env = tmp_path_factory.mktemp("venv")
    venv.EnvBuilder(with_pip=False).create(env)
    python = env / "bin" / "python"
    _pip("--python", python, "install", "--no-index", "--no-deps", "-q", wheel)
    purelib = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                             capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    (Path(purelib) / "pinned-dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")
    return python


def _in(python: Path, folder: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    folder.mkdir(parents=True, exist_ok=True)
    return subprocess.run([python, *argv], cwd=folder, capture_output=True, text=True, timeout=300)


READS = """
import json, pathlib, components, policies
from components import plan
from components.plan_view.model import SCHEMA_PATH
from components.verify.workloads import probe_files
from policies.harness import CONFIG_DIR
site = pathlib.Path(components.__file__).parent.parent
print(json.dumps({
    "packages": [str(pathlib.Path(m.__file__).parent.relative_to(site)) for m in (components, policies)],
    "schema": json.loads(SCHEMA_PATH.read_text())["title"],
    "policyConfig": sorted(p.stem for p in CONFIG_DIR.glob("*.json")),
    "pack": (pathlib.Path(policies.__file__).parent / "PulumiPolicy.yaml").is_file(),
    "probes": sorted(probe_files()),
    "project": str(plan.ROOT.relative_to(site)),
    "stacks": plan.stacks(),
}))
"""


def test_what_the_code_reads_at_run_time_is_in_the_installed_package(installed: Path, tmp_path: Path) -> None:
    done = _in(installed, tmp_path / "empty", "-c", READS)
    assert done.returncode == 0, done.stderr[-3000:]
    read = json.loads(done.stdout)
    stacks = sorted(s.removeprefix("Pulumi.").removesuffix(".yaml") for s in _committed("Pulumi.*.yaml"))
    assert read["packages"] == ["components", "policies"] and read["pack"] and read["schema"]
    assert read["project"] == "components/project" and read["stacks"] == stacks
    assert read["policyConfig"] == stacks
    from components.verify.workloads import probe_files

    assert read["probes"] == sorted(probe_files())


def test_the_installed_wheel_plans_an_example_stack_in_an_empty_folder_as_the_checkout_does(
    installed: Path, tmp_path: Path
) -> None:
    outside = _in(installed, tmp_path / "empty", "-m", "components.plan", "k3s", "--json")
    assert outside.returncode == 0, outside.stderr[-3000:]
    here = subprocess.run([sys.executable, "-m", "components.plan", "k3s", "--json"], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)  # fmt: skip
    assert outside.stdout == here.stdout and json.loads(outside.stdout)["stack"] == "k3s"


def test_the_installed_pack_passes_the_cluster_example_outside_the_repository(installed: Path, tmp_path: Path) -> None:
    # The cluster stack's kubeconfigPath is relative: read in the example project, as `pulumi up` would.
    done = _in(installed, tmp_path / "empty", "-m", "policies.harness", "cluster")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert done.stdout.rstrip().endswith("0 mandatory, 0 advisory")


def test_the_installed_wheel_plans_a_users_own_project_from_a_folder_inside_it(installed: Path, tmp_path: Path) -> None:
    mine = tmp_path / "mine"
    (mine / "notes").mkdir(parents=True)
    site = _in(installed, tmp_path, "-c", "from components import plan; print(plan.ROOT)").stdout.strip()
    for name in ("Pulumi.yaml", "__main__.py"):
        shutil.copy(Path(site) / name, mine / name)
    shutil.copy(Path(site) / "Pulumi.k3s.yaml", mine / "Pulumi.mine.yaml")
    done = _in(
        installed, mine / "notes", "-m", "components.plan", "mine", "-c", "vm.allowedSourceRanges[0]=203.0.113.7/32"
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.startswith("stack mine: ") and "from: 203.0.113.7/32" in done.stdout


def test_an_unknown_stack_outside_a_project_names_the_example_project(installed: Path, tmp_path: Path) -> None:
    done = _in(installed, tmp_path / "empty", "-m", "components.plan", "eks")
    site = _in(installed, tmp_path, "-c", "from components import plan; print(plan.ROOT)").stdout.strip()
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith(f"error: no stack file Pulumi.eks.yaml in {site}; its stacks: cluster, gke, ")
