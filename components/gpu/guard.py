"""The admission guard: Kubernetes' own ValidatingAdmissionPolicy refusing new Pods that opt out of their quota.

No controller of our own: the API server evaluates the CEL rules below (admissionregistration.k8s.io/v1, GA since
Kubernetes 1.30). Every rule reads only the Pod's spec and annotations; the namespaces of the GPU software itself
(and the proof's, whose tries must reach the runtime) are exempt by name, which a tenant cannot forge.

The expressions keep to standard CEL that both Kubernetes and the tests' evaluator run: `has`, `exists`, `in`,
`startsWith`, `matches` (RE2), list `+` (kubernetes.io/docs/reference/using-api/cel/, "CEL libraries").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi

from components.contracts.guard import GuardMode
from components.incluster import audit
from components.providers import ApiFields, k8s

VALIDATION_ACTIONS: dict[str, list[str]] = {"deny": ["Deny"], "warn": ["Warn"]}
NAME_LABEL = "kubernetes.io/metadata.name"
"""Set by the API server on every namespace (NamespaceDefaultLabelName); no tenant can set another's."""


def _cel_list(values: Sequence[str]) -> str:
    return "[" + ", ".join(f"'{v}'" for v in values) + "]"


_CONTAINERS = "object.spec.containers + (has(object.spec.initContainers) ? object.spec.initContainers : [])"
_GPU_LIMIT = (
    "(has(c.resources) && has(c.resources.limits)"
    f" && c.resources.limits.exists(k, k.startsWith('{audit.GPU_RESOURCE_PREFIX}')))"
)
# The audit's one path rule (audit.is_device_path) as RE2, each backslash doubled for the CEL string literal.
_DEVICE_PATHS = "v.hostPath.path.matches('" + audit.device_path_pattern().replace("\\", "\\\\") + "')"


@dataclass(frozen=True)
class GuardRule:
    """One way to opt out, refused at admission: `expression` is true for a Pod that may be admitted."""

    id: str
    """The audit's reason id for the same way (components/incluster/audit.py)."""
    expression: str
    message: str


# Names, values and paths are the audit's (incluster/audit.py): what it counts unlimited, the guard refuses.
RULES: dict[str, GuardRule] = {
    rule.id: rule
    for rule in (
        # HAMi's device plugin reads it with strconv.ParseBool (HAMi pkg/device-plugin/nvidiadevice/nvinternal/
        # plugin/server.go, Allocate) and then mounts no ld.so.preload.
        GuardRule(
            "cuda-disable-control",
            f"!variables.containers.exists(c, has(c.env) && c.env.exists(e, e.name == '{audit.DISABLE_CONTROL}'"
            f" && has(e.value) && e.value.matches('^({'|'.join(audit.PARSE_BOOL_TRUE)})$')))",
            f"{audit.DISABLE_CONTROL}=true turns HAMi-core off for this Pod: remove it",
        ),
        # The isolator's webhook skips a Pod so annotated, in any case (kai_sharing.py, INJECT_ANNOTATION).
        GuardRule(
            "isolator-inject-false",
            f"!(has(object.metadata.annotations) && '{audit.ISOLATOR_INJECT}' in object.metadata.annotations"
            f" && object.metadata.annotations['{audit.ISOLATOR_INJECT}'].matches('^(?i)false$'))",
            f'{audit.ISOLATOR_INJECT}: "false" keeps HAMi-core out of this Pod: remove the annotation',
        ),
        # The toolkit honours the variable in any container it runs (nvidia-container-toolkit v1.20.0
        # internal/config/image/cuda_image.go:281, VisibleDevices); void and none name no device.
        GuardRule(
            "visible-devices-without-request",
            f"!variables.containers.exists(c, has(c.env) && c.env.exists(e, e.name == '{audit.VISIBLE_DEVICES}'"
            f" && !(has(e.value) && e.value in {_cel_list(audit.NO_DEVICE_VALUES)})) && !{_GPU_LIMIT})",
            f"{audit.VISIBLE_DEVICES} without a GPU request reaches every card outside the quota: request the GPU",
        ),
        GuardRule(
            "device-host-path",
            f"!(has(object.spec.volumes) && object.spec.volumes.exists(v, has(v.hostPath) && {_DEVICE_PATHS}))",
            "a hostPath of /dev/nvidia* (or /dev, /) reaches the cards without a request: request the GPU",
        ),
    )
}
"""Every rule the guard knows; a stack enables those its runtime and sharing system make meaningful."""


def policy_spec(rules: Sequence[GuardRule], exempt_namespaces: Sequence[str]) -> ApiFields:
    """The ValidatingAdmissionPolicy spec: Pod CREATE outside the exempt namespaces, one validation a rule."""
    return {
        "failurePolicy": "Fail",
        "matchConstraints": {
            "resourceRules": [
                {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}
            ],
            "namespaceSelector": {
                "matchExpressions": [{"key": NAME_LABEL, "operator": "NotIn", "values": sorted(exempt_namespaces)}]
            },
        },
        "variables": [{"name": "containers", "expression": _CONTAINERS}],
        "validations": [{"expression": r.expression, "message": r.message, "reason": "Forbidden"} for r in rules],
    }


def binding_spec(policy_name: str, mode: GuardMode) -> ApiFields:
    return {"policyName": policy_name, "validationActions": VALIDATION_ACTIONS[mode]}


@dataclass(frozen=True)
class AdmissionGuardArgs:
    """The rules this stack enables, the namespaces left alone, and deny or warn."""

    provider: k8s.Provider
    policy_name: str
    mode: GuardMode
    rules: Sequence[GuardRule]
    exempt_namespaces: Sequence[str]
    ready: Sequence[pulumi.Resource] = ()


class AdmissionGuard(pulumi.ComponentResource):
    """One ValidatingAdmissionPolicy and its binding."""

    outputs: dict[str, Any]

    def __init__(self, name: str, args: AdmissionGuardArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpushare:gpu:AdmissionGuard", name, None, opts)
        if args.mode == "off" or not args.rules:
            raise ValueError("an AdmissionGuard needs mode deny or warn and at least one rule")
        child = pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=list(args.ready))
        policy = k8s.admissionregistration.v1.ValidatingAdmissionPolicy(
            f"{name}-policy",
            metadata={"name": args.policy_name},
            spec=policy_spec(args.rules, args.exempt_namespaces),
            opts=child,
        )
        k8s.admissionregistration.v1.ValidatingAdmissionPolicyBinding(
            f"{name}-binding",
            metadata={"name": args.policy_name},
            spec=binding_spec(args.policy_name, args.mode),
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[policy])),
        )
        self.outputs = {
            "mode": args.mode,
            "policy": args.policy_name,
            "rules": [r.id for r in args.rules],
            "exemptNamespaces": sorted(args.exempt_namespaces),
        }
        self.register_outputs(dict(self.outputs))
