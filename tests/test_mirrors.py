"""Registry mirrors and chart sources: the one mirroring rule, its config and refusals, and where charts come from."""

from __future__ import annotations

from pathlib import Path

import pytest

from components import airgap_doc
from components.config import ConfigError, parse
from components.gpu import isolator
from components.gpu.chart import ChartRelease, ChartSource, chart_location
from components.images import Mirrors, mirrored, split_reference
from components.plan import ROOT, _as_pulumi_config, main, read_stack_config
from tests.conftest import STACKS
from tests.golden.regenerate import registry_mirrors

RELEASE = "kubernetes:helm.sh/v3:Release"


def _mirror(kind: str, stack: str) -> tuple[str, ...]:
    """One mirror for every upstream, or one per upstream the stack pulls from (config refuses one it never does)."""
    return (CATCH_ALL,) if kind == "catch-all" else (registry_mirrors(stack),)


def _parse(stack: str, *overrides: str):
    config, _ = read_stack_config(stack, list(overrides))
    return parse(_as_pulumi_config(config))


def _refusal(stack: str, *overrides: str) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        _parse(stack, *overrides)
    return caught.value


# --- the rule -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("image", "host", "rest"),
    [
        ("python:3.12-slim-bookworm", "docker.io", "library/python:3.12-slim-bookworm"),
        ("nvidia/cuda:12.4.1-base-ubuntu22.04", "docker.io", "nvidia/cuda:12.4.1-base-ubuntu22.04"),
        ("docker.io/python:3", "docker.io", "library/python:3"),
        ("index.docker.io/projecthami/hami:v2.9.0", "docker.io", "projecthami/hami:v2.9.0"),
        ("nvcr.io/nvidia/k8s/container-toolkit:v1.20.0", "nvcr.io", "nvidia/k8s/container-toolkit:v1.20.0"),
        ("registry.local:5000/x:1", "registry.local:5000", "x:1"),
    ],
)
def test_an_image_reference_splits_into_its_registry_host_and_path(image: str, host: str, rest: str) -> None:
    assert split_reference(image) == (host, rest)


def test_each_upstream_goes_to_its_own_mirror_and_the_rest_to_the_default() -> None:
    mirrors = Mirrors(
        by_host={"docker.io": "harbor.example.com/dockerhub", "nvcr.io": "harbor.example.com/nvcr"},
        default="registry.local:5000/all",
    )
    assert mirrors.image("python:3.12") == "harbor.example.com/dockerhub/library/python:3.12"
    assert mirrors.image("nvcr.io/nvidia/gpu-operator:v26.7.0") == "harbor.example.com/nvcr/nvidia/gpu-operator:v26.7.0"
    assert mirrors.image("ghcr.io/org/img:1") == "registry.local:5000/all/ghcr.io/org/img:1"


def test_the_catch_all_mirror_keeps_each_upstream_host_so_kyvernos_two_registries_stay_apart() -> None:
    mirrors = Mirrors(default="harbor.example.com/mirror")
    assert mirrors.image("ghcr.io/kyverno/readiness-checker:v1.18.2") == (
        "harbor.example.com/mirror/ghcr.io/kyverno/readiness-checker:v1.18.2"
    )
    assert mirrors.image("reg.kyverno.io/kyverno/readiness-checker:v1.18.2") == (
        "harbor.example.com/mirror/reg.kyverno.io/kyverno/readiness-checker:v1.18.2"
    )
    assert mirrors.location("reg.kyverno.io") == "harbor.example.com/mirror/reg.kyverno.io"
    assert mirrors.image("python:3.12") == "harbor.example.com/mirror/docker.io/library/python:3.12"
    # A port cannot be part of a path component (distribution/reference/regexp.go): it is joined by `-`.
    assert mirrors.image("registry.local:5000/x:1") == "harbor.example.com/mirror/registry.local-5000/x:1"


CATCH_ALL = "gpushare:imageRegistry=harbor.example.com/mirror"


@pytest.mark.parametrize("stack", STACKS)
@pytest.mark.parametrize("kind", ["catch-all", "per-upstream"])
def test_no_two_upstream_images_of_a_stack_share_one_mirrored_reference(plan_stack, stack: str, kind: str) -> None:
    mirror = _mirror(kind, stack)
    upstream = plan_stack(stack).outputs["images"]
    mirrored_plan = plan_stack(stack, *mirror)
    mirrors = _parse(stack, *mirror).mirrors
    pulled_as = {image: mirrors.image(image) for image in upstream}
    assert len(set(pulled_as.values())) == len(upstream), "two upstream images share one mirrored reference"
    # A pull-through proxy serves one upstream per path: no upstream's mirror path may hold another's.
    prefixes = sorted(f"{mirrors.prefix_for(host)}/" for host in {split_reference(image)[0] for image in upstream})
    assert not [(a, b) for a in prefixes for b in prefixes if a != b and b.startswith(a)]
    assert len(set(prefixes)) == len(prefixes)
    # What the stack's values and Pods pull through the mirror is what the rule says, image by image.
    assert sorted(pulled_as.values()) == mirrored_plan.outputs["images"]


def test_an_upstream_without_a_mirror_is_pulled_from_upstream() -> None:
    mirrors = Mirrors(by_host={"docker.io": "harbor.example.com/dockerhub"})
    assert mirrors.image("ghcr.io/org/img:1") == "ghcr.io/org/img:1"
    assert mirrors.location("ghcr.io/kai-scheduler/kai-scheduler") == "ghcr.io/kai-scheduler/kai-scheduler"
    assert not mirrors.is_mirrored("ghcr.io/org/img:1")


def test_a_chart_registry_value_keeps_its_path_behind_the_mirror() -> None:
    mirrors = Mirrors(by_host={"ghcr.io": "harbor.example.com/ghcr", "docker.io": "harbor.example.com/dockerhub"})
    assert mirrors.location("docker.io") == "harbor.example.com/dockerhub"
    kai = "ghcr.io/kai-scheduler/kai-scheduler"
    assert mirrors.location(kai) == "harbor.example.com/ghcr/kai-scheduler/kai-scheduler"


def test_no_mirror_leaves_every_image_as_written() -> None:
    assert not Mirrors()
    assert mirrored("python:3.12", None) == mirrored("python:3.12", Mirrors()) == "python:3.12"


# --- config -----------------------------------------------------------------------------------------------------


def test_registry_mirrors_and_image_registry_make_one_mirrors_object() -> None:
    cfg = _parse(
        "cluster",
        'gpushare:registryMirrors={"nvcr.io": "harbor.example.com/nvcr"}',
        "gpushare:imageRegistry=registry.local:5000/all",
    )
    assert cfg.mirrors == Mirrors(by_host={"nvcr.io": "harbor.example.com/nvcr"}, default="registry.local:5000/all")


@pytest.mark.parametrize(
    ("override", "key", "fix"),
    [
        (
            'gpushare:registryMirrors={"docker": "harbor.example.com/dockerhub"}',
            'gpushare:registryMirrors["docker"]',
            "such as docker.io",
        ),
        (
            'gpushare:registryMirrors={"https://nvcr.io": "harbor.example.com/nvcr"}',
            'gpushare:registryMirrors["https://nvcr.io"]',
            "such as docker.io",
        ),
        (
            'gpushare:registryMirrors={"nvcr.io": "harbor.example.com/NVCR"}',
            'gpushare:registryMirrors["nvcr.io"]',
            "harbor.example.com/dockerhub",
        ),
        (
            'gpushare:registryMirrors={"nvcr.io": "harbor.example.com/nvcr/"}',
            'gpushare:registryMirrors["nvcr.io"]',
            "without",
        ),
        ("gpushare:imageRegistry=https://harbor.example.com", "gpushare:imageRegistry", "host and path only"),
    ],
)
def test_a_mirror_that_is_no_image_reference_part_is_refused_naming_the_key(override: str, key: str, fix: str) -> None:
    err = _refusal("cluster", override)
    assert err.key == key and fix in err.problem
    assert "\n" not in str(err)


def test_a_chart_source_with_both_or_neither_is_refused() -> None:
    err = _refusal("k3s", 'gpushare:chartSources={"hami": {"repository": "oci://h.example/c", "path": "charts/hami"}}')
    assert err.key == "gpushare:chartSources.hami" and "exactly one" in err.problem


def test_a_chart_repository_that_is_no_oci_or_https_url_is_refused() -> None:
    err = _refusal("k3s", 'gpushare:chartSources={"hami": {"repository": "harbor.example.com/charts"}}')
    assert err.key == "gpushare:chartSources.hami.repository" and "oci://" in err.problem


def test_an_unknown_chart_is_refused_with_the_known_ones() -> None:
    err = _refusal("k3s", 'gpushare:chartSources={"hammi": {"repository": "oci://h.example/c"}}')
    assert err.key == "gpushare:chartSources.hammi" and "hami" in err.problem


def _local_chart(root: Path, name: str, version: str) -> Path:
    chart = root / name
    chart.mkdir()
    (chart / "Chart.yaml").write_text(f"apiVersion: v2\nname: {name}\nversion: {version}\n")
    return chart


def test_a_local_chart_of_another_version_is_refused(tmp_path: Path) -> None:
    chart = _local_chart(tmp_path, "hami", "2.10.0")
    err = _refusal("k3s", f'gpushare:chartSources={{"hami": {{"path": "{chart}"}}}}')
    assert err.key == "gpushare:chartSources.hami.path"
    assert "hami 2.10.0" in err.problem and "pins hami 2.9.0" in err.problem


def test_a_missing_local_chart_is_refused_with_the_helm_pull_that_fills_it(tmp_path: Path) -> None:
    err = _refusal("k3s", f'gpushare:chartSources={{"hami": {{"path": "{tmp_path / "nothing"}"}}}}')
    assert err.key == "gpushare:chartSources.hami.path" and "helm pull --untar --version 2.9.0" in err.problem


def test_a_refused_chart_source_registers_nothing(tmp_path: Path, capsys) -> None:
    assert main(["k3s", "-c", f'gpushare:chartSources={{"hami": {{"path": "{tmp_path}"}}}}']) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: gpushare:chartSources.hami.path: ") and err.count("\n") == 1


# --- where charts come from ---------------------------------------------------------------------------------------


def _spec(source: ChartSource | None) -> ChartRelease:
    return ChartRelease(
        "hami", "hami", "2.9.0", "kube-system", {}, repo="https://project-hami.github.io/HAMi", source=source
    )


def test_a_chart_comes_from_its_public_repository_by_default() -> None:
    assert chart_location(_spec(None)) == ("hami", "https://project-hami.github.io/HAMi")


def test_a_chart_from_a_private_oci_registry_is_that_registrys_reference() -> None:
    assert chart_location(_spec(ChartSource(repository="oci://harbor.example.com/charts/"))) == (
        "oci://harbor.example.com/charts/hami",
        None,
    )


def test_a_chart_from_a_private_helm_repository_keeps_its_name() -> None:
    assert chart_location(_spec(ChartSource(repository="https://charts.example.com"))) == (
        "hami",
        "https://charts.example.com",
    )


def test_a_local_chart_is_installed_from_its_directory_at_the_pinned_version(plan_stack, tmp_path: Path) -> None:
    chart = _local_chart(tmp_path, "hami", "2.9.0")
    inputs = plan_stack("k3s", f'gpushare:chartSources={{"hami": {{"path": "{chart}"}}}}').one(RELEASE, "hami-release")[
        "inputs"
    ]
    assert (inputs["chart"], inputs["version"]) == (str(chart), "2.9.0")
    assert "repositoryOpts" not in inputs


def test_a_kai_chart_from_a_private_oci_registry_keeps_the_pinned_version(plan_stack) -> None:
    plan = plan_stack("gke", 'gpushare:chartSources={"kai": {"repository": "oci://harbor.example.com/charts"}}')
    inputs = plan.one(RELEASE, "kai-release")["inputs"]
    assert (inputs["chart"], inputs["version"]) == ("oci://harbor.example.com/charts/kai-scheduler", "v0.17.0")
    assert plan.one(RELEASE, "isolator-release")["inputs"]["chart"] == isolator.CHART  # the others stay public


def test_airgap_page_lists_are_what_the_plans_pull() -> None:
    page = airgap_doc.PAGE.read_text()
    start, end = page.index(airgap_doc.BEGIN), page.index(airgap_doc.END) + len(airgap_doc.END)
    assert page[start:end] == airgap_doc.airgap_markdown(), "run: python -m components.airgap_doc --write"


def test_a_relative_local_chart_is_read_from_the_project_directory(tmp_path: Path) -> None:
    err = _refusal("k3s", 'gpushare:chartSources={"hami": {"path": "charts/hami"}}')
    assert str(ROOT / "charts" / "hami" / "Chart.yaml") in err.problem


@pytest.mark.parametrize(
    ("stack", "override", "key"),
    [
        ("gke", "gpushare:kai.version=v0.16.0", "gpushare:kai.version"),
        ("gke", "gpushare:gkeCdi.kyvernoVersion=3.9.1", "gpushare:gkeCdi.kyvernoVersion"),
        ("gke", "gpushare:isolator.version=1.0.0-chart", "gpushare:isolator.version"),
        ("cluster", "gpushare:gpuOperator.version=v26.3.0", "gpushare:gpuOperator.version"),
    ],
)
def test_a_chart_version_the_image_table_lacks_is_refused(stack: str, override: str, key: str) -> None:
    err = _refusal(stack, override)
    assert err.key == key and "components/chart_images.py" in err.problem


def test_a_kyverno_version_is_not_checked_when_kyverno_is_off() -> None:
    cfg = _parse("gke", "gpushare:gkeCdi.kyverno=false", "gpushare:gkeCdi.kyvernoVersion=3.9.1")
    assert "kyverno" not in cfg.chart_pins()


# --- upstreams a partial map leaves out ---------------------------------------------------------------------------


def _warnings(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    import pulumi

    warnings: list[str] = []
    monkeypatch.setattr(pulumi.log, "warn", lambda message, *a, **k: warnings.append(message))
    return warnings


def test_a_partial_mirror_map_names_the_upstreams_it_leaves_unmirrored_in_the_plan_and_at_up(
    fresh_plan, monkeypatch
) -> None:
    warnings = _warnings(monkeypatch)
    plan = fresh_plan(
        "gke",
        [
            'gpushare:registryMirrors={"docker.io": "harbor.example.com/dockerhub"}',
            "gpushare:verify.failOnViolation=false",
        ],
        preview=False,
    )
    upstream = [image for image in plan.outputs["images"] if not image.startswith("harbor.example.com/")]
    assert upstream and plan.outputs["unmirroredRegistries"] == ["ghcr.io", "reg.kyverno.io"]
    assert {split_reference(image)[0] for image in upstream} == {"ghcr.io", "reg.kyverno.io"}
    (warning,) = [w for w in warnings if w.startswith("gpushare:registryMirrors:")]
    assert "ghcr.io, reg.kyverno.io have no mirror" in warning and f"{len(upstream)} of" in warning
    assert 'gpushare:registryMirrors["ghcr.io"]' in warning and "gpushare:imageRegistry" in warning


@pytest.mark.parametrize("stack", STACKS)
@pytest.mark.parametrize("kind", ["catch-all", "per-upstream"])
def test_a_catch_all_or_a_full_map_leaves_no_registry_unmirrored(plan_stack, stack: str, kind: str) -> None:
    assert plan_stack(stack, *_mirror(kind, stack)).outputs["unmirroredRegistries"] == []


@pytest.mark.parametrize("stack", STACKS)
def test_without_a_mirror_every_upstream_is_named_and_nothing_warns(fresh_plan, monkeypatch, stack: str) -> None:
    warnings = _warnings(monkeypatch)
    plan = fresh_plan(stack)
    hosts = sorted({split_reference(image)[0] for image in plan.outputs["images"]})
    assert hosts and plan.outputs["unmirroredRegistries"] == hosts
    assert not [w for w in warnings if w.startswith("gpushare:registryMirrors:")]


def test_every_mirror_helper_names_a_host_by_one_case_blind_rule() -> None:
    from components.images import Mirrors, split_reference, upstream_host

    assert split_reference("GHCR.IO/org/app:1") == ("ghcr.io", "org/app:1")
    assert split_reference("Docker.IO/python:3") == ("docker.io", "library/python:3")
    mirrors = Mirrors(by_host={"GHCR.IO": "harbor.example.com/ghcr"})
    assert mirrors.prefix_for("ghcr.io") == mirrors.prefix_for("GHCR.IO") == "harbor.example.com/ghcr"
    assert mirrors.image("GHCR.IO/org/app:1") == "harbor.example.com/ghcr/org/app:1"
    assert {upstream_host(h) for h in ("GHCR.IO", "ghcr.io", "Ghcr.Io")} == {"ghcr.io"}
