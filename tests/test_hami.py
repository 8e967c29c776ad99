"""The version-aware HAMi component: its value paths against the pinned charts, its rules, and its proof."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from components.config import HamiConfig, parse
from components.gpu import hami
from components.gpu.chart import release_values
from components.images import Mirrors
from components.plan import ROOT, _as_pulumi_config, read_stack_config, run
from components.sizing import remaining_mib
from components.versions import kubernetes_release
from tests.helpers import k8s_schema
from tests.helpers.helm_values import leaf_paths, load_reference, missing_paths

RELEASE = "kubernetes:helm.sh/v3:Release"
VERSIONS = sorted(hami.CHART_KEYS)
MIRROR = "registry.example.internal:5000"
CARDS = {  # a 24, a 48 and a 96 GB card: a VM's machine type carries the first and last; the A6000 is a host's
    "24GB": ("gpushare:gpu.type=nvidia-l4", "gpushare:vm.machineType=g2-standard-8"),
    "48GB": (
        "gpushare:platform=existing-host",
        "gpushare:vm=null",
        "gpushare:host.address=192.0.2.50",
        "gpushare:host.privateKey=key",
        "gpushare:gpu.type=nvidia-rtx-a6000",
    ),
    "96GB": ("gpushare:gpu.type=nvidia-rtx-pro-6000", "gpushare:vm.machineType=g4-standard-48"),
}

# A program that plans only the platform and HAMi, and exports HAMi's proof contract as plain data.
_PROOF_PROGRAM = """
import dataclasses
import pulumi
from components import compose, config
cfg = config.load()
cluster = compose.platform(cfg)
sharing = compose.sharing(cfg, cluster, compose.toolkit(cfg, cluster))
pulumi.export("proof", dataclasses.asdict(sharing.proof))
pulumi.export("outputs", dict(sharing.outputs))
"""


def _args(version: str, **changes: Any) -> hami.HamiArgs:
    """HamiArgs with its section: keys of HamiConfig go into the section, the rest onto the args."""
    own = set(HamiConfig.model_fields) - {"runtime_class_name"}  # the args carry the one the toolkit decided
    chart_image = "/".join(hami.CHART_SCHEDULER_IMAGE)  # the chart's own, so its mirroring is what is tested
    section = {"version": version, "scheduler_image_tag": "v1.35.6", "scheduler_image": chart_image}
    section |= {k: v for k, v in changes.items() if k in own}
    rest = {k: v for k, v in changes.items() if k not in own}
    return hami.HamiArgs(settings=HamiConfig(**section), **{"stack": "test", **rest})


def _mirrored_values(version: str, **changes: Any) -> dict[str, Any]:
    """The values the release gets with one mirror for every upstream."""
    return release_values(hami.hami_release(_args(version, mirrors=Mirrors(default=MIRROR), **changes)))


def _get(values: dict[str, Any], path: tuple[str, ...]) -> Any:
    node: Any = values
    for key in path:
        node = node[key]
    return node


def _cfg(*overrides: str) -> Any:
    config, _ = read_stack_config("k3s", list(overrides))
    return parse(_as_pulumi_config(config))


def _card_overrides(card: str) -> tuple[str, ...]:
    return (*CARDS[card], "gpushare:verify.sliceMiB=null")


@pytest.fixture
def proof_plan(tmp_path: Path):
    """Plan a stack file with a program of only the platform and HAMi; returns its exported proof contract."""

    def _plan(*overrides: str) -> dict[str, Any]:
        shutil.copy(ROOT / "Pulumi.k3s.yaml", tmp_path / "Pulumi.k3s.yaml")
        (tmp_path / "__main__.py").write_text(_PROOF_PROGRAM)
        return run("k3s", list(overrides), root=tmp_path).outputs

    return _plan


# --- the kube-scheduler tag ------------------------------------------------------------------------------


def test_hami_scheduler_tag_derives_from_the_k3s_version():
    assert kubernetes_release("v1.36.2+k3s1") == "v1.36.2"


@pytest.mark.parametrize("version", VERSIONS)
def test_hami_scheduler_tag_key_is_image_tag(version):
    assert hami.scheduler_tag_path(version) == ("scheduler", "kubeScheduler", "image", "tag")


def test_hami_scheduler_tag_key_before_2_7_was_image_tag_flat():
    assert hami.scheduler_tag_path("2.6.1") == ("scheduler", "kubeScheduler", "imageTag")
    assert hami.scheduler_tag_path("2.7.0") == ("scheduler", "kubeScheduler", "image", "tag")


@pytest.mark.parametrize("version", VERSIONS)
def test_hami_never_sets_the_ignored_image_tag_key(version):
    values = _mirrored_values(version, runtime_class_name="nvidia-legacy")
    assert ("scheduler", "kubeScheduler", "imageTag") not in leaf_paths(values)
    assert _get(values, ("scheduler", "kubeScheduler", "image", "tag")) == "v1.35.6"


def test_hami_scheduler_tag_is_left_to_the_chart_which_takes_the_servers_version(plan_stack):
    values = plan_stack("k3s").one(RELEASE, "hami-release")["inputs"]["values"]
    scheduler_paths = [p for p in leaf_paths(values) if p[:2] == ("scheduler", "kubeScheduler")]
    assert scheduler_paths == []  # neither image.tag nor the ignored imageTag: charts/hami _helpers.tpl derives it


def test_hami_scheduler_tag_pinned_in_config_reaches_the_chart(plan_stack):
    release = plan_stack("k3s", "gpushare:hami.schedulerImageTag=v1.36.2").one(RELEASE, "hami-release")["inputs"]
    assert release["values"]["scheduler"]["kubeScheduler"]["image"]["tag"] == "v1.36.2"


def test_hami_images_list_the_scheduler_tag_the_chart_derives_from_the_server(plan_stack):
    images = plan_stack("k3s").outputs["images"]
    assert "registry.cn-hangzhou.aliyuncs.com/google_containers/kube-scheduler:v1.36.2" in images


# --- the release -----------------------------------------------------------------------------------------


def test_hami_k3s_release_is_chart_2_9_0_in_kube_system(plan_stack):
    release = plan_stack("k3s").one(RELEASE, "hami-release")
    inputs = release["inputs"]
    assert (inputs["name"], inputs["chart"], inputs["version"]) == ("hami", "hami", "2.9.0")
    assert inputs["repositoryOpts"]["repo"] == "https://project-hami.github.io/HAMi"
    assert inputs["namespace"] == "kube-system"
    assert "createNamespace" not in inputs
    assert not plan_stack("k3s").find("kubernetes:core/v1:Namespace", "hami-namespace")  # the cluster owns it
    assert inputs["timeout"] == 300
    assert release["options"]["provider"] == "k3s-provider"


def test_hami_system_namespace_is_the_stacks_own_so_destroy_removes_it(plan_stack):
    plan = plan_stack("cluster")
    namespace = plan.one("kubernetes:core/v1:Namespace", "hami-namespace")
    assert namespace["inputs"]["metadata"]["name"] == "hami-system"
    assert "hami-namespace" in plan.one(RELEASE, "hami-release")["dependsOn"]
    assert "createNamespace" not in plan.one(RELEASE, "hami-release")["inputs"]


def test_hami_release_waits_for_the_bootstrap(plan_stack):
    release = plan_stack("k3s").one(RELEASE, "hami-release")
    assert "k3s-kubeconfig" in release["dependsOn"]


def test_hami_outputs_version_and_tag(plan_stack):
    outputs = plan_stack("k3s").outputs
    assert (outputs["hamiVersion"], outputs["schedulerImageTag"]) == ("2.9.0", "v1.36.2")


@pytest.mark.parametrize("version", VERSIONS)
def test_hami_every_value_path_exists_in_the_pinned_chart(version):
    reference = load_reference(f"hami-{version}")
    for args in (
        _args(version),
        _args(version, runtime_class_name="nvidia-legacy", mirrors=Mirrors(default=MIRROR), device_split_count=4),
    ):
        assert missing_paths(release_values(hami.hami_release(args)), reference) == []


def test_hami_k3s_release_values_exist_in_chart_2_9_0(plan_stack):
    values = plan_stack("k3s").one(RELEASE, "hami-release")["inputs"]["values"]
    assert missing_paths(values, load_reference("hami-2.9.0")) == []


@pytest.mark.parametrize("version", VERSIONS)
def test_hami_split_count_and_node_selector_reach_the_chart_keys(version):
    values = hami.hami_values(_args(version, device_split_count=4, node_label={"gpu": "on"}))
    assert values["devicePlugin"]["deviceSplitCount"] == 4
    assert values["devicePlugin"]["nvidiaNodeSelector"] == {"gpu": "on"}


@pytest.mark.parametrize("version", VERSIONS)
def test_hami_create_runtime_class_stays_false(version):
    values = hami.hami_values(_args(version, runtime_class_name="nvidia-legacy"))
    assert values["devicePlugin"]["createRuntimeClass"] is False


# --- the RuntimeClass rule ---------------------------------------------------------------------------------


def test_hami_runtime_class_is_nvidia_legacy_under_cdi():
    assert hami.runtime_class_for(cdi_enabled=True) == "nvidia-legacy"


def test_hami_runtime_class_is_unset_without_cdi():
    assert hami.runtime_class_for(cdi_enabled=False) is None
    assert "runtimeClassName" not in hami.hami_values(_args("2.10.0"))["devicePlugin"]


def test_hami_runtime_class_config_overrides():
    assert hami.runtime_class_for(cdi_enabled=False, override="nvidia") == "nvidia"


def test_hami_runtime_class_reaches_the_device_plugin_key():
    values = hami.hami_values(_args("2.10.0", runtime_class_name=hami.runtime_class_for(True)))
    assert values["devicePlugin"]["runtimeClassName"] == "nvidia-legacy"


def test_hami_k3s_host_toolkit_sets_no_runtime_class(plan_stack):
    values = plan_stack("k3s").one(RELEASE, "hami-release")["inputs"]["values"]
    assert "runtimeClassName" not in values["devicePlugin"]


# --- the mirror ---------------------------------------------------------------------------------------------


def _registry_keys(values: Any, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every `registry` / `imageRegistry` key in a values tree."""
    found = []
    if isinstance(values, dict):
        for key, value in values.items():
            if key in ("registry", "imageRegistry"):
                found.append((*prefix, key))
            found.extend(_registry_keys(value, (*prefix, key)))
    return found


def _repositories_with_host(values: Any, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """`repository` values that name their registry (a first part with a dot), so a registry key misses them."""
    found = []
    if isinstance(values, dict):
        for key, value in values.items():
            path = (*prefix, key)
            if key == "repository" and isinstance(value, str) and "." in value.split("/", 1)[0]:
                found.append(path)
            found.extend(_repositories_with_host(value, path))
    return found


@pytest.mark.parametrize("version", VERSIONS)
def test_hami_mirror_reaches_every_registry_key_of_the_chart(version):
    reference = load_reference(f"hami-{version}")
    values = _mirrored_values(version)
    # Each image's own registry is set; global.imageRegistry stays empty, as it would fold all upstreams into one.
    expected = [path for path in _registry_keys(reference) if path != ("global", "imageRegistry")]
    assert expected, "the reference values name no registry keys"
    assert "imageRegistry" not in values.get("global", {})
    # Each under the catch-all mirror with its upstream host kept: docker.io → <mirror>/docker.io.
    mirrors = Mirrors(default=MIRROR)
    assert {path: _get(values, path) for path in expected} == {
        path: mirrors.location(_get(reference, path)) for path in expected
    }
    for path in _repositories_with_host(reference):
        assert _get(values, path).startswith(f"{MIRROR}/"), ".".join(path)


@pytest.mark.parametrize("version", VERSIONS)
def test_hami_every_registry_value_rendered_is_the_mirror(version):
    values = _mirrored_values(version)
    rendered = _registry_keys(values)
    assert rendered
    assert {_get(values, path) for path in rendered} == {
        f"{MIRROR}/docker.io",
        f"{MIRROR}/registry.cn-hangzhou.aliyuncs.com",
    }


def test_hami_without_mirror_sets_no_registry(plan_stack):
    values = plan_stack("k3s").one(RELEASE, "hami-release")["inputs"]["values"]
    assert _registry_keys(values) == []


def test_hami_mirror_from_config_reaches_the_release(plan_stack):
    values = plan_stack("k3s", f"gpushare:imageRegistry={MIRROR}").one(RELEASE, "hami-release")["inputs"]["values"]
    assert values["scheduler"]["kubeScheduler"]["image"]["registry"] == f"{MIRROR}/registry.cn-hangzhou.aliyuncs.com"
    assert values["devicePlugin"]["image"]["registry"] == f"{MIRROR}/docker.io"


# --- the proof contract -----------------------------------------------------------------------------------


def test_hami_proof_requests_two_unprivileged_slices(proof_plan):
    proof = proof_plan()["proof"]
    assert proof["system"] == "hami"
    assert len(proof["requests"]) == 2
    for request in proof["requests"]:
        assert request["scheduler_name"] == "hami-scheduler"
        assert request["limits"] == {"nvidia.com/gpu": "1", "nvidia.com/gpumem": "8000"}
        assert request["privileged"] is False


def test_hami_proof_overcommit_is_pending_with_card_insufficient_memory(proof_plan):
    proof = proof_plan()["proof"]
    assert proof["overcommit_request"]["limits"] == {"nvidia.com/gpu": "1", "nvidia.com/gpumem": "90000"}
    assert proof["overcommit_request"]["privileged"] is False
    assert proof["pending_reason"] == "CardInsufficientMemory"


def test_hami_proof_quota_is_the_slice_in_bytes_and_env(proof_plan):
    proof = proof_plan()["proof"]
    assert proof["visible_mib"] == 8000
    assert proof["limit_bytes"] == 8388608000  # the HAMi-core OOM line's right-hand side
    assert proof["limit_env"] == {"CUDA_DEVICE_MEMORY_LIMIT_0": "8000m"}
    assert proof["preload_library"] == "libvgpu.so"


def test_hami_proof_node_registration_and_allocation(proof_plan):
    proof = proof_plan("gpushare:hami.deviceSplitCount=4")["proof"]
    assert proof["node_registration"] == {
        "annotation": "hami.io/node-nvidia-register",
        "resource": "nvidia.com/gpu",
        "slots_per_card": 4,
        "cards_per_node": 1,
    }
    assert proof["allocation_annotation"] == "hami.io/vgpu-devices-allocated"


def test_hami_proof_checks_without_cores(proof_plan):
    proof = proof_plan()["proof"]
    assert proof["checks"] == [
        "same-gpu",
        "view-isolation",
        "quota-injection",
        "memory-enforced",
        "neighbor-isolation",
        "preload-mechanism",
        "overcommit-rejected",
        "fault-isolation",
    ]
    assert list(proof["notes"]) == []  # the proof says "software isolation, not MIG" once, for every system


def test_hami_proof_cores_add_gpucores_sm_limit_and_compute_check(proof_plan):
    proof = proof_plan("gpushare:verify.coresPercent=30")["proof"]
    assert proof["requests"][0]["limits"]["nvidia.com/gpucores"] == "30"
    assert proof["limit_env"] == {"CUDA_DEVICE_MEMORY_LIMIT_0": "8000m", "CUDA_DEVICE_SM_LIMIT": "30"}
    assert proof["checks"][-2:] == ["compute-limited", "fault-isolation"]
    assert "nvidia.com/gpucores" not in proof["overcommit_request"]["limits"]


def test_hami_setup_outputs(proof_plan):
    assert proof_plan()["outputs"] == {"hamiVersion": "2.9.0", "schedulerImageTag": "v1.36.2"}


# --- slice and over-commit sizing from the card -----------------------------------------------------------


def test_hami_sizing_on_the_96_gb_card_is_the_labs():
    cfg = _cfg(*_card_overrides("96GB"))
    assert (cfg.card_mib, cfg.slice_mib, cfg.overcommit_mib) == (97887, 8000, 90000)


@pytest.mark.parametrize(("card", "mib"), [("24GB", 23034), ("48GB", 49140), ("96GB", 97887)])
def test_hami_sizing_reads_the_cards_memory(card, mib):
    assert _cfg(*_card_overrides(card)).card_mib == mib


@pytest.mark.parametrize("card", sorted(CARDS))
def test_hami_sizing_fits_two_slices_and_overcommits_only_the_remainder(card):
    cfg = _cfg(*_card_overrides(card))
    assert 2 * cfg.slice_mib < cfg.card_mib
    assert remaining_mib(cfg.card_mib, cfg.slice_mib) < cfg.overcommit_mib <= cfg.card_mib


@pytest.mark.parametrize("card", sorted(CARDS))
def test_hami_proof_scales_with_the_card(proof_plan, card):
    cfg = _cfg(*_card_overrides(card))
    proof = proof_plan(*_card_overrides(card))["proof"]
    assert proof["requests"][0]["limits"]["nvidia.com/gpumem"] == str(cfg.slice_mib)
    assert proof["overcommit_request"]["limits"]["nvidia.com/gpumem"] == str(cfg.overcommit_mib)
    assert proof["limit_bytes"] == cfg.slice_mib * 2**20


def test_hami_sizing_differs_between_24_and_96_gb_cards():
    small, large = _cfg(*_card_overrides("24GB")), _cfg(*_card_overrides("96GB"))
    assert small.slice_mib < large.slice_mib
    assert small.overcommit_mib < large.overcommit_mib


# --- Kubernetes objects --------------------------------------------------------------------------------------


@pytest.mark.parametrize("variant", ["vm", "existing-host"])
def test_k3s_every_kubernetes_object_validates(plan_stack, variant):
    overrides = (
        ()
        if variant == "vm"
        else (
            "gpushare:platform=existing-host",
            "gpushare:vm=null",
            "gpushare:host.address=192.0.2.50",
            "gpushare:host.privateKey=key",
        )
    )
    objects = k8s_schema.objects_in(plan_stack("k3s", *overrides))
    assert objects, "the k3s plan creates no Kubernetes objects (the proof Pods are missing)"
    complaints = [k8s_schema.validate(o) for o in objects if not k8s_schema.is_custom_kind(o)]
    assert [c for c in complaints if c] == []
