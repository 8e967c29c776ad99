"""Stack outputs: a kubeconfig is a credential, so it leaves the stack only as a secret."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from policies.model import SECRET, STACK, UNKNOWN, Finding, Res
from policies.rule import Rule


def looks_like_kubeconfig(name: str, value: Any) -> bool:
    """An output named *kubeconfig*, or whose text carries a kubeconfig's clusters and users."""
    if "kubeconfig" in name.lower():
        return True
    if isinstance(value, Mapping):
        return "clusters" in value and "users" in value
    return isinstance(value, str) and "clusters" in value and "users" in value and "server" in value


def check_kubeconfig_output_is_secret(
    resources: Sequence[Res], config: Mapping[str, Any] | None = None
) -> list[Finding]:
    """Every kubeconfig among the stack outputs must be a secret (shown as "[secret]")."""
    findings = []
    for r in resources:
        if r.type != STACK:
            continue
        for name, value in r.props.items():
            if value in (SECRET, UNKNOWN, None, "") or not looks_like_kubeconfig(name, value):
                continue
            findings.append(
                Finding(
                    f"stack output {name!r} holds a kubeconfig in plaintext: anyone who can read the stack's state "
                    "or `pulumi stack output` gets cluster credentials; export it with pulumi.Output.secret(...)",
                    r.urn,
                )
            )
    return findings


RULES = [
    Rule(
        "kubeconfig-output-is-secret",
        "A kubeconfig in the stack outputs must be a secret.",
        "mandatory",
        "lab 7, lab 12",
        "cluster credentials in plaintext in the stack state and outputs",
        stack_check=check_kubeconfig_output_is_secret,
        needs_secret_markers=True,
    ),
]
