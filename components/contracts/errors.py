"""The one error a user's input raises, wherever it is found: the full key, and the fix."""

from __future__ import annotations


class InputError(ValueError):
    """An input that cannot work: `key` is the full config key, the message says the fix."""

    def __init__(self, key: str, problem: str):
        self.key = key
        self.problem = problem
        super().__init__(f"{key}: {problem}")


def input_error_in(err: BaseException) -> InputError | None:
    """The InputError behind `err`, however deep Pulumi's output machinery wrapped it, or None."""
    seen: set[int] = set()
    current: BaseException | None = err
    while current is not None and id(current) not in seen:
        if isinstance(current, InputError):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None
