"""Run the pack without the Pulumi CLI: feed planned resources to each rule as the CLI would, collect diagnostics.

    python -m policies.harness STACK [--config policies/config/STACK.json] [-c key=value ...]

plans STACK offline (`components.plan`), runs every resource rule on every resource and every stack rule
on the whole graph plus a `pulumi:pulumi:Stack` resource holding the stack outputs, and exits 1 when a
mandatory rule is violated. Resource inputs stand in for outputs in stack rules, as the plan has no state.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pulumi_policy import EnforcementLevel, Policy, ResourceValidationPolicy, StackValidationPolicy

from components import pulumi_internals as sdk
from policies.model import STACK
from policies.pack import build_policies

CONFIG_DIR = Path(__file__).resolve().parent / "config"


@dataclass(frozen=True)
class Diagnostic:
    """One violation: which policy, at which level, about which resource, and the message that says the fix."""

    policy: str
    level: str
    message: str
    resource: str = ""

    def __str__(self) -> str:
        where = f" [{self.resource}]" if self.resource else ""
        return f"{self.level}: {self.policy}{where}: {self.message}"


def _urn(stack: str, type_: str, name: str) -> str:
    return f"urn:pulumi:{stack}::gpushare::{type_}::{name}"


def _level(policy: Policy, config: Mapping[str, Any]) -> EnforcementLevel:
    setting = config.get(policy.name)
    if isinstance(setting, str):
        return EnforcementLevel(setting)
    if isinstance(setting, Mapping) and "enforcementLevel" in setting:
        return EnforcementLevel(setting["enforcementLevel"])
    return policy.enforcement_level or EnforcementLevel.ADVISORY


def _properties(policy: Policy, config: Mapping[str, Any]) -> dict[str, Any]:
    setting = config.get(policy.name)
    if not isinstance(setting, Mapping):
        return {}
    return {k: v for k, v in setting.items() if k != "enforcementLevel"}


def run_pack(
    resources: Sequence[Mapping[str, Any]],
    outputs: Mapping[str, Any],
    config: Mapping[str, Any] | None = None,
    *,
    stack: str = "stack",
    policies: Sequence[Policy] | None = None,
) -> list[Diagnostic]:
    """Diagnostics of the pack on resources shaped like the plan's (`type`, `name`, `inputs`) and stack outputs."""
    config = config or {}
    policies = list(policies) if policies is not None else build_policies()
    named = [(r["type"], r["name"], _urn(stack, r["type"], r["name"]), r.get("inputs") or {}) for r in resources]
    stack_urn = _urn(stack, STACK, f"gpushare-{stack}")
    found: list[Diagnostic] = []

    for policy in policies:
        level = _level(policy, config)
        if level == EnforcementLevel.DISABLED:
            continue

        def report(
            message: str,
            urn: str | None = None,
            *,
            _p: Policy = policy,
            _l: EnforcementLevel = level,
            _default: str = "",
        ) -> None:
            found.append(Diagnostic(_p.name, _l.value, message, urn or _default))

        if isinstance(policy, ResourceValidationPolicy):
            for type_, name, urn, inputs in named:
                args = sdk.resource_validation_args(type_, inputs, urn, name, _properties(policy, config))
                policy.validate(args, functools.partial(report, _default=urn))
        elif isinstance(policy, StackValidationPolicy):
            graph = [sdk.policy_resource(t, i, u, n) for t, n, u, i in named]
            graph.append(sdk.policy_resource(STACK, dict(outputs), stack_urn, f"gpushare-{stack}"))
            policy.validate(sdk.stack_validation_args(graph, _properties(policy, config)), report)
    return found


def stack_config(stack: str) -> dict[str, Any]:
    """The policy config CI passes for one of our stacks (`policies/config/STACK.json`), or none."""
    path = CONFIG_DIR / f"{stack}.json"
    return json.loads(path.read_text()) if path.exists() else {}


def run_plan(plan: Any, config: Mapping[str, Any] | None = None) -> list[Diagnostic]:
    """The pack on a `components.plan.Plan`; config defaults to the stack's file under policies/config/."""
    return run_pack(
        plan.resources, plan.outputs, stack_config(plan.stack) if config is None else config, stack=plan.stack
    )


def mandatory(diagnostics: Sequence[Diagnostic]) -> list[Diagnostic]:
    return [d for d in diagnostics if d.level == EnforcementLevel.MANDATORY.value]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m policies.harness", description=__doc__.splitlines()[0])
    parser.add_argument("stack")
    parser.add_argument("--config", type=Path, help="policy config JSON (default: policies/config/STACK.json)")
    parser.add_argument("-c", action="append", default=[], metavar="KEY=VALUE", help="stack config override")
    args = parser.parse_args(argv)
    from components.contracts.errors import InputError
    from components.plan import PlanInputError, run

    try:
        plan = run(args.stack, args.c)
    except (InputError, PlanInputError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    config = json.loads(args.config.read_text()) if args.config else None
    diagnostics = run_plan(plan, config)
    for d in diagnostics:
        print(d)
    print(
        f"{plan.count_text()}: {len(mandatory(diagnostics))} mandatory, "
        f"{len(diagnostics) - len(mandatory(diagnostics))} advisory"
    )
    return 1 if mandatory(diagnostics) else 0


if __name__ == "__main__":
    sys.exit(main())
