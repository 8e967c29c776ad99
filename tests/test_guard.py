"""The admission guard: its CEL rules run in a real CEL evaluator (cel-python) against the tests' Pods, and its
objects validate against the Kubernetes 1.35 schema."""

from __future__ import annotations

from typing import Any

import celpy
import pytest

from components.gpu.guard import RULES, policy_spec
from tests.helpers.k8s_schema import validate
from tests.test_gpu_audit import SYSTEM_PODS, TENANT_ESCAPES, _planned_pods

POLICY = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy"
BINDING = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding"
ENV = celpy.Environment()


def admitted(pod: dict[str, Any], rule_ids: list[str]) -> list[str]:
    """The ids of the rules that refuse `pod`, each evaluated as the API server would (variables first)."""
    spec = policy_spec([RULES[r] for r in rule_ids], [])
    obj = celpy.json_to_cel(pod)
    variables = {v["name"]: ENV.program(ENV.compile(v["expression"])).evaluate({"object": obj})
                 for v in spec["variables"]}  # fmt: skip
    activation = {"object": obj, "variables": celpy.celtypes.MapType(
        {celpy.celtypes.StringType(k): v for k, v in variables.items()})}  # fmt: skip
    refused = []
    for rule_id, validation in zip(rule_ids, spec["validations"], strict=True):
        if not ENV.program(ENV.compile(validation["expression"])).evaluate(activation):
            refused.append(rule_id)
    return refused


@pytest.mark.parametrize("rule_id", sorted(RULES))
def test_each_rule_refuses_the_tenant_pod_that_opts_out_its_way(rule_id: str) -> None:
    assert admitted(TENANT_ESCAPES[rule_id], sorted(RULES)) == [rule_id]


@pytest.mark.parametrize("reason", ["whole-gpu", "time-sharing", "privileged", "resource-claim"])
def test_pods_that_opt_out_no_way_the_guard_knows_are_admitted(reason: str) -> None:
    assert admitted(TENANT_ESCAPES[reason], sorted(RULES)) == []


def test_the_proof_slice_pods_pass_and_its_tries_are_refused(plan_stack) -> None:
    pods = _planned_pods(plan_stack("k3s"))
    rules = plan_stack("k3s").outputs["gpuGuard"]["rules"]
    assert admitted(pods["gpushare-proof-a"], rules) == []
    assert admitted(pods["gpushare-proof-try-cuda-disable-control"], rules) == ["cuda-disable-control"]
    assert admitted(pods["gpushare-proof-try-visible-devices-all"], rules) == ["visible-devices-without-request"]


def test_the_system_pods_would_be_refused_which_is_why_their_namespaces_are_exempt(plan_stack) -> None:
    plugin = next(p for p in SYSTEM_PODS if p["stack"] == "k3s" and p["metadata"]["name"] == "hami-device-plugin")
    assert "visible-devices-without-request" in admitted(plugin, sorted(RULES))
    guard = plan_stack("k3s").outputs["gpuGuard"]
    assert plugin["metadata"]["namespace"] in guard["exemptNamespaces"]


@pytest.mark.parametrize("stack", ["k3s", "cluster", "gke"])
def test_the_policy_and_binding_validate_against_the_1_35_schema(plan_stack, stack: str) -> None:
    plan = plan_stack(stack)
    for kind, type_ in (("ValidatingAdmissionPolicy", POLICY), ("ValidatingAdmissionPolicyBinding", BINDING)):
        (resource,) = plan.find(type_)
        obj = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind, **{
            k: v for k, v in resource["inputs"].items() if k in ("metadata", "spec")}}  # fmt: skip
        assert validate(obj) is None


def test_warn_mode_warns_and_off_plans_no_policy(plan_stack) -> None:
    (binding,) = plan_stack("k3s", "gpushare:guard.mode=warn").find(BINDING)
    assert binding["inputs"]["spec"]["validationActions"] == ["Warn"]
    plan = plan_stack("k3s", "gpushare:guard.mode=off")
    assert not plan.find(POLICY) and plan.outputs["gpuGuard"]["why"] == "gpushare:guard.mode is off"


def test_gke_own_sharing_plans_no_policy_and_says_why(plan_stack) -> None:
    plan = plan_stack("gke-mps")
    assert not plan.find(POLICY)
    assert "no nvidia hook" in plan.outputs["gpuGuard"]["why"]


def test_the_extra_exempt_namespaces_join_the_stacks_own(plan_stack) -> None:
    (policy,) = plan_stack("k3s", 'gpushare:guard.exemptNamespaces=["ml-infra"]').find(POLICY)
    values = policy["inputs"]["spec"]["matchConstraints"]["namespaceSelector"]["matchExpressions"][0]["values"]
    assert values == ["gpushare-proof", "kube-system", "ml-infra"]


# --- the guard's API: ValidatingAdmissionPolicy v1 is served from Kubernetes 1.30 -------------------------------


@pytest.mark.parametrize(
    ("stack", "version_key", "old", "new"),
    [
        ("k3s", "k3s.version", "v1.29.15+k3s1", "v1.30.0+k3s1"),
        ("cluster", "cluster.kubernetesVersion", "v1.29.4", "v1.30.2"),
    ],
)
def test_a_server_older_than_1_30_is_refused_naming_the_version_key_and_the_fix(
    stack: str, version_key: str, old: str, new: str
) -> None:
    from components.config import ConfigError
    from components.plan import run

    with pytest.raises(ConfigError) as refused:
        run(stack, [f"gpushare:{version_key}={old}"])
    message = str(refused.value)
    assert message.startswith(f"gpushare:{version_key}: {old} is older than Kubernetes 1.30")
    assert "gpushare:guard.mode to off" in message and "\n" not in message
    # 1.30 itself plans the policy; an older server with the guard off plans no policy.
    assert run(stack, [f"gpushare:{version_key}={new}"]).find(
        "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy"
    )
    off = run(stack, [f"gpushare:{version_key}={old}", "gpushare:guard.mode=off"])
    assert not off.find("kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy")
