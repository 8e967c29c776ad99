"""Golden plans: `python -m tests.golden.regenerate` rewrites tests/golden/<stack>.json; `--check` diffs them.

A PR's diff of these files is its preview diff, without credentials. Long strings (probe sources, scripts)
are replaced by their digest, so the file stays readable while any change to them still shows.
"""

from __future__ import annotations

import argparse
import difflib
import json
import sys

from components.plan import ROOT, run
from components.plan_view.golden import GOLDEN_DIR, sanitize

GOLDEN = GOLDEN_DIR


def stacks() -> list[str]:
    return sorted(p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in ROOT.glob("Pulumi.*.yaml"))


def render(stack: str) -> str:
    plan = run(stack)
    return json.dumps(sanitize(plan.as_dict()), indent=2, sort_keys=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail with a diff instead of rewriting")
    args = parser.parse_args(argv)
    drift = False
    for stack in stacks():
        path = GOLDEN / f"{stack}.json"
        fresh = render(stack)
        if not args.check:
            path.write_text(fresh)
            print(f"wrote {path.relative_to(ROOT)}")
            continue
        old = path.read_text() if path.exists() else ""
        if old != fresh:
            drift = True
            sys.stdout.writelines(difflib.unified_diff(
                old.splitlines(True), fresh.splitlines(True), f"golden/{stack}.json", f"planned/{stack}.json"))
    return 1 if drift else 0


if __name__ == "__main__":
    sys.exit(main())
