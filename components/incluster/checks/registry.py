"""The proof's checks: the registry, the only list of them. Each check is one object (id, title, and per
mechanism what it expects and how it judges), defined in the module of its family:

- placement: same-gpu, view-isolation, quota-injection (where each Pod landed and what it was given)
- memory: memory-enforced, neighbor-isolation (what the allocator refused, what was held side by side)
- overcommit: overcommit-rejected (what the scheduler did with a Pod the card has no room for)
- library: monitor-metrics, preload-mechanism (what the monitor and each process's maps say)
- compute: compute-limited (no Pod's share of an unlimited baseline above its quota and the limiter's overshoot)
- neighbours: fault-isolation (a neighbour that faults its own context does not take the other Pod down)
- allocation_paths: allocation-paths (every CUDA door to device memory, asked past the quota, holds it)

The planned `expected` values, the judging and the report all derive from CHECKS. Adding a check is one new
`Check` in its family's module, listed here, plus its test on recorded evidence (tests/test_cross_examination.py
or tests/test_mechanisms.py). A check reads the evidence record (evidence/record.py) and only the parts it declares in
`reads`, each validated and tied to its Pod before the check runs; one that is not judgeable fails the check with
its reason. Every judgement then cross-examines what it reads: a check passes only when its evidence is complete
and agrees with the other facts it can see (docs/verification.md says which pairs each one compares).
Standard library only.
"""

from __future__ import annotations

from .allocation_paths import ALLOCATION_PATHS
from .compute import COMPUTE_LIMITED
from .library import MONITOR_METRICS, PRELOAD_MECHANISM
from .memory import MEMORY_ENFORCED, NEIGHBOR_ISOLATION
from .neighbours import FAULT_ISOLATION
from .overcommit import OVERCOMMIT_REJECTED
from .placement import QUOTA_INJECTION, SAME_GPU, VIEW_ISOLATION
from .rule import Check

CHECKS: tuple[Check, ...] = (
    SAME_GPU,
    VIEW_ISOLATION,
    QUOTA_INJECTION,
    MEMORY_ENFORCED,
    NEIGHBOR_ISOLATION,
    OVERCOMMIT_REJECTED,
    MONITOR_METRICS,
    PRELOAD_MECHANISM,
    COMPUTE_LIMITED,
    FAULT_ISOLATION,
    ALLOCATION_PATHS,
)
REGISTRY: dict[str, Check] = {c.id: c for c in CHECKS}
