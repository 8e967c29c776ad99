"""A rule: a pure check plus the metadata the pack, the harness and the README share; `.policy()` wraps it."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pulumi_policy import (
    EnforcementLevel,
    Policy,
    PolicyConfigSchema,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    Secret,
    StackValidationArgs,
    StackValidationPolicy,
)

from components.pulumi_internals import unknown_value_error
from policies.model import SECRET, STACK, UNKNOWN, Finding, Res

UnknownValueError = unknown_value_error()
ResourceCheck = Callable[[str, Mapping[str, Any], Mapping[str, Any]], list[str]]
StackCheck = Callable[[Sequence[Res], Mapping[str, Any]], list[Finding]]
Level = Literal["mandatory", "advisory"]


def plain(value: Any, *, mark_secrets: bool = False) -> Any:
    """Deep copy of policy props as plain dicts and lists: unknowns become "[unknown]", and secrets their
    value, or "[secret]" with `mark_secrets` (so a rule can tell a secret output from a plaintext one)."""
    if isinstance(value, Secret):
        return SECRET if mark_secrets else plain(value.value)
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key in value:
            try:
                out[str(key)] = plain(value[key], mark_secrets=mark_secrets)
            except UnknownValueError:
                out[str(key)] = UNKNOWN
        return out
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
        items = []
        for i in range(len(value)):
            try:
                items.append(plain(value[i], mark_secrets=mark_secrets))
            except UnknownValueError:
                items.append(UNKNOWN)
        return items
    return value


@dataclass(frozen=True)
class Rule:
    """One pitfall from a lab: its name says the symptom it prevents; its messages say the fix."""

    name: str
    description: str
    level: Level
    lab: str
    """Where the pitfall was met: `lab 7` (k3s), `lab 12` (GKE), `operator` (GPU Operator + HAMi, T4)."""
    symptom: str
    """What the user sees when the rule is broken."""
    resource_check: ResourceCheck | None = None
    stack_check: StackCheck | None = None
    config: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """Policy config keys this rule reads (JSON schema per key)."""
    needs_secret_markers: bool = False

    def __post_init__(self) -> None:
        if (self.resource_check is None) == (self.stack_check is None):
            raise ValueError(f"rule {self.name}: give exactly one of resource_check and stack_check")

    @property
    def enforcement(self) -> EnforcementLevel:
        return EnforcementLevel.MANDATORY if self.level == "mandatory" else EnforcementLevel.ADVISORY

    def policy(self, *, secret_markers: bool = True) -> Policy:
        """The pulumi_policy object; `secret_markers` False makes a secret-reading rule not applicable."""
        schema = (
            PolicyConfigSchema(properties={name: dict(prop) for name, prop in self.config.items()})
            if self.config
            else None
        )
        if self.resource_check is not None:
            check = self.resource_check

            def validate_resource(args: ResourceValidationArgs, report: ReportViolation) -> None:
                props = plain(args.props)
                for message in check(args.resource_type, props, dict(args.get_config())):
                    report(message, None)

            return ResourceValidationPolicy(
                self.name, self.description, validate_resource, self.enforcement, config_schema=schema
            )
        stack_check = self.stack_check
        assert stack_check is not None
        needs_markers = self.needs_secret_markers

        def validate_stack(args: StackValidationArgs, report: ReportViolation) -> None:
            if needs_markers and not secret_markers:
                args.not_applicable("this pulumi_policy hides which values are secret")
            resources = [
                Res(r.resource_type, r.name, plain(r.props, mark_secrets=r.resource_type == STACK), r.urn)
                for r in args.resources
            ]
            for finding in stack_check(resources, dict(args.get_config())):
                report(finding.message, finding.urn or None)

        return StackValidationPolicy(
            self.name, self.description, validate_stack, self.enforcement, config_schema=schema
        )
