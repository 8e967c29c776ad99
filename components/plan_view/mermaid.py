"""The dependency graph as a Mermaid flowchart, which GitHub renders: components as boxes, edges reduced."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from components.plan_view.graph import Graph

if TYPE_CHECKING:
    from components.plan_view.model import Plan


def node_id(name: str) -> str:
    return "n_" + re.sub(r"[^A-Za-z0-9_]", "_", name)


def reduced_edges(graph: Graph, names: list[str]) -> list[tuple[str, str]]:
    """Dependency edges (before, after) without those another path already implies: the graph stays legible."""
    deps = {n: set(graph.by_name[n]["dependsOn"]) & set(names) for n in names}
    reach: dict[str, set[str]] = {}

    def ancestors(n: str) -> set[str]:
        if n not in reach:
            reach[n] = set()
            for d in deps[n]:
                reach[n] |= {d} | ancestors(d)
        return reach[n]

    edges = []
    for n in names:
        for d in sorted(deps[n]):
            if not any(d in ancestors(other) for other in deps[n] - {d}):
                edges.append((d, n))
    return edges


def render(plan: Plan) -> str:
    graph = Graph(plan)
    lines = ["flowchart LR"]

    def walk(parent: str | None, depth: int) -> None:
        pad = "  " * (depth + 1)
        for r in graph.children.get(parent, []):
            kind = graph.kind(r["name"])
            label = f"{r['name']}<br/>{r['type'].rsplit(':', 1)[-1]}"
            if kind == "component":
                lines.append(f'{pad}subgraph {node_id(r["name"])}["{label}"]')
                walk(r["name"], depth + 1)
                lines.append(f"{pad}end")
            else:
                shape = ('[("', '")]') if kind == "provider" else ('["', '"]')
                lines.append(f"{pad}{node_id(r['name'])}{shape[0]}{label}{shape[1]}")
                walk(r["name"], depth + 1)

    walk(None, 0)
    real = [r["name"] for r in plan.resources if graph.kind(r["name"]) != "component"]
    lines += [f"  {node_id(before)} --> {node_id(after)}" for before, after in reduced_edges(graph, real)]
    return "\n".join(lines)
