"""Reading what the verifier collected, strictly: JSON, text, instants and paths, each refused by name when odd.

A value that fails is `NotJudgeable(field, why)`: "not judgeable: <field>: <why>", which every check that reads the
field reports as its reason. Nothing here guesses: duplicate JSON keys, NaN and Infinity, bytes that are not UTF-8,
lone surrogates and times without a zone are refused, never resolved. Standard library only; pure functions.
"""

from __future__ import annotations

import json
import math
import posixpath
import re
from collections.abc import Iterable
from datetime import datetime, timedelta, timezone
from typing import Any


class NotJudgeable(ValueError):
    """A field of the evidence that no check may read: which one, and why."""

    def __init__(self, field: str, why: str) -> None:
        super().__init__(f"not judgeable: {field}: {why}")
        self.field = field
        self.why = why


def shown(value: Any, size: int = 80) -> str:
    """A value as a reason may quote it: ASCII only (a lone surrogate never reaches a verdict), cut to `size`."""
    text = ascii(value)
    return text if len(text) <= size else text[: size - 1] + "…"


def text(value: Any, field: str) -> str:
    """A string that UTF-8 can carry (no lone surrogate, which `json.loads` makes of `\\udc80`)."""
    if not isinstance(value, str):
        raise NotJudgeable(field, f"{shown(value)} is not a string")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise NotJudgeable(field, f"holds a lone surrogate at character {exc.start}: not UTF-8 text") from None
    return value


def _strings(value: Any, field: str) -> None:
    """Every string of a parsed JSON value (keys too) through `text`."""
    if isinstance(value, str):
        text(value, field)
    elif isinstance(value, dict):
        for key, item in value.items():
            text(key, field)
            _strings(item, f"{field}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _strings(item, f"{field}[{i}]")


def loads(data: str | bytes, field: str) -> Any:
    """JSON text → its value, refusing what `json.loads` would silently take: a key given twice (it keeps the
    last), NaN and ±Infinity (not JSON), bytes that are not UTF-8 and lone surrogates."""
    if isinstance(data, (bytes, bytearray)):
        try:
            data = bytes(data).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise NotJudgeable(field, f"byte {exc.start} is not UTF-8") from None
    text(data, field)

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in items:
            if key in out:
                raise NotJudgeable(field, f"the key {shown(key)} appears twice: which one is meant is not known")
            out[key] = value
        return out

    def constant(name: str) -> Any:
        raise NotJudgeable(field, f"{name} is not a JSON number")

    try:
        value = json.loads(data, object_pairs_hook=pairs, parse_constant=constant)
    except json.JSONDecodeError as exc:
        raise NotJudgeable(field, f"not JSON ({exc.msg} at character {exc.pos})") from None
    _strings(value, field)
    return value


def finite(value: Any, field: str) -> float:
    """A JSON number that is a number: not a bool, not NaN, not infinite."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise NotJudgeable(field, f"{shown(value)} is not a number")
    if not math.isfinite(value):
        raise NotJudgeable(field, f"{shown(value)} is not a finite number")
    return float(value)


_RFC3339 = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:([Zz])|([+-])(\d{2}):(\d{2}))$"
)


def instant(value: Any, field: str) -> float:
    """An RFC 3339 time (`2026-08-20T09:02:10.123Z`, `…+02:00`) → seconds since the epoch, UTC.

    A time with no zone names no instant and is refused; the same instant in two zones is one float."""
    match = _RFC3339.match(value) if isinstance(value, str) else None
    if match is None:
        raise NotJudgeable(field, f"{shown(value)} is not an RFC 3339 time with a zone")
    year, month, day, hour, minute, second = (int(match[i]) for i in range(1, 7))
    fraction = float("0." + match[7]) if match[7] else 0.0
    zone = timezone.utc  # noqa: UP017 (the judge runs on GPU hosts' older Pythons too)
    if match[9]:
        offset = timedelta(hours=int(match[10]), minutes=int(match[11]))
        zone = timezone(offset if match[9] == "+" else -offset)
    try:
        moment = datetime(year, month, day, hour, minute, second, tzinfo=zone)
    except ValueError as exc:
        raise NotJudgeable(field, f"{shown(value)} is no date: {exc}") from None
    return moment.timestamp() + fraction


def normal_path(path: str) -> str:
    """A path as the kernel resolves its spelling: slashes collapsed (a leading `//` too, which Linux reads as
    `/`), `.` dropped, `..` taken back (posixpath.normpath). `/dev//nvidia0` and `/dev/./nvidia0` are `/dev/nvidia0`."""
    return posixpath.normpath("/" + path.lstrip("/") if path.startswith("/") else path)


def backsteps(path: str) -> bool:
    """Whether the path has a `..` segment (the API server refuses one in a hostPath: validatePathNoBacksteps)."""
    return ".." in path.split("/")


def duplicates(values: Iterable[Any]) -> list[Any]:
    """The values that occur more than once, in the order they first repeat."""
    seen: set[Any] = set()
    repeated: list[Any] = []
    for value in values:
        if value in seen and value not in repeated:
            repeated.append(value)
        seen.add(value)
    return repeated
