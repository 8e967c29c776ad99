"""The `cluster` host proofs with the fault and bandwidth steps, recorded on the H200 (docs/host-proof/h200/
neighbour-steps/<run>/): each run's expectation with the checks that read those steps, and its Pods' logs as the
verifier keeps them, every probe's JSON line in the order the Pod ran them."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from components.incluster.expectation import Expectation
from components.verify.host import neighbours, record
from tests.conftest import ROOT

FOLDER = ROOT / "docs" / "host-proof" / "h200" / "neighbour-steps"
RUNS = ("cluster-hami-core", "cluster-mps")
NEIGHBOUR, DISTURBER = "gpushare-proof-a", "gpushare-proof-b"
INSTANT = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def outputs(run: str, folder: Path = FOLDER) -> dict[str, dict[str, Any]]:
    """{pod: {probe: result, …}} as the run's evidence.json holds them."""
    return {p: o for p, o in json.loads((folder / run / "evidence.json").read_text()).items() if p != "alone"}


def logs(results: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The Pods as the verifier keeps them: the library's OOM lines, then each probe's line in the Pod's order."""
    return neighbours.pod_logs(results)


def expectation(run: str, folder: Path = FOLDER) -> Expectation:
    """The run's own expectation, with fault-isolation, which the plan of the runs in FOLDER predates."""
    planned = record._expectation(folder / run, json.loads((folder / run / "verdict.json").read_text()))
    extra = () if "fault-isolation" in planned.checks else ("fault-isolation",)
    return dataclasses.replace(planned, checks=(*planned.checks, *extra))


def run(
    name: str, edit: Callable[[dict[str, dict[str, Any]]], None] | None = None, folder: Path = FOLDER
) -> tuple[Expectation, dict[str, Any]]:
    """(expectation, evidence) of a recorded run, its probe results first edited by `edit` (pod → probe → result)."""
    results = outputs(name, folder)
    if edit is not None:
        edit(results)
    return expectation(name, folder), {"pods": logs(results)}


def shifted(value: Any, seconds: float) -> Any:
    """Every instant in a probe result, `seconds` later: the same run, started at another time."""
    if isinstance(value, dict):
        return {k: shifted(v, seconds) for k, v in value.items()}
    if isinstance(value, list):
        return [shifted(v, seconds) for v in value]
    if isinstance(value, str) and INSTANT.match(value):
        moment = datetime.fromisoformat(value.replace("Z", "+00:00")) + timedelta(seconds=seconds)
        return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return value
