"""Every `python -m` command the docs name answers `--help` with its usage and exits 0, and one run by a Python
without the project's packages says in one line how to set up (components/setup_hint.py)."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from components.setup_hint import DEPENDENCIES, SETUP
from tests.conftest import ROOT
from tests.helpers import docs

COMMANDS = [
    "components.plan",
    "components.plan_view.comment",
    "components.verify.host",
    "components.verify.host compare",
    "components.verify.host.record",
    "components.verify.host.paths_table",
    "components.verify.evidence_schema",
    "components.audit",
    "components.config_doc",
    "components.airgap_doc",
    "components.platform.guest_attributes",
    "policies.harness",
    "tests.golden.regenerate",
    "tests.facts.regenerate",
    "tests.helpers.real_fixtures",
    *sorted(f"tests.bench.{p.stem}" for p in (ROOT / "tests" / "bench").glob("*.py") if p.stem != "__init__"),
]
IN_POD = re.compile(r"(components\.)?incluster\.")
"""The probes and the verifier run in a Pod or on a GPU host from the mounted package, with its own tests."""


def test_every_command_the_docs_name_is_checked() -> None:
    named = {m for page in docs.PAGES for m in re.findall(r"python3? -m ((?:components|policies|tests)[\w.]*)",
                                                          docs.text(page))}  # fmt: skip
    assert named, "the docs name no python -m command"
    assert sorted(m for m in named if not IN_POD.match(m) and m not in COMMANDS) == []


@pytest.mark.parametrize("command", COMMANDS)
def test_help_prints_the_usage_and_exits_0(command: str) -> None:
    module, *sub = command.split()
    done = subprocess.run(
        [sys.executable, "-m", module, *sub, "--help"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert re.match(rf"usage: python3? -m {re.escape(module)}( |\n|$)", done.stdout), done.stdout[:300]
    assert done.stderr == ""


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A virtualenv of this interpreter with nothing installed: a Python that lacks the project's packages."""
    folder = tmp_path_factory.mktemp("bare")
    venv.EnvBuilder(with_pip=False).create(folder)
    return folder / "bin" / "python"


@pytest.mark.parametrize(
    "argv",
    [["components.plan", "k3s"], ["policies.harness", "k3s"], ["tests.golden.regenerate", "--check"]],
    ids=lambda argv: argv[0],
)
def test_a_python_without_the_packages_is_told_how_to_set_up(bare_python: Path, argv: list[str]) -> None:
    done = subprocess.run([bare_python, "-m", *argv], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"error: python -m {argv[0]} needs the project's packages, and {bare_python} has no ")
    assert SETUP in line and line.endswith(f"then run .venv/bin/python -m {argv[0]}")


def test_an_error_of_the_program_itself_keeps_its_traceback(bare_python: Path, tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "__init__.py").write_text((ROOT / "tests" / "__init__.py").read_text())
    (tmp_path / "tests" / "broken.py").write_text("import no_such_module_of_ours\n")
    (tmp_path / "components").symlink_to(ROOT / "components")
    done = subprocess.run([bare_python, "-m", "tests.broken"], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 1 and "Traceback" in done.stderr and "no_such_module_of_ours" in done.stderr


def _imported(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    names |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module and not n.level}
    return {name.split(".")[0] for name in names}


def test_the_hint_knows_every_package_the_code_imports() -> None:
    ours = {"components", "policies", "tests", "incluster", "__main__"}
    optional = {"matplotlib"}  # the host comparison's figure, drawn only where it is installed
    files = [ROOT / "__main__.py", *[p for d in ("components", "policies", "tests") for p in (ROOT / d).rglob("*.py")]]
    third_party = set().union(*map(_imported, files)) - set(sys.stdlib_module_names) - ours - optional
    assert sorted(third_party - DEPENDENCIES) == []
