"""Which input changes replace a resource rather than update it in place, per type the program uses.

Each rule is the provider's own, read in its source (file and line beside it); a path is a JSON pointer whose
`*` stands for any list index or key. A change at, under or around a listed path replaces the resource.
Sources read: pulumi/pulumi-kubernetes @94977969d, hashicorp/terraform-provider-google @e03b7622a (which
pulumi-gcp bridges), hashicorp/terraform-provider-tls @d72d90e1b, pulumi/pulumi-command @010bd8e0d.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

K8S_DIFF = "pulumi-kubernetes provider/pkg/provider/diff.go"
GOOGLE = "terraform-provider-google google/services"


@dataclass(frozen=True)
class Rule:
    paths: tuple[str, ...]
    source: str
    changed_only: bool = False
    """Only a value that changes replaces; one added or removed updates in place."""


def _containers(*fields: str) -> tuple[str, ...]:
    return tuple(f"/spec/{c}/*/{f}" for c in ("containers", "initContainers") for f in fields)


# pulumi-kubernetes diff.go:207-211 (metadataForceNewProperties): every object's name and namespace.
K8S_IDENTITY = Rule(("/metadata/name", "/metadata/namespace"), f"{K8S_DIFF}:207")
K8S_RULES: dict[str, Rule] = {
    # diff.go:119-151 (core/v1 Pod) and 214-238 (containerForceNewProperties); no metadata but name and namespace
    # (:207), so a Pod's annotations (HAMi's card pin) update in place: the proof Pods carry what places them in
    # their replacementTrigger instead (components/verify/workloads.py, placement_trigger)
    "kubernetes:core/v1:Pod": Rule(
        (
            *(
                f"/spec/{f}"
                for f in (
                    "affinity",
                    "automountServiceAccountToken",
                    "dnsConfig",
                    "dnsPolicy",
                    "enableServiceLinks",
                    "hostAliases",
                    "hostIPC",
                    "hostNetwork",
                    "hostPID",
                    "hostname",
                    "imagePullSecrets",
                    "nodeName",
                    "nodeSelector",
                    "overhead",
                    "preemptionPolicy",
                    "priority",
                    "priorityClassName",
                    "readinessGates",
                    "restartPolicy",
                    "runtimeClassName",
                    "schedulerName",
                    "securityContext",
                    "serviceAccount",
                    "serviceAccountName",
                    "shareProcessNamespace",
                    "subdomain",
                    "terminationGracePeriodSeconds",
                    "volumes",
                )
            ),
            *_containers(
                "args",
                "command",
                "env",
                "image",
                "imagePullPolicy",
                "lifecycle",
                "livenessProbe",
                "ports",
                "readinessProbe",
                "resources",
                "securityContext",
                "stdin",
                "stdinOnce",
                "terminationMessagePath",
                "terminationMessagePolicy",
                "tty",
                "volumeDevices",
                "volumeMounts",
                "workingDir",
            ),
        ),
        f"{K8S_DIFF}:119",
    ),
    # diff.go:178-186 (batch Job)
    "kubernetes:batch/v1:Job": Rule(
        ("/spec/completions", "/spec/parallelism", "/spec/selector", "/spec/template"), f"{K8S_DIFF}:178"
    ),
    # diff.go:192-194 (roleBinding)
    "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding": Rule(("/roleRef",), f"{K8S_DIFF}:192"),
    "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding": Rule(("/roleRef",), f"{K8S_DIFF}:192"),
    # diff.go:32-33: a ConfigMap's data unless the provider sets enableConfigMapMutable (provider.go:696-707,
    # default false; the program never sets it)
    "kubernetes:core/v1:ConfigMap": Rule(("/data", "/binaryData"), f"{K8S_DIFF}:32"),
}
PATCH_TYPES = ("kubernetes:core/v1:NodePatch",)
"""Patch resources update in place for all but their identity (pulumi-kubernetes provider.go:1559-1565)."""

OTHER_RULES: dict[str, Rule] = {
    # helm_release.go:907: forceNewFields := {".name", ".namespace"}
    "kubernetes:helm.sh/v3:Release": Rule(
        ("/name", "/namespace"), "pulumi-kubernetes provider/pkg/provider/helm_release.go:907"
    ),
    # resource_compute_address.go: name 172, address_type 193, description 202, region 301 (ForceNew)
    "gcp:compute/address:Address": Rule(
        (
            "/name",
            "/address",
            "/addressType",
            "/description",
            "/networkTier",
            "/purpose",
            "/region",
            "/subnetwork",
            "/network",
            "/prefixLength",
            "/ipVersion",
            "/project",
        ),
        f"{GOOGLE}/compute/resource_compute_address.go:172",
    ),
    # resource_compute_firewall.go: name 246, direction 302 (ForceNew); allow, source_ranges, target_tags update
    "gcp:compute/firewall:Firewall": Rule(
        ("/name", "/direction", "/project"), f"{GOOGLE}/compute/resource_compute_firewall.go:246"
    ),
    # resource_compute_instance.go: name 642, zone 1447, boot_disk.initialize_params image 395 / type 386,
    # network_interface 650 (the block), guest_accelerator 986, scheduling.preemptible 1110,
    # scheduling.provisioning_model 1134; machine_type, metadata, tags, size update in place
    "gcp:compute/instance:Instance": Rule(
        (
            "/name",
            "/zone",
            "/project",
            "/bootDisk/initializeParams/image",
            "/bootDisk/initializeParams/type",
            "/bootDisk/deviceName",
            "/guestAccelerators",
            "/scheduling/preemptible",
            "/scheduling/provisioningModel",
            "/networkInterfaces/*/accessConfigs/*/networkTier",
            "/hostname",
            "/metadataStartupScript",
        ),
        f"{GOOGLE}/compute/resource_compute_instance.go:642",
    ),
    # resource_container_cluster.go: name 293, location 326, initial_node_count 1156 (ForceNew)
    "gcp:container/cluster:Cluster": Rule(
        ("/name", "/location", "/project", "/initialNodeCount"), f"{GOOGLE}/container/resource_container_cluster.go:293"
    ),
    # resource_container_node_pool.go: cluster 246, location 252, name 510; node_config.go: guest_accelerator 316
    # (count 324, type 330, gpu_driver_installation_config 337, gpu_sharing_config 362), oauth_scopes 560,
    # spot 616; machine_type 536, image_type 389, labels 420 and node_count update in place
    "gcp:container/nodePool:NodePool": Rule(
        (
            "/cluster",
            "/location",
            "/name",
            "/project",
            "/nodeConfig/guestAccelerators",
            "/nodeConfig/oauthScopes",
            "/nodeConfig/spot",
            "/nodeConfig/preemptible",
            "/nodeConfig/metadata",
            "/nodeConfig/minCpuPlatform",
        ),
        f"{GOOGLE}/container/resource_container_node_pool.go:246, node_config.go:316",
    ),
    # terraform-provider-tls internal/provider/resource_private_key.go:57-60 (algorithm: RequiresReplace), 75, 84
    "tls:index/privateKey:PrivateKey": Rule(
        ("/algorithm", "/rsaBits", "/ecdsaCurve"), "terraform-provider-tls internal/provider/resource_private_key.go:57"
    ),
    # pulumi-command provider/pkg/provider/common/inputs.go:10 (triggers: replaceOnChanges); a change to
    # create/update re-runs it in place (remote/commandController.go:63-83)
    "command:remote:Command": Rule(("/triggers",), "pulumi-command provider/pkg/provider/common/inputs.go:10"),
    "command:local:Command": Rule(("/triggers",), "pulumi-command provider/pkg/provider/common/inputs.go:10"),
    # DiffConfig replaces the provider, and every object on it, when clusterIdentifier changes; adding or removing it
    # does not, and with it set and the same a new kubeconfig updates in place (provider.go:490-503)
    "pulumi:providers:kubernetes": Rule(
        ("/clusterIdentifier",), "pulumi-kubernetes provider/pkg/provider/provider.go:490", changed_only=True
    ),
}

ENGINE = "pulumi pkg/resource/deploy/step_generator.go (applyReplaceOnChanges)"
"""replaceOnChanges and ignoreChanges are the engine's, applied on top of the provider's diff."""


def rules_for(type_: str) -> list[Rule]:
    """The provider's replace rules for one resource type (none for components and unknown types)."""
    if type_.startswith("kubernetes:") and type_ != "kubernetes:helm.sh/v3:Release":
        if type_ in PATCH_TYPES:
            return [Rule(K8S_IDENTITY.paths, "pulumi-kubernetes provider/pkg/provider/provider.go:1559")]
        return [K8S_IDENTITY, *([K8S_RULES[type_]] if type_ in K8S_RULES else [])]
    return [OTHER_RULES[type_]] if type_ in OTHER_RULES else []


def property_path(path: str) -> tuple[str, ...]:
    """A Pulumi property path (`spec.containers[*].image`, `metadata.labels["a.b"]`, `*`) as pointer parts."""
    parts: list[str] = []
    for dotted, quoted, index in re.findall(r'([^.\[\]]+)|\["([^"]*)"\]|\[([^\]]*)\]', path):
        parts.append(dotted or quoted or index)
    return tuple(parts)


def _parts(pointer: str) -> tuple[str, ...]:
    return tuple(p.replace("~1", "/").replace("~0", "~") for p in pointer.split("/")[1:]) if pointer else ()


def _prefix_matches(short: tuple[str, ...], long: tuple[str, ...]) -> bool:
    return len(short) <= len(long) and all("*" in (s, x) or s == x for s, x in zip(short, long, strict=False))


def touches(pointer: str, pattern: tuple[str, ...]) -> bool:
    """True when a change at `pointer` is at, under or around the path `pattern` (`*` matches any part)."""
    parts = _parts(pointer)
    if pattern == ("*",):
        return True
    return _prefix_matches(pattern, parts) or _prefix_matches(parts, pattern)


def replace_rule(type_: str, pointer: str, added_or_removed: bool = False) -> str | None:
    """The upstream rule (file:line) by which a change at `pointer` replaces a resource of `type_`, if any."""
    for rule in rules_for(type_):
        if rule.changed_only and added_or_removed:
            continue
        for path in rule.paths:
            if touches(pointer, _parts(path)):
                return f"{path} ({rule.source})"
    return None


def under(pointer: str, pattern: tuple[str, ...]) -> bool:
    """True when `pointer` is at or under `pattern` (ignoreChanges drops only what it names)."""
    return pattern == ("*",) or _prefix_matches(pattern, _parts(pointer))
