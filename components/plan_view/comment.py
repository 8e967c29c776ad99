"""The pull-request comment: one summary line per stack, then what each changed stack changes, then every
stack's full plan folded (`<details>`).

    python -m components.plan_view.comment [STACK ...] [--against DIR]     (all stacks when none is named)

`--against` compares with the golden plans in DIR, named after where they come from: in a pull request the
base branch's tests/golden/ (the branch's own golden files already match its plan; the base's show what the
pull request changes). A stack that does not change shows its resources by name only, so a pull request that
changes nothing gets a short comment.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from components.plan import run, stacks
from components.plan_view import markdown, mermaid
from components.plan_view.golden import GOLDEN_DIR, golden_plan
from components.plan_view.graph import Graph
from components.plan_view.model import Plan

TITLE = "## Offline plan (Pulumi's mock engine, no credentials)"
GITHUB_COMMENT_LIMIT = 65536
"""Characters GitHub accepts in one pull-request comment."""
HOW = "Each resource's inputs: `python -m components.plan STACK --markdown`; the tree: without `--markdown`."
CUT = "\n\n… cut at GitHub's comment limit: `python -m components.plan_view.comment` prints the whole.\n"


def names_only(plan: Plan) -> list[str]:
    """The plan's resources by name, one line per component: the full plan of a stack that does not change."""
    graph = Graph(plan)
    lines = []
    for r in plan.resources:
        if graph.kind(r["name"]) != "component":
            continue
        own = [c["name"] for c in graph.children.get(r["name"], []) if graph.kind(c["name"]) != "component"]
        if own:
            lines.append(f"- `{r['name']}` ({markdown._short_type(r['type'])}): {', '.join(own)}")
    return lines


def _stack_parts(stack: str, against: Path, graphs: bool) -> tuple[str, str]:
    """(summary line, section) for one stack."""
    plan = run(stack)
    name = f"tests/golden/{stack}.json" + ("" if against == GOLDEN_DIR else f" of {against.name}")
    diff = markdown.stack_diff(plan, golden_plan(stack, against), name)
    summary = diff.summary() if diff else f"{stack}: no golden plan `{name}` to compare with"
    if diff is not None and not diff.resources and not diff.outputs:
        # GitHub caps a comment: the count alone, the tree's first line has what it is made of
        section = "\n".join(
            [
                f"<details><summary>{stack}: {plan.count_text(parts=False)}</summary>",
                "",
                *names_only(plan),
                "",
                "</details>",
            ]
        )
        return summary, section
    graph = (
        [
            f"<details><summary>dependency graph of <code>{stack}</code></summary>",
            "",
            "```mermaid",
            mermaid.render(plan),
            "```",
            "",
            "</details>",
        ]
        if graphs
        else []
    )
    # Each stack's report would repeat the same prose, and GitHub caps a comment's length.
    body = markdown.render(plan, golden=golden_plan(stack, against), golden_name=name, long_outputs=False)
    return summary, "\n".join([body, *([""] if graph else []), *graph])


def render(names: list[str], against: Path = GOLDEN_DIR) -> str:
    """The comment; past GitHub's limit without the graphs, and past it still, cut with a pointer to the whole."""
    for graphs in (True, False):
        parts = [_stack_parts(stack, against, graphs) for stack in names]
        whole = (
            "\n\n".join(
                [TITLE, "\n".join(f"- {summary}" for summary, _ in parts), HOW, *(section for _, section in parts)]
            )
            + "\n"
        )
        if len(whole) < GITHUB_COMMENT_LIMIT:
            return whole
    return whole[: GITHUB_COMMENT_LIMIT - len(CUT) - 1] + CUT


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
