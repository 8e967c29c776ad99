"""A Pod's log read once: each probe's one JSON line, strict and checked against its probe's schema, and the lines
that are HAMi-core's OOM lines. The schemas by the `probe` key a line carries are listed here and nowhere else.
Standard library only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ..probes.process import OOM_LINE
from .allocation_schema import ALLOCATION
from .bandwidth_schema import BANDWIDTH
from .compute_schema import COMPUTE
from .fault_schema import FAULT
from .memory_schema import MEMORY
from .schema import Obj, validate
from .strict import NotJudgeable, loads

RESULTS: dict[str, Obj] = {"memory": MEMORY, "compute": COMPUTE, "allocation": ALLOCATION}
"""The probes whose results the checks judge, by their `probe` key."""
STEPS: dict[str, Obj] = {"fault": FAULT, "bandwidth": BANDWIDTH}
"""The proof Pods' first two steps, which both proof Pods run (workloads.container_command)."""
PROBES: dict[str, Obj] = {**RESULTS, **STEPS}
"""Every probe line a Pod's log may hold that a check reads; a line of another kind is not read."""
_PROBE_KIND = re.compile(r'"probe"\s*:\s*"([A-Za-z_-]+)"')


@dataclass
class Log:
    """What one Pod's log holds: its probes' validated results, the lines that failed (by part), the results that
    parsed as JSON but failed their schema, and HAMi-core's OOM lines."""

    results: dict[str, dict[str, Any]] = field(default_factory=dict)
    problems: dict[str, NotJudgeable] = field(default_factory=dict)
    unjudged: dict[str, dict[str, Any]] = field(default_factory=dict)
    oom_lines: list[str] = field(default_factory=list)


def read_log(name: str, text: str) -> Log:
    """Pod `name`'s log → its Log: each probe's one JSON line (strict, ASCII as json.dumps prints it, validated) under
    the part `<probe>:<name>`, and the other lines that are HAMi-core's OOM lines."""
    log = Log()
    for line in text.splitlines():
        text = line.strip()
        kind = _PROBE_KIND.search(text) if text.startswith("{") else None
        if kind is None:
            if OOM_LINE.search(text):
                log.oom_lines.append(text)
            continue
        probe, part = kind[1], f"{kind[1]}:{name}"
        if probe not in PROBES:
            continue  # another probe's line: no check reads it
        where = f"{name}.{probe}"
        try:
            if not text.isascii():
                raise NotJudgeable(where, "holds characters that are not ASCII: the probes print json.dumps'"
                                   " ASCII, so this line is not theirs (or was not UTF-8)")  # fmt: skip
            value = loads(text, where)
            if not isinstance(value, dict) or value.get("probe") != probe:
                raise NotJudgeable(f"{where}.probe", "the line is no probe result")
            if probe in log.results or part in log.problems:
                raise NotJudgeable(where, "the log holds two results of this probe: a Pod prints one")
            log.unjudged[probe] = value
            log.results[probe] = validate(PROBES[probe], value, where)
        except NotJudgeable as exc:
            log.results.pop(probe, None)
            log.problems.setdefault(part, exc)
    for probe in log.results:
        log.unjudged.pop(probe, None)
    return log
