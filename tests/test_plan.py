"""The offline plan's contract: every stack plans, deterministically; bad config exits 2 and registers nothing."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from components.plan import main, run
from tests.conftest import ROOT, STACKS
from tests.golden.regenerate import GOLDEN, render, variants

COMPONENT_TOKEN = re.compile(r"^gpushare:[a-z]+:[A-Z][A-Za-z0-9]+$")


def test_the_repo_has_the_five_stacks() -> None:
    assert STACKS == ["cluster", "gke", "gke-mps", "gke-time-sharing", "k3s"]


@pytest.mark.parametrize("stack", STACKS)
def test_every_stack_file_plans_with_a_verification_output(stack: str, plan_stack) -> None:
    plan = plan_stack(stack)
    assert plan.stack == stack
    verification = plan.outputs["verification"]
    assert set(verification) >= {"passed", "checks", "findings"}


@pytest.mark.parametrize("stack", STACKS)
def test_json_plan_is_byte_identical_across_runs(stack: str) -> None:
    first, second = run(stack).to_json(), run(stack).to_json()
    assert first == second
    assert set(json.loads(first)) == {
        "version",
        "stack",
        "against",
        "resources",
        "deleted",
        "outputs",
        "unknownOutputs",
    }


@pytest.mark.parametrize("stack", STACKS)
def test_components_use_the_gpushare_token_and_register_outputs(stack: str, plan_stack) -> None:
    plan = plan_stack(stack)
    components = [
        r for r in plan.resources if not r["type"].startswith(("kubernetes:", "gcp:", "tls:", "command:", "pulumi:"))
    ]
    for component in components:
        assert COMPONENT_TOKEN.match(component["type"]), component["type"]
        assert component["name"] in plan.component_outputs, f"{component['name']} never called register_outputs"


@pytest.mark.parametrize("stack", STACKS)
def test_every_resource_is_parented_to_a_component(stack: str, plan_stack) -> None:
    plan = plan_stack(stack)
    names = {r["name"] for r in plan.resources}
    for r in plan.resources:
        if r["parent"] is None:
            assert r["type"].startswith("gpushare:"), f"{r['type']} {r['name']} sits at the stack root"
        else:
            assert r["parent"] in names


@pytest.mark.parametrize("stack", STACKS)
def test_resource_names_are_unique(stack: str, plan_stack) -> None:
    names = [r["name"] for r in plan_stack(stack).resources]
    assert len(names) == len(set(names))


@pytest.mark.parametrize("name", sorted(variants()))
def test_golden_plan_matches(name: str) -> None:
    stack, overrides = variants()[name]
    golden = GOLDEN / f"{name}.json"
    assert golden.exists(), "run: .venv/bin/python -m tests.golden.regenerate"
    assert render(stack, overrides) == golden.read_text(), (
        "plan drifted: review, then python -m tests.golden.regenerate"
    )


@pytest.mark.parametrize(
    ("override", "key"),
    [
        ("gpushare:gke.zonee=asia-northeast1-b", "gpushare:gke.zonee"),
        ("gpushare:verify.sliceMiB=999999", "gpushare:verify.sliceMiB"),
        ("gpushare:toolkit=gpu-operator", "gpushare:toolkit"),
    ],
)
def test_invalid_config_exits_2_with_one_line_and_no_resources(override: str, key: str, capsys) -> None:
    assert main(["gke", "--json", "-c", override]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and key in lines[0]


def test_cli_exit_code_and_stderr_from_a_real_process() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "components.plan", "gke", "--json", "-c", "gpushare:verify.sliceMiB=999999"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert "gpushare:verify.sliceMiB" in done.stderr


def test_unknown_stack_exits_2_naming_the_stacks(capsys) -> None:
    assert main(["eks"]) == 2
    assert "cluster, gke, gke-mps, gke-time-sharing, k3s" in capsys.readouterr().err


def test_override_without_namespace_takes_the_projects_as_pulumi_config_set_path_does() -> None:
    from components.plan import read_stack_config

    config, _ = read_stack_config("gke", ["verify.sliceMiB=4000"])
    assert config["gpushare:verify"]["sliceMiB"] == 4000


def test_override_in_the_empty_namespace_is_refused_naming_the_key(capsys) -> None:
    assert main(["gke", "-c", ":verify.sliceMiB=4000"]) == 2
    err = capsys.readouterr().err
    assert "empty namespace" in err and "gpushare:verify.sliceMiB" in err and len(err.splitlines()) == 1


def test_null_override_removes_a_key() -> None:
    from components.plan import read_stack_config

    config, _ = read_stack_config("cluster", ["gpushare:gpuOperator=null"])
    assert "gpushare:gpuOperator" not in config


def test_human_output_is_a_tree_with_outputs(capsys) -> None:
    assert main(["k3s"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("stack k3s:")
    assert "outputs:" in out and "verification" in out


def test_an_unmocked_invoke_raises(tmp_path) -> None:
    (tmp_path / "Pulumi.t.yaml").write_text("config: {}\n")
    (tmp_path / "__main__.py").write_text(
        "import pulumi\npulumi.runtime.invoke('gcp:compute/getZones:getZones', {}).value\n"
    )
    with pytest.raises(Exception, match="unmocked invoke gcp:compute/getZones:getZones"):
        run("t", root=tmp_path)


def test_stacks_planned_one_after_another_do_not_leak(tmp_path) -> None:
    program = (
        "import pulumi, pulumi_kubernetes as k8s\n"
        "k8s.core.v1.Namespace(pulumi.get_stack() + '-ns')\n"
        "pulumi.export('stack', pulumi.get_stack())\n"
    )
    (tmp_path / "__main__.py").write_text(program)
    for name in ("one", "two"):
        (tmp_path / f"Pulumi.{name}.yaml").write_text("config: {}\n")
    first, second = run("one", root=tmp_path), run("two", root=tmp_path)
    assert [r["name"] for r in first.resources] == ["one-ns"]
    assert [r["name"] for r in second.resources] == ["two-ns"]
    assert second.outputs == {"stack": "two"}


def test_secret_config_values_are_planned_as_secrets(tmp_path) -> None:
    (tmp_path / "Pulumi.s.yaml").write_text("config:\n  app:token:\n    secure: AAABAxyz\n")
    (tmp_path / "__main__.py").write_text(
        "import pulumi\npulumi.export('token', pulumi.Config('app').require_secret('token'))\n"
    )
    assert run("s", root=tmp_path).outputs == {"token": "[secret]"}


@pytest.mark.parametrize("stack", STACKS)
def test_every_stack_says_once_that_its_mechanism_is_not_mig(stack: str, plan_stack) -> None:
    note = plan_stack(stack).outputs["isolationNote"]
    assert note.count("not MIG") == 1
    assert note.count("fail by design") <= 1


@pytest.mark.parametrize("stack", STACKS)
def test_the_isolation_note_and_the_report_say_what_the_mechanism_is_not_in_the_same_words(
    stack: str, plan_stack
) -> None:
    from components.verify.report import NOT_MIG

    outputs = plan_stack(stack).outputs
    mechanism = outputs["verification"]["mechanism"]
    assert outputs["isolationNote"].startswith(NOT_MIG[mechanism])
    assert NOT_MIG[mechanism] in outputs["report"]
