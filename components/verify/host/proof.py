"""One stack's proof on this GPU host: a baseline alone, then the proof Pods as processes at once, then the judge.

Standard library only. Checks that need a cluster are reported with `passed: null` and the reason, never
passed; the verdict's `passed` covers the checks a host ran, and `notRunOnHost` names the rest.
"""

from __future__ import annotations

import json
import socket
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from components.incluster import judge
from components.incluster.evidence.parse import probe_results
from components.incluster.expectation import Expectation
from components.incluster.probes import provenance
from components.incluster.probes.memory_findings import with_neighbours
from components.verify import phases
from components.verify.host import cards, expectation
from components.verify.host.runner import (
    PodRun,
    card,
    clean_env,
    hami_env,
    mps_client_env,
    probe,
    run_pods,
    run_process,
)

SETUPS = ("hami-core", "bare", "mps")
BASELINE_SECONDS = 1
BASELINE_WARMUP_S = 1.0
"""The baseline runs alone and unlimited: on the H200 its whole seconds lay within 0.4 % of each other (18,196 –
18,268 over 3 s, tests/fixtures/cluster_evidence.json), so one whole second after a whole second's warm-up gives its
mean (its first second, warm-up included, came to 0.979 – 1.006 of it: docs/host-proof/h100, h200)."""
PROCESS_TIMEOUT_S = 540


@dataclass(frozen=True)
class HostOptions:
    """How this host runs a proof: the setup, the library, where files go, and the host's own shorter holds."""

    setup: str
    workdir: Path
    lib: str | None = None
    mps_env: Mapping[str, str] | None = None
    hold_seconds: int | None = None
    compute_seconds: float | None = None
    compute_warmup: float = 2.0
    stagger_seconds: float = 0.0
    """How long after Pod A each next Pod starts: 0 starts them in the same instant."""
    gpu_uuid: str | None = None
    """The card's UUID, set as NVIDIA_VISIBLE_DEVICES the way the device plugin names a Pod's card."""
    device: int = 0
    """The card the proof Pods share (`--device`): its index as nvidia-smi shows it."""
    cards: tuple[Mapping[str, Any], ...] = ()
    """Every card of this host (runner.cards()); with several, the Pods get `device`'s and two processes run beside
    them (cards.py)."""
    compute_shapes: tuple[str, ...] = ()
    """The kernel shapes the baseline and the Pods measure (compute.py's --shapes); none named: every shape. The
    judged one alone drops the two shapes only findings read, about 17 s a proof on the H200."""


def mechanism(setup: str) -> str:
    """The mechanism the judge is told of: bare is HAMi-core's expectation with the library absent."""
    return "mps" if setup == "mps" else "hami-core"


def limit_env(expect: Mapping[str, Any], setup: str) -> dict[str, str]:
    """The env every Pod must see: the stack's HAMi limit env, or the MPS client limits for its slice."""
    cores = expect.get("coresPercent")
    if setup == "mps":
        return mps_client_env(int(expect.get("visibleMiB") or 0), cores, {})
    return dict(expect.get("limitEnv") or {})


def pod_env(expect: Mapping[str, Any], options: HostOptions, pod: str) -> dict[str, str]:
    """A proof Pod's process env under the setup; each Pod's HAMi-core cache file is fresh."""
    cores = expect.get("coresPercent")
    device = cards.proof_env(options)
    if options.setup == "mps":
        client = mps_client_env(int(expect.get("visibleMiB") or 0), cores, options.mps_env or {})
        return {**clean_env(), **device, **client}
    cache = options.workdir / f"{pod}.cache"
    cache.unlink(missing_ok=True)
    lib = options.lib if options.setup == "hami-core" else None
    return {**clean_env(), **device, **hami_env(lib, expect.get("limitEnv") or {}, cores, cache)}


def baseline_env(expect: Mapping[str, Any], options: HostOptions) -> tuple[dict[str, str], str]:
    """The unlimited process's env and how it was obtained (what the compute probe's child does in a Pod)."""
    if options.setup == "hami-core":
        env = {**pod_env(expect, options, "baseline"), "GPU_CORE_UTILIZATION_POLICY": "disable"}
        return env, "a process with libvgpu.so preloaded and GPU_CORE_UTILIZATION_POLICY=disable"
    if options.setup == "mps":
        alone = {**clean_env(), **(cards.proof_env(options) if cards.several(options) else {})}
        return alone, "a process outside MPS (no client settings) with the card to itself"
    return pod_env(expect, options, "baseline"), "a process with the Pod's env and no library"


def last_json(text: str) -> dict[str, Any] | None:
    for line in reversed(text.strip().splitlines()):
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                return None
    return None


def measure_baseline(expect: Mapping[str, Any], options: HostOptions, log: Callable[[str], None]) -> tuple[Path, str]:
    """The compute baseline, alone on the card, written where the Pods' compute probes read it; and how it was made.

    A baseline that failed leaves the Pods without one (`none`): compute-limited then fails with the reason.
    """
    env, how = baseline_env(expect, options)
    log(f"baseline: {how}")
    args = ["--baseline", "none", "--seconds", str(BASELINE_SECONDS), "--warmup", str(BASELINE_WARMUP_S),
            "--measured-by", how, *shapes_argv(options)]  # fmt: skip
    code, out, err = run_process(probe("compute", args), env, PROCESS_TIMEOUT_S)
    result = last_json(out)
    if code != 0 or not result or not result.get("ok"):
        failed = f"the baseline ({how}) failed, exit {code}: {(result or {}).get('error') or err[-400:]}"
        log(failed)
        return Path("none"), failed
    path = options.workdir / f"baseline-{options.setup}.json"  # never the comparison's own, beside it
    path.write_text(json.dumps(result))
    return path, how


def shapes_argv(options: HostOptions) -> list[str]:
    """The compute probe's --shapes, where the host proof names some."""
    return ["--shapes", ",".join(options.compute_shapes)] if options.compute_shapes else []


def identities(pods: Iterable[str], namespace: str, node: str) -> dict[str, dict[str, str]]:
    """Each process-Pod's identity as the downward API would give it in a cluster: its name, a fresh UID, the proof
    namespace, this host as its node."""
    return {name: {"name": name, "uid": str(uuid.uuid4()), "namespace": namespace, "node": node} for name in pods}


def identity_env(identity: Mapping[str, str]) -> dict[str, str]:
    """The env a Pod's probes read their identity from (provenance.ENV), as fieldRef sets it in a cluster."""
    return {provenance.ENV[key]: value for key, value in identity.items()}


def _iso(seconds: float) -> str:
    stamp = datetime.fromtimestamp(seconds, timezone.utc)  # noqa: UP017 (GPU hosts' Pythons)
    return stamp.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def pod_object(run: PodRun, identity: Mapping[str, str], read_at: float) -> dict[str, Any]:
    """The Pod object the API server would have named: the process-Pod's identity, created as its first process
    started, read once every process ended; the judge ties each result to it as to a cluster's Pod."""
    return {**run.evidence(identity["node"]), "namespace": identity["namespace"], "uid": identity["uid"],
            "creationTimestamp": _iso(run.started), "readAt": _iso(read_at)}  # fmt: skip


LOOKUP_WAIT_S = round(phases.HOST_INIT_S + phases.MARGIN_S, 1)
"""On a host Pod B's allocation step waits this long after the Pods meet: Pod A's compute process looks up its host
PID in its start (docs/host-proof.md), and the judge holds the record to it (evidence/ties.py, beside_lookup)."""


def pod_steps(
    argv: Mapping[str, Sequence[str]],
    env: dict[str, str],
    options: HostOptions,
    compute_args: Sequence[str] | None,
    computes: bool,
) -> list[tuple[list[str], dict[str, str]]]:
    """One Pod's processes in the Pod's order, all with one env (one container, one HAMi-core cache file): its
    fault and bandwidth steps with the host's windows, compute where the plan has this Pod measure it (`compute_args`
    given: Pod A, as in a cluster), the allocation paths (in the other Pods after A's host-PID lookup, where one
    computes), then memory with the host's hold (the Pods meet before compute and before memory: run_pods)."""
    mech = "none" if options.setup == "bare" else mechanism(options.setup)
    steps = phases.host(options.stagger_seconds)
    out = [(probe(name, expectation.host_phase_argv(name, argv[name], steps, mech)), env)
           for name in ("fault", "bandwidth") if name in argv]  # fmt: skip
    if compute_args is not None:
        out.append((probe("compute", list(compute_args)), env))
    if "allocation_paths" in argv:  # after compute (workloads.container_command)
        wait = LOOKUP_WAIT_S if computes and compute_args is None else 0.0
        args = [*expectation.without_host_only(argv["allocation_paths"]), "--mechanism", mech]
        out.append((probe("allocation_paths", [*args, *(["--delay", f"{wait:g}"] if wait else [])]), env))
    memory_args = expectation.host_memory_argv(argv["memory"], options.hold_seconds, mechanism(options.setup))
    return [*out, (probe("memory", memory_args), env)]


def meets(steps: Mapping[str, Sequence[object]], pods: Sequence[str], neighbour_steps: int) -> list[dict[str, int]]:
    """Where the proof Pods wait for each other: after the neighbour steps (every process of theirs has left the card
    before A's compute looks up its host PID) and before memory (the holds overlap)."""
    return [{name: neighbour_steps for name in pods}, {name: len(steps[name]) - 1 for name in pods}]


def context_charges(outputs: Mapping[str, Mapping[str, Any]]) -> dict[str, int | None]:
    """Each Pod's context charge from its probes' output (Pod → probe → result): what `with_neighbours` judges
    each Pod's context-charge finding beside, where a host's Pods start at once."""
    return {name: (out.get("memory") or {}).get("context_overhead_mib") for name, out in outputs.items()}


def not_run(expect: Mapping[str, Any]) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """The planned cluster-only checks, each passed null with the reason; and the cluster-only parts left out."""
    planned = {c["id"]: c for c in judge.planned_checks(Expectation.parse(dict(expect)))}
    checks = [
        {**planned[cid], "passed": None, "observed": f"not run on a host: {reason}", "evidence": None}
        for cid, reason in expectation.CLUSTER_ONLY.items()
        if cid in planned
    ]
    parts = {key: text for key, text in expectation.CLUSTER_ONLY_PARTS.items() if expect.get(key)}
    if expect.get("system") in expectation.POD_ANNOTATION_PARTS:
        parts["podAnnotations"] = expectation.POD_ANNOTATION_PARTS[str(expect["system"])]
    tries = [t.get("id") for t in expect.get("podTries") or []]
    parts |= {f"podTries.{t}": why for t, why in expectation.NEEDS_CONTAINER_RUNTIME.items() if t in tries}
    return checks, parts


def prove(
    host: Mapping[str, Any],
    options: HostOptions,
    log: Callable[[str], None] = print,
    baseline_file: Path | None = None,
) -> dict[str, Any]:
    """Run the stack's proof Pods as processes under `options.setup` and judge them: {"verdict", "evidence"}."""
    started = time.time()
    info = dict(cards.shared(options) or card())
    host, rederived = expectation.on_card(host, info.get("name"))  # what depends on this card, not the planned one
    if rederived:
        log(rederived)
    expect, pods = host["expect"], host["pods"]
    options.workdir.mkdir(parents=True, exist_ok=True)
    cores = expect.get("coresPercent")
    how: str | None = None
    node = socket.gethostname()
    who = identities(pods, str(expect.get("namespace") or "gpushare-proof"), node)
    baseline_started = time.time()
    compute_args: list[str] | None = None
    if cores is not None:
        if baseline_file is None:
            baseline_file, how = measure_baseline(expect, options, log)
        else:
            how = (json.loads(baseline_file.read_text()) or {}).get("measured_by")
        compute_args = ["--baseline", str(baseline_file), "--warmup", str(options.compute_warmup),
                        "--mechanism", "none" if options.setup == "bare" else mechanism(options.setup)]  # fmt: skip
        if options.compute_seconds is not None:
            compute_args += ["--seconds", str(options.compute_seconds)]
        compute_args += shapes_argv(options)
    computing = expectation.compute_pods(expect)
    steps = {name: pod_steps(argv, {**pod_env(expect, options, name), **identity_env(who[name])}, options,
                             compute_args if name in computing else None, bool(computing))
             for name, argv in pods.items()}  # fmt: skip
    neighbour_steps = sum(1 for step in ("fault", "bandwidth") if step in next(iter(pods.values()), {}))
    pod_meets = meets(steps, list(pods), neighbour_steps)
    log(f"{host.get('stack')}: {len(pods)} proof Pods at once under {options.setup}")
    # A host of several cards: a whole-card process and a cross-card one beside the Pods (cards.py).
    who |= identities(cards.side_pods(options, expect), str(expect.get("namespace") or "gpushare-proof"), node)
    steps |= cards.side_steps(host, options, lambda n: pod_env(expect, options, n), lambda n: identity_env(who[n]),
                              mechanism(options.setup))  # fmt: skip
    pods_started = time.time()
    runs = run_pods(steps, PROCESS_TIMEOUT_S, options.stagger_seconds, meets=pod_meets)
    pods_ended = time.time()
    objects = {n: pod_object(r, who[n], pods_ended) for n, r in runs.items()}
    evidence = {"pods": objects, "nodes": {}, "metrics": {}, "errors": []}
    judged_expect = expectation.host_expect(
        expect, mechanism(options.setup), limit_env(expect, options.setup), info.get("mib")
    )
    judged_expect = cards.on_cards(judged_expect, options, host)
    verdict = judge.judge(judged_expect, evidence)
    skipped, parts = not_run(expect)
    order = list(expect.get("checks") or [])
    checks = sorted([*verdict["checks"], *skipped], key=lambda c: order.index(c["id"]) if c["id"] in order else 99)
    raw = {
        name: {
            **probe_results(run.logs),
            "exit_codes": run.exit_codes,
            "started": run.started,
            "ended": run.ended,
            "podObject": {k: v for k, v in objects[name].items() if k != "logs"},
        }
        for name, run in runs.items()
    }
    charges = context_charges(raw)
    result = {
        "scope": "host",
        "stack": host.get("stack"),
        "setup": options.setup,
        "mechanism": mechanism(options.setup),
        "library": options.lib if options.setup == "hami-core" else None,
        "passed": bool(verdict["checks"]) and all(c["passed"] for c in verdict["checks"]),
        "notRunOnHost": {c["id"]: c["observed"] for c in skipped},
        "partsNotRunOnHost": parts,
        "checks": checks,
        "findings": with_neighbours(verdict["findings"], charges),
        "contextChargeMiB": charges,
        "card": info,
        "rederived": rederived,
        "baseline": how,
        "holdSeconds": options.hold_seconds,
        "staggerSeconds": options.stagger_seconds,
        "wallSeconds": round(time.time() - started, 1),
        "baselineSeconds": round(pods_started - baseline_started, 1),
        "podSeconds": round(pods_ended - pods_started, 1),
    }
    for name in runs:
        (options.workdir / f"{name}.cache").unlink(missing_ok=True)
    return {"verdict": result, "evidence": raw, "expect": judged_expect.to_wire()}
