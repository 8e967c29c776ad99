"""Stack `cluster`: HAMi on top of the GPU Operator — the RuntimeClass rule both ways, the ordering, the mirror."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

RELEASE = "kubernetes:helm.sh/v3:Release"
MIRROR = "harbor.example.com/mirror"
VARIANTS = [
    (),
    ("gpushare:toolkit=host", "gpushare:gpuOperator=null"),
    ("gpushare:gpuOperator.cdiEnabled=false",),
    (f"gpushare:imageRegistry={MIRROR}",),
]


def _hami(plan: Any) -> dict[str, Any]:
    return plan.one(RELEASE, "hami-release")


def _device_plugin(plan: Any) -> dict[str, Any]:
    return _hami(plan)["inputs"]["values"]["devicePlugin"]


def _image_keys(values: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], str]]:
    if isinstance(values, dict):
        for key, value in values.items():
            if key in ("repository", "registry", "imageRegistry") and isinstance(value, str):
                yield (*path, key), value
            else:
                yield from _image_keys(value, (*path, key))


def test_cluster_hami_runtime_class_is_nvidia_legacy_under_cdi_gpu_operator(plan_stack) -> None:
    assert _device_plugin(plan_stack("cluster"))["runtimeClassName"] == "nvidia-legacy"


def test_cluster_hami_runtime_class_unset_with_toolkit_host(plan_stack) -> None:
    plan = plan_stack("cluster", "gpushare:toolkit=host", "gpushare:gpuOperator=null")
    assert "runtimeClassName" not in _device_plugin(plan)


def test_cluster_hami_runtime_class_unset_when_operator_cdi_is_off(plan_stack) -> None:
    # nvidia-legacy exists only while the operator's CDI is on.
    assert "runtimeClassName" not in _device_plugin(plan_stack("cluster", "gpushare:gpuOperator.cdiEnabled=false"))


@pytest.mark.parametrize("overrides", VARIANTS, ids=["cdi", "host", "cdi-off", "mirror"])
def test_cluster_hami_create_runtime_class_never_true(plan_stack, overrides: tuple[str, ...]) -> None:
    assert _device_plugin(plan_stack("cluster", *overrides)).get("createRuntimeClass") is not True


def test_cluster_hami_waits_for_the_gpu_operator_and_the_node_labels(plan_stack) -> None:
    after = _hami(plan_stack("cluster"))["dependsOn"]
    assert "gpu-operator-ready-job" in after  # the ClusterPolicy is ready: the toolkit (and nvidia-legacy) exist
    assert "cluster-gpu-labels-node" in after


def test_cluster_hami_selects_the_nodes_we_label(plan_stack) -> None:
    plan = plan_stack("cluster")
    (patch,) = plan.find("kubernetes:core/v1:NodePatch")
    assert _device_plugin(plan)["nvidiaNodeSelector"] == patch["inputs"]["metadata"]["labels"] == {"gpu": "on"}


def test_cluster_hami_2_10_0_into_hami_system_its_scheduler_tag_from_the_server(plan_stack) -> None:
    plan = plan_stack("cluster")
    inputs = _hami(plan)["inputs"]
    assert (inputs["version"], inputs["namespace"]) == ("2.10.0", "hami-system")
    assert "scheduler" not in inputs["values"]  # the chart takes the tag from the server it is installed on
    assert "registry.cn-hangzhou.aliyuncs.com/google_containers/kube-scheduler:v1.35.6" in plan.outputs["images"]


def test_cluster_mirror_reaches_every_image_of_both_releases(plan_stack) -> None:
    plan = plan_stack("cluster", f"gpushare:imageRegistry={MIRROR}")
    for name in ("gpu-operator-release", "hami-release"):
        keys = list(_image_keys(plan.one(RELEASE, name)["inputs"]["values"]))
        assert keys, name
        for path, value in keys:
            assert value == MIRROR or value.startswith(f"{MIRROR}/"), (name, path, value)
