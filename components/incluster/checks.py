"""The proof's checks: one object each (id, title, and per mechanism what it expects and how it judges).

The registry below is the only list of checks: the planned `expected` values, the judging and the report all
derive from it. Adding a check is one new `Check` in CHECKS plus its test on recorded evidence
(tests/test_cross_examination.py or tests/test_mechanisms.py).

Every judgement cross-examines its evidence: a check passes only when its evidence is complete, comes from the
proof Pods of this run, and agrees with the other facts it can see. Standard library only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

try:
    from .evidence import DEFAULT_ALLOCATION_ANNOTATION, Evidence, probe_error
    from .expectation import MECHANISMS, Expectation
    from .parse import (
        parse_allocation,
        parse_metrics,
        parse_node_register,
        parse_nvidia_smi_memory,
        parse_oom_lines,
        timestamp,
    )
except ImportError:  # mounted flat in a Pod
    from evidence import DEFAULT_ALLOCATION_ANNOTATION, Evidence, probe_error  # type: ignore[no-redef]
    from expectation import MECHANISMS, Expectation  # type: ignore[no-redef]
    from parse import (  # type: ignore[no-redef]
        parse_allocation,
        parse_metrics,
        parse_node_register,
        parse_nvidia_smi_memory,
        parse_oom_lines,
        timestamp,
    )

MIB = 1 << 20
COMPUTE_TOLERANCE = 0.1
"""How far the judged shape's share may sit from coresPercent/100 (the H200 under HAMi-core: 0.32–0.33 at 30 %)."""
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
    judge: Callable[[Evidence], Judgement]


@dataclass(frozen=True)
class Check:
    """One proof check. A mechanism missing from `rules` does not offer it (the plan refuses to list it)."""

    id: str
    title: str
    rules: Mapping[str, Rule]

    def rule(self, mechanism: str) -> Rule:
        if mechanism not in self.rules:
            offered = ", ".join(self.rules)
            raise LookupError(f"check {self.id} is not offered by the {mechanism} mechanism (only {offered})")
        return self.rules[mechanism]


def everywhere(rule: Rule) -> dict[str, Rule]:
    """The same rule under every mechanism."""
    return dict.fromkeys(MECHANISMS, rule)


def _verdict(problems: list[str], passed: str, seen: list[str]) -> Judgement:
    if problems:
        return False, "; ".join(problems), "; ".join(seen)
    return True, passed, "; ".join(seen)


def _env_text(env: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(env.items())) or "(none)"


def _not_ok(name: str, result: Mapping[str, Any]) -> list[str]:
    """A probe that says it did not finish cleanly proves nothing it measured."""
    if result.get("ok") is True:
        return []
    return [f"Pod {name}: the probe reported ok={result.get('ok')}{probe_error(result)}"]


# ---------------------------------------------------------------- same-gpu


def _same_gpu_expected(e: Expectation) -> str:
    text = "every proof Pod reports the same GPU UUID, on the same node, with NVIDIA_VISIBLE_DEVICES naming it"
    if e.allocation_annotation:
        text += f"; {e.allocation_annotation} names that card with the {e.slice_mib} MiB slice for each"
    return text


def _same_gpu(ev: Evidence) -> Judgement:
    e = ev.expect
    results, problems = ev.all_memory()
    uuids = {name: r.get("gpu_uuid") for name, r in results.items()}
    nodes = {name: ev.node_of(name) for name in ev.names}
    for name, r in results.items():
        if not uuids[name]:
            problems.append(f"Pod {name} reported no GPU UUID{probe_error(r)}")
            continue
        # A privileged container sees every card: device 0 of a multi-GPU node is not the one it was given.
        # Unset (GKE's device plugin mounts device nodes instead) says nothing either way.
        visible = str((r.get("env") or {}).get("NVIDIA_VISIBLE_DEVICES") or "")
        if visible and uuids[name] not in visible.split(","):
            problems.append(
                f"Pod {name}: NVIDIA_VISIBLE_DEVICES={visible or '(unset)'} does not name {uuids[name]},"
                " so the card it measured is not shown to be the one it was given"
            )
    if len({u for u in uuids.values() if u}) > 1:
        problems.append("the Pods are on different GPUs: " + ", ".join(f"{n}={u}" for n, u in uuids.items()))
    placed = {n for n in nodes.values() if n}
    if len(placed) > 1 or (results and not placed):
        problems.append(
            "the Pods are not on one node (" + ", ".join(f"{n}={v}" for n, v in nodes.items()) + "): one UUID"
            " on two nodes is not one card"
        )
    annotation = e.allocation_annotation
    allocated: dict[str, list[dict[str, Any]]] = {}
    if annotation:
        for name in ev.names:
            allocated[name] = parse_allocation((ev.pod(name).get("annotations") or {}).get(annotation))
            if not allocated[name]:
                problems.append(f"Pod {name} has no {annotation} annotation")
                continue
            cards = [d["uuid"] for d in allocated[name]]
            if uuids.get(name) and uuids[name] not in cards:
                problems.append(f"{annotation} of Pod {name} names {cards}, the probe saw {uuids[name]}")
            sizes = sorted({d["memMiB"] for d in allocated[name]})
            if sizes != [e.slice_mib]:
                problems.append(f"{annotation} of Pod {name} allocates {sizes} MiB, the slice is {e.slice_mib} MiB")
    seen = [
        f"{n}: uuid={uuids.get(n)}, node={nodes.get(n)}"
        + (f", {annotation}={[(d['uuid'], d['memMiB']) for d in allocated.get(n, [])]}" if annotation else "")
        for n in ev.names
    ]
    one = next((u for u in uuids.values() if u), None)
    return _verdict(problems, f"all {len(ev.names)} Pods report the same GPU, {one}", seen)


# ---------------------------------------------------------------- view-isolation


def _view_rewritten_expected(e: Expectation) -> str:
    text = f"nvidia-smi/NVML and cuMemGetInfo total = {e.visible_mib} MiB in each Pod (the card has {e.card_mib})"
    if e.whole_gpu_pod and e.node_memory_label:
        text += f"; a whole-GPU Pod's nvidia-smi total equals the node label {e.node_memory_label}"
    return text


def _view_kept_expected(e: Expectation) -> str:
    return (
        f"{e.mechanism} does not rewrite the view: each Pod sees the whole card ({e.card_mib} MiB) in NVML and"
        " cuMemGetInfo; reported as a fact, the limit is judged by memory-enforced"
    )


def _whole_gpu(ev: Evidence, seen: list[str], problems: list[str]) -> None:
    e = ev.expect
    whole, label = e.whole_gpu_pod, e.node_memory_label
    if not (whole and label):
        return
    pod = ev.pods.get(whole)
    smi = parse_nvidia_smi_memory((pod or {}).get("logs", "")) if pod else None
    node = (pod or {}).get("nodeName") or next((ev.node_of(n) for n in ev.names if ev.node_of(n)), None)
    labelled = ((ev.nodes.get(node or "") or {}).get("labels") or {}).get(label)
    seen.append(f"{whole}: nvidia-smi total {smi[1] if smi else None} MiB, {label}={labelled} on {node}")
    if pod is None:
        problems.append(f"whole-GPU Pod {whole} was not found")
    elif smi is None:
        problems.append(f"whole-GPU Pod {whole} printed no nvidia-smi memory column")
    elif labelled is None:
        problems.append(f"node {node} has no {label} label")
    elif str(smi[1]) != str(labelled).strip():
        problems.append(f"the whole GPU shows {smi[1]} MiB but node {node} is labelled {label}={labelled}")


def _view_totals(ev: Evidence, want: int) -> tuple[list[str], list[str]]:
    """Both totals equal `want`: the view HAMi-core rewrites (cuMemGetInfo and NVML alike)."""
    results, problems = ev.all_memory()
    seen = []
    for name, r in results.items():
        cuda, nvml = r.get("visible_total_mib"), r.get("nvml_total_mib")
        seen.append(f"{name}: CUDA {cuda} MiB, NVML {nvml} MiB")
        for label, value in (("cuMemGetInfo", cuda), ("NVML", nvml)):
            if value is None:
                problems.append(f"Pod {name}: {label} total unknown{probe_error(r)}")
            elif int(value) != want:
                problems.append(f"Pod {name}: {label} total is {value} MiB, not {want}")
    return problems, seen


def _view_rewritten(ev: Evidence) -> Judgement:
    e = ev.expect
    problems, seen = _view_totals(ev, e.visible_mib)
    _whole_gpu(ev, seen, problems)
    return _verdict(problems, f"each Pod sees {e.visible_mib} MiB of the {e.card_mib} MiB card", seen)


def _view_kept(ev: Evidence) -> Judgement:
    """The whole card, as a fact: NVML reports the card as nvidia-smi does; cuMemGetInfo the card less what the
    driver keeps back (616 MiB on an H200), never the slice."""
    e = ev.expect
    results, problems = ev.all_memory()
    seen = []
    for name, r in results.items():
        cuda, nvml = r.get("visible_total_mib"), r.get("nvml_total_mib")
        seen.append(f"{name}: CUDA {cuda} MiB, NVML {nvml} MiB")
        if cuda is None or nvml is None:
            problems.append(f"Pod {name}: a total is unknown (CUDA {cuda}, NVML {nvml}){probe_error(r)}")
            continue
        if int(nvml) != e.card_mib:
            problems.append(f"Pod {name}: NVML total is {nvml} MiB, not the card's {e.card_mib}")
        if not e.card_mib - MAX_CONTEXT_OVERHEAD_MIB <= int(cuda) <= e.card_mib:
            problems.append(f"Pod {name}: cuMemGetInfo total is {cuda} MiB, not the {e.card_mib} MiB card")
    return _verdict(
        problems, f"not rewritten by {e.mechanism}: each Pod sees the whole {e.card_mib} MiB card", seen
    )


# ---------------------------------------------------------------- quota-injection


def _wanted_env(e: Expectation) -> dict[str, str]:
    wanted = dict(e.limit_env)
    if e.cores_percent is not None and e.mechanism == "hami-core":
        wanted["CUDA_DEVICE_SM_LIMIT"] = str(e.cores_percent)
    return wanted


def _quota_injection_expected(e: Expectation) -> str:
    text = f"each Pod's env has {_env_text(_wanted_env(e))}"
    reg = e.node_registration
    if reg:
        slots = reg.cards_per_node * reg.slots_per_card
        text += (
            f"; node allocatable {reg.resource} = {slots} ({reg.cards_per_node} card × {reg.slots_per_card});"
            f" {reg.annotation} lists the Pod's card with its devmem"
        )
    return text


def _env_problems(name: str, env: Mapping[str, Any], wanted: Mapping[str, Any]) -> list[str]:
    problems = []
    for key, value in wanted.items():
        if env.get(key) in (None, ""):
            problems.append(f"Pod {name}: {key} is not set (the sharing system injected no limit)")
        elif str(env[key]) != str(value):
            problems.append(f"Pod {name}: {key}={env[key]}, expected {value}")
    return problems


def _quota_injection(ev: Evidence) -> Judgement:
    e = ev.expect
    wanted = _wanted_env(e)
    results, problems = ev.all_memory()
    seen = []
    for name, r in results.items():
        env = r.get("env") or {}
        seen.append(f"{name}: {_env_text({k: env.get(k) for k in wanted})}")
        problems += _env_problems(name, env, wanted)
    reg = e.node_registration
    if reg:
        slots = reg.cards_per_node * reg.slots_per_card
        for node in sorted({n for n in (ev.node_of(p) for p in ev.names) if n}):
            obj = ev.nodes.get(node) or {}
            allocatable = (obj.get("allocatable") or {}).get(reg.resource)
            devices = {d["id"]: d for d in parse_node_register((obj.get("annotations") or {}).get(reg.annotation))}
            seen.append(
                f"node {node}: allocatable {reg.resource}={allocatable}, registered "
                + ", ".join(f"{i} devmem={d['devmem']}" for i, d in devices.items())
            )
            if str(allocatable) != str(slots):
                problems.append(f"node {node}: allocatable {reg.resource}={allocatable}, expected {slots}")
            for name in ev.names:
                uuid = (results.get(name) or {}).get("gpu_uuid")
                if ev.node_of(name) != node or not uuid:
                    continue
                if uuid not in devices:
                    problems.append(f"node {node}: {reg.annotation} does not list {uuid} of Pod {name}")
                elif devices[uuid]["devmem"] <= 0:
                    problems.append(f"node {node}: {reg.annotation} gives {uuid} no devmem")
    return _verdict(problems, f"every Pod sees {_env_text(wanted)}", seen)


# ---------------------------------------------------------------- memory-enforced


def _sweep(e: Expectation, name: str, r: Mapping[str, Any], seen: list[str], problems: list[str]) -> None:
    sweep = (r.get("phases") or {}).get("sweep") or []
    over = [s for s in sweep if s.get("ok") and float(s.get("gib", 0)) * 1024 > e.limit_mib]
    if over:
        problems.append(
            f"Pod {name}: sweep sizes above the quota succeeded: " + ", ".join(f"{s['gib']} GiB" for s in over)
        )
    if sweep:
        seen.append(
            f"{name} sweep: " + ", ".join(f"{s.get('gib')} GiB {'ok' if s.get('ok') else 'refused'}" for s in sweep)
        )
    if e.sweep_gib and not sweep:
        problems.append(f"Pod {name}: the sweep did not run")


def _hold_and_extra(e: Expectation, name: str, r: Mapping[str, Any], problems: list[str]) -> dict[str, Any]:
    hold = (r.get("phases") or {}).get("hold") or {}
    if hold.get("ok") is not True:
        problems.append(
            f"Pod {name} could not hold {e.hold_mib} MiB inside its quota"
            f" ({hold.get('error') or r.get('error') or 'no hold phase'})"
        )
    elif hold.get("hold_mib") != e.hold_mib:
        problems.append(f"Pod {name} held {hold.get('hold_mib')} MiB, the plan asked for {e.hold_mib}")
    if e.extra_mib and hold.get("extra_ok") is not False:
        problems.append(
            f"Pod {name}: {e.extra_mib} MiB beyond the hold was not refused (extra_ok={hold.get('extra_ok')})"
        )
    return hold


def _memory_hami_core_expected(e: Expectation) -> str:
    text = (
        f"{e.hold_mib} MiB fits, {e.extra_mib} MiB more is refused; HAMi-core's OOM line names the quota"
        f" {e.limit_bytes} bytes, and the largest single allocation lies below the {e.limit_mib:.0f} MiB quota by"
        f" no more than the CUDA context the Pod measured (the card has {e.card_mib} MiB)"
    )
    return text + ("; in the sweep no size above the quota succeeds" if e.sweep_gib else "")


def _library_absent(e: Expectation, name: str, r: Mapping[str, Any]) -> list[str]:
    """Under HAMi-core, the reason nothing can hold: the probe found the library mapped nowhere in its process."""
    preload = r.get("preload")
    library = e.preload_library or "libvgpu.so"
    if e.mechanism != "hami-core" or not isinstance(preload, Mapping):
        return []
    if any(str(x).endswith(library) for x in preload.get("mapped") or []):
        return []
    return [
        f"Pod {name}: {library} is not mapped into the probe process (listed: {preload.get('listed') or []}):"
        " the library is not there, so nothing enforces the quota"
    ]


def _oom_lines(ev: Evidence, name: str, r: Mapping[str, Any]) -> list[dict[str, int]]:
    return parse_oom_lines(r.get("hami_oom_lines") or []) or parse_oom_lines(
        (ev.pod(name).get("logs") or "").splitlines()
    )


def _memory_hami_core(ev: Evidence) -> Judgement:
    e = ev.expect
    results, problems = ev.all_memory()
    seen: list[str] = []
    measured_contexts: set[str] = set()
    for name, r in results.items():
        problems += _library_absent(e, name, r)
        problems += _not_ok(name, r)
        hold = _hold_and_extra(e, name, r, problems)
        largest, total, free = r.get("largest_alloc_mib"), r.get("visible_total_mib"), r.get("visible_free_mib")
        context = int(total) - int(free) if total is not None and free is not None else None
        measured_contexts.add(str(context))
        ooms = _oom_lines(ev, name, r)
        seen.append(
            f"{name}: hold {hold.get('hold_mib')} MiB ok={hold.get('ok')}, +{hold.get('extra_mib')} MiB"
            f" ok={hold.get('extra_ok')} ({hold.get('extra_error')}), largest {largest} MiB, context {context} MiB"
            f" (view {total} total, {free} free), OOM limits {sorted({o['limit'] for o in ooms})},"
            f" limit_enforced={r.get('limit_enforced')}"
        )
        if r.get("limit_enforced") is not True:
            problems.append(
                f"Pod {name}: the probe did not find the limit enforced (limit_enforced={r.get('limit_enforced')})"
            )
        # The library speaks at the boundary: a refusal without its OOM line is the card or the driver, not the quota.
        if not ooms:
            problems.append(f"Pod {name}: no HAMi-core OOM line, so no refusal is shown to come from the quota")
        wrong = sorted({o["limit"] for o in ooms if o["limit"] != e.limit_bytes})
        if wrong:
            problems.append(f"Pod {name}: HAMi-core's OOM line reports the limit {wrong}, expected {e.limit_bytes}")
        if largest is None or context is None:
            problems.append(f"Pod {name}: no largest allocation or context measured{probe_error(r)}")
        elif float(largest) >= e.limit_mib:
            problems.append(
                f"Pod {name}: a single {largest} MiB allocation succeeded, the quota is {e.limit_mib:.0f} MiB"
            )
        elif not 0 <= context <= MAX_CONTEXT_OVERHEAD_MIB:
            problems.append(f"Pod {name}: a {context} MiB shortfall in the view is not a CUDA context")
        elif e.limit_mib - float(largest) > context + SEARCH_STEP_MIB:
            problems.append(
                f"Pod {name}: refused at {largest} MiB, {e.limit_mib - float(largest):.0f} MiB below the quota,"
                f" more than its {context} MiB context: something else than the quota refused it"
            )
        _sweep(e, name, r, seen, problems)
    largest_seen = "/".join(sorted({str(r.get("largest_alloc_mib")) for r in results.values()}))
    contexts = "/".join(sorted(measured_contexts))
    return _verdict(
        problems,
        f"refused at the quota: HAMi-core's OOM line names {e.limit_bytes} bytes, largest single allocation"
        f" {largest_seen} MiB of the {e.limit_mib:.0f} MiB quota (the rest, {contexts} MiB, is the CUDA context)"
        f" while the card has {e.card_mib} MiB; {e.extra_mib} MiB beyond the hold refused",
        seen,
    )


def _memory_mps_expected(e: Expectation) -> str:
    return (
        f"{e.hold_mib} MiB fits, {e.extra_mib} MiB more is refused; MPS's pinned limit ({e.limit_mib:.0f} MiB)"
        " shows as free memory, the largest allocation reaches that free memory and stays below the limit,"
        " while NVML shows the card had room for the refused allocation"
    )


def _memory_mps(ev: Evidence) -> Judgement:
    e = ev.expect
    results, problems = ev.all_memory()
    seen = []
    for name, r in results.items():
        problems += _not_ok(name, r)
        hold = _hold_and_extra(e, name, r, problems)
        largest, free, card_free = r.get("largest_alloc_mib"), r.get("visible_free_mib"), r.get("nvml_free_mib")
        seen.append(
            f"{name}: hold {hold.get('hold_mib')} MiB ok={hold.get('ok')}, +{hold.get('extra_mib')} MiB"
            f" ok={hold.get('extra_ok')}, free {free} MiB, largest {largest} MiB, card free (NVML) {card_free} MiB"
        )
        if largest is None or free is None or card_free is None:
            problems.append(
                f"Pod {name}: free memory, card free memory or the largest allocation is missing{probe_error(r)}"
            )
            continue
        if float(free) >= e.limit_mib:
            problems.append(
                f"Pod {name}: free memory {free} MiB is not held under the {e.limit_mib:.0f} MiB pinned limit"
            )
        if float(largest) >= e.limit_mib:
            problems.append(
                f"Pod {name}: a single {largest} MiB allocation succeeded, the limit is {e.limit_mib:.0f} MiB"
            )
        elif (
            abs(float(largest) - float(free)) > SEARCH_STEP_MIB
            or e.limit_mib - float(largest) > MAX_CONTEXT_OVERHEAD_MIB
        ):
            problems.append(
                f"Pod {name}: refused at {largest} MiB while {free} MiB was free under a {e.limit_mib:.0f} MiB limit:"
                " the refusal is not at the pinned limit"
            )
        # The card had room: the refusal was the limit's, not a full card's.
        if float(card_free) < float(largest) + e.extra_mib:
            problems.append(
                f"Pod {name}: the card had {card_free} MiB free, not room for {largest} + {e.extra_mib} MiB:"
                " a full card refuses without any limit"
            )
        _sweep(e, name, r, seen, problems)
    return _verdict(
        problems,
        f"refused at MPS's pinned limit of {e.limit_mib:.0f} MiB on a card that had room; {e.extra_mib} MiB beyond"
        " the hold refused",
        seen,
    )


def _memory_time_sharing_expected(e: Expectation) -> str:
    return "time-sharing enforces no memory limit: this check fails by design, with the Pods' largest allocation"


def _enforces_nothing(what: str) -> Callable[[Evidence], Judgement]:
    def judge(ev: Evidence) -> Judgement:
        results, _ = ev.all_memory()
        seen = [
            f"{name}: largest allocation {r.get('largest_alloc_mib')} MiB of the {r.get('visible_total_mib')} MiB"
            f" it sees, slice {ev.expect.slice_mib} MiB"
            for name, r in results.items()
        ]
        return False, f"time-sharing enforces no {what} limit: each Pod may take the whole card", "; ".join(seen)

    return judge


# ---------------------------------------------------------------- neighbor-isolation


def _neighbor_expected(e: Expectation) -> str:
    return (
        f"both Pods hold {e.hold_mib} MiB at the same time (overlapping holds, each survived), and each is refused"
        f" {e.extra_mib} MiB more inside its own quota"
    )


def _holds(ev: Evidence, name: str, r: Mapping[str, Any]) -> list[tuple[float, float]]:
    """The spans during which Pod `name` held its memory and survived: the hold phase, then its keep-holding
    until the container ended (or now, while it runs)."""
    hold = (r.get("phases") or {}).get("hold") or {}
    spans = []
    start, end = timestamp(hold.get("started_at")), timestamp(hold.get("ended_at"))
    if hold.get("ok") is True and start is not None and end is not None:
        spans.append((start, end))
    since = timestamp(r.get("keep_holding_since"))
    if since is not None and ev.pod(name).get("phase") == "Running":
        ended = ev.container_ended_at(name)
        spans.append((since, float("inf") if ended is None else ended))
    return spans


def _neighbor_isolation(ev: Evidence) -> Judgement:
    e = ev.expect
    results, problems = ev.all_memory()
    seen = []
    spans = {}
    for name, r in results.items():
        hold = _hold_and_extra(e, name, r, problems)
        spans[name] = _holds(ev, name, r)
        seen.append(
            f"{name}: hold {hold.get('started_at')}..{hold.get('ended_at')} ok={hold.get('ok')},"
            f" extra refused={hold.get('extra_ok') is False}, keeps holding since {r.get('keep_holding_since')}"
            f" (phase {ev.pod(name).get('phase')})"
        )
    names = list(results)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            overlap = max((min(x[1], y[1]) - max(x[0], y[0]) for x in spans[a] for y in spans[b]), default=0.0)
            if overlap <= 0:
                problems.append(f"the holds of {a} and {b} did not overlap in time: nothing was held side by side")
    return _verdict(problems, f"{' and '.join(names)} held {e.hold_mib} MiB each at the same time", seen)


# ---------------------------------------------------------------- overcommit-rejected


def _overcommit_expected(e: Expectation) -> str:
    left = e.card_mib - len(e.pods) * e.slice_mib
    return (
        f"{e.overcommit_pod}, asking {e.overcommit_mib} MiB (more than the {left} MiB left beside the slices, no"
        f" more than the {e.card_mib} MiB card), stays Pending with a FilteringFailed event naming"
        f" {e.pending_reason} after its creation, while both proof Pods are Running"
    )


def _event_time(event: Mapping[str, Any]) -> float | None:
    return timestamp(event.get("lastTimestamp") or event.get("eventTime") or event.get("firstTimestamp"))


def _pending_pod_seen(name: str, pod: Mapping[str, Any]) -> str:
    """The over-commit Pod as seen: phase, node, creation and every event with its time."""
    events = pod.get("events") or []
    return (
        f"{name}: phase {pod.get('phase')}, node {pod.get('nodeName')}, created {pod.get('creationTimestamp')};"
        " events: " + "; ".join(f"{x.get('reason')} at {_event_time(x)}: {x.get('message')}" for x in events)
    )


def _refused_since_creation(pod: Mapping[str, Any], event_reason: str, reason: str) -> bool:
    """An `event_reason` event naming `reason`, no older than the Pod (an earlier Pod's event proves nothing)."""
    created = timestamp(pod.get("creationTimestamp"))
    return created is not None and any(
        x.get("reason") == event_reason and reason in str(x.get("message"))
        and (_event_time(x) or float("-inf")) >= created
        for x in pod.get("events") or []
    )  # fmt: skip


def _proof_pods_not_running(ev: Evidence, held: str) -> list[str]:
    """The over-commit Pod proves the accounting only while both proof Pods hold their `held` (slice or slot)."""
    return [
        f"proof Pod {proof} is {phase}, not Running: its {held} was not held during the test"
        for proof in ev.names
        if (phase := ev.pod(proof).get("phase")) != "Running"
    ]


SLOT_REFUSAL_EVENT = "FailedScheduling"
"""kube-scheduler's event for a Pod no node fits (NodeResourcesFit: `Insufficient nvidia.com/gpu`)."""


def _overcommit_slots_expected(e: Expectation) -> str:
    slots = f"{e.overcommit_slots} nvidia.com/gpu slot{'' if e.overcommit_slots == 1 else 's'}"
    return (
        f"{e.overcommit_pod}, asking for {slots} on the proof Pods' node (one more than the two proof Pods leave),"
        f" stays Pending with a {SLOT_REFUSAL_EVENT} event naming {e.pending_reason} after its creation, while both"
        " proof Pods are Running"
    )


def _overcommit_slots_rejected(ev: Evidence) -> Judgement:
    """GKE's sharing counts clients per card: the Pod one slot beyond them must be kept out by kube-scheduler."""
    e = ev.expect
    name, reason = e.overcommit_pod or "", e.pending_reason or ""
    pod = ev.pods.get(name)
    if pod is None:
        return False, f"over-commit Pod {name} was not found", ""
    problems = [] if e.overcommit_slots else [f"{name} asks for no slots: it proves nothing about the client count"]
    seen = [_pending_pod_seen(name, pod)]
    if pod.get("phase") != "Pending" or pod.get("nodeName"):
        problems.append(
            f"{name} was scheduled (phase {pod.get('phase')}, node {pod.get('nodeName')}): the node took more"
            " clients than its cards were shared into"
        )
    if not _refused_since_creation(pod, SLOT_REFUSAL_EVENT, reason):
        problems.append(f"{name} has no {SLOT_REFUSAL_EVENT} event naming {reason} since its creation")
    problems += _proof_pods_not_running(ev, "slot")
    return _verdict(problems, f"{name} is Pending with {SLOT_REFUSAL_EVENT} … {reason} while the proof Pods run",
                    seen)


def _overcommit_rejected(ev: Evidence) -> Judgement:
    e = ev.expect
    name, reason = e.overcommit_pod or "", e.pending_reason or ""
    pod = ev.pods.get(name)
    if pod is None:
        return False, f"over-commit Pod {name} was not found", ""
    problems = []
    left = e.card_mib - len(e.pods) * e.slice_mib
    # Pending proves the slices are accounted only when nothing but the slices keeps the Pod out.
    if e.overcommit_mib is None or not left < e.overcommit_mib <= e.card_mib:
        problems.append(
            f"{name} asks {e.overcommit_mib} MiB: only a request above the {left} MiB left and at most the"
            f" {e.card_mib} MiB card shows that the slices keep it out"
        )
    seen = [_pending_pod_seen(name, pod)]
    allocated = parse_allocation(
        (pod.get("annotations") or {}).get(e.allocation_annotation or DEFAULT_ALLOCATION_ANNOTATION)
    )
    if pod.get("phase") != "Pending" or pod.get("nodeName") or allocated:
        problems.append(
            f"{name} was scheduled (phase {pod.get('phase')}, node {pod.get('nodeName')}"
            + (f", given {allocated[0]['uuid']}" if allocated else "")
            + "): the card's memory was not accounted as one budget"
        )
    if not _refused_since_creation(pod, "FilteringFailed", reason):
        problems.append(f"{name} has no FilteringFailed event naming {reason} since its creation")
    problems += _proof_pods_not_running(ev, "slice")
    return _verdict(problems, f"{name} is Pending with FilteringFailed … {reason} while the proof Pods run", seen)


# ---------------------------------------------------------------- monitor-metrics


def _monitor_expected(e: Expectation) -> str:
    return (
        f"the monitor on the proof Pods' node exports, for each Pod of namespace {e.namespace} on its card,"
        f" hami_vgpu_memory_limit_bytes = {e.limit_bytes} and hami_vgpu_memory_used_bytes ≥ {e.hold_mib * MIB}"
    )


def _monitor_metrics(ev: Evidence) -> Judgement:
    e = ev.expect
    floor = e.hold_mib * MIB
    problems, seen = [], []
    for name in ev.names:
        node = ev.node_of(name)
        uuid = (ev.memory(name) or {}).get("gpu_uuid")
        if name not in ev.pods:
            problems.append(ev.missing(name))
            continue
        if not node:
            problems.append(f"Pod {name} has no node, so there is no monitor to read")
            continue
        if node not in ev.metrics:
            errors = [x for x in ev.errors if node in x or "monitor" in x]
            problems.append(
                f"no metrics were read from the monitor on node {node}" + (f" ({'; '.join(errors)})" if errors else "")
            )
            continue
        samples = parse_metrics(ev.metrics[node])

        def series(metric: str, pod: str = name, card: Any = uuid, samples: list[Any] = samples) -> list[float]:
            return [
                v for n, labels, v in samples
                if n == metric and labels.get("pod") == pod and labels.get("namespace") == e.namespace
                and labels.get("device_uuid", card) == card
            ]  # fmt: skip

        limits, used = series("hami_vgpu_memory_limit_bytes"), series("hami_vgpu_memory_used_bytes")
        seen.append(f"{name} on {node} ({uuid}): limit {limits}, used {used}")
        if not limits or not used:
            pods_seen = sorted(
                {f"{labels.get('namespace')}/{labels['pod']}" for n, labels, _ in samples
                 if n.startswith("hami_vgpu") and "pod" in labels}
            )  # fmt: skip
            problems.append(
                f"the monitor on node {node} exports no hami_vgpu_memory series for Pod {e.namespace}/{name} on"
                f" {uuid} (series seen for: {pods_seen or 'no Pod'})"
            )
            continue
        if any(int(v) != e.limit_bytes for v in limits):
            problems.append(f"Pod {name}: hami_vgpu_memory_limit_bytes {limits}, expected {e.limit_bytes}")
        if max(used) < floor:
            problems.append(f"Pod {name}: hami_vgpu_memory_used_bytes {max(used):.0f} < {floor} while it holds memory")
    return _verdict(problems, f"each Pod's series: limit {e.limit_bytes} bytes, used ≥ {floor} bytes", seen)


# ---------------------------------------------------------------- preload-mechanism


def _preload_expected(e: Expectation) -> str:
    return (
        f"{e.preload_library} is mapped into each probe's process (/proc/self/maps), listed in /etc/ld.so.preload"
        " or LD_PRELOAD, and the limit env is set"
    )


def _preload_mechanism(ev: Evidence) -> Judgement:
    e = ev.expect
    library = e.preload_library
    results, problems = ev.all_memory()
    seen = []
    for name, r in results.items():
        preload = r.get("preload")
        if not isinstance(preload, Mapping):
            problems.append(f"Pod {name}: the probe reported no preload evidence (listed and mapped libraries)")
            continue
        listed = [str(x) for x in preload.get("listed") or []]
        mapped = [str(x) for x in preload.get("mapped") or []]
        seen.append(f"{name}: listed {listed}, mapped {mapped}")
        if not any(x.endswith(library) for x in listed):
            problems.append(
                f"Pod {name}: neither /etc/ld.so.preload nor LD_PRELOAD lists {library} ({listed or 'empty'}):"
                " HAMi-core is not loaded, so the limit is not enforced (is containerd's default runtime nvidia?)"
            )
        # Listed is a promise; mapped is the library in the process.
        elif not any(x.endswith(library) for x in mapped):
            problems.append(f"Pod {name}: {library} is listed but not mapped into the probe's process")
        problems += _env_problems(name, r.get("env") or {}, e.limit_env)
    return _verdict(problems, f"{library} is mapped into each probe's process and the limit env is set", seen)


# ---------------------------------------------------------------- compute-limited


COMPUTE_LIMIT_ENV = {"hami-core": "CUDA_DEVICE_SM_LIMIT", "mps": "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"}
"""The env each mechanism reads its compute share from (HAMi-core's limiter; MPS's thread percentage)."""


def _compute_expected(e: Expectation) -> str:
    target = (e.cores_percent or 0) / 100
    return (
        f"short many-block launches under {COMPUTE_LIMIT_ENV[e.mechanism]}={e.cores_percent} run at {target:.2f} ±"
        f" {COMPUTE_TOLERANCE} of the unlimited baseline, as the mean over ≥ {MIN_COMPUTE_SECONDS} s after warm-up"
        " on the proof Pods' card"
    )


def _compute_limited(ev: Evidence) -> Judgement:
    e = ev.expect
    if e.cores_percent is None:
        return False, "no coresPercent was requested, so there is no compute limit to test", ""
    key = COMPUTE_LIMIT_ENV[e.mechanism]
    target = e.cores_percent / 100
    problems, seen = [], []
    for name in e.compute_pods or tuple(ev.names):
        r = ev.compute(name)
        if r is None:
            problems.append(ev.missing(name, "compute"))
            continue
        problems += _library_absent(e, name, r)
        judged = str(r.get("judged_shape") or "short_many")
        share = (r.get("share") or {}).get(judged)
        m = (r.get("shapes") or {}).get(judged) or {}
        base = (((r.get("baseline") or {}).get("shapes") or {}).get(judged)) or {}
        limit = (r.get("env") or {}).get(key)
        memory_uuid = (ev.memory(name) or {}).get("gpu_uuid")
        seen.append(
            f"{name}: {judged} ({m.get('blocks')} blocks, {m.get('launch_ms_median')} ms a launch) mean"
            f" {m.get('mean_per_s')} GFMA/s over {m.get('window_s')} s after {m.get('warmup_s')} s (per second"
            f" {m.get('per_s_min')}…{m.get('per_s_max')}) against {base.get('mean_per_s')} GFMA/s unlimited"
            f" ({(r.get('baseline') or {}).get('how')}): share {share}; every shape {r.get('share')}; {key}={limit}"
            f" on {r.get('gpu_uuid')}"
        )
        problems += _not_ok(name, r)
        if str(limit) != str(e.cores_percent):
            problems.append(f"Pod {name}: measured under {key}={limit}, expected {e.cores_percent}")
        window = m.get("window_s")
        if not isinstance(window, (int, float)) or window < MIN_COMPUTE_SECONDS:
            problems.append(f"Pod {name}: a {window} s window is too short (≥ {MIN_COMPUTE_SECONDS} s)")
        if not r.get("gpu_uuid") or r.get("gpu_uuid") != memory_uuid:
            problems.append(
                f"Pod {name}: compute ran on {r.get('gpu_uuid')}, the memory probe on {memory_uuid}: not shown to be"
                " the shared card"
            )
        if share is None:
            problems.append(f"Pod {name}: no share of an unlimited baseline{probe_error(r)}")
        elif abs(float(share) - target) > COMPUTE_TOLERANCE:
            wanted = f"{target:.2f} ± {COMPUTE_TOLERANCE}"
            problems.append(f"Pod {name}: {judged} ran at {float(share):.2f}, expected {wanted}")
    return _verdict(problems, f"short many-block launches run at about {target:.2f} of the baseline", seen)


def _compute_time_sharing_expected(e: Expectation) -> str:
    return "time-sharing enforces no compute limit: this check fails by design (each Pod gets whole time slices)"


# ---------------------------------------------------------------- the registry

_TIME_SHARING_MEMORY = Rule(_memory_time_sharing_expected, _enforces_nothing("memory"))

CHECKS: tuple[Check, ...] = (
    Check("same-gpu", "Both Pods share one physical GPU", everywhere(Rule(_same_gpu_expected, _same_gpu))),
    Check(
        "view-isolation",
        "Each Pod sees only its slice (or, where the mechanism keeps the view, the whole card as a fact)",
        {
            "hami-core": Rule(_view_rewritten_expected, _view_rewritten),
            "mps": Rule(_view_kept_expected, _view_kept),
            "time-sharing": Rule(_view_kept_expected, _view_kept),
        },
    ),
    Check(
        "quota-injection",
        "The quota reaches each container",
        everywhere(Rule(_quota_injection_expected, _quota_injection)),
    ),
    Check(
        "memory-enforced",
        "The memory quota is enforced, not just displayed",
        {
            "hami-core": Rule(_memory_hami_core_expected, _memory_hami_core),
            "mps": Rule(_memory_mps_expected, _memory_mps),
            "time-sharing": _TIME_SHARING_MEMORY,
        },
    ),
    Check(
        "neighbor-isolation",
        "One Pod cannot take the other's quota",
        {
            "hami-core": Rule(_neighbor_expected, _neighbor_isolation),
            "mps": Rule(_neighbor_expected, _neighbor_isolation),
            "time-sharing": _TIME_SHARING_MEMORY,
        },
    ),
    Check(
        "overcommit-rejected",
        "The card's memory is one budget: an over-commit stays Pending",
        {
            "hami-core": Rule(_overcommit_expected, _overcommit_rejected),
            "mps": Rule(_overcommit_slots_expected, _overcommit_slots_rejected),
            "time-sharing": Rule(_overcommit_slots_expected, _overcommit_slots_rejected),
        },
    ),
    Check(
        "monitor-metrics",
        "The node-local monitor exports each Pod's limit and usage",
        {"hami-core": Rule(_monitor_expected, _monitor_metrics)},
    ),
    Check(
        "preload-mechanism",
        "HAMi-core is loaded into each container's process",
        {"hami-core": Rule(_preload_expected, _preload_mechanism)},
    ),
    Check(
        "compute-limited",
        "The compute quota holds short many-block launches to their share",
        {
            "hami-core": Rule(_compute_expected, _compute_limited),
            "mps": Rule(_compute_expected, _compute_limited),
            "time-sharing": Rule(_compute_time_sharing_expected, _enforces_nothing("compute")),
        },
    ),
)
REGISTRY: dict[str, Check] = {c.id: c for c in CHECKS}
