"""When the proof Pods' neighbour steps happen: Pod B's fault and bandwidth hog inside Pod A's measuring window.

Both Pods run the fault step, then the bandwidth step, first (before compute and memory), each step the same length
in both Pods, so whatever B's start lag is stays what it was and the steps after start together. The fault lands
inside A's window, with at least one whole second of A's rate before it and one after the second it falls in, and
the hog's copying covers at least one whole second of A's bandwidth timeline with one alone before it, for any start
of B from `lead_s` before A to `max_lag_s` after. The probes record the instants, so a judge sees where it landed.
Pure arithmetic, standard library only: the plan and the host proof share it.
"""

from __future__ import annotations

from dataclasses import dataclass

INIT_S = 2.5
"""A CUDA process's start before it launches in a cluster: python, cuInit, the context (HAMi-core's host-PID lookup,
an MPS server's first client), the PTX JIT, on a node that may be slower than the H200's host."""
HOST_INIT_S = 1.5
"""The same on the GPU host the host proof runs on: from the fault step's start to the neighbour's first launch,
0.53 s bare, 0.63 s under HAMi-core, 0.32 s under MPS on the H200 (docs/host-proof/h200/fault); 0.34 – 1.12 s over
every recorded run with the steps (final-26, neighbour-steps), so no less will do."""
BEFORE_S = 1.2
"""After A's first launch, the fault or the hog waits this long: one whole second of A alone."""
AFTER_S = 2.0
"""From the fault to A's window's end: the second it falls in and one whole second after."""
BESIDE_S = 2.2
"""How long the hog copies: at least one whole second of A's timeline lies inside it."""
MARGIN_S = 0.3
CLUSTER_LAG_S = 10.0
"""In a cluster Pod B is created once A exists and scheduled onto A's node: it starts seconds after A."""
CLUSTER_LEAD_S = 3.0
"""… or, with A's image still pulling, a little before it."""
HOST_DRIFT_S = 0.3
"""On a host the Pods start in one instant (or `--stagger` apart): only the processes' own start differs."""


@dataclass(frozen=True)
class Phases:
    """The fault and bandwidth steps' lengths (the same in both Pods), and when B acts in each, from its start."""

    fault_window_s: float
    fault_delay_s: float
    bandwidth_window_s: float
    hog_delay_s: float
    hog_seconds: float

    @property
    def seconds(self) -> float:
        """What the two steps add to each Pod."""
        return round(self.fault_window_s + self.bandwidth_window_s, 1)


def phases(max_lag_s: float, lead_s: float = 0.0, init_s: float = INIT_S) -> Phases:
    """The steps for a Pod B that starts between `lead_s` before and `max_lag_s` after Pod A, each process needing
    `init_s` before it launches."""
    if max_lag_s < 0 or lead_s < 0 or init_s < 0:
        raise ValueError(f"max_lag_s, lead_s and init_s are seconds ≥ 0 (got {max_lag_s}, {lead_s}, {init_s})")
    delay = init_s + BEFORE_S + lead_s
    return Phases(
        fault_window_s=round(max_lag_s + delay + AFTER_S + MARGIN_S, 1),
        fault_delay_s=round(delay, 1),
        bandwidth_window_s=round(max_lag_s + delay + BESIDE_S + MARGIN_S, 1),
        hog_delay_s=round(delay, 1),
        hog_seconds=BESIDE_S,
    )


CLUSTER = phases(CLUSTER_LAG_S, CLUSTER_LEAD_S)


def host(stagger_s: float) -> Phases:
    """A host proof's steps: B starts `stagger_s` after A, give or take the processes' own start."""
    return phases(stagger_s + HOST_DRIFT_S, init_s=HOST_INIT_S)


def lookup_delay(baseline_s: float, lead_s: float = CLUSTER_LEAD_S, init_s: float = INIT_S) -> float:
    """How long a Pod that does not compute waits before its next step (allocation paths, or memory), which starts
    with the computing Pod's compute step (both follow the same-length neighbour steps), give or take B's lead:
    HAMi-core takes a process's host PID to be the one PID new on the card across its own context's creation
    (src/utils.c: set_task_pid, getextrapid), so a process of ours that starts or leaves in that instant hands the
    limiter no PID or another's, and the limit does not hold (docs/host-proof/h200/final-26: share 0.98 at SM 40 and
    60 whenever B's memory process started first; docs/host-proof/h100: 1.00 when B's allocation step ended as A's
    compute started). The limited process makes its context after its baseline child (`baseline_s`) and its start."""
    if baseline_s < 0 or lead_s < 0 or init_s < 0:
        raise ValueError(f"baseline_s, lead_s and init_s are seconds ≥ 0 (got {baseline_s}, {lead_s}, {init_s})")
    return round(lead_s + init_s + baseline_s + init_s + MARGIN_S, 1)
