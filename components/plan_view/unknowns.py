"""Which planned values the mock engine made up: found through the mocks' registry, shown as unknown.

Paths are JSON pointers (RFC 6901: `/metadata/labels/kai.scheduler~1queue`), unambiguous where keys hold dots.
"""

from __future__ import annotations

from typing import Any

import ahocorasick

from components.mocks import AFTER_CREATE, Invented

_MATCHERS: dict[int, tuple[Invented, int, Any]] = {}


def pointer(parts: list[str | int] | tuple[str | int, ...]) -> str:
    """The RFC 6901 JSON pointer of a path: `~` as `~0`, `/` as `~1`."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def _matcher(invented: Invented) -> Any:
    """An Aho-Corasick automaton over every made-up value: one pass per string finds them all, longest first."""
    cached = _MATCHERS.get(id(invented))
    if cached and cached[0] is invented and cached[1] == len(invented.contained):
        return cached[2]
    automaton = ahocorasick.Automaton()
    for value, when in invented.contained.items():
        automaton.add_word(value, (value, when))
    if len(automaton):
        automaton.make_automaton()
    if len(_MATCHERS) > 8:
        _MATCHERS.clear()
    _MATCHERS[id(invented)] = (invented, len(invented.contained), automaton)
    return automaton


def _found(text: str, invented: Invented) -> list[tuple[int, str, str]]:
    """(end index, value, reason) of each made-up value in `text`, longest and leftmost, not overlapping."""
    automaton = _matcher(invented)
    if not len(automaton):
        return []
    return [(end, value, when) for end, (value, when) in automaton.iter_long(text)]


def _reason(text: str, invented: Invented) -> str | None:
    if text in invented.exact:
        return invented.exact[text]
    reasons = {when for _, _, when in _found(text, invented)}
    if not reasons:
        return None
    return AFTER_CREATE if AFTER_CREATE in reasons else reasons.pop()


def unknown_paths(value: Any, invented: Invented, path: tuple[str | int, ...] = ()) -> dict[str, str]:
    """Each leaf's JSON pointer whose value contains a made-up one, with the reason it is unknown."""
    if isinstance(value, dict):
        return {p: w for k, v in value.items() for p, w in unknown_paths(v, invented, (*path, k)).items()}
    if isinstance(value, list):
        return {p: w for i, v in enumerate(value) for p, w in unknown_paths(v, invented, (*path, i)).items()}
    if isinstance(value, str) and (reason := _reason(value, invented)):
        return {pointer(path): reason}
    return {}


def mask(value: Any, invented: Invented) -> Any:
    """The value with every made-up part replaced by its reason: `(known after create)`, `(looked up in the cloud)`,
    `(read from the cluster at up)`."""
    if isinstance(value, dict):
        return {k: mask(v, invented) for k, v in value.items()}
    if isinstance(value, list):
        return [mask(v, invented) for v in value]
    if not isinstance(value, str):
        return value
    if value in invented.exact:
        return f"({invented.exact[value]})"
    found = _found(value, invented)
    if not found:
        return value
    parts, start = [], 0
    for end, made_up, when in found:
        begin = end - len(made_up) + 1
        parts += [value[start:begin], f"({when})"]
        start = end + 1
    return "".join([*parts, value[start:]])
