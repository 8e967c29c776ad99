"""The evidence record: what the verifier collected, parsed once, validated against its declared schema, and tied to
the Pods that produced it. The checks read this and nothing else.

`Record(expect, evidence)` never raises. Every part of the evidence a check may read has a key (a Pod object
`pod:<name>`, a probe result `memory:<name>` / `compute:<name>`, a node `node:<name>`, its monitor
`metrics:<node>`, the Pods holding HAMi quota `quota-pods`); a part that fails its schema, its invariants or its
ties is "not judgeable: <field>: <why>" in `problems`, and `blocked(reads)` gives a check those of the parts it
reads: the judge fails the check with them, never skips or passes it. What a part holds once it is judgeable is
checked: an int is an int, a time an instant, a path normal, an OOM line the library's own process's.
Standard library only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..expectation import Expectation
from . import ties
from .devices import Devices, devices
from .lines import PROBES, STEPS, read_log
from .object_schema import AUDIT, NODE, POD
from .oom_lines import OomLines
from .parse import monitor_samples, parse_allocation, parse_node_register, parse_nvidia_smi_memory, parse_oom_lines
from .pods import DEFAULT_ALLOCATION_ANNOTATION, ghost_quota, waiting_reason
from .schema import validate
from .strict import NotJudgeable, duplicates, instant, shown

READS = ("pods", "memory", "compute", "nodes", "metrics", "overcommit", "whole-gpu", "quota-pods", "fault", "bandwidth",
         "allocation")  # fmt: skip
"""What a check may declare it reads (checks/registry.py); `parts` names the evidence each one covers."""


class Record:
    """One run's evidence against one expectation, validated; `problems` holds each part that is not judgeable."""

    def __init__(self, expect: Expectation, evidence: Any) -> None:
        self.expect = expect
        self.names: list[str] = list(expect.pods)
        self.problems: dict[str, str] = {}
        self.pods: dict[str, dict[str, Any]] = {}
        self.nodes: dict[str, dict[str, Any]] = {}
        self.quota_pods: dict[str, dict[str, Any]] = {}
        self.errors: list[str] = []
        self.audit: dict[str, Any] | None = None
        self.results: dict[str, dict[str, dict[str, Any]]] = {}
        self.unjudged: dict[str, dict[str, dict[str, Any]]] = {}
        """Probe results that parsed as JSON but failed the record: their findings are reported, never believed."""
        self.log_lines: dict[str, list[str]] = {}
        self._metrics_text: dict[str, str] = {}
        self._samples: dict[str, list[tuple[str, dict[str, str], float]]] = {}
        self._allocated: dict[str, list[dict[str, Any]]] = {}
        self._quota_allocated: dict[str, list[dict[str, Any]]] = {}
        self._registered: dict[str, list[dict[str, Any]]] = {}
        self._devices: dict[str, Devices] = {}
        self._pins: dict[str, list[str] | None] = {}
        if not isinstance(evidence, Mapping):
            self._refuse("evidence", NotJudgeable("evidence", f"{shown(evidence)} is not an object"))
            evidence = {}
        self._read_objects(evidence)
        for name in self.probed():
            self._read_logs(name)
        self._require_results()
        self._read_devices()
        self._tie()
        self._parse_derived()
        self.ghosts = ghost_quota(self.quota_pods or self.pods,
                                  expect.allocation_annotation or DEFAULT_ALLOCATION_ANNOTATION)  # fmt: skip

    # ------------------------------------------------------------ reading

    def _refuse(self, part: str, exc: NotJudgeable | str) -> None:
        self.problems.setdefault(part, str(exc))

    def tried(self) -> list[str]:
        """The Pods whose logs hold probe results: the proof Pods, then each Pod-level try's."""
        return [*self.names, *(t.pod for t in self.expect.pod_tries)]

    def probed(self) -> list[str]:
        """Every Pod whose log may hold probe results: the tried ones, then the whole-GPU Pod (a host runs the memory
        probe there; a cluster's prints nvidia-smi)."""
        whole = self.expect.whole_gpu_pod
        return [*self.tried(), *([whole] if whole and whole not in self.tried() else [])]

    def _read_objects(self, evidence: Mapping[str, Any]) -> None:
        for group, schema, target, part in (("pods", POD, self.pods, "pod:"), ("nodes", NODE, self.nodes, "node:"),
                                            ("quotaPods", POD, self.quota_pods, None)):  # fmt: skip
            found = evidence.get(group) or {}
            if not isinstance(found, Mapping):
                self._refuse(part + "*" if part else "quota-pods", NotJudgeable(group, "is not an object"))
                continue
            for name, obj in found.items():
                try:
                    target[str(name)] = validate(schema, obj, f"{group}.{name}")
                except NotJudgeable as exc:
                    self._refuse(f"{part}{name}" if part else "quota-pods", exc)
        metrics = evidence.get("metrics") or {}
        for node, text in metrics.items() if isinstance(metrics, Mapping) else ():
            if isinstance(text, str):
                self._metrics_text[str(node)] = text
            else:
                self._refuse(f"metrics:{node}", NotJudgeable(f"metrics.{node}", "is not the monitor's text"))
        errors = evidence.get("errors") or []
        self.errors = [str(e) for e in errors] if isinstance(errors, list) else [str(errors)]
        if evidence.get("gpuAudit") is not None:
            try:
                self.audit = validate(AUDIT, evidence["gpuAudit"], "gpuAudit")
            except NotJudgeable as exc:
                self._refuse("audit", exc)

    def _read_logs(self, name: str) -> None:
        """Pod `name`'s log read once (lines.read_log): its probes' results and HAMi-core's OOM lines."""
        pod = self.pods.get(name)
        if pod is None:
            return
        log = read_log(name, pod.get("logs") or "")
        for part, exc in log.problems.items():
            self._refuse(part, exc)
        if log.results or log.unjudged:
            self.unjudged.setdefault(name, {}).update(log.unjudged)
        self.results[name] = log.results
        self.log_lines[name] = log.oom_lines

    def _require_results(self) -> None:
        e = self.expect
        for name in self.tried():
            if name not in self.pods:
                self._refuse(f"pod:{name}", self._missing(name))
        for name in [*self.names, *(t.pod for t in e.pod_tries)]:
            if self.memory(name) is None:
                self._refuse(f"memory:{name}", self._missing(name))
        if e.cores_percent is not None:
            for name in e.compute_pods or self.names:
                if self.compute(name) is None:
                    self._refuse(f"compute:{name}", self._missing(name, "compute"))
        for probe in STEPS:  # both proof Pods run both steps first (workloads.container_command)
            for name in self.names:
                if self.step(probe, name) is None:
                    self._refuse(f"{probe}:{name}", self._missing(name, probe))
        for name in self.names if e.allocation_paths else ():  # workloads.container_command's allocation step
            if self.allocation(name) is None:
                self._refuse(f"allocation:{name}", self._missing(name, "allocation"))
        for other in (e.overcommit_pod, e.whole_gpu_pod):
            if other and other not in self.pods and f"pod:{other}" not in self.problems:
                self._refuse(f"pod:{other}", f"Pod {other} was not found")

    def _missing(self, name: str, probe: str = "memory") -> str:
        """Why Pod `name` has no `probe` result: its phase, waiting reason, ghost quota, verifier errors."""
        pod = self.pods.get(name)
        late = any(e.startswith("deadline") for e in self.errors)
        if pod is None:
            if f"pod:{name}" in self.problems:
                return self.problems[f"pod:{name}"]
            return f"Pod {name} was not found" + (" before the verifier's deadline" if late else "")
        text = f"Pod {name} has no {probe} probe result in its log (phase {pod.get('phase') or 'Unknown'}"
        waiting = waiting_reason(pod)
        if waiting:
            text += f", waiting: {waiting}"
        text += ")"
        annotation = self.expect.allocation_annotation or DEFAULT_ALLOCATION_ANNOTATION
        ghost = next((g for g in ghost_quota(self.quota_pods or self.pods, annotation) if g["pod"] == name), None)
        if ghost:
            text += f"; it holds {ghost['memMiB']} MiB / {ghost['cores']}% of HAMi quota while not running"
        # The verifier's early end names the scheduler's reason (incluster/scheduling.py): the check shows it.
        unplaced = next((e for e in self.errors if e.startswith(f"Pod {name} could not be scheduled")), None)
        if unplaced:
            text += f"; {unplaced}"
        return text + ("; the verifier's deadline passed" if late else "")

    def _read_devices(self) -> None:
        """Each memory result's cards and per-device limits, from its env (devices.py)."""
        for name in self.probed():
            result = self.memory(name)
            if result is not None:
                try:
                    self._devices[name] = devices(result.get("env") or {}, f"{name}.memory.env")
                except NotJudgeable as exc:
                    self._refuse(f"memory:{name}", exc)

    # ------------------------------------------------------------ ties

    def _tie(self) -> None:
        """Each result against its own Pod (times, provenance, the audit), then against every other Pod's."""
        e = self.expect
        for name in self.probed():
            pod, results = self.pods.get(name) or {}, self.results.get(name) or {}
            broken = ties.sequence_problem(name, results)
            if broken:
                self._refuse(f"memory:{name}", NotJudgeable(f"{name}.memory.{broken[0]}", broken[1]))
            for probe, field, why in ties.steps_problems(name, results):
                self._refuse(f"{probe}:{name}", NotJudgeable(f"{name}.{probe}.{field}", why))
            for probe, result in list(results.items()):
                found = ties.time_problem(name, probe, result, pod)
                if e.provenance and found is None:
                    found = ties.provenance_problem(name, e.namespace, result, pod)
                if found is None and self.audit is not None and probe == "memory":
                    library = e.preload_library or "libvgpu.so"
                    mapped = any(x.endswith(library) for x in result["preload"]["mapped"])
                    found = ties.audit_problem(name, e.namespace, self.audit, mapped)
                if found:
                    self._refuse(f"{probe}:{name}", NotJudgeable(f"{name}.{probe}.{found[0]}", found[1]))
        for name in self.names:
            for other in (o for o in self.names if o != name):
                found = ties.beside_compute(name, other, self.results.get(name) or {}, self.results.get(other) or {})
                if found:
                    self._refuse(f"compute:{name}", NotJudgeable(f"{name}.compute.{found[0]}", found[1]))
        names = self.probed()
        for probe in PROBES:
            for i, a in enumerate(names):
                for b in names[i + 1 :]:
                    ra, rb = (self.results.get(a) or {}).get(probe), (self.results.get(b) or {}).get(probe)
                    same = ra and rb and ties.same_process(ra, rb)
                    if same:
                        why = f"Pods {a} and {b} report {same}: one process's output given as both"
                        self._refuse(f"{probe}:{a}", NotJudgeable(f"{a}.{probe}", why))
                        self._refuse(f"{probe}:{b}", NotJudgeable(f"{b}.{probe}", why))
        for part in [p for p in self.problems if p.split(":")[0] in PROBES]:
            probe, name = part.split(":", 1)
            bad = (self.results.get(name) or {}).pop(probe, None)
            if bad is not None:
                self.unjudged.setdefault(name, {})[probe] = bad

    # ------------------------------------------------------------ what the annotations and the monitor say

    def _parse_derived(self) -> None:
        e = self.expect
        for name in [n for n in (*self.names, e.overcommit_pod) if n and n in self.pods]:
            annotation = e.allocation_annotation or DEFAULT_ALLOCATION_ANNOTATION
            try:
                self._allocated[name] = parse_allocation((self.pods[name].get("annotations") or {}).get(annotation))
            except ValueError as exc:
                self._refuse(f"pod:{name}", NotJudgeable(f"pods.{name}.annotations.{annotation}", str(exc)))
        for name in [n for n in (*self.names, e.overcommit_pod) if n and n in self.pods and e.pin_annotation]:
            # HAMi splits the pin at commas and places the Pod on a listed card only (v2.9.0 pkg/device/devices.go:652).
            pinned = (self.pods[name].get("annotations") or {}).get(str(e.pin_annotation))
            self._pins[name] = None if pinned is None else [c.strip() for c in str(pinned).split(",") if c.strip()]
        for key, pod in self.quota_pods.items():
            annotation = e.allocation_annotation or DEFAULT_ALLOCATION_ANNOTATION
            try:
                self._quota_allocated[key] = parse_allocation((pod.get("annotations") or {}).get(annotation))
            except ValueError as exc:
                self._refuse("quota-pods", NotJudgeable(f"quotaPods.{key}.annotations.{annotation}", str(exc)))
        reg = e.node_registration
        for node, obj in self.nodes.items():
            if reg is None:
                break
            where = f"nodes.{node}.annotations.{reg.annotation}"
            try:
                devices = parse_node_register((obj.get("annotations") or {}).get(reg.annotation))
                twice = duplicates(d["id"] for d in devices)
                if twice:
                    raise NotJudgeable(where, f"registers the card {twice[0]} twice: which entry holds is not known")
                self._registered[node] = devices
            except (ValueError, TypeError) as exc:
                self._refuse(f"node:{node}", exc if isinstance(exc, NotJudgeable) else NotJudgeable(where, str(exc)))
        for node, text in self._metrics_text.items():
            try:
                self._samples[node] = monitor_samples(text, f"metrics.{node}")
            except NotJudgeable as exc:
                self._refuse(f"metrics:{node}", exc)

    # ------------------------------------------------------------ what the checks read

    def parts(self, read: str) -> list[str]:
        """The evidence one `read` (READS) covers, for this expectation."""
        e = self.expect
        if read == "pods":
            return [f"pod:{n}" for n in self.names]
        if read == "memory":
            return [f"memory:{n}" for n in self.names]
        if read == "compute":  # only the Pods that measure it: their Pod, their compute and memory results
            pods = e.compute_pods or tuple(self.names)
            return [f"{part}:{n}" for n in pods for part in ("pod", "compute", "memory")]
        if read == "nodes":
            return [f"node:{n}" for n in self._proof_nodes()] + ["node:*"]
        if read == "metrics":
            return [f"metrics:{n}" for n in self._proof_nodes()]
        if read == "overcommit":
            return [f"pod:{e.overcommit_pod}"] if e.overcommit_pod else []
        if read == "whole-gpu":  # its memory result only where it printed one that failed the record (a host's)
            return [f"pod:{e.whole_gpu_pod}", f"memory:{e.whole_gpu_pod}"] if e.whole_gpu_pod else []
        if read == "allocation":
            return [f"allocation:{n}" for n in self.names]
        if read == "quota-pods":
            return ["quota-pods"]
        if read in STEPS:  # both proof Pods: one the neighbour that measures, the other the one that disturbs it
            return [f"{part}:{n}" for n in self.names for part in ("pod", read)]
        raise LookupError(f"no evidence is called {read!r} (one of {', '.join(READS)})")

    def _proof_nodes(self) -> list[str]:
        """The nodes the proof Pods landed on, each once, sorted."""
        return sorted({node for p in self.names if (node := self.node_of(p)) is not None})

    def blocked(self, reads: Iterable[str]) -> list[str]:
        """Why a check that reads `reads` cannot be judged: each not-judgeable part's reason, once each."""
        found: list[str] = []
        for read in reads:
            for part in self.parts(read):
                reason = self.problems.get(part)
                if reason and reason not in found:
                    found.append(reason)
        if "evidence" in self.problems:
            found.insert(0, self.problems["evidence"])
        return found

    def memory(self, name: str) -> dict[str, Any] | None:
        return (self.results.get(name) or {}).get("memory")

    def compute(self, name: str) -> dict[str, Any] | None:
        return (self.results.get(name) or {}).get("compute")

    def allocation(self, name: str) -> dict[str, Any] | None:
        return (self.results.get(name) or {}).get("allocation")

    def step(self, probe: str, name: str) -> dict[str, Any] | None:
        """Pod `name`'s fault or bandwidth result (STEPS)."""
        return (self.results.get(name) or {}).get(probe)

    def memories(self) -> dict[str, dict[str, Any]]:
        """Every proof Pod's memory result (each judgeable once a check that reads `memory` runs)."""
        return {n: r for n in self.names if (r := self.memory(n)) is not None}

    def pod(self, name: str) -> dict[str, Any]:
        return self.pods.get(name) or {}

    def node_of(self, name: str) -> str | None:
        return self.pod(name).get("nodeName")

    def created(self, name: str) -> float | None:
        value = self.pod(name).get("creationTimestamp")
        return None if value is None else instant(value, "creationTimestamp")

    def container_ended_at(self, name: str) -> float | None:
        """When the Pod's container terminated (None while it runs or when unknown)."""
        for status in self.pod(name).get("containerStatuses") or []:
            terminated = (status.get("state") or {}).get("terminated")
            if terminated:
                finished = terminated.get("finishedAt")
                return float("-inf") if finished is None else instant(finished, "finishedAt")
        return None

    def events(self, name: str) -> list[tuple[str | None, str, float | None]]:
        """The Pod's events: (reason, message, when it last happened as an instant; None when unstamped)."""
        out = []
        for x in self.pod(name).get("events") or []:
            stamp = x.get("lastTimestamp") or x.get("eventTime") or x.get("firstTimestamp")
            out.append((x.get("reason"), str(x.get("message") or ""), None if stamp is None else instant(stamp, "t")))
        return out

    def oom_lines(self, name: str) -> OomLines:
        """The Pod's HAMi-core OOM lines: in its probe's JSON, in its log, the probe's own pid, how many lines named
        another process, and the JSON's lines parsed. Under provenance only the probe's and its children's lines
        count; before it, all."""
        results = self.results.get(name) or {}
        in_json = [str(x).strip() for x in (self.memory(name) or {}).get("hami_oom_lines") or []]
        # The allocation step's OOM lines are its own record's (allocation-paths), never the memory probe's account.
        step = ties.own_pids([results["allocation"]]) if "allocation" in results else None
        in_log = [x for x in self.log_lines.get(name) or [] if not step or ties.line_pid(x) not in step]
        others = [r for probe, r in results.items() if probe != "allocation"]
        pids = ties.own_pids(others) if self.expect.provenance else None
        if pids is None:
            first = in_json[0].split(")]:")[0] if in_json else ""
            own_lines = parse_oom_lines(x for x in in_json if first and x.startswith(first))
            return OomLines(in_json, in_log, None, 0, parse_oom_lines(in_json), own_lines)
        own = [x for x in in_json if ties.line_pid(x) in pids]
        logged = [x for x in in_log if ties.line_pid(x) in pids]
        pid = ((self.memory(name) or {}).get("pod") or {}).get("pid")
        foreign = len(in_json) - len(own) + len(in_log) - len(logged)
        mine = parse_oom_lines(x for x in own if pid is not None and ties.line_pid(x) == pid)
        return OomLines(own, logged, pid, foreign, parse_oom_lines(own), mine)

    def allocated(self, name: str) -> list[dict[str, Any]]:
        """The devices the scheduler's allocation annotation gives Pod `name` (parsed once, in _parse_derived)."""
        return self._allocated.get(name) or []

    def quota_allocated(self, key: str) -> list[dict[str, Any]]:
        """The devices the allocation annotation gives quota Pod `key` (`namespace/name`)."""
        return self._quota_allocated.get(key) or []

    def devices(self, name: str) -> Devices:
        """The cards and per-device limits Pod `name`'s memory probe reported (empty where it reported none)."""
        return self._devices.get(name) or Devices()

    def pin(self, name: str) -> list[str] | None:
        """The cards Pod `name`'s pin annotation lists (None: it carries none, or nothing pins)."""
        return self._pins.get(name)

    def registered(self, node: str) -> list[dict[str, Any]] | None:
        """The cards HAMi's node registration lists (None: no registration expected or node not read)."""
        return self._registered.get(node)

    def samples(self, node: str) -> list[tuple[str, dict[str, str], float]] | None:
        """The monitor's samples on `node` (None: not read)."""
        return self._samples.get(node)

    def smi_total(self, name: str) -> int | None:
        """The total MiB nvidia-smi printed in Pod `name`'s log."""
        found = parse_nvidia_smi_memory(self.pod(name).get("logs") or "")
        return found[1] if found else None
