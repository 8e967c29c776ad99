"""Golden plans: `python -m tests.golden.regenerate` rewrites tests/golden/<stack>.json; `--check` diffs them.

A PR's diff of these files is its preview diff, without credentials. Long strings (probe sources, scripts)
are replaced by their digest, so the file stays readable while any change to them still shows.
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

from components.plan import ROOT, run

GOLDEN = Path(__file__).resolve().parent
LONG = 400


def sanitize(value: Any) -> Any:
    """Digests for long strings; everything else as planned (the mocks already make the plan deterministic)."""
    if isinstance(value, dict):
        return {k: sanitize(v) for k, v in value.items()}
    if isinstance(value, list):
        return [sanitize(v) for v in value]
    if isinstance(value, str) and len(value) > LONG:
        digest = hashlib.sha256(value.encode()).hexdigest()[:16]
        return f"<{len(value)} chars sha256:{digest}>"
    return value


def stacks() -> list[str]:
    return sorted(p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in ROOT.glob("Pulumi.*.yaml"))


def render(stack: str) -> str:
    plan = run(stack)
    body = {"stack": plan.stack, "resources": plan.resources, "outputs": plan.outputs}
    return json.dumps(sanitize(body), indent=2, sort_keys=True) + "\n"


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
