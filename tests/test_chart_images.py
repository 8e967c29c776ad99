"""The chart image table against the pinned values.yaml files, and every image of a mirrored stack from a mirror."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.chart_images import (
    CHARTS,
    GPU_OPERATOR_V26_7_0,
    ChartImages,
    chart_images,
    deep_merge,
    default_values,
    get,
    mirror_values,
    pulled,
    put,
    reference,
    runs,
)
from components.images import Mirrors
from components.versions import kubernetes_release
from tests.conftest import STACKS
from tests.golden.regenerate import MIRROR_HOST, MIRROR_PROJECTS, chart_sources, variants
from tests.helpers.helm_values import image_maps, load_reference

RELEASE = "kubernetes:helm.sh/v3:Release"
TABLES = sorted(CHARTS.values(), key=lambda c: (c.chart, c.version))
IDS = [f"{c.chart}-{c.version}" for c in TABLES]
CHART_STACKS = [stack for stack in STACKS if chart_sources(stack)]
"""The stacks that install charts (GKE's own MPS and time-sharing install none)."""


def _published(table: ChartImages) -> dict[str, Any]:
    """The pinned values.yaml as the published chart holds it (the release workflow's rewrites applied)."""
    values = load_reference(f"{table.chart}-{table.version}")
    for path, (in_git, published) in table.published.items():
        assert get(values, path) == in_git, f"{'.'.join(path)} is no longer {in_git!r} in git"
        put(values, path, published)
    return values


def _empty_as_none(value: Any) -> Any:
    return None if value in ("", None) else value


@pytest.mark.parametrize("table", TABLES, ids=IDS)
def test_image_table_defaults_are_what_the_pinned_values_yaml_holds(table: ChartImages) -> None:
    values = _published(table)
    for image in table.images:
        if image.subchart:
            continue  # its defaults live in the subchart's own values.yaml, named in the table
        assert get(values, image.name) == image.name_default, (image.role, image.name)
        if image.location is not None:
            assert _empty_as_none(get(values, image.location)) == image.location_default, (image.role, image.location)
        if image.tag is not None:
            assert _empty_as_none(get(values, image.tag)) == image.tag_default, (image.role, image.tag)
        for switch, default in image.switches:
            assert get(values, switch) is default, (image.role, switch)
        for setting, _, default in image.settings:
            assert get(values, setting) == default, (image.role, setting)
        if image.location_fallback is not None:  # Kyverno: the image's `defaultRegistry` beside its `registry`
            assert get(values, (*image.location[:-1], "defaultRegistry")) == image.location_fallback, image.role


@pytest.mark.parametrize("table", TABLES, ids=IDS)
def test_image_table_covers_every_image_the_pinned_values_yaml_names(table: ChartImages) -> None:
    values = _published(table)
    in_table = {image.name[:-1] for image in table.images if not image.subchart}
    left_out = {path for path in table.not_images if get(values, path) is not None}
    assert left_out == set(table.not_images), "a left-out key no longer exists"
    maps = {path for path in image_maps(f"{table.chart}-{table.version}") if path not in table.not_images}
    assert maps == in_table


@pytest.mark.parametrize("table", TABLES, ids=IDS)
def test_mirror_values_are_empty_without_a_mirror(table: ChartImages) -> None:
    assert mirror_values(table, Mirrors()) == {}


@pytest.mark.parametrize("table", TABLES, ids=IDS)
def test_one_mirror_for_all_moves_every_image_of_the_chart(table: ChartImages) -> None:
    mirrors = Mirrors(default="mirror.example:5000/all")
    values = deep_merge(default_values(table), mirror_values(table, mirrors))
    for image in table.images:
        assert reference(image, values, "v1.35.6").startswith("mirror.example:5000/all/"), image.role


# --- a mirrored stack: every image the charts render, derived from values.yaml, comes from a mirror --------


def _mirrored_plan(plan_stack, stack: str) -> Any:
    """The stack as its `-mirrored` golden plan has it: every upstream through a mirror, charts from OCI."""
    return plan_stack(stack, *variants()[f"{stack}-mirrored"][1])


def _mirrors() -> Mirrors:
    return Mirrors(by_host={host: f"{MIRROR_HOST}/{project}" for host, project in MIRROR_PROJECTS.items()})


def _server_version(stack: str) -> str | None:
    return {"k3s": kubernetes_release("v1.36.2+k3s1"), "cluster": "v1.35.6"}.get(stack)


@pytest.mark.parametrize("stack", CHART_STACKS)
def test_mirrored_stack_pulls_every_chart_image_from_a_mirror_per_values_yaml(plan_stack, stack) -> None:
    plan = _mirrored_plan(plan_stack, stack)
    mirrors = _mirrors()
    releases = plan.find(RELEASE)
    assert releases
    for release in releases:
        inputs = release["inputs"]
        name = inputs["chart"].rsplit("/", 1)[-1]
        table = chart_images(name, inputs["version"])
        assert table is not None, name
        chart_defaults = _published(table)
        for image in table.images:
            if image.subchart:  # the subchart's defaults come from the table, the rest from the pinned file
                chart_defaults = deep_merge(
                    default_values(ChartImages(table.chart, table.version, (image,))), chart_defaults
                )
        merged = deep_merge(chart_defaults, inputs["values"])
        for image in table.images:  # those the stack never runs included: a switch flipped later must not leak
            ref = reference(image, merged, _server_version(stack))
            assert mirrors.is_mirrored(ref), (release["name"], image.role, ref)
        derived = {reference(i, merged, _server_version(stack)) for i in table.images if runs(i, merged)}
        assert derived <= set(plan.outputs["images"]), (release["name"], derived - set(plan.outputs["images"]))


@pytest.mark.parametrize("stack", STACKS)
def test_mirrored_stack_images_output_names_no_upstream_registry(plan_stack, stack) -> None:
    plan = _mirrored_plan(plan_stack, stack)
    images = plan.outputs["images"]
    assert images == sorted(images) and images
    assert [image for image in images if not image.startswith(f"{MIRROR_HOST}/")] == []


@pytest.mark.parametrize("stack", CHART_STACKS)
def test_mirrored_stack_pulls_every_chart_from_the_private_oci_registry(plan_stack, stack) -> None:
    releases = _mirrored_plan(plan_stack, stack).find(RELEASE)
    assert releases
    for release in releases:
        assert release["inputs"]["chart"].startswith(f"oci://{MIRROR_HOST}/charts/"), release["name"]
        assert "repositoryOpts" not in release["inputs"]


@pytest.mark.parametrize("stack", STACKS)
def test_images_output_lists_every_image_of_the_stack_once_sorted(plan_stack, stack) -> None:
    plan = plan_stack(stack)
    images = plan.outputs["images"]
    assert images == sorted(set(images))
    specs = [pod["inputs"]["spec"] for pod in plan.find("kubernetes:core/v1:Pod")]
    specs += [job["inputs"]["spec"]["template"]["spec"] for job in plan.find("kubernetes:batch/v1:Job")]
    pod_images = {c["image"] for spec in specs for c in [*spec.get("initContainers", []), *spec["containers"]]}
    assert pod_images and pod_images <= set(images)


# --- what the values make a cluster pull: the table against the real Helm engine's renders ------------------------
# ../shared/reference/rendered holds each release of each stack as Helm renders it with the plan's values. Images of
# workloads are read from it; operands an operator creates at run time are derived from the custom resource the
# chart rendered, by the operator's own rule (cited beside each).

RENDERED_RELEASES = [
    ("gke", "kai-scheduler"),
    ("gke", "kai-resource-isolator"),
    ("gke", "kyverno"),
    ("k3s", "hami"),
    ("cluster", "hami"),
    ("cluster", "gpu-operator"),
]
ABSENT_FROM_RENDER = {"kai-resource-isolator": {"certgen"}}
"""Roles whose templates the rendered copy lacks (its README: the isolator chart's certificate Jobs)."""


def _walk(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from _walk(value)


def _rendered(rendered_dir: Path, stack: str, chart: str) -> list[dict[str, Any]]:
    text = (rendered_dir / f"{stack}-{chart}.yaml").read_text()
    return [doc for doc in yaml.safe_load_all(text) if isinstance(doc, dict)]


def _workload_images(docs: list[dict[str, Any]]) -> set[str]:
    """Every container image of every object, helm test hooks left out (a Release never runs `helm test`)."""
    images: set[str] = set()
    for doc in docs:
        if "test" in str(doc.get("metadata", {}).get("annotations", {}).get("helm.sh/hook", "")).split(","):
            continue
        for node in _walk(doc):
            for key in ("containers", "initContainers"):
                images |= {c["image"] for c in node.get(key) or [] if isinstance(c, dict) and "image" in c}
    return images


def _cluster_policy_operands(spec: dict[str, Any]) -> set[str]:
    """The GPU Operator's operands for a ClusterPolicy: isStateEnabled (controllers/state_manager.go:1005-1052) and
    the specs each state's DaemonSet takes its images from (controllers/object_controls.go, gpuv1.ImagePath)."""

    def on(key: str) -> bool:
        return spec.get(key, {}).get("enabled") is True

    sandbox, mode = on("sandboxWorkloads"), spec["sandboxWorkloads"].get("mode")
    states: dict[tuple[str, ...], bool] = {
        ("validator",): True,
        ("driver",): on("driver"),
        ("driver", "manager"): on("driver"),
        ("gds",): on("driver") and on("gds"),
        ("gdrcopy",): on("driver") and on("gdrcopy"),
        **{
            (key,): on(key)
            for key in ("toolkit", "devicePlugin", "dcgm", "dcgmExporter", "gfd", "migManager", "nodeStatusExporter")
        },
        ("vgpuDeviceManager",): sandbox and on("vgpuDeviceManager"),
        ("vfioManager",): sandbox and on("vfioManager"),
        ("vfioManager", "driverManager"): sandbox and on("vfioManager"),
        ("vgpuManager", "driverManager"): sandbox and on("vgpuManager"),
        ("sandboxDevicePlugin",): sandbox and on("sandboxDevicePlugin") and mode == "kubevirt",
        ("kataSandboxDevicePlugin",): sandbox and on("kataSandboxDevicePlugin") and mode == "kata",
        ("ccManager",): sandbox and on("ccManager") and mode == "kata",
    }
    operands = set()
    for path, deployed in states.items():
        section = get(spec, path)
        if deployed:
            operands.add(f"{section['repository']}/{section['image']}:{section['version']}")
    return operands


def _kai_operands(docs: list[dict[str, Any]]) -> set[str]:
    """The KAI operator's operands for the rendered Config: each section's service when enabled (unset: on), the NUMA
    exporter unset only when a shard enables the numa plugin (numa_placement_exporter.go:59-81)."""
    (config,) = [
        yaml.safe_load(doc["data"]["kai-config.yaml"])
        for doc in docs
        if doc.get("kind") == "ConfigMap" and "kai-config.yaml" in doc.get("data", {})
    ]
    numa_shard = any(
        get(doc, ("spec", "plugins", "numa", "enabled")) is True for doc in docs if doc.get("kind") == "SchedulingShard"
    )
    operands = set()
    for name, section in config["spec"].items():
        service = section.get("service") if isinstance(section, dict) else None
        if not isinstance(service, dict):
            continue
        enabled = service.get("enabled", numa_shard if name == "numaPlacementExporter" else True)
        if enabled:
            operands |= {
                f"{n['repository']}/{n['name']}:{n['tag']}"
                for n in _walk(section)
                if {"name", "repository", "tag"} <= n.keys()
            }
    return operands


def _truth(docs: list[dict[str, Any]], chart: str) -> set[str]:
    images = _workload_images(docs)
    for doc in docs:
        if doc.get("kind") == "ClusterPolicy":
            images |= _cluster_policy_operands(doc["spec"])
    if chart == "kai-scheduler":
        images |= _kai_operands(docs)
    return images


@pytest.mark.parametrize(("stack", "chart"), RENDERED_RELEASES, ids=[f"{s}-{c}" for s, c in RENDERED_RELEASES])
def test_images_lists_exactly_what_the_rendered_release_makes_a_cluster_pull(
    plan_stack, rendered_dir, stack, chart
) -> None:
    plan = plan_stack(stack)
    (release,) = [r for r in plan.find(RELEASE) if r["inputs"]["chart"].rsplit("/", 1)[-1] == chart]
    table = chart_images(chart, release["inputs"]["version"])
    assert table is not None
    listed = set(pulled(table, release["inputs"]["values"], _server_version(stack)))
    merged = deep_merge(default_values(table), release["inputs"]["values"])
    absent = {
        reference(i, merged, _server_version(stack))
        for i in table.images
        if i.role in ABSENT_FROM_RENDER.get(chart, set())
    }
    truth = _truth(_rendered(rendered_dir, stack, chart), chart)
    assert listed - absent == truth - absent, (sorted(listed - truth), sorted(truth - listed))
    assert listed <= set(plan.outputs["images"])


def test_cc_manager_is_listed_only_in_kata_sandbox_mode() -> None:
    kata = {"sandboxWorkloads": {"enabled": True, "mode": "kata"}}
    kubevirt = {"sandboxWorkloads": {"enabled": True}}
    cc = "nvcr.io/nvidia/cloud-native/k8s-cc-manager:v0.4.3"
    assert cc not in pulled(GPU_OPERATOR_V26_7_0, {})
    assert cc not in pulled(GPU_OPERATOR_V26_7_0, kubevirt)
    assert cc in pulled(GPU_OPERATOR_V26_7_0, kata)
    assert "nvcr.io/nvidia/kubevirt-gpu-device-plugin:v1.6.0" in pulled(GPU_OPERATOR_V26_7_0, kubevirt)
    assert "nvcr.io/nvidia/kubevirt-gpu-device-plugin:v1.6.0" not in pulled(GPU_OPERATOR_V26_7_0, kata)
