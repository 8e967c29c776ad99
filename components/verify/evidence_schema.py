"""The evidence record's declared schemas as JSON Schema: `python -m components.verify.evidence_schema [--write]`.

The schemas are declared once, in the in-cluster package (components/incluster/evidence/: each probe's
*_schema.py, object_schema.py), where the judge validates every record against them; this writes them to
docs/evidence/*.schema.json for other readers (and the tests, which validate every recorded run with `jsonschema`).
JSON Schema states kinds, units and bounds; the invariants that relate fields are listed in each object's
`$comment` and checked by the judge alone. Without `--write` it exits 1 when a committed file is not what the
schemas give.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from components.incluster.evidence.allocation_schema import ALLOCATION
from components.incluster.evidence.bandwidth_schema import BANDWIDTH
from components.incluster.evidence.compute_schema import COMPUTE
from components.incluster.evidence.fault_schema import FAULT
from components.incluster.evidence.memory_schema import MEMORY
from components.incluster.evidence.object_schema import EVIDENCE, POD
from components.incluster.evidence.schema import Arr, Field, Int, Num, Obj, Schema

ROOT = Path(__file__).resolve().parents[2]
FOLDER = ROOT / "docs" / "evidence"
DIALECT = "https://json-schema.org/draft/2020-12/schema"

HOST_POD = Obj(
    {
        "fault": Field(FAULT, required=False),
        "bandwidth": Field(BANDWIDTH, required=False),
        "memory": Field(MEMORY, required=False),
        "compute": Field(COMPUTE, required=False),
        "allocation": Field(ALLOCATION, required=False),
        "exit_codes": Field(Arr(Int())),
        "started": Field(Num(minimum=0, unit="s since the epoch")),
        "ended": Field(Num(minimum=0, unit="s since the epoch")),
        "podObject": Field(POD, required=False, doc="the synthetic Pod object the host proof judged it on"),
    },
    doc="one process-Pod of a host proof: its probes' results, exit codes and times",
)
SCHEMAS: dict[str, tuple[str, Schema]] = {
    "memory": ("The memory probe's JSON line", MEMORY),
    "compute": ("The compute probe's JSON line", COMPUTE),
    "fault": ("The fault probe's JSON line", FAULT),
    "bandwidth": ("The bandwidth probe's JSON line", BANDWIDTH),
    "allocation": ("The allocation-paths probe's JSON line", ALLOCATION),
    "pod": ("A Pod as the verifier keeps it", POD),
    "evidence": ("Everything the verifier collected (the verifier's evidence log line, less its kind)", EVIDENCE),
}


def host_evidence() -> dict[str, Any]:
    """A host proof's evidence.json: each process-Pod, and `alone`, the unlimited compute baseline's result."""
    return {"type": "object", "additionalProperties": {"anyOf": [HOST_POD.json(), COMPUTE.json()]}}


def documents() -> dict[str, dict[str, Any]]:
    """File name → the JSON Schema it holds."""
    out = {f"{name}.schema.json": {"$schema": DIALECT, "title": title, **schema.json()}
           for name, (title, schema) in SCHEMAS.items()}  # fmt: skip
    out["host-evidence.schema.json"] = {"$schema": DIALECT, "title": "A host proof's evidence.json", **host_evidence()}
    return out


def render(document: dict[str, Any]) -> str:
    return json.dumps(document, indent=1, ensure_ascii=False, sort_keys=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m components.verify.evidence_schema", description=__doc__.splitlines()[0])
    p.add_argument("--write", action="store_true", help="write docs/evidence/*.schema.json")
    args = p.parse_args(argv)
    stale = [name for name, doc in documents().items()
             if not (FOLDER / name).is_file() or (FOLDER / name).read_text() != render(doc)]  # fmt: skip
    if args.write:
        FOLDER.mkdir(parents=True, exist_ok=True)
        for name, doc in documents().items():
            (FOLDER / name).write_text(render(doc))
        print(f"wrote {', '.join(sorted(documents()))} in {FOLDER.relative_to(ROOT)}")
        return 0
    if stale:
        print(f"stale: {', '.join(stale)}; run python -m components.verify.evidence_schema --write", file=sys.stderr)
        return 1
    print("up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
