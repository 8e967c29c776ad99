"""The plan as Markdown for a pull-request comment: counts, a resource table, what changed against the golden plan."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from components.plan_view.fields import review_fields
from components.plan_view.golden import sanitize
from components.plan_view.graph import Graph
from components.plan_view.text import header
from components.plan_view.unknowns import mask

if TYPE_CHECKING:
    from components.mocks import Invented
    from components.plan import Plan

CELL_LIMIT = 120
"""A changed value longer than this is cut in the change list; the golden diff has it whole."""


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", "<br>")


def _short_type(token: str) -> str:
    return token.rsplit(":", 1)[-1]


def _leaves(value: Any, path: str = "") -> dict[str, Any]:
    if isinstance(value, dict) and value:
        return {p: v for k, sub in value.items() for p, v in _leaves(sub, f"{path}.{k}" if path else k).items()}
    if isinstance(value, list) and value:
        return {p: v for i, sub in enumerate(value) for p, v in _leaves(sub, f"{path}[{i}]").items()}
    return {path: value}


def _shown(value: Any, invented: Invented) -> str:
    text = json.dumps(mask(value, invented), sort_keys=True)
    return text if len(text) <= CELL_LIMIT else text[: CELL_LIMIT - 1] + "…"


def changes(plan: Plan, golden: dict[str, Any]) -> list[str]:
    """One line per resource added, removed or changed (with each changed input), and per output changed."""
    fresh = sanitize(plan.as_dict())
    old = {r["name"]: r for r in golden.get("resources", [])}
    new = {r["name"]: r for r in fresh["resources"]}
    lines = [f"- added `{n}` ({_short_type(new[n]['type'])})" for n in new if n not in old]
    lines += [f"- removed `{n}` ({_short_type(old[n]['type'])})" for n in old if n not in new]
    for name in (n for n in new if n in old):
        before, after = _leaves({k: v for k, v in old[name].items() if k != "name"}), _leaves(
            {k: v for k, v in new[name].items() if k != "name"})
        for path in sorted(set(before) | set(after)):
            if before.get(path) != after.get(path):
                lines.append(f"- `{name}` {path}: {_shown(before.get(path), plan.invented)} → "
                             f"{_shown(after.get(path), plan.invented)}")
    before, after = _leaves(golden.get("outputs", {})), _leaves(fresh["outputs"])
    for path in sorted(set(before) | set(after)):
        if before.get(path) != after.get(path):
            lines.append(f"- output {path}: {_shown(before.get(path), plan.invented)} → "
                         f"{_shown(after.get(path), plan.invented)}")
    return lines


def render(plan: Plan, golden: dict[str, Any] | None = None, golden_name: str | None = None,
           long_outputs: bool = True) -> str:
    """`golden` is the plan to compare with, `golden_name` where it comes from (tests/golden/<stack>.json);
    without `long_outputs`, multi-line outputs (the report) are named, not shown."""
    golden_name = golden_name or f"tests/golden/{plan.stack}.json"
    graph = Graph(plan)
    lines = [
        f"### Offline plan of `{plan.stack}`",
        "",
        f"{header(plan).split(': ', 1)[1]}, planned under Pulumi's mock engine. "
        "Values a real preview cannot know yet read *(known after create)* or *(looked up in the cloud)*.",
        "",
        "| resource | type | in | after | what to check |",
        "|---|---|---|---|---|",
    ]
    for r in plan.resources:
        if graph.kind(r["name"]) == "component":
            continue
        checks = "; ".join(f"{label}: {text}" for label, text in review_fields(
            {**r, "inputs": mask(r["inputs"], plan.invented)}))
        after = ", ".join(graph.fold(set(r["dependsOn"]), r["name"]))
        lines.append(f"| `{r['name']}` | {_short_type(r['type'])} | {r['parent'] or ''} | {_cell(after)} | "
                     f"{_cell(checks)} |")
    lines += ["", "#### Against the golden plan", ""]
    if golden is None:
        lines.append(f"No golden plan `{golden_name}` to compare with.")
    elif found := changes(plan, golden):
        lines += [f"`{golden_name}` → this plan:", "", *found]
    else:
        lines.append(f"Same as `{golden_name}`.")
    lines += ["", "#### Outputs", "", "| output | value |", "|---|---|"]
    outputs = mask(plan.outputs, plan.invented)
    long_texts = {name: v for name, v in outputs.items() if isinstance(v, str) and "\n" in v}
    for name, value in outputs.items():
        if name in long_texts:
            shown = "below" if long_outputs else f"{value.count(chr(10)) + 1} lines: `--markdown` has it whole"
        elif isinstance(value, str):
            shown = value
        else:
            text = json.dumps(value, sort_keys=True)
            flat = isinstance(value, list) and all(isinstance(v, str | int | float | bool) for v in value)
            if len(text) <= CELL_LIMIT:
                shown = f"`{text}`"
            elif flat:
                shown = "\n".join(f"`{v}`" for v in value)
            else:
                shown = "structured: `--json` has it whole"
        lines.append(f"| `{name}` | {_cell(shown)} |")
    for name, text in long_texts.items() if long_outputs else ():
        lines += ["", f"<details><summary><code>{name}</code></summary>", "", text.rstrip("\n"), "", "</details>"]
    return "\n".join(lines)
