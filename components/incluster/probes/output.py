"""What every probe prints: its times, its one JSON line, the error that ended it, the termination-message file and
the readiness file, and a finding's shape. Standard library only.
"""

from __future__ import annotations

import datetime
import json
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from .cuda import CudaError, ProbeError

RESULT_FILE_LIMIT = 4096
"""Kubernetes keeps at most 4096 bytes of a container's termination message."""


def now_iso() -> str:
    """UTC wall time to the millisecond, comparable across Pods on one node."""
    stamp = datetime.datetime.now(datetime.timezone.utc)  # noqa: UP017 (probes run on py3.8 hosts too)
    return stamp.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def say(line: str) -> None:
    """One human line, flushed at once: the verifier reads the log while the probe still runs."""
    print(line, flush=True)


def print_result(result: Mapping[str, Any]) -> None:
    """The probe's one JSON line, compact (what the judge reads, and the host proof's records hold)."""
    print(json.dumps(result, separators=(",", ":")), flush=True)


def record_error(result: dict[str, Any], exc: BaseException) -> None:
    """The error that ended a probe or its child, in its result, never as a traceback: `error` is a ProbeError's
    own text, else the exception's type and text; `cuda_error` the failed CUDA call's CUresult name, where the result
    reports one (the key is there from the start)."""
    result["error"] = str(exc) if isinstance(exc, ProbeError) else f"{type(exc).__name__}: {exc}"
    if isinstance(exc, CudaError) and "cuda_error" in result:
        result["cuda_error"] = exc.name


def fit_result(result: dict[str, Any], drop: Sequence[str], limit: int = RESULT_FILE_LIMIT) -> str:
    """Compact JSON of `result` in at most `limit` bytes: drop the `drop` paths (a.b) in order until it fits."""
    text = json.dumps(result, separators=(",", ":"))
    if len(text.encode()) <= limit:
        return text
    trimmed = json.loads(text)
    dropped: list[str] = []
    for path in drop:
        *parents, leaf = path.split(".")
        node: Any = trimmed
        for key in parents:
            node = node.get(key) if isinstance(node, dict) else None
        if isinstance(node, dict) and leaf in node:
            del node[leaf]
            dropped.append(path)
            trimmed["truncated"] = dropped
            text = json.dumps(trimmed, separators=(",", ":"))
            if len(text.encode()) <= limit:
                return text
    # Last resort: the scalar top-level fields only, which the judge reads first.
    small = {k: v for k, v in trimmed.items() if not isinstance(v, (dict, list))}
    small["truncated"] = ["*"]
    text = json.dumps(small, separators=(",", ":"))
    while len(text.encode()) > limit and "error" in small and small["error"]:
        small["error"] = str(small["error"])[: max(0, len(str(small["error"])) // 2)]
        text = json.dumps(small, separators=(",", ":"))
    return text


def write_result_file(path: str | None, text: str) -> None:
    """Write the JSON to `path` (a termination log); a failure is reported on stderr, never raised."""
    if not path:
        return
    try:
        with open(path, "w") as f:
            f.write(text)
    except OSError as exc:
        print(f"cannot write result file {path}: {exc}", file=sys.stderr)


def touch(path: str | None) -> None:
    """Create the readiness file that the Pod's readiness probe waits for."""
    if path:
        with open(path, "a"):
            pass


def finding(fid: str, tried: str, observed: str, bypassed: bool | None, why: str | None = None) -> dict[str, Any]:
    """One finding in the shape every probe reports; `why` only when nothing could be tried."""
    out: dict[str, Any] = {"id": fid, "tried": tried, "observed": observed, "bypassed": bypassed}
    if bypassed is None:
        out["why"] = why or "nothing could be tried"
    return out
