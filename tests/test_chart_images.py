"""The chart image table against the pinned values.yaml files, and every image of a mirrored stack from a mirror."""

from __future__ import annotations

import json
from typing import Any

import pytest

from components.chart_images import (
    CHARTS,
    ChartImages,
    chart_images,
    deep_merge,
    default_values,
    get,
    mirror_values,
    put,
    reference,
    runs,
)
from components.images import Mirrors
from components.versions import kubernetes_release
from tests.conftest import STACKS
from tests.golden.regenerate import MIRROR_HOST, MIRRORED, chart_sources, variants
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
    (raw,) = MIRRORED
    return Mirrors(by_host=json.loads(raw.partition("=")[2]))


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
                chart_defaults = deep_merge(default_values(ChartImages(table.chart, table.version, (image,))),
                                            chart_defaults)
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
