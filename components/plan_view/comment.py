"""The pull-request comment: each stack's Markdown plan with its dependency graph folded beneath it.

    python -m components.plan_view.comment [STACK ...] [--against DIR]     (all stacks when none is named)

`--against` compares with the golden plans in DIR, named after where they come from: in a pull request the
base branch's tests/golden/ (the branch's own golden files already match its plan; the base's show what the
pull request changes).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from components.plan import run, stacks
from components.plan_view import markdown, mermaid
from components.plan_view.golden import GOLDEN_DIR, golden_plan

TITLE = "## Offline plan (Pulumi's mock engine, no credentials)"
GITHUB_COMMENT_LIMIT = 65536
"""Characters GitHub accepts in one pull-request comment."""


CUT = "\n\n… cut at GitHub's comment limit: `python -m components.plan_view.comment` prints the whole.\n"


def render(names: list[str], against: Path = GOLDEN_DIR) -> str:
    """The comment; past GitHub's limit without the graphs, and past it still, cut with a pointer to the whole."""
    bodies, graphs = [], []
    for stack in names:
        plan = run(stack)
        name = f"tests/golden/{stack}.json" + ("" if against == GOLDEN_DIR else f" of {against.name}")
        # Each stack's report would repeat the same prose, and GitHub caps a comment's length.
        bodies.append(markdown.render(plan, golden=golden_plan(stack, against), golden_name=name, long_outputs=False))
        graphs.append(f"<details><summary>dependency graph</summary>\n\n```mermaid\n{mermaid.render(plan)}\n```"
                      "\n\n</details>")
    whole = "\n\n".join([TITLE, *(part for pair in zip(bodies, graphs, strict=True) for part in pair)]) + "\n"
    if len(whole) < GITHUB_COMMENT_LIMIT:
        return whole
    without_graphs = "\n\n".join([TITLE, *bodies, "(graphs left out: `--mermaid` prints them)"]) + "\n"
    if len(without_graphs) < GITHUB_COMMENT_LIMIT:
        return without_graphs
    return without_graphs[: GITHUB_COMMENT_LIMIT - len(CUT) - 1] + CUT


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m components.plan_view.comment", description=__doc__.splitlines()[0])
    parser.add_argument("stacks", nargs="*", help="stack names; all when none")
    parser.add_argument("--against", type=Path, default=GOLDEN_DIR, help="folder of golden plans to compare with")
    args = parser.parse_args(argv)
    names = args.stacks or stacks()
    unknown = sorted(set(names) - set(stacks()))
    if unknown:
        print(f"error: no stack file for {', '.join(unknown)}; stacks here: {', '.join(stacks())}", file=sys.stderr)
        return 2
    sys.stdout.write(render(names, args.against))
    return 0


if __name__ == "__main__":
    sys.exit(main())
