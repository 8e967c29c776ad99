"""The plan reads the project `pulumi up` would: the nearest folder up holding Pulumi.yaml, else the example project
the package carries; and it runs the program in that folder, so relative paths in config read from there."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from components.plan import ROOT, main, project_root, run

PLACEHOLDER = ROOT / "examples" / "kubeconfig.placeholder.yaml"


def test_the_nearest_folder_up_holding_pulumi_yaml_is_the_project(tmp_path: Path) -> None:
    (tmp_path / "Pulumi.yaml").write_text("name: mine\nruntime: python\n")
    (tmp_path / "docs" / "notes").mkdir(parents=True)
    assert project_root(tmp_path / "docs" / "notes") == tmp_path.resolve()


def test_outside_any_project_the_package_plans_its_own_examples(tmp_path: Path) -> None:
    assert project_root(tmp_path) == ROOT and (ROOT / "Pulumi.k3s.yaml").is_file()


def test_from_the_repository_the_project_is_the_repository() -> None:
    assert project_root(ROOT / "docs") == ROOT == project_root(ROOT)


def _cluster_project(folder: Path) -> Path:
    """The `cluster` stack in a project of its own, with its kubeconfig beside it under another relative path."""
    folder.mkdir()
    for name in ("Pulumi.yaml", "__main__.py"):
        shutil.copy(ROOT / name, folder / name)
    text = (ROOT / "Pulumi.cluster.yaml").read_text()
    (folder / "Pulumi.onprem.yaml").write_text(text.replace("examples/kubeconfig.placeholder.yaml", "kube/admin.yaml"))
    (folder / "kube").mkdir()
    shutil.copy(PLACEHOLDER, folder / "kube" / "admin.yaml")
    return folder


def test_a_relative_kubeconfig_path_is_read_from_the_project_and_the_folder_restored(tmp_path: Path) -> None:
    project = _cluster_project(tmp_path / "onprem")
    before = Path.cwd()
    plan = run("onprem", root=project)
    assert plan.stack == "onprem" and Path.cwd() == before
    assert any(r["type"] == "pulumi:providers:kubernetes" for r in plan.resources)


def test_the_cli_plans_the_project_it_is_run_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    project = _cluster_project(tmp_path / "onprem")
    (project / "ops").mkdir()
    monkeypatch.chdir(project / "ops")
    assert main(["onprem"]) == 0
    assert capsys.readouterr().out.startswith("stack onprem: ")


def test_a_relative_kubeconfig_is_not_read_from_the_package_when_the_project_lacks_it(tmp_path: Path) -> None:
    project = _cluster_project(tmp_path / "onprem")
    shutil.copy(ROOT / "Pulumi.cluster.yaml", project / "Pulumi.onprem.yaml")  # examples/kubeconfig.placeholder.yaml
    from components.config import ConfigError

    with pytest.raises(ConfigError, match="no such file") as refused:
        run("onprem", root=project)
    assert refused.value.key == "gpushare:cluster.kubeconfigPath" and PLACEHOLDER.is_file()
