"""Stack config: the labs' defaults, and every refusal names its key and the fix before anything is registered."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel

from components.config import ConfigError, ExistingStack, GkeStack, K3sVmStack, parse
from components.plan import _as_pulumi_config, read_stack_config


def stack_raw(stack: str, *overrides: str) -> dict[str, str]:
    config, _ = read_stack_config(stack, list(overrides))
    return _as_pulumi_config(config)


def refusal(stack: str, *overrides: str) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        parse(stack_raw(stack, *overrides))
    return caught.value


GKE_MINIMAL: dict[str, Any] = {"gpushare:platform": "gke"}


# --- the labs' values ----------------------------------------------------------------------------------


def test_gke_stack_defaults_are_lab12s_values() -> None:
    cfg = parse(GKE_MINIMAL)
    assert isinstance(cfg, GkeStack) and (cfg.toolkit, cfg.sharing) == ("gke-managed", "kai")
    assert (cfg.gke.zone, cfg.gke.machine_type, cfg.gke.node_count) == ("asia-northeast1-a", "n1-standard-2", 3)
    assert (cfg.gpu.type, cfg.gpu.per_node, cfg.gke.gpu_driver_version) == ("nvidia-tesla-t4", 1, "DEFAULT")
    assert cfg.card_mib == 15360  # what nvidia-smi reports on a T4, not 16 GiB
    assert cfg.kai.version == "v0.17.0" and cfg.kai.cdi_enabled == "true"
    assert cfg.isolator.container_vgpu_mount == "/home/kubernetes/bin/nvidia/vgpu"
    assert cfg.gke_cdi.kyverno_version == "3.8.2"


def test_k3s_stack_sizes_the_slice_from_the_96_gb_card() -> None:
    cfg = parse(stack_raw("k3s"))
    assert isinstance(cfg, K3sVmStack) and (cfg.toolkit, cfg.sharing) == ("host", "hami")
    assert cfg.card_mib == 97887
    assert cfg.slice_mib == 8000
    assert cfg.overcommit_mib == 90000
    assert cfg.hami.version == "2.9.0" and cfg.hami.namespace == "kube-system"


def test_cluster_stack_is_the_articles_combination() -> None:
    cfg = parse(stack_raw("cluster"))
    assert isinstance(cfg, ExistingStack) and (cfg.toolkit, cfg.sharing) == ("gpu-operator", "hami")
    assert (cfg.gpu_operator.driver_enabled, cfg.gpu_operator.device_plugin_enabled) == (False, False)
    assert cfg.hami.version == "2.10.0"
    assert (cfg.slice_mib, cfg.verify.cores_percent) == (4000, 30)


def test_every_model_and_field_has_a_docstring() -> None:
    from components import config as module
    from components.config_doc import field_docs

    models = [m for m in vars(module).values() if isinstance(m, type) and issubclass(m, BaseModel)]
    models = [m for m in models if m.__module__ == module.__name__]
    for model in models:
        assert model.__doc__, f"{model.__name__} has no docstring"
        undocumented = set(model.model_fields) - set(field_docs(model))
        assert not undocumented, f"{model.__name__}: {sorted(undocumented)} have no docstring"


# --- refusals ------------------------------------------------------------------------------------------


def test_misspelt_key_is_refused_with_the_nearest_name() -> None:
    err = refusal("gke", "gpushare:verify.sliceMb=4096")
    assert err.key == "gpushare:verify.sliceMb"
    assert "did you mean gpushare:verify.sliceMiB?" in str(err)


def test_misspelt_top_level_key_is_refused() -> None:
    err = refusal("gke", "gpushare:platfrom=gke")
    assert err.key == "gpushare:platfrom"
    assert "did you mean gpushare:platform?" in str(err)


def test_slice_larger_than_the_card_is_refused() -> None:
    err = refusal("gke", "gpushare:verify.sliceMiB=999999")
    assert err.key == "gpushare:verify.sliceMiB"
    assert "larger than the card (15360 MiB" in str(err)


def test_two_slices_that_do_not_fit_one_card_are_refused() -> None:
    err = refusal("gke", "gpushare:verify.sliceMiB=8000")
    assert err.key == "gpushare:verify.sliceMiB"
    assert "two slices of 8000 MiB do not fit" in str(err)


@pytest.mark.parametrize("request_mib", [80000, 120000])
def test_overcommit_request_that_would_fit_or_exceed_the_card_is_refused(request_mib: int) -> None:
    err = refusal("k3s", f"gpushare:verify.overcommitMiB={request_mib}")
    assert err.key == "gpushare:verify.overcommitMiB"
    assert "81887 MiB" in str(err)


def test_gpu_operator_on_gke_managed_drivers_is_refused() -> None:
    err = refusal("gke", "gpushare:toolkit=gpu-operator")
    assert err.key == "gpushare:toolkit"
    assert "GPU Operator over GKE-managed drivers" in str(err)


def test_hami_on_gke_beside_gkes_device_plugin_is_refused() -> None:
    err = refusal("gke", "gpushare:sharing=hami")
    assert err.key == "gpushare:sharing"
    assert "device plugin" in str(err)


def test_hami_beside_the_operators_device_plugin_is_refused() -> None:
    err = refusal("cluster", "gpushare:gpuOperator.devicePluginEnabled=true")
    assert err.key == "gpushare:gpuOperator.devicePluginEnabled"
    assert "two device plugins" in str(err)


@pytest.mark.parametrize("version", ["latest", "2.x", ">=2.9.0", ""])
def test_unpinned_chart_version_is_refused(version: str) -> None:
    err = refusal("k3s", f"gpushare:hami.version={json.dumps(version)}")
    assert err.key == "gpushare:hami.version"


def test_unpinned_kai_version_is_refused() -> None:
    err = refusal("gke", "gpushare:kai.version=latest")
    assert err.key == "gpushare:kai.version"
    assert "not a pinned chart version" in str(err)


def test_kai_cdi_enabled_as_a_boolean_is_refused() -> None:
    err = refusal("gke", "gpushare:kai.cdiEnabled=true")  # unquoted: YAML makes it a boolean
    assert err.key == "gpushare:kai.cdiEnabled"
    assert "rejects a boolean" in str(err)


def test_kai_cdi_enabled_as_the_string_true_is_accepted() -> None:
    assert parse(stack_raw("gke", 'gpushare:kai.cdiEnabled="true"')).kai.cdi_enabled == "true"  # type: ignore[union-attr]


def test_hami_scheduler_tag_that_does_not_match_k3s_is_refused() -> None:
    err = refusal("k3s", "gpushare:hami.schedulerImageTag=v1.35.6")
    assert err.key == "gpushare:hami.schedulerImageTag"
    assert "v1.36.2" in str(err)


def test_hami_scheduler_tag_equal_to_the_server_version_is_accepted() -> None:
    cfg = parse(stack_raw("k3s", "gpushare:hami.schedulerImageTag=v1.36.2"))
    assert cfg.hami is not None and cfg.hami.scheduler_image_tag == "v1.36.2"


def test_hami_scheduler_tag_that_does_not_match_the_existing_cluster_is_refused() -> None:
    err = refusal("cluster", "gpushare:hami.schedulerImageTag=v1.36.2")
    assert "cluster.kubernetesVersion" in str(err)


def test_world_open_firewall_without_opt_in_is_refused() -> None:
    err = refusal("k3s", 'gpushare:vm.allowedSourceRanges=["0.0.0.0/0"]')
    assert err.key == "gpushare:vm.allowedSourceRanges"
    assert "allowWorldOpen" in str(err)


def test_world_open_firewall_with_explicit_opt_in_is_accepted() -> None:
    cfg = parse(stack_raw("k3s", 'gpushare:vm.allowedSourceRanges=["0.0.0.0/0"]', "gpushare:vm.allowWorldOpen=true"))
    assert cfg.vm is not None and cfg.vm.allowed_source_ranges == ["0.0.0.0/0"]


def test_missing_source_ranges_are_refused() -> None:
    err = refusal("k3s", "gpushare:vm.allowedSourceRanges=[]")
    assert err.key == "gpushare:vm.allowedSourceRanges"
    assert "required" in str(err)


def test_malformed_cidr_is_refused() -> None:
    err = refusal("k3s", 'gpushare:vm.allowedSourceRanges=["my-laptop"]')
    assert err.key == "gpushare:vm.allowedSourceRanges"
    assert "'my-laptop' is not a CIDR" in str(err)


def test_unknown_gpu_type_without_memory_is_refused_and_with_memory_accepted() -> None:
    p100 = ("gpushare:gpu.type=nvidia-tesla-p100", "gpushare:gke.zone=us-central1-c")
    err = refusal("gke", *p100)
    assert err.key == "gpushare:gpu.memoryMiB"
    cfg = parse(stack_raw("gke", *p100, "gpushare:gpu.memoryMiB=16384"))
    assert cfg.card_mib == 16384


def test_kai_outside_gke_is_refused() -> None:
    assert refusal("cluster", "gpushare:sharing=kai").key == "gpushare:sharing"


def test_k3s_with_a_gpu_operator_is_refused() -> None:
    assert refusal("k3s", "gpushare:toolkit=gpu-operator").key == "gpushare:toolkit"


def test_existing_host_without_a_host_section_is_refused() -> None:
    err = refusal("k3s", "gpushare:platform=existing-host", "gpushare:vm=null")
    assert err.key == "gpushare:host"
    assert "required for platform existing-host" in str(err)


def test_the_vm_section_left_on_an_existing_host_is_refused() -> None:
    err = refusal(
        "k3s", "gpushare:platform=existing-host", "gpushare:host.address=192.0.2.50", "gpushare:host.privateKey=key"
    )
    assert err.key == "gpushare:vm"
    assert "belongs to platform k3s-vm, not existing-host" in str(err)


def test_existing_cluster_needs_exactly_one_kubeconfig_source() -> None:
    err = refusal("cluster", 'gpushare:cluster.kubeconfig="apiVersion: v1"')
    assert err.key == "gpushare:cluster"
    assert "both set; keep one: `pulumi config rm --path gpushare:cluster.kubeconfigPath`" in str(err)
    err = refusal("cluster", "gpushare:cluster.kubeconfigPath=null")
    assert err.key == "gpushare:cluster"
    assert "`pulumi config set --path gpushare:cluster.kubeconfigPath ~/.kube/config`" in str(err)


def test_nvidia_runtime_class_under_cdi_is_refused() -> None:
    err = refusal("cluster", "gpushare:hami.runtimeClassName=nvidia")
    assert err.key == "gpushare:hami.runtimeClassName"
    assert "unresolvable CDI devices" in str(err)


def test_bad_enum_names_the_allowed_values() -> None:
    err = refusal("gke", "gpushare:platform=eks")
    assert "expected gke, k3s-vm, existing-host, existing" in str(err)


def test_a_section_for_another_toolkit_is_refused_with_what_to_remove() -> None:
    err = refusal("cluster", "gpushare:toolkit=host")
    assert err.key == "gpushare:gpuOperator"
    assert "pulumi config rm gpushare:gpuOperator" in str(err)


def test_toolkit_host_on_an_existing_cluster_plans_without_the_operator_section() -> None:
    cfg = parse(stack_raw("cluster", "gpushare:toolkit=host", "gpushare:gpuOperator=null"))
    assert isinstance(cfg, ExistingStack) and cfg.toolkit == "host" and not cfg.operator_cdi


def test_a_section_of_another_platform_is_refused_not_used() -> None:
    err = refusal("k3s", "gpushare:gke.zone=us-central1-a")
    assert err.key == "gpushare:gke"
    assert "belongs to platform gke, not k3s-vm" in str(err)


@pytest.mark.parametrize(
    ("stack", "old", "new"),
    [
        ("gke", "gpushare:gke.gpuType=nvidia-l4", "gpushare:gpu.type"),
        ("gke", "gpushare:gke.gpuCount=2", "gpushare:gpu.perNode"),
        ("k3s", "gpushare:vm.gpuMemoryMiB=4000", "gpushare:gpu.memoryMiB"),
        ("cluster", "gpushare:cluster.gpusPerNode=2", "gpushare:gpu.perNode"),
    ],
)
def test_a_gpu_key_that_moved_is_refused_with_its_new_name(stack: str, old: str, new: str) -> None:
    err = refusal(stack, old)
    assert err.key == old.split("=")[0]
    assert f"set {new} instead" in str(err)


def test_the_proof_sizes_itself_from_its_own_platforms_card_only() -> None:
    err = refusal("k3s", "gpushare:gke.gpuType=nvidia-tesla-t4")
    assert err.key == "gpushare:gke"
    assert parse(stack_raw("k3s")).card_mib == 97887


def test_secret_values_never_appear_in_an_error() -> None:
    raw = stack_raw("cluster", "gpushare:cluster.kubeconfig=TOPSECRET-TOKEN", "gpushare:cluster.context=42x")
    raw["gpushare:cluster"] = json.dumps(
        {**json.loads(raw["gpushare:cluster"]), "kubeconfigPath": None, "gpuNodes": []}
    )
    with pytest.raises(ConfigError) as caught:
        parse(raw)
    assert "TOPSECRET" not in str(caught.value)


def test_a_compute_share_under_kai_is_refused() -> None:
    err = refusal("gke", "gpushare:verify.coresPercent=30")
    assert err.key == "gpushare:verify.coresPercent"
    assert "no compute share" in str(err)


def test_the_fault_reported_does_not_depend_on_the_order_keys_arrive_in() -> None:
    faults = {
        "gpushare:platform": "gke",
        "gpushare:verify": '{"sliceMiB": 0}',
        "gpushare:gke": '{"nodeCount": 0}',
        "gpushare:kai": '{"queue": "Q"}',
    }
    keys = {parse_key(dict(items)) for items in (list(faults.items()), list(reversed(faults.items())))}
    assert keys == {"gpushare:verify.sliceMiB"}  # one fault, whichever order: pydantic reports in field order


def parse_key(raw: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as caught:
        parse(raw)
    return caught.value.key


# --- the proof's hold beside the planned card's CUDA context --------------------------------------------------


def test_a_hold_the_cards_context_leaves_no_room_for_is_refused_naming_the_key() -> None:
    """3379 MiB is KAI's fraction of a 3333 MiB ask; on an H200 the context takes 518 of it, so 3 GiB cannot fit."""
    err = refusal("cluster", "gpushare:gpu.type=nvidia-h200-141gb", "gpushare:verify.sliceMiB=3379",
                  "gpushare:verify.holdGiB=3")  # fmt: skip
    assert err.key == "gpushare:verify.holdGiB"
    assert "does not fit each proof Pod's 3379 MiB quota beside the 518 MiB CUDA context" in str(err)
    assert "set it to at most 2.79" in str(err)


def test_the_same_hold_fits_beside_a_t4s_smaller_context() -> None:
    cfg = parse(stack_raw("cluster", "gpushare:gpu.type=nvidia-tesla-t4", "gpushare:verify.sliceMiB=3379",
                          "gpushare:verify.holdGiB=3"))  # fmt: skip
    assert cfg.context_mib == 102 and round(cfg.hold_gib * 1024) == 3072


def test_the_default_hold_leaves_the_cards_context_room_under_the_quota() -> None:
    cfg = parse(stack_raw("cluster", "gpushare:gpu.type=nvidia-h200-141gb", "gpushare:verify.sliceMiB=3379"))
    hold = round(cfg.hold_gib * 1024)
    assert hold + cfg.context_mib <= cfg.quota_mib and hold + round(cfg.extra_gib * 1024) > cfg.quota_mib
