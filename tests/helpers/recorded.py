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
    """Make the judged shape run at `share` of the baseline, consistently: its figures scaled (scale_shape), the
    reported share their quotient; None drops the baseline (there is nothing to divide by)."""
    judged = result.get("judged_shape") or "short_many"
    if share is None:
        result["baseline"] = None
        result["share"] = dict.fromkeys(result.get("share") or {judged: None})
        return
    shape = result["shapes"][judged]
    scale_shape(shape, result["baseline"]["shapes"][judged]["mean_per_s"] * share / shape["mean_per_s"])
    result["share"][judged] = round(share, 3)


def set_compute_window(result: dict[str, Any], seconds: int) -> None:
    """The judged shape measured over `seconds` after its warm-up: the probe's window, the shape's, and the
    figures of that shorter timeline (its mean, extremes and launches)."""
    import math

    judged = result["shapes"][result.get("judged_shape") or "short_many"]
    kept = judged["timeline_per_s"][: int(judged["warmup_s"] + seconds)]
    inside = kept[int(judged["warmup_s"]) :]
    launches = judged["launches"] * sum(kept) / sum(judged["timeline_per_s"])
    result["window_s"] = judged["window_s"] = seconds
    judged.update(timeline_per_s=kept, mean_per_s=round(sum(inside) / seconds, 2), per_s_min=min(inside),
                  per_s_max=max(inside), launches=max(1, math.ceil(launches)))  # fmt: skip


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


# ---------------------------------------------------------------- edits that keep a result consistent with itself
# The record refuses a result whose figures contradict each other (its schema's invariants): an edit meant to
# reach one check's own judgement changes every figure the probe derives from the one it changes.


def set_oom_lines(result: dict[str, Any], lines: list[str]) -> None:
    """The probe's OOM lines, with the count its `enforcement` keeps."""
    result["hami_oom_lines"] = list(lines)
    if isinstance(result.get("enforcement"), dict):
        result["enforcement"]["oom_lines"] = len(lines)


def set_largest(result: dict[str, Any], mib: int) -> None:
    """The largest single allocation, with the context charge the probe derives from it (quota less largest)."""
    result["largest_alloc_mib"] = mib
    expected = result.get("expected_limit_mib")
    result["context_overhead_mib"] = expected - mib if expected is not None and mib <= expected else None


def unlimited_view(result: dict[str, Any], card_mib: int, largest: int) -> None:
    """What a process no quota holds sees and takes: the whole card in both views, `largest` in one allocation."""
    result.update(visible_total_mib=card_mib, visible_free_mib=card_mib, nvml_total_mib=card_mib,
                  nvml_free_mib=card_mib)  # fmt: skip
    set_largest(result, largest)
    result["findings"] = []  # nothing to get around where no quota held (memory_findings.all_findings)


def shift_times(result: dict[str, Any], seconds: float) -> None:
    """Every time the result holds, `seconds` later: the same run, at another time."""
    from datetime import UTC, datetime, timedelta

    def later(value: str) -> str:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00")) + timedelta(seconds=seconds)
        return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")

    for key in ("started_at", "ended_at", "keep_holding_since"):
        if result.get(key):
            result[key] = later(result[key])
    hold = (result.get("phases") or {}).get("hold")
    if hold:
        hold["started_at"], hold["ended_at"] = later(hold["started_at"]), later(hold["ended_at"])


def as_another_process(result: dict[str, Any], seconds: float = 60) -> dict[str, Any]:
    """A copy of a result as another process would print it: later, on its own cache file, its own OOM lines."""
    import copy

    other = copy.deepcopy(result)
    shift_times(other, seconds)
    cache = (other.get("env") or {}).get("CUDA_DEVICE_MEMORY_SHARED_CACHE")
    if cache:
        other["env"]["CUDA_DEVICE_MEMORY_SHARED_CACHE"] = cache + ".other"
    set_oom_lines(other, [])
    return other


def scale_shape(shape: dict[str, Any], factor: float) -> None:
    """One kernel shape `factor` times as fast: its timeline, mean, extremes and launches alike."""
    import math

    shape["timeline_per_s"] = [round(x * factor, 1) for x in shape["timeline_per_s"]]
    for key in ("mean_per_s", "per_s_min", "per_s_max", "per_s_stdev"):
        if shape.get(key) is not None:
            shape[key] = round(shape[key] * factor, 2)
    shape["launches"] = math.ceil(shape["launches"] * factor)


def unreached(result: dict[str, Any], error: str) -> dict[str, Any]:
    """A copy of a memory result as the probe prints it when it reached no GPU (memory.new_result, then the error)."""
    import copy

    out = copy.deepcopy(result)
    out.update(ok=False, error=error, mechanism=None, gpu_uuid=None, gpu_name=None, nvml_total_mib=None,
               nvml_free_mib=None, visible_total_mib=None, visible_free_mib=None, largest_alloc_mib=None,
               search_calls=0, context_overhead_mib=None, own_context_mib=None, findings=[], limit_enforced=None,
               enforcement=None, keep_holding_since=None, cuda_error=None,
               phases={"hold": None, "sweep": [], "chunks": None})  # fmt: skip
    set_oom_lines(out, [])
    return out
