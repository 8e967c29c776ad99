"""Every rule of the pack, in one list: the policy pack, the offline harness and the README read it."""

from __future__ import annotations

from pulumi_policy import Policy

from policies import gpu_operator, hami, helm, isolator, kai, network, stack, workloads
from policies.rule import Rule

PACK_NAME = "gpushare"
RULES: list[Rule] = [
    *kai.RULES,
    *isolator.RULES,
    *hami.RULES,
    *gpu_operator.RULES,
    *helm.RULES,
    *network.RULES,
    *workloads.RULES,
    *stack.RULES,
]


def build_policies(*, secret_markers: bool = True) -> list[Policy]:
    """The pulumi_policy objects; `secret_markers` says whether stack rules can tell secret outputs apart."""
    return [rule.policy(secret_markers=secret_markers) for rule in RULES]


def rule(name: str) -> Rule:
    """A rule by its policy name."""
    return next(r for r in RULES if r.name == name)
