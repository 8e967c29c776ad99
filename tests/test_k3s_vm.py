"""The `k3s` stack's platform under mocks: the GPU VM, its firewall and key, the bootstrap order, the host variant."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from components.config import ConfigError
from components.mocks import VM_EXTERNAL_IP, GpushareMocks
from components.platform import k3s_bootstrap as kb
from components.platform.k3s_vm import boot_disk_type, network_tag

INSTANCE = "gcp:compute/instance:Instance"
FIREWALL = "gcp:compute/firewall:Firewall"
KEY = "tls:index/privateKey:PrivateKey"
COMMAND = "command:remote:Command"
PROVIDER = "pulumi:providers:kubernetes"
EXISTING_HOST = (
    "gpushare:platform=existing-host",
    "gpushare:vm=null",
    "gpushare:host.address=192.0.2.50",
    "gpushare:host.user=admin",
    "gpushare:host.privateKey=-----BEGIN OPENSSH PRIVATE KEY-----",
)
N1_T4 = (
    "gpushare:vm.machineType=n1-standard-8",
    "gpushare:gpu.type=nvidia-tesla-t4",
    "gpushare:verify.sliceMiB=null",
)
_SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270"


def _unsecret(value: Any) -> Any:
    if isinstance(value, dict) and value.get("4dabf18193072939515e22adb298388d") == _SECRET_SIG:
        return value["value"]
    return value


def _step(plan: Any, step: str) -> dict[str, Any]:
    return plan.one(COMMAND, f"k3s-{step}")


def test_k3s_firewall_admits_only_ssh_and_the_api(plan_stack):
    firewall = plan_stack("k3s").one(FIREWALL)["inputs"]
    assert firewall["direction"] == "INGRESS"
    assert firewall["allows"] == [{"protocol": "tcp", "ports": ["22", "6443"]}]


def test_k3s_firewall_is_never_world_open_by_default(plan_stack):
    firewall = plan_stack("k3s").one(FIREWALL)["inputs"]
    assert firewall["sourceRanges"] == ["198.51.100.7/32"]
    with pytest.raises(ConfigError, match="allowWorldOpen"):
        plan_stack("k3s", "gpushare:vm.allowedSourceRanges=[0.0.0.0/0]")


def test_k3s_firewall_world_open_only_when_opted_in(plan_stack):
    plan = plan_stack("k3s", "gpushare:vm.allowedSourceRanges=[0.0.0.0/0]", "gpushare:vm.allowWorldOpen=true")
    assert plan.one(FIREWALL)["inputs"]["sourceRanges"] == ["0.0.0.0/0"]


def test_k3s_firewall_targets_the_vm_network_tag(plan_stack):
    plan = plan_stack("k3s")
    tags = plan.one(FIREWALL)["inputs"]["targetTags"]
    assert tags == plan.one(INSTANCE)["inputs"]["tags"] == [network_tag("gpushare", "k3s")]


def test_k3s_network_tag_is_a_valid_gce_tag():
    assert network_tag("gpushare", "k3s") == "gpushare-k3s"
    assert network_tag("My_Project", "Dev.Stack") == "my-project-dev-stack"
    assert network_tag("9lives", "k3s").startswith("g-")
    assert len(network_tag("p" * 40, "s" * 40)) <= 63


def test_k3s_ssh_key_is_ed25519_and_secret(plan_stack):
    plan = plan_stack("k3s")
    key = plan.one(KEY, "k3s-vm-ssh-key")
    assert key["inputs"]["algorithm"] == "ED25519"
    assert "privateKeyOpenssh" in key["options"]["additionalSecretOutputs"]
    # The sshd host key is born on the VM: no private half of it is generated here or sent in metadata.
    assert [k["name"] for k in plan.find(KEY)] == ["k3s-vm-ssh-key"]
    assert plan.outputs["sshPrivateKey"] == "[secret]"


def test_k3s_instance_metadata_carries_no_private_key_a_pod_could_read(plan_stack):
    metadata = plan_stack("k3s").one(INSTANCE)["inputs"]["metadata"]
    assert metadata["ssh-keys"].startswith("ubuntu:ssh-ed25519 ")
    assert metadata["enable-oslogin"] == "FALSE"
    # guest-agent instance_setup.go publishes host keys only through guest attributes, which must be on.
    assert metadata["enable-guest-attributes"] == "TRUE"
    assert "PRIVATE KEY" not in json.dumps(metadata)
    assert yaml.safe_load(metadata["user-data"]) == {"ssh_deletekeys": False, "ssh_genkeytypes": []}


def test_cloud_init_leaves_the_host_keys_to_the_guest_agent() -> None:
    from components.platform.k3s_vm import keys_left_to_the_agent_cloud_config

    text = keys_left_to_the_agent_cloud_config()
    assert text.startswith("#cloud-config\n")
    # cloud-init neither deletes nor generates: the guest agent (Before=ssh.service) is the only writer.
    assert yaml.safe_load(text) == {"ssh_deletekeys": False, "ssh_genkeytypes": []}


class Answers:
    """The compute API's answers to getGuestAttributes, one per try, and the URLs asked."""

    def __init__(self, *answers: tuple[int, dict[str, Any]]):
        self.answers, self.asked = list(answers), []

    def __call__(self, url: str, token: str) -> tuple[int, bytes]:
        self.asked.append(url)
        status, body = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        return status, json.dumps(body).encode()


BODY = "AAAAC3NzaC1lZDI1NTE5AAAAIEhvc3RIb3N0SG9zdEhvc3RIb3N0SG9zdEhvc3RIb3N0"
VM_URL = "https://www.googleapis.com/compute/v1/projects/p/zones/us-central1-b/instances/vm"
NOT_FOUND = (404, {"error": {"message": "The resource 'guestAttributes' was not found"}})


def test_the_host_key_is_read_once_the_agent_publishes_it_and_404_is_waited_out() -> None:
    from components.platform import guest_attributes as ga

    fetch = Answers(NOT_FOUND, (503, {}), (200, {"variableValue": BODY}))
    assert ga.read(fetch, VM_URL, "t", tries=5, interval_s=0) == f"ssh-ed25519 {BODY}"
    assert fetch.asked == [f"{VM_URL}/getGuestAttributes?variableKey=hostkeys%2Fssh-ed25519"] * 3


def test_credentials_without_the_permission_fail_at_once_naming_it() -> None:
    from components.platform import guest_attributes as ga

    fetch = Answers((403, {"error": {"message": "Required 'compute.instances.getGuestAttributes' permission"}}))
    with pytest.raises(ga.Refused, match=r"^403: the credentials lack compute\.instances\.getGuestAttributes"):
        ga.read(fetch, VM_URL, "t", tries=60, interval_s=0)
    assert len(fetch.asked) == 1  # no retry: waiting does not grant a permission
    for status in (400, 401):
        with pytest.raises(ga.Refused):
            ga.read(Answers((status, {})), VM_URL, "t", tries=60, interval_s=0)


def test_a_vm_that_never_publishes_its_host_key_fails_with_the_command_to_check() -> None:
    from components.platform import guest_attributes as ga

    with pytest.raises(
        ga.Refused,
        match=r"hostkeys/ssh-ed25519 after 10s \(last: published nothing yet\).*"
        r"gcloud compute instances get-guest-attributes",
    ):
        ga.read(Answers((200, {"variableValue": ""})), VM_URL, "t", tries=2, interval_s=5, sleep=lambda _: None)


def test_the_read_takes_the_environments_token_or_gcloud_application_default_credentials() -> None:
    from components.platform import guest_attributes as ga

    assert ga.access_token({"GOOGLE_OAUTH_ACCESS_TOKEN": "env"}, lambda argv: "adc") == "env"
    assert ga.access_token({}, lambda argv: "adc\n") == "adc"

    def no_gcloud(argv: list[str]) -> str:
        raise FileNotFoundError(argv[0])

    with pytest.raises(ga.Refused, match="gcloud auth application-default login"):
        ga.access_token({}, no_gcloud)


def test_the_host_key_step_runs_the_read_once_per_instance(plan_stack):
    plan = plan_stack("k3s")
    step = plan.one("command:local:Command", "k3s-vm-host-key")
    assert step["inputs"]["create"] == "python3 -m components.platform.guest_attributes"
    assert step["inputs"]["triggers"] == ["1234567890123456789"]  # the instance id: replaced only with the VM
    # The instance's selfLink, so the read needs no project or zone of its own.
    assert step["inputs"]["environment"]["GPUSHARE_INSTANCE_URL"].startswith(
        "https://www.googleapis.com/compute/v1/projects/mock-project/zones/us-central1-b/instances/"
    )


def test_k3s_instance_is_a_spot_g4_with_ubuntu_2204(plan_stack):
    inputs = plan_stack("k3s").one(INSTANCE)["inputs"]
    assert inputs["machineType"] == "g4-standard-48"
    assert inputs["scheduling"] == {
        "provisioningModel": "SPOT",
        "preemptible": True,
        "automaticRestart": False,
        "instanceTerminationAction": "STOP",
        "onHostMaintenance": "TERMINATE",
    }
    disk = inputs["bootDisk"]["initializeParams"]
    assert disk["image"] == "ubuntu-os-cloud/ubuntu-2204-lts"
    assert disk["size"] >= 200
    assert disk["type"] == "hyperdisk-balanced"


def test_k3s_g4_carries_its_gpu_so_no_guest_accelerator(plan_stack):
    assert "guestAccelerators" not in plan_stack("k3s").one(INSTANCE)["inputs"]


def test_k3s_n1_gets_the_gpu_attached(plan_stack):
    inputs = plan_stack("k3s", *N1_T4).one(INSTANCE)["inputs"]
    assert inputs["guestAccelerators"] == [{"type": "nvidia-tesla-t4", "count": 1}]
    assert inputs["bootDisk"]["initializeParams"]["type"] == "pd-balanced"


def test_k3s_on_demand_still_terminates_on_host_maintenance(plan_stack):
    scheduling = plan_stack("k3s", "gpushare:vm.spot=false").one(INSTANCE)["inputs"]["scheduling"]
    assert scheduling["provisioningModel"] == "STANDARD"
    assert scheduling["onHostMaintenance"] == "TERMINATE"
    assert "preemptible" not in scheduling or scheduling["preemptible"] is False


def test_k3s_boot_disk_type_follows_the_machine_series():
    assert boot_disk_type("g4-standard-48") == "hyperdisk-balanced"
    assert boot_disk_type("g2-standard-8") == "pd-balanced"


def test_k3s_cost_note_says_spot_and_the_price_it_is_given(plan_stack):
    assert "$2.50/hour" in plan_stack("k3s", "gpushare:vm.machineHourlyUsd=2.5").outputs["costNote"]
    assert "Spot" in plan_stack("k3s").outputs["costNote"]
    on_demand = plan_stack("k3s", "gpushare:vm.spot=false", "gpushare:vm.machineHourlyUsd=3.5").outputs["costNote"]
    assert "Spot" not in on_demand and "on-demand" in on_demand


def test_k3s_bootstrap_steps_run_in_order(plan_stack):
    plan = plan_stack("k3s")
    for before, after in zip(kb.STEPS, kb.STEPS[1:], strict=False):
        assert f"k3s-{before}" in _step(plan, after)["dependsOn"], f"{after} must wait for {before}"
    names = [r["name"] for r in plan.resources if r["type"] == COMMAND]
    assert names == [f"k3s-{s}" for s in kb.STEPS]


def test_k3s_first_ssh_waits_for_the_vm_and_its_firewall(plan_stack):
    depends = _step(plan_stack("k3s"), "driver")["dependsOn"]
    assert {"k3s-vm-instance", "k3s-vm-firewall"} <= set(depends)


def test_k3s_config_step_carries_the_external_ip_as_tls_san(plan_stack):
    create = _step(plan_stack("k3s"), "config")["inputs"]["create"]
    assert f'tls-san: ["{VM_EXTERNAL_IP}"]' in create
    assert "default-runtime: nvidia\n" in create


def test_k3s_kubeconfig_stays_secret(plan_stack):
    plan = plan_stack("k3s")
    read = _step(plan, "kubeconfig")
    assert "stdout" in read["options"]["additionalSecretOutputs"]
    assert plan.outputs["kubeconfig"] == "[secret]"
    assert plan.one(PROVIDER, "k3s-provider")["inputs"]["kubeconfig"] == "[secret]"


def test_k3s_provider_kubeconfig_points_at_the_external_ip(fresh_plan):
    seen: dict[str, Any] = {}

    def capture(args: Any, state: dict[str, Any]) -> None:
        if args.typ == PROVIDER:
            seen["kubeconfig"] = _unsecret(args.inputs["kubeconfig"])

    fresh_plan("k3s", [], preview=True, mocks=GpushareMocks(override=capture))
    servers = [c["cluster"]["server"] for c in yaml.safe_load(seen["kubeconfig"])["clusters"]]
    assert servers == [f"https://{VM_EXTERNAL_IP}:6443"]


def test_k3s_vm_teardown_is_deleting_the_vm_not_uninstalling(plan_stack):
    assert "delete" not in _step(plan_stack("k3s"), "k3s")["inputs"]


def test_k3s_outputs_name_ip_ssh_and_cost(plan_stack):
    outputs = plan_stack("k3s").outputs
    assert outputs["externalIp"] == VM_EXTERNAL_IP
    assert outputs["sshCommand"].endswith(f"ssh -i k3s-key ubuntu@{VM_EXTERNAL_IP}")
    assert "Spot" in outputs["costNote"]


def test_k3s_existing_host_plans_without_a_vm(plan_stack):
    plan = plan_stack("k3s", *EXISTING_HOST)
    assert not [r for r in plan.resources if r["type"].startswith(("gcp:", "tls:"))]
    assert not plan.find("gpushare:platform:GpuVm")
    commands = [r["name"] for r in plan.resources if r["type"] == COMMAND]
    assert sorted(commands) == sorted([*(f"k3s-{s}" for s in kb.STEPS), "k3s-uninstall"])


def test_k3s_existing_host_destroy_runs_k3s_uninstall_from_a_command_no_up_replaces(plan_stack):
    plan = plan_stack("k3s", *EXISTING_HOST)
    assert "/usr/local/bin/k3s-uninstall.sh" in _step(plan, "uninstall")["inputs"]["delete"]
    assert not [s for s in kb.STEPS if "delete" in _step(plan, s)["inputs"]]


def test_k3s_existing_host_is_reached_with_its_address_user_and_key(fresh_plan):
    seen: list[dict[str, Any]] = []

    def capture(args: Any, state: dict[str, Any]) -> None:
        if args.typ == COMMAND:
            seen.append(_unsecret(args.inputs["connection"]))

    fresh_plan("k3s", list(EXISTING_HOST), preview=True, mocks=GpushareMocks(override=capture))
    assert {(c["host"], c["user"], c["privateKey"]) for c in seen} == {
        ("192.0.2.50", "admin", "-----BEGIN OPENSSH PRIVATE KEY-----")
    }


def test_k3s_existing_host_outputs(plan_stack):
    outputs = plan_stack("k3s", *EXISTING_HOST).outputs
    assert outputs["externalIp"] == "192.0.2.50"
    assert outputs["sshCommand"] == "ssh -p 22 admin@192.0.2.50"
    assert outputs["kubeconfig"] == "[secret]"
    assert "sshPrivateKey" not in outputs


def test_k3s_existing_host_requires_the_host_section(plan_stack):
    with pytest.raises(ConfigError, match="gpushare:host"):
        plan_stack("k3s", "gpushare:platform=existing-host", "gpushare:vm=null")


def test_static_address_is_reserved_in_the_vms_region() -> None:
    from components.platform.k3s_vm import region_of

    assert region_of("us-central1-b") == "us-central1"
    assert region_of("asia-northeast1-a") == "asia-northeast1"
