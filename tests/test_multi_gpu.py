"""Several cards per node: HAMi's proof pinned to card 1 by the UUID the node registers, GKE's sharing refused.

The k3s VM, an existing host and an existing cluster plan with `gpu.perNode=2`; every slice Pod carries
`nvidia.com/use-gpuuuid` with card 1's UUID, which the mocks' two-card register annotation supplies (as the
node would at `pulumi up`), and the verifier's expectation says which card, by index and UUID.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from components.gpu.hami_cards import SHARED_CARD_INDEX, USE_UUID_ANNOTATION, registered_card
from components.incluster.evidence.parse import parse_node_register
from components.incluster.expectation import Expectation
from components.mocks import ANSWERS, READ_AT_UP, GpushareMocks, Invented, MockResourceArgs
from components.plan import main
from tests.helpers.k8s_schema import objects_in, validate

POD = "kubernetes:core/v1:Pod"
NODE = "kubernetes:core/v1:Node"
JOB = "kubernetes:batch/v1:Job"
ROLE = "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole"
INSTANCE = "gcp:compute/instance:Instance"
REGISTER = "hami.io/node-nvidia-register"
HOST = ("gpushare:platform=existing-host", "gpushare:vm=null", "gpushare:host.address=192.0.2.50",
        "gpushare:host.privateKey=placeholder")  # fmt: skip
SIZED_BY_THE_T4 = ("gpushare:verify.sliceMiB=null", "gpushare:verify.extraGiB=null", "gpushare:verify.sweepGiB=null")

TWO_CARDS = {
    "k3s-vm g4-standard-96": (
        "k3s",
        "hami-lab-rtx6000",
        ("gpushare:vm.machineType=g4-standard-96", "gpushare:gpu.perNode=2"),
    ),
    "k3s-vm n1 + 2 T4": (
        "k3s",
        "hami-lab-rtx6000",
        (
            "gpushare:vm.machineType=n1-standard-8",
            "gpushare:gpu.type=nvidia-tesla-t4",
            "gpushare:gpu.perNode=2",
            *SIZED_BY_THE_T4,
        ),
    ),
    "existing host": ("k3s", "hami-lab-rtx6000", (*HOST, "gpushare:gpu.perNode=2")),
    "cluster": ("cluster", "node", ("gpushare:gpu.perNode=2",)),
}
"""Variant → (stack, the node whose card the proof shares, overrides)."""
PINNED = ("gpushare-proof-a", "gpushare-proof-b", "gpushare-overcommit", "gpushare-proof-try-cuda-disable-control")


def _pods(plan: Any) -> dict[str, dict[str, Any]]:
    return {r["inputs"]["metadata"]["name"]: r for r in plan.find(POD)}


def _verifier_expectation(plan: Any) -> Expectation:
    env = _pods(plan)["gpushare-verifier"]["inputs"]["spec"]["containers"][0]["env"]
    return Expectation.parse(next(e["value"] for e in env if e["name"] == "GPUSHARE_EXPECT"))


@pytest.fixture(scope="module", params=list(TWO_CARDS), ids=list(TWO_CARDS))
def two_card(request) -> tuple[Any, str]:
    from components.plan import run

    stack, node, overrides = TWO_CARDS[request.param]
    return run(stack, list(overrides)), node


def test_every_slice_pod_is_pinned_to_card_1_by_the_uuid_the_node_registers(two_card) -> None:
    plan, _ = two_card
    pods = _pods(plan)
    for name in PINNED:
        assert pods[name]["inputs"]["metadata"]["annotations"][USE_UUID_ANNOTATION] == ANSWERS.gpu_uuid_1, name
        # A real preview cannot know it: the plan says where it comes from.
        assert pods[name]["unknownInputs"]["/metadata/annotations/nvidia.com~1use-gpuuuid"] == READ_AT_UP
    # The escape try asks for no card: HAMi never schedules it, so nothing pins it.
    escape = pods["gpushare-proof-try-visible-devices-all"]["inputs"]["metadata"].get("annotations") or {}
    assert USE_UUID_ANNOTATION not in escape
    assert ANSWERS.gpu_uuid_0 not in json.dumps([pods[n]["inputs"] for n in pods])


def test_the_node_is_read_only_after_a_gate_saw_hami_register_its_cards(two_card) -> None:
    plan, node = two_card
    read = plan.one(NODE, "hami-node")
    assert read["options"]["read"] == node
    assert read["dependsOn"] == ["hami-registered-job"]
    job = plan.one(JOB, "hami-registered-job")
    env = {e["name"]: e["value"] for e in job["inputs"]["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["GATE_PATH"] == f"/api/v1/nodes/{node}"
    assert env["GATE_READY"] == f"annotation:{REGISTER}"
    assert "hami-release" in job["dependsOn"]
    assert plan.one(ROLE, "hami-registered-reader")["inputs"]["rules"] == [
        {"apiGroups": [""], "resources": ["nodes"], "resourceNames": [node], "verbs": ["get"]}
    ]
    for name in PINNED:
        assert "hami-node" in _pods(plan)[name]["dependsOn"], name


def test_the_verifier_expects_card_1_its_uuid_and_hamis_one_indexed_limit(two_card) -> None:
    plan, _ = two_card
    expect = _verifier_expectation(plan)
    assert (expect.cards_per_node, expect.shared_card_index, expect.shared_card_uuid) == (2, 1, ANSWERS.gpu_uuid_1)
    assert expect.pin_annotation == USE_UUID_ANNOTATION
    assert expect.pinned_pods == PINNED
    # Indexed by the Pod's own devices: a one-card Pod on card 1 still gets _0 (HAMi server.go, Allocate).
    assert expect.device_limit_env == ("CUDA_DEVICE_MEMORY_LIMIT_0",)
    assert [k for k in expect.limit_env if k.startswith("CUDA_DEVICE_MEMORY_LIMIT")] == ["CUDA_DEVICE_MEMORY_LIMIT_0"]
    assert expect.node_registration is not None and expect.node_registration.cards_per_node == 2
    assert expect.whole_gpu_card_index is None and expect.whole_gpu_pod is None


def test_the_planned_verification_knows_the_card_by_index_and_never_by_a_made_up_uuid(two_card) -> None:
    plan, _ = two_card
    planned = json.dumps(plan.outputs["verification"]) + plan.outputs["report"]
    assert ANSWERS.gpu_uuid_1 not in planned and ANSWERS.gpu_uuid_0 not in planned


def test_two_card_plans_validate_against_the_1_35_schema(two_card) -> None:
    plan, _ = two_card
    problems = [p for p in map(validate, objects_in(plan)) if p]
    assert problems == []


@pytest.mark.parametrize("stack", ["k3s", "cluster", "gke", "gke-mps", "gke-time-sharing"])
def test_a_one_card_node_pins_nothing_and_reads_no_node(stack: str, plan_stack) -> None:
    plan = plan_stack(stack)
    assert plan.find(NODE) == [] and not [r for r in plan.find(JOB) if r["name"] == "hami-registered-job"]
    for pod in plan.find(POD):
        assert USE_UUID_ANNOTATION not in (pod["inputs"]["metadata"].get("annotations") or {})
    expect = _verifier_expectation(plan)
    assert (expect.cards_per_node, expect.shared_card_index, expect.pin_annotation) == (1, None, None)
    assert expect.pinned_pods == ()


def test_without_a_proof_a_two_card_node_is_neither_gated_nor_read(plan_stack) -> None:
    plan = plan_stack("cluster", "gpushare:gpu.perNode=2", "gpushare:verify.enabled=false")
    assert plan.find(NODE) == [] and "hami-registered-job" not in [j["name"] for j in plan.find(JOB)]


@pytest.mark.parametrize(
    ("stack", "device_env"),
    [
        ("k3s", ("CUDA_DEVICE_MEMORY_LIMIT_0",)),
        ("cluster", ("CUDA_DEVICE_MEMORY_LIMIT_0",)),
        ("gke", ("CUDA_DEVICE_MEMORY_LIMIT",)),
        ("gke-mps", ("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT",)),
        ("gke-time-sharing", ()),
    ],
)
def test_each_mechanism_names_the_per_device_limit_it_injects_for_a_one_card_pod(stack, device_env, plan_stack):
    expect = _verifier_expectation(plan_stack(stack))
    assert expect.device_limit_env == device_env
    assert set(device_env) <= set(expect.limit_env)


def test_kais_whole_gpu_pod_is_on_card_0_the_only_card(plan_stack) -> None:
    expect = _verifier_expectation(plan_stack("gke"))
    assert (expect.whole_gpu_pod, expect.whole_gpu_card_index) == ("gpushare-whole-gpu", 0)


@pytest.mark.parametrize(
    ("overrides", "accelerators", "machine"),
    [
        (("gpushare:vm.machineType=g4-standard-96", "gpushare:gpu.perNode=2"), None, "g4-standard-96"),
        (
            (
                "gpushare:vm.machineType=n1-standard-8",
                "gpushare:gpu.type=nvidia-tesla-t4",
                "gpushare:gpu.perNode=2",
                *SIZED_BY_THE_T4,
            ),
            [{"count": 2, "type": "nvidia-tesla-t4"}],
            "n1-standard-8",
        ),
        (
            (
                "gpushare:vm.machineType=n1-standard-8",
                "gpushare:gpu.type=nvidia-tesla-t4",
                "gpushare:gpu.perNode=4",
                *SIZED_BY_THE_T4,
            ),
            [{"count": 4, "type": "nvidia-tesla-t4"}],
            "n1-standard-8",
        ),
    ],
)
def test_the_k3s_vm_gets_the_cards_its_machine_carries_or_gce_attaches(overrides, accelerators, machine, plan_stack):
    plan = plan_stack("k3s", *overrides)
    vm = plan.one(INSTANCE)["inputs"]
    assert vm["machineType"] == machine
    assert vm.get("guestAccelerators") == accelerators
    if accelerators is None:  # the machine's own cards: priced with it
        assert "with 2 × nvidia-rtx-pro-6000 each" in plan.outputs["costNote"]


def test_the_mocked_node_registers_two_cards_in_map_order_as_hami_does() -> None:
    answers = GpushareMocks().new_resource(
        MockResourceArgs(typ=NODE, name="n", inputs={}, provider=None, resource_id="gpu-1")
    )
    node_id, state = answers
    assert node_id == "gpu-1"
    cards = parse_node_register(state["metadata"]["annotations"][REGISTER])
    assert [c["index"] for c in cards] == [1, 0]  # listed in map order, not by index
    assert {c["id"] for c in cards} == {ANSWERS.gpu_uuid_0, ANSWERS.gpu_uuid_1}
    assert '"index"' not in json.loads(state["metadata"]["annotations"][REGISTER])[1]  # omitempty for card 0


# --- the card, from the register annotation ---------------------------------------------------------------------

V2_10_TWO_CARDS = json.dumps(
    [
        {
            "id": "GPU-bbbb",
            "index": 1,
            "count": 10,
            "devmem": 15360,
            "devcore": 100,
            "type": "NVIDIA-Tesla T4",
            "health": True,
        },
        {"id": "GPU-aaaa", "count": 10, "devmem": 15360, "devcore": 100, "type": "NVIDIA-Tesla T4", "health": True},
    ]
)


def test_card_1_is_found_by_its_index_not_its_place_in_the_list() -> None:
    assert registered_card(V2_10_TWO_CARDS, SHARED_CARD_INDEX, "gpu-1") == "GPU-bbbb"
    assert registered_card(V2_10_TWO_CARDS, 0, "gpu-1") == "GPU-aaaa"


@pytest.mark.parametrize(
    "annotation",
    [
        None,
        "",
        json.dumps([{"id": "GPU-aaaa", "count": 10, "devmem": 15360, "health": True}]),
        "GPU-aaaa,10,15360,100,NVIDIA-Tesla T4,0,true:GPU-bbbb,10,15360,100,NVIDIA-Tesla T4,0,true:",
    ],
)
def test_a_node_without_a_card_1_fails_up_naming_the_node_and_gpu_per_node(annotation) -> None:
    with pytest.raises(ValueError, match=r"node gpu-1: .*index 1.*gpushare:gpu\.perNode"):
        registered_card(annotation, SHARED_CARD_INDEX, "gpu-1")


# --- what the judge is handed --------------------------------------------------------------------------------------


def _wire(**changes: Any) -> dict[str, Any]:
    from components.compose.proof import expectations
    from components.config import parse
    from components.plan import _as_pulumi_config, read_stack_config

    config, _ = read_stack_config("cluster", [])
    cfg = parse(_as_pulumi_config(config))
    from components.gpu.hami import hami_proof

    wire = expectations(cfg, hami_proof(4000, 12000, 30, 10, 1)).to_wire()
    return {**wire, **changes}


@pytest.mark.parametrize(
    ("changes", "named"),
    [
        ({"cardsPerNode": 2}, "sharedCardIndex is unset"),
        ({"cardsPerNode": 2, "sharedCardIndex": 0}, "sharedCardIndex is 0"),
        ({"cardsPerNode": 2, "sharedCardIndex": 2}, "sharedCardIndex is 2"),
        ({"cardsPerNode": 0}, "cardsPerNode is 0"),
        ({"pinAnnotation": USE_UUID_ANNOTATION}, "pinAnnotation"),
        ({"cardsPerNode": 2, "sharedCardIndex": 1, "pinnedPods": ["gpushare-proof-a"]}, "no pinAnnotation"),
        (
            {
                "cardsPerNode": 2,
                "sharedCardIndex": 1,
                "pinAnnotation": USE_UUID_ANNOTATION,
                "pinnedPods": ["gpushare-proof-a"],
            },
            "must name both proof Pods",
        ),
        ({"wholeGpuCardIndex": 0}, "wholeGpuCardIndex is 0"),
    ],
)
def test_an_expectation_whose_shared_card_cannot_be_judged_is_refused(changes, named) -> None:
    with pytest.raises(ValueError, match=named):
        Expectation.parse(_wire(**changes))


def test_the_new_card_fields_round_trip_the_wire() -> None:
    wire = _wire(
        cardsPerNode=2,
        sharedCardIndex=1,
        sharedCardUuid="GPU-bbbb",
        pinAnnotation=USE_UUID_ANNOTATION,
        pinnedPods=["gpushare-proof-a", "gpushare-proof-b"],
        deviceLimitEnv=["CUDA_DEVICE_MEMORY_LIMIT_0"],
    )
    expect = Expectation.parse(json.dumps(wire))
    assert expect.to_wire() == wire
    assert expect.shared_card_uuid == "GPU-bbbb" and expect.device_limit_env == ("CUDA_DEVICE_MEMORY_LIMIT_0",)


# --- GKE refuses; the refusal says why -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("stack", "overrides", "key", "why"),
    [
        ("gke", ("gpushare:gpu.perNode=2",), "gpushare:gpu.perNode", "reservation Pod"),
        (
            "gke",
            ("gpushare:gke.machineType=g2-standard-24", "gpushare:gpu.type=nvidia-l4"),
            "gpushare:gke.machineType",
            "gkeCdi device policy mounts the devices at admission",
        ),
        ("gke-mps", ("gpushare:gpu.perNode=4",), "gpushare:gpu.perNode", "nvidiaN/vgpuM"),
        (
            "gke-time-sharing",
            ("gpushare:gke.machineType=a2-highgpu-2g", "gpushare:gpu.type=nvidia-tesla-a100"),
            "gpushare:gke.machineType",
            "share one card only by chance",
        ),
    ],
)
def test_gke_refuses_several_cards_per_node_in_one_line_with_the_reason(stack, overrides, key, why, capsys) -> None:
    argv = [stack]
    for value in overrides:
        argv += ["-c", value]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {key}: ") and why in err[0]
    assert "g4-standard-48" in err[0] and "gpushare:gke.nodeCount" in err[0]


def test_a_read_mock_keeps_its_id_and_invents_nothing_else() -> None:
    invented = Invented()
    node_id, _ = GpushareMocks(invented=invented).new_resource(
        MockResourceArgs(typ=NODE, name="n", inputs={}, provider=None, resource_id="gpu-1")
    )
    assert node_id == "gpu-1" and "gpu-1" not in invented.contained
    assert invented.contained == {ANSWERS.gpu_uuid_1: READ_AT_UP, ANSWERS.gpu_uuid_0: READ_AT_UP}


# --- the read in the plan's contract ------------------------------------------------------------------------------


def test_the_node_read_is_a_read_in_the_contract_and_no_change_against_a_plan_that_had_it(plan_stack) -> None:
    import jsonschema

    from components.plan_view.diff import compare
    from components.plan_view.golden import from_lines, sanitize
    from components.plan_view.model import SCHEMA_PATH

    plan = plan_stack("cluster", "gpushare:gpu.perNode=2")
    document = json.loads(plan.to_json())
    jsonschema.Draft202012Validator(json.loads(SCHEMA_PATH.read_text())).validate(document)
    assert next(r for r in document["resources"] if r["name"] == "hami-node")["operation"] == "read"
    same = compare(from_lines(sanitize(plan)), from_lines(sanitize(plan)), "base")
    assert same.operations[f"{NODE}::hami-node"] == "read" and same.resources == []
    one_card = compare(from_lines(sanitize(plan)), from_lines(sanitize(plan_stack("cluster"))), "base")
    gone = next(c for c in one_card.resources if c.name == "hami-node")
    assert gone.operation == "discard" and gone.mark == "- discard"  # the engine forgets it, deletes nothing
