"""The steps of a `pulumi up` from one plan's state to the next, in the order the engine takes them: what is created,
updated, replaced delete-first or create-first, and which delete reaches its provider.

Read from pulumi v3.259.0 pkg/resource/deploy/step_generator.go and step.go, and for a CLI from CASCADE_CLI on
from pulumi/pulumi#23818 (commit 5cd93859e, after v3.259.0's release commit): a resource whose `deletedWith` target
is replaced is replaced with it, and a delete-first root is marked deleted, so what is deleted with it makes no
call. Both engines are modelled by `cli`; the project targets TARGET_CLI. A model for tests and reviews, not the
engine: where the engine asks a dependent's provider to diff with the replaced resource's outputs unknown
(step_generator.go:3220-3330), the model takes the dependent's own change between the two plans, so the plans must
carry what a real replacement gives (a new instance id, a new cluster id).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from components.plan_view.diff import resource_change

Op = Literal["create", "update", "create-replacement", "delete", "drop"]
"""`delete` calls the provider's Delete; `drop` removes the resource from the state without a call."""
SG = "pulumi pkg/resource/deploy/step_generator.go"
CASCADE_CLI = (3, 260, 0)
"""The first CLI with pulumi/pulumi#23818 (merged 2026-08-21, after the v3.259.0 release commit a05d88f24)."""
TARGET_CLI = (3, 276, 0)
"""The CLI the project is run and documented with (docs/day-two.md)."""


def cli_version(text: str) -> tuple[int, int, int]:
    """`v3.276.0` or `3.259.0` → (3, 276, 0); ValueError naming the form otherwise."""
    parts = text.strip().removeprefix("v").split("-", 1)[0].split(".")
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        raise ValueError(f"a Pulumi CLI version is MAJOR.MINOR.PATCH (`pulumi version`), got {text!r}")
    return int(parts[0]), int(parts[1]), int(parts[2])


@dataclass(frozen=True)
class Step:
    op: Op
    resource: dict[str, Any]
    """The new resource for a create or update, the old one (its state) for a delete or drop."""
    why: str = ""

    @property
    def name(self) -> str:
        return str(self.resource["name"])

    @property
    def type(self) -> str:
        return str(self.resource["type"])


def _custom(resource: dict[str, Any]) -> bool:
    return not resource["type"].startswith("gpushare:")


def _options(resource: dict[str, Any]) -> dict[str, Any]:
    return resource.get("options") or {}


def _edges(resource: dict[str, Any]) -> set[str]:
    """What a resource depends on as the engine's graph reads it: dependencies, provider, deletedWith, replaceWith
    (pulumi pkg/resource/graph/dependency_graph.go:72-93)."""
    options = _options(resource)
    named = [options.get("provider"), options.get("deletedWith"), *(options.get("replaceWith") or [])]
    return {*resource.get("dependsOn", []), *(n for n in named if n)}


class _Up:
    def __init__(self, old: Sequence[dict[str, Any]], new: Sequence[dict[str, Any]], cli: tuple[int, int, int]):
        self.old, self.new = list(old), list(new)
        self.cascade = cli >= CASCADE_CLI
        self.old_by = {r["name"]: r for r in self.old}
        self.new_by = {r["name"]: r for r in self.new}
        self.steps: list[Step] = []
        self.replaced: set[str] = set()  # sg.replaces
        self.deleted: set[str] = set()  # sg.deletes: what a deletedWith is checked against (step.go:603-612)
        self.pending: set[str] = set()  # sg.pendingDeletes: deleted already by a delete-first chain

    def change(self, old: dict[str, Any], new: dict[str, Any], replacing: set[str]) -> tuple[str, bool, str]:
        """(operation, delete first, why) for one resource, `replacing` the resources replaced so far."""
        options = _options(new)
        delete_first = bool(options.get("deleteBeforeReplace"))
        if options.get("provider") in replacing:
            # A new provider replaces the resource without asking its Diff (step_generator.go:2909-2913): delete
            # first only where the resource says so.
            return "replace", delete_first, f"its provider is replaced ({SG}:2912)"
        if set(options.get("replaceWith") or []) & replacing:
            return "replace", delete_first, f"replaceWith names a replaced resource ({SG}:2893-2903)"
        if self.cascade and options.get("deletedWith") in replacing:
            return "replace", delete_first, f"deletedWith names a replaced resource (pulumi#23818, {SG} diff)"
        found = resource_change(old, new)
        rules = "; ".join(c.replaces for c in found.changes if c.replaces)
        return found.operation, found.delete_first, rules

    def requires_replacement(self, old: dict[str, Any], replace_set: set[str]) -> bool:
        """step_generator.go:3240-3330: a custom resource whose provider or one of whose inputs is replaced."""
        if not _custom(old) or old["name"] not in self.new_by:
            return False
        if _options(old).get("provider") in replace_set:
            return True
        if self.cascade and _options(old).get("deletedWith") in replace_set:
            return True  # pulumi#23818, calculateDependentReplacements
        if not set(old.get("dependsOn", [])) & replace_set:
            return False
        return self.change(old, self.new_by[old["name"]], replace_set)[0] == "replace"

    def delete_first_chain(self, root: dict[str, Any]) -> list[dict[str, Any]]:
        """The dependents a delete-first replacement deletes before the root, in dependency order
        (step_generator.go:2048-2130, calculateDependentReplacements and findResourcesReplacedWith; from
        CASCADE_CLI findDependentCascadeReplacements, which also takes what is deletedWith the root)."""
        start = next(i for i, r in enumerate(self.old) if r["name"] == root["name"])
        dependents, chain, replace_set = {root["name"]}, [], {root["name"]}
        for candidate in self.old[start + 1 :]:
            if not _edges(candidate) & dependents:
                continue
            dependents.add(candidate["name"])
            if self.requires_replacement(candidate, replace_set):
                chain.append(candidate)
                replace_set.add(candidate["name"])

        def cascades(r: dict[str, Any]) -> bool:
            named = _options(r).get("replaceWith") or []
            return root["name"] in named or (self.cascade and _options(r).get("deletedWith") == root["name"])

        with_root = [r for r in self.old if cascades(r) and r not in chain]
        return chain + with_root

    def delete_op(self, old: dict[str, Any]) -> Op:
        """step.go:661-666: retainOnDelete, or a deletedWith resource deleted in this deployment, skips the call."""
        options = _options(old)
        if options.get("retainOnDelete") or options.get("deletedWith") in self.deleted:
            return "drop"
        return "delete"

    def deletes(self, olds: Iterable[dict[str, Any]], why: str) -> None:
        """Delete steps generated together: all are marked deleted before any applies."""
        olds = list(olds)
        self.deleted.update(r["name"] for r in olds)
        self.steps += [Step(self.delete_op(r), r, why) for r in olds]

    def register(self, new: dict[str, Any]) -> None:
        if not _custom(new):  # a component has no provider: nothing of it is created or deleted anywhere
            return
        name = new["name"]
        old = self.old_by.get(name)
        if old is None:
            self.steps.append(Step("create", new))
            return
        if name in self.pending:  # deleted by an earlier chain: only its replacement is left (step_generator.go:2143)
            self.replaced.add(name)
            self.steps.append(Step("create-replacement", new, "deleted first in a replacement chain"))
            return
        operation, delete_first, why = self.change(old, new, self.replaced)
        if operation == "update":
            self.steps.append(Step("update", new, why))
        if operation != "replace":
            return
        self.replaced.add(name)  # step_generator.go:2002: the root is marked replaced
        if delete_first:
            chain = [r for r in self.delete_first_chain(old) if r["name"] not in self.pending]
            self.pending.update(r["name"] for r in chain)
            self.deleted.update(r["name"] for r in chain)  # step_generator.go:2129, before any step applies
            if self.cascade:  # pulumi#23818: and deleted, so what is deletedWith it skips its Delete
                self.deleted.add(name)
            self.steps += [
                Step(self.delete_op(r), r, f"depends on {name}, replaced delete-first") for r in reversed(chain)
            ]
            self.steps.append(Step(self.delete_op(old), old, f"replaced delete-first: {why}"))
            self.pending.add(name)
        self.steps.append(Step("create-replacement", new, why))

    def finish(self) -> None:
        """After every create and update: the old halves of create-first replacements, and what the program no
        longer registers, in reverse dependency order (step_generator.go:2360-2425)."""
        last = [
            r
            for r in reversed(self.old)
            if _custom(r)
            and r["name"] not in self.pending
            and (r["name"] in self.replaced or r["name"] not in self.new_by)
        ]
        self.deletes(last, "replaced create-first, or no longer in the program")


def up(
    old: Sequence[dict[str, Any]], new: Sequence[dict[str, Any]], cli: tuple[int, int, int] = TARGET_CLI
) -> list[Step]:
    """The steps of a `pulumi up` by the CLI `cli` whose state is the plan `old` and whose program registers the
    plan `new`."""
    run = _Up(old, new, cli)
    for resource in new:
        run.register(resource)
    run.finish()
    return run.steps
