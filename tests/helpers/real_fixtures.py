"""The judge's fixtures rebuilt from real probe output: `python -m tests.helpers.real_fixtures [--check]`.

The cluster side of each `tests/fixtures/<stack>_evidence.json` (annotations, events, nodes, metrics) comes
from the labs; every proof Pod's log there is the probes' real output from the H200 host proof under
`tests/fixtures/real/h200/` (OOM lines, then each probe's JSON line), and the card's UUID in the cluster
objects is the H200's, so that both sides name one card. One edit: a recorded NVIDIA_VISIBLE_DEVICES of `0`
(the host's index) becomes the card's UUID, as the device plugin sets it in a Pod.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
REAL = FIXTURES / "real" / "h200"
RECORDS = {"kai": "gke-hami-core", "k3s": "k3s-hami-core", "cluster": "cluster-hami-core-staggered"}
"""Which host-proof run each judge fixture takes its probe output from: for `cluster`, the run whose Pod B started
after A, as a cluster starts them (started in the same instant, B's context went uncharged: see the record)."""
_UUID = re.compile(r"GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def real_outputs(record: str) -> dict[str, dict[str, Any]]:
    """{pod: {"memory": result, "compute": result?}} as the probes printed them in one host-proof run."""
    evidence = json.loads((REAL / record / "evidence.json").read_text())
    return {pod: {k: v for k, v in out.items() if k in ("memory", "compute")} for pod, out in evidence.items()
            if isinstance(out, dict) and "memory" in out}  # fmt: skip


def probe_log(outputs: dict[str, Any]) -> str:
    """A proof Pod's log as the container prints it: compute's JSON, the library's OOM lines, memory's JSON."""
    lines = []
    if "compute" in outputs:
        lines.append(json.dumps(outputs["compute"], separators=(",", ":")))
    lines += list(outputs["memory"].get("hami_oom_lines") or [])
    lines.append(json.dumps(outputs["memory"], separators=(",", ":")))
    return "\n".join(lines) + "\n"


def rebuilt(stack: str) -> dict[str, Any]:
    """The stack's judge fixture with the real probe output and the real card's UUID."""
    path = FIXTURES / f"{stack}_evidence.json"
    outputs = real_outputs(RECORDS[stack])
    uuid = next(iter(outputs.values()))["memory"]["gpu_uuid"]
    evidence = json.loads(_UUID.sub(uuid, path.read_text()))
    for pod, out in outputs.items():
        for result in out.values():
            if isinstance(result.get("env"), dict) and result["env"].get("NVIDIA_VISIBLE_DEVICES") == "0":
                # The one edit: in a Pod the device plugin names the card by UUID; the H200 host gave index 0.
                result["env"]["NVIDIA_VISIBLE_DEVICES"] = uuid
        evidence["pods"][pod]["logs"] = probe_log(out)
    return evidence


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.helpers.real_fixtures", description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="rewrite nothing; exit 1 when a fixture is stale")
    check = parser.parse_args(argv).check
    stale = []
    for stack in RECORDS:
        path = FIXTURES / f"{stack}_evidence.json"
        text = json.dumps(rebuilt(stack), indent=1, ensure_ascii=False) + "\n"
        if path.read_text() != text:
            stale.append(path.name)
            if not check:
                path.write_text(text)
    if check and stale:
        print(f"stale: {', '.join(stale)}; run python -m tests.helpers.real_fixtures", file=sys.stderr)
        return 1
    print("up to date" if not stale else f"rewrote {', '.join(stale)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
