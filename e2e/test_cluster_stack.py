"""The `cluster` stack on the real engine, in order: preview with the policy pack, up, no-change previews, the guard's
CEL, config changes against the offline plan, the audit, destroy. Each test is one scenario of docs/testing.md."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from components.gpu.guard import RULES
from components.gpu.hami_cards import USE_UUID_ANNOTATION
from components.incluster.audit import DISABLE_CONTROL
from e2e.conftest import CARD, new_stack
from e2e.controlplane import ControlPlane
from e2e.offline import agreement, changes, offline_plan, planned_card_swap, planned_change, planned_steps, real_steps
from e2e.stack import REPO, Stack


@pytest.fixture(scope="module")
def stack(control_plane: ControlPlane, work: Path, chart_dirs: Path) -> Iterator[Stack]:
    s = new_stack(control_plane, work, chart_dirs)
    yield s
    if s.cli("stack", "ls").returncode == 0:
        s.run("destroy")  # a failed scenario leaves nothing for the next module


def pod(name: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    """A tenant's GPU Pod: one slot of HAMi's, 1000 MiB, and the environment given."""
    container = {
        "name": "c",
        "image": "busybox",
        "resources": {"limits": {"nvidia.com/gpu": "1", "nvidia.com/gpumem": "1000"}},
        "env": [{"name": k, "value": v} for k, v in (env or {}).items()],
    }
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": {"containers": [container]}}


def test_preview_with_the_policy_pack_lists_what_the_offline_plan_lists(stack: Stack) -> None:
    result = stack.run("preview", "--policy-pack")
    assert "error" not in result, result["error"]
    agree, total, differ = agreement(real_steps(result), planned_steps(offline_plan()))
    print(f"preview: {agree} of {total} resources agree with the offline plan (URN and operation)")
    assert not differ, differ


def test_up_creates_every_resource_and_exports_the_documented_outputs(stack: Stack) -> None:
    result = stack.run("up", "--policy-pack")
    assert "error" not in result, result["error"]
    plan = offline_plan()
    assert result["summary"].get("create") == len(plan["resources"]) + 1  # and the stack itself
    assert sorted(result["outputs"]) == sorted(plan["outputs"])


def test_verification_says_not_judged_where_no_container_ran(stack: Stack) -> None:
    verification = stack.run("outputs")["outputs"]["verification"]
    assert verification["passed"] is False
    assert verification["error"].startswith("not judged: ")
    assert verification["checks"] and all(c["passed"] is False for c in verification["checks"])


def test_a_second_preview_shows_no_change(stack: Stack) -> None:
    result = stack.run("preview", "--expect-no-changes")
    assert "error" not in result, result["error"]


def unready_pods(plane: ControlPlane, namespace: str) -> set[str]:
    """Pods the provider's refresh reads as unhealthy: neither Ready nor Succeeded (await/checker/pod/check.go)."""
    out = set()
    for p in plane.api("GET", f"/api/v1/namespaces/{namespace}/pods")["items"]:
        ready = any(c["type"] == "Ready" and c["status"] == "True" for c in p["status"].get("conditions", []))
        if not ready and p["status"].get("phase") != "Succeeded":
            out.add(p["metadata"]["name"])
    return out


def test_after_refresh_the_unready_pods_get_an_empty_update_and_nothing_is_replaced(
    stack: Stack, control_plane: ControlPlane
) -> None:
    # docs/day-two.md, Refresh: a Pod that is not Ready keeps the refresh's init error, and the next up issues an
    # empty update for it (no replaceOnChanges path names #initerror); here every Pod HAMi's scheduler would place
    # is Pending (no HAMi scheduler runs under kwok), the verifier Succeeded.
    refreshed = stack.run("refresh")
    assert "error" not in refreshed, refreshed["error"]
    unready = unready_pods(control_plane, "gpushare-proof")
    assert unready
    result = stack.run("preview")
    assert "error" not in result, result["error"]
    changed = {s["urn"].split("::")[-1]: s["op"] for s in result["steps"] if s["op"] != "same"}
    pods = {n: op for n, op in changed.items() if n.startswith("gpushare-proof-workloads-")}  # the Pods' Pulumi names
    assert set(changed.values()) == {"update"}, changed
    assert len(pods) == len(changed) == len(unready), (changed, unready)
    up = stack.run("up")
    assert "error" not in up, up["error"]
    again = stack.run("preview", "--expect-no-changes")
    assert "error" not in again, again["error"]


POD_DRY_RUN_REFUSED = "pod updates may not change fields"
"""The API server's answer to the provider's dry-run of a replaced named Pod: not the "field is immutable" message
its preview retries under another name on (pulumi-kubernetes provider/pkg/await/await.go:213, v4.25.0 to v4.32.0)."""


CORES = "gpushare:verify.coresPercent=50"
"""The stack's `verify.coresPercent` from the first config change on, as a `-c` override of the offline plan's."""
TWO_CARDS = "gpushare:gpu.perNode=2"
CARD_1 = {**CARD, "id": "GPU-0e2e0000-0000-4000-8000-000000000002", "index": 1}
"""A second card, NVML index 1, listed first: the device plugin writes the cards in map order, `index` omitted for 0."""
ANOTHER_CARD_1 = {**CARD_1, "id": "GPU-0e2e0000-0000-4000-8000-000000000003"}
PROOF_PODS = ("gpushare-proof-a", "gpushare-proof-b", "gpushare-overcommit", "gpushare-proof-try-cuda-disable-control")
"""The Pods the proof pins to the shared card on a multi-GPU node (docs/stacks.md): its slices, the over-commit Pod,
the CUDA_DISABLE_CONTROL try."""


def apply_change(stack: Stack, what: str, planned: dict[str, str]) -> dict[str, str]:
    """A real preview, then `up`, each compared with what the offline plan changes; a preview the provider's dry-run
    of a replaced named Pod refuses is what docs/day-two.md says of it."""
    preview = stack.run("preview")
    if "error" in preview:
        assert POD_DRY_RUN_REFUSED in preview["error"], preview["error"]
        print(f"{what}: the real preview refused the proof Pods' dry-run ({POD_DRY_RUN_REFUSED})")
    else:
        agree, total, differ = agreement(changes(real_steps(preview)), planned)
        print(f"{what} preview: {agree} of {total} changed resources agree with the offline plan")
        assert not differ, differ
    up = stack.run("up")
    assert "error" not in up, up["error"]
    steps = real_steps(up)
    agree, total, differ = agreement(changes(steps), planned)
    print(f"{what} up: {agree} of {total} changed resources agree with the offline plan")
    assert not differ, differ
    return steps


def pins(plane: ControlPlane) -> dict[str, str | None]:
    """The card each proof Pod is pinned to on the live cluster (None: not pinned)."""
    pods = plane.api("GET", "/api/v1/namespaces/gpushare-proof/pods")["items"]
    found = {p["metadata"]["name"]: (p["metadata"].get("annotations") or {}) for p in pods}
    return {name: found[name].get(USE_UUID_ANNOTATION) for name in PROOF_PODS}


def test_a_config_change_replaces_what_the_offline_plan_says(stack: Stack, tmp_path: Path) -> None:
    planned = planned_change(tmp_path, (), (CORES,))
    stack.set_config("gpushare:verify", {**stack.config()["gpushare:verify"], "coresPercent": 50})
    apply_change(stack, CORES, planned)


def test_gpu_per_node_2_on_a_two_card_node_replaces_the_proof_on_card_1_as_planned(
    stack: Stack, control_plane: ControlPlane, tmp_path: Path
) -> None:
    # docs/day-two.md, `gpu.perNode`: the proof Pods and the verifier replaced delete-first, card 1's UUID read from
    # HAMi's register annotation at `up`; the registration gate and the node's read are new.
    control_plane.register_cards("node", [CARD_1, CARD])
    planned = planned_change(tmp_path, (CORES,), (CORES, TWO_CARDS))
    stack.set_config("gpushare:gpu", {**stack.config()["gpushare:gpu"], "perNode": 2})
    apply_change(stack, TWO_CARDS, planned)
    assert set(pins(control_plane).values()) == {CARD_1["id"]}


def test_another_card_1_replaces_the_proof_pods_and_the_verifier_as_planned(
    stack: Stack, control_plane: ControlPlane
) -> None:
    # docs/day-two.md, the card the proof shares: a new card 1 changes every proof Pod's replacementTrigger.
    control_plane.register_cards("node", [ANOTHER_CARD_1, CARD])
    apply_change(stack, "another card 1", planned_card_swap())
    assert set(pins(control_plane).values()) == {ANOTHER_CARD_1["id"]}


def test_gpu_per_node_back_to_1_replaces_the_proof_and_drops_the_gate_as_planned(
    stack: Stack, control_plane: ControlPlane, tmp_path: Path
) -> None:
    control_plane.register_cards("node", [CARD])
    planned = planned_change(tmp_path, (CORES, TWO_CARDS), (CORES,))
    stack.set_config("gpushare:gpu", {**stack.config()["gpushare:gpu"], "perNode": 1})
    steps = apply_change(stack, "gpushare:gpu.perNode=1", planned)
    assert set(pins(control_plane).values()) == {None}
    assert steps["kubernetes:core/v1:Node::hami-node"] == "discard"  # forgotten, not deleted; the plan lists no read


def test_the_guard_refuses_a_pod_that_opts_out_at_creation(control_plane: ControlPlane) -> None:
    rule = RULES["cuda-disable-control"]
    with pytest.raises(urllib.error.HTTPError) as refused:
        control_plane.api("POST", "/api/v1/namespaces/default/pods", pod("opts-out", {DISABLE_CONTROL: "true"}))
    body = json.loads(refused.value.read())
    assert refused.value.code == 403, body
    assert rule.message in body["message"], body["message"]


def test_the_guard_admits_a_pod_that_does_not_opt_out(control_plane: ControlPlane) -> None:
    created = control_plane.api("POST", "/api/v1/namespaces/default/pods", pod("allowed"))
    assert created["metadata"]["name"] == "allowed"
    control_plane.api("DELETE", "/api/v1/namespaces/default/pods/allowed")


def test_the_audit_finds_the_escapes_the_guard_lets_through_and_only_those(
    control_plane: ControlPlane, tmp_path: Path
) -> None:
    # docs/audit.md: a whole nvidia.com/gpu and a privileged container on a GPU node are unlimited, a HAMi slice is
    # limited; the guard refuses neither of the first two, so the audit is what finds them.
    control_plane.api("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                      "metadata": {"name": "tenant"}})  # fmt: skip
    whole = pod("whole")
    whole["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": "1"}}
    privileged = pod("privileged")
    privileged["spec"]["containers"][0]["resources"] = {}
    privileged["spec"]["containers"][0]["securityContext"] = {"privileged": True}
    privileged["spec"]["nodeName"] = "node"
    for p in (whole, privileged, pod("slice")):
        control_plane.api("POST", "/api/v1/namespaces/tenant/pods", p)
    out = subprocess.run(
        [sys.executable, "-m", "components.audit", "--kubeconfig", str(control_plane.kubeconfig), "--json"],
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    control_plane.api("DELETE", "/api/v1/namespaces/tenant")
    assert out.returncode == 1, out.stderr
    found = json.loads(out.stdout)
    unlimited = {p["pod"]: p["reason"] for p in found["pods"] if p["class"] == "unlimited"}
    limited = {p["pod"]: p["reason"] for p in found["pods"] if p["class"] == "limited"}
    print(f"audit: unlimited {unlimited}; limited {sorted(limited)}")
    # The proof's two tries escape on purpose (docs/proof.md); from a laptop their namespace is not a system one.
    assert unlimited == {
        "tenant/whole": "whole-gpu",
        "tenant/privileged": "privileged",
        "gpushare-proof/gpushare-proof-try-cuda-disable-control": "cuda-disable-control",
        "gpushare-proof/gpushare-proof-try-visible-devices-all": "visible-devices-without-request",
    }
    assert "tenant/slice" in limited


def test_destroy_leaves_none_of_the_stacks_objects(stack: Stack, control_plane: ControlPlane) -> None:
    result = stack.run("destroy")
    assert "error" not in result, result["error"]
    left = []
    for ns in ("hami-system", "gpu-operator", "gpushare-proof"):
        try:
            control_plane.api("GET", f"/api/v1/namespaces/{ns}")
            left.append(f"namespace {ns}")
        except urllib.error.HTTPError as exc:
            assert exc.code == 404
    for kind in ("clusterroles", "clusterrolebindings"):
        items = control_plane.api("GET", f"/apis/rbac.authorization.k8s.io/v1/{kind}")["items"]
        left += [f"{kind} {i['metadata']['name']}" for i in items if "gpushare" in i["metadata"]["name"]]
    policies = control_plane.api("GET", "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies")
    left += [f"policy {i['metadata']['name']}" for i in policies["items"]]
    node = control_plane.api("GET", "/api/v1/nodes/node")
    assert node["metadata"]["annotations"]["hami.io/node-nvidia-register"] == json.dumps(
        CARD, separators=(",", ":")
    ).join("[]")
    if "gpu" in node["metadata"].get("labels", {}):
        left.append("node label gpu")
    assert not left, left
