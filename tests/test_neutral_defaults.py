"""Defaults are what a user anywhere expects: upstream registries and the project's own names. The example stack
files keep the hand-run installs' values (a regional mirror, their cluster and node names) explicitly."""

from __future__ import annotations

import re
from typing import Any

import pytest

from components import config, config_doc
from components.chart_images import chart_images
from components.gpu import hami
from components.plan import EXAMPLE_STACKS, read_stack_config
from tests.helpers.helm_values import load_reference

RELEASE = "kubernetes:helm.sh/v3:Release"
MIRROR = "harbor.example.com"
LAB_MARKS = re.compile(r"aliyuncs\.com|daocloud|\.cn\b|\blab\b|-lab|lab-|-test\b|kai-hami")
"""What a value carried over from a hand-run install looks like: a regional mirror, a lab's or a test's name."""


def _defaults() -> list[tuple[str, str]]:
    rows = {(key, default) for variant in config.VARIANTS.values() for key, default, _ in config_doc._rows(variant, "")}
    return sorted(rows)


def test_no_default_is_a_regional_mirror_or_a_labs_name() -> None:
    defaults = _defaults()
    assert len(defaults) > 100
    assert [(k, d) for k, d in defaults if LAB_MARKS.search(d)] == []


def test_the_names_a_lab_gave_stay_in_the_example_stack_files() -> None:
    kept = {stack: read_stack_config(stack, [])[0] for stack in EXAMPLE_STACKS}
    assert kept["gke"]["gpushare:gke"]["clusterName"] == "kai-hami-test"
    assert kept["k3s"]["gpushare:k3s"]["nodeName"] == "hami-lab-rtx6000"
    for stack in ("k3s", "cluster"):
        assert kept[stack]["gpushare:hami"]["schedulerImage"] == "/".join(hami.CHART_SCHEDULER_IMAGE)


@pytest.mark.parametrize("version", sorted(hami.CHART_KEYS))
def test_the_chart_default_kube_scheduler_is_the_one_the_stack_files_name(version: str) -> None:
    image = load_reference(f"hami-{version}")["scheduler"]["kubeScheduler"]["image"]
    assert (image["registry"], image["repository"]) == hami.CHART_SCHEDULER_IMAGE
    table = chart_images("hami", version)
    assert table is not None
    scheduler = next(i for i in table.images if i.role == "kube-scheduler")
    assert (scheduler.location_default, scheduler.name_default) == hami.CHART_SCHEDULER_IMAGE


def _scheduler_values(plan: Any) -> Any:
    values = plan.one(RELEASE, "hami-release")["inputs"]["values"]
    return values.get("scheduler", {}).get("kubeScheduler", {}).get("image")


@pytest.mark.parametrize("stack", ["k3s", "cluster"])
def test_kube_scheduler_comes_from_upstream_unless_config_names_another(stack: str, plan_stack: Any) -> None:
    own = plan_stack(stack, "gpushare:hami.schedulerImage=null")
    assert _scheduler_values(own) == {"registry": "registry.k8s.io", "repository": "kube-scheduler"}
    assert next(i for i in own.outputs["images"] if "kube-scheduler" in i).startswith(
        "registry.k8s.io/kube-scheduler:v"
    )
    example = plan_stack(stack)  # the chart's own default, named in the stack file: no value set, as before
    assert _scheduler_values(example) is None
    assert any(i.startswith("registry.cn-hangzhou.aliyuncs.com/") for i in example.outputs["images"])


def test_upstream_kube_scheduler_goes_through_its_mirror(plan_stack: Any) -> None:
    plan = plan_stack(
        "k3s", "gpushare:hami.schedulerImage=null", f'gpushare:registryMirrors={{"registry.k8s.io": "{MIRROR}/k8s"}}'
    )
    assert _scheduler_values(plan) == {"registry": f"{MIRROR}/k8s", "repository": "kube-scheduler"}
    assert any(i.startswith(f"{MIRROR}/k8s/kube-scheduler:") for i in plan.outputs["images"])


@pytest.mark.parametrize(
    "bad",
    ["kube-scheduler", "registry.k8s.io/kube-scheduler:v1.35.6", "registry.k8s.io/kube-scheduler@sha256:" + "a" * 64],
)
def test_a_scheduler_image_without_its_registry_or_with_a_tag_is_refused(bad: str, plan_stack: Any) -> None:
    from components.config import ConfigError

    with pytest.raises(ConfigError) as refused:
        plan_stack("k3s", f"gpushare:hami.schedulerImage={bad}")
    assert refused.value.key == "gpushare:hami.schedulerImage"
