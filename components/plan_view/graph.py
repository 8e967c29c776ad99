"""The plan as a tree and a dependency graph: kinds, children, and "after" lists folded for reading."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from components.plan import Plan

AFTER_SHOWN = 6
"""An "after" list longer than this is cut, with a pointer to the full list in --json."""


def kind_of(plan: Plan, resource: dict[str, Any]) -> str:
    """`resource`, `component` or `provider`; by type token where the plan did not record it."""
    if resource["name"] in plan.kinds:
        return plan.kinds[resource["name"]]
    if resource["type"].startswith("pulumi:providers:"):
        return "provider"
    return "component" if resource["type"].startswith("gpushare:") else "resource"


@dataclass
class Graph:
    """Parent/child and dependency relations of one plan, by resource name."""

    plan: Plan

    @cached_property
    def by_name(self) -> dict[str, dict[str, Any]]:
        return {r["name"]: r for r in self.plan.resources}

    @cached_property
    def children(self) -> dict[str | None, list[dict[str, Any]]]:
        found: dict[str | None, list[dict[str, Any]]] = {}
        for r in self.plan.resources:
            found.setdefault(r["parent"], []).append(r)
        return found

    def kind(self, name: str) -> str:
        return kind_of(self.plan, self.by_name[name])

    def counts(self) -> dict[str, int]:
        counted = {"resource": 0, "component": 0, "provider": 0}
        for r in self.plan.resources:
            counted[kind_of(self.plan, r)] += 1
        return counted

    def subtree(self, name: str) -> set[str]:
        found = {name}
        for child in self.children.get(name, []):
            found |= self.subtree(child["name"])
        return found

    def ancestors(self, name: str) -> list[str]:
        """From the parent up to the root."""
        chain, parent = [], self.by_name[name]["parent"]
        while parent is not None:
            chain.append(parent)
            parent = self.by_name[parent]["parent"]
        return chain

    def sinks(self, component: str) -> set[str]:
        """Resources of a component that nothing else inside it waits for: when they exist, all of it does."""
        inside = self.subtree(component)
        real = {n for n in inside if self.kind(n) != "component"}
        waited_on = {d for n in real for d in self.by_name[n]["dependsOn"] if d in inside}
        return real - waited_on

    def waits_for(self, name: str) -> set[str]:
        """A resource's dependencies; for a component, what every resource inside it waits for outside it."""
        own = set(self.by_name[name]["dependsOn"])
        if self.kind(name) != "component":
            return own
        inside = self.subtree(name)
        real = [n for n in inside if self.kind(n) != "component"]
        if not real:
            return own
        shared = set.intersection(*(set(self.by_name[n]["dependsOn"]) - inside for n in real))
        return own | shared

    def fold(self, names: set[str], for_name: str) -> list[str]:
        """Dependencies with each whole component (all its sinks) replaced by the component's name."""
        remaining = set(names)
        folded: set[str] = set()
        outer_first = sorted((n for n in self.by_name if self.kind(n) == "component"),
                             key=lambda n: (len(self.ancestors(n)), n))
        for component in outer_first:
            inside = self.subtree(component)
            if for_name in inside or not (remaining & inside):
                continue
            sinks = self.sinks(component)
            if sinks and sinks <= remaining:
                remaining -= inside
                folded.add(component)
        return sorted(folded | remaining)

    def after(self, name: str) -> list[str]:
        """What a tree line says it waits for: folded, and without what an enclosing line already says."""
        shown_above = {n for a in self.ancestors(name) for n in self.fold(self.waits_for(a), a)}
        return [n for n in self.fold(self.waits_for(name), name) if n not in shown_above]


def after_text(names: list[str]) -> str:
    if not names:
        return ""
    if len(names) > AFTER_SHOWN:
        names = [*names[: AFTER_SHOWN - 1], f"+{len(names) - AFTER_SHOWN + 1} more (--json)"]
    return f"  (after {', '.join(names)})"
