"""The memory probe's child process: one fresh context that allocates, and how the probe runs one.

Run as `python3 -m <package>.memory_child --child MODE --child-mib N` (memory.py and memory_findings.py do): it makes
one context and allocates (once, or up to N MiB as large as fits), printing one JSON line with its pid. The parent
notes that pid (provenance), so the judge counts the child's HAMi-core OOM lines as the Pod's. Standard library only.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from typing import Any

from . import provenance
from .cuda import MIB, Cuda
from .nvml import open_nvml
from .output import print_result, record_error

CHILD_TIMEOUT_S = 90

ChildRunner = Callable[[str, int, dict[str, str]], dict[str, Any]]


def run_child(mode: str, mib: int, env: dict[str, str]) -> dict[str, Any]:
    """This module in a child process (`--child MODE`), bounded in time; its last stdout line is JSON."""
    argv = [sys.executable, "-m", f"{__package__}.memory_child", "--child", mode, "--child-mib", str(mib)]
    try:
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=CHILD_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return {"ok": False, "allocated": False, "error": f"timed out after {CHILD_TIMEOUT_S} s", "stderr": ""}
    lines = done.stdout.strip().splitlines()
    try:
        answer = json.loads(lines[-1]) if lines else {}
    except json.JSONDecodeError:
        answer = {}
    if not answer:
        answer = {"ok": False, "allocated": False, "error": f"child exited {done.returncode} without a result"}
    provenance.note_child(answer)  # its OOM lines name this pid: the judge counts them as this Pod's
    answer["stderr"] = done.stderr
    return answer


def own_context_mib(nvml: Any) -> int | None:
    """NVML's count of this process's memory (its context, before it allocates); None where PIDs are not ours."""
    used = nvml.process_used(os.getpid()) if nvml is not None and hasattr(nvml, "process_used") else None
    return None if used is None else used // MIB


def largest_up_to(fits: Callable[[int], bool], cap_mib: int) -> tuple[int, int]:
    """The largest allocation up to `cap_mib` that fits, to 1 MiB, asking the cap first: (MiB, calls)."""
    calls = 1
    if fits(cap_mib):
        return cap_mib, calls
    lo, hi = 0, cap_mib
    while hi - lo > 1:
        mid = (lo + hi) // 2
        calls += 1
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo, calls


def child_main(mode: str, mib: int) -> int:
    """One allocation of `mib` on the primary context (`alloc`) or a cuCtxCreate context (`ctx-create`), only
    the primary context's charge (`view`: the view's total less its free memory) and NVML's size of it, or the
    largest allocation up to `mib` (`largest`)."""
    answer: dict[str, Any] = {"ok": False, "allocated": False, "error": None, "cuda_error": None, "pid": os.getpid()}
    try:
        cuda = Cuda()
        cuda.init()
        if mode == "ctx-create":
            cuda.create_context()
        else:
            cuda.use_primary_context()
        if mode == "view":
            free, total = cuda.mem_info()
            answer["charged_mib"] = (total - free) // MIB
            answer["own_context_mib"] = own_context_mib(open_nvml(cuda.uuid()))
            answer["ok"] = True
        elif mode == "largest":
            answer["view_total_mib"] = cuda.mem_info()[1] // MIB

            def fits(ask: int) -> bool:
                ptr, answer["cuda_error"] = cuda.try_alloc(ask * MIB)
                if ptr is not None:
                    cuda.free(ptr)
                return ptr is not None

            answer["largest_mib"], answer["calls"] = largest_up_to(fits, mib)
            answer["ok"], answer["allocated"] = True, answer["largest_mib"] > 0
        else:
            ptr, answer["cuda_error"] = cuda.try_alloc(mib * MIB)
            answer["ok"], answer["allocated"] = True, ptr is not None
            if ptr is not None:
                cuda.free(ptr)
    except Exception as exc:  # a child reports, never crashes: its parent needs the JSON
        record_error(answer, exc)
    print_result(answer)
    return 0 if answer["ok"] else 1


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 4 or args[0] != "--child" or args[2] != "--child-mib":
        print(
            "usage: python3 -m <package>.memory_child --child alloc|ctx-create|view|largest --child-mib MIB"
            " (memory.py's child)"
        )
        return 2
    return child_main(args[1], int(args[3]))


if __name__ == "__main__":
    sys.exit(main())
