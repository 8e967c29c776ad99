"""The plan as a tree and a dependency graph: kinds, children, and "after" lists folded for reading."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from components.plan_view.model import Plan

AFTER_SHOWN = 6
"""An "after" list longer than this is cut, with a pointer to the full list in --json."""


@dataclass
class Graph:
    """Parent/child and dependency relations of one plan, by resource name."""

    plan: Plan
    _memo: dict[tuple[str, str], Any] = field(default_factory=dict, repr=False)
    """Per-name answers: each is asked once per line of a tree, and a 5,000-node plan has 5,000 lines."""

    def _cached(self, what: str, name: str, compute: Any) -> Any:
        key = (what, name)
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]

    @cached_property
    def by_name(self) -> dict[str, dict[str, Any]]:
        return {r["name"]: r for r in self.plan.resources}

    @cached_property
    def children(self) -> dict[str | None, list[dict[str, Any]]]:
        found: dict[str | None, list[dict[str, Any]]] = {}
        for r in self.plan.resources:
            found.setdefault(r["parent"], []).append(r)
        return found

    @cached_property
    def kinds(self) -> dict[str, str]:
        return {r["name"]: self.plan.kind(r) for r in self.plan.resources}

    def kind(self, name: str) -> str:
        return self.kinds[name]

    def subtree(self, name: str) -> set[str]:
        return set(self._subtree(name))

    def _subtree(self, name: str) -> frozenset[str]:
        def compute() -> frozenset[str]:
            return frozenset({name}).union(*(self._subtree(c["name"]) for c in self.children.get(name, [])))

        return self._cached("subtree", name, compute)

    def ancestors(self, name: str) -> list[str]:
        """From the parent up to the root."""

        def compute() -> list[str]:
            parent = self.by_name[name]["parent"]
            return [] if parent is None else [parent, *self.ancestors(parent)]

        return list(self._cached("ancestors", name, compute))

    def sinks(self, component: str) -> set[str]:
        """Resources of a component that nothing else inside it waits for: when they exist, all of it does."""

        def compute() -> frozenset[str]:
            inside = self._subtree(component)
            real = {n for n in inside if self.kind(n) != "component"}
            waited_on = {d for n in real for d in self.by_name[n]["dependsOn"] if d in inside}
            return frozenset(real - waited_on)

        return set(self._cached("sinks", component, compute))

    def waits_for(self, name: str) -> set[str]:
        """A resource's dependencies; for a component, what every resource inside it waits for outside it."""
        own = set(self.by_name[name]["dependsOn"])
        if self.kind(name) != "component":
            return own

        def compute() -> frozenset[str]:
            inside = self._subtree(name)
            real = [n for n in inside if self.kind(n) != "component"]
            if not real:
                return frozenset(own)
            shared = set.intersection(*(set(self.by_name[n]["dependsOn"]) - inside for n in real))
            return frozenset(own | shared)

        return set(self._cached("waits_for", name, compute))

    @cached_property
    def _outer_first(self) -> list[str]:
        return sorted(
            (n for n in self.by_name if self.kind(n) == "component"), key=lambda n: (len(self.ancestors(n)), n)
        )

    def fold(self, names: set[str], for_name: str) -> list[str]:
        """Dependencies with each whole component (all its sinks) replaced by the component's name."""
        remaining = set(names)
        folded: set[str] = set()
        for component in self._outer_first:
            if not remaining:
                break
            inside = self._subtree(component)
            if for_name in inside or not (remaining & inside):
                continue
            sinks = self.sinks(component)
            if sinks and sinks <= remaining:
                remaining -= inside
                folded.add(component)
        return sorted(folded | remaining)

    def after(self, name: str) -> list[str]:
        """What a tree line says it waits for: folded, and without what an enclosing line already says."""
        shown_above = {n for a in self.ancestors(name) for n in self._folded_waits(a)}
        return [n for n in self._folded_waits(name) if n not in shown_above]

    def _folded_waits(self, name: str) -> list[str]:
        return list(self._cached("folded", name, lambda: tuple(self.fold(self.waits_for(name), name))))


def after_text(names: list[str]) -> str:
    if not names:
        return ""
    if len(names) > AFTER_SHOWN:
        names = [*names[: AFTER_SHOWN - 1], f"+{len(names) - AFTER_SHOWN + 1} more (--json)"]
    return f"  (after {', '.join(names)})"
