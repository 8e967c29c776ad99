"""Which planned values the mock engine made up: found through the mocks' registry, shown as unknown."""

from __future__ import annotations

from typing import Any

from components.mocks import AFTER_CREATE, Invented


def _reason(text: str, invented: Invented) -> str | None:
    if text in invented.exact:
        return invented.exact[text]
    reasons = {when for value, when in invented.contained.items() if value in text}
    if not reasons:
        return None
    return AFTER_CREATE if AFTER_CREATE in reasons else reasons.pop()


def unknown_paths(value: Any, invented: Invented, path: str = "") -> dict[str, str]:
    """Each leaf (`a.b[0].c`) whose value contains a made-up one, with the reason it is unknown."""
    if isinstance(value, dict):
        return {
            p: w for k, v in value.items() for p, w in unknown_paths(v, invented, f"{path}.{k}" if path else k).items()
        }
    if isinstance(value, list):
        return {p: w for i, v in enumerate(value) for p, w in unknown_paths(v, invented, f"{path}[{i}]").items()}
    if isinstance(value, str) and (reason := _reason(value, invented)):
        return {path: reason}
    return {}


def mask(value: Any, invented: Invented) -> Any:
    """The value with every made-up part replaced by `(known after create)` or `(looked up in the cloud)`."""
    if isinstance(value, dict):
        return {k: mask(v, invented) for k, v in value.items()}
    if isinstance(value, list):
        return [mask(v, invented) for v in value]
    if not isinstance(value, str):
        return value
    if value in invented.exact:
        return f"({invented.exact[value]})"
    # Longest first, so a made-up value inside another made-up value is replaced whole.
    for made_up, when in sorted(invented.contained.items(), key=lambda item: -len(item[0])):
        value = value.replace(made_up, f"({when})")
    return value
