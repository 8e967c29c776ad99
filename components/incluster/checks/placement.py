"""Where each proof Pod landed and what it was given: same-gpu, view-isolation, quota-injection.

Standard library only."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..evidence.record import Record
from ..expectation import Expectation
from .cards import (
    device_limit_problems,
    own_index,
    register_problems,
    shared_card_problems,
    shared_card_text,
    visible_problems,
    whole_card_problems,
    whole_card_text,
)
from .rule import (
    MAX_CONTEXT_OVERHEAD_MIB,
    Check,
    Judgement,
    Rule,
    env_problems,
    env_text,
    everywhere,
    probe_error,
    verdict,
)

# ---------------------------------------------------------------- same-gpu

KAI_MEMORY_ANNOTATION = "gpu-memory"
"""KAI's per-Pod memory ask in MiB (KAI-Scheduler v0.17.0 pkg/common/constants/constants.go:58, GpuMemory)."""


def _same_gpu_expected(e: Expectation) -> str:
    text = "every proof Pod reports the same GPU UUID, on the same node, with NVIDIA_VISIBLE_DEVICES naming it"
    if e.allocation_annotation:
        text += f"; {e.allocation_annotation} names that card with the {e.slice_mib} MiB slice for each"
    return text + shared_card_text(e)


def _same_gpu(rec: Record) -> Judgement:
    e = rec.expect
    results, problems = rec.memories(), []
    uuids = {name: r.get("gpu_uuid") for name, r in results.items()}
    nodes = {name: rec.node_of(name) for name in rec.names}
    for name, r in results.items():
        uuid = uuids[name]
        if not uuid:
            problems.append(f"Pod {name} reported no GPU UUID{probe_error(r)}")
            continue
        # A privileged container sees every card: device 0 of a multi-GPU node is not the one it was given.
        # Unset (GKE's device plugin mounts device nodes instead) says nothing either way.
        problems += visible_problems(name, uuid, rec.devices(name), own_index(e))
    if len({u for u in uuids.values() if u}) > 1:
        problems.append("the Pods are on different GPUs: " + ", ".join(f"{n}={u}" for n, u in uuids.items()))
    placed = {n for n in nodes.values() if n}
    problems += [f"Pod {n} is on no node: nothing places it beside the others" for n, v in nodes.items() if not v]
    if len(placed) > 1:
        problems.append(
            "the Pods are not on one node (" + ", ".join(f"{n}={v}" for n, v in nodes.items()) + "): one UUID"
            " on two nodes is not one card"
        )
    annotation = e.allocation_annotation
    allocated: dict[str, list[dict[str, Any]]] = {}
    if annotation:
        for name in rec.names:
            allocated[name] = rec.allocated(name)
            if not allocated[name]:
                problems.append(f"Pod {name} has no {annotation} annotation")
                continue
            cards = [d["uuid"] for d in allocated[name]]
            if uuids.get(name) and uuids[name] not in cards:
                problems.append(f"{annotation} of Pod {name} names {cards}, the probe saw {uuids[name]}")
            elif uuids.get(name) and set(cards) != {uuids[name]}:
                problems.append(f"{annotation} of Pod {name} names {cards}: cards beside the {uuids[name]} it shares")
            sizes = sorted({d["memMiB"] for d in allocated[name]})
            if sizes != [e.slice_mib]:
                problems.append(f"{annotation} of Pod {name} allocates {sizes} MiB, the slice is {e.slice_mib} MiB")
            limit = (results.get(name) or {}).get("env", {}).get("CUDA_DEVICE_SM_LIMIT")
            cores = sorted({d["cores"] for d in allocated[name]})
            if e.mechanism == "hami-core" and limit not in (None, "") and [str(c) for c in cores] != [limit]:
                problems.append(f"{annotation} of Pod {name} allocates {cores}% of the cores, its env says"
                                f" CUDA_DEVICE_SM_LIMIT={limit}: the allocation and the limit disagree")  # fmt: skip
    problems += shared_card_problems(rec, uuids)
    seen = [
        f"{n}: uuid={uuids.get(n)}, node={nodes.get(n)}"
        + (f", {annotation}={[(d['uuid'], d['memMiB']) for d in allocated.get(n, [])]}" if annotation else "")
        for n in rec.names
    ]
    if e.system == "kai" and e.host_proof:
        seen.append(f"KAI's {KAI_MEMORY_ANNOTATION} ask: not run on a host (a process has no Pod annotations)")
    elif e.system == "kai":
        # KAI is asked through the Pod's own annotation; its binder sizes HAMi-core's limit from it.
        for name in rec.names:
            ask = (rec.pod(name).get("annotations") or {}).get(KAI_MEMORY_ANNOTATION)
            if str(ask) != str(e.slice_mib):
                problems.append(f"Pod {name} asks KAI {KAI_MEMORY_ANNOTATION}={ask}, the slice is {e.slice_mib} MiB")
    one = next((u for u in uuids.values() if u), None)
    return verdict(problems, f"all {len(rec.names)} Pods report the same GPU, {one}", seen)


# ---------------------------------------------------------------- view-isolation


def _view_rewritten_expected(e: Expectation) -> str:
    text = f"nvidia-smi/NVML and cuMemGetInfo total = {e.visible_mib} MiB in each Pod (the card has {e.card_mib})"
    if e.whole_gpu_pod and e.node_memory_label:
        text += f"; a whole-GPU Pod's nvidia-smi total equals the node label {e.node_memory_label}"
    return text + whole_card_text(e)


def _view_kept_expected(e: Expectation) -> str:
    return (
        f"{e.mechanism} does not rewrite the view: each Pod sees the whole card ({e.card_mib} MiB) in NVML and"
        " cuMemGetInfo; reported as a fact, the limit is judged by memory-enforced" + whole_card_text(e)
    )


def _whole_gpu(rec: Record, seen: list[str], problems: list[str]) -> None:
    e = rec.expect
    whole, label = e.whole_gpu_pod, e.node_memory_label
    if whole and not label and e.whole_gpu_card_index is not None:  # a host's: its memory probe on its own card
        problems += whole_card_problems(rec, seen)
        return
    if not (whole and label):
        return
    pod = rec.pods.get(whole)
    smi = rec.smi_total(whole) if pod else None
    node = (pod or {}).get("nodeName") or next((rec.node_of(n) for n in rec.names if rec.node_of(n)), None)
    labelled = ((rec.nodes.get(node or "") or {}).get("labels") or {}).get(label)
    seen.append(f"{whole}: nvidia-smi total {smi} MiB, {label}={labelled} on {node}")
    if pod is None:
        problems.append(f"whole-GPU Pod {whole} was not found")
    elif smi is None:
        problems.append(f"whole-GPU Pod {whole} printed no nvidia-smi memory column")
    elif labelled is None:
        problems.append(f"node {node} has no {label} label")
    elif str(smi) != str(labelled).strip():
        problems.append(f"the whole GPU shows {smi} MiB but node {node} is labelled {label}={labelled}")


TotalsJudge = Callable[[str, Mapping[str, Any], Any, Any], list[str]]
"""(Pod, its memory result, cuMemGetInfo total, NVML total) → what is wrong with those totals."""


def _views(rec: Record, judge_totals: TotalsJudge) -> tuple[list[str], list[str]]:
    """Each Pod's two totals and `judge_totals(name, result, cuda, nvml)`'s problems (free within each total is the
    record's: view-free-within-total, nvml-free-within-total)."""
    problems, seen = [], []
    for name, r in rec.memories().items():
        cuda, nvml = r.get("visible_total_mib"), r.get("nvml_total_mib")
        seen.append(f"{name}: CUDA {cuda} MiB, NVML {nvml} MiB")
        problems += judge_totals(name, r, cuda, nvml)
    return problems, seen


def _view_rewritten(rec: Record) -> Judgement:
    """Both totals equal the slice's view: what HAMi-core rewrites (cuMemGetInfo and NVML alike)."""
    e = rec.expect

    def totals(name: str, r: Mapping[str, Any], cuda: Any, nvml: Any) -> list[str]:
        problems = []
        for label, value in (("cuMemGetInfo", cuda), ("NVML", nvml)):
            if value is None:
                problems.append(f"Pod {name}: {label} total unknown{probe_error(r)}")
            elif int(value) != e.visible_mib:
                problems.append(f"Pod {name}: {label} total is {value} MiB, not {e.visible_mib}")
        return problems

    problems, seen = _views(rec, totals)
    _whole_gpu(rec, seen, problems)
    return verdict(problems, f"each Pod sees {e.visible_mib} MiB of the {e.card_mib} MiB card", seen)


def _view_kept(rec: Record) -> Judgement:
    """The whole card, as a fact: NVML reports the card as nvidia-smi does; cuMemGetInfo the card less what the
    driver keeps back (616 MiB on an H200), never the slice."""
    e = rec.expect

    def totals(name: str, r: Mapping[str, Any], cuda: Any, nvml: Any) -> list[str]:
        if cuda is None or nvml is None:
            return [f"Pod {name}: a total is unknown (CUDA {cuda}, NVML {nvml}){probe_error(r)}"]
        problems = []
        if int(nvml) != e.card_mib:
            problems.append(f"Pod {name}: NVML total is {nvml} MiB, not the card's {e.card_mib}")
        if not e.card_mib - MAX_CONTEXT_OVERHEAD_MIB <= int(cuda) <= e.card_mib:
            problems.append(f"Pod {name}: cuMemGetInfo total is {cuda} MiB, not the {e.card_mib} MiB card")
        return problems

    problems, seen = _views(rec, totals)
    _whole_gpu(rec, seen, problems)
    return verdict(problems, f"not rewritten by {e.mechanism}: each Pod sees the whole {e.card_mib} MiB card", seen)


# ---------------------------------------------------------------- quota-injection


def _wanted_env(e: Expectation) -> dict[str, str]:
    wanted = dict(e.limit_env)
    if e.cores_percent is not None and e.mechanism == "hami-core":
        wanted["CUDA_DEVICE_SM_LIMIT"] = str(e.cores_percent)
    return wanted


def _quota_injection_expected(e: Expectation) -> str:
    text = f"each Pod's env has {env_text(_wanted_env(e))}"
    reg = e.node_registration
    if reg:
        slots = reg.cards_per_node * reg.slots_per_card
        text += (
            f"; node allocatable {reg.resource} = {slots} ({reg.cards_per_node} card × {reg.slots_per_card});"
            f" {reg.annotation} lists the Pod's card with devmem {e.card_mib} MiB and count {reg.slots_per_card}"
        )
    return text


def _quota_injection(rec: Record) -> Judgement:
    e = rec.expect
    wanted = _wanted_env(e)
    results, problems = rec.memories(), []
    seen = []
    for name, r in results.items():
        env = r.get("env") or {}
        seen.append(f"{name}: {env_text({k: env.get(k) for k in wanted})}")
        problems += env_problems(name, env, wanted) + device_limit_problems(rec, name, r)
    reg = e.node_registration
    if reg:
        slots = reg.cards_per_node * reg.slots_per_card
        for node in sorted({n for n in (rec.node_of(p) for p in rec.names) if n}):
            obj = rec.nodes.get(node) or {}
            allocatable = (obj.get("allocatable") or {}).get(reg.resource)
            devices = {d["id"]: d for d in rec.registered(node) or []}
            seen.append(
                f"node {node}: allocatable {reg.resource}={allocatable}, registered "
                + ", ".join(f"{i} devmem={d['devmem']}" for i, d in devices.items())
            )
            if str(allocatable) != str(slots):
                problems.append(f"node {node}: allocatable {reg.resource}={allocatable}, expected {slots}")
            problems += register_problems(rec, node, devices)
            if devices and len(devices) != reg.cards_per_node:
                problems.append(f"node {node}: {reg.annotation} registers {len(devices)} cards, the node's"
                                f" {slots} slots are {reg.cards_per_node} card × {reg.slots_per_card}")  # fmt: skip
            for name in rec.names:
                uuid = (results.get(name) or {}).get("gpu_uuid")
                if rec.node_of(name) != node or not uuid:
                    continue
                if uuid not in devices:
                    problems.append(f"node {node}: {reg.annotation} does not list {uuid} of Pod {name}")
                elif devices[uuid]["devmem"] != e.card_mib or devices[uuid]["count"] != reg.slots_per_card:
                    # HAMi registers the card's memory and its split count as the device plugin found them.
                    problems.append(
                        f"node {node}: {reg.annotation} registers {uuid} with devmem={devices[uuid]['devmem']} MiB"
                        f" and count={devices[uuid]['count']}, the card has {e.card_mib} MiB split"
                        f" {reg.slots_per_card} ways"
                    )
    return verdict(problems, f"every Pod sees {env_text(wanted)}", seen)


SAME_GPU = Check("same-gpu", "Both Pods share one physical GPU", everywhere(Rule(_same_gpu_expected, _same_gpu)))
VIEW_ISOLATION = Check(
    "view-isolation",
    "Each Pod sees only its slice (or, where the mechanism keeps the view, the whole card as a fact)",
    {
        "hami-core": Rule(_view_rewritten_expected, _view_rewritten),
        "mps": Rule(_view_kept_expected, _view_kept),
        "time-sharing": Rule(_view_kept_expected, _view_kept),
    },
    reads=("pods", "memory", "whole-gpu", "nodes"),
)
QUOTA_INJECTION = Check(
    "quota-injection",
    "The quota reaches each container",
    everywhere(Rule(_quota_injection_expected, _quota_injection)),
    reads=("pods", "memory", "nodes"),
)
