"""GKE's own sharing (MPS, time-sharing): the device plugin's numbers, the Pods GKE expects, the refusals, and
the gke-mps / gke-time-sharing stacks as the offline plan shows them."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Any

import pytest

from components import config
from components.gke_sharing import mps_limits, overcommit_slots
from components.gpu.gke_native import mps_proof, native_slice_request, time_sharing_proof
from components.incluster import judge
from components.incluster.expectation import Expectation
from components.plan import Plan, read_stack_config
from components.plan_view import text
from tests.conftest import STACKS
from tests.helpers.recorded import load

STRATEGY = "cloud.google.com/gke-gpu-sharing-strategy"
CLIENTS = "cloud.google.com/gke-max-shared-clients-per-gpu"
NATIVE_STACKS = {"gke-mps": "MPS", "gke-time-sharing": "TIME_SHARING"}
KAI_ONLY_TYPES = (
    "gpushare:gpu:KaiScheduler",
    "gpushare:gpu:ResourceIsolator",
    "gpushare:gpu:GkeCdiWorkarounds",
    "kubernetes:helm.sh/v3:Release",
    "kubernetes:kyverno.io/v1:ClusterPolicy",
)


def _pods(plan: Plan) -> dict[str, dict[str, Any]]:
    return {p["inputs"]["metadata"]["name"]: p["inputs"]["spec"] for p in plan.find("kubernetes:core/v1:Pod")}


def _expect(plan: Plan) -> dict[str, Any]:
    verifier = _pods(plan)["gpushare-verifier"]
    env = {e["name"]: e.get("value") for e in verifier["containers"][0]["env"]}
    return json.loads(env["GPUSHARE_EXPECT"])


# ---------------------------------------------------------------- what GKE's device plugin injects


@pytest.mark.parametrize(("card", "clients", "requested", "percent", "pinned"), [
    (15360, 2, 1, 50, 7680),    # T4, the stack's two clients
    (15360, 3, 1, 33, 5120),    # integer division, as the device plugin does it
    (15360, 48, 1, 2, 320),     # GKE's most clients
    (15360, 4, 2, 50, 7680),    # one container asking for two slots of a single-card node
    (143771, 7, 1, 14, 20538),  # H200: MiB rounded down
])  # fmt: skip
def test_mps_limits_are_the_device_plugins_equal_shares(card, clients, requested, percent, pinned) -> None:
    limits = mps_limits(card, clients, requested)
    assert (limits.thread_percentage, limits.pinned_mib) == (percent, pinned)


def test_mps_limit_env_is_written_as_gkes_device_plugin_writes_it() -> None:
    assert mps_limits(15360, 2).env() == {
        "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": "50",
        "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT": "0=7680M",
    }


@pytest.mark.parametrize(("clients", "gpus", "slots"), [(2, 1, 1), (3, 1, 2), (4, 2, 7), (48, 1, 47)])
def test_overcommit_pod_asks_for_one_slot_more_than_the_proof_pods_leave(clients, gpus, slots) -> None:
    assert overcommit_slots(clients, gpus) == slots


# ---------------------------------------------------------------- the proof each strategy owes


def test_mps_proof_pods_ask_for_one_gpu_select_the_sharing_labels_and_share_host_ipc() -> None:
    proof = mps_proof(clients=2, card_mib=15360, gpus_per_node=1)
    assert proof.mechanism == "mps" and proof.system == "gke"
    for request in proof.requests:
        assert request.limits == {"nvidia.com/gpu": "1"} and request.containers == 1
        assert request.node_selector == {STRATEGY: "mps", CLIENTS: "2"}
        assert request.host_ipc is True and request.privileged is False
        assert request.scheduler_name == "default-scheduler"
    assert proof.limit_env == {"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": "50", "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT": "0=7680M"}
    assert proof.visible_mib == 15360, "MPS does not rewrite the view"
    assert proof.limit_bytes == 7680 << 20 and proof.cores_percent == 50
    assert proof.pending_reason == "Insufficient nvidia.com/gpu" and proof.overcommit_slots == 1
    assert proof.preload_library is None
    assert "preload-mechanism" not in proof.checks and "monitor-metrics" not in proof.checks
    assert {"memory-enforced", "compute-limited", "overcommit-rejected"} <= set(proof.checks)


def test_time_sharing_proof_injects_nothing_and_still_checks_memory_and_compute() -> None:
    proof = time_sharing_proof(clients=2, card_mib=15360, gpus_per_node=1)
    assert proof.mechanism == "time-sharing" and proof.limit_env == {} and proof.cores_percent is None
    assert all(not r.host_ipc and r.node_selector[STRATEGY] == "time-sharing" for r in proof.requests)
    assert proof.visible_mib == 15360 and proof.limit_bytes == 15360 << 20
    # not offered is not the same as passed: the verdict must say the limits are not held
    assert {"memory-enforced", "compute-limited"} <= set(proof.checks)
    assert "quota-injection" not in proof.checks
    from components.verify.proof import isolation_note

    assert "nothing limits a Pod's memory or compute" in isolation_note(proof)


def test_overcommit_request_spreads_its_slots_over_containers_of_one_gpu_each() -> None:
    request = native_slice_request("time-sharing", clients=4, slots=3)
    assert request.containers == 3 and request.limits == {"nvidia.com/gpu": "1"}


# ---------------------------------------------------------------- refusals, each with the number that works

GKE_MPS = {
    "gpushare:platform": "gke",
    "gpushare:toolkit": "gke-managed",
    "gpushare:sharing": "mps",
    "gpushare:verify": {"extraGiB": 5},
}


@pytest.mark.parametrize(("change", "key", "says"), [
    ({"gpushare:verify": {"extraGiB": 5, "sliceMiB": 4000}}, "gpushare:verify.sliceMiB", "set it to 7680"),
    ({"gpushare:verify": {"extraGiB": 5, "coresPercent": 30}}, "gpushare:verify.coresPercent", "set it to 50"),
    ({"gpushare:verify": {"extraGiB": 2}}, "gpushare:verify.extraGiB", "set it above 4.50"),
    ({"gpushare:verify": {"extraGiB": 5, "holdGiB": 8}}, "gpushare:verify.holdGiB", "set it below 7.50"),
    ({"gpushare:verify": {"extraGiB": 5, "overcommitMiB": 9000}}, "gpushare:verify.overcommitMiB", "counts Pods"),
    ({"gpushare:gkeSharing": {"maxSharedClientsPerGpu": 1}}, "gpushare:gkeSharing.maxSharedClientsPerGpu",
     "give 2 to 48"),
    ({"gpushare:gkeSharing": {"maxSharedClientsPerGpu": 49}}, "gpushare:gkeSharing.maxSharedClientsPerGpu",
     "give 2 to 48"),
    ({"gpushare:kai": {}}, "gpushare:kai", "read only with sharing kai, not mps"),
    ({"gpushare:isolator": {}}, "gpushare:isolator", "read only with sharing kai, not mps"),
    ({"gpushare:gkeCdi": {}}, "gpushare:gkeCdi", "read only with sharing kai, not mps"),
    ({"gpushare:platform": "existing", "gpushare:toolkit": "gpu-operator",
      "gpushare:cluster": {"kubeconfigPath": "/k"}}, "gpushare:sharing", "is GKE's own GPU sharing"),
    ({"gpushare:sharing": "time-sharing", "gpushare:verify": {"sliceMiB": 4000}}, "gpushare:verify.sliceMiB",
     "remove it"),
    ({"gpushare:sharing": "time-sharing", "gpushare:verify": {"coresPercent": 50}}, "gpushare:verify.coresPercent",
     "remove it"),
    ({"gpushare:sharing": "kai", "gpushare:gkeSharing": {}}, "gpushare:gkeSharing", "read only with sharing mps"),
])  # fmt: skip
def test_gke_sharing_refuses_what_makes_no_sense_naming_what_works(change, key, says) -> None:
    raw = {k: json.dumps(v) if isinstance(v, dict) else v for k, v in {**GKE_MPS, **change}.items()}
    with pytest.raises(config.ConfigError) as err:
        config.parse(raw)
    assert err.value.key == key and says in str(err.value), str(err.value)


def test_mps_slice_is_the_card_over_the_clients() -> None:
    raw = {
        **GKE_MPS,
        "gpushare:gkeSharing": json.dumps({"maxSharedClientsPerGpu": 4}),
        "gpushare:verify": json.dumps({"holdGiB": 2, "extraGiB": 2}),
    }
    assert config.parse(raw).slice_mib == 3840


# ---------------------------------------------------------------- the stacks, planned offline


@pytest.mark.parametrize(("stack", "strategy"), NATIVE_STACKS.items())
def test_native_stack_pool_carries_gpu_sharing_config_and_no_kai_labels(stack, strategy, plan_stack) -> None:
    pool = plan_stack(stack).one("gcp:container/nodePool:NodePool")["inputs"]["nodeConfig"]
    assert pool["guestAccelerators"][0]["gpuSharingConfig"] == {
        "gpuSharingStrategy": strategy,
        "maxSharedClientsPerGpu": 2,
    }
    assert "labels" not in pool


@pytest.mark.parametrize("stack", NATIVE_STACKS)
def test_native_stack_installs_no_kai_isolator_or_kyverno(stack: str, plan_stack) -> None:
    plan = plan_stack(stack)
    assert [r["type"] for r in plan.resources if r["type"] in KAI_ONLY_TYPES] == []


def test_kai_stack_pool_has_no_gpu_sharing_config(plan_stack) -> None:
    pool = plan_stack("gke").one("gcp:container/nodePool:NodePool")["inputs"]["nodeConfig"]
    assert "gpuSharingConfig" not in pool["guestAccelerators"][0]


def test_mps_stack_plans_the_pods_gke_expects(plan_stack) -> None:
    pods = _pods(plan_stack("gke-mps"))
    for name in ("gpushare-proof-a", "gpushare-proof-b", "gpushare-overcommit"):
        spec = pods[name]
        assert spec["hostIPC"] is True and spec["schedulerName"] == "default-scheduler"
        assert spec["nodeSelector"] == {STRATEGY: "mps", CLIENTS: "2"}
        assert [c["resources"]["limits"] for c in spec["containers"]] == [{"nvidia.com/gpu": "1"}]
        assert "securityContext" not in spec["containers"][0]
    command = " ".join(pods["gpushare-proof-a"]["containers"][0]["command"])
    assert "--expect-limit-mib 7680" in command and "incluster.probes.compute" in command


def test_time_sharing_stack_pods_select_time_sharing_without_host_ipc(plan_stack) -> None:
    pods = _pods(plan_stack("gke-time-sharing"))
    for name in ("gpushare-proof-a", "gpushare-proof-b", "gpushare-overcommit"):
        assert pods[name]["nodeSelector"] == {STRATEGY: "time-sharing", CLIENTS: "2"}
        assert "hostIPC" not in pods[name]
    assert "--expect-limit-mib" not in pods["gpushare-proof-a"]["containers"][0]["command"]


def test_overcommit_pod_takes_every_slot_the_proof_pods_leave_plus_one(plan_stack) -> None:
    plan = plan_stack(
        "gke-mps",
        "gpushare:gkeSharing.maxSharedClientsPerGpu=4",
        "gpushare:verify.extraGiB=2",
        "gpushare:verify.sweepGiB=[2,3,4]",
    )
    containers = _pods(plan)["gpushare-overcommit"]["containers"]
    assert [c["name"] for c in containers] == ["probe-0", "probe-1", "probe-2"]
    assert all(c["resources"]["limits"] == {"nvidia.com/gpu": "1"} for c in containers)


def test_mps_expectation_names_the_mechanism_and_the_injected_env(plan_stack) -> None:
    plan = plan_stack("gke-mps")
    expect = _expect(plan)
    assert expect["mechanism"] == "mps" and expect["system"] == "gke"
    assert expect["limitEnv"] == mps_limits(15360, 2).env()
    assert expect["coresPercent"] == 50 and expect["visibleMiB"] == 15360 and expect["limitBytes"] == 7680 << 20
    assert expect["overcommitSlots"] == 1 and expect["nodeMemoryLabel"] is None
    planned = {c["id"]: c["expected"] for c in plan.outputs["verification"]["checks"]}
    assert "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50" in planned["quota-injection"]
    assert "CUDA_DEVICE_SM_LIMIT" not in planned["quota-injection"]
    assert "FailedScheduling" in planned["overcommit-rejected"]
    assert "OOM line" not in planned["memory-enforced"]
    assert plan.outputs["mpsLimitEnv"] == expect["limitEnv"]


def test_time_sharing_stack_reports_its_failures_instead_of_failing_up() -> None:
    raw, _ = read_stack_config("gke-time-sharing", [])
    assert config.parse(raw).verify.fail_on_violation is False
    raw, _ = read_stack_config("gke-mps", [])
    assert config.parse(raw).verify.fail_on_violation is True


@pytest.mark.parametrize("stack", NATIVE_STACKS)
def test_native_stack_plans_no_whole_gpu_pod_since_every_gpu_is_a_shared_slot(stack: str, plan_stack) -> None:
    plan = plan_stack(stack)
    assert "gpushare-whole-gpu" not in _pods(plan)
    assert _expect(plan)["wholeGpuPod"] is None
    assert "gpushare-whole-gpu" in _pods(plan_stack("gke"))


@pytest.mark.parametrize("stack", STACKS)
def test_every_report_names_its_mechanism_and_links_the_comparison(stack: str, plan_stack) -> None:
    plan = plan_stack(stack)
    mechanism = _expect(plan)["mechanism"]
    report = plan.outputs["report"]
    line = next(x for x in report.splitlines() if x.startswith("- Mechanism:"))
    wanted = {"hami-core": "HAMi-core", "mps": "NVIDIA MPS", "time-sharing": "time-sharing"}[mechanism]
    assert f"`{mechanism}`" in line and wanted in line
    assert "[docs/sharing-comparison.md](docs/sharing-comparison.md)" in line


def test_cost_note_names_the_stack_to_destroy(plan_stack) -> None:
    assert "`pulumi destroy -s gke-mps`" in plan_stack("gke-mps").outputs["costNote"]


# ---------------------------------------------------------------- the judge reads kube-scheduler's refusal


def _k3s_as_gke_sharing() -> tuple[Expectation, dict[str, Any]]:
    """The recorded k3s run, edited: the expectation of GKE's MPS (one slot beyond the two clients), and the
    over-commit Pod's events as kube-scheduler writes them on a full shared node."""
    expect, evidence = load("k3s")
    expect = replace(
        expect,
        mechanism="mps",
        system="gke",
        pending_reason="Insufficient nvidia.com/gpu",
        overcommit_mib=None,
        overcommit_slots=1,
        allocation_annotation=None,
    )
    # GKE's device plugin advertises clients per card × cards: 2 slots, both taken by the proof Pods.
    evidence["nodes"]["hami-lab-rtx6000"]["allocatable"]["nvidia.com/gpu"] = "2"
    return expect, evidence


def _overcommit(expect: Expectation, evidence: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in judge.judge(expect, evidence)["checks"] if c["id"] == "overcommit-rejected")


def test_overcommit_rejected_passes_on_kube_schedulers_insufficient_gpu_event() -> None:
    expect, evidence = _k3s_as_gke_sharing()
    pod = evidence["pods"]["hami-oversubscribe"]
    pod["events"] = [
        {
            "reason": "FailedScheduling",
            "lastTimestamp": pod["creationTimestamp"],
            "source": "default-scheduler",
            "message": (
                "0/3 nodes are available: 1 Insufficient nvidia.com/gpu, 2 node(s) didn't match pod affinity rules."
            ),
        }
    ]
    result = _overcommit(expect, evidence)
    assert result["passed"] is True, result["observed"]


def test_overcommit_rejected_fails_when_the_refusal_is_not_for_want_of_slots() -> None:
    expect, evidence = _k3s_as_gke_sharing()  # the recorded events: NodeUnfitPod and HAMi's FilteringFailed
    result = _overcommit(expect, evidence)
    assert result["passed"] is False
    assert "no FailedScheduling event naming Insufficient nvidia.com/gpu" in result["observed"]


def test_overcommit_rejected_fails_when_the_node_took_a_client_too_many() -> None:
    expect, evidence = _k3s_as_gke_sharing()
    evidence["pods"]["hami-oversubscribe"].update(phase="Running", nodeName="gke-node-1", events=[])
    result = _overcommit(expect, evidence)
    assert result["passed"] is False and "was scheduled" in result["observed"]


@pytest.mark.parametrize(
    ("stack", "strategy", "ipc"), [("gke-mps", "MPS", True), ("gke-time-sharing", "TIME_SHARING", False)]
)
def test_offline_plan_view_shows_the_pools_sharing_and_what_the_pods_select(stack, strategy, ipc, plan_stack) -> None:
    view = re.sub(r",\n[│ ]+", ", ", text.render(plan_stack(stack)))  # a field folded at 120 characters, rejoined
    assert f"shared by {strategy} among 2 clients per GPU" in view
    assert view.count(f"node selector: {STRATEGY}={stack.removeprefix('gke-')}, {CLIENTS}=2") == 3
    assert view.count("host IPC: yes") == (3 if ipc else 0)
