"""Stack `cluster` as a whole: every Kubernetes object validates, both toolkit choices, a deterministic plan."""

from __future__ import annotations

import pytest

from tests.helpers.k8s_schema import is_custom_kind, objects_in, validate

VARIANTS = [
    (),
    ("gpushare:toolkit=host", "gpushare:gpuOperator=null"),
    ("gpushare:imageRegistry=harbor.example.com/mirror",),
]


@pytest.mark.parametrize("overrides", VARIANTS, ids=["gpu-operator", "toolkit-host", "mirror"])
def test_cluster_every_kubernetes_object_validates(plan_stack, overrides: tuple[str, ...]) -> None:
    objects = [o for o in objects_in(plan_stack("cluster", *overrides)) if not is_custom_kind(o)]
    assert any(o["kind"] == "Node" for o in objects)
    assert [c for c in map(validate, objects) if c] == []


def test_cluster_plan_registers_the_article_combination(plan_stack) -> None:
    plan = plan_stack("cluster")
    assert plan.one("gpushare:platform:ExistingCluster", "cluster")
    assert plan.one("gpushare:platform:NodeLabels", "cluster-gpu-labels")
    assert plan.one("gpushare:gpu:GpuOperator", "gpu-operator")


def test_cluster_plan_is_deterministic(fresh_plan) -> None:
    assert fresh_plan("cluster", []).to_json() == fresh_plan("cluster", []).to_json()
