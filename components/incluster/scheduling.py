"""Why a Pod is not placed, as the scheduler says it: its PodScheduled condition, read from the Pod object.

The scheduler sets `PodScheduled` to False with reason `Unschedulable` and its own message ("0/1 nodes are
available: 1 Insufficient nvidia.com/gpumem ...") after each attempt that placed it nowhere (kubernetes
pkg/scheduler/schedule_one.go, handleSchedulingFailure; the reason is v1.PodReasonUnschedulable). Standard library
only: the verifier reads it in its Pod, the program reads the verifier's own from its status.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

UNSCHEDULABLE = "Unschedulable"


def condition_fields(condition: Any) -> Mapping[str, Any]:
    """A condition as a plain mapping, whether it came from the API (camelCase) or Pulumi's outputs (snake_case)."""
    return condition if isinstance(condition, Mapping) else {}


def unschedulable(status: Mapping[str, Any] | None) -> str | None:
    """The scheduler's message when a Pod's status says it could not be placed; None when it was, or not yet tried."""
    for condition in (status or {}).get("conditions") or []:
        c = condition_fields(condition)
        if c.get("type") == "PodScheduled" and c.get("status") == "False" and c.get("reason") == UNSCHEDULABLE:
            return str(c.get("message") or "no message").strip()
    return None


class UnplacedClock:
    """Since when (on the verifier's clock) each Pod has been unschedulable without a break."""

    def __init__(self) -> None:
        self.since: dict[str, float] = {}
        self.reasons: dict[str, str] = {}

    def saw(self, name: str, reason: str | None, now: float) -> None:
        """One read of Pod `name`: its unschedulable reason, or None once it was placed (the clock restarts)."""
        if reason is None:
            self.since.pop(name, None)
            self.reasons.pop(name, None)
            return
        self.since.setdefault(name, now)
        self.reasons[name] = reason

    def overdue(self, now: float, grace: float) -> list[str]:
        """One line per Pod unschedulable for `grace` seconds or more, naming the scheduler's reason."""
        return [
            f"Pod {name} could not be scheduled for {now - since:.0f} s (gpushare:verify.unschedulableGraceSeconds "
            f"is {grace:.0f}); the scheduler says: {self.reasons[name]}"
            for name, since in sorted(self.since.items())
            if now - since >= grace
        ]
