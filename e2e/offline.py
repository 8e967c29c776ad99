"""What the offline plan says a change does, in the form the real engine's steps are compared in: `type::name` →
operation, a replacement's steps counted as one `replace`.

`python -m e2e.offline card-swap` prints, as JSON, each resource's operation when the card HAMi registers as card
1 of a two-card node is another (the config unchanged): what tests/test_proof_placement.py plans, since a reader's
`python -m components.plan` cannot swap the card its mocks register.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
STACK_ROOT = "pulumi:pulumi:Stack"
REPLACE_STEPS = {"create-replacement": "replace", "delete-replaced": "replace", "replace": "replace"}
NOT_A_CHANGE = ("same", "read", "refresh", "discard")
"""Steps that change no object: a read of an existing object (a `.get`), and its discard once no longer asked for
(the offline plan lists neither among `deleted`)."""


def offline_plan(*overrides: str, against: Path | None = None) -> dict[str, Any]:
    """`python -m components.plan cluster --json`, as a reader runs it, with `-c` overrides (and `--against`)."""
    args = [sys.executable, "-m", "components.plan", "cluster", "--json"]
    args += ["--against", str(against)] if against else []
    for o in overrides:
        args += ["-c", o]
    proc = subprocess.run(args, cwd=REPO, capture_output=True, text=True, check=True)
    return dict(json.loads(proc.stdout))


def type_and_name(urn: str) -> str:
    """`urn:pulumi:STACK::PROJECT::parent$type::name` → `type::name`, the offline plan's key."""
    qualified, name = urn.split("::")[2], urn.split("::", 3)[3]
    return f"{qualified.split('$')[-1]}::{name}"


def real_steps(result: dict[str, Any]) -> dict[str, str]:
    return {type_and_name(s["urn"]): s["op"] for s in result["steps"] if s["type"] != STACK_ROOT}


def planned_steps(plan: dict[str, Any]) -> dict[str, str]:
    """Each resource's operation in a `--json` plan, the ones `--against` found gone as `delete`."""
    return {r["urn"]: r["operation"] for r in plan["resources"]} | {r["urn"]: "delete" for r in plan["deleted"]}


def changes(steps: dict[str, str]) -> dict[str, str]:
    """What a preview or `up` changes, a replacement's three steps counted as one `replace`."""
    return {k: REPLACE_STEPS.get(op, op) for k, op in steps.items() if op not in NOT_A_CHANGE}


def agreement(real: dict[str, str], planned: dict[str, str]) -> tuple[int, int, list[str]]:
    keys = sorted(set(real) | set(planned))
    differ = [
        f"{k}: engine {real.get(k, '-')}, plan {planned.get(k, '-')}" for k in keys if real.get(k) != planned.get(k)
    ]
    return len(keys) - len(differ), len(keys), differ


def planned_change(tmp: Path, before: tuple[str, ...], after: tuple[str, ...]) -> dict[str, str]:
    """What the offline plan changes from the `before` overrides to the `after` ones, `--against` the saved `--json`
    plan of `before`, as a reader compares two configs."""
    base = tmp / "base.json"
    base.write_text(json.dumps(offline_plan(*before)))
    return changes(planned_steps(offline_plan(*after, against=base)))


def card_swap() -> dict[str, str]:
    """Each resource's operation, by the offline plan's diff, when card 1 of the two-card node is another card."""
    from components.mocks import ANSWERS, GpushareMocks
    from components.plan import run
    from components.plan_view.diff import compare
    from components.plan_view.golden import with_file_refs

    two = ["gpushare:gpu.perNode=2"]
    other = dataclasses.replace(ANSWERS, gpu_uuid_1="GPU-00000000-0000-4000-8000-0000000000ff")
    before = with_file_refs(run("cluster", two).as_dict())
    after = with_file_refs(run("cluster", two, mocks=GpushareMocks(answers=other)).as_dict())
    return compare(before, after, "card 1 before").operations


def planned_card_swap() -> dict[str, str]:
    out = subprocess.run([sys.executable, "-m", "e2e.offline", "card-swap"], cwd=REPO, capture_output=True,
                         text=True, check=True).stdout  # fmt: skip
    return changes(json.loads(out))


if __name__ == "__main__":
    if sys.argv[1:] != ["card-swap"]:
        raise SystemExit("usage: python -m e2e.offline card-swap")
    print(json.dumps(card_swap()))
