"""What every check is made of: a Rule per mechanism, the Check that holds them and what it reads of the record,
and the helpers every family of checks shares (the verdict, the probe's own ok, the env a Pod must carry).
Standard library only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..evidence.record import Record
from ..expectation import MECHANISMS, Expectation

MIB = 1 << 20
MIN_COMPUTE_SECONDS = 20
"""HAMi-core's limiter works in bursts: only a mean over 20 s after warm-up says anything (tests/fixtures/real)."""
SEARCH_STEP_MIB = 1
"""The memory probe finds the largest allocation to 1 MiB."""
MAX_CONTEXT_OVERHEAD_MIB = 1024
"""A CUDA context costs 102 MiB on a T4, 437 on an RTX PRO 6000, about 514 on an H200 under MPS."""

Judgement = tuple[bool, str, str]
"""(passed, observed, evidence)."""


@dataclass(frozen=True)
class Rule:
    """What proves a check under one mechanism: the sentence planned in advance, and the judgement."""

    expected: Callable[[Expectation], str]
    judge: Callable[[Record], Judgement]


@dataclass(frozen=True)
class Check:
    """One proof check. A mechanism missing from `rules` does not offer it (the plan refuses to list it). `reads`
    names the record's parts it reads (record.READS): one that is not judgeable fails the check with its reason."""

    id: str
    title: str
    rules: Mapping[str, Rule]
    reads: tuple[str, ...] = ("pods", "memory")

    def rule(self, mechanism: str) -> Rule:
        if mechanism not in self.rules:
            offered = ", ".join(self.rules)
            raise LookupError(f"check {self.id} is not offered by the {mechanism} mechanism (only {offered})")
        return self.rules[mechanism]


def probe_error(result: Mapping[str, Any]) -> str:
    """` (probe error: …)` when the probe reported one, else empty."""
    error = result.get("error") or result.get("cuda_error")
    return f" (probe error: {error})" if error else ""


def everywhere(rule: Rule) -> dict[str, Rule]:
    """The same rule under every mechanism."""
    return dict.fromkeys(MECHANISMS, rule)


def verdict(problems: list[str], passed: str, seen: list[str]) -> Judgement:
    if problems:
        return False, "; ".join(problems), "; ".join(seen)
    return True, passed, "; ".join(seen)


def env_text(env: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(env.items())) or "(none)"


def not_ok(name: str, result: Mapping[str, Any]) -> list[str]:
    """A probe that says it did not finish cleanly proves nothing it measured."""
    if result.get("ok") is True:
        return []
    return [f"Pod {name}: the probe reported ok={result.get('ok')}{probe_error(result)}"]


def env_problems(name: str, env: Mapping[str, Any], wanted: Mapping[str, Any]) -> list[str]:
    problems = []
    for key, value in wanted.items():
        if env.get(key) in (None, ""):
            problems.append(f"Pod {name}: {key} is not set (the sharing system injected no limit)")
        elif str(env[key]) != str(value):
            problems.append(f"Pod {name}: {key}={env[key]}, expected {value}")
    return problems


def preloaded(e: Expectation) -> str:
    """The library a process must map to be held by HAMi-core (the expectation's, else HAMi-core's own)."""
    return e.preload_library or "libvgpu.so"


def library_mapped(e: Expectation, part: Mapping[str, Any] | None) -> bool:
    """Whether a probe's result (or its baseline's) found that library mapped into its process."""
    return any(str(x).endswith(preloaded(e)) for x in ((part or {}).get("preload") or {}).get("mapped") or [])


def library_absent(e: Expectation, name: str, r: Mapping[str, Any]) -> list[str]:
    """Under HAMi-core, the reason nothing can hold: the probe found the library mapped nowhere in its process."""
    preload = r.get("preload")
    library = preloaded(e)
    if e.mechanism != "hami-core" or not isinstance(preload, Mapping) or library_mapped(e, r):
        return []
    return [
        f"Pod {name}: {library} is not mapped into the probe process (listed: {preload.get('listed') or []}):"
        " the library is not there, so nothing enforces the quota"
    ]


def enforces_nothing(what: str) -> Callable[[Record], Judgement]:
    def judge(rec: Record) -> Judgement:
        seen = [
            f"{name}: largest allocation {r.get('largest_alloc_mib')} MiB of the {r.get('visible_total_mib')} MiB"
            f" it sees, slice {rec.expect.slice_mib} MiB"
            for name, r in rec.memories().items()
        ]
        return False, f"time-sharing enforces no {what} limit: each Pod may take the whole card", "; ".join(seen)

    return judge
