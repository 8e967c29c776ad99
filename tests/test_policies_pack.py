"""The pack as a whole: our three stacks pass it, a broken plan is caught by name, and the CLI path keeps
secrets recognisable; the README, the CI workflow and the per-stack policy config stay in step with it."""

from __future__ import annotations

import copy
import json
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from google.protobuf import json_format, struct_pb2
from pulumi.runtime import proto
from pulumi_policy import policy as policy_module

from components.plan import Plan
from policies.harness import mandatory, run_pack, run_plan, stack_config
from policies.model import STACK
from policies.pack import RULES, build_policies
from policies.secret_markers import keep_secret_markers

ROOT = Path(__file__).resolve().parent.parent
STACKS = ("gke", "gke-mps", "gke-time-sharing", "k3s", "cluster")
KAI_CHART = "oci://ghcr.io/kai-scheduler/kai-scheduler/kai-scheduler"


def test_every_rule_is_a_policy_with_a_unique_name_and_its_level() -> None:
    policies = build_policies()
    assert len({p.name for p in policies}) == len(RULES)
    for rule, policy in zip(RULES, policies, strict=True):
        assert policy.enforcement_level == rule.enforcement, rule.name


@pytest.mark.parametrize("stack", STACKS)
def test_stack_plan_passes_the_pack(plan_stack: Callable[..., Plan], stack: str) -> None:
    plan = plan_stack(stack)
    blocking = mandatory(run_plan(plan))
    assert blocking == [], "\n".join(map(str, blocking))


def _plan_program(fresh_plan: Callable[..., Plan], tmp_path: Path, body: str) -> Plan:
    (tmp_path / "Pulumi.broken.yaml").write_text("config: {}\n")
    (tmp_path / "__main__.py").write_text(textwrap.dedent(body))
    return fresh_plan("broken", [], root=tmp_path)


def test_kai_release_with_boolean_cdi_enabled_is_caught_by_name(
    fresh_plan: Callable[..., Plan], tmp_path: Path
) -> None:
    plan = _plan_program(
        fresh_plan,
        tmp_path,
        f"""
        import pulumi_kubernetes as k8s
        sharing = {{"gpusharing": {{"arguments": {{"cdiEnabled": True}}}}}}
        k8s.helm.v3.Release("kai", chart="{KAI_CHART}", version="v0.17.0", namespace="kai-scheduler",
                            values={{"global": {{"gpuSharing": True}}, "binder": {{"plugins": sharing}}}})
    """,
    )
    blocking = mandatory(run_plan(plan, {}))
    assert [d.policy for d in blocking] == ["kai-cdi-enabled-is-a-string"]
    assert blocking[0].resource.endswith("::kai")


def test_kai_scheduler_component_built_with_a_boolean_is_caught_by_name(
    fresh_plan: Callable[..., Plan], tmp_path: Path
) -> None:
    pytest.importorskip("components.gpu.kai")
    plan = _plan_program(
        fresh_plan,
        tmp_path,
        """
        from components.gpu.kai import KaiScheduler, KaiSchedulerArgs
        from components.gpu.settings import KaiConfig
        # model_construct skips config's own check: a component built by hand, past config, as the policy sees it.
        KaiScheduler("kai", KaiSchedulerArgs(KaiConfig.model_construct(cdi_enabled=True), stack="test"))
    """,
    )
    assert [d.policy for d in mandatory(run_plan(plan, {}))] == ["kai-cdi-enabled-is-a-string"]


def _edited(plan: Plan, type_: str, edit: Callable[[dict[str, Any]], None]) -> list[dict[str, Any]]:
    resources = copy.deepcopy(plan.resources)
    targets = [r for r in resources if r["type"] == type_]
    assert targets, f"{plan.stack} plans no {type_}"
    for r in targets:
        edit(r["inputs"])
    return resources


def test_stale_hami_tag_in_the_k3s_plan_is_caught_from_its_bootstrap(plan_stack: Callable[..., Plan]) -> None:
    plan = plan_stack("k3s")

    def stale(inputs: dict[str, Any]) -> None:
        if inputs.get("chart", "").endswith("hami"):
            scheduler = inputs["values"].setdefault("scheduler", {}).setdefault("kubeScheduler", {})
            scheduler.setdefault("image", {})["tag"] = "v1.35.6"  # a pin: unpinned, the chart takes the server's

    resources = _edited(plan, "kubernetes:helm.sh/v3:Release", stale)
    # no policy config: the version comes from the k3s release in the plan's bootstrap command
    names = {d.policy for d in mandatory(run_pack(resources, plan.outputs, {}, stack="k3s"))}
    assert names == {"hami-scheduler-tag-matches-cluster-version"}


def test_gke_plan_without_the_gpu_memory_label_is_caught(plan_stack: Callable[..., Plan]) -> None:
    plan = plan_stack("gke")
    resources = _edited(
        plan,
        "gcp:container/nodePool:NodePool",
        lambda inputs: inputs["nodeConfig"]["labels"].pop("nvidia.com/gpu.memory"),
    )
    names = {d.policy for d in mandatory(run_pack(resources, plan.outputs, stack_config("gke"), stack="gke"))}
    assert names == {"kai-node-pool-has-gpu-memory-label"}


def test_cluster_plan_with_the_operator_device_plugin_on_is_caught(plan_stack: Callable[..., Plan]) -> None:
    plan = plan_stack("cluster")

    def plugin_on(inputs: dict[str, Any]) -> None:
        if inputs.get("chart", "").endswith("gpu-operator"):
            inputs["values"]["devicePlugin"]["enabled"] = True

    resources = _edited(plan, "kubernetes:helm.sh/v3:Release", plugin_on)
    names = {d.policy for d in mandatory(run_pack(resources, plan.outputs, stack_config("cluster"), stack="cluster"))}
    assert names == {"hami-device-plugin-beside-gpu-operator"}


def test_plaintext_kubeconfig_output_is_caught_and_a_secret_one_passes(
    fresh_plan: Callable[..., Plan], tmp_path: Path
) -> None:
    plan = _plan_program(
        fresh_plan,
        tmp_path,
        """
        import pulumi
        text = "apiVersion: v1\\nclusters:\\n- cluster: {server: https://203.0.113.20:6443}\\nusers: []\\n"
        pulumi.export("kubeconfig", pulumi.Output.secret(text))
        pulumi.export("adminKubeconfig", text)
    """,
    )
    blocking = mandatory(run_plan(plan, {}))
    assert [(d.policy, "adminKubeconfig" in d.message) for d in blocking] == [("kubeconfig-output-is-secret", True)]


def test_policy_config_can_turn_a_rule_advisory() -> None:
    release = {
        "type": "kubernetes:helm.sh/v3:Release",
        "name": "hami",
        "inputs": {"chart": "hami", "version": "latest", "values": {}},
    }
    assert [d.policy for d in mandatory(run_pack([release], {}))] == ["helm-chart-version-pinned"]
    relaxed = run_pack([release], {}, {"helm-chart-version-pinned": {"enforcementLevel": "advisory"}})
    assert [(d.policy, d.level) for d in relaxed] == [("helm-chart-version-pinned", "advisory")]


# --- the CLI's own analyzer code path ------------------------------------------------------------------------


def _struct(value: dict[str, Any]) -> struct_pb2.Struct:
    out = struct_pb2.Struct()
    json_format.ParseDict(value, out)
    return out


def _secret(value: Any) -> dict[str, Any]:
    return {"4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", "value": value}


@pytest.fixture
def servicer(monkeypatch: pytest.MonkeyPatch) -> Any:
    """pulumi_policy's own analyzer servicer (what the CLI talks to), with the pack's secret shim installed."""
    monkeypatch.setattr(policy_module, "deserialize_properties", policy_module.deserialize_properties)
    assert keep_secret_markers()
    return policy_module._PolicyAnalyzerServicer(
        "gpushare", "0.1.0", build_policies(), policy_module.EnforcementLevel.ADVISORY
    )


def _analyze_stack(servicer: Any, outputs: dict[str, Any]) -> list[str]:
    stack = proto.AnalyzerResource(
        type=STACK,
        urn="urn:pulumi:s::gpushare::pulumi:pulumi:Stack::gpushare-s",
        name="gpushare-s",
        properties=_struct(outputs),
    )
    response = servicer.AnalyzeStack(proto.AnalyzeStackRequest(resources=[stack]), None)
    return [d.policyName for d in response.diagnostics]


def test_analyzer_tells_a_secret_kubeconfig_output_from_a_plaintext_one(servicer: Any) -> None:
    text = "apiVersion: v1\nclusters: []\nusers: []\n"
    assert _analyze_stack(servicer, {"kubeconfig": _secret(text)}) == []
    assert _analyze_stack(servicer, {"kubeconfig": text}) == ["kubeconfig-output-is-secret"]


def test_analyzer_runs_resource_rules_on_engine_encoded_inputs(servicer: Any) -> None:
    values = {"binder": {"plugins": {"gpusharing": {"arguments": {"cdiEnabled": True}}}}}
    request = proto.AnalyzeRequest(
        type="kubernetes:helm.sh/v3:Release",
        urn="urn:pulumi:s::gpushare::x::kai",
        name="kai",
        properties=_struct({"chart": KAI_CHART, "version": "v0.17.0", "values": _secret(values)}),
    )
    names = [d.policyName for d in servicer.Analyze(request, None).diagnostics]
    assert names == ["kai-cdi-enabled-is-a-string"]


# --- what travels with the pack ------------------------------------------------------------------------------


def test_policy_config_files_agree_with_the_stack_files() -> None:
    def stack_file(stack: str) -> dict[str, Any]:
        return yaml.safe_load((ROOT / f"Pulumi.{stack}.yaml").read_text())["config"]

    k3s = stack_config("k3s")["hami-scheduler-tag-matches-server"]["kubernetesVersion"]
    assert k3s == stack_file("k3s")["gpushare:k3s"]["version"]
    cluster = stack_config("cluster")["hami-scheduler-tag-matches-server"]["kubernetesVersion"]
    assert cluster == stack_file("cluster")["gpushare:cluster"]["kubernetesVersion"]
    names = {r.name for r in RULES}
    for stack in STACKS:
        assert set(stack_config(stack)) <= names, stack
        for policy, settings in stack_config(stack).items():
            declared = next(r for r in RULES if r.name == policy).config
            assert set(settings) - {"enforcementLevel"} <= set(declared), (stack, policy)


def test_docs_list_every_rule_with_its_level_and_lab() -> None:
    doc = (ROOT / "docs" / "policies.md").read_text()
    rows = {line.split("|")[1].strip(" `"): line for line in doc.splitlines() if line.startswith("| `")}
    for rule in RULES:
        assert rule.name in rows, rule.name
        assert rule.level in rows[rule.name] and rule.lab in rows[rule.name], rule.name


def test_workflow_runs_tests_and_golden_diff_and_gates_the_cloud_preview() -> None:
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "preview.yml").read_text())
    assert "pull_request" in workflow[True]  # YAML 1.1 reads the `on:` key as True
    offline = json.dumps(workflow["jobs"]["offline"])
    assert "pytest -q" in offline and "tests.golden.regenerate --check" in offline
    preview = workflow["jobs"]["preview"]
    # the cloud preview runs only where the repository has a Pulumi token, found by the credentials job
    assert preview["if"].startswith("needs.credentials.outputs.pulumi == 'true'")
    assert "PULUMI_ACCESS_TOKEN" in json.dumps(workflow["jobs"]["credentials"])
    assert set(preview["strategy"]["matrix"]["stack"]) == set(STACKS)
    action = next(s for s in preview["steps"] if str(s.get("uses", "")).startswith("pulumi/actions@v6"))
    assert action["with"]["policyPacks"] == "policies" and action["with"]["comment-on-pr"] is True


def test_no_rule_module_shadows_the_standard_library() -> None:
    # the CLI runs policies/__main__.py as a script, so a policies/operator.py would replace stdlib `operator`
    modules = {p.stem for p in (ROOT / "policies").glob("*.py")} - {"__init__", "__main__"}
    assert modules & set(sys.stdlib_module_names) == set()
