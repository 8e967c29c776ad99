"""Across every stack: each Helm value we set exists in the pinned chart, each Kubernetes object fits 1.35."""

from __future__ import annotations

import pytest

from tests.conftest import STACKS
from tests.helpers.helm_values import has_reference, load_reference, missing_paths
from tests.helpers.k8s_schema import is_custom_kind, objects_in, validate

# Chart name (as the Release names it) → the reference directory prefix under ../shared/reference/charts.
CHART_DIRS = {
    "kai-scheduler": "kai-scheduler-",
    "kai-resource-isolator": "kai-resource-isolator-",
    "hami": "hami-",
    "gpu-operator": "gpu-operator-",
    "kyverno": "kyverno-",
}
# Custom kinds we create on purpose; anything else without a schema is a mistake.
KNOWN_CUSTOM_KINDS = {"ClusterPolicy", "Queue", "Config"}


def _chart_name(chart: str) -> str:
    return chart.rstrip("/").rsplit("/", 1)[-1]


def _reference_dir(chart: str, version: str) -> str:
    prefix = CHART_DIRS[_chart_name(chart)]
    return f"{prefix}{version}"


# GKE's own sharing installs no chart at all (tests/test_gke_native.py pins that).
CHART_STACKS = [s for s in STACKS if s not in ("gke-mps", "gke-time-sharing")]


@pytest.mark.parametrize("stack", CHART_STACKS)
def test_every_helm_value_we_set_exists_in_the_pinned_chart(stack: str, plan_stack) -> None:
    releases = plan_stack(stack).find("kubernetes:helm.sh/v3:Release")
    assert releases, f"stack {stack} installs no chart"
    for release in releases:
        inputs = release["inputs"]
        reference_dir = _reference_dir(inputs["chart"], inputs["version"])
        assert has_reference(reference_dir), f"{release['name']}: no reference values for {reference_dir}"
        reference = load_reference(reference_dir)
        assert missing_paths(inputs.get("values") or {}, reference) == [], release["name"]


@pytest.mark.parametrize("stack", STACKS)
def test_every_kubernetes_object_validates_against_the_1_35_schema(stack: str, plan_stack) -> None:
    objects = objects_in(plan_stack(stack))
    assert objects, f"stack {stack} creates no Kubernetes object"
    for obj in objects:
        if is_custom_kind(obj):
            assert obj["kind"] in KNOWN_CUSTOM_KINDS, f"unexpected custom kind {obj['kind']}"
            continue
        assert validate(obj) is None


def test_missing_paths_finds_a_typo_and_accepts_open_maps() -> None:
    reference = {"scheduler": {"kubeScheduler": {"image": {"tag": ""}}}, "devicePlugin": {"nodeSelector": {}}}
    assert missing_paths({"scheduler": {"kubeScheduler": {"imageTag": "v1"}}}, reference) == [
        "scheduler.kubeScheduler.imageTag"
    ]
    assert missing_paths({"devicePlugin": {"nodeSelector": {"gpu": "on"}}}, reference) == []
    assert missing_paths({"scheduler": {"kubeScheduler": {"image": {"tag": "v1"}}}}, reference) == []


def test_schema_validation_rejects_a_wrong_field() -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "i", "resourcez": {}}]},
    }
    assert validate(pod) is not None
