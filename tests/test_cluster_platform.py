"""Stack `cluster`: the provider from a kubeconfig (secret or path), the checks on it, and the GPU node labels."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pulumi.runtime import rpc

from components.config import ConfigError
from components.config.kubeconfig import check_kubeconfig, read_kubeconfig
from components.mocks import MOCK_KUBECONFIG, GpushareMocks

PROVIDER = "pulumi:providers:kubernetes"
NODE_PATCH = "kubernetes:core/v1:NodePatch"
ROOT = Path(__file__).resolve().parent.parent
PLACEHOLDER = ROOT / "examples" / "kubeconfig.placeholder.yaml"
SECRET_KUBECONFIG = (
    "gpushare:cluster.kubeconfig=" + json.dumps(MOCK_KUBECONFIG),
    "gpushare:cluster.kubeconfigPath=null",
)


def test_cluster_provider_kubeconfig_is_secret_in_the_plan(plan_stack) -> None:
    provider = plan_stack("cluster").one(PROVIDER, "cluster-provider")
    assert provider["inputs"]["kubeconfig"] == "[secret]"
    assert provider["inputs"]["enableServerSideApply"] == "true"
    assert provider["parent"] == "cluster"


def test_cluster_kubeconfig_path_is_read_into_the_provider(fresh_plan) -> None:
    seen: dict[str, Any] = {}

    def capture(args: Any, state: dict[str, Any]) -> None:
        if args.typ == PROVIDER:
            seen.update(args.inputs)

    fresh_plan("cluster", [], mocks=GpushareMocks(override=capture))
    # The provider gets the file's text, wrapped as a secret (the engine's secret envelope).
    assert seen["kubeconfig"]["value"] == PLACEHOLDER.read_text()
    assert seen["kubeconfig"][rpc._special_sig_key] == rpc._special_secret_sig


def test_cluster_kubeconfig_secret_value_never_reaches_outputs_or_inputs_in_clear(plan_stack) -> None:
    plan = plan_stack("cluster", *SECRET_KUBECONFIG)
    assert plan.one(PROVIDER, "cluster-provider")["inputs"]["kubeconfig"] == "[secret]"
    text = plan.to_json()
    assert "mock-token" not in text and 'kubeconfig": "apiVersion' not in text
    assert not any("kubeconfig" in name.lower() for name in plan.outputs)


def test_cluster_context_is_passed_to_the_provider(plan_stack) -> None:
    provider = plan_stack("cluster", "gpushare:cluster.context=onprem-admin").one(PROVIDER, "cluster-provider")
    assert provider["inputs"]["context"] == "onprem-admin"


def test_cluster_missing_kubeconfig_file_names_the_path_key(fresh_plan) -> None:
    with pytest.raises(ConfigError) as err:
        fresh_plan("cluster", ["gpushare:cluster.kubeconfigPath=does/not/exist.yaml"])
    assert err.value.key == "gpushare:cluster.kubeconfigPath"
    assert "does/not/exist.yaml" in err.value.problem


def test_cluster_unknown_context_is_refused_with_the_known_ones() -> None:
    with pytest.raises(ConfigError) as err:
        check_kubeconfig(PLACEHOLDER.read_text(), "prod", "gpushare:cluster.kubeconfigPath")
    assert err.value.key == "gpushare:cluster.context"
    assert "onprem-admin" in err.value.problem


def test_cluster_kubeconfig_without_clusters_is_refused() -> None:
    with pytest.raises(ConfigError) as err:
        check_kubeconfig("just: text", None, "gpushare:cluster.kubeconfig")
    assert err.value.key == "gpushare:cluster.kubeconfig"


def test_cluster_kubeconfig_without_current_context_needs_one() -> None:
    text = PLACEHOLDER.read_text().replace("current-context: onprem-admin", "")
    with pytest.raises(ConfigError) as err:
        check_kubeconfig(text, None, "gpushare:cluster.kubeconfigPath")
    assert err.value.key == "gpushare:cluster.context"
    check_kubeconfig(text, "onprem-admin", "gpushare:cluster.kubeconfigPath")


def test_cluster_relative_kubeconfig_path_is_read_from_the_project(tmp_path: Path) -> None:
    (tmp_path / "kc.yaml").write_text("clusters: []\n")
    assert read_kubeconfig("kc.yaml", root=tmp_path) == "clusters: []\n"


@pytest.mark.parametrize("bad", ["Node-1", "gpu_node", "-node", "node-", ""])
def test_cluster_gpu_node_that_is_not_a_node_name_is_refused(bad: str, fresh_plan) -> None:
    with pytest.raises(ConfigError) as err:
        fresh_plan("cluster", ["gpushare:cluster.gpuNodes=" + json.dumps([bad])])
    assert err.value.key.startswith("gpushare:cluster.gpuNodes")


def test_cluster_gpu_node_listed_twice_is_refused(fresh_plan) -> None:
    with pytest.raises(ConfigError) as err:
        fresh_plan("cluster", ['gpushare:cluster.gpuNodes=["node", "gpu-1.example.com", "node"]'])
    assert "node listed twice" in err.value.problem


def test_cluster_node_patch_per_gpu_node_sets_gpu_on(plan_stack) -> None:
    plan = plan_stack("cluster", 'gpushare:cluster.gpuNodes=["gpu-a", "gpu-b.lan"]')
    patches = plan.find(NODE_PATCH)
    assert sorted(p["inputs"]["metadata"]["name"] for p in patches) == ["gpu-a", "gpu-b.lan"]
    for patch in patches:
        assert patch["inputs"]["metadata"]["labels"] == {"gpu": "on"}
        assert patch["options"]["provider"] == "cluster-provider"
        assert patch["parent"] == "cluster-gpu-labels"
    assert plan.outputs["labelledNodes"] == {"gpu-a": {"gpu": "on"}, "gpu-b.lan": {"gpu": "on"}}


def test_cluster_node_patch_changes_only_metadata_labels_under_our_field_manager(plan_stack) -> None:
    (patch,) = plan_stack("cluster").find(NODE_PATCH)
    inputs = patch["inputs"]
    assert set(inputs) == {"apiVersion", "kind", "metadata"}
    assert (inputs["apiVersion"], inputs["kind"]) == ("v1", "Node")
    assert set(inputs["metadata"]) == {"name", "labels", "annotations"}
    # The one annotation is the provider's: the field manager whose fields destroy gives back.
    assert inputs["metadata"]["annotations"] == {"pulumi.com/patchFieldManager": "gpushare"}


def test_cluster_node_label_follows_hami_node_label(plan_stack) -> None:
    (patch,) = plan_stack("cluster", 'gpushare:hami.nodeLabel={"accelerator": "shared"}').find(NODE_PATCH)
    assert patch["inputs"]["metadata"]["labels"] == {"accelerator": "shared"}


def test_only_hamis_release_waits_for_the_node_labels_its_device_plugin_selects(plan_stack) -> None:
    plan = plan_stack("cluster")
    waiting = {r["name"] for r in plan.resources if "cluster-gpu-labels-node" in r["dependsOn"]}
    assert "hami-release" in waiting and "gpu-operator-release" not in waiting  # the operator selects NFD's labels
    assert not any(name.startswith(("gpushare-", "gpu-operator")) for name in waiting)


def test_cluster_node_patches_stay_with_toolkit_host(plan_stack) -> None:
    plan = plan_stack("cluster", "gpushare:toolkit=host", "gpushare:gpuOperator=null")
    assert [p["inputs"]["metadata"]["name"] for p in plan.find(NODE_PATCH)] == ["node"]
