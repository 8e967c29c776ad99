"""The offline plan: the whole program under Pulumi's mock engine, no CLI, no cloud, no cluster.

    python -m components.plan STACK [--json] [-c key=value ...]

Loads `Pulumi.STACK.yaml`, applies each `-c` (a dotted key sets a nested value:
`-c gpushare:verify.sliceMiB=4000`; `=null` removes a key), runs `__main__.py` with realistic mock answers and
prints the resource tree, or with `--json` one deterministic object: `{"stack", "resources", "outputs"}`.
Invalid config exits 2 with one line on stderr and registers nothing.
"""

from __future__ import annotations

import argparse
import contextvars
import heapq
import json
import runpy
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
MOCK_SECRET = "mock-secret-value"


class PlanInputError(ValueError):
    """A stack file or `-c` override that cannot be read."""


@dataclass
class Plan:
    """One planned stack: every registration, the component outputs and the stack outputs."""

    stack: str
    resources: list[dict[str, Any]]
    outputs: dict[str, Any]
    component_outputs: dict[str, dict[str, Any]]

    def to_json(self) -> str:
        return json.dumps(
            {"stack": self.stack, "resources": self.resources, "outputs": self.outputs}, indent=2, sort_keys=True
        )

    def find(self, type_: str, name: str | None = None) -> list[dict[str, Any]]:
        """Resources of a type (the full token), optionally of one name."""
        return [r for r in self.resources if r["type"] == type_ and (name is None or r["name"] == name)]

    def one(self, type_: str, name: str | None = None) -> dict[str, Any]:
        found = self.find(type_, name)
        if len(found) != 1:
            raise AssertionError(f"expected one {type_} {name or ''}, found {[r['name'] for r in found]}")
        return found[0]


def read_stack_config(stack: str, overrides: list[str], root: Path = ROOT) -> tuple[dict[str, Any], list[str]]:
    """The stack file's config with `-c` overrides applied, and the keys that hold secrets."""
    path = root / f"Pulumi.{stack}.yaml"
    if not path.exists():
        known = sorted(p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in root.glob("Pulumi.*.yaml"))
        raise PlanInputError(f"no stack file {path.name}; stacks here: {', '.join(known)}")
    config: dict[str, Any] = dict((yaml.safe_load(path.read_text()) or {}).get("config") or {})
    secret_keys: list[str] = []
    for key, value in list(config.items()):
        if isinstance(value, dict) and set(value) == {"secure"}:
            config[key] = MOCK_SECRET
            secret_keys.append(key)
    for item in overrides:
        key, sep, text = item.partition("=")
        if not sep or ":" not in key:
            raise PlanInputError(f"-c {item!r}: write it as namespace:key=value, e.g. gpushare:verify.sliceMiB=4000")
        value = yaml.safe_load(text) if text else ""
        top, *path_parts = key.split(".")
        if not path_parts:
            if value is None:  # `-c gpushare:vm=null` removes a key, as `pulumi config rm` would
                config.pop(top, None)
            else:
                config[top] = value
            continue
        node = config.setdefault(top, {})
        if not isinstance(node, dict):
            raise PlanInputError(f"-c {item!r}: {top} is not an object, so {key} cannot be set")
        for part in path_parts[:-1]:
            node = node.setdefault(part, {})
        node[path_parts[-1]] = value
    return config, secret_keys


def _as_pulumi_config(config: dict[str, Any]) -> dict[str, str]:
    """Config as the engine hands it to a program: strings, structured values as JSON."""
    return {k: v if isinstance(v, str) else json.dumps(v) for k, v in config.items()}


def _order(registrations: list[Any]) -> list[Any]:
    """Parents before children, dependencies before dependents, ties by name: deterministic and readable."""
    by_urn = {r.urn: r for r in registrations}
    children: dict[str, list[str]] = {}
    for r in registrations:
        children.setdefault(r.parent, []).append(r.urn)

    def subtree(urn: str) -> set[str]:
        found = {urn}
        for child in children.get(urn, []):
            found |= subtree(child)
        return found

    # A component waits for whatever its children wait for outside it, so the tree reads in deployment order.
    waits_for: dict[str, set[str]] = {}
    for r in registrations:
        inside = subtree(r.urn)
        outside = {d for u in inside for d in by_urn[u].dependencies} - inside
        waits_for[r.urn] = {r.parent, *outside} - {u for u in outside if r.urn in subtree(u)}
    edges: dict[str, set[str]] = {r.urn: set() for r in registrations}
    indegree = dict.fromkeys(by_urn, 0)
    for r in registrations:
        for before in waits_for[r.urn]:
            if before in by_urn and r.urn not in edges[before]:
                edges[before].add(r.urn)
                indegree[r.urn] += 1
    ready = [(by_urn[u].name, by_urn[u].type, u) for u, d in indegree.items() if d == 0]
    heapq.heapify(ready)
    ordered = []
    while ready:
        *_, urn = heapq.heappop(ready)
        ordered.append(by_urn[urn])
        for nxt in edges[urn]:
            indegree[nxt] -= 1
            if indegree[nxt] == 0:
                heapq.heappush(ready, (by_urn[nxt].name, by_urn[nxt].type, nxt))
    placed = {r.urn for r in ordered}
    # Two components waiting on each other's children form a cycle at component level: list those by name.
    return ordered + sorted((r for r in registrations if r.urn not in placed), key=lambda r: (r.name, r.type))


async def _resolve(value: Any) -> Any:
    import pulumi

    out = pulumi.Output.from_input(value)
    if not await out.is_known():
        return "[unknown]"
    if await out.is_secret():
        return "[secret]"
    return await out.future()


def run(
    stack: str,
    overrides: list[str] | None = None,
    *,
    preview: bool = True,
    mocks: Any = None,
    root: Path = ROOT,
) -> Plan:
    """Plan a stack in a fresh Pulumi runtime state; raises ConfigError for invalid config."""
    config, secret_keys = read_stack_config(stack, overrides or [], root)
    return contextvars.Context().run(_run_in_fresh_context, stack, config, secret_keys, preview, mocks, root)


def _run_in_fresh_context(
    stack: str, config: dict[str, Any], secret_keys: list[str], preview: bool, mocks: Any, root: Path
) -> Plan:
    import pulumi
    from pulumi.runtime import settings
    from pulumi.runtime.stack import run_pulumi_func
    from pulumi.runtime.sync_await import _sync_await

    from components.mocks import GpushareMocks, RecordingMonitor

    mocks = mocks or GpushareMocks()
    monitor = RecordingMonitor(mocks)
    pulumi.runtime.set_all_config(_as_pulumi_config(config), secret_keys)
    pulumi.runtime.set_mocks(mocks, project="gpushare", stack=stack, preview=preview, monitor=monitor)
    # MockSettings leaves the pending-outputs set shared: a run that raised would leak its tasks into the next.
    settings.SETTINGS.outputs = set()

    def program() -> None:
        runpy.run_path(str(root / "__main__.py"), run_name="__main__")

    _sync_await(run_pulumi_func(program))
    stack_resource = settings.get_root_resource()
    outputs = {name: _sync_await(_resolve(v)) for name, v in sorted(stack_resource.outputs.items())}

    names = {r.urn: r.name for r in monitor.registrations}
    resources = [
        {
            "type": r.type,
            "name": r.name,
            "parent": names.get(r.parent),
            "dependsOn": sorted({names[d] for d in r.dependencies if d in names}),
            "inputs": r.inputs,
            **({"options": r.options} if r.options else {}),
        }
        for r in _order(monitor.registrations)
    ]
    component_outputs = {names.get(urn, urn): outs for urn, outs in monitor.component_outputs.items()}
    return Plan(stack, resources, json.loads(json.dumps(outputs, default=str)), component_outputs)


# --- human output ------------------------------------------------------------------------------------------


def _flatten(value: Any, prefix: str = "") -> list[tuple[str, Any]]:
    if isinstance(value, dict) and value:
        return [item for k, v in sorted(value.items()) for item in _flatten(v, f"{prefix}{k}.")]
    return [(prefix.rstrip("."), value)]


def _summary(resource: dict[str, Any]) -> list[str]:
    inputs = resource["inputs"]
    if resource["type"] == "kubernetes:helm.sh/v3:Release":
        repo = (inputs.get("repositoryOpts") or {}).get("repo", "")
        lines = [f"chart {repo + '/' if repo else ''}{inputs.get('chart')} {inputs.get('version')} → "
                 f"{inputs.get('namespace')}"]
        return lines + [f"{k} = {json.dumps(v)}" for k, v in _flatten(inputs.get("values") or {})]
    meta = inputs.get("metadata") or {}
    lines = []
    if meta.get("name"):
        lines.append(f"{meta.get('namespace', '') + '/' if meta.get('namespace') else ''}{meta['name']}")
    for key in ("location", "zone", "machineType", "nodeCount", "minMasterVersion", "sourceRanges", "handler"):
        if key in inputs:
            lines.append(f"{key} = {json.dumps(inputs[key])}")
    return lines


def render_tree(plan: Plan) -> str:
    children: dict[str | None, list[dict[str, Any]]] = {}
    for r in plan.resources:
        children.setdefault(r["parent"], []).append(r)
    lines = [f"stack {plan.stack}: {len(plan.resources)} resources"]

    def walk(parent: str | None, depth: int) -> None:
        for r in children.get(parent, []):
            pad = "  " * depth
            after = f"  (after {', '.join(r['dependsOn'])})" if r["dependsOn"] else ""
            lines.append(f"{pad}├─ {r['type']}  {r['name']}{after}")
            lines.extend(f"{pad}│    {s}" for s in _summary(r))
            walk(r["name"], depth + 1)

    walk(None, 0)
    lines.append("outputs:")
    for name, value in plan.outputs.items():
        text = value if isinstance(value, str) else json.dumps(value)
        lines.append(f"  {name}: {text if len(text) < 300 else text[:300] + '…'}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m components.plan", description=__doc__.splitlines()[0])
    parser.add_argument("stack", help="stack name: the STACK of Pulumi.STACK.yaml")
    parser.add_argument("--json", action="store_true", help="print one deterministic JSON object")
    parser.add_argument("-c", "--config", action="append", default=[], metavar="KEY=VALUE",
                        help="override a config value; dotted keys set nested values")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from components.config import ConfigError

    try:
        plan = run(args.stack, args.config)
    except (ConfigError, PlanInputError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(plan.to_json() if args.json else render_tree(plan))
    return 0


if __name__ == "__main__":
    sys.exit(main())
