"""Pulumi's mock engine with realistic provider answers, and a monitor that records the whole graph.

Strict: an invoke these mocks do not know raises, since an unmocked invoke would silently return nothing
and let a broken program plan.
"""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pulumi
from google.protobuf import json_format
from pulumi.runtime import MockCallArgs, MockResourceArgs

from components.pulumi_internals import RESOURCE_SIG, SECRET_SIG, SIG_KEY, UNKNOWN, MockMonitor

AFTER_CREATE = "known after create"
"""A provider output: a real preview shows it as unknown until the resource exists."""
LOOKED_UP = "looked up in the cloud"
"""An invoke's answer: a real preview asks the cloud; offline it is made up."""
READ_AT_UP = "read from the cluster at up"
"""What a read of a live object returns (a Node's annotations): known only once `pulumi up` reached it."""


@dataclass(frozen=True)
class MockAnswers:
    """Every value these mocks make up, in one place; tests plan under a second set to find any that leaks."""

    gke_versions: tuple[str, ...] = (
        "1.36.1-gke.1100000",
        "1.35.6-gke.1250000",
        "1.35.5-gke.1080000",
        "1.34.9-gke.1400000",
    )
    gke_default_version: str = "1.35.6-gke.1250000"
    gke_endpoint: str = "203.0.113.10"
    ca_pem: str = "-----BEGIN CERTIFICATE-----\nmock\n-----END CERTIFICATE-----\n"
    project: str = "mock-project"
    vm_external_ip: str = "203.0.113.20"
    vm_internal_ip: str = "10.128.0.2"
    vm_instance_id: str = "1234567890123456789"
    ssh_public_key: str = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIMockMockMockMockMockMockMockMockMockMock"
    ssh_private_key_body: str = "mock-private-key"
    ssh_fingerprint: str = "SHA256:mock"
    k3s_local_server: str = "https://127.0.0.1:6443"
    kubeconfig_token: str = "mock-token"
    gpu_uuid_0: str = "GPU-0b5e0c6a-1d7f-4c2e-9a61-5f3b2d8e7c10"
    """Card 0 of a two-card node, as HAMi's register annotation names it."""
    gpu_uuid_1: str = "GPU-8d2f41c7-6a3b-4e95-b0d8-27c91e4f6a51"
    id_suffix: str = "-id"

    @property
    def ca_b64(self) -> str:
        return base64.b64encode(self.ca_pem.encode()).decode()

    def kubeconfig(self) -> str:
        """The kubeconfig k3s writes on its host, as `cat /etc/rancher/k3s/k3s.yaml` prints it."""
        return (
            "apiVersion: v1\nkind: Config\nclusters:\n- name: default\n"
            f'  cluster: {{server: "{self.k3s_local_server}", certificate-authority-data: {self.ca_b64}}}\n'
            "contexts:\n- name: default\n  context: {cluster: default, user: default}\n"
            "current-context: default\nusers:\n- name: default\n"
            f"  user: {{token: {self.kubeconfig_token}}}\n"
        )


ANSWERS = MockAnswers()
ALTERNATE_ANSWERS = MockAnswers(
    gke_versions=("1.36.2-gke.1200000", "1.35.7-gke.1310000", "1.35.4-gke.1030000", "1.34.8-gke.1300000"),
    gke_default_version="1.35.7-gke.1310000",
    gke_endpoint="198.51.100.110",
    ca_pem="-----BEGIN CERTIFICATE-----\nalternate\n-----END CERTIFICATE-----\n",
    project="alternate-project",
    vm_external_ip="198.51.100.120",
    vm_internal_ip="10.138.0.9",
    vm_instance_id="9876543210987654321",
    ssh_public_key="ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAltAltAltAltAltAltAltAltAltAltAltAltAlt",
    ssh_private_key_body="alternate-private-key",
    ssh_fingerprint="SHA256:alternate",
    k3s_local_server="https://127.0.0.9:6443",
    kubeconfig_token="alternate-token",
    gpu_uuid_0="GPU-f4a7b2c9-3e1d-4b68-8c05-9d6e1a2b3c40",
    gpu_uuid_1="GPU-5c9e3d1a-7b2f-4a06-9e48-1f0d6c8b2a93",
    id_suffix="-alt-id",
)
"""Made-up values that differ from ANSWERS in every field, as valid for the program as ANSWERS are."""

VM_EXTERNAL_IP = ANSWERS.vm_external_ip
MOCK_KUBECONFIG = ANSWERS.kubeconfig()


@dataclass
class Invented:
    """The registry of values the mocks handed out in one run: any plan value containing one is made up."""

    contained: dict[str, str] = field(default_factory=dict)
    """Distinctive values: a string that contains one is unknown for the reason given."""
    exact: dict[str, str] = field(default_factory=dict)
    """Short, common values (Helm's `deployed`): unknown only where a value is exactly one."""

    def add(self, value: str, when: str = AFTER_CREATE) -> str:
        if value and self.contained.get(value) != AFTER_CREATE:
            self.contained[value] = when
        return value

    def add_exact(self, value: str, when: str = AFTER_CREATE) -> str:
        self.exact.setdefault(value, when)
        return value


StateOverride = Callable[[MockResourceArgs, dict[str, Any]], dict[str, Any] | None]


def _gke_versions(args: dict[str, Any], answers: MockAnswers, invented: Invented) -> dict[str, Any]:
    prefix = args.get("versionPrefix", "")
    versions = [invented.add(v, LOOKED_UP) for v in answers.gke_versions if v.startswith(prefix)]
    default = invented.add(answers.gke_default_version, LOOKED_UP)
    return {
        "location": args.get("location"),
        "project": args.get("project") or invented.add(answers.project, LOOKED_UP),
        "versionPrefix": prefix,
        "validMasterVersions": versions,
        "validNodeVersions": versions,
        "latestMasterVersion": versions[0] if versions else "",
        "latestNodeVersion": versions[0] if versions else "",
        "defaultClusterVersion": default,
        "releaseChannelDefaultVersion": {"REGULAR": default},
        "releaseChannelLatestVersion": {"REGULAR": default},
        "releaseChannelUpgradeTargetVersion": {},
        "id": invented.add(f"{answers.project}-engine-versions", LOOKED_UP),
    }


Invoke = Callable[[dict[str, Any], MockAnswers, Invented], dict[str, Any]]
INVOKES: dict[str, Invoke] = {
    "gcp:container/getEngineVersions:getEngineVersions": _gke_versions,
}


def _two_card_register(answers: MockAnswers, invented: Invented) -> dict[str, str]:
    """A two-card node as HAMi's device plugin registers it: JSON in map order (card 1 first here), `index` left
    out for card 0 (omitempty; HAMi v2.9.0 pkg/device/devices.go:102 and :331 MarshalNodeDevices)."""
    card = {
        "count": 10,
        "devmem": 15360,
        "devcore": 100,
        "type": "NVIDIA-Tesla T4",
        "health": True,
        "mode": "hami-core",
    }
    cards = [
        {"id": invented.add(answers.gpu_uuid_1, READ_AT_UP), "index": 1, **card},
        {"id": invented.add(answers.gpu_uuid_0, READ_AT_UP), **card},
    ]
    return {
        "hami.io/node-nvidia-register": json.dumps(cards, separators=(",", ":")),
        "hami.io/node-handshake": "Reported 2026-12-02 10:00:00.000000000 +0000 UTC m=+31.5",
    }


def _outputs_for(args: MockResourceArgs, answers: MockAnswers, invented: Invented) -> dict[str, Any]:
    """What the provider would add to the inputs once the resource exists; every made-up value is registered."""
    inputs = args.inputs
    made_up = invented.add
    match args.typ:
        case "gcp:container/cluster:Cluster":
            # A new cluster runs the version it was asked for; only an unpinned one gets GKE's default.
            version = inputs.get("minMasterVersion") or made_up(answers.gke_default_version)
            project = made_up(answers.project)
            return {
                "masterVersion": version,
                "endpoint": made_up(answers.gke_endpoint),
                "masterAuth": {"clusterCaCertificate": made_up(answers.ca_b64)},
                "selfLink": made_up(f"https://container.googleapis.com/v1/projects/{project}/clusters/{args.name}"),
            }
        case "gcp:compute/address:Address":
            return {
                "address": made_up(answers.vm_external_ip),
                "selfLink": made_up(f"https://compute.googleapis.com/{answers.project}/addresses/{args.name}"),
            }
        case "gcp:container/nodePool:NodePool":
            return {"instanceGroupUrls": [made_up(f"https://compute.googleapis.com/{answers.project}/{args.name}-grp")]}
        case "gcp:compute/instance:Instance":
            nics = inputs.get("networkInterfaces") or [{}]
            nic = dict(nics[0])
            nic["networkIp"] = made_up(answers.vm_internal_ip)
            access = (nic.get("accessConfigs") or [{}])[0]
            # A reserved address given as natIp is the VM's; without one GCE picks an ephemeral address.
            nic["accessConfigs"] = [{**access, "natIp": access.get("natIp") or made_up(answers.vm_external_ip)}]
            name = inputs.get("name") or made_up(f"{args.name}-{answers.vm_instance_id[:7]}")
            zone = inputs.get("zone", "")
            return {
                "networkInterfaces": [nic, *nics[1:]],
                "instanceId": made_up(answers.vm_instance_id),
                "name": name,
                "selfLink": made_up(
                    f"https://www.googleapis.com/compute/v1/projects/{answers.project}/zones/{zone}/instances/{name}"
                ),
            }
        case "tls:index/privateKey:PrivateKey":
            body = made_up(answers.ssh_private_key_body)
            return {
                "publicKeyOpenssh": made_up(answers.ssh_public_key) + "\n",
                "privateKeyOpenssh": (
                    f"-----BEGIN OPENSSH PRIVATE KEY-----\n{body}\n-----END OPENSSH PRIVATE KEY-----\n"
                ),
                "privateKeyPem": f"-----BEGIN PRIVATE KEY-----\n{body}\n-----END PRIVATE KEY-----\n",
                "publicKeyFingerprintSha256": made_up(answers.ssh_fingerprint),
            }
        case "command:remote:Command" | "command:local:Command":
            create = inputs.get("create") or ""
            if "k3s.yaml" in create and "cat" in create:
                for value in (answers.k3s_local_server, answers.ca_b64, answers.kubeconfig_token):
                    made_up(value)
                return {"stdout": answers.kubeconfig(), "stderr": ""}
            if "guest_attributes" in create:  # the host key the guest agent published, as the read prints it
                return {"stdout": made_up(answers.ssh_public_key) + "\n", "stderr": ""}
            return {"stdout": "", "stderr": ""}
        case "kubernetes:core/v1:Node" if args.resource_id:
            return {"metadata": {"name": args.resource_id, "annotations": _two_card_register(answers, invented)}}
        case "kubernetes:helm.sh/v3:Release":
            # The rest of Helm's status copies the inputs; only its state and revision are made up.
            return {
                "status": {
                    "name": inputs.get("name", args.name),
                    "namespace": inputs.get("namespace", "default"),
                    "version": inputs.get("version", ""),
                    "status": invented.add_exact("deployed"),
                    "revision": 1,
                }
            }
    return {}


@dataclass
class GpushareMocks(pulumi.runtime.Mocks):
    """Provider answers realistic enough for the program's apply() chains."""

    override: StateOverride | None = None
    """Tests may replace or extend a resource's state (a verifier Pod's status, say)."""
    answers: MockAnswers = ANSWERS
    """The made-up values; ALTERNATE_ANSWERS plans the same program in a different made-up world."""
    invented: Invented = field(default_factory=Invented)
    """What this run handed out, for the plan to show as unknown."""

    def new_resource(self, args: MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        state = {**args.inputs, **_outputs_for(args, self.answers, self.invented)}
        if self.override is not None:
            state = self.override(args, state) or state
        if args.resource_id:  # a read (`Resource.get`) keeps the ID it names
            return args.resource_id, state
        return self.invented.add(f"{args.name}{self.answers.id_suffix}"), state

    def call(self, args: MockCallArgs) -> tuple[dict[str, Any], list[tuple[str, str]] | None]:
        try:
            answer = INVOKES[args.token]
        except KeyError:
            raise NotImplementedError(f"unmocked invoke {args.token}: add it to components/mocks.INVOKES") from None
        # The mock monitor iterates the failures; None breaks every invoke.
        return answer(args.args, self.answers, self.invented), []


@dataclass
class Registration:
    """One resource as the engine saw it."""

    urn: str
    type: str
    name: str
    parent: str
    custom: bool
    dependencies: list[str]
    inputs: dict[str, Any]
    options: dict[str, Any]
    provider: str | None = None
    """URN of the explicit provider: the engine creates it first, though it is no dependency."""


def _plain(value: Any) -> Any:
    """Protobuf-decoded inputs with Pulumi's sentinels made readable: secrets, unknowns, resource refs."""
    if isinstance(value, dict):
        sig = value.get(SIG_KEY)
        if sig == SECRET_SIG:
            return "[secret]"
        if sig == RESOURCE_SIG:
            return f"[resource {value.get('urn', '').rsplit('::', 1)[-1]}]"
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if value == UNKNOWN:
        return "[unknown]"
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _plain_struct(struct: Any) -> dict[str, Any]:
    """A protobuf Struct as `_plain(json_format.MessageToDict(struct))` reads it, in one walk over the message."""
    fields = struct.fields
    if SIG_KEY in fields:  # `in`: indexing a message map adds the key
        sig = fields[SIG_KEY].string_value
        if sig == SECRET_SIG:
            return "[secret]"  # type: ignore[return-value]
        if sig == RESOURCE_SIG:
            urn = fields["urn"].string_value if "urn" in fields else ""
            return f"[resource {urn.rsplit('::', 1)[-1]}]"  # type: ignore[return-value]
    return {key: _plain_value(fields[key]) for key in fields}


def _plain_value(value: Any) -> Any:
    kind = value.WhichOneof("kind")
    if kind == "string_value":
        text = value.string_value
        return "[unknown]" if text == UNKNOWN else text
    if kind == "struct_value":
        return _plain_struct(value.struct_value)
    if kind == "list_value":
        return [_plain_value(v) for v in value.list_value.values]
    if kind == "number_value":
        number = value.number_value
        if not math.isfinite(number):  # json_format refuses these: keep its error
            return _plain(json_format.MessageToDict(value))
        return int(number) if number.is_integer() else number
    if kind == "bool_value":
        return value.bool_value
    return None  # null_value, or no kind: JSON null (json_format.py _ValueMessageToJsonObject)


INHERITED_OPTIONS = ("deletedWith", "retainOnDelete")
"""What the engine copies from a parent onto a child that sets none (pulumi pkg/resource/deploy/source_eval.go,
inheritFromParent); the plan records the value the engine acts on."""


def recorded_options(request: Any, names: dict[str, str], inherited: dict[str, Any]) -> dict[str, Any]:
    """The resource options of one RegisterResourceRequest that the real engine acts on, when set."""
    options: dict[str, Any] = {}
    if request.deleteBeforeReplace:
        options["deleteBeforeReplace"] = True
    if request.replaceOnChanges:
        options["replaceOnChanges"] = sorted(request.replaceOnChanges)
    if request.ignoreChanges:
        options["ignoreChanges"] = sorted(request.ignoreChanges)
    if request.additionalSecretOutputs:
        options["additionalSecretOutputs"] = sorted(request.additionalSecretOutputs)
    timeouts = request.customTimeouts if request.HasField("customTimeouts") else None
    if timeouts is not None and (timeouts.create or timeouts.update or timeouts.delete):
        options["customTimeouts"] = {
            k: v
            for k, v in (("create", timeouts.create), ("update", timeouts.update), ("delete", timeouts.delete))
            if v
        }
    if request.HasField("retainOnDelete") and request.retainOnDelete:
        options["retainOnDelete"] = True
    if request.deletedWith:
        options["deletedWith"] = names.get(request.deletedWith, request.deletedWith.rsplit("::", 1)[-1])
    for key, value in inherited.items():
        options.setdefault(key, value)
    if request.replace_with:
        options["replaceWith"] = sorted(names.get(u, u.rsplit("::", 1)[-1]) for u in request.replace_with)
    if request.HasField("replacement_trigger"):
        options["replacementTrigger"] = _plain(json_format.MessageToDict(request.replacement_trigger))
    if request.provider:
        options["provider"] = request.provider.split("::")[-2].split("::")[-1]
    return options


@dataclass
class RecordingMonitor(MockMonitor):
    """A MockMonitor that keeps every registration in order, with parent, dependencies and options."""

    registrations: list[Registration] = field(default_factory=list)
    component_outputs: dict[str, dict[str, Any]] = field(default_factory=dict)

    def __init__(self, mocks: pulumi.runtime.Mocks):
        super().__init__(mocks)
        self.registrations = []
        self.component_outputs = {}
        self._inherited: dict[str, dict[str, Any]] = {}
        self._names: dict[str, str] = {}  # kept as registrations arrive: rebuilding it each time is quadratic

    def RegisterResource(self, request: Any) -> Any:
        response = super().RegisterResource(request)
        if request.type != "pulumi:pulumi:Stack":
            inherited = self._inherited.get(request.parent, {})
            options = recorded_options(request, self._names, inherited)
            self._names[response.urn] = request.name
            self._inherited[response.urn] = {k: options[k] for k in INHERITED_OPTIONS if k in options}
            self.registrations.append(
                Registration(
                    urn=response.urn,
                    type=request.type,
                    name=request.name,
                    parent=request.parent,
                    custom=bool(request.custom),
                    dependencies=list(request.dependencies),
                    inputs=_plain_struct(request.object),
                    options=options,
                    provider=request.provider.rsplit("::", 1)[0] if request.provider else None,  # "urn::id"
                )
            )
        return response

    def ReadResource(self, request: Any) -> Any:
        """A `Resource.get`: the engine reads the live object (in a preview too, once its ID is known), so the
        plan shows it with the ID it reads, as `pulumi preview` shows a `read`."""
        response = super().ReadResource(request)
        options = {"read": request.id}
        if request.provider:
            options["provider"] = request.provider.split("::")[-2].split("::")[-1]
        self._names[response.urn] = request.name
        self.registrations.append(
            Registration(
                urn=response.urn,
                type=request.type,
                name=request.name,
                parent=request.parent,
                custom=True,
                dependencies=list(request.dependencies),
                inputs=_plain_struct(request.properties),
                options=options,
                provider=request.provider.rsplit("::", 1)[0] if request.provider else None,
            )
        )
        return response

    def RegisterResourceOutputs(self, request: Any) -> Any:
        self.component_outputs[request.urn] = _plain_struct(request.outputs)
        return super().RegisterResourceOutputs(request)


def kubeconfig_json(kubeconfig: str) -> str:
    """Kubeconfig text as the JSON the kubernetes Provider stores (tests compare them)."""
    return json.dumps(kubeconfig)
