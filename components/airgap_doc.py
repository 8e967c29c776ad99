"""docs/airgap.md's lists: each stack's charts and every image it pulls, from the plan itself.

    python -m components.airgap_doc            # print the lists
    python -m components.airgap_doc --write    # rewrite them in docs/airgap.md between the markers

The images are the plan's `images` output, which the chart image table (components/chart_images.py) and the
values the stack sets derive; the charts are the plan's Helm releases. A test keeps the page in step.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from components.plan import EXAMPLE_STACKS, ROOT, run

BEGIN = "<!-- air-gapped:begin -->"
END = "<!-- air-gapped:end -->"
RELEASE = "kubernetes:helm.sh/v3:Release"
PAGE = Path(__file__).resolve().parent.parent / "docs" / "airgap.md"


def _chart_row(inputs: dict[str, Any]) -> str:
    repo = (inputs.get("repositoryOpts") or {}).get("repo")
    chart = inputs["chart"]
    where = f"`{chart}`" if chart.startswith("oci://") else f"`{chart}` from `{repo}`"
    return f"| {where} | `{inputs['version']}` |"


def stack_markdown(stack: str) -> str:
    """One stack: its charts (chart and version) and the images it pulls, with no mirror set."""
    plan = run(stack, root=ROOT)  # the stacks this package carries
    lines = [f"### `{stack}`", ""]
    releases = sorted(plan.find(RELEASE), key=lambda r: r["inputs"]["chart"])
    if releases:
        lines += ["| chart | version |", "|---|---|", *(_chart_row(r["inputs"]) for r in releases), ""]
    else:
        lines += ["No chart: GKE installs the sharing itself.", ""]
    lines += ["```text", *plan.outputs["images"], "```"]
    return "\n".join(lines)


def airgap_markdown() -> str:
    return "\n".join([BEGIN, *(f"{stack_markdown(stack)}\n" for stack in EXAMPLE_STACKS), END])


def rewrite(path: Path = PAGE) -> None:
    text = path.read_text()
    start, end = text.index(BEGIN), text.index(END) + len(END)
    path.write_text(text[:start] + airgap_markdown() + text[end:])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m components.airgap_doc", description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"rewrite the lists in {PAGE.parent.name}/{PAGE.name}")
    if parser.parse_args(argv).write:
        rewrite()
    else:
        sys.stdout.write(airgap_markdown() + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
