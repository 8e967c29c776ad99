"""A second `pulumi up` as the engine steps it (components/plan_view/engine.py, read from pulumi v3.259.0
step_generator.go and step.go): what an existing host and a replaced VM or cluster go through, in order."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from components.mocks import GpushareMocks
from components.plan import Plan
from components.plan_view.engine import CASCADE_CLI, TARGET_CLI, Step, cli_version, up
from components.platform.k3s_bootstrap import K3S_UNINSTALL, render_uninstall_script

HOST = ("gpushare:platform=existing-host", "gpushare:vm=null", "gpushare:host.privateKey=key")
INSTALL = "https://get.k3s.io"
OLDER_CLI = cli_version("v3.259.0")
"""The last CLI before pulumi#23818: a deletedWith plays no part in replacing."""
BOTH_ENGINES = pytest.mark.parametrize("cli", [OLDER_CLI, TARGET_CLI], ids=["v3.259.0", "v3.276.0"])


def runs(step: Step) -> str:
    """The shell a remote or local command step runs: its new create (an update runs create again, pulumi-command
    v1.2.1 remote/commandController.go:75-81), or on a delete its old state's delete (:86-91)."""
    if not step.type.startswith("command:") or step.op == "drop":
        return ""
    inputs = step.resource["inputs"]
    if step.op == "delete":
        return str(inputs.get("delete") or "")
    return str(inputs.get("update") or inputs.get("create") or "")


def uninstalls_after_install(steps: list[Step]) -> list[str]:
    """The steps that run k3s-uninstall.sh after a step installed k3s."""
    installed = [i for i, s in enumerate(steps) if INSTALL in runs(s)]
    if not installed:
        return []
    return [f"{s.op} {s.name}" for s in steps[installed[0] + 1 :] if K3S_UNINSTALL in runs(s)]


def host_at(fresh_plan: Callable[..., Plan], address: str) -> Plan:
    return fresh_plan("k3s", [*HOST, f"gpushare:host.address={address}"])


# --- an existing host keeps k3s through any successful `up` ------------------------------------------------------


def test_a_new_host_address_reruns_every_step_and_no_uninstall_runs_after_the_new_install(
    fresh_plan: Callable[..., Plan],
) -> None:
    before, after = host_at(fresh_plan, "192.0.2.50"), host_at(fresh_plan, "192.0.2.51")
    steps = up(before.resources, after.resources)
    # The triggers read the address: every bootstrap step is replaced, so each runs on the new address ...
    rerun = {s.name for s in steps if s.op == "create-replacement" and s.type == "command:remote:Command"}
    assert rerun == {f"k3s-{step}" for step in ("driver", "toolkit", "config", "k3s", "checks", "kubeconfig")}
    assert any(INSTALL in runs(s) for s in steps)
    # ... and nothing uninstalls k3s in that `up`: the uninstall is no replaceable step's delete.
    assert uninstalls_after_install(steps) == []
    assert not any(K3S_UNINSTALL in runs(s) for s in steps)


def test_destroy_of_an_existing_host_still_uninstalls_k3s(fresh_plan: Callable[..., Plan]) -> None:
    plan = host_at(fresh_plan, "192.0.2.50")
    steps = up(plan.resources, [])
    assert [s.name for s in steps if K3S_UNINSTALL in runs(s)] == ["k3s-uninstall"]
    uninstall = plan.one("command:remote:Command", "k3s-uninstall")
    # Never replaced: no triggers, no create; a new connection only updates it (commandController.go:75-81).
    assert "triggers" not in uninstall["inputs"] and "create" not in uninstall["inputs"]
    assert uninstall["inputs"]["delete"] == render_uninstall_script()


def _made_by_the_previous_program(plan: Plan) -> list[dict[str, Any]]:
    """The state a stack made before the uninstall moved holds: k3s's install step carries the uninstall."""
    old = [copy.deepcopy(r) for r in plan.resources if r["name"] != "k3s-uninstall"]
    for resource in old:
        if resource["name"] == "k3s-k3s":
            resource["inputs"]["delete"] = render_uninstall_script()
    return old


def test_a_stack_whose_install_step_still_uninstalls_runs_that_uninstall_before_the_new_install(
    fresh_plan: Callable[..., Plan],
) -> None:
    old = _made_by_the_previous_program(host_at(fresh_plan, "192.0.2.50"))
    steps = up(old, host_at(fresh_plan, "192.0.2.51").resources)
    # Delete-first on the install step: the old state's uninstall runs, then the install (never the other way).
    order = [f"{s.op} {s.name}" for s in steps if s.name == "k3s-k3s"]
    assert order == ["delete k3s-k3s", "create-replacement k3s-k3s"]
    assert uninstalls_after_install(steps) == []


def test_the_model_finds_the_uninstall_that_a_create_first_install_step_would_run_last(
    fresh_plan: Callable[..., Plan],
) -> None:
    # The engine's default for a replaced command (pulumi-go-provider infer/resource.go:1248 sets no delete-first).
    old = _made_by_the_previous_program(host_at(fresh_plan, "192.0.2.50"))
    new = copy.deepcopy(host_at(fresh_plan, "192.0.2.51").resources)
    for resource in new:
        if resource["name"] == "k3s-k3s":
            resource["options"].pop("deleteBeforeReplace")
    assert uninstalls_after_install(up(old, new)) == ["delete k3s-k3s"]


# --- a replaced VM or GKE cluster: objects that die with it do not block it -------------------------------------


class NewIds(GpushareMocks):
    """A replacement's new resources: a new VM instance id, a new GKE cluster id."""

    def __init__(self, generation: str):
        def override(args: Any, state: dict[str, Any]) -> dict[str, Any] | None:
            if args.typ == "gcp:compute/instance:Instance":
                return {**state, "instanceId": f"{generation}" * 19}
            return None

        super().__init__(override=override)
        self.generation = generation

    def new_resource(self, args: Any) -> tuple[str | None, dict[str, Any]]:
        resource_id, state = super().new_resource(args)
        if args.typ == "gcp:container/cluster:Cluster":
            resource_id = f"projects/p/locations/z/clusters/{args.inputs.get('name')}"
        return resource_id, state


def replacement(
    fresh_plan: Callable[..., Plan], stack: str, before: list[str], after: list[str], cli: tuple[int, int, int]
) -> list[Step]:
    old = fresh_plan(stack, before, mocks=NewIds("1"))
    return up(old.resources, fresh_plan(stack, after, mocks=NewIds("2")).resources, cli)


@BOTH_ENGINES
@pytest.mark.parametrize(
    ("stack", "before", "after", "root"),
    [
        ("k3s", ["gpushare:vm.spot=true"], ["gpushare:vm.spot=false"], "k3s-vm-instance"),
        ("gke", ["gpushare:gke.clusterName=kai-a"], ["gpushare:gke.clusterName=kai-b"], "gke-cluster"),
    ],
)
def test_a_delete_first_replacement_reaches_no_object_through_the_old_api(
    fresh_plan: Callable[..., Plan], stack: str, before: list[str], after: list[str], root: str, cli: Any
) -> None:
    steps = replacement(fresh_plan, stack, before, after, cli)
    ops = [(s.op, s.name) for s in steps]
    deleted_root = ops.index(("delete", root))
    assert ops.index(("create-replacement", root)) > deleted_root
    chain = steps[:deleted_root]
    objects = [s for s in chain if s.type.startswith("kubernetes:")]
    # Every object in the cluster is in the chain (its provider is replaced: step_generator.go:3254-3266) ...
    assert len(objects) > 10
    # ... and each is dropped from the state without a call to the old API server, stopped Spot VM or not.
    assert {s.op for s in objects} == {"drop"}
    assert all(s.resource["options"]["deletedWith"] == s.resource["options"]["provider"] for s in objects)
    # Then the new cluster gets every object anew.
    created = {s.name for s in steps[deleted_root:] if s.op == "create-replacement"}
    assert {s.name for s in objects} <= created


@pytest.mark.parametrize(("cli", "op"), [(OLDER_CLI, "delete"), (TARGET_CLI, "drop")], ids=["v3.259.0", "v3.276.0"])
def test_deleted_with_the_vm_itself_the_objects_go_through_the_old_api_only_before_the_cascade_engine(
    fresh_plan: Callable[..., Plan], cli: Any, op: str
) -> None:
    # A deletedWith on the chain's root: marked replaced only before pulumi#23818, replaced and deleted since.
    old = fresh_plan("k3s", ["gpushare:vm.spot=true"], mocks=NewIds("1")).resources
    for resource in old:
        if resource["type"].startswith("kubernetes:"):
            resource["options"]["deletedWith"] = "k3s-vm-instance"
    steps = up(old, fresh_plan("k3s", ["gpushare:vm.spot=false"], mocks=NewIds("2")).resources, cli)
    assert {s.op for s in steps if s.type.startswith("kubernetes:") and s.op in ("delete", "drop")} == {op}


def _root_and_dependent() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A VM replaced delete-first (a new zone) and a step deletedWith it whose own inputs do not change."""
    vm = {"type": "gcp:compute/instance:Instance", "name": "vm", "inputs": {"zone": "a"},
          "options": {"deleteBeforeReplace": True}}  # fmt: skip
    step = {"type": "command:remote:Command", "name": "step", "inputs": {"create": "true"},
            "options": {"deletedWith": "vm"}, "dependsOn": []}  # fmt: skip
    return [vm, step], [{**vm, "inputs": {"zone": "b"}}, copy.deepcopy(step)]


def test_before_the_cascade_engine_a_resource_deleted_with_a_replaced_one_stays_as_a_ghost() -> None:
    old, new = _root_and_dependent()
    ops = [(s.op, s.name) for s in up(old, new, OLDER_CLI)]
    assert ops == [("delete", "vm"), ("create-replacement", "vm")]


def test_from_the_cascade_engine_a_resource_deleted_with_a_replaced_one_is_replaced_with_no_call() -> None:
    old, new = _root_and_dependent()
    ops = [(s.op, s.name) for s in up(old, new, CASCADE_CLI)]
    assert ops == [("drop", "step"), ("delete", "vm"), ("create-replacement", "vm"), ("create-replacement", "step")]


def test_the_project_targets_a_cli_with_the_cascade_and_versions_read_as_pulumi_version_prints_them() -> None:
    assert TARGET_CLI >= CASCADE_CLI == cli_version("v3.260.0") == (3, 260, 0)
    assert cli_version("3.276.0") == TARGET_CLI
    with pytest.raises(ValueError, match=r"MAJOR\.MINOR\.PATCH"):
        cli_version("latest")


# --- a replaced node pool re-runs the proof -----------------------------------------------------------------------


def test_a_replaced_gpu_pool_replaces_every_proof_pod_and_the_verifier_so_no_old_verdict_stays(
    fresh_plan: Callable[..., Plan],
) -> None:
    old = fresh_plan("gke", ["gpushare:gke.spot=false"]).resources
    steps = up(old, fresh_plan("gke", ["gpushare:gke.spot=true"]).resources)
    ops = [(s.op, s.name) for s in steps]
    # spot is ForceNew (node_config.go:616): the fixed-name pool is replaced delete-first ...
    assert ops.index(("delete", "gke-gpu-pool")) < ops.index(("create-replacement", "gke-gpu-pool"))
    assert ("delete", "gke-cluster") not in ops
    # ... and with it every proof Pod and the verifier (ReplaceWith, step_generator.go:2893-2903): deleted through
    # the API before the pool goes, created on the new nodes, judged again.
    pods = {r["name"] for r in old if r["type"] == "kubernetes:core/v1:Pod"}
    assert len(pods) >= 5 and "gpushare-proof-verifier-pod" in pods
    assert {n for op, n in ops[: ops.index(("delete", "gke-gpu-pool"))] if op == "delete"} >= pods
    assert {n for op, n in ops if op == "create-replacement"} >= pods
