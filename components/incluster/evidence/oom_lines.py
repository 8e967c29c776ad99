"""A Pod's HAMi-core OOM lines, as the record reads them. Standard library only."""

from __future__ import annotations

from typing import NamedTuple


class OomLines(NamedTuple):
    """A Pod's HAMi-core OOM lines as the record reads them (Record.oom_lines)."""

    in_json: list[str]
    """The lines its memory probe's JSON holds (its own process's and its children's, under provenance)."""
    in_log: list[str]
    """The lines its log holds beside the probe's JSON (the library's own, replayed by the probe)."""
    own_pid: int | None
    """The pid the probe reports for itself (provenance), else None."""
    foreign: int
    """How many lines named a process that is neither the probe nor its child (not counted)."""
    parsed: list[dict[str, int]]
    """`in_json` parsed: each line's device, usage + request and limit, in bytes."""
    own: list[dict[str, int]]
    """The lines of the probe's own process parsed (its pid; before provenance, the first line's pid and thread)."""
