"""Hypothesis strategies drawn from the evidence's declared schemas (components/incluster/evidence/schema.py):
values of each kind, values of the wrong kind, and the leaves of a recorded value with the kind each one has."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import strategies as st

from components.incluster.evidence.schema import AnyOf, Arr, Bool, Int, Map, Maybe, Num, Obj, Schema, Str, Time

TEXT = st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=12)


def _time() -> st.SearchStrategy[str]:
    base = datetime(2026, 12, 2, tzinfo=UTC)
    return st.integers(0, 10**7).map(lambda ms: (base + timedelta(milliseconds=ms)).isoformat(
        timespec="milliseconds").replace("+00:00", "Z"))  # fmt: skip


def values(schema: Schema) -> st.SearchStrategy[Any]:
    """Values of `schema`'s kinds and bounds (its invariants are the validator's: filter with it)."""
    if isinstance(schema, Int):
        return st.integers(schema.minimum if schema.minimum is not None else -(10**6),
                           schema.maximum if schema.maximum is not None else 10**9)  # fmt: skip
    if isinstance(schema, Num):
        low = 0.0 if schema.positive else (schema.minimum if schema.minimum is not None else -1e6)
        high = schema.maximum if schema.maximum is not None else 1e9
        return st.floats(low, high, allow_nan=False, allow_infinity=False, exclude_min=schema.positive)
    if isinstance(schema, Str):
        if schema.choices:
            return st.sampled_from(schema.choices)
        return st.from_regex(schema.pattern, fullmatch=True) if schema.pattern else TEXT
    if isinstance(schema, Bool):
        return st.booleans()
    if isinstance(schema, Time):
        return _time()
    if isinstance(schema, Maybe):
        return st.none() | values(schema.inner)
    if isinstance(schema, AnyOf):
        return st.one_of(*(values(k) for k in schema.kinds))
    if isinstance(schema, Arr):
        return st.lists(values(schema.item), max_size=3)
    if isinstance(schema, Map):
        return st.dictionaries(TEXT, values(schema.value), max_size=3)
    if isinstance(schema, Obj):
        required = {k: values(f.kind) for k, f in schema.fields.items() if f.required}
        optional = {k: values(f.kind) for k, f in schema.fields.items() if not f.required}
        return st.fixed_dictionaries(required, optional=optional)
    raise TypeError(f"no strategy for {schema!r}")


def wrong(schema: Schema) -> st.SearchStrategy[Any]:
    """Values a leaf of this kind must refuse: an int's float, string or bool; a number's string; a time's local
    time (no zone); a string's number; a bool's 0 or 1."""
    if isinstance(schema, Int):
        return (
            st.floats(allow_nan=False, allow_infinity=False).map(lambda x: float(int(x) if abs(x) < 1e15 else 1))
            | st.integers().map(str)
            | st.booleans()
        )
    if isinstance(schema, Num):
        return st.integers(0, 10**6).map(str) | st.booleans()
    if isinstance(schema, Time):
        return _time().map(lambda t: t[:-1])
    if isinstance(schema, Str):
        return st.integers() | st.booleans()
    if isinstance(schema, Bool):
        return st.sampled_from([0, 1, "true"])
    raise TypeError(f"no wrong value for {schema!r}")


def leaves(schema: Schema, value: Any, path: tuple[Any, ...] = ()) -> list[tuple[tuple[Any, ...], Schema]]:
    """Each scalar leaf of `value` under `schema`: (its path, the kind it must be)."""
    if isinstance(schema, Maybe):
        return [] if value is None else leaves(schema.inner, value, path)
    if isinstance(schema, Obj) and isinstance(value, dict):
        return [leaf for key, spec in schema.fields.items() if key in value
                for leaf in leaves(spec.kind, value[key], (*path, key))]  # fmt: skip
    if isinstance(schema, Arr) and isinstance(value, list):
        return [leaf for i, item in enumerate(value) for leaf in leaves(schema.item, item, (*path, i))]
    if isinstance(schema, Map) and isinstance(value, dict):
        return [leaf for key, item in value.items() for leaf in leaves(schema.value, item, (*path, key))]
    if isinstance(schema, (Int, Num, Str, Bool, Time)):
        return [(path, schema)]
    return []


def put(value: Any, path: tuple[Any, ...], new: Any) -> None:
    for key in path[:-1]:
        value = value[key]
    value[path[-1]] = new
