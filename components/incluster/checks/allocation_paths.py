"""allocation-paths: no door to device memory takes more than the quota, and the escapes of the same family.

Each proof Pod's allocation step asks every CUDA allocation path for the quota and more (probes/allocation_paths.py);
a path that held more than the quota is a way past it, named with its figures. The same step tries the family's
other escapes, reported as findings beside the memory probe's env-stripped process and the every-device Pod: a
second process started later in the same container (one quota shared, or a fresh one each?) and the device nodes
the container can open beyond its card. Standard library only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..evidence.record import Record
from ..expectation import Expectation
from .rule import Check, Judgement, Rule, not_ok, verdict

CHECK_ID = "allocation-paths"
OUT_OF_MEMORY = "CUDA_ERROR_OUT_OF_MEMORY"
SECOND_ID = "second-process"
NODES_ID = "device-nodes"


def escaped(e: Expectation, path: Mapping[str, Any]) -> bool:
    """More than the quota held by one path: the memory check's rule (a single allocation above the quota)."""
    return float(path["got_mib"]) > e.limit_mib


def escape_text(e: Expectation, path: Mapping[str, Any]) -> str:
    return f"escaped-via: {path['path']}, took {path['got_mib']} MiB of a {e.limit_mib:.0f} MiB quota"


def escapes(rec: Record) -> list[tuple[str, Mapping[str, Any]]]:
    """(Pod, path) for every path that held more than the quota, in the Pods' order."""
    return [(name, p) for name in rec.names for p in (rec.allocation(name) or {}).get("paths") or []
            if escaped(rec.expect, p)]  # fmt: skip


def escaped_paths(rec: Record) -> list[str]:
    """Each escaping path's name once, whichever Pod showed it: what the summary line names."""
    return list(dict.fromkeys(p["path"] for _, p in escapes(rec)))


def _expected(e: Expectation) -> str:
    return (f"each of the CUDA allocation paths, asked in each proof Pod for more than the {e.limit_mib:.0f} MiB"
            " quota, holds no more than the quota")  # fmt: skip


def _judge(rec: Record) -> Judgement:
    e = rec.expect
    problems: list[str] = []
    seen: list[str] = []
    for name in rec.names:
        result = rec.allocation(name) or {}
        problems += not_ok(name, result)
        for p in result.get("paths") or []:
            if escaped(e, p):
                problems.append(f"Pod {name}: {escape_text(e, p)}")
            elif not p["ok"]:
                problems.append(f"Pod {name}: {p['path']} could not be tried ({p.get('error')})")
            elif p["got_mib"] == 0 and p.get("refused_with") != OUT_OF_MEMORY:
                # A first step that failed for another reason than memory shows nothing about the quota.
                problems.append(f"Pod {name}: {p['path']} failed at its first step with {p.get('refused_with')}")
            seen.append(f"{name} {p['path']}: {p['got_mib']}/{p['asked_mib']} MiB"
                        f" ({p.get('refused_with') or 'not refused'})")  # fmt: skip
    return verdict(problems, f"no path held more than the {e.limit_mib:.0f} MiB quota in any proof Pod", seen)


ALLOCATION_PATHS = Check(
    CHECK_ID,
    "Every allocation path holds the quota",
    {m: Rule(_expected, _judge) for m in ("hami-core", "mps")},
    reads=("pods", "allocation"),
)


def second_finding(e: Expectation, name: str, second: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The later process's raw finding: bypassed when it got more than the quota leaves beside the held half."""
    tried = ("a second process started later in the same container, asking for more than the quota by cuMemAlloc"
             " while the first holds half of it")  # fmt: skip
    if second is None:
        return None
    raw: dict[str, Any] = {"id": SECOND_ID, "tried": tried}
    answer = second.get("answer")
    if not second["held"] or answer is None:
        return {**raw, "observed": "not tried", "bypassed": None,
                "why": f"holding {second['hold_mib']} MiB was refused ({second.get('hold_error')})"}  # fmt: skip
    left = e.limit_mib - second["hold_mib"]
    got = answer["got_mib"]
    fresh = got > left
    observed = (
        f"holding {second['hold_mib']} MiB, a later process got {got} MiB more"
        f" ({'a fresh quota of its own' if fresh else 'within what one quota leaves'}: {left:.0f} MiB left)"
    )
    return {**raw, "observed": observed, "bypassed": fresh, "gotMiB": got, "leftMiB": round(left)}


def nodes_finding(name: str, nodes: list[Mapping[str, Any]]) -> dict[str, Any]:
    """The device nodes beyond its card the container opened: bypassed when any (another card, caps, IB, DRM)."""
    beyond = [n["path"] for n in nodes if n["opened"] and n["kind"] in ("card", "other")]
    tried = ("opening every /dev/nvidia*, /dev/nvidia-caps*, /dev/infiniband/* and /dev/dri/* node the container"
             " holds, for reading and writing")  # fmt: skip
    observed = (f"opened {', '.join(beyond)} beyond its card" if beyond else
                f"opened nothing beyond its card and the control nodes ({len(nodes)} nodes present)")  # fmt: skip
    return {"id": NODES_ID, "tried": tried, "observed": observed, "bypassed": bool(beyond)}


def findings(rec: Record) -> list[tuple[str, dict[str, Any]]]:
    """(Pod, raw finding) for each escape path, the second process and the device nodes of every proof Pod."""
    out: list[tuple[str, dict[str, Any]]] = []
    for name in rec.names:
        result = rec.allocation(name)
        if result is None:
            continue
        for p in result["paths"]:
            if escaped(rec.expect, p):
                out.append((name, {"id": f"escaped-via:{p['path']}", "tried": f"{p['path']}, asked {p['asked_mib']}"
                                   " MiB in steps", "observed": escape_text(rec.expect, p), "bypassed": True,
                                   "gotMiB": p["got_mib"]}))  # fmt: skip
        second = second_finding(rec.expect, name, result.get("second_process"))
        if second is not None:
            out.append((name, second))
        out.append((name, nodes_finding(name, result["device_nodes"])))
    return out
