"""Recorded proof runs (tests/fixtures): the expectation, typed, and the evidence the verifier collected."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from components.incluster.expectation import Expectation
from tests.helpers.real_fixtures import probe_log, real_outputs

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def load_raw(stack: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The expectation's wire form and the evidence of `stack`'s recorded run."""
    return (
        json.loads((FIXTURES / f"{stack}_expect.json").read_text()),
        json.loads((FIXTURES / f"{stack}_evidence.json").read_text()),
    )


def load(stack: str) -> tuple[Expectation, dict[str, Any]]:
    raw, evidence = load_raw(stack)
    return Expectation.parse(raw), evidence


def edit_probe(
    evidence: dict[str, Any], pod: str, change: Callable[[dict[str, Any]], None], probe: str = "memory"
) -> None:
    """Rewrite one probe JSON line inside a recorded Pod log."""
    lines = evidence["pods"][pod]["logs"].splitlines()
    for i, line in enumerate(lines):
        if line.startswith("{") and json.loads(line).get("probe") == probe:
            result = json.loads(line)
            change(result)
            lines[i] = json.dumps(result)
    evidence["pods"][pod]["logs"] = "\n".join(lines) + "\n"


def probe_line(evidence: dict[str, Any], pod: str, probe: str = "memory") -> dict[str, Any]:
    """The recorded probe JSON of one Pod."""
    for line in evidence["pods"][pod]["logs"].splitlines():
        if line.startswith("{") and json.loads(line).get("probe") == probe:
            return json.loads(line)
    raise LookupError(f"no {probe} probe line in {pod}")


def set_compute_share(result: dict[str, Any], share: float | None) -> None:
    """Make the judged shape run at `share` of the baseline, consistently: its mean and per-second timeline scaled,
    the reported share their quotient; None drops the baseline (there is nothing to divide by)."""
    judged = result.get("judged_shape") or "short_many"
    if share is None:
        result["baseline"] = None
        result["share"] = dict.fromkeys(result.get("share") or {judged: None})
        return
    shape = result["shapes"][judged]
    mean = result["baseline"]["shapes"][judged]["mean_per_s"] * share
    factor = mean / shape["mean_per_s"]
    shape["timeline_per_s"] = [round(x * factor, 1) for x in shape["timeline_per_s"]]
    shape["mean_per_s"] = round(mean, 2)
    result["share"][judged] = round(share, 3)


def set_compute_window(result: dict[str, Any], seconds: float) -> None:
    """Set the measured window of the judged shape, in whichever form the compute probe reported it."""
    result["seconds"] = result["window_s"] = seconds
    judged = (result.get("shapes") or {}).get(result.get("judged_shape") or "short_many")
    if isinstance(judged, dict):
        judged["window_s"] = seconds


def real_run(stack: str, record: str) -> tuple[Expectation, dict[str, Any]]:
    """`stack`'s recorded cluster objects with every proof Pod's log taken from the H200 host-proof `record`
    (tests/fixtures/real/h200/<record>), unedited but for NVIDIA_VISIBLE_DEVICES: the host's index `0` becomes
    the card's UUID, as the device plugin names it in a Pod."""
    expect, evidence = load(stack)
    outputs = real_outputs(record)
    uuid = next(iter(outputs.values()))["memory"]["gpu_uuid"]
    for pod, out in outputs.items():
        for result in out.values():
            if (result.get("env") or {}).get("NVIDIA_VISIBLE_DEVICES") == "0":
                result["env"]["NVIDIA_VISIBLE_DEVICES"] = uuid
        evidence["pods"][pod]["logs"] = probe_log(out)
    return expect, evidence
