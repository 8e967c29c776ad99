"""The verifier: read-only RBAC, a Pod Pulumi waits for, and the `verification` output read from its status."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from components.incluster import judge, message
from components.incluster.expectation import Expectation
from components.mocks import GpushareMocks
from components.plan import Plan
from components.verify import collect
from components.verify.collect import VerificationFailed
from tests.helpers import k8s_schema
from tests.helpers.proof_program import HAMI_K3S, KAI_GKE, plan_proof

POD = "kubernetes:core/v1:Pod"
VERIFIER = "gpushare-proof-verifier"
CLUSTER_ROLE = "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole"
ROLE = "kubernetes:rbac.authorization.k8s.io/v1:Role"
READ_VERBS = {"get", "list", "watch"}


@pytest.fixture(scope="module")
def plans(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Plan]:
    return {
        stack: plan_proof(tmp_path_factory.mktemp(stack), stack, contract)
        for stack, contract in (("k3s", HAMI_K3S), ("gke", KAI_GKE))
    }


def verifier_pod(plan: Plan) -> dict[str, Any]:
    return plan.one(POD, f"{VERIFIER}-pod")


def expect_of(plan: Plan) -> dict[str, Any]:
    (container,) = verifier_pod(plan)["inputs"]["spec"]["containers"]
    return json.loads(next(e["value"] for e in container["env"] if e["name"] == "GPUSHARE_EXPECT"))


def verdict(expect: dict[str, Any], failing: set[str] = frozenset(), **extra: Any) -> str:
    """A termination message as the verifier writes it: message.encode of a judged result."""
    checks = [
        {**c, "passed": c["id"] not in failing, "observed": f"observed {c['id']}", "evidence": "recorded"}
        for c in judge.planned_checks(Expectation.parse(expect))
    ]
    result = {"passed": not failing, "checks": checks, "findings": [], "ghostQuota": [], **extra}
    return message.encode(result)


def status_override(message: str | None) -> Callable[[Any, dict[str, Any]], dict[str, Any] | None]:
    """Mock state: the verifier Pod Succeeded with `message` as its termination message (None: no message)."""

    def override(args: Any, state: dict[str, Any]) -> dict[str, Any] | None:
        if args.typ != POD or args.name != f"{VERIFIER}-pod":
            return None
        terminated: dict[str, Any] = {"exitCode": 0, "reason": "Completed"}
        if message is not None:
            terminated["message"] = message
        return {**state, "status": {"phase": "Succeeded", "containerStatuses": [
            {"name": "verifier", "state": {"terminated": terminated}}]}}  # fmt: skip

    return override


def applied(tmp_path: Path, stack: str, message: str | None, overrides: list[str] | None = None) -> Plan:
    contract = {"k3s": HAMI_K3S, "gke": KAI_GKE}[stack]
    mocks = GpushareMocks(override=status_override(message))
    return plan_proof(tmp_path, stack, contract, overrides, preview=False, mocks=mocks)


# --- the Pod and its RBAC ----------------------------------------------------------------------------------


def planned(contract: Any) -> list[str]:
    """The contract's checks and, where a memory quota is set (every contract here), `allocation-paths` after them."""
    return [*contract.checks, "allocation-paths"]


def test_verifier_pod_is_waited_for_until_its_container_terminated_or_the_scheduler_refused_it(
    plans: dict[str, Plan],
) -> None:
    pod = verifier_pod(plans["k3s"])
    wait_for = pod["inputs"]["metadata"]["annotations"]["pulumi.com/waitFor"]
    # succeeded, failed, or a conditions list holding the scheduler's Unschedulable
    assert wait_for == "jsonpath={.status[?@ == 'Succeeded' || @ == 'Failed' || @[?@.reason == 'Unschedulable']]}"
    assert "pulumi.com/skipAwait" not in pod["inputs"]["metadata"]["annotations"]
    spec = pod["inputs"]["spec"]
    assert spec["restartPolicy"] == "Never"
    assert spec["automountServiceAccountToken"] is True
    assert spec["serviceAccountName"] == "gpushare-verifier"
    assert spec["containers"][0]["command"] == ["python3", "-m", "incluster.verifier"]
    assert spec["containers"][0]["volumeMounts"][0] == {"name": "probes", "mountPath": "/opt/gpushare/incluster",
                                                        "readOnly": True}  # fmt: skip
    assert {"name": "PYTHONPATH", "value": "/opt/gpushare"} in spec["containers"][0]["env"]


def test_verifier_timeout_is_beyond_its_deadline(plans: dict[str, Plan], tmp_path: Path) -> None:
    timeout = verifier_pod(plans["k3s"])["options"]["customTimeouts"]["create"]
    assert int(timeout.removesuffix("s")) >= 900 + 60
    longer = plan_proof(tmp_path, "k3s", HAMI_K3S, ["gpushare:verify.deadlineSeconds=3000"])
    assert int(verifier_pod(longer)["options"]["customTimeouts"]["create"].removesuffix("s")) >= 3060
    assert expect_of(longer)["deadlineSeconds"] == 3000


def test_verifier_depends_on_every_proof_pod(plans: dict[str, Plan]) -> None:
    for plan in plans.values():
        proof_pods = {r["name"] for r in plan.find(POD) if r["parent"] == "gpushare-proof-workloads"}
        assert len(proof_pods) >= 3
        assert proof_pods <= set(verifier_pod(plan)["dependsOn"])
    assert "gpushare-proof-workloads-overcommit" in verifier_pod(plans["k3s"])["dependsOn"]
    assert "gpushare-proof-workloads-whole-gpu" in verifier_pod(plans["gke"])["dependsOn"]


def test_verifier_cluster_role_grants_only_read_verbs_on_what_it_reads(plans: dict[str, Plan]) -> None:
    rules = plans["k3s"].one(CLUSTER_ROLE)["inputs"]["rules"]
    granted = {(res, verb) for rule in rules for res in rule["resources"] for verb in rule["verbs"]}
    assert all(rule["apiGroups"] == [""] for rule in rules)
    assert granted == {
        *(("pods", v) for v in READ_VERBS),
        *(("pods/log", v) for v in READ_VERBS),
        ("events", "get"), ("events", "list"),
        ("nodes", "get"), ("nodes", "list"),
    }  # fmt: skip
    assert not plans["k3s"].find(ROLE)


def test_monitor_proxy_is_a_namespaced_get_only_role(plans: dict[str, Plan]) -> None:
    role = plans["gke"].one(ROLE)["inputs"]
    assert role["metadata"]["namespace"] == "kai-resource-isolator"
    assert role["rules"] == [{"apiGroups": [""], "resources": ["pods/proxy"], "verbs": ["get"]}]
    assert all("pods/proxy" not in rule["resources"] for rule in plans["gke"].one(CLUSTER_ROLE)["inputs"]["rules"])


def test_verifier_rbac_binds_its_service_account(plans: dict[str, Plan]) -> None:
    binding = plans["gke"].one("kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding")["inputs"]
    account = {"kind": "ServiceAccount", "name": "gpushare-verifier", "namespace": "gpushare-proof"}
    assert binding["subjects"] == [account]
    assert binding["roleRef"]["name"] == plans["gke"].one(CLUSTER_ROLE)["inputs"]["metadata"]["name"]
    rb = plans["gke"].one("kubernetes:rbac.authorization.k8s.io/v1:RoleBinding")["inputs"]
    assert rb["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "gpushare-proof-verifier"}


def test_verifier_env_carries_the_expectations(plans: dict[str, Plan]) -> None:
    expect = expect_of(plans["k3s"])
    assert expect["namespace"] == "gpushare-proof"
    assert expect["system"] == "hami"
    assert expect["pods"] == ["gpushare-proof-a", "gpushare-proof-b"]
    assert expect["overcommitPod"] == "gpushare-overcommit"
    assert expect["pendingReason"] == "CardInsufficientMemory"
    assert (expect["visibleMiB"], expect["limitBytes"]) == (8000, 8000 * 2**20)
    assert expect["limitEnv"] == {"CUDA_DEVICE_MEMORY_LIMIT_0": "8000m"}
    assert expect["checks"] == planned(HAMI_K3S)
    assert expect["wholeGpuPod"] is None and expect["monitor"] is None
    gke = expect_of(plans["gke"])
    assert gke["monitor"] == {
        "namespace": "kai-resource-isolator",
        "port": 9400,
        "path": "/metrics",
        "labelSelector": "app.kubernetes.io/name=kai-resource-isolator-monitor",
    }


def test_every_verifier_object_validates_against_kubernetes_1_35(plans: dict[str, Plan]) -> None:
    objects = [o for plan in plans.values() for o in k8s_schema.objects_in(plan)]
    kinds = {o["kind"] for o in objects}
    assert {"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "Pod"} <= kinds
    assert [c for c in map(k8s_schema.validate, objects) if c] == []


# --- the verification output -------------------------------------------------------------------------------


def test_preview_lists_planned_checks_and_claims_none(plans: dict[str, Plan]) -> None:
    for stack, contract in (("k3s", HAMI_K3S), ("gke", KAI_GKE)):
        verification = plans[stack].outputs["verification"]
        assert verification["passed"] is None
        assert [c["id"] for c in verification["checks"]] == planned(contract)
        assert all(c["passed"] is None and c["observed"] is None for c in verification["checks"])
        assert all(c["expected"] for c in verification["checks"])
        assert verification["findings"] == []
        assert isinstance(plans[stack].outputs["report"], str)


def test_isolation_note_says_software_not_mig_and_the_contract_notes(plans: dict[str, Plan]) -> None:
    assert "not MIG" in plans["k3s"].outputs["isolationNote"]
    assert "no multi-tenant boundary" in plans["gke"].outputs["isolationNote"]
    assert "multi-tenant" not in plans["k3s"].outputs["isolationNote"]


def test_ghost_quota_is_an_output_for_hami_only(plans: dict[str, Plan]) -> None:
    assert "ghostQuota" in plans["k3s"].outputs
    assert "ghostQuota" not in plans["gke"].outputs


def test_applied_verdict_is_expanded_from_the_termination_message(tmp_path: Path, plans: dict[str, Plan]) -> None:
    expect = expect_of(plans["k3s"])
    ghost = {"pod": "stuck", "namespace": "default", "reason": "ImagePullBackOff", "node": "n", "memMiB": 4000,
             "cores": 30}  # fmt: skip
    plan = applied(tmp_path, "k3s", verdict(expect, ghostQuota=[ghost]))
    verification = plan.outputs["verification"]
    assert verification["passed"] is True
    assert [c["id"] for c in verification["checks"]] == planned(HAMI_K3S)
    assert all(c["passed"] is True and c["observed"] == f"observed {c['id']}" for c in verification["checks"])
    assert all(c["title"] and c["expected"] for c in verification["checks"])
    assert plan.outputs["ghostQuota"] == [ghost]
    assert isinstance(plan.outputs["report"], str) and plan.outputs["report"]


def test_failing_verdict_fails_the_run_naming_the_failing_check(tmp_path: Path, plans: dict[str, Plan]) -> None:
    message = verdict(expect_of(plans["k3s"]), failing={"overcommit-rejected"})
    with pytest.raises(VerificationFailed, match="overcommit-rejected") as raised:
        applied(tmp_path, "k3s", message)
    assert "same-gpu" not in str(raised.value).split(".")[0]


def test_failing_verdict_is_exported_when_fail_on_violation_is_false(tmp_path: Path, plans: dict[str, Plan]) -> None:
    message = verdict(expect_of(plans["k3s"]), failing={"memory-enforced"})
    plan = applied(tmp_path, "k3s", message, ["gpushare:verify.failOnViolation=false"])
    verification = plan.outputs["verification"]
    assert verification["passed"] is False
    assert [c["id"] for c in verification["checks"] if not c["passed"]] == ["memory-enforced"]


def test_missing_termination_message_is_not_judged_and_fails_every_check(tmp_path: Path) -> None:
    # What a cluster simulator (kwok, e2e/) leaves: the verifier Succeeded, exit 0, and no message.
    plan = applied(tmp_path, "k3s", None, ["gpushare:verify.failOnViolation=false"])
    verification = plan.outputs["verification"]
    assert verification["passed"] is False
    assert verification["error"].startswith("not judged: ")
    assert verification["checks"] and all(c["passed"] is False for c in verification["checks"])
    assert all(c["observed"].startswith("not judged: ") for c in verification["checks"])


def test_garbled_termination_message_is_a_failed_verdict_not_a_crash(tmp_path: Path) -> None:
    with pytest.raises(VerificationFailed, match="same-gpu"):
        applied(tmp_path, "k3s", "Traceback (most recent call last): ...")


def test_termination_message_is_read_from_the_first_container() -> None:
    status = {"containerStatuses": [{"state": {"terminated": {"message": '{"passed": true}'}}}]}
    assert collect.termination_message(status) == '{"passed": true}'
    assert collect.termination_message({"containerStatuses": [{"state": {"running": {}}}]}) is None
    assert collect.termination_message({}) is None
    assert collect.termination_message(None) is None


def test_a_new_run_id_replaces_every_proof_pod_and_the_verifier(plan_stack) -> None:
    def pods(plan):
        return {r["name"]: r["options"].get("replacementTrigger") for r in plan.find("kubernetes:core/v1:Pod")}

    first, second = pods(plan_stack("k3s")), pods(plan_stack("k3s", "gpushare:verify.runId=2"))
    assert set(first) == set(second) and len(first) == 6  # a, b, over-commit, the two Pod-level tries, verifier
    assert set(first.values()) == {"1"} and set(second.values()) == {"2"}
