"""The planned stack as data: the object every view reads and the versioned JSON contract `--json` prints.

The contract (docs/plan-json.md, schema in components/plan_view/plan.schema.json) keeps every key present, empty
when empty; a resource is identified by `urn` (`type::name`); paths are JSON pointers.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from components.mocks import Invented

SCHEMA_VERSION = 1
"""The contract's version: bumped when a key changes meaning or goes; adding a key keeps it."""
SCHEMA_PATH = Path(__file__).with_name("plan.schema.json")
OPERATIONS = ("create", "update", "replace", "delete", "same", "read", "discard")
"""`read`: a `Resource.get` (the engine reads the live object each run); `discard`: a read the plan no longer has."""


def operation_of(resource: dict[str, Any]) -> str:
    """What `pulumi up` does to a resource of a new stack: reads what `Resource.get` names, creates the rest."""
    return "read" if (resource.get("options") or {}).get("read") else "create"


def urn(resource: dict[str, Any]) -> str:
    """A resource's identity in the plan: its type token and name, as the tail of Pulumi's URN."""
    return f"{resource['type']}::{resource['name']}"


@dataclass
class Plan:
    """One planned stack: every registration, the component outputs and the stack outputs."""

    stack: str
    resources: list[dict[str, Any]]
    outputs: dict[str, Any]
    component_outputs: dict[str, dict[str, Any]]
    unknown_outputs: dict[str, str] = field(default_factory=dict)
    """Output pointers whose value the mocks made up, with why a real preview would not know it."""
    invented: Invented = field(default_factory=Invented)
    """The mocks' registry of made-up values, for the views to hide."""
    kinds: dict[str, str] = field(default_factory=dict)
    """Each resource name's kind: `resource`, `component` or `provider`."""

    def as_dict(self) -> dict[str, Any]:
        """The contract: every resource created, as `pulumi up` on a new stack would (diff.compare sets others)."""
        return {
            "version": SCHEMA_VERSION,
            "stack": self.stack,
            "against": None,
            "resources": [
                {
                    **r,
                    "urn": urn(r),
                    "kind": self.kind(r),
                    "operation": operation_of(r),
                    "changed": [],
                    "replaceBecause": [],
                }
                for r in self.resources
            ],
            "deleted": [],
            "outputs": self.outputs,
            "unknownOutputs": self.unknown_outputs,
        }

    def to_json(self) -> str:
        return json.dumps(self.as_dict(), indent=2, sort_keys=True)

    def kind(self, resource: dict[str, Any]) -> str:
        """`resource`, `component` or `provider`; by type token where the plan did not record it."""
        if resource["name"] in self.kinds:
            return self.kinds[resource["name"]]
        if resource["type"].startswith("pulumi:providers:"):
            return "provider"
        return "component" if resource["type"].startswith("gpushare:") else "resource"

    def counts(self) -> dict[str, int]:
        """The plan's one count, shown by every view: `resources` is everything the program registers (custom
        resources, components, explicit providers), the length of the `resources` list; `pulumi preview` shows one
        more "to create", the stack itself (pulumi pkg/engine/update.go:1365 counts every step, and isInternalStep
        at :1480 leaves out only default providers)."""
        counted = {"resources": len(self.resources), "resource": 0, "component": 0, "provider": 0}
        for r in self.resources:
            counted[self.kind(r)] += 1
        return counted

    def count_text(self, parts: bool = True) -> str:
        """`43 resources (33 custom, 9 components, 1 provider)`: the count and, with `parts`, what it is made of."""
        counts = self.counts()

        def n(count: int, noun: str) -> str:
            return f"{count} {noun}{'' if count == 1 else 's'}"

        whole = n(counts["resources"], "resource")
        if not parts:
            return whole
        return (
            f"{whole} ({counts['resource']} custom, {n(counts['component'], 'component')}, "
            f"{n(counts['provider'], 'provider')})"
        )

    def find(self, type_: str, name: str | None = None) -> list[dict[str, Any]]:
        """Resources of a type (the full token), optionally of one name."""
        return [r for r in self.resources if r["type"] == type_ and (name is None or r["name"] == name)]

    def one(self, type_: str, name: str | None = None) -> dict[str, Any]:
        found = self.find(type_, name)
        if len(found) != 1:
            raise AssertionError(f"expected one {type_} {name or ''}, found {[r['name'] for r in found]}")
        return found[0]
