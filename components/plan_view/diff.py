"""What a plan changes against another (the base branch's golden plan): per resource, its operation and each
changed value, with lists compared as sets or by each item's name, never by position.

The operation follows the providers' and the engine's rules (replace_rules.py): `create`, `update` (in place),
`replace` (delete first where the provider or deleteBeforeReplace says so), `delete`, or `same`.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from components.plan_view import replace_rules
from components.plan_view.golden import is_file_ref
from components.plan_view.model import operation_of
from components.plan_view.unknowns import pointer

MISSING: Any = type("Missing", (), {"__repr__": lambda self: "(absent)"})()
"""A value one side does not have."""
IDENTITY_KEYS = ("name",)
"""A list of objects that all carry one of these, each different, is matched item by item on it."""
SIGNS = {"create": "+", "update": "~", "replace": "±", "delete": "-", "read": ">", "discard": "-"}


@dataclass
class ValueChange:
    """One changed value: a scalar or text before → after, or the items a list gained and lost."""

    pointer: str
    before: Any = MISSING
    after: Any = MISSING
    added: list[Any] = field(default_factory=list)
    removed: list[Any] = field(default_factory=list)
    replaces: str | None = None
    """The rule by which this change replaces the resource."""

    @property
    def is_list(self) -> bool:
        return self.before is MISSING and self.after is MISSING


@dataclass
class ResourceChange:
    urn: str
    type: str
    name: str
    operation: str
    changes: list[ValueChange] = field(default_factory=list)
    delete_first: bool = False

    @property
    def mark(self) -> str:
        return f"{SIGNS[self.operation]} {self.operation}"

    @property
    def replace_because(self) -> list[dict[str, str]]:
        return [{"path": c.pointer, "rule": c.replaces} for c in self.changes if c.replaces]


@dataclass
class StackDiff:
    stack: str
    against: str
    resources: list[ResourceChange]
    """Every resource of either plan that is not the same, new plan's order first, then the deleted."""
    outputs: list[ValueChange]
    operations: dict[str, str] = field(default_factory=dict)
    """Every resource's operation by urn, `same` included."""

    def counts(self) -> dict[str, int]:
        return dict(Counter(r.operation for r in self.resources))

    def summary(self) -> str:
        """`k3s: 2 to replace, 1 to update`, or `k3s: no change`."""
        counts = self.counts()
        parts = [f"{counts[op]} to {op}" for op in ("replace", "update", "create", "delete") if counts.get(op)]
        if self.outputs:
            parts.append(f"{len(self.outputs)} output{'' if len(self.outputs) == 1 else 's'} changed")
        return f"{self.stack}: {', '.join(parts) or 'no change'}"


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _scalar(value: Any) -> bool:
    return not isinstance(value, dict | list)


def _identity(*sides: list[Any]) -> str | None:
    for key in IDENTITY_KEYS:
        if all(isinstance(i, dict) and isinstance(i.get(key), str) for side in sides for i in side) and all(
            len({i[key] for i in side}) == len(side) for side in sides
        ):
            return key
    return None


def _list_changes(before: list[Any], after: list[Any], path: tuple[str | int, ...]) -> list[ValueChange]:
    key = _identity(before, after)
    if key is not None:
        old = {i[key]: i for i in before}
        new = {i[key]: (index, i) for index, i in enumerate(after)}
        found = [
            ValueChange(
                pointer(path),
                added=[i for i in after if i[key] not in old],
                removed=[i for i in before if i[key] not in new],
            )
        ]
        for name, (index, item) in new.items():
            if name in old:
                found += walk(old[name], item, (*path, index))
    else:
        old_count = Counter(_canonical(i) for i in before)
        new_count = Counter(_canonical(i) for i in after)
        gone, came = old_count - new_count, new_count - old_count
        found = [
            ValueChange(
                pointer(path),
                added=[json.loads(i) for i in came.elements()],
                removed=[json.loads(i) for i in gone.elements()],
            )
        ]
        if not gone and not came and before != after:
            return [ValueChange(pointer(path), before=before, after=after)]  # only the order changed
    return [c for c in found if not c.is_list or c.added or c.removed]


def walk(before: Any, after: Any, path: tuple[str | int, ...] = ()) -> list[ValueChange]:
    """Every changed value between two JSON values."""
    if isinstance(before, dict) and isinstance(after, dict) and not (is_file_ref(before) or is_file_ref(after)):
        found = []
        for key in sorted(set(before) | set(after)):
            found += walk(before.get(key, MISSING), after.get(key, MISSING), (*path, key))
        return found
    if isinstance(before, list) and isinstance(after, list):
        return _list_changes(before, after, path)
    if (before is MISSING and after is MISSING) or (type(before) is type(after) and before == after):
        return []
    return [ValueChange(pointer(path), before=before, after=after)]


def resource_change(old: dict[str, Any] | None, new: dict[str, Any] | None) -> ResourceChange:
    some = new or old
    assert some is not None
    urn = f"{some['type']}::{some['name']}"
    if (some.get("options") or {}).get("read"):
        # A read deletes nothing when it goes: the engine only forgets it (pulumi's `discard`).
        return ResourceChange(urn, some["type"], some["name"], "read" if new is not None else "discard")
    if old is None or new is None:
        return ResourceChange(urn, some["type"], some["name"], "create" if old is None else "delete")
    options = new.get("options") or {}
    ignored = [replace_rules.property_path(p) for p in options.get("ignoreChanges") or []]
    changes = [
        c
        for c in walk(old.get("inputs") or {}, new.get("inputs") or {})
        if not any(replace_rules.under(c.pointer, p) for p in ignored)
    ]
    replace_on = [replace_rules.property_path(p) for p in options.get("replaceOnChanges") or []]
    for change in changes:
        if any(replace_rules.touches(change.pointer, p) for p in replace_on):
            change.replaces = f"replaceOnChanges {options['replaceOnChanges']} ({replace_rules.ENGINE})"
        else:
            change.replaces = replace_rules.replace_rule(
                new["type"], change.pointer, MISSING in (change.before, change.after)
            )
    old_options = old.get("options") or {}
    for key in sorted(set(old_options) | set(options)):
        if old_options.get(key, MISSING) != options.get(key, MISSING):
            change = ValueChange(f"/options{pointer((key,))}", old_options.get(key, MISSING), options.get(key, MISSING))
            if key == "replacementTrigger":
                change.replaces = "replacementTrigger (the engine replaces when its value changes)"
            changes.append(change)
    if old.get("parent") != new.get("parent"):
        changes.append(
            ValueChange(
                "/parent",
                old.get("parent"),
                new.get("parent"),
                replaces="a new parent is a new URN: created anew, the old deleted",
            )
        )
    if not changes:
        return ResourceChange(urn, new["type"], new["name"], "same")
    replaced = any(c.replaces for c in changes)
    named = bool(((new.get("inputs") or {}).get("metadata") or {}).get("name"))
    # pulumi-kubernetes provider.go:1652-1666: a named object replaced under the same name is deleted first.
    k8s_same_name = (
        new["type"].startswith("kubernetes:")
        and named
        and not any(c.pointer in ("/metadata/name", "/metadata/namespace") for c in changes)
    )
    delete_first = replaced and (bool(options.get("deleteBeforeReplace")) or k8s_same_name)
    return ResourceChange(urn, new["type"], new["name"], "replace" if replaced else "update", changes, delete_first)


def compare(old: dict[str, Any], new: dict[str, Any], against: str) -> StackDiff:
    """`new` (a plan's contract, made-up values masked) against `old` (a golden plan, read back)."""
    old_by = {f"{r['type']}::{r['name']}": r for r in old.get("resources", [])}
    new_by = {f"{r['type']}::{r['name']}": r for r in new.get("resources", [])}
    changes = [resource_change(old_by.get(u), r) for u, r in new_by.items()]
    changes += [resource_change(r, None) for u, r in old_by.items() if u not in new_by]
    outputs = walk(old.get("outputs") or {}, new.get("outputs") or {})
    # A read runs every time, changing nothing: listed in `operations`, not among the changes.
    return StackDiff(
        new.get("stack", ""),
        against,
        [c for c in changes if c.operation not in ("same", "read")],
        outputs,
        {c.urn: c.operation for c in changes},
    )


def annotate(document: dict[str, Any], diff: StackDiff) -> dict[str, Any]:
    """The contract with each resource's operation against `diff.against`, and the resources it deletes."""
    by_urn = {c.urn: c for c in diff.resources}
    for resource in document["resources"]:
        change = by_urn.get(resource["urn"])
        resource["operation"] = diff.operations.get(resource["urn"], operation_of(resource))
        resource["changed"] = [c.pointer for c in change.changes] if change else []
        resource["replaceBecause"] = change.replace_because if change else []
    document["against"] = diff.against
    document["deleted"] = [
        {"urn": c.urn, "type": c.type, "name": c.name} for c in diff.resources if c.operation == "delete"
    ]
    return document
