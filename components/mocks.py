"""Pulumi's mock engine with realistic provider answers, and a monitor that records the whole graph.

Strict: an invoke these mocks do not know raises, since an unmocked invoke would silently return nothing
and let a broken program plan.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pulumi
from google.protobuf import json_format
from pulumi.runtime.mocks import MockCallArgs, MockMonitor, MockResourceArgs

GKE_VERSIONS = ["1.36.1-gke.1100000", "1.35.6-gke.1250000", "1.35.5-gke.1080000", "1.34.9-gke.1400000"]
MOCK_CA = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nmock\n-----END CERTIFICATE-----\n").decode()
GKE_ENDPOINT = "203.0.113.10"
VM_EXTERNAL_IP = "203.0.113.20"
MOCK_KUBECONFIG = """apiVersion: v1
kind: Config
clusters:
- name: default
  cluster: {server: "https://127.0.0.1:6443", certificate-authority-data: %s}
contexts:
- name: default
  context: {cluster: default, user: default}
current-context: default
users:
- name: default
  user: {token: mock-token}
""".replace("%s", MOCK_CA)

_SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270"
_RESOURCE_SIG = "5cf8f73096256a8f31e491e813e4eb8e"
_UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"
_SIG_KEY = "4dabf18193072939515e22adb298388d"

StateOverride = Callable[[MockResourceArgs, dict[str, Any]], dict[str, Any] | None]


def _gke_versions(args: dict[str, Any]) -> dict[str, Any]:
    prefix = args.get("versionPrefix", "")
    versions = [v for v in GKE_VERSIONS if v.startswith(prefix)]
    return {
        "location": args.get("location"),
        "project": args.get("project", "mock-project"),
        "versionPrefix": prefix,
        "validMasterVersions": versions,
        "validNodeVersions": versions,
        "latestMasterVersion": versions[0] if versions else "",
        "latestNodeVersion": versions[0] if versions else "",
        "defaultClusterVersion": "1.35.6-gke.1250000",
        "releaseChannelDefaultVersion": {"REGULAR": "1.35.6-gke.1250000"},
        "releaseChannelLatestVersion": {"REGULAR": "1.35.6-gke.1250000"},
        "releaseChannelUpgradeTargetVersion": {},
        "id": "mock-engine-versions",
    }


INVOKES: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "gcp:container/getEngineVersions:getEngineVersions": _gke_versions,
}


def _outputs_for(args: MockResourceArgs) -> dict[str, Any]:
    """What the provider would add to the inputs once the resource exists."""
    inputs = args.inputs
    match args.typ:
        case "gcp:container/cluster:Cluster":
            return {
                "masterVersion": inputs.get("minMasterVersion") or "1.35.6-gke.1250000",
                "endpoint": GKE_ENDPOINT,
                "masterAuth": {"clusterCaCertificate": MOCK_CA},
                "selfLink": f"https://container.googleapis.com/v1/projects/mock-project/clusters/{args.name}",
            }
        case "gcp:container/nodePool:NodePool":
            return {"instanceGroupUrls": [f"https://compute.googleapis.com/mock/{args.name}-grp"]}
        case "gcp:compute/instance:Instance":
            nics = inputs.get("networkInterfaces") or [{}]
            nic = dict(nics[0])
            nic["networkIp"] = "10.128.0.2"
            nic["accessConfigs"] = [{**(nic.get("accessConfigs") or [{}])[0], "natIp": VM_EXTERNAL_IP}]
            return {"networkInterfaces": [nic, *nics[1:]], "instanceId": "1234567890123456789"}
        case "tls:index/privateKey:PrivateKey":
            return {
                "publicKeyOpenssh": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIMockMockMockMockMockMockMockMockMockMock\n",
                "privateKeyOpenssh": "-----BEGIN OPENSSH PRIVATE KEY-----\nmock\n-----END OPENSSH PRIVATE KEY-----\n",
                "privateKeyPem": "-----BEGIN PRIVATE KEY-----\nmock\n-----END PRIVATE KEY-----\n",
                "publicKeyFingerprintSha256": "SHA256:mock",
            }
        case "command:remote:Command" | "command:local:Command":
            create = inputs.get("create") or ""
            stdout = MOCK_KUBECONFIG if "k3s.yaml" in create and "cat" in create else ""
            return {"stdout": stdout, "stderr": ""}
        case "kubernetes:helm.sh/v3:Release":
            return {
                "status": {
                    "name": inputs.get("name", args.name),
                    "namespace": inputs.get("namespace", "default"),
                    "version": inputs.get("version", ""),
                    "status": "deployed",
                    "revision": 1,
                }
            }
    return {}


@dataclass
class GpushareMocks(pulumi.runtime.Mocks):
    """Provider answers realistic enough for the program's apply() chains."""

    override: StateOverride | None = None
    """Tests may replace or extend a resource's state (a verifier Pod's status, say)."""

    def new_resource(self, args: MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        state = {**args.inputs, **_outputs_for(args)}
        if self.override is not None:
            state = self.override(args, state) or state
        return f"{args.name}-id", state

    def call(self, args: MockCallArgs) -> tuple[dict[str, Any], list[tuple[str, str]] | None]:
        try:
            answer = INVOKES[args.token]
        except KeyError:
            raise NotImplementedError(f"unmocked invoke {args.token}: add it to components/mocks.INVOKES") from None
        return answer(args.args), []  # the mock monitor iterates the failures; None breaks every invoke


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


def _plain(value: Any) -> Any:
    """Protobuf-decoded inputs with Pulumi's sentinels made readable: secrets, unknowns, resource refs."""
    if isinstance(value, dict):
        sig = value.get(_SIG_KEY)
        if sig == _SECRET_SIG:
            return "[secret]"
        if sig == _RESOURCE_SIG:
            return f"[resource {value.get('urn', '').rsplit('::', 1)[-1]}]"
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if value == _UNKNOWN:
        return "[unknown]"
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


@dataclass
class RecordingMonitor(MockMonitor):
    """A MockMonitor that keeps every registration in order, with parent, dependencies and options."""

    registrations: list[Registration] = field(default_factory=list)
    component_outputs: dict[str, dict[str, Any]] = field(default_factory=dict)

    def __init__(self, mocks: pulumi.runtime.Mocks):
        super().__init__(mocks)
        self.registrations = []
        self.component_outputs = {}

    def RegisterResource(self, request: Any) -> Any:
        response = super().RegisterResource(request)
        if request.type != "pulumi:pulumi:Stack":
            options: dict[str, Any] = {}
            if request.deleteBeforeReplace:
                options["deleteBeforeReplace"] = True
            if request.ignoreChanges:
                options["ignoreChanges"] = sorted(request.ignoreChanges)
            if request.additionalSecretOutputs:
                options["additionalSecretOutputs"] = sorted(request.additionalSecretOutputs)
            if request.HasField("customTimeouts") and (request.customTimeouts.create or request.customTimeouts.delete):
                options["customTimeouts"] = {
                    k: v
                    for k, v in (("create", request.customTimeouts.create), ("delete", request.customTimeouts.delete))
                    if v
                }
            if request.HasField("replacement_trigger"):
                options["replacementTrigger"] = _plain(json_format.MessageToDict(request.replacement_trigger))
            if request.provider:
                options["provider"] = request.provider.split("::")[-2].split("::")[-1]
            self.registrations.append(
                Registration(
                    urn=response.urn,
                    type=request.type,
                    name=request.name,
                    parent=request.parent,
                    custom=bool(request.custom),
                    dependencies=list(request.dependencies),
                    inputs=_plain(json_format.MessageToDict(request.object)),
                    options=options,
                )
            )
        return response

    def RegisterResourceOutputs(self, request: Any) -> Any:
        self.component_outputs[request.urn] = _plain(json_format.MessageToDict(request.outputs))
        return super().RegisterResourceOutputs(request)


def kubeconfig_json(kubeconfig: str) -> str:
    """Kubeconfig text as the JSON the kubernetes Provider stores (tests compare them)."""
    return json.dumps(kubeconfig)
