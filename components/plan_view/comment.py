"""The pull-request comment: each stack's Markdown plan with its dependency graph folded beneath it.

    python -m components.plan_view.comment [STACK ...]     (all stacks when none is named)
"""

from __future__ import annotations

import sys

from components.plan import ROOT, run
from components.plan_view import markdown, mermaid
from components.plan_view.golden import golden_plan

TITLE = "## Offline plan (Pulumi's mock engine, no credentials)"


def stacks() -> list[str]:
    return sorted(p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in ROOT.glob("Pulumi.*.yaml"))


def render(names: list[str]) -> str:
    parts = [TITLE]
    for stack in names:
        plan = run(stack)
        graph = f"<details><summary>dependency graph</summary>\n\n```mermaid\n{mermaid.render(plan)}\n```\n\n</details>"
        parts += [markdown.render(plan, golden=golden_plan(stack, [])), graph]
    return "\n\n".join(parts) + "\n"


def main(argv: list[str] | None = None) -> int:
    names = (sys.argv[1:] if argv is None else argv) or stacks()
    unknown = sorted(set(names) - set(stacks()))
    if unknown:
        print(f"error: no stack file for {', '.join(unknown)}; stacks here: {', '.join(stacks())}", file=sys.stderr)
        return 2
    sys.stdout.write(render(names))
    return 0


if __name__ == "__main__":
    sys.exit(main())
