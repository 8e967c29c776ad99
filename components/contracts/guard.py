"""`gpushare:guard`, the admission guard's settings: ground floor, so config composes it and the guard reads it."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator
from pydantic.alias_generators import to_camel

from components.contracts.settings import key

GuardMode = Literal["deny", "warn", "off"]
POLICY_SINCE = (1, 30)
"""admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy is served from Kubernetes 1.30 (GA; KEP-3488)."""
_MINOR = re.compile(r"^v?(\d+)\.(\d+)")
Namespace = Annotated[str, StringConstraints(pattern=r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")]


class GuardSettings(BaseModel):
    """`gpushare:guard`: which new Pods the API server refuses, and what the node's toolkit still accepts."""

    model_config = ConfigDict(
        extra="forbid", frozen=True, alias_generator=to_camel, populate_by_name=True, use_attribute_docstrings=True
    )

    mode: GuardMode = "deny"
    """deny: refuse new Pods that opt out of their quota; warn: admit them with a warning; off: no policy."""
    exempt_namespaces: list[Namespace] = Field(default_factory=list)
    """Namespaces besides the stack's own system ones (computed) whose Pods the guard leaves alone."""
    refuse_unprivileged_env: bool = False
    """The NVIDIA toolkit ignores NVIDIA_VISIBLE_DEVICES from unprivileged containers and takes devices as volume
    mounts (HAMi then passes them so). Off by default: HAMi's vgpu-monitor is an unprivileged container that
    reaches the cards only through NVIDIA_VISIBLE_DEVICES=all, so it would lose NVML (HAMi 2.9.0 and 2.10.0
    charts/hami/templates/device-plugin/daemonsetnvidia.yaml). No effect on GKE, whose runtime has no such hook."""

    @field_validator("mode", mode="before")
    @classmethod
    def _off_read_as_false(cls, value: Any) -> Any:
        # YAML 1.1 (and so a `-c gpushare:guard.mode=off` override) reads a bare off as false.
        return "off" if value is False else value


def guard_api_problem(mode: GuardMode, server_version: str) -> str | None:
    """Why the guard cannot run on this server (older than 1.30, whose API server does not serve the policy's kind
    and would fail `up` on it), or None. Refused rather than planned off: a stack never drops the guard it was
    asked for without saying so."""
    found = _MINOR.match(server_version.strip())
    if mode == "off" or found is None or (int(found[1]), int(found[2])) >= POLICY_SINCE:
        return None
    since = ".".join(map(str, POLICY_SINCE))
    return (
        f"{server_version} is older than Kubernetes {since}, the first to serve the admission guard's "
        f"ValidatingAdmissionPolicy v1; run {since} or later and set it here, or set {key('guard', 'mode')} "
        "to off"
    )
