"""The evidence's declared shape: a few schema kinds, the check of a value against one, and its JSON Schema.

A schema is declared once, in one style: an `Obj` of `Field`s whose `Invariant`s each name a `Rule`, built here
(`in_order`, `all_of`) or beside the schema (memory_schema.py, compute_schema.py, fault_schema.py, bandwidth_schema.py
and what they share, probe_fields.py; object_schema.py for the API objects). It serves three readers: `validate`
here, which returns the value checked (types: an int is never a float, a bool or a string; units; bounds; invariants
that relate fields), `json_schema` for the committed files under docs/evidence/ (python -m
components.verify.evidence_schema --write), and the tests' generators. Standard library only.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

from .strict import NotJudgeable, instant, shown, text


class Schema:
    """One kind of value. `check` returns the value as checked (a fresh copy for objects and lists)."""

    def check(self, value: Any, where: str) -> Any:
        raise NotImplementedError

    def json(self) -> dict[str, Any]:
        raise NotImplementedError


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


@dataclass(frozen=True)
class Int(Schema):
    """A JSON integer: never a float (1.0), a bool or a string."""

    minimum: int | None = None
    maximum: int | None = None
    unit: str | None = None

    def check(self, value: Any, where: str) -> Any:
        if isinstance(value, bool) or not isinstance(value, int):
            raise NotJudgeable(where, f"{shown(value)} is not an integer{_in(self.unit)}")
        _bounds(value, where, self.minimum, self.maximum, False, self.unit)
        return value

    def json(self) -> dict[str, Any]:
        return {"type": "integer", **_bounds_json(self.minimum, self.maximum, False), **_unit(self.unit)}


@dataclass(frozen=True)
class Num(Schema):
    """A finite JSON number; `positive` excludes 0 (a rate)."""

    minimum: float | None = None
    maximum: float | None = None
    positive: bool = False
    unit: str | None = None

    def check(self, value: Any, where: str) -> Any:
        if not _number(value) or not math.isfinite(value):
            raise NotJudgeable(where, f"{shown(value)} is not a finite number{_in(self.unit)}")
        _bounds(value, where, 0 if self.positive else self.minimum, self.maximum, self.positive, self.unit)
        return value

    def json(self) -> dict[str, Any]:
        low = 0 if self.positive else self.minimum
        return {"type": "number", **_bounds_json(low, self.maximum, self.positive), **_unit(self.unit)}


def _in(unit: str | None) -> str:
    return f" (in {unit})" if unit else ""


def _unit(unit: str | None) -> dict[str, Any]:
    return {"description": f"in {unit}"} if unit else {}


def _bounds(value: float, where: str, low: float | None, high: float | None, exclusive: bool, unit: str | None) -> None:
    unit_text = f" {unit}" if unit else ""
    if low is not None and (value <= low if exclusive else value < low):
        raise NotJudgeable(where, f"{value}{unit_text} is {'not above' if exclusive else 'below'} {low}")
    if high is not None and value > high:
        raise NotJudgeable(where, f"{value}{unit_text} is above {high}")


def _bounds_json(low: float | None, high: float | None, exclusive: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if low is not None:
        out["exclusiveMinimum" if exclusive else "minimum"] = low
    if high is not None:
        out["maximum"] = high
    return out


@dataclass(frozen=True)
class Str(Schema):
    """UTF-8 text; `pattern` (a regular expression both Python and JSON Schema read) or `choices` restrict it."""

    pattern: str | None = None
    choices: tuple[str, ...] = ()

    def check(self, value: Any, where: str) -> Any:
        text(value, where)
        if self.choices and value not in self.choices:
            raise NotJudgeable(where, f"{shown(value)} is none of {', '.join(self.choices)}")
        if self.pattern and not re.search(self.pattern, value):
            raise NotJudgeable(where, f"{shown(value)} does not match {self.pattern}")
        return value

    def json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "string"}
        if self.choices:
            out["enum"] = list(self.choices)
        if self.pattern:
            out["pattern"] = self.pattern
        return out


@dataclass(frozen=True)
class Bool(Schema):
    def check(self, value: Any, where: str) -> Any:
        if not isinstance(value, bool):
            raise NotJudgeable(where, f"{shown(value)} is not true or false")
        return value

    def json(self) -> dict[str, Any]:
        return {"type": "boolean"}


TIME_PATTERN = r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$"


@dataclass(frozen=True)
class Time(Schema):
    """An RFC 3339 time with its zone: one instant (strict.instant reads it)."""

    def check(self, value: Any, where: str) -> Any:
        instant(value, where)
        return value

    def json(self) -> dict[str, Any]:
        return {"type": "string", "format": "date-time", "pattern": TIME_PATTERN}


@dataclass(frozen=True)
class Maybe(Schema):
    """null, or the inner kind."""

    inner: Schema

    def check(self, value: Any, where: str) -> Any:
        return None if value is None else self.inner.check(value, where)

    def json(self) -> dict[str, Any]:
        return {"anyOf": [self.inner.json(), {"type": "null"}]}


@dataclass(frozen=True)
class AnyOf(Schema):
    """The first kind the value fits (a Kubernetes quantity is a string or a number)."""

    kinds: tuple[Schema, ...]

    def check(self, value: Any, where: str) -> Any:
        reasons = []
        for kind in self.kinds:
            try:
                return kind.check(value, where)
            except NotJudgeable as exc:
                reasons.append(exc.why)
        raise NotJudgeable(where, " and ".join(reasons))

    def json(self) -> dict[str, Any]:
        return {"anyOf": [k.json() for k in self.kinds]}


@dataclass(frozen=True)
class Arr(Schema):
    item: Schema

    def check(self, value: Any, where: str) -> Any:
        if not isinstance(value, list):
            raise NotJudgeable(where, f"{shown(value)} is not a list")
        return [self.item.check(v, f"{where}[{i}]") for i, v in enumerate(value)]

    def json(self) -> dict[str, Any]:
        return {"type": "array", "items": self.item.json()}


@dataclass(frozen=True)
class Map(Schema):
    """An object whose keys are free (labels, env): every value of one kind."""

    value: Schema

    def check(self, value: Any, where: str) -> Any:
        if not isinstance(value, Mapping):
            raise NotJudgeable(where, f"{shown(value)} is not an object")
        return {text(k, where): self.value.check(v, f"{where}.{k}") for k, v in value.items()}

    def json(self) -> dict[str, Any]:
        return {"type": "object", "additionalProperties": self.value.json()}


Rule = Callable[[Mapping[str, Any]], "tuple[str, str] | None"]
"""An invariant's test: the checked object → None, or (the field that breaks it, why)."""


def at(value: Any, path: str) -> Any:
    """The value at a dotted path (`phases.hold.started_at`); None where any step of it is missing."""
    for key in path.split("."):
        value = value.get(key) if isinstance(value, Mapping) else None
    return value


def in_order(*chains: Sequence[str], slack: float = 0.0) -> Rule:
    """The instants at each chain's paths, those present, never run backwards (by more than `slack` seconds)."""

    def rule(r: Mapping[str, Any]) -> tuple[str, str] | None:
        for chain in chains:
            present = [(path, at(r, path)) for path in chain if at(r, path) is not None]
            for (a, x), (b, y) in pairwise(present):
                if instant(y, b) < instant(x, a) - slack:
                    return b, f"{y} is before {a} {x}: the probe's times run backwards"
        return None

    return rule


def all_of(*rules: Rule) -> Rule:
    """Each rule in turn: the first one broken."""

    def rule(r: Mapping[str, Any]) -> tuple[str, str] | None:
        for each in rules:
            broken = each(r)
            if broken:
                return broken
        return None

    return rule


@dataclass(frozen=True)
class Invariant:
    """What relates fields of one object; `text` is the sentence docs/verification.md and the JSON Schema carry."""

    name: str
    text: str
    rule: Rule


@dataclass(frozen=True)
class Field:
    kind: Schema
    required: bool = True
    doc: str = ""


@dataclass(frozen=True)
class Obj(Schema):
    """An object with declared keys: a missing required one, an unknown one (unless `extra` types them), a key of
    the wrong kind, or a broken invariant is refused."""

    fields: Mapping[str, Field]
    extra: Schema | None = None
    invariants: Sequence[Invariant] = ()
    doc: str = ""

    def check(self, value: Any, where: str) -> Any:
        if not isinstance(value, Mapping):
            raise NotJudgeable(where, f"{shown(value)} is not an object")
        out: dict[str, Any] = {}
        for key, spec in self.fields.items():
            if key in value:
                out[key] = spec.kind.check(value[key], f"{where}.{key}")
            elif spec.required:
                raise NotJudgeable(f"{where}.{key}", "missing")
        unknown = sorted(str(k) for k in value if k not in self.fields)
        if unknown and self.extra is None:
            raise NotJudgeable(where, f"unknown keys {', '.join(map(shown, unknown))}: not what the probe prints")
        for key in unknown:
            out[key] = self.extra.check(value[key], f"{where}.{key}") if self.extra else value[key]
        for invariant in self.invariants:
            broken = invariant.rule(out)
            if broken:
                path, why = broken
                raise NotJudgeable(f"{where}.{path}" if path else where, why)
        return out

    def json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "type": "object",
            "properties": {k: {**f.kind.json(), **({"description": f.doc} if f.doc else {})}
                           for k, f in self.fields.items()},
            "required": [k for k, f in self.fields.items() if f.required],
            "additionalProperties": self.extra.json() if self.extra else False,
        }  # fmt: skip
        if self.doc:
            out["description"] = self.doc
        if self.invariants:
            out["$comment"] = "invariants (checked by the judge): " + "; ".join(
                f"{i.name}: {i.text}" for i in self.invariants
            )
        return out


def validate(schema: Schema, value: Any, where: str) -> Any:
    """`value` checked against `schema`: the checked copy, or NotJudgeable naming the field and why."""
    return schema.check(value, where)


def invariants(schema: Schema) -> list[Invariant]:
    """Every invariant declared anywhere in `schema` (nested objects too), once each."""
    found: list[Invariant] = []

    def walk(kind: Schema) -> None:
        if isinstance(kind, Obj):
            found.extend(i for i in kind.invariants if i not in found)
            for spec in kind.fields.values():
                walk(spec.kind)
            if kind.extra:
                walk(kind.extra)
        elif isinstance(kind, (Maybe,)):
            walk(kind.inner)
        elif isinstance(kind, (Arr,)):
            walk(kind.item)
        elif isinstance(kind, Map):
            walk(kind.value)
        elif isinstance(kind, AnyOf):
            for k in kind.kinds:
                walk(k)

    walk(schema)
    return found
