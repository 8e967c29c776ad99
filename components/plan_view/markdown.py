"""The plan as Markdown for a pull request: what changes against the golden plan first, each resource marked with
its operation; the full plan (resource table, outputs) folded beneath it."""

from __future__ import annotations

import difflib
import json
from typing import Any

from components.plan_view.diff import MISSING, StackDiff, ValueChange, compare
from components.plan_view.fields import review_fields
from components.plan_view.golden import FILE, comparable, compared, is_file_ref
from components.plan_view.graph import Graph
from components.plan_view.model import Plan
from components.plan_view.unknowns import mask

CELL_LIMIT = 120
"""An output longer than this as JSON is named in the table, not shown; --json has it."""
CONTEXT = 40
"""Characters kept either side of what differs in a long one-line value."""


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", "<br>")


def _short_type(token: str) -> str:
    return token.rsplit(":", 1)[-1]


def code(text: str) -> str:
    """Inline code that survives backticks inside it."""
    fence = "``" if "`" in text else "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _json(value: Any) -> str:
    return "(absent)" if value is MISSING else json.dumps(value, sort_keys=True, ensure_ascii=False)


def _multiline(value: Any) -> bool:
    return isinstance(value, str) and "\n" in value


def _around(before: str, after: str) -> tuple[str, str]:
    """Long one-line texts cut to what differs and CONTEXT characters around it, never to the same text."""
    start = 0
    while start < min(len(before), len(after)) and before[start] == after[start]:
        start += 1
    end = 0
    while end < min(len(before), len(after)) - start and before[-1 - end] == after[-1 - end]:
        end += 1
    lo = max(0, start - CONTEXT)

    def cut(text: str) -> str:
        hi = min(len(text), len(text) - end + CONTEXT)
        return ("…" if lo else "") + text[lo:hi] + ("…" if hi < len(text) else "")

    return cut(before), cut(after)


def change_lines(change: ValueChange) -> list[str]:
    """One changed value as Markdown: a unified diff of lines for text and lists, `before` → `after` otherwise."""
    where = code(change.pointer or "/")
    mark = f" — **replaces**: {change.replaces}" if change.replaces else ""
    if is_file_ref(change.after) or is_file_ref(change.before):
        path = (change.after if is_file_ref(change.after) else change.before)[FILE]
        return [
            f"- {where}: the repository's {code(path)} changed{mark}: this pull request's diff of that file has "
            "its lines"
        ]
    if change.is_list:
        body = [f"- {_json(v)}" for v in change.removed] + [f"+ {_json(v)}" for v in change.added]
        return [f"- {where}{mark}", "", "  ```diff", *(f"  {line}" for line in body), "  ```", ""]
    if _multiline(change.before) or _multiline(change.after):
        old = change.before.split("\n") if isinstance(change.before, str) else []
        new = change.after.split("\n") if isinstance(change.after, str) else []
        body = list(difflib.unified_diff(old, new, "before", "after", n=2, lineterm=""))[2:]
        return [f"- {where}{mark}", "", "  ```diff", *(f"  {line}" for line in body), "  ```", ""]
    before, after = _json(change.before), _json(change.after)
    if len(before) + len(after) > 2 * CELL_LIMIT and isinstance(change.before, str) and isinstance(change.after, str):
        before, after = _around(before, after)
        return [f"- {where}{mark}", "", "  ```diff", f"  - {before}", f"  + {after}", "  ```", ""]
    return [f"- {where}: {code(before)} → {code(after)}{mark}"]


def diff_section(diff: StackDiff) -> list[str]:
    """Each resource that changes, marked with its operation, with its changed values; then changed outputs."""
    lines: list[str] = []
    for resource in diff.resources:
        first = " (deleted first)" if resource.delete_first else ""
        lines += [f"**`{resource.mark}`**{first} {code(resource.name)} ({_short_type(resource.type)})", ""]
        for change in resource.changes:
            lines += change_lines(change)
        lines.append("")
    if diff.outputs:
        lines += ["**outputs**", ""]
        for change in diff.outputs:
            lines += change_lines(change)
        lines.append("")
    return lines


def stack_diff(plan: Plan, golden: dict[str, Any] | None, golden_name: str) -> StackDiff | None:
    return None if golden is None else compare(comparable(golden, plan), compared(plan), golden_name)


def _outputs(plan: Plan, long_outputs: bool) -> list[str]:
    lines = ["| output | value |", "|---|---|"]
    outputs = mask(plan.outputs, plan.invented)
    long_texts = {name: v for name, v in outputs.items() if isinstance(v, str) and "\n" in v}
    for name, value in outputs.items():
        if name in long_texts:
            shown = "below" if long_outputs else f"{value.count(chr(10)) + 1} lines: `--markdown` has it whole"
        elif isinstance(value, str):
            shown = value
        else:
            text = json.dumps(value, sort_keys=True, ensure_ascii=False)
            flat = isinstance(value, list) and all(isinstance(v, str | int | float | bool) for v in value)
            if len(text) <= CELL_LIMIT:
                shown = code(text)
            elif flat:
                shown = "\n".join(code(str(v)) for v in value)
            else:
                shown = "structured: `--json` has it whole"
        lines.append(f"| `{name}` | {_cell(shown)} |")
    for name, text in long_texts.items() if long_outputs else ():
        lines += ["", f"<details><summary><code>{name}</code></summary>", "", text.rstrip("\n"), "", "</details>"]
    return lines


def full_plan(plan: Plan, long_outputs: bool = True) -> list[str]:
    """The resource table (what to check on each) and the outputs."""
    graph = Graph(plan)
    lines = [
        f"{plan.count_text()}, planned under Pulumi's mock engine. "
        "Values a real preview cannot know yet read *(known after create)*, *(looked up in the cloud)* or "
        "*(read from the cluster at up)*.",
        "",
        "| resource | type | in | after | what to check |",
        "|---|---|---|---|---|",
    ]
    for r in plan.resources:
        if graph.kind(r["name"]) == "component":
            continue
        checks = "; ".join(
            f"{label}: {text}" for label, text in review_fields({**r, "inputs": mask(r["inputs"], plan.invented)})
        )
        after = ", ".join(graph.fold(set(r["dependsOn"]), r["name"]))
        lines.append(
            f"| `{r['name']}` | {_short_type(r['type'])} | {r['parent'] or ''} | {_cell(after)} | {_cell(checks)} |"
        )
    return [*lines, "", "#### Outputs", "", *_outputs(plan, long_outputs)]


def render(
    plan: Plan, golden: dict[str, Any] | None = None, golden_name: str | None = None, long_outputs: bool = True
) -> str:
    """`golden` is the plan to compare with, `golden_name` where it comes from (tests/golden/<stack>.json);
    without `long_outputs`, multi-line outputs (the report) are named, not shown."""
    golden_name = golden_name or f"tests/golden/{plan.stack}.json"
    diff = stack_diff(plan, golden, golden_name)
    summary = diff.summary() if diff else f"{plan.stack}: no golden plan `{golden_name}` to compare with"
    lines = [f"### {summary}", ""]
    if diff is not None:
        lines += (
            [f"Against `{golden_name}`:", "", *diff_section(diff)]
            if diff.resources or diff.outputs
            else [f"Same as `{golden_name}`.", ""]
        )
    lines += [
        f"<details><summary>Full plan of <code>{plan.stack}</code></summary>",
        "",
        *full_plan(plan, long_outputs),
        "",
        "</details>",
    ]
    return "\n".join(lines)
