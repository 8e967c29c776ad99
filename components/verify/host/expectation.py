"""What a host proof runs: a stack's expectation and its proof Pods' probe arguments, taken from the offline plan.

`host_plan(stack)` plans the stack (needs pulumi); the JSON it returns is what `--expect FILE` reads on a GPU
host that has no pulumi. Everything else here is standard library only.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from components.incluster.checks import escape
from components.incluster.checks.registry import REGISTRY
from components.incluster.expectation import Expectation
from components.verify.phases import Phases

VERIFIER_ENV = "GPUSHARE_EXPECT"
CLUSTER_ONLY: dict[str, str] = {
    "overcommit-rejected": "an over-commit Pod stays Pending only through a scheduler's filter and its event",
    "monitor-metrics": "the per-Pod metrics come from the node-local monitor, a DaemonSet in the cluster",
}
"""Checks only a cluster can show, with the reason a host proof reports for not running them."""
CLUSTER_ONLY_PARTS: dict[str, str] = {
    "allocationAnnotation": "same-gpu: the scheduler's allocation annotation",
    "wholeGpuPod": "view-isolation: the whole-GPU Pod against the node label",
    "nodeRegistration": "quota-injection: the device plugin's node registration and allocatable slots",
    "podTries": "findings: the ways around the quota that exist only at Pod creation, each tried in its own Pod",
    "pinAnnotation": "same-gpu: the pin to the shared card, a Pod annotation the scheduler reads (a process has none)",
}
"""Parts of host-run checks that need a cluster: dropped from the host expectation and named in the verdict."""
POD_ANNOTATION_PARTS: dict[str, str] = {
    "kai": "same-gpu: KAI's gpu-memory ask, an annotation on the Pod (a process has none)",
}
"""Per sharing system, the Pod annotations host-run checks read in a cluster (`hostProof` skips them on a host)."""
NEEDS_CONTAINER_RUNTIME: dict[str, str] = {
    escape.TRY_ID: "NVIDIA_VISIBLE_DEVICES=all reaches a GPU only through the nvidia container runtime's"
    " hook; a host process sees every card anyway",
}
"""Pod-level tries that need a container runtime, not only a cluster: named apart in the host verdict."""
POD_PROBES = ("fault", "bandwidth", "allocation_paths", "memory", "compute")
"""The probes a proof Pod's command may run, as files (`/gpushare/memory.py`) or modules (`-m gpushare.fault`)."""
HOST_ONLY_FLAGS = {"--result-file": 1, "--ready-file": 1, "--keep-holding": 1, "--delay": 1}
"""Pod-only probe flags (and how many values follow): a host process has no termination log or readiness, and a
host's Pods meet after their neighbour steps and before memory (runner.run_pods' `meets`, proof.LOOKUP_WAIT_S),
where a cluster's Pod B waits out Pod A's host-PID lookup and keeps holding."""


class ExpectationError(ValueError):
    """An expectation file or plan that does not describe a proof to run."""


def _container(resource: Mapping[str, Any]) -> Mapping[str, Any]:
    return ((resource.get("inputs") or {}).get("spec") or {}).get("containers", [{}])[0]


def probe_argv(command: Sequence[str]) -> dict[str, list[str]]:
    """A proof Pod's command → each probe's arguments, in the order the Pod runs them: {"fault": [...],
    "bandwidth": [...], "compute": [...], "memory": [...]} (each but memory only where the Pod runs it)."""
    if len(command) >= 3 and command[0] == "/bin/sh" and command[1] == "-c":
        parts = [shlex.split(part.strip().removeprefix("exec ")) for part in command[2].split(";")]
    else:
        parts = [list(command)]
    found: dict[str, list[str]] = {}
    for argv in parts:
        for probe in POD_PROBES:
            # `python3 -m incluster.probes.memory …`, or a plan's older `python3 /gpushare/memory.py …`
            script = next((i for i, word in enumerate(argv) if word.endswith(f"/{probe}.py")
                           or (word.endswith(f".{probe}") and i > 0 and argv[i - 1] == "-m")), None)  # fmt: skip
            if script is not None:
                found[probe] = argv[script + 1 :]
    if "memory" not in found:
        raise ExpectationError(f"no memory probe in the Pod command {list(command)}")
    return found


def from_plan(plan: Mapping[str, Any]) -> dict[str, Any]:
    """The offline plan's JSON → {"stack", "expect", "pods": {name: {"memory": argv, "compute": argv?}}}."""
    resources = plan.get("resources") or []
    expect = None
    for resource in resources:
        for env in _container(resource).get("env") or []:
            if env.get("name") == VERIFIER_ENV:
                expect = json.loads(env["value"])
    if expect is None:
        raise ExpectationError(f"stack {plan.get('stack')}: the plan has no verifier ({VERIFIER_ENV}): is verify off?")
    pods: dict[str, Any] = {}
    for name in expect.get("pods") or []:
        match = [r for r in resources if ((r.get("inputs") or {}).get("metadata") or {}).get("name") == name]
        if not match:
            raise ExpectationError(f"stack {plan.get('stack')}: proof Pod {name} is not in the plan")
        pods[name] = probe_argv(_container(match[0]).get("command") or [])
    return {"stack": plan.get("stack"), "expect": expect, "pods": pods}


def host_plan(stack: str, overrides: Sequence[str] = ()) -> dict[str, Any]:
    """Plan `stack` offline (pulumi's mocks) and take its proof from the plan."""
    from components import plan as planner  # pulumi only here: a GPU host reads a file instead

    return from_plan(json.loads(planner.run(stack, list(overrides)).to_json()))


def load(path: str | Path) -> dict[str, Any]:
    """An expectation file written by `--write-expect`."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise ExpectationError(f"cannot read the expectation file {path}: {exc}") from exc
    if not isinstance(data, dict) or "expect" not in data or "pods" not in data:
        raise ExpectationError(
            f"{path} is not a host expectation (keys stack, expect, pods); write one with --write-expect"
        )
    return data


def without_host_only(argv: Sequence[str], hold_seconds: int | None = None) -> list[str]:
    """A Pod's probe arguments without the Pod-only flags (HOST_ONLY_FLAGS), with the host's hold length if given."""
    out: list[str] = []
    skip = 0
    for word in argv:
        if skip:
            skip -= 1
            continue
        if word in HOST_ONLY_FLAGS:
            skip = HOST_ONLY_FLAGS[word]
            continue
        if word == "--hold-seconds" and hold_seconds is not None:
            out += [word, str(hold_seconds)]
            skip = 1
            continue
        out.append(word)
    return out


def host_memory_argv(argv: Sequence[str], hold_seconds: int | None, mechanism: str) -> list[str]:
    """The Pod's memory-probe arguments without the Pod-only flags, with the host's hold length and mechanism."""
    return [*without_host_only(argv, hold_seconds), "--mechanism", mechanism]


def host_phase_argv(probe: str, argv: Sequence[str], steps: Phases, mechanism: str) -> list[str]:
    """A Pod's fault or bandwidth arguments with the host's windows and delays (its Pods start within `--stagger`
    of each other, a cluster's within seconds) and the mechanism."""
    values = {
        "fault": {"--window": steps.fault_window_s, "--delay": steps.fault_delay_s},
        "bandwidth": {"--window": steps.bandwidth_window_s, "--delay": steps.hog_delay_s,
                      "--hog-seconds": steps.hog_seconds},
    }[probe]  # fmt: skip
    out = list(argv)
    for flag, value in values.items():
        if flag in out:
            out[out.index(flag) + 1] = f"{value:g}"
    return [*out, "--mechanism", mechanism]


def compute_pods(expect: Mapping[str, Any]) -> list[str]:
    """The Pods that measure compute, as the plan has them: in a cluster only Pod A computes (compose/proof.py), so
    the judge's one-process band applies and a bare Pod, alone on the card's compute, gets the whole of it."""
    if expect.get("coresPercent") is None:
        return []
    return list(expect.get("computePods") or (expect.get("pods") or [])[:1])


def host_expect(
    expect: Mapping[str, Any], mechanism: str, limit_env: Mapping[str, str], card_mib: int | None = None
) -> Expectation:
    """The expectation a host can judge: cluster-only checks and parts removed, the plan's compute Pods, this
    host's card; under MPS, the view is the card's own and nothing is preloaded."""
    card = card_mib or int(expect.get("cardMiB") or 0)
    wire: dict[str, Any] = {
        **expect,
        "mechanism": mechanism,
        "limitEnv": dict(limit_env),
        "cardMiB": card,
        "overcommitPod": None,
        "overcommitMiB": None,
        "overcommitSlots": None,
        "pendingReason": None,
        "monitor": None,
        "nodeMemoryLabel": None,
        "computePods": compute_pods(expect),
        "hostProof": True,  # processes, not Pods: no Pod annotation to read
        "provenance": True,  # each process-Pod gets its identity and a Pod object (proof.identities, pod_object)
    }
    for key in CLUSTER_ONLY_PARTS:
        wire[key] = [] if key == "podTries" else None
    wire["pinnedPods"] = []  # pinned by the annotation left out above; the host's own cards: cards.on_cards
    wire["wholeGpuCardIndex"] = None  # the whole-GPU Pod's card goes with it; a host of several cards: cards.on_cards
    if mechanism == "mps":
        wire.update(visibleMiB=card, preloadLibrary=None)
    wire = {k: v for k, v in wire.items() if k in expect or v not in (None, [])}
    wanted = [c for c in expect.get("checks") or [] if c not in CLUSTER_ONLY]
    # A check the mechanism does not offer (MPS preloads nothing) is left to the plan's refusal, not run here.
    wire["checks"] = [c for c in wanted if c not in REGISTRY or mechanism in REGISTRY[c].rules]
    return Expectation.parse(wire)


def on_card(host: Mapping[str, Any], smi_name: str | None) -> tuple[dict[str, Any], str | None]:
    """The host plan re-derived for the card it runs on (its name as nvidia-smi prints it): where the planned hold
    does not fit the quota beside this card's CUDA context (HAMi-core charges it first: a T4's 102 MiB, an H200's
    518), the hold and the extra are sized again as config sizes them for that card, in the expectation and in every
    Pod's memory arguments. Returns the plan and what changed (None: nothing did)."""
    from components.gpus import CONTEXT_UNMEASURED_MIB, model_of
    from components.sizing import default_extra_gib, default_hold_gib

    expect = dict(host["expect"])
    model = model_of(smi_name or "")
    context = model.context_mib if model is not None and model.context_mib is not None else CONTEXT_UNMEASURED_MIB
    limit = int(expect.get("limitBytes") or 0) >> 20
    hold = int(expect.get("holdMiB") or 0)
    if not limit or hold + context <= limit:
        return dict(host), None
    hold = round(default_hold_gib(limit, context) * 1024)
    extra = round(default_extra_gib(limit, hold) * 1024)
    expect.update(holdMiB=hold, extraMiB=extra)
    pods = {name: {**argv, "memory": _with_values(argv["memory"], {"--hold-mib": hold, "--extra-mib": extra})}
            for name, argv in (host.get("pods") or {}).items()}  # fmt: skip
    why = (
        f"the planned {host['expect'].get('holdMiB')} MiB hold does not fit the {limit} MiB quota beside the"
        f" {context} MiB context of this {smi_name or 'unknown card'}: held {hold} MiB, asked {extra} MiB more"
    )
    return {**host, "expect": expect, "pods": pods}, why


def _with_values(argv: Sequence[str], values: Mapping[str, int]) -> list[str]:
    out = list(argv)
    for flag, value in values.items():
        if flag in out:
            out[out.index(flag) + 1] = str(value)
    return out
