"""Parsers for what the verifier reads: probe JSON lines, HAMi-core's OOM lines, nvidia-smi, HAMi's annotations,
Prometheus text (and the monitor's samples, refused by name when odd), timestamps. Standard library only; pure
functions.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

from ..probes.process import OOM_LINE
from .strict import NotJudgeable, instant

_OOM_PROCESS_RE = re.compile(r"\(pid:(\d+)\s+thread=(\d+)")
_SMI_MEM_RE = re.compile(r"(\d+)\s*MiB\s*/\s*(\d+)\s*MiB")
_METRIC_RE = re.compile(r"^([A-Za-z_:][A-Za-z0-9_:]*)(\{(.*)\})?\s+(\S+)(\s+\S+)?\s*$")
_LABEL_RE = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"')
MONITOR_SERIES = ("hami_vgpu_memory_limit_bytes", "hami_vgpu_memory_used_bytes")
"""The monitor's series the checks read: each once per Pod and card, finite, used ≤ limit."""


def probe_results(logs: str) -> dict[str, dict[str, Any]]:
    """The last JSON object per `probe` kind ("memory", "compute") among a Pod log's lines."""
    found: dict[str, dict[str, Any]] = {}
    for line in (logs or "").splitlines():
        text = line.strip()
        if not text.startswith("{") or '"probe"' not in text:
            continue
        try:
            value = json.loads(text)
        except ValueError:
            continue
        if isinstance(value, dict) and isinstance(value.get("probe"), str):
            found[value["probe"]] = value
    return found


def parse_oom_lines(lines: Iterable[Any]) -> list[dict[str, int]]:
    """HAMi-core's `Device 0 OOM <used+request> / <limit>` lines (with or without `thread=`) → numbers."""
    parsed: list[dict[str, int]] = []
    for line in lines:
        if isinstance(line, Mapping) and "limit" in line:
            parsed.append({k: int(line[k]) for k in ("device", "requested", "limit") if k in line})
            continue
        for match in OOM_LINE.finditer(str(line)):
            parsed.append({"device": int(match[1]), "requested": int(match[2]), "limit": int(match[3])})
    return parsed


def oom_processes(lines: Iterable[Any]) -> set[tuple[int, int]]:
    """The (pid, thread) of every HAMi-core OOM line that names them (`(pid:1002 thread=1397… allocator.c:52)`)."""
    found = set()
    for line in lines:
        match = _OOM_PROCESS_RE.search(str(line))
        if match and OOM_LINE.search(str(line)):
            found.add((int(match[1]), int(match[2])))
    return found


def parse_nvidia_smi_memory(text: str) -> tuple[int, int] | None:
    """(used MiB, total MiB) from nvidia-smi's `NNNNMiB / MMMMMiB` memory column; None when absent."""
    match = _SMI_MEM_RE.search(text or "")
    return (int(match[1]), int(match[2])) if match else None


def parse_node_register(value: str | None) -> list[dict[str, Any]]:
    """`hami.io/node-nvidia-register` → devices.

    Accepts 2.9.0's JSON (with `devicepairscore`), 2.10.0's (no `devicepairscore`; `index`/`numa`
    omitted when zero) and the older `id,count,devmem,devcore,type,numa,health:` string form.
    """
    if not value:
        return []
    text = value.strip()
    if text.startswith("["):
        return [
            {
                "id": str(d.get("id", "")),
                "index": int(d.get("index") or 0),
                "count": int(d.get("count") or 0),
                "devmem": int(d.get("devmem") or 0),
                "devcore": int(d.get("devcore") or 0),
                "type": str(d.get("type", "")),
                "numa": int(d.get("numa") or 0),
                "health": bool(d.get("health", False)),
            }
            for d in json.loads(text)
            if isinstance(d, dict)
        ]
    devices = []
    for part in text.split(":"):
        fields = part.split(",")
        if len(fields) < 5 or not fields[0]:
            continue
        devices.append(
            {
                "id": fields[0],
                "index": 0,
                "count": int(fields[1]),
                "devmem": int(fields[2]),
                "devcore": int(fields[3]),
                "type": fields[4],
                "numa": int(fields[5]) if len(fields) > 5 and fields[5].isdigit() else 0,
                "health": len(fields) <= 6 or fields[6].strip().lower() == "true",
            }
        )
    return devices


def parse_allocation(value: str | None) -> list[dict[str, Any]]:
    """`hami.io/vgpu-devices-allocated` (`UUID,Type,MiB,cores:` per device, `;` per container) → devices."""
    devices = []
    for container in (value or "").split(";"):
        for part in container.split(":"):
            fields = [f.strip() for f in part.split(",")]
            if len(fields) < 4 or not fields[0]:
                continue
            devices.append({"uuid": fields[0], "type": fields[1], "memMiB": int(fields[2]), "cores": int(fields[3])})
    return devices


def parse_metrics(text: str) -> list[tuple[str, dict[str, str], float]]:
    """Prometheus text exposition → (name, labels, value) for every sample line."""
    samples = []
    for line in (text or "").splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = _METRIC_RE.match(line.strip())
        if not match:
            continue
        try:
            value = float(match[4])
        except ValueError:
            continue
        labels = {k: v.replace('\\"', '"').replace("\\\\", "\\") for k, v in _LABEL_RE.findall(match[3] or "")}
        samples.append((match[1], labels, value))
    return samples


def timestamp(value: Any) -> float | None:
    """An RFC 3339 time (`2026-08-20T09:02:10Z`) → seconds since the epoch; None when absent or malformed."""
    if not value:
        return None
    try:
        return instant(value, "timestamp")
    except ValueError:
        return None


def monitor_samples(text: str, where: str) -> list[tuple[str, dict[str, str], float]]:
    """The monitor's text → its samples, the series the checks read refused when a value is no number, a series
    appears twice, or a Pod's usage is above its own limit."""
    samples = parse_metrics(text)
    series: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    for name, labels, value in samples:
        if name not in MONITOR_SERIES:
            continue
        key = (name, tuple(sorted(labels.items())))
        shown_as = f"{name}{{{', '.join(f'{k}={v}' for k, v in key[1])}}}"
        if not math.isfinite(value):
            shown_value = "NaN" if math.isnan(value) else ("+Inf" if value > 0 else "-Inf")
            raise NotJudgeable(where, f"{shown_as} is {shown_value}: not a measurement")
        if key in series:
            raise NotJudgeable(where, f"{shown_as} appears twice ({series[key]:g} and {value:g}): which one holds is"
                               " not known")  # fmt: skip
        series[key] = value
    for (name, pairs), used in series.items():
        if name != MONITOR_SERIES[1]:
            continue
        limit = series.get((MONITOR_SERIES[0], pairs))
        if limit is not None and used > limit:
            shown_as = ", ".join(f"{k}={v}" for k, v in pairs)
            raise NotJudgeable(where, f"{shown_as} uses {used:.0f} bytes above its own limit {limit:.0f}: HAMi-core"
                               " refuses past the limit, so the monitor is not reading it")  # fmt: skip
    return samples
