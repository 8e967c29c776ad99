"""Allocation-paths probe: every CUDA door to device memory, each asked for clearly more than the quota.

Run as `python3 -m <package>.allocation_paths --json --expect-limit-mib 4000`: each path of allocation_child.PATHS
runs in a fresh process (so nothing one path took or broke is left for the next), which takes steps until it holds
the ask (the quota and half again, at least 2 GiB more) or is refused, and reports what it got, the view, NVML's
figures and whether a plain cuMemAlloc still fits while it holds. Then the escapes of the same family: a second
process started while this one holds half the quota (does it get the rest, or a fresh quota?) and the device nodes
the container can open beyond its card. Human lines first, one JSON object last. The probe touches no CUDA context
of its own until the second-process try, so every path starts on a card this process does not share.
Standard library only.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from . import provenance
from .allocation_child import PATHS, new_answer
from .cuda import MIB, Cuda
from .device_nodes import device_nodes
from .memory import ENV_KEYS, HAMI_MEMORY_KEYS
from .nvml import open_nvml
from .output import now_iso, print_result, record_error, say
from .process import mechanism_of, preload_evidence, reported_env

STEP_MIB = 512
"""Each step of a path's ask (a multiple of the 3D arrays' 256 MiB slice)."""
MIN_OVER_MIB = 2048
"""How far past the quota a path asks at least: clearly more than any tolerance."""
CHILD_TIMEOUT_S = 60
SECOND = "second process"
"""The try a later process of the same container makes while the first holds half the quota."""

ChildRunner = Callable[[str, int, int], dict[str, Any]]


def ask_for(quota_mib: int, step_mib: int = STEP_MIB) -> int:
    """What each path asks: the quota and half again, at least MIN_OVER_MIB more, in whole steps."""
    over = max(quota_mib // 2, MIN_OVER_MIB)
    return -(-(quota_mib + over) // step_mib) * step_mib


def run_path(path: str, ask_mib: int, step_mib: int) -> dict[str, Any]:
    """allocation_child in a fresh process, bounded in time; its last stdout line is its answer."""
    argv = [sys.executable, "-m", f"{__package__}.allocation_child", "--path", path, "--ask-mib", str(ask_mib),
            "--step-mib", str(step_mib)]  # fmt: skip
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=CHILD_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return {"path": path, "ok": False, "error": f"timed out after {CHILD_TIMEOUT_S} s"}
    lines = done.stdout.strip().splitlines()
    try:
        answer = json.loads(lines[-1]) if lines else {}
    except json.JSONDecodeError:
        answer = {}
    if not isinstance(answer, dict) or answer.get("path") != path:
        tail = done.stderr.strip().splitlines()[-1:] or [""]
        return {"path": path, "ok": False, "error": f"child exited {done.returncode} without a result {tail[0][:160]}"}
    provenance.note_child(answer)  # its HAMi-core OOM lines name this pid
    return answer


def full_answer(path: str, ask_mib: int, step_mib: int, answer: dict[str, Any]) -> dict[str, Any]:
    """A child's answer with every key the record reads (a child that died gives only path, ok and error)."""
    base = new_answer(path, ask_mib, step_mib)
    base["pid"] = answer.get("pid") if isinstance(answer.get("pid"), int) else None
    return {**base, **{k: v for k, v in answer.items() if k in base}}


def describe(a: dict[str, Any]) -> str:
    if not a.get("ok"):
        return f"{a['path']}: error {a.get('error')}"
    plain = "fits" if a.get("plain_after_ok") else f"refused ({a.get('plain_after_error')})"
    return (f"{a['path']}: got {a['got_mib']} of {a['asked_mib']} MiB in {a['steps']} steps"
            f" (then {a.get('refused_with') or 'nothing refused'}); view {a['view_free_mib']}/{a['view_total_mib']}"
            f" MiB free; NVML process {a['nvml_process_mib']} MiB, card used {a['nvml_used_mib']} MiB;"
            f" a plain cuMemAlloc after it {plain}")  # fmt: skip


def second_process(cuda: Any, quota_mib: int, runner: ChildRunner, log: Callable[[str], None]) -> dict[str, Any]:
    """Hold half the quota here, then let a process started later ask for the whole quota and more by cuMemAlloc:
    the rest of one quota is what it may get; more means each process is given a quota of its own."""
    hold_mib = quota_mib // 2
    out: dict[str, Any] = {"hold_mib": hold_mib, "held": False, "hold_error": None, "answer": None}
    cuda.use_primary_context()
    held, out["hold_error"] = cuda.try_alloc(hold_mib * MIB)
    if held is None:
        log(f"{SECOND}: holding {hold_mib} MiB here was refused ({out['hold_error']})")
        return out
    out["held"] = True
    ask = ask_for(quota_mib)
    answer = full_answer("cuMemAlloc", ask, STEP_MIB, runner("cuMemAlloc", ask, STEP_MIB))
    out["answer"] = answer
    cuda.free(held)
    log(f"{SECOND} (this one holding {hold_mib} MiB): " + describe(answer))
    return out


def new_result(expected: int | None) -> dict[str, Any]:
    """Every key the judge reads, present from the start."""
    return {"probe": "allocation", "ok": False, "error": None, "cuda_error": None, "env": reported_env(ENV_KEYS),
            "preload": preload_evidence(), "mechanism": None, "gpu_uuid": None, "nvml_total_mib": None,
            "card_minor": None, "expected_limit_mib": expected, "step_mib": STEP_MIB, "asked_mib": None,
            "paths": [], "second_process": None, "device_nodes": [], "started_at": now_iso(),
            "ended_at": None}  # fmt: skip


def measure(cuda: Any, nvml: Any, args: argparse.Namespace, result: dict[str, Any], log: Callable[[str], None],
            runner: ChildRunner = run_path) -> None:  # fmt: skip
    """Every path in its own process, then the escapes, filling `result` as they go."""
    result["gpu_uuid"] = (nvml.uuid() if nvml else None) or cuda.uuid()
    if nvml is not None:
        result["nvml_total_mib"] = nvml.memory()[0] // MIB
        result["card_minor"] = nvml.minor() if hasattr(nvml, "minor") else None
    result["mechanism"] = mechanism_of(result["env"], result["preload"]["mapped"], HAMI_MEMORY_KEYS, args.mechanism)
    quota = args.expect_limit_mib
    if quota is None:  # no quota to pass: ask for the card, which shows what nothing limits
        quota = result["nvml_total_mib"] or cuda.mem_info()[1] // MIB
    ask = result["asked_mib"] = ask_for(quota)
    for path in args.paths:
        answer = full_answer(path, ask, STEP_MIB, runner(path, ask, STEP_MIB))
        result["paths"].append(answer)
        log(describe(answer))
    result["device_nodes"] = device_nodes(result["card_minor"])
    opened = [n["path"] for n in result["device_nodes"] if n["opened"] and n["kind"] in ("card", "other")]
    log(f"device nodes opened beyond the card: {', '.join(opened) or 'none'}")
    if args.second_process:
        result["second_process"] = second_process(cuda, quota, runner, log)
    result["ok"] = True


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--json", action="store_true", help="print the result as one JSON object, last line")
    p.add_argument("--expect-limit-mib", type=int, default=None, help="the quota this container should get")
    p.add_argument("--paths", type=lambda s: [x for x in s.split(";") if x], default=list(PATHS),
                   help="the paths to try, `;`-separated (default: every one)")  # fmt: skip
    p.add_argument("--no-second-process", dest="second_process", action="store_false",
                   help="skip the later process that asks beside a held half quota")  # fmt: skip
    p.add_argument("--mechanism", default="auto", choices=("auto", "hami-core", "mps", "none"))
    p.add_argument("--delay", type=float, default=0.0, help="seconds to wait before the first CUDA call")
    args = p.parse_args(argv)
    unknown = [x for x in args.paths if x not in PATHS]
    if unknown:
        p.error(f"no such path {unknown[0]!r}: one of {'; '.join(PATHS)}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Run the probe; 0 when it finished (the judgement is the verifier's), 1 when it could not measure."""
    args = parse_args(argv)
    time.sleep(max(args.delay, 0.0))
    result = new_result(args.expect_limit_mib)
    try:
        cuda = Cuda()
        cuda.init()
        measure(cuda, open_nvml(cuda.uuid()), args, result, say)
    except Exception as exc:  # a probe reports, never crashes: the verifier needs the JSON
        record_error(result, exc)
    result["ended_at"] = now_iso()
    result["pod"] = provenance.block(say)
    if args.json:
        print_result(result)
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
