"""A proof Pod pinned to a card is replaced, not updated, when what places it changes: `gpu.perNode`, or the card
the read of the node returns. A Pod's annotations update in place, so the Pods carry their placement in their
replacementTrigger, and the offline plan's diff shows the replace."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from components.gpu.hami_cards import USE_UUID_ANNOTATION
from components.mocks import ANSWERS, GpushareMocks
from components.plan import Plan, run
from components.plan_view.diff import StackDiff, compare, resource_change
from components.plan_view.golden import compared, with_file_refs
from components.plan_view.replace_rules import replace_rule

POD = "kubernetes:core/v1:Pod"
PROOF_PODS = (
    "gpushare-proof-workloads-pod-a",
    "gpushare-proof-workloads-pod-b",
    "gpushare-proof-workloads-overcommit",
    "gpushare-proof-workloads-try-cuda-disable-control",
    "gpushare-proof-workloads-try-visible-devices-all",
)
TWO_CARDS = ["gpushare:gpu.perNode=2"]
OTHER_CARD = "GPU-3a6c9e12-4b7d-4f80-a1c3-6e9b2d5f7a08"


def _pod(plan: Plan, name: str) -> dict[str, Any]:
    return next(r for r in plan.resources if r["type"] == POD and r["name"] == name)


def _operations(diff: StackDiff) -> dict[str, str]:
    return {urn.split("::", 1)[1]: op for urn, op in diff.operations.items() if urn.startswith(f"{POD}::")}


def _reasons(diff: StackDiff, name: str) -> list[str]:
    change = next(c for c in diff.resources if c.name == name)
    return [r["path"] for r in change.replace_because]


def test_a_pods_pin_annotation_alone_updates_it_in_place_by_the_providers_rules() -> None:
    pointer = "/metadata/annotations/" + USE_UUID_ANNOTATION.replace("/", "~1")
    assert replace_rule(POD, pointer) is None
    old = {"type": POD, "name": "p", "inputs": {"metadata": {"name": "p", "annotations": {USE_UUID_ANNOTATION: "a"}}}}
    new = {**old, "inputs": {"metadata": {"name": "p", "annotations": {USE_UUID_ANNOTATION: "b"}}}}
    assert resource_change(old, new).operation == "update"


@pytest.fixture(scope="module")
def one_and_two_cards() -> tuple[Plan, Plan]:
    return run("cluster", []), run("cluster", TWO_CARDS)


def test_gpu_per_node_2_replaces_every_proof_pod_delete_first(one_and_two_cards) -> None:
    one, two = one_and_two_cards
    diff = compare(compared(one), compared(two), "gpu.perNode=1")
    operations = _operations(diff)
    for name in PROOF_PODS:
        assert operations[name] == "replace", f"{name} is {operations[name]}d in place, placed before the change"
        assert "/options/replacementTrigger" in _reasons(diff, name)
        assert next(c for c in diff.resources if c.name == name).delete_first
    back = compare(compared(two), compared(one), "gpu.perNode=2")
    assert all(_operations(back)[name] == "replace" for name in PROOF_PODS)


def test_a_different_pinned_card_replaces_every_proof_pod_and_leaves_the_probes_configmap(one_and_two_cards) -> None:
    _, two = one_and_two_cards
    other = run("cluster", TWO_CARDS, mocks=GpushareMocks(answers=dataclasses.replace(ANSWERS, gpu_uuid_1=OTHER_CARD)))
    pinned = _pod(other, PROOF_PODS[0])["inputs"]["metadata"]["annotations"][USE_UUID_ANNOTATION]
    assert pinned == OTHER_CARD
    # Unmasked: the card is what a read at `up` returns, which the golden form hides.
    diff = compare(with_file_refs(two.as_dict()), with_file_refs(other.as_dict()), "card 1 before")
    operations = _operations(diff)
    for name in PROOF_PODS:
        assert operations[name] == "replace", f"{name} is {operations[name]}d in place, pinned to the old card"
        assert "/options/replacementTrigger" in _reasons(diff, name)
    assert operations["gpushare-proof-verifier-pod"] == "replace"
    assert diff.operations["kubernetes:core/v1:ConfigMap::gpushare-proof-workloads-probes"] == "same"


def test_a_one_card_stack_keeps_the_bare_run_id_as_its_trigger(one_and_two_cards) -> None:
    one, two = one_and_two_cards
    assert {_pod(one, n)["options"]["replacementTrigger"] for n in PROOF_PODS} == {"1"}
    assert all("gpu.perNode=2" in _pod(two, n)["options"]["replacementTrigger"] for n in PROOF_PODS)


def test_the_golden_form_shows_no_card_the_mocks_made_up(one_and_two_cards) -> None:
    _, two = one_and_two_cards
    shown = str(compared(two))
    assert ANSWERS.gpu_uuid_1 not in shown
