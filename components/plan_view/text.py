"""The plan as a tree for a terminal: what is created, under which component, after what, with what inputs."""

from __future__ import annotations

import json
import textwrap
from typing import TYPE_CHECKING, Any

from components.plan_view.fields import review_fields
from components.plan_view.graph import Graph, after_text
from components.plan_view.unknowns import mask

if TYPE_CHECKING:
    from components.plan_view.model import Plan

OUTPUT_JSON_LIMIT = 200
"""A structured output longer than this as JSON is summarised, with a pointer to --json."""
OUTPUT_LINES_LIMIT = 12
"""A multi-line output longer than this is folded to its first line and a pointer to where it is whole."""
WIDTH = 120
"""No line of the tree is wider: a longer one continues on the next, under its own indent."""


def header(plan: Plan) -> str:
    return f"stack {plan.stack}: {plan.count_text()}"


def _shape(value: Any) -> str:
    if isinstance(value, dict):
        parts = [f"{k} ({len(v)})" if isinstance(v, list | dict) else k for k, v in value.items()]
        return f"an object: {', '.join(parts)}"
    return f"a list of {len(value)}"


def output_lines(name: str, value: Any, indent: str = "  ") -> list[str]:
    """One output: whole, multi-line text indented under its name, or a summary that points to --json."""
    if isinstance(value, str) and "\n" in value:
        body = value.rstrip("\n").splitlines()
        if len(body) > OUTPUT_LINES_LIMIT:
            return [
                f"{indent}{name}: {len(body)} lines, folded: {body[0].strip()} … "
                f"(`pulumi stack output {name}` after `up`; --json here)"
            ]
        return [f"{indent}{name}: |", *(f"{indent}  {line}".rstrip() for line in body)]
    if isinstance(value, str):
        return [f"{indent}{name}: {value}"]
    compact = json.dumps(value, sort_keys=True)
    if len(compact) <= OUTPUT_JSON_LIMIT or not isinstance(value, dict | list):
        return [f"{indent}{name}: {compact}"]
    # A flat list or object reads whole, one item a line; nested structure is for --json.
    if isinstance(value, list) and all(_is_scalar(v) for v in value):
        return [f"{indent}{name}:", *(f"{indent}  - {_scalar(v)}" for v in value)]
    if isinstance(value, dict) and all(_is_scalar(v) for v in value.values()):
        return [f"{indent}{name}:", *(f"{indent}  {k}: {_scalar(v)}" for k, v in value.items())]
    return [f"{indent}{name}: {_shape(value)} (--json has the whole output)"]


def _is_scalar(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def _scalar(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def wrap(line: str, width: int = WIDTH) -> list[str]:
    """A line no wider than `width`: the rest continues under the text's indent (tree bars kept)."""
    if len(line) <= width:
        return [line]
    body = line.lstrip("│├└─ ")
    lead = line[: len(line) - len(body)]
    follow = lead.replace("├─", "│ ").replace("└─", "  ") + "    "
    return textwrap.wrap(
        body, width=width, initial_indent=lead, subsequent_indent=follow, break_long_words=True, break_on_hyphens=False
    ) or [line[:width]]


def render(plan: Plan) -> str:
    graph = Graph(plan)
    lines = [header(plan)]

    def walk(parent: str | None, prefix: str) -> None:
        siblings = graph.children.get(parent, [])
        for index, r in enumerate(siblings):
            last = index == len(siblings) - 1
            branch = "└─ " if last else "├─ "
            lines.append(f"{prefix}{branch}{r['type']}  {r['name']}{after_text(graph.after(r['name']))}")
            below = prefix + ("   " if last else "│  ")
            detail = below + ("│  " if graph.children.get(r["name"]) else "   ")
            for label, text in review_fields({**r, "inputs": mask(r["inputs"], plan.invented)}):
                first, *rest = text.splitlines() or [""]
                lines.append(f"{detail}{label}: {first}")
                lines.extend(f"{detail}{' ' * (len(label) + 2)}{line}" for line in rest)
            walk(r["name"], below)

    walk(None, "")
    lines.append("outputs:")
    for name, value in mask(plan.outputs, plan.invented).items():
        lines.extend(output_lines(name, value))
    return "\n".join(wrapped for line in lines for wrapped in wrap(line))
