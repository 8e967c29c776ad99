"""GCE firewalls in front of a GPU VM (lab 7): SSH and the Kubernetes API never open to the whole internet."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from policies.model import FIREWALL
from policies.rule import Rule

GUARDED_PORTS = {22: "SSH", 6443: "the Kubernetes API"}
WORLD = ("0.0.0.0/0", "::/0")


def _ports_opened(allow: Mapping[str, Any]) -> set[int]:
    protocol = str(allow.get("protocol") or "").lower()
    if protocol not in ("tcp", "all"):
        return set()
    ports = allow.get("ports") or []
    if not ports:
        return set(GUARDED_PORTS)  # no ports listed opens every port of the protocol
    opened = set()
    for spec in ports:
        low, _, high = str(spec).partition("-")
        if low.isdigit() and (high or low).isdigit():
            opened |= {p for p in GUARDED_PORTS if int(low) <= p <= int(high or low)}
    return opened


def check_firewall_ssh_api_not_world_open(
    resource_type: str, props: Mapping[str, Any], config: Mapping[str, Any] | None = None
) -> list[str]:
    """An INGRESS rule that admits 0.0.0.0/0 must not open port 22 or 6443."""
    if resource_type != FIREWALL or str(props.get("direction") or "INGRESS").upper() != "INGRESS":
        return []
    world = [r for r in props.get("sourceRanges") or [] if r in WORLD]
    if not world:
        return []
    opened = sorted(
        {p for allow in props.get("allows") or [] if isinstance(allow, Mapping) for p in _ports_opened(allow)}
    )
    return [
        f"firewall admits {world[0]} to port {p} ({GUARDED_PORTS[p]}): anyone can try to log in or reach the "
        "cluster's admin API; list your own CIDR (such as 203.0.113.7/32) in sourceRanges "
        "(gpushare:vm.allowedSourceRanges)"
        for p in opened
    ]


RULES = [
    Rule(
        "firewall-ssh-api-not-world-open",
        "A GCE firewall rule for SSH (22) or the Kubernetes API (6443) must not admit 0.0.0.0/0.",
        "mandatory",
        "lab 7",
        "the GPU VM's SSH and API server are open to the whole internet",
        resource_check=check_firewall_ssh_api_not_world_open,
    ),
]
