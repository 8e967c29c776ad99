"""The GPU Operator as toolkit only: its values, the mirror reaching every image, and nothing under toolkit host."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from components.chart_images import GPU_OPERATOR_V26_7_0
from components.compose.toolkit import toolkit
from components.config import GpuOperatorConfig, parse
from components.gpu.operator import GpuOperatorArgs, operator_values
from components.images import mirrored
from components.plan import _as_pulumi_config, read_stack_config
from tests.helpers.helm_values import load_reference, missing_paths

RELEASE = "kubernetes:helm.sh/v3:Release"
MIRROR = "harbor.example.com/mirror"
REFERENCE = "gpu-operator-v26.7.0"
NFD_IMAGE_PATH = ("node-feature-discovery", "image")
IMAGE_REPOSITORIES = {
    image.location[:-1]: image.location_default for image in GPU_OPERATOR_V26_7_0.images if image.location is not None
}
"""The image table's `repository` keys (registry and path, such as nvcr.io/nvidia), by the map holding them."""


def _release(plan: Any) -> dict[str, Any]:
    return plan.one(RELEASE, "gpu-operator-release")


def _image_dicts(values: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], dict[str, Any]]]:
    """Every map that names an image repository or registry, with its path."""
    if isinstance(values, dict):
        if "repository" in values or "registry" in values:
            yield path, values
        for key, value in values.items():
            yield from _image_dicts(value, (*path, key))


def test_operator_installs_chart_v26_7_0_from_nvidias_repo_into_gpu_operator(plan_stack) -> None:
    inputs = _release(plan_stack("cluster"))["inputs"]
    assert (inputs["chart"], inputs["version"], inputs["name"]) == ("gpu-operator", "v26.7.0", "gpu-operator")
    assert inputs["repositoryOpts"] == {"repo": "https://helm.ngc.nvidia.com/nvidia"}
    assert inputs["namespace"] == "gpu-operator"


def test_operator_driver_and_device_plugin_are_off_toolkit_on(plan_stack) -> None:
    values = _release(plan_stack("cluster"))["inputs"]["values"]
    assert values["driver"] == {"enabled": False}
    assert values["devicePlugin"] == {"enabled": False}
    assert values["toolkit"]["enabled"] is True


def test_operator_release_waits_for_its_namespace_on_the_cluster_provider(plan_stack) -> None:
    plan = plan_stack("cluster")
    release, namespace = _release(plan), plan.one("kubernetes:core/v1:Namespace", "gpu-operator-namespace")
    assert "gpu-operator-namespace" in release["dependsOn"]
    assert namespace["inputs"]["metadata"]["name"] == "gpu-operator"
    assert release["options"]["provider"] == namespace["options"]["provider"] == "cluster-provider"
    assert release["parent"] == namespace["parent"] == "gpu-operator"


def test_operator_cdi_default_matches_the_charts_default() -> None:
    reference = load_reference(REFERENCE)
    assert reference["cdi"]["enabled"] is True
    assert GpuOperatorConfig().cdi_enabled is reference["cdi"]["enabled"]


@pytest.mark.parametrize("cdi", [True, False])
def test_operator_cdi_enabled_follows_config(plan_stack, cdi: bool) -> None:
    values = _release(plan_stack("cluster", f"gpushare:gpuOperator.cdiEnabled={str(cdi).lower()}"))["inputs"]["values"]
    assert values["cdi"] == {"enabled": cdi}


def test_operator_every_helm_value_path_exists_in_the_pinned_chart(plan_stack) -> None:
    reference = load_reference(REFERENCE)
    assert missing_paths(_release(plan_stack("cluster"))["inputs"]["values"], reference) == []


def test_operator_mirrored_value_paths_exist_beyond_only_the_nfd_subchart_image(plan_stack) -> None:
    # The reference holds the parent chart's values.yaml only; NFD's `image.repository` is the subchart's.
    reference = load_reference(REFERENCE)
    values = _release(plan_stack("cluster", f"gpushare:imageRegistry={MIRROR}"))["inputs"]["values"]
    assert missing_paths(values, reference) == ["node-feature-discovery.image.repository"]
    assert "node-feature-discovery" in reference  # the subchart is vendored, so its values live under this key


def test_operator_image_table_matches_every_repository_of_the_pinned_chart() -> None:
    reference = load_reference(REFERENCE)
    in_chart = {path: d["repository"] for path, d in _image_dicts(reference) if d.get("repository")}
    assert in_chart == IMAGE_REPOSITORIES


def test_operator_mirror_reaches_every_image_value(plan_stack) -> None:
    reference = load_reference(REFERENCE)
    values = _release(plan_stack("cluster", f"gpushare:imageRegistry={MIRROR}"))["inputs"]["values"]
    rendered = dict(_image_dicts(values))
    for path, upstream in _image_dicts(reference):
        if upstream.get("repository"):
            assert rendered[path]["repository"] == mirrored(upstream["repository"], MIRROR), path
    assert rendered[NFD_IMAGE_PATH]["repository"] == f"{MIRROR}/registry.k8s.io/nfd/node-feature-discovery"
    for path, image in rendered.items():
        for key in ("repository", "registry"):
            if key in image:
                assert image[key].startswith(f"{MIRROR}/"), (path, key, image[key])


def test_operator_without_mirror_sets_no_image_value(plan_stack) -> None:
    values = _release(plan_stack("cluster"))["inputs"]["values"]
    assert list(_image_dicts(values)) == []


@pytest.mark.parametrize(
    ("upstream", "registry", "expected"),
    [
        ("nvcr.io/nvidia/k8s", "harbor.example.com/mirror", "harbor.example.com/mirror/nvcr.io/nvidia/k8s"),
        (
            "registry.k8s.io/nfd/node-feature-discovery",
            "10.0.0.5:5000/",
            "10.0.0.5:5000/registry.k8s.io/nfd/node-feature-discovery",
        ),
        ("localhost/x", "m.example", "m.example/localhost/x"),
        ("library/python", "m.example", "m.example/docker.io/library/python"),
    ],
)
def test_operator_catch_all_mirror_keeps_the_registry_host_as_a_path_segment(
    upstream: str, registry: str, expected: str
) -> None:
    assert mirrored(upstream, registry) == expected


def test_operator_values_pass_driver_and_device_plugin_switches_through() -> None:
    args = GpuOperatorArgs(
        GpuOperatorConfig(cdi_enabled=False, driver_enabled=True, device_plugin_enabled=True), stack="test"
    )
    values = operator_values(args)
    assert (values["driver"], values["devicePlugin"], values["cdi"]) == (
        {"enabled": True},
        {"enabled": True},
        {"enabled": False},
    )


def test_operator_toolkit_facts_carry_cdi_and_the_release_for_hami(plan_stack) -> None:
    plan = plan_stack("cluster")
    assert (
        plan.outputs["installed"] == "gpu-operator v26.7.0 (https://helm.ngc.nvidia.com/nvidia) in gpu-operator: "
        "toolkit only"
    )
    assert plan.component_outputs["gpu-operator"]["installed"] == plan.outputs["installed"]


def test_operator_absent_with_toolkit_host(plan_stack) -> None:
    plan = plan_stack("cluster", "gpushare:toolkit=host", "gpushare:gpuOperator=null")
    assert plan.find(RELEASE, "gpu-operator-release") == []
    assert plan.find("gpushare:gpu:GpuOperator") == []
    assert plan.find("kubernetes:core/v1:Namespace", "gpu-operator-namespace") == []
    assert plan.outputs["installed"] == "nothing: toolkit from the host"


@pytest.mark.parametrize(
    ("stack", "said"), [("gke", "nothing: toolkit from GKE"), ("k3s", "nothing: toolkit from the host")]
)
def test_operator_installs_nothing_where_the_toolkit_is_already_there(stack: str, said: str) -> None:
    config, _ = read_stack_config(stack, [])
    cfg = parse(_as_pulumi_config(config))
    facts = toolkit(cfg, cluster=None)  # type: ignore[arg-type]  # registers nothing, reads no cluster
    assert (facts.cdi_enabled, list(facts.ready)) == (False, [])
    assert facts.outputs == {"installed": said}
