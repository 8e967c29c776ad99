"""Config → the admission guard and the audit's system namespaces: which rules this stack's runtime makes
meaningful, which namespaces are the GPU software's own, and `gpuGuard` saying so (or why no policy)."""

from __future__ import annotations

from typing import Any

import pulumi

from components.config import ExistingStack, GkeStack, K3sStack, StackConfig
from components.contracts.cluster import ClusterFacts
from components.contracts.names import stack_scoped
from components.gpu.gke_cdi import KAI_RESERVATION_NAMESPACE
from components.gpu.guard import RULES, AdmissionGuard, AdmissionGuardArgs, GuardRule

KUBE_SYSTEM = "kube-system"
HAMI_RULES = ("cuda-disable-control", "visible-devices-without-request", "device-host-path")
"""Under the nvidia runtime (k3s's default, the GPU Operator's classes) HAMi's Pods can opt out these ways."""
GKE_WHY = (
    "GKE's managed runtime has no nvidia hook: NVIDIA_VISIBLE_DEVICES reaches nothing there (the proof's"
    " visible-devices-all try shows it)"
)
KAI_GKE_WHY = (
    "; the device-injection policy mounts /dev/nvidia* into every sharing Pod by design, so a host-path rule"
    " would refuse them all; only the isolator's opt-out is refused"
)


def system_namespaces(cfg: StackConfig) -> tuple[str, ...]:
    """The namespaces of the GPU software this stack installs (and kube-system): the audit's `system` class."""
    match cfg:
        case GkeStack(sharing="kai"):
            found = {cfg.kai.namespace, cfg.isolator.namespace, cfg.gke_cdi.kyverno_namespace,
                     KAI_RESERVATION_NAMESPACE}  # fmt: skip
        case GkeStack():
            found = set()
        case ExistingStack(toolkit="gpu-operator"):
            found = {cfg.gpu_operator.namespace, cfg.hami.namespace}
        case K3sStack() | ExistingStack():
            found = {cfg.hami.namespace}
    return tuple(sorted({KUBE_SYSTEM, *found}))


def guard_rules(cfg: StackConfig) -> tuple[tuple[GuardRule, ...], str | None]:
    """The rules this stack enables, and why the others do not apply (None: all apply)."""
    if isinstance(cfg, GkeStack):
        if cfg.sharing == "kai":
            return (RULES["isolator-inject-false"],), GKE_WHY + KAI_GKE_WHY
        return (), GKE_WHY + "; GKE's own sharing has no opt-out a Pod spec can take"
    return tuple(RULES[r] for r in HAMI_RULES), None


def exempt_namespaces(cfg: StackConfig) -> tuple[str, ...]:
    """The stack's system namespaces, the proof's (its tries must reach the runtime), and config's extra list."""
    return tuple(sorted({*system_namespaces(cfg), cfg.verify.namespace, *cfg.guard.exempt_namespaces}))


def guard(cfg: StackConfig, cluster: ClusterFacts) -> dict[str, Any]:
    """The AdmissionGuard where mode and runtime call for one; the `gpuGuard` output either way."""
    rules, why = guard_rules(cfg)
    mode = cfg.guard.mode
    if mode == "off" or not rules:
        reason = "gpushare:guard.mode is off" if mode == "off" else why
        return {"gpuGuard": {"mode": mode, "policy": None, "rules": [], "why": reason}}
    component = AdmissionGuard(
        "gpushare-guard",
        AdmissionGuardArgs(
            provider=cluster.provider,
            policy_name=stack_scoped("gpushare-gpu-guard", pulumi.get_stack()),
            mode=mode,
            rules=rules,
            exempt_namespaces=exempt_namespaces(cfg),
            ready=cluster.ready,
        ),
        opts=cluster.options(),
    )
    return {"gpuGuard": {**component.outputs, **({"why": why} if why else {})}}
