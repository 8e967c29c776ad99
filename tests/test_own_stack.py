"""A stack of the user's own, copied from a committed example: it plans as the example does whatever its name, and
git never tracks it (docs/stacks.md, "Your own stack")."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from components.plan import EXAMPLE_STACKS, main, run
from tests.conftest import ROOT

SALT = "encryptionsalt: v1:3RZt1N2PoSM=:v1:uG8b6bnZ0u6w1Y3R:VjOaJ0mGtcJYUqsDYS4xlsJz3gkG3A==\n"
"""What `pulumi stack init` adds to a stack file it finds in place, under a local backend's passphrase
(pulumi/pulumi pkg/cmd/pulumi/stack createSecretsManagerForNewStack respects a Pulumi.<stack>.yaml already there)."""


def _own_project(folder: Path, example: str, names: tuple[str, ...]) -> Path:
    """A clone's project with `cp Pulumi.<example>.yaml Pulumi.<name>.yaml && pulumi stack init <name>` done."""
    for name in ("Pulumi.yaml", "__main__.py"):
        shutil.copy(ROOT / name, folder / name)
    shutil.copytree(ROOT / "examples", folder / "examples")
    for name in names:
        (folder / f"Pulumi.{name}.yaml").write_text(SALT + (ROOT / f"Pulumi.{example}.yaml").read_text())
    return folder


def _modulo_name(plan_json: str, name: str) -> str:
    """The plan with the stack's name, wherever it is written (names scoped to the stack, the VM's network tag,
    the `-s` of a destroy hint), read as STACK."""
    return re.sub(rf"(?<![A-Za-z0-9]){re.escape(name)}(?![A-Za-z0-9])", "STACK", plan_json)


@pytest.mark.parametrize("example", EXAMPLE_STACKS)
def test_a_stack_copied_from_an_example_plans_the_same_under_any_name(example: str, tmp_path: Path) -> None:
    project = _own_project(tmp_path, example, ("alpha", "bravo"))
    plans = {name: json.dumps(run(name, root=project).as_dict(), sort_keys=True) for name in ("alpha", "bravo")}
    assert '"stack": "alpha"' in plans["alpha"] and '"stack": "bravo"' in plans["bravo"]
    assert _modulo_name(plans["alpha"], "alpha") == _modulo_name(plans["bravo"], "bravo")


def test_a_copied_stack_plans_what_its_example_plans(tmp_path: Path) -> None:
    project = _own_project(tmp_path, "k3s", ("alpha",))
    own = run("alpha", root=project).as_dict()
    example = run("k3s", root=ROOT).as_dict()
    assert [(r["type"], r["name"]) for r in own["resources"]] == [(r["type"], r["name"]) for r in example["resources"]]


def test_the_cli_plans_a_copied_stack_by_its_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(_own_project(tmp_path, "gke", ("mine",)))
    assert main(["mine"]) == 0
    assert capsys.readouterr().out.startswith("stack mine: ")


def _gitignore_examples() -> list[str]:
    lines = (ROOT / ".gitignore").read_text().splitlines()
    assert "/Pulumi.*.yaml" in lines, "the user's stack files are not ignored"
    return sorted(m.group(1) for line in lines if (m := re.fullmatch(r"!/Pulumi\.(.+)\.yaml", line)))


def test_git_ignores_every_stack_file_but_the_examples() -> None:
    assert _gitignore_examples() == sorted(EXAMPLE_STACKS)
    assert sorted(p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in ROOT.glob("Pulumi.*.yaml")) >= sorted(
        EXAMPLE_STACKS
    )


def test_the_wheel_carries_the_example_stack_files_only() -> None:
    setup = (ROOT / "setup.py").read_text()
    carried = sorted(re.findall(r'"Pulumi\.([^"]+)\.yaml"', setup))
    assert carried == sorted(EXAMPLE_STACKS)


@pytest.mark.skipif(shutil.which("git") is None or not (ROOT / ".git").exists(), reason="not a git checkout")
def test_git_check_ignore_agrees() -> None:
    asked = ["Pulumi.mine.yaml", "Pulumi.yaml", *(f"Pulumi.{s}.yaml" for s in EXAMPLE_STACKS)]
    done = subprocess.run(["git", "check-ignore", "--no-index", *asked], cwd=ROOT, capture_output=True, text=True)
    assert done.stdout.split() == ["Pulumi.mine.yaml"]
