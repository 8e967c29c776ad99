"""The allocation-paths table: path × mechanism (held / took N MiB), from the probe's JSON per mechanism.

`python -m components.verify.host.paths_table OUT` reads OUT/{hami-core,mps,bare}.json (docs/host-proof/
record-paths.sh writes them) and prints the Markdown for docs/host-proof/<card>/allocation-paths/README.md and
docs/sharing-comparison.md. Until a mechanism was measured its column says so, and the HAMi-core predictions (read
from its source) stand beside it as predictions. Standard library only: the script needs nothing but python3.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from components.incluster.probes.allocation_child import PATHS

MECHANISMS = ("hami-core", "mps", "bare")
HAMI_SOURCE = "../shared/reference/hami-core (8f3a89c6)"
PREDICTED: dict[str, tuple[str, str]] = {
    "cuMemAlloc": ("held", "src/cuda/memory.c:119-127 → src/allocator/allocator.c:229, :109-116 oom_check first"),
    "cuMemAllocPitch": ("held", "src/cuda/memory.c:158-173 oom_check on the guessed pitch × height"),
    "cuMemCreate": ("held", "src/cuda/memory.c:585-601 oom_check where prop->location.type is a device"),
    "cuMemAllocManaged": ("held", "src/cuda/memory.c:143-156 oom_check before the driver's call"),
    "cuMemAllocAsync": ("held", "src/cuda/memory.c:627-630 → src/allocator/allocator.c:310, :266-272 oom_check"),
    "cuMemAllocFromPoolAsync (default pool)": (
        "escapes", "src/cuda/memory.c:689-692 passes straight to the driver: no oom_check, nothing charged"),
    "cuMemAllocFromPoolAsync (own pool)": (
        "escapes", "src/cuda/memory.c:679-692 cuMemPoolCreate and the allocation both pass straight through"),
    "cuArray3DCreate": (
        "escapes", "src/cuda/memory.c:96-99 passes straight through (compute_3d_array_alloc_bytes, :57, is unused)"),
    "cuMipmappedArrayCreate": (
        "escapes", "src/cuda/memory.c:517-529 checks after the fact with check_oom() (usage + 0): the array is never"
        " charged, so the check never sees it"),
    "cuGraphAddMemAllocNode": (
        "escapes", "no hook: src/cuda/graph.c hooks kernel, memcpy and memset nodes only, src/cuda/hook.c lists no"
        " cuGraphAddMemAllocNode"),
}  # fmt: skip
"""Per path, what HAMi-core's source predicts (held / escapes) and the lines that say so."""


def load(folder: Path) -> dict[str, dict[str, Any] | None]:
    """Each mechanism's probe line, None where the file is absent or holds no JSON object."""
    out: dict[str, dict[str, Any] | None] = {}
    for mech in MECHANISMS:
        path = folder / f"{mech}.json"
        try:
            value = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError):
            value = None
        out[mech] = value if isinstance(value, dict) and value.get("probe") == "allocation" else None
    return out


def cell(result: Mapping[str, Any] | None, path: str) -> str:
    """`held (N MiB)`, `**took N MiB**` past the quota, `error: …`, or `not measured`."""
    if result is None:
        return "not measured"
    quota = result.get("expected_limit_mib")
    found = next((p for p in result.get("paths") or [] if p.get("path") == path), None)
    if found is None:
        return f"probe error: {str(result.get('error'))[:60]}" if result.get("error") else "not tried"
    if not found.get("ok"):
        return f"error: {str(found.get('error'))[:60]}"
    got = found["got_mib"]
    plain = "" if found.get("plain_after_ok") is None else ("; cuMemAlloc after: fits" if found["plain_after_ok"]
                                                            else "; cuMemAlloc after: refused")  # fmt: skip
    if found.get("free_error"):
        plain += "; its free failed"
    if quota is not None and got > quota:
        return f"**took {got} MiB**{plain}"
    return f"held ({got} MiB, then {found.get('refused_with') or 'nothing refused'}){plain}"


def second_cell(result: Mapping[str, Any] | None) -> str:
    if result is None:
        return "not measured"
    second = result.get("second_process")
    if not second or not second.get("answer"):
        return "not tried"
    quota, got = result.get("expected_limit_mib") or 0, second["answer"]["got_mib"]
    left = quota - second["hold_mib"]
    return f"{'**fresh quota**' if got > left else 'shared quota'}: got {got} MiB beside {second['hold_mib']} held"


def nodes_cell(result: Mapping[str, Any] | None) -> str:
    if result is None:
        return "not measured"
    beyond = [n["path"] for n in result.get("device_nodes") or [] if n["opened"] and n["kind"] in ("card", "other")]
    return f"**opened {', '.join(beyond)}**" if beyond else "none beyond its card"


def table(results: Mapping[str, Mapping[str, Any] | None]) -> list[str]:
    quota = next((r.get("expected_limit_mib") for r in results.values() if r), None)
    asked = next((r.get("asked_mib") for r in results.values() if r), None)
    head = f"quota {quota} MiB, each path asked {asked} MiB" if quota else "quota not measured yet"
    lines = [f"| path ({head}) | HAMi-core predicted | " + " | ".join(MECHANISMS) + " |",
             "|---|---|" + "---|" * len(MECHANISMS)]  # fmt: skip
    for path in PATHS:
        guess, where = PREDICTED[path]
        row = [f"`{path}`", f"{guess} ({where})", *(cell(results[m], path) for m in MECHANISMS)]
        lines.append("| " + " | ".join(row) + " |")
    lines.append("| a second process, later, same container | – | "
                 + " | ".join(second_cell(results[m]) for m in MECHANISMS) + " |")  # fmt: skip
    lines.append("| device nodes opened beyond the card | – | "
                 + " | ".join(nodes_cell(results[m]) for m in MECHANISMS) + " |")  # fmt: skip
    return lines


def render(folder: Path) -> str:
    results = load(folder)
    measured = [m for m in MECHANISMS if results[m] is not None]
    lines = ["# Every allocation path, per mechanism", "",
             "Each path asked for the quota and more in 512 MiB steps, in a fresh process"
             " (`components/incluster/probes/allocation_paths.py`); **took N MiB** is a path past the quota.",
             f"HAMi-core predictions are read from its source ({HAMI_SOURCE}); they stand as predictions until"
             " measured.", "",
             f"Measured: {', '.join(measured) or 'nothing yet'} (docs/host-proof/record-paths.sh).", "",
             *table(results), ""]  # fmt: skip
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m components.verify.host.paths_table",
                                description=(__doc__ or "").splitlines()[0])  # fmt: skip
    p.add_argument("folder", type=Path, help="the folder record-paths.sh wrote")
    args = p.parse_args(argv)
    print(render(args.folder), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
