"""The memory probe's findings: what a quota may not stop, each tried in child processes (memory_child.py).

HAMi-core: a fresh shared-cache file, a fresh file with its own limit, a cuCtxCreate context, the context's own
charge, and a process without HAMi-core's env after this one and as its region's first toucher; MPS: a client's own
pinned limit and a client that leaves the server. Each finding is `{"id", "tried", "observed", "bypassed"}` (`why`
when bypassed is null), never judged into `limit_enforced`. Standard library only.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import threading
from collections.abc import Callable, Mapping
from typing import Any

from .memory_child import ChildRunner
from .output import finding
from .process import captured_stderr, parse_oom_line

CHARGE_TOLERANCE_MIB = 8
"""Contexts differ by a few MiB between processes (514 and 518 MiB charged on the H200): a smaller gap is no bypass."""

DEFAULT_CACHE = "/tmp/cudevshr.cache"
"""The region a process opens without CUDA_DEVICE_MEMORY_SHARED_CACHE (HAMi-core multiprocess_memory_limit.h:28,
read at multiprocess_memory_limit.c:1077-1080)."""
HAMI_ENV_PREFIXES = ("CUDA_DEVICE_MEMORY_LIMIT", "CUDA_DEVICE_SM_LIMIT")
HAMI_ENV_KEYS = ("CUDA_DEVICE_MEMORY_SHARED_CACHE", "GPU_CORE_UTILIZATION_POLICY")
"""What HAMi-core reads from the env: an `env -i` or SSH session has none of it, while /etc/ld.so.preload (on a host
LD_PRELOAD, kept) still loads the library."""


def _said(answer: dict[str, Any], mib: int) -> str:
    if answer.get("allocated"):
        return f"got {mib} MiB"
    return f"was refused {mib} MiB ({answer.get('cuda_error') or answer.get('error')})"


def _fresh_cache() -> str:
    return os.path.join(tempfile.mkdtemp(prefix="gpushare-"), "fresh.cache")


def _collect(oom: list[str], *answers: dict[str, Any]) -> None:
    for answer in answers:
        oom.extend(line for line in answer.get("stderr", "").splitlines() if parse_oom_line(line))


def fresh_cache_finding(alloc: Any, quota_mib: int, runner: ChildRunner, oom: list[str]) -> dict[str, Any]:
    """Hold half the quota here; a child on a fresh shared-cache file asks for three quarters more."""
    held_mib, child_mib = quota_mib // 2, quota_mib - quota_mib // 4
    cache = _fresh_cache()
    tried = (f"a child process with CUDA_DEVICE_MEMORY_SHARED_CACHE={cache} (a fresh file) allocating {child_mib} MiB "
             f"while this process holds {held_mib} MiB of a {quota_mib} MiB quota")  # fmt: skip
    held, err = alloc.take(held_mib)
    if held is None:
        return finding("fresh-cache-file", tried, f"could not hold {held_mib} MiB here ({err})", None,
                        "this process could not hold its share first")  # fmt: skip
    try:
        control = runner("alloc", child_mib, dict(os.environ))
        fresh = runner("alloc", child_mib, {**os.environ, "CUDA_DEVICE_MEMORY_SHARED_CACHE": cache})
    finally:
        alloc.cuda.free(held)
    _collect(oom, control, fresh)
    observed = (
        f"a child sharing this process's cache file {_said(control, child_mib)}; "
        f"one with a fresh file {_said(fresh, child_mib)}"
    )
    if control.get("allocated"):
        why = "a child on this process's own cache file was not held to the quota either: nothing shared to bypass"
        return finding("fresh-cache-file", tried, observed, None, why)
    if fresh.get("allocated"):
        observed += f": together {held_mib + child_mib} MiB, over the {quota_mib} MiB quota"
    return finding("fresh-cache-file", tried, observed, bool(fresh.get("allocated")))


def own_limit_finding(quota_mib: int, runner: ChildRunner, oom: list[str]) -> dict[str, Any]:
    """A child with a fresh cache file and its own, larger CUDA_DEVICE_MEMORY_LIMIT_0 asks twice the quota."""
    ask = 2 * quota_mib  # not capped by the card: under HAMi-core this process sees only its quota
    raised = {"CUDA_DEVICE_MEMORY_LIMIT_0": f"{4 * quota_mib}m", "CUDA_DEVICE_MEMORY_LIMIT": f"{4 * quota_mib}m"}
    cache = _fresh_cache()
    tried = (f"a child process with CUDA_DEVICE_MEMORY_LIMIT_0={4 * quota_mib}m and a fresh "
             f"CUDA_DEVICE_MEMORY_SHARED_CACHE allocating {ask} MiB (quota {quota_mib} MiB)")  # fmt: skip
    control = runner("alloc", ask, {**os.environ, **raised})
    fresh = runner("alloc", ask, {**os.environ, **raised, "CUDA_DEVICE_MEMORY_SHARED_CACHE": cache})
    _collect(oom, control, fresh)
    observed = (
        f"with this process's cache file the child {_said(control, ask)}; with a fresh file it {_said(fresh, ask)}"
    )
    if control.get("allocated"):
        why = "a raised limit on this process's own cache file was not refused either: nothing pinned to get around"
        return finding("own-limit-fresh-cache", tried, observed, None, why)
    return finding("own-limit-fresh-cache", tried, observed, bool(fresh.get("allocated")))


def context_finding(largest_mib: int, overhead_mib: int | None, quota_mib: int, runner: ChildRunner,
                    oom: list[str]) -> dict[str, Any]:  # fmt: skip
    """A fresh child makes its own context (cuCtxCreate) and asks more than fits beside a charged context.

    HAMi-core charges the context in its cuDevicePrimaryCtxRetain hook, not in cuCtxCreate_v2's (src/cuda/context.c).
    The control is the same ask on the primary context of a fresh child: only a refusal there and a success on
    the created context shows that the created context escaped the charge.
    """
    ask = largest_mib + max((overhead_mib or 0) // 2, 1)
    tried = (f"a child process on a context from cuCtxCreate (not the primary context), on a fresh cache file, "
             f"allocating {ask} MiB: it fits the {quota_mib} MiB quota only if that context is uncharged")  # fmt: skip
    if largest_mib >= quota_mib or not overhead_mib:
        why = "the primary context is not charged below the quota here, so there is no charge to escape"
        return finding("cuctxcreate-context", tried, f"largest allocation {largest_mib} MiB", None, why)
    control = runner("alloc", ask, {**os.environ, "CUDA_DEVICE_MEMORY_SHARED_CACHE": _fresh_cache()})
    created = runner("ctx-create", ask, {**os.environ, "CUDA_DEVICE_MEMORY_SHARED_CACHE": _fresh_cache()})
    _collect(oom, control, created)
    observed = (f"on its primary context a fresh child {_said(control, ask)}; on a cuCtxCreate context it "
                f"{_said(created, ask)} (this process's largest allocation: {largest_mib} MiB)")  # fmt: skip
    if not created.get("ok"):
        return finding("cuctxcreate-context", tried, observed, None, str(created.get("error")))
    if control.get("allocated"):
        why = "a fresh child's primary context was not charged either, so this ask cannot single out cuCtxCreate"
        return finding("cuctxcreate-context", tried, observed, None, why)
    return finding("cuctxcreate-context", tried, observed, bool(created.get("allocated")))


def mps_pinned_finding(quota_mib: int, runner: ChildRunner) -> dict[str, Any]:
    """An MPS client that sets its own, larger CUDA_MPS_PINNED_DEVICE_MEM_LIMIT asks twice the quota."""
    ask = 2 * quota_mib
    value = f"0={4 * quota_mib}M"
    tried = f"a child MPS client with CUDA_MPS_PINNED_DEVICE_MEM_LIMIT={value} allocating {ask} MiB (quota {quota_mib})"
    control = runner("alloc", ask, dict(os.environ))
    raised = runner("alloc", ask, {**os.environ, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT": value})
    observed = f"with the Pod's limit the child {_said(control, ask)}; with its own it {_said(raised, ask)}"
    if control.get("allocated"):
        return finding("mps-own-pinned-limit", tried, observed, None, "the Pod's own limit did not hold in a child")
    return finding("mps-own-pinned-limit", tried, observed, bool(raised.get("allocated")))


def mps_pipe_finding(quota_mib: int, runner: ChildRunner) -> dict[str, Any]:
    """A child that points CUDA_MPS_PIPE_DIRECTORY at an empty directory, so it is no MPS client at all."""
    ask = 2 * quota_mib
    empty = tempfile.mkdtemp(prefix="gpushare-no-mps-")
    tried = f"a child process with CUDA_MPS_PIPE_DIRECTORY={empty} (no MPS server there) allocating {ask} MiB"
    answer = runner("alloc", ask, {**os.environ, "CUDA_MPS_PIPE_DIRECTORY": empty})
    observed = f"the child {_said(answer, ask)}"
    if answer.get("allocated"):
        observed += ": it ran outside MPS, where no pinned limit applies (the card's compute mode lets it)"
    return finding("mps-pipe-directory", tried, observed, bool(answer.get("allocated")) if answer.get("ok") else None,
                    answer.get("error"))  # fmt: skip


def charge_finding(charged_mib: int | None, quota_mib: int, references: Mapping[str, int | None],
                   own_context_mib: int | None = None) -> dict[str, Any]:  # fmt: skip
    """How much of the quota this process's context was charged, against what contexts are charged elsewhere.

    HAMi-core charges the size NVML showed for the process it took for its own when it looked for its host PID
    (src/utils.c set_task_pid, charged in src/cuda/context.c's cuDevicePrimaryCtxRetain hook): beside another
    process starting at once it may take the other's PID, or read the size before it settled, and charge 0 or part.
    The context's real size is NVML's count for this process where its PIDs are ours (`own_context_mib`), else the
    largest charge among `references` (a fresh control child, the neighbour Pods). Bypassed when this process was
    charged more than CHARGE_TOLERANCE_MIB less: it can then hold that much more than its quota.
    """
    named = {"NVML's count of this process's context": own_context_mib, **references}
    tried = ("this process's primary context, which HAMi-core charges to the quota when it is retained, against "
             + ", ".join(named))  # fmt: skip
    seen = "; ".join(f"{name}: {'not measured' if mib is None else f'{mib} MiB'}" for name, mib in named.items())
    fields: dict[str, Any] = {"charged_mib": charged_mib, "quota_mib": quota_mib, "own_context_mib": own_context_mib,
                              "references_mib": dict(references)}  # fmt: skip
    known = [mib for mib in references.values() if mib is not None]
    context = own_context_mib if own_context_mib is not None else (max(known) if known else None)
    if charged_mib is None or context is None:
        why = ("the quota did not hold in this process, so no charge can be read off it" if charged_mib is None
               else "neither NVML nor a control measured a context to compare with")  # fmt: skip
        return {**finding("context-charge", tried, f"charged {charged_mib} MiB; {seen}", None, why), **fields}
    over = context - charged_mib
    observed = f"this process's context was charged {charged_mib} MiB of its {quota_mib} MiB quota; {seen}"
    if over > CHARGE_TOLERANCE_MIB:
        observed += (f": it can hold {quota_mib - charged_mib} MiB of allocations beside its {context} MiB context,"
                     f" {over} MiB over its quota")  # fmt: skip
    fields.update(context_mib=context, over_quota_mib=max(over, 0))
    return {**finding("context-charge", tried, observed, over > CHARGE_TOLERANCE_MIB), **fields}


NO_LIBRARY = "no HAMi-core library is mapped into this process, so nothing enforces a quota and nothing is charged"


def library_loaded(result: Mapping[str, Any]) -> bool:
    """Whether HAMi-core is mapped into the probe's process (process.preloaded's `mapped`)."""
    mapped = (result.get("preload") or {}).get("mapped") or []
    return any(os.path.basename(str(x)).startswith("libvgpu") for x in mapped)


def quota_in_view(result: Mapping[str, Any], quota_mib: int) -> bool:
    """Whether something rewrote this process's view to its quota (HAMi-core does): on a bare card the view is the
    whole card, and a refusal below the quota is the neighbours' memory, never a charge."""
    total = result.get("visible_total_mib")
    return total is not None and total <= quota_mib


def uncharged() -> dict[str, Any]:
    """The context-charge finding of a process no library limits: whatever the card refused, no quota charged it."""
    return finding("context-charge", "nothing: no quota is charged here", NO_LIBRARY, None, NO_LIBRARY)


def with_neighbours(findings: list[dict[str, Any]], charges: Mapping[str, int | None]) -> list[dict[str, Any]]:
    """Each Pod's context-charge finding judged again with its neighbours' charges (`charges`: Pod → MiB) added to
    its references: where two Pods start at once, one may be charged in full and the other not."""
    out = []
    for found in findings:
        pod = found.get("pod")
        if found.get("id") != "context-charge" or pod not in charges or found.get("quota_mib") is None:
            out.append(found)
            continue
        neighbours = {f"neighbour {other}'s charge": mib for other, mib in charges.items() if other != pod}
        references = {**(found.get("references_mib") or {}), **neighbours}
        again = charge_finding(found.get("charged_mib"), int(found["quota_mib"]), references,
                               found.get("own_context_mib"))  # fmt: skip
        kept = {k: v for k, v in found.items() if k not in again and k != "why"}
        out.append({**kept, **again})
    return out


def context_charge_finding(charged_mib: int | None, quota_mib: int, own_context_mib: int | None,
                           runner: ChildRunner) -> dict[str, Any]:  # fmt: skip
    """This process's charge against a fresh control child's (its own cache file, the same quota) and NVML's size."""
    control = runner("view", 0, {**os.environ, "CUDA_DEVICE_MEMORY_SHARED_CACHE": _fresh_cache()})
    control_mib = control.get("charged_mib") if control.get("ok") else None
    found = charge_finding(charged_mib, quota_mib, {"a fresh control child's charge": control_mib}, own_context_mib)
    found["control_context_mib"] = control.get("own_context_mib")
    return found


def env_less(env: Mapping[str, str]) -> dict[str, str]:
    """`env` without anything HAMi-core reads: the limits, the cache file, the utilization policy."""
    return {k: v for k, v in env.items() if not k.startswith(HAMI_ENV_PREFIXES) and k not in HAMI_ENV_KEYS}


def _largest(answer: Mapping[str, Any]) -> str:
    if not answer.get("ok"):
        return f"could not measure ({answer.get('error')})"
    return f"could allocate {answer.get('largest_mib')} MiB (its view: {answer.get('view_total_mib')} MiB)"


def env_less_findings(quota_mib: int, runner: ChildRunner, oom: list[str]) -> list[dict[str, Any]]:
    """A process started without HAMi-core's env (`env -i`, an SSH session), after this one and as first toucher.

    HAMi-core takes a region's limits from the process that creates it (multiprocess_memory_limit.c:1120-1146);
    a later one's are only compared, and the file's kept ("Limit inconsistency detected", :1147-1165); a limit of
    0 is no limit (allocator.c:45-47, oom_check). Without CUDA_DEVICE_MEMORY_SHARED_CACHE a process opens
    DEFAULT_CACHE (:1077-1080): the Pod's own region only where the Pod's env names no other file (KAI's binder
    sets none; HAMi's device plugin names one per container), so only there can an env-less process touch it first.
    - env-less-process: after this process made its region, a child with no HAMi-core env asks up to twice the
      quota: in its own DEFAULT_CACHE region (limit 0) it gets it; in the Pod's, it is held.
    - env-less-first-toucher: an env-less child creates a fresh region first, then a child with this Pod's limits
      opens it and asks up to twice the quota; beside it, the other order on this Pod's region (the env-less child
      after the limited process). The fresh file stands in for the Pod's region, so no region in use is touched.
    Children run two at a time (the first-toucher pair in order, beside the two others): the host proof's time.
    """
    cap = 2 * quota_mib
    own = os.environ.get("CUDA_DEVICE_MEMORY_SHARED_CACHE") or DEFAULT_CACHE
    reachable = own == DEFAULT_CACHE
    existed = os.path.exists(DEFAULT_CACHE)
    fresh = _fresh_cache()
    bare = env_less(os.environ)
    pair: dict[str, dict[str, Any]] = {}

    def first_toucher() -> None:
        pair["first"] = runner("view", 0, {**bare, "CUDA_DEVICE_MEMORY_SHARED_CACHE": fresh})
        pair["limited"] = runner("largest", cap, {**os.environ, "CUDA_DEVICE_MEMORY_SHARED_CACHE": fresh})

    thread = threading.Thread(target=first_toucher)
    thread.start()
    alone = runner("largest", cap, bare)
    joined = runner("largest", cap, {**bare, "CUDA_DEVICE_MEMORY_SHARED_CACHE": own})
    thread.join()
    if not existed and not reachable:
        with contextlib.suppress(OSError):  # leave no unlimited region behind for a later process to join
            os.remove(DEFAULT_CACHE)
    first, limited = pair.get("first", {}), pair.get("limited", {})
    _collect(oom, alone, joined, first, limited)
    region = ("this Pod's own region (its env names no other file)" if reachable
              else f"its own region, not this Pod's {own}")  # fmt: skip
    tried = (f"a child process without HAMi-core's env (no CUDA_DEVICE_MEMORY_LIMIT*, CUDA_DEVICE_SM_LIMIT*,"
             f" CUDA_DEVICE_MEMORY_SHARED_CACHE), the library still loaded, after this process made its region,"
             f" asking up to {cap} MiB (quota {quota_mib} MiB)")  # fmt: skip
    observed = f"it opened {DEFAULT_CACHE} ({'there before' if existed else 'new'}): {region}; it {_largest(alone)}"
    after = {**finding("env-less-process", tried, observed, alone["largest_mib"] > quota_mib if alone.get("ok")
                       else None, alone.get("error")),
             "largest_mib": alone.get("largest_mib"), "quota_mib": quota_mib, "region": DEFAULT_CACHE,
             "region_is_the_pods": reachable, "region_existed": existed}  # fmt: skip
    tried = (f"an env-less child creating a fresh region ({fresh}) first, then a child with this Pod's limits on it"
             f" asking up to {cap} MiB; and the other order on this Pod's region {own}: an env-less child after"
             f" this limited process")  # fmt: skip
    observed = (
        f"the limited child {_largest(limited)} from the region the env-less child made; on the region this"
        f" process made, an env-less child {_largest(joined)}; an env-less process "
        f"{'opens this Pod region' if reachable else 'never opens this Pod region (its env names it)'}"
    )
    judged = limited["largest_mib"] > quota_mib if limited.get("ok") and first.get("ok") else None
    before = {**finding("env-less-first-toucher", tried, observed, judged, limited.get("error") or first.get("error")),
              "largest_mib": limited.get("largest_mib"), "after_largest_mib": joined.get("largest_mib"),
              "quota_mib": quota_mib, "reachable": reachable}  # fmt: skip
    return [after, before]


def all_findings(alloc: Any, result: dict[str, Any], runner: ChildRunner, log: Callable[[str], None]) -> None:
    """The mechanism's findings, appended to `result` as each one finishes."""
    quota = result["expected_limit_mib"] or result["visible_total_mib"] or 0
    oom: list[str] = []
    ids = ("mps-own-pinned-limit", "mps-pipe-directory") if result["mechanism"] == "mps" else (
        "fresh-cache-file", "own-limit-fresh-cache", "context-charge", "env-less-process",
        "env-less-first-toucher")  # fmt: skip
    largest = result.get("largest_alloc_mib")
    if largest is None or largest > quota:
        why = f"the {quota} MiB quota did not hold in this process itself (largest allocation {largest} MiB)"
        for fid in (*ids, "cuctxcreate-context"):
            result["findings"].append(finding(fid, "nothing: there is no limit here to get around", why, None, why))
        return
    charge = result["context_overhead_mib"]
    if result["mechanism"] == "mps":
        tries: list[Callable[[], dict[str, Any] | list[dict[str, Any]]]] = [
            lambda: mps_pinned_finding(quota, runner),
            lambda: mps_pipe_finding(quota, runner),
            lambda: context_finding(result["largest_alloc_mib"], result["context_overhead_mib"], quota, runner, oom),
        ]
    else:
        tries = [
            lambda: fresh_cache_finding(alloc, quota, runner, oom),
            lambda: own_limit_finding(quota, runner, oom),
            lambda: context_finding(result["largest_alloc_mib"], result["context_overhead_mib"], quota, runner, oom),
            lambda: (
                context_charge_finding(charge, quota, result.get("own_context_mib"), runner)
                if quota_in_view(result, quota)
                else uncharged()
            ),
            lambda: env_less_findings(quota, runner, oom),
        ]
    for attempt in tries:
        with captured_stderr(result["hami_oom_lines"]):
            answer = attempt()
        for found in answer if isinstance(answer, list) else [answer]:
            result["findings"].append(found)
            log(f"finding {found['id']}: {found['observed']} (bypassed: {found['bypassed']})")
    result["hami_oom_lines"].extend(oom)
