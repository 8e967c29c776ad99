"""What the real engine and providers do on update, replace and delete rests on resource options the mocks accept
without acting on them: these tests pin each option a fix relies on, so none can silently disappear."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

import pulumi
import pytest
import yaml

from components.mocks import MOCK_KUBECONFIG, VM_EXTERNAL_IP, GpushareMocks
from components.plan import Plan
from components.pulumi_internals import SIG_KEY

EXISTING_HOST = (
    "gpushare:platform=existing-host",
    "gpushare:vm=null",
    "gpushare:host.address=192.0.2.50",
    "gpushare:host.privateKey=key",
)
K8S_PROVIDER = "pulumi:providers:kubernetes"
COMMANDS = ("command:remote:Command", "command:local:Command")
PLACEHOLDER_IDENTITY = "existing:" + hashlib.sha256(b"https://192.0.2.10:6443\nmock").hexdigest()[:16]
"""The server and the decoded CA of examples/kubeconfig.placeholder.yaml's context."""
CREDENTIALS = ("mock-token", "PRIVATE KEY")
"""What a credential looks like in the mocks' command output (the kubeconfig's token, a private key)."""


def revealed(value: Any) -> Any:
    """A mock input with its secret wrapper removed (the mocks see what the provider would)."""
    return value["value"] if isinstance(value, dict) and SIG_KEY in value else value


def in_cluster(plan: Plan) -> list[dict[str, Any]]:
    """Every Kubernetes object and every component that holds them (not the provider itself)."""
    return [r for r in plan.resources if r["type"].startswith(("kubernetes:", "gpushare:gpu:", "gpushare:verify:"))]


# --- destroy: what lives in a cluster the stack owns goes with the cluster ------------------------------------


@pytest.mark.parametrize(
    ("stack", "overrides", "owner"),
    [
        # The provider, replaced exactly when the cluster's identity changes (and deleted on destroy): the engine
        # honours it inside a delete-first replacement, where a deletedWith on the VM or cluster is not
        # (test_engine_order.py).
        ("gke", (), "gke-k8s"),
        ("k3s", (), "k3s-provider"),
        ("k3s", EXISTING_HOST, "k3s-provider"),  # and on destroy k3s-uninstall.sh removes everything k3s ran
    ],
)
def test_everything_in_an_owned_cluster_is_deleted_with_the_cluster(
    plan_stack: Callable[..., Plan], stack: str, overrides: tuple[str, ...], owner: str
) -> None:
    plan = plan_stack(stack, *overrides)
    inside = in_cluster(plan)
    assert len(inside) > 10
    assert {r["name"]: r.get("options", {}).get("deletedWith") for r in inside} == {r["name"]: owner for r in inside}


def test_gke_node_pool_goes_with_its_cluster(plan_stack: Callable[..., Plan]) -> None:
    pool = plan_stack("gke").one("gcp:container/nodePool:NodePool", "gke-gpu-pool")
    assert pool["options"]["deletedWith"] == "gke-cluster"


def test_k3s_on_a_vm_runs_no_ssh_step_on_delete_but_an_existing_host_is_uninstalled(
    plan_stack: Callable[..., Plan],
) -> None:
    for step in plan_stack("k3s").find("command:remote:Command"):
        assert step["options"]["deletedWith"] == "k3s-vm-instance", step["name"]
    host = plan_stack("k3s", *EXISTING_HOST)
    uninstall = host.one("command:remote:Command", "k3s-uninstall")
    assert "k3s-uninstall.sh" in uninstall["inputs"]["delete"] and "deletedWith" not in uninstall.get("options", {})


def test_on_the_cluster_stack_every_release_is_uninstalled(plan_stack: Callable[..., Plan]) -> None:
    plan = plan_stack("cluster")
    assert plan.find("kubernetes:helm.sh/v3:Release")
    for resource in plan.resources:
        options = resource.get("options", {})
        assert "deletedWith" not in options and "retainOnDelete" not in options, resource["name"]


# --- the Kubernetes provider: its identity, and no silent state loss ------------------------------------------


@pytest.mark.parametrize(("stack", "overrides"), [("gke", ()), ("k3s", ()), ("k3s", EXISTING_HOST), ("cluster", ())])
def test_no_kubernetes_provider_drops_unreachable_resources_from_the_state(
    plan_stack: Callable[..., Plan], stack: str, overrides: tuple[str, ...]
) -> None:
    for provider in plan_stack(stack, *overrides).find(K8S_PROVIDER):
        assert "deleteUnreachable" not in provider["inputs"], provider["name"]


@pytest.mark.parametrize(
    ("stack", "overrides", "identity"),
    [
        ("gke", (), "gke:gke-cluster-id"),
        ("k3s", (), "k3s-vm:1234567890123456789"),
        ("k3s", EXISTING_HOST, "k3s-host:192.0.2.50"),
        # the server and CA of examples/kubeconfig.placeholder.yaml's context
        ("cluster", (), PLACEHOLDER_IDENTITY),
    ],
)
def test_kubernetes_provider_of_an_owned_cluster_names_its_identity(
    plan_stack: Callable[..., Plan], stack: str, overrides: tuple[str, ...], identity: str
) -> None:
    (provider,) = plan_stack(stack, *overrides).find(K8S_PROVIDER)
    assert provider["inputs"]["clusterIdentifier"] == identity


def _kubeconfig(server: str, ca: str, cluster: str = "kubernetes") -> str:
    return yaml.safe_dump(
        {
            "current-context": "admin@prod",
            "contexts": [{"name": "admin@prod", "context": {"cluster": cluster, "user": "admin"}}],
            "clusters": [{"name": cluster, "cluster": {"server": server, "certificate-authority-data": ca}}],
        }
    )


def test_a_rebuilt_cluster_of_the_same_kubeadm_name_is_a_new_identity_and_replaces_the_provider() -> None:
    from components.compose.kubeconfig import cluster_identity

    first = cluster_identity(_kubeconfig("https://10.0.0.1:6443", "Q0Ex"), None)
    # kubeadm names every cluster `kubernetes`; the rebuilt one at the same address has a new CA.
    assert cluster_identity(_kubeconfig("https://10.0.0.1:6443", "Q0Ey"), None) != first
    assert cluster_identity(_kubeconfig("https://10.0.0.2:6443", "Q0Ex"), None) != first
    # The same server and CA are the same cluster, whatever the kubeconfig calls it or how its CA is wrapped.
    assert cluster_identity(_kubeconfig("https://10.0.0.1:6443/", "Q0 Ex", cluster="prod"), "admin@prod") == first
    assert first.startswith("existing:") and len(first) == len("existing:") + 16


def _with_address(address: str) -> GpushareMocks:
    def override(args: Any, state: dict[str, Any]) -> dict[str, Any] | None:
        return {**state, "address": address} if args.typ == "gcp:compute/address:Address" else None

    return GpushareMocks(override=override)


def test_a_changed_vm_address_replaces_no_kubernetes_resource(fresh_plan: Callable[..., Plan]) -> None:
    before = fresh_plan("k3s", mocks=_with_address(VM_EXTERNAL_IP))
    after = fresh_plan("k3s", mocks=_with_address("198.51.100.99"))
    assert (before.outputs["externalIp"], after.outputs["externalIp"]) == (VM_EXTERNAL_IP, "198.51.100.99")
    # The kubeconfig's server follows the address (the TLS SAN and the config step show it) ...
    config = [p.one("command:remote:Command", "k3s-config")["inputs"]["create"] for p in (before, after)]
    assert VM_EXTERNAL_IP in config[0] and "198.51.100.99" in config[1]
    # ... yet the provider's identity is unchanged: DiffConfig then plans an update, never a replacement ...
    identity = [p.one(K8S_PROVIDER, "k3s-provider")["inputs"]["clusterIdentifier"] for p in (before, after)]
    assert identity[0] == identity[1] and identity[0]

    # ... and no Kubernetes object's inputs or options change, so none is replaced.
    def objects(plan: Plan) -> dict[str, Any]:
        return {
            r["name"]: (r["inputs"], r.get("options")) for r in plan.resources if r["type"].startswith("kubernetes:")
        }

    assert objects(before) == objects(after)


def _replaced_vm(instance_id: str) -> GpushareMocks:
    def override(args: Any, state: dict[str, Any]) -> dict[str, Any] | None:
        return {**state, "instanceId": instance_id} if args.typ == "gcp:compute/instance:Instance" else None

    return GpushareMocks(override=override)


def test_changing_vm_spot_replaces_the_vm_delete_first_then_every_step_and_every_object_in_order(
    fresh_plan: Callable[..., Plan],
) -> None:
    before = fresh_plan("k3s", ["gpushare:vm.spot=true"], mocks=_replaced_vm("1111111111111111111"))
    # A replaced VM is a new instance with a new id (what GCE gives the instance the engine creates).
    after = fresh_plan("k3s", ["gpushare:vm.spot=false"], mocks=_replaced_vm("2222222222222222222"))
    vm = [p.one("gcp:compute/instance:Instance", "k3s-vm-instance") for p in (before, after)]
    # provisioning_model is ForceNew (terraform-provider-google resource_compute_instance.go:1138): a replacement,
    # delete first, or the new VM cannot take the reserved address the old one holds (pulumi/pulumi#4128).
    assert [v["inputs"]["scheduling"]["provisioningModel"] for v in vm] == ["SPOT", "STANDARD"]
    assert vm[1]["options"]["deleteBeforeReplace"] is True
    assert after.one("gcp:compute/address:Address", "k3s-vm-address")["options"]["deleteBeforeReplace"] is True
    assert vm[1]["inputs"]["allowStoppingForUpdate"] is True

    steps = [f"k3s-{step}" for step in ("driver", "toolkit", "config", "k3s", "checks", "kubeconfig")]
    for name in steps:
        old, new = (p.one("command:remote:Command", name) for p in (before, after))
        # triggers are replaceOnChanges (pulumi-command provider/pkg/provider/common/inputs.go:10): each step reruns.
        assert new["options"]["replaceOnChanges"] == ["triggers[*]"], name
        assert (old["inputs"]["triggers"], new["inputs"]["triggers"]) == (
            ["k3s-vm:1111111111111111111"],
            ["k3s-vm:2222222222222222222"],
        ), name
    identity = [p.one(K8S_PROVIDER, "k3s-provider")["inputs"]["clusterIdentifier"] for p in (before, after)]
    # A new clusterIdentifier replaces the provider, and with it every object on it (provider.go, DiffConfig).
    assert identity == ["k3s-vm:1111111111111111111", "k3s-vm:2222222222222222222"]
    objects = [r for r in after.resources if r["type"].startswith("kubernetes:")]
    assert len(objects) > 10 and {r["options"]["provider"] for r in objects} == {"k3s-provider"}

    order = [r["name"] for r in after.resources]
    sequence = ["k3s-vm-address", "k3s-vm-instance", *steps, "k3s-provider"]
    assert [order.index(n) for n in sequence] == sorted(order.index(n) for n in sequence)
    assert all(order.index(r["name"]) > order.index("k3s-provider") for r in objects)


def test_the_vm_keeps_a_reserved_address_across_stops(plan_stack: Callable[..., Plan]) -> None:
    plan = plan_stack("k3s")
    address = plan.one("gcp:compute/address:Address", "k3s-vm-address")
    assert address["inputs"]["addressType"] == "EXTERNAL" and address["inputs"]["region"] == "us-central1"
    nic = plan.one("gcp:compute/instance:Instance", "k3s-vm-instance")["inputs"]["networkInterfaces"][0]
    assert nic["accessConfigs"] == [{"natIp": VM_EXTERNAL_IP}]
    assert "k3s-vm-address" in plan.one("gcp:compute/instance:Instance", "k3s-vm-instance")["dependsOn"]


# --- re-running the proof, and failures that end the update ---------------------------------------------------


@pytest.mark.parametrize("stack", ["gke", "k3s", "cluster"])
def test_proof_pods_and_verifier_are_replaced_delete_first_on_a_new_run_id(
    plan_stack: Callable[..., Plan], stack: str
) -> None:
    plan = plan_stack(stack, "gpushare:verify.runId=7")
    pods = plan.find("kubernetes:core/v1:Pod")
    assert len(pods) >= 3
    for pod in pods:
        assert pod["options"]["deleteBeforeReplace"] is True, pod["name"]
        assert pod["options"]["replacementTrigger"] == "7", pod["name"]
        assert "pulumi.com/skipAwait" not in pod["inputs"]["metadata"].get("annotations", {}), pod["name"]
        assert pod["inputs"]["spec"]["terminationGracePeriodSeconds"] <= 5, pod["name"]


INIT_ERROR_KEY = "#initerror"
"""The path the engine adds to a resource's diff when its state holds init errors (pulumi v3.259.0
pkg/resource/deploy/step_generator.go:3118): a replaceOnChanges path that contains it turns them into a replacement."""


def replaces_on_init_error(paths: list[str]) -> bool:
    """True when a path contains `#initerror` as the engine's PropertyPath.Contains reads it: `*` or the key itself."""
    return any(path.split(".")[0].split("[")[0] in ("*", INIT_ERROR_KEY) for path in paths)


def test_verifier_is_stopped_at_its_deadline_and_waited_on_again_after_a_timed_out_run(
    plan_stack: Callable[..., Plan],
) -> None:
    pod = plan_stack("k3s").one("kubernetes:core/v1:Pod", "gpushare-proof-verifier-pod")
    deadline = pod["inputs"]["spec"]["activeDeadlineSeconds"]
    timeouts = pod["options"]["customTimeouts"]
    assert 900 < deadline < int(timeouts["create"].removesuffix("s"))
    # The empty update that follows an init error re-awaits WAIT_ENDED as long as the create did.
    assert timeouts["update"] == timeouts["create"]


@pytest.mark.parametrize("stack", ["gke", "k3s", "cluster", "gke-mps"])
def test_a_refresh_that_flags_a_proof_pod_or_the_verifier_never_reruns_the_proof(
    plan_stack: Callable[..., Plan], stack: str
) -> None:
    # A refresh reads every Pod with the provider's readiness check, not its waitFor (pulumi-kubernetes v4.32.0
    # provider/pkg/await/await.go:406-418 → pod.go:184 awaitPodRead): the Pending over-commit Pod, an unready slice
    # and a Failed verifier come back with init errors (pulumi step.go:1599 keeps them, warning).
    plan = plan_stack(stack)
    for pod in plan.find("kubernetes:core/v1:Pod"):
        options, annotations = pod["options"], pod["inputs"]["metadata"]["annotations"]
        # So no Pod may replace on them: the next `up` then re-awaits the Pod in place (step_generator.go:2180) ...
        assert not replaces_on_init_error(options.get("replaceOnChanges", [])), pod["name"]
        # ... and that update waits on the Pod's waitFor, not on readiness (await.go:504-515, custom condition).
        assert annotations["pulumi.com/waitFor"].startswith("jsonpath="), pod["name"]
    verifier = plan.one("kubernetes:core/v1:Pod", "gpushare-proof-verifier-pod")
    # A verdict, failing or not, ends the verifier Succeeded, which a refresh reads as ready (check.go:92; the exit
    # code is pinned in test_verifier_client.py). Every input it runs with still replaces it: a new run judges.
    assert sorted(verifier["options"]["replaceOnChanges"]) == sorted(
        key for key in verifier["inputs"] if key not in ("apiVersion", "kind")
    )


# --- secrets out of the update's log ---------------------------------------------------------------------------


def _commands_with_output(
    fresh_plan: Callable[..., Plan], stack: str, overrides: tuple[str, ...]
) -> list[tuple[dict[str, Any], str]]:
    stdout: dict[str, str] = {}

    def record(args: Any, state: dict[str, Any]) -> None:
        if args.typ in COMMANDS:
            stdout[args.name] = state.get("stdout", "")

    plan = fresh_plan(stack, list(overrides), mocks=GpushareMocks(override=record))
    return [(r, stdout[r["name"]]) for r in plan.resources if r["type"] in COMMANDS]


@pytest.mark.parametrize(("stack", "overrides"), [("gke", ()), ("k3s", ()), ("k3s", EXISTING_HOST), ("cluster", ())])
def test_no_command_streams_a_secret_into_the_update_output(
    fresh_plan: Callable[..., Plan], stack: str, overrides: tuple[str, ...]
) -> None:
    for command, stdout in _commands_with_output(fresh_plan, stack, overrides):
        name, logging = command["name"], command["inputs"].get("logging")
        assert logging in ("stdout", "stderr", "stdoutAndStderr", "none"), f"{name} leaves logging to the default"
        if any(marker in stdout for marker in CREDENTIALS):
            assert logging in ("stderr", "none"), f"{name} prints a credential and streams its stdout"
            assert "stdout" in command["options"]["additionalSecretOutputs"], f"{name} stores its stdout in plain"
        assert not any(marker in json.dumps(command["inputs"]) for marker in CREDENTIALS), name


def test_the_kubeconfig_step_is_the_one_that_prints_a_credential(fresh_plan: Callable[..., Plan]) -> None:
    printing = [c["name"] for c, out in _commands_with_output(fresh_plan, "k3s", ()) if out == MOCK_KUBECONFIG]
    assert printing == ["k3s-kubeconfig"]


def test_bootstrap_checks_the_host_key_the_vm_published_and_no_private_key_is_in_metadata(
    fresh_plan: Callable[..., Plan],
) -> None:
    seen: dict[str, Any] = {}
    asked: list[dict[str, Any]] = []

    def record(args: Any, state: dict[str, Any]) -> None:
        if args.typ == "command:remote:Command":
            seen[args.name] = revealed(args.inputs["connection"]).get("hostKey")
        if args.typ == "gcp:compute/instance:Instance":
            seen["metadata"] = revealed(args.inputs["metadata"])

    class Recording(GpushareMocks):
        def call(self, args: Any) -> Any:
            asked.append(dict(args.args))
            return super().call(args)

    plan = fresh_plan("k3s", mocks=Recording(override=record))
    public = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIMockMockMockMockMockMockMockMockMockMock"
    assert {seen[f"k3s-{step}"] for step in ("driver", "toolkit", "config", "k3s", "checks", "kubeconfig")} == {public}
    # Read by the host-key step from the guest attribute the agent writes on first boot (guest-agent
    # instance_setup.go, generateSSHKeys), not by an invoke that every preview and `up` would make again.
    assert not [a for a in asked if "variableKey" in a]
    assert plan.one("command:local:Command", "k3s-vm-host-key")["inputs"]["create"].endswith("guest_attributes")
    assert "PRIVATE KEY" not in json.dumps(seen["metadata"])


def test_the_host_key_is_read_again_only_for_a_new_instance(fresh_plan: Callable[..., Plan]) -> None:
    from components.plan_view.engine import up

    def read_steps(before: GpushareMocks, after: GpushareMocks) -> list[str]:
        steps = up(fresh_plan("k3s", mocks=before).resources, fresh_plan("k3s", mocks=after).resources)
        return [s.op for s in steps if s.name == "k3s-vm-host-key"]

    # The same VM: the step is unchanged, so a preview or `up` reads its stored stdout and asks GCE nothing ...
    assert read_steps(_replaced_vm("1111111111111111111"), _replaced_vm("1111111111111111111")) == []
    # ... a new VM (a new instance id in the triggers): it runs once more, for the new key.
    assert read_steps(_replaced_vm("1111111111111111111"), _replaced_vm("2222222222222222222")) == [
        "create-replacement",
        "delete",
    ]


def test_an_existing_hosts_bootstrap_checks_the_host_key_it_was_given(fresh_plan: Callable[..., Plan]) -> None:
    scanned = "192.0.2.50 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEhvc3RIb3N0SG9zdEhvc3RIb3N0SG9zdEhvc3RIb3N0"
    seen: set[str | None] = set()

    def record(args: Any, state: dict[str, Any]) -> None:
        if args.typ == "command:remote:Command":
            seen.add(revealed(args.inputs["connection"]).get("hostKey"))

    fresh_plan("k3s", [*EXISTING_HOST, f"gpushare:host.hostKey={scanned}"], mocks=GpushareMocks(override=record))
    assert seen == {scanned.split(" ", 1)[1]}  # ssh-keyscan's leading host name dropped


def test_a_host_key_that_is_not_one_is_refused_naming_the_key() -> None:
    from components.config import ConfigError
    from components.plan import run

    with pytest.raises(ConfigError, match=r"gpushare:host\.hostKey.*ssh-keyscan"):
        run("k3s", [*EXISTING_HOST, "gpushare:host.hostKey=not-a-key"])


# --- GKE under a later `pulumi up` -----------------------------------------------------------------------------


def test_gke_master_version_is_resolved_once_and_the_pool_follows_auto_upgrade(plan_stack: Callable[..., Plan]) -> None:
    plan = plan_stack("gke")
    assert plan.one("gcp:container/cluster:Cluster", "gke-cluster")["options"]["ignoreChanges"] == ["minMasterVersion"]
    pool = plan.one("gcp:container/nodePool:NodePool", "gke-gpu-pool")
    assert "version" not in pool["inputs"] and pool["options"]["ignoreChanges"] == ["version"]


def test_fixed_name_gke_cluster_and_pool_are_replaced_delete_first(plan_stack: Callable[..., Plan]) -> None:
    plan = plan_stack("gke")
    # name is ForceNew on both (terraform-provider-google resource_container_cluster.go:293,
    # resource_container_node_pool.go:510): created first, the replacement would meet 409 already exists.
    for type_, name, fixed in (
        ("gcp:container/cluster:Cluster", "gke-cluster", "kai-hami-test"),
        ("gcp:container/nodePool:NodePool", "gke-gpu-pool", "gpu-pool"),
    ):
        resource = plan.one(type_, name)
        assert resource["inputs"]["name"] == fixed and resource["options"]["deleteBeforeReplace"] is True


def test_a_zone_that_stopped_offering_the_version_prefix_does_not_fail_the_update(
    plan_stack: Callable[..., Plan], monkeypatch: pytest.MonkeyPatch
) -> None:
    warnings: list[str] = []
    monkeypatch.setattr(pulumi.log, "warn", lambda message, *a, **k: warnings.append(message))
    cluster = plan_stack("gke", "gpushare:gke.kubernetesVersion=1.33.").one("gcp:container/cluster:Cluster")
    # GKE's alias picks the newest 1.33 at creation; an existing cluster ignores it (ignoreChanges).
    assert cluster["inputs"]["minMasterVersion"] == "1.33"
    assert cluster["options"]["ignoreChanges"] == ["minMasterVersion"]
    assert any("gpushare:gke.kubernetesVersion" in w and "1.33" in w for w in warnings)


def test_pulumi_yaml_requires_a_cli_that_enforces_the_floor_and_acts_on_replacement_trigger() -> None:
    from components.plan import ROOT

    project = yaml.safe_load((ROOT / "Pulumi.yaml").read_text())
    # pulumi/pulumi sdk/go/common/workspace/project.go:369 (since v3.219.0, #21627); replacementTrigger needs
    # v3.208.0; a CLI older than v3.219.0 ignores the key (project.json allows unknown keys).
    assert project["requiredPulumiVersion"] == ">=3.219.0"


def test_a_real_preview_shows_the_verdict_as_unknown_and_the_offline_plan_shows_it_planned(
    fresh_plan: Callable[..., Plan], monkeypatch: pytest.MonkeyPatch
) -> None:
    from components.verify import collect

    offline = fresh_plan("k3s")
    assert offline.outputs["verification"]["passed"] is None and offline.outputs["verification"]["checks"]
    monkeypatch.setattr(collect, "offline_plan", lambda: False)  # what a `pulumi preview` on the engine sees
    real = fresh_plan("k3s")
    assert (real.outputs["verification"], real.outputs["report"], real.outputs["gpuAudit"]) == ("[unknown]",) * 3


def test_up_refuses_a_documentation_address_that_a_preview_shows_marked(monkeypatch: pytest.MonkeyPatch) -> None:
    from components.plan import run

    warnings: list[str] = []
    monkeypatch.setattr(pulumi.log, "warn", lambda message, *a, **k: warnings.append(message))
    run("k3s", ["gpushare:vm.allowedSourceRanges=[198.51.100.7/32]"])  # the shipped placeholder: previewed
    assert any(
        w.startswith("gpushare:vm.allowedSourceRanges: 198.51.100.7/32") and "`pulumi up` refuses" in w
        for w in warnings
    )
    for overrides, key in (
        (["gpushare:vm.allowedSourceRanges=[203.0.113.0/28]"], "gpushare:vm.allowedSourceRanges"),
        ([*EXISTING_HOST], "gpushare:host.address"),
    ):
        with pytest.raises(Exception, match=rf"{key}.*documentation address.*ifconfig\.me"):
            run("k3s", overrides, preview=False)


def test_a_real_address_is_not_taken_for_a_documentation_one() -> None:
    from components.validate import documentation_only

    assert documentation_only(["34.1.2.3/32", "198.51.101.0/24", "192.0.2.0/23", "2001:db8::1"]) == ["2001:db8::1"]
    assert documentation_only(["192.0.2.50", "203.0.113.7/32"]) == ["192.0.2.50", "203.0.113.7/32"]


# --- small ones ------------------------------------------------------------------------------------------------


def test_isolator_chart_comes_from_docker_hubs_registry_host(plan_stack: Callable[..., Plan]) -> None:
    chart = plan_stack("gke").one("kubernetes:helm.sh/v3:Release", "isolator-release")["inputs"]["chart"]
    assert chart == "oci://registry-1.docker.io/projecthami/kai-resource-isolator"


def test_reading_the_verifiers_typed_status_logs_no_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    from pulumi_kubernetes.core.v1 import outputs

    from components.verify.collect import termination_message

    warnings: list[str] = []
    monkeypatch.setattr(pulumi.log, "warn", lambda message, *a, **k: warnings.append(message))
    terminated = outputs.ContainerStateTerminated(exit_code=0, message='{"passed": true}')
    status = outputs.PodStatus(
        container_statuses=[
            outputs.ContainerStatus(
                image="python",
                image_id="python@sha256:0",
                name="verifier",
                ready=False,
                restart_count=0,
                state=outputs.ContainerState(terminated=terminated),
            )
        ]
    )
    assert termination_message(status) == '{"passed": true}'
    assert warnings == []
