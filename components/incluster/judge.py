"""Judging the proof: recorded evidence (probe JSON, Pod objects, events, node objects, metrics) → checks.

Pure functions, standard library only: the same file runs inside the verifier Pod (mounted flat
beside verifier.py) and in the tests. Nothing here reads a file, the network or the clock.

Shapes:
- `expect` is the verifier's GPUSHARE_EXPECT JSON (built from spec.SharingProof).
- `evidence` is {"pods": {name: {...}}, "nodes": {name: {...}}, "metrics": {node: text}, "errors": [str]},
  optionally "quotaPods" (every Pod that carries HAMi annotations, for the ghost-quota diagnostic).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any

MIB = 1 << 20
COMPUTE_TOLERANCE = 0.15
"""How far the many-block throughput ratio may sit from coresPercent/100 (measured 0.30–0.36 at SM 30)."""

CHECK_TITLES: dict[str, str] = {
    "same-gpu": "Both Pods share one physical GPU",
    "view-isolation": "Each Pod sees only its slice",
    "quota-injection": "The quota reaches each container",
    "memory-enforced": "The memory quota is enforced, not just displayed",
    "neighbor-isolation": "One Pod cannot take the other's quota",
    "overcommit-rejected": "The card's memory is one budget: an over-commit stays Pending",
    "monitor-metrics": "The node-local monitor exports each Pod's limit and usage",
    "preload-mechanism": "HAMi-core is preloaded into each container",
    "compute-limited": "The compute quota throttles many-block kernels",
}

HAMI_BIND_ANNOTATIONS = ("hami.io/vgpu-devices-to-allocate", "hami.io/vgpu-node", "hami.io/bind-phase")
DEFAULT_ALLOCATION_ANNOTATION = "hami.io/vgpu-devices-allocated"
NOT_RUNNING_REASONS = frozenset(
    {
        "ImagePullBackOff",
        "ErrImagePull",
        "CrashLoopBackOff",
        "CreateContainerError",
        "CreateContainerConfigError",
        "RunContainerError",
        "ContainerCannotRun",
    }
)

_OOM_RE = re.compile(r"Device\s+(\d+)\s+OOM\s+(\d+)\s*/\s*(\d+)")
_SMI_MEM_RE = re.compile(r"(\d+)\s*MiB\s*/\s*(\d+)\s*MiB")
_METRIC_RE = re.compile(r"^([A-Za-z_:][A-Za-z0-9_:]*)(\{(.*)\})?\s+(\S+)(\s+\S+)?\s*$")
_LABEL_RE = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"')


# ---------------------------------------------------------------- parsers


def probe_results(logs: str) -> dict[str, dict[str, Any]]:
    """The last JSON object per `probe` kind ("memory", "compute") among a Pod log's lines."""
    found: dict[str, dict[str, Any]] = {}
    for line in (logs or "").splitlines():
        text = line.strip()
        if not text.startswith("{") or '"probe"' not in text:
            continue
        try:
            value = json.loads(text)
        except ValueError:
            continue
        if isinstance(value, dict) and isinstance(value.get("probe"), str):
            found[value["probe"]] = value
    return found


def parse_oom_lines(lines: Iterable[Any]) -> list[dict[str, int]]:
    """HAMi-core's `Device 0 OOM <used+request> / <limit>` lines (with or without `thread=`) → numbers."""
    parsed: list[dict[str, int]] = []
    for line in lines:
        if isinstance(line, Mapping) and "limit" in line:
            parsed.append({k: int(line[k]) for k in ("device", "requested", "limit") if k in line})
            continue
        for match in _OOM_RE.finditer(str(line)):
            parsed.append({"device": int(match[1]), "requested": int(match[2]), "limit": int(match[3])})
    return parsed


def parse_nvidia_smi_memory(text: str) -> tuple[int, int] | None:
    """(used MiB, total MiB) from nvidia-smi's `NNNNMiB / MMMMMiB` memory column; None when absent."""
    match = _SMI_MEM_RE.search(text or "")
    return (int(match[1]), int(match[2])) if match else None


def parse_node_register(value: str | None) -> list[dict[str, Any]]:
    """`hami.io/node-nvidia-register` → devices.

    Accepts 2.9.0's JSON (with `devicepairscore`), 2.10.0's (no `devicepairscore`; `index`/`numa`
    omitted when zero) and the older `id,count,devmem,devcore,type,numa,health:` string form.
    """
    if not value:
        return []
    text = value.strip()
    if text.startswith("["):
        return [
            {
                "id": str(d.get("id", "")),
                "index": int(d.get("index") or 0),
                "count": int(d.get("count") or 0),
                "devmem": int(d.get("devmem") or 0),
                "devcore": int(d.get("devcore") or 0),
                "type": str(d.get("type", "")),
                "numa": int(d.get("numa") or 0),
                "health": bool(d.get("health", False)),
            }
            for d in json.loads(text)
            if isinstance(d, dict)
        ]
    devices = []
    for part in text.split(":"):
        fields = part.split(",")
        if len(fields) < 5 or not fields[0]:
            continue
        devices.append(
            {
                "id": fields[0],
                "index": 0,
                "count": int(fields[1]),
                "devmem": int(fields[2]),
                "devcore": int(fields[3]),
                "type": fields[4],
                "numa": int(fields[5]) if len(fields) > 5 and fields[5].isdigit() else 0,
                "health": len(fields) <= 6 or fields[6].strip().lower() == "true",
            }
        )
    return devices


def parse_allocation(value: str | None) -> list[dict[str, Any]]:
    """`hami.io/vgpu-devices-allocated` (`UUID,Type,MiB,cores:` per device, `;` per container) → devices."""
    devices = []
    for container in (value or "").split(";"):
        for part in container.split(":"):
            fields = [f.strip() for f in part.split(",")]
            if len(fields) < 4 or not fields[0]:
                continue
            devices.append(
                {"uuid": fields[0], "type": fields[1], "memMiB": int(fields[2]), "cores": int(fields[3])}
            )
    return devices


def parse_metrics(text: str) -> list[tuple[str, dict[str, str], float]]:
    """Prometheus text exposition → (name, labels, value) for every sample line."""
    samples = []
    for line in (text or "").splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = _METRIC_RE.match(line.strip())
        if not match:
            continue
        try:
            value = float(match[4])
        except ValueError:
            continue
        labels = {
            k: v.replace('\\"', '"').replace("\\\\", "\\") for k, v in _LABEL_RE.findall(match[3] or "")
        }
        samples.append((match[1], labels, value))
    return samples


def _time(value: Any) -> float | None:
    if not value:
        return None
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


# ---------------------------------------------------------------- ghost quota


def _waiting_reason(pod: Mapping[str, Any]) -> str | None:
    for status in pod.get("containerStatuses") or []:
        reason = ((status.get("state") or {}).get("waiting") or {}).get("reason")
        if reason:
            return str(reason)
    return None


def _held_devices(pod: Mapping[str, Any], annotation: str) -> tuple[list[dict[str, Any]], str | None]:
    annotations = pod.get("annotations") or {}
    for key in (annotation, "hami.io/vgpu-devices-to-allocate"):
        devices = parse_allocation(annotations.get(key))
        if devices:
            return devices, key
    bound = [key for key in HAMI_BIND_ANNOTATIONS if annotations.get(key)]
    return [], (bound[0] if bound else None)


def ghost_quota(
    pods: Mapping[str, Mapping[str, Any]], annotation: str = DEFAULT_ALLOCATION_ANNOTATION
) -> list[dict[str, Any]]:
    """Pods that are not running (Pending, ImagePullBackOff, CrashLoopBackOff) yet hold HAMi quota.

    HAMi charges a card at bind time, so such a Pod keeps its memory and cores until it is deleted.
    """
    ghosts = []
    for name, pod in sorted(pods.items()):
        phase = str(pod.get("phase") or "Unknown")
        waiting = _waiting_reason(pod)
        if phase not in ("Pending", "Unknown") and waiting not in NOT_RUNNING_REASONS:
            continue
        devices, source = _held_devices(pod, annotation)
        if source is None:
            continue
        ghosts.append(
            {
                "pod": pod.get("name") or name,
                "namespace": pod.get("namespace"),
                "phase": phase,
                "reason": waiting or phase,
                "node": pod.get("nodeName") or (pod.get("annotations") or {}).get("hami.io/vgpu-node"),
                "annotation": source,
                "devices": devices,
                "memMiB": sum(d["memMiB"] for d in devices),
                "cores": sum(d["cores"] for d in devices),
            }
        )
    return ghosts


# ---------------------------------------------------------------- planned checks


def _limit_mib(expect: Mapping[str, Any]) -> float:
    return int(expect.get("limitBytes") or 0) / MIB


def _env_text(env: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(env.items())) or "(none)"


def _expected(check_id: str, expect: Mapping[str, Any]) -> str:
    card, visible = expect.get("cardMiB"), expect.get("visibleMiB")
    hold, extra = expect.get("holdMiB"), expect.get("extraMiB")
    limit_bytes, cores = expect.get("limitBytes"), expect.get("coresPercent")
    reg = expect.get("nodeRegistration") or {}
    if check_id == "same-gpu":
        text = "both Pods report the same GPU UUID"
        if expect.get("allocationAnnotation"):
            text += f", and {expect['allocationAnnotation']} names that card for each"
        return text
    if check_id == "view-isolation":
        text = f"nvidia-smi/NVML total = {visible} MiB in each Pod (the card has {card})"
        if expect.get("wholeGpuPod") and expect.get("nodeMemoryLabel"):
            text += f"; a whole-GPU Pod's nvidia-smi total equals the node label {expect['nodeMemoryLabel']}"
        return text
    if check_id == "quota-injection":
        env = dict(expect.get("limitEnv") or {})
        if cores is not None:
            env.setdefault("CUDA_DEVICE_SM_LIMIT", str(cores))
        text = f"each Pod's env has {_env_text(env)}"
        if reg:
            slots = int(reg.get("cardsPerNode", 1)) * int(reg.get("slotsPerCard", 0))
            text += (
                f"; node allocatable {reg.get('resource')} = {slots}"
                f" ({reg.get('cardsPerNode', 1)} card × {reg.get('slotsPerCard')});"
                f" {reg.get('annotation')} lists the Pod's card with its devmem"
            )
        return text
    if check_id == "memory-enforced":
        text = (
            f"{hold} MiB fits, {extra} MiB more is refused, the largest single allocation is below the"
            f" {_limit_mib(expect):.0f} MiB quota while the card has {card} MiB"
        )
        if expect.get("sweepGiB"):
            text += "; in the sweep no size above the quota succeeds"
        return text + f"; HAMi-core's OOM line reports the limit {limit_bytes} bytes"
    if check_id == "neighbor-isolation":
        return f"both Pods hold {hold} MiB at the same time, each inside its own quota"
    if check_id == "overcommit-rejected":
        return (
            f"{expect.get('overcommitPod')} stays Pending with a FilteringFailed event naming"
            f" {expect.get('pendingReason')}, while both proof Pods are Running"
        )
    if check_id == "monitor-metrics":
        used = int(hold or 0) * MIB
        return (
            f"the monitor on the proof Pods' node exports hami_vgpu_memory_limit_bytes = {limit_bytes}"
            f" and hami_vgpu_memory_used_bytes ≥ {used} for each Pod"
        )
    if check_id == "preload-mechanism":
        return f"/etc/ld.so.preload lists {expect.get('preloadLibrary')} and the limit env is set in each Pod"
    if check_id == "compute-limited":
        target = (cores or 0) / 100
        return (
            f"many-block kernel throughput under CUDA_DEVICE_SM_LIMIT={cores} is"
            f" {target:.2f} ± {COMPUTE_TOLERANCE} of the unlimited baseline"
        )
    return check_id


def planned_checks(expect: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every check the expectation names, with its expected sentence and nothing observed yet."""
    return [
        {
            "id": check_id,
            "title": CHECK_TITLES.get(check_id, check_id),
            "expected": _expected(check_id, expect),
            "observed": None,
            "passed": None,
            "evidence": None,
        }
        for check_id in expect.get("checks") or []
    ]


# ---------------------------------------------------------------- judging


class _Ctx:
    """The evidence arranged per proof Pod, with the reason a Pod has no result."""

    def __init__(self, expect: Mapping[str, Any], evidence: Mapping[str, Any]) -> None:
        self.expect = expect
        self.pods: Mapping[str, Any] = evidence.get("pods") or {}
        self.nodes: Mapping[str, Any] = evidence.get("nodes") or {}
        self.metrics: Mapping[str, str] = evidence.get("metrics") or {}
        self.errors: list[str] = [str(e) for e in evidence.get("errors") or []]
        self.names: list[str] = list(expect.get("pods") or [])
        self.ghosts = ghost_quota(
            evidence.get("quotaPods") or self.pods,
            expect.get("allocationAnnotation") or DEFAULT_ALLOCATION_ANNOTATION,
        )
        self.results = {
            name: probe_results((self.pods.get(name) or {}).get("logs", "")) for name in self.names
        }

    def memory(self, name: str) -> dict[str, Any] | None:
        return self.results.get(name, {}).get("memory")

    def compute(self, name: str) -> dict[str, Any] | None:
        return self.results.get(name, {}).get("compute")

    def missing(self, name: str, probe: str = "memory") -> str:
        """Why Pod `name` has no `probe` result: its phase, waiting reason, ghost quota, verifier errors."""
        pod = self.pods.get(name)
        late = any(e.startswith("deadline") for e in self.errors)
        if pod is None:
            return f"Pod {name} was not found" + (" before the verifier's deadline" if late else "")
        text = f"Pod {name} has no {probe} probe result in its log (phase {pod.get('phase') or 'Unknown'}"
        waiting = _waiting_reason(pod)
        if waiting:
            text += f", waiting: {waiting}"
        text += ")"
        ghost = next((g for g in self.ghosts if g["pod"] == name), None)
        if ghost:
            text += f"; it holds {ghost['memMiB']} MiB / {ghost['cores']}% of HAMi quota while not running"
        return text + ("; the verifier's deadline passed" if late else "")

    def node_of(self, name: str) -> str | None:
        return (self.pods.get(name) or {}).get("nodeName")


def _check(ok: bool, observed: str, evidence: str) -> tuple[bool, str, str]:
    return ok, observed, evidence


def _all_memory(ctx: _Ctx) -> tuple[dict[str, dict[str, Any]], list[str]]:
    found, problems = {}, []
    for name in ctx.names:
        result = ctx.memory(name)
        if result is None:
            problems.append(ctx.missing(name))
        else:
            found[name] = result
    return found, problems


def _probe_error(result: Mapping[str, Any]) -> str:
    error = result.get("error") or result.get("cuda_error")
    return f" (probe error: {error})" if error else ""


def _same_gpu(ctx: _Ctx) -> tuple[bool, str, str]:
    results, problems = _all_memory(ctx)
    uuids = {name: r.get("gpu_uuid") for name, r in results.items()}
    for name, uuid in uuids.items():
        if not uuid:
            problems.append(f"Pod {name} reported no GPU UUID{_probe_error(results[name])}")
    seen = {u for u in uuids.values() if u}
    if len(seen) > 1:
        problems.append("the Pods are on different GPUs: " + ", ".join(f"{n}={u}" for n, u in uuids.items()))
    annotation = ctx.expect.get("allocationAnnotation")
    allocated: dict[str, list[str]] = {}
    if annotation:
        for name in ctx.names:
            value = ((ctx.pods.get(name) or {}).get("annotations") or {}).get(annotation)
            allocated[name] = [d["uuid"] for d in parse_allocation(value)]
            if not allocated[name]:
                problems.append(f"Pod {name} has no {annotation} annotation")
            elif uuids.get(name) and uuids[name] not in allocated[name]:
                problems.append(
                    f"{annotation} of Pod {name} names {allocated[name]}, the probe saw {uuids[name]}"
                )
    nodes = {name: ctx.node_of(name) for name in ctx.names}
    evidence = "; ".join(
        f"{n}: uuid={uuids.get(n)}, node={nodes.get(n)}"
        + (f", {annotation}={allocated.get(n)}" if annotation else "")
        for n in ctx.names
    )
    if problems:
        return _check(False, "; ".join(problems), evidence)
    return _check(True, f"all {len(ctx.names)} Pods report the same GPU, {seen.pop()}", evidence)


def _view_isolation(ctx: _Ctx) -> tuple[bool, str, str]:
    visible = int(ctx.expect.get("visibleMiB") or 0)
    results, problems = _all_memory(ctx)
    seen = []
    for name, r in results.items():
        cuda, nvml = r.get("visible_total_mib"), r.get("nvml_total_mib")
        seen.append(f"{name}: CUDA {cuda} MiB, NVML {nvml} MiB")
        for label, value in (("cuMemGetInfo", cuda), ("NVML", nvml)):
            if value is None:
                problems.append(f"Pod {name}: {label} total unknown{_probe_error(r)}")
            elif int(value) != visible:
                problems.append(f"Pod {name}: {label} total is {value} MiB, not {visible}")
    whole, label = ctx.expect.get("wholeGpuPod"), ctx.expect.get("nodeMemoryLabel")
    if whole and label:
        pod = ctx.pods.get(whole)
        smi = parse_nvidia_smi_memory((pod or {}).get("logs", "")) if pod else None
        node = (pod or {}).get("nodeName") or next(
            (ctx.node_of(n) for n in ctx.names if ctx.node_of(n)), None
        )
        labelled = ((ctx.nodes.get(node or "") or {}).get("labels") or {}).get(label)
        seen.append(f"{whole}: nvidia-smi total {smi[1] if smi else None} MiB, {label}={labelled} on {node}")
        if pod is None:
            problems.append(f"whole-GPU Pod {whole} was not found")
        elif smi is None:
            problems.append(f"whole-GPU Pod {whole} printed no nvidia-smi memory column")
        elif labelled is None:
            problems.append(f"node {node} has no {label} label")
        elif str(smi[1]) != str(labelled).strip():
            problems.append(
                f"the whole GPU shows {smi[1]} MiB but node {node} is labelled {label}={labelled}"
            )
    if problems:
        return _check(False, "; ".join(problems), "; ".join(seen))
    return _check(
        True, f"each Pod sees {visible} MiB of the {ctx.expect.get('cardMiB')} MiB card", "; ".join(seen)
    )


def _env_problems(name: str, env: Mapping[str, Any], wanted: Mapping[str, Any]) -> list[str]:
    problems = []
    for key, value in wanted.items():
        if key not in env or env.get(key) in (None, ""):
            problems.append(f"Pod {name}: {key} is not set (the sharing system injected no limit)")
        elif str(env[key]) != str(value):
            problems.append(f"Pod {name}: {key}={env[key]}, expected {value}")
    return problems


def _quota_injection(ctx: _Ctx) -> tuple[bool, str, str]:
    wanted = dict(ctx.expect.get("limitEnv") or {})
    if ctx.expect.get("coresPercent") is not None:
        wanted["CUDA_DEVICE_SM_LIMIT"] = str(ctx.expect["coresPercent"])
    results, problems = _all_memory(ctx)
    seen = []
    for name, r in results.items():
        env = r.get("env") or {}
        seen.append(f"{name}: {_env_text({k: env.get(k) for k in wanted})}")
        problems += _env_problems(name, env, wanted)
    reg = ctx.expect.get("nodeRegistration")
    if reg:
        expected_slots = int(reg.get("cardsPerNode", 1)) * int(reg.get("slotsPerCard", 0))
        for node in sorted({ctx.node_of(n) for n in ctx.names if ctx.node_of(n)}):
            obj = ctx.nodes.get(node) or {}
            allocatable = (obj.get("allocatable") or {}).get(reg.get("resource"))
            devices = parse_node_register((obj.get("annotations") or {}).get(reg.get("annotation")))
            seen.append(
                f"node {node}: allocatable {reg.get('resource')}={allocatable}, registered "
                + ", ".join(f"{d['id']} devmem={d['devmem']}" for d in devices)
            )
            if str(allocatable) != str(expected_slots):
                problems.append(
                    f"node {node}: allocatable {reg.get('resource')}={allocatable}, expected {expected_slots}"
                )
            registered = {d["id"]: d for d in devices}
            for name in ctx.names:
                uuid = (results.get(name) or {}).get("gpu_uuid")
                if ctx.node_of(name) != node or not uuid:
                    continue
                if uuid not in registered:
                    problems.append(
                        f"node {node}: {reg.get('annotation')} does not list {uuid} of Pod {name}"
                    )
                elif registered[uuid]["devmem"] <= 0:
                    problems.append(f"node {node}: {reg.get('annotation')} gives {uuid} no devmem")
    if problems:
        return _check(False, "; ".join(problems), "; ".join(seen))
    return _check(True, f"every Pod sees {_env_text(wanted)}", "; ".join(seen))


def _oom_limits(ctx: _Ctx, name: str, result: Mapping[str, Any]) -> list[dict[str, int]]:
    lines = list(result.get("hami_oom_lines") or [])
    parsed = parse_oom_lines(lines)
    return parsed or parse_oom_lines((ctx.pods.get(name) or {}).get("logs", "").splitlines())


def _memory_enforced(ctx: _Ctx) -> tuple[bool, str, str]:
    limit_mib, card = _limit_mib(ctx.expect), int(ctx.expect.get("cardMiB") or 0)
    limit_bytes = int(ctx.expect.get("limitBytes") or 0)
    results, problems = _all_memory(ctx)
    seen = []
    for name, r in results.items():
        hold = (r.get("phases") or {}).get("hold") or {}
        largest, overhead = r.get("largest_alloc_mib"), r.get("context_overhead_mib")
        seen.append(
            f"{name}: hold {hold.get('hold_mib')} MiB ok={hold.get('ok')}, +{hold.get('extra_mib')} MiB"
            f" ok={hold.get('extra_ok')} ({hold.get('extra_error')}), largest {largest} MiB,"
            f" context overhead {overhead} MiB"
        )
        if not hold.get("ok"):
            problems.append(
                f"Pod {name} could not hold {ctx.expect.get('holdMiB')} MiB inside its quota"
                f" ({hold.get('error') or r.get('error') or 'no hold phase'})"
            )
        if ctx.expect.get("extraMiB") and hold.get("extra_ok") is not False:
            problems.append(
                f"Pod {name}: {ctx.expect.get('extraMiB')} MiB beyond the hold was not refused"
                f" (extra_ok={hold.get('extra_ok')})"
            )
        if largest is None:
            problems.append(f"Pod {name}: no largest allocation measured{_probe_error(r)}")
        elif float(largest) >= limit_mib:
            problems.append(
                f"Pod {name}: a single {largest} MiB allocation succeeded, the quota is {limit_mib:.0f} MiB"
            )
        if r.get("limit_enforced") is False:
            problems.append(f"Pod {name}: the probe judged the limit not enforced")
        sweep = (r.get("phases") or {}).get("sweep") or []
        over = [s for s in sweep if s.get("ok") and float(s.get("gib", 0)) * 1024 > limit_mib]
        if over:
            problems.append(
                f"Pod {name}: sweep sizes above the quota succeeded: "
                + ", ".join(f"{s['gib']} GiB" for s in over)
            )
        if sweep:
            seen.append(
                f"{name} sweep: "
                + ", ".join(f"{s.get('gib')} GiB {'ok' if s.get('ok') else 'refused'}" for s in sweep)
            )
        if ctx.expect.get("sweepGiB") and not sweep:
            problems.append(f"Pod {name}: the sweep did not run")
        ooms = _oom_limits(ctx, name, r)
        wrong = sorted({o["limit"] for o in ooms if o.get("limit") != limit_bytes})
        if ooms:
            seen.append(f"{name} HAMi-core OOM limit {sorted({o['limit'] for o in ooms})}")
        if wrong:
            problems.append(
                f"Pod {name}: HAMi-core's OOM line reports the limit {wrong}, expected {limit_bytes}"
            )
    if problems:
        return _check(False, "; ".join(problems), "; ".join(seen))

    def joined(key: str) -> str:
        return "/".join(sorted({str(r.get(key)) for r in results.values()}))

    return _check(
        True,
        f"largest single allocation {joined('largest_alloc_mib')} MiB under the {limit_mib:.0f} MiB quota while"
        f" the card has {card} MiB; {ctx.expect.get('extraMiB')} MiB beyond the hold refused; context overhead"
        f" {joined('context_overhead_mib')} MiB charged to the quota",
        "; ".join(seen),
    )


def _intervals(result: Mapping[str, Any]) -> list[tuple[float, float]]:
    hold = (result.get("phases") or {}).get("hold") or {}
    spans = []
    start = _time(hold.get("started_at") or result.get("started_at"))
    end = _time(hold.get("ended_at") or result.get("ended_at"))
    if start is not None and end is not None and hold.get("ok"):
        spans.append((start, end))
    since = _time(result.get("keep_holding_since"))
    if since is not None:
        spans.append((since, float("inf")))
    return spans


def _neighbor_isolation(ctx: _Ctx) -> tuple[bool, str, str]:
    results, problems = _all_memory(ctx)
    seen = []
    for name, r in results.items():
        hold = (r.get("phases") or {}).get("hold") or {}
        seen.append(
            f"{name}: hold {hold.get('started_at')}..{hold.get('ended_at')} ok={hold.get('ok')},"
            f" keeps holding since {r.get('keep_holding_since')}"
        )
        if not hold.get("ok"):
            problems.append(f"Pod {name}: its hold failed ({hold.get('error')})")
    names = list(results)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            overlap = max(
                (
                    min(x[1], y[1]) - max(x[0], y[0])
                    for x in _intervals(results[a])
                    for y in _intervals(results[b])
                ),
                default=0.0,
            )
            if overlap <= 0:
                problems.append(
                    f"the holds of {a} and {b} did not overlap in time: nothing was held side by side"
                )
    if problems:
        return _check(False, "; ".join(problems), "; ".join(seen))
    return _check(
        True,
        f"{' and '.join(names)} held {ctx.expect.get('holdMiB')} MiB each at the same time",
        "; ".join(seen),
    )


def _overcommit_rejected(ctx: _Ctx) -> tuple[bool, str, str]:
    name, reason = ctx.expect.get("overcommitPod"), ctx.expect.get("pendingReason") or ""
    pod = ctx.pods.get(name or "")
    if pod is None:
        return _check(False, f"over-commit Pod {name} was not found", "")
    problems = []
    events = pod.get("events") or []
    evidence = f"{name}: phase {pod.get('phase')}, node {pod.get('nodeName')}; events: " + "; ".join(
        f"{e.get('reason')}: {e.get('message')}" for e in events
    )
    allocated = parse_allocation(
        (pod.get("annotations") or {}).get(
            ctx.expect.get("allocationAnnotation") or DEFAULT_ALLOCATION_ANNOTATION
        )
    )
    if pod.get("phase") != "Pending" or pod.get("nodeName") or allocated:
        problems.append(
            f"{name} was scheduled (phase {pod.get('phase')}, node {pod.get('nodeName')}"
            + (f", given {allocated[0]['uuid']}" if allocated else "")
            + "): the card's memory was not accounted as one budget"
        )
    if not any(e.get("reason") == "FilteringFailed" and reason in str(e.get("message")) for e in events):
        problems.append(f"{name} has no FilteringFailed event naming {reason}")
    for proof in ctx.names:
        phase = (ctx.pods.get(proof) or {}).get("phase")
        if phase != "Running":
            problems.append(
                f"proof Pod {proof} is {phase}, not Running: its slice was not held during the test"
            )
    if problems:
        return _check(False, "; ".join(problems), evidence)
    return _check(
        True, f"{name} is Pending with FilteringFailed … {reason} while the proof Pods run", evidence
    )


def _monitor_metrics(ctx: _Ctx) -> tuple[bool, str, str]:
    limit_bytes = int(ctx.expect.get("limitBytes") or 0)
    floor = int(ctx.expect.get("holdMiB") or 0) * MIB
    namespace = ctx.expect.get("namespace")
    problems, seen = [], []
    for name in ctx.names:
        node = ctx.node_of(name)
        if name not in ctx.pods:
            problems.append(ctx.missing(name))
            continue
        if not node:
            problems.append(f"Pod {name} has no node, so there is no monitor to read")
            continue
        if node not in ctx.metrics:
            errors = [e for e in ctx.errors if node in e or "monitor" in e]
            problems.append(
                f"no metrics were read from the monitor on node {node}"
                + (f" ({'; '.join(errors)})" if errors else "")
            )
            continue
        samples = parse_metrics(ctx.metrics[node])
        mine = {
            metric: [
                v
                for n, labels, v in samples
                if n == metric
                and labels.get("pod") == name
                and (not namespace or labels.get("namespace", namespace) == namespace)
            ]
            for metric in ("hami_vgpu_memory_limit_bytes", "hami_vgpu_memory_used_bytes")
        }
        limits, used = mine["hami_vgpu_memory_limit_bytes"], mine["hami_vgpu_memory_used_bytes"]
        seen.append(f"{name} on {node}: limit {limits}, used {used}")
        if not limits or not used:
            pods_seen = sorted(
                {labels["pod"] for n, labels, _ in samples if n.startswith("hami_vgpu") and "pod" in labels}
            )
            problems.append(
                f"the monitor on node {node} exports no hami_vgpu_memory series for Pod {name}"
                f" (series seen for: {pods_seen or 'no Pod'})"
            )
            continue
        if any(int(v) != limit_bytes for v in limits):
            problems.append(f"Pod {name}: hami_vgpu_memory_limit_bytes {limits}, expected {limit_bytes}")
        if max(used) < floor:
            problems.append(
                f"Pod {name}: hami_vgpu_memory_used_bytes {max(used):.0f} < {floor} while it holds memory"
            )
    if problems:
        return _check(False, "; ".join(problems), "; ".join(seen))
    return _check(
        True, f"each Pod's series: limit {limit_bytes} bytes, used ≥ {floor} bytes", "; ".join(seen)
    )


def _preload_mechanism(ctx: _Ctx) -> tuple[bool, str, str]:
    library = str(ctx.expect.get("preloadLibrary") or "libvgpu.so")
    wanted = ctx.expect.get("limitEnv") or {}
    results, problems = _all_memory(ctx)
    seen = []
    for name, r in results.items():
        lines = [str(x).strip() for x in r.get("ld_so_preload") or []]
        seen.append(f"{name}: /etc/ld.so.preload={lines}")
        if not any(line.endswith(library) for line in lines):
            problems.append(
                f"Pod {name}: /etc/ld.so.preload does not list {library} ({lines or 'empty'}): HAMi-core is not"
                " loaded, so the limit is not enforced (is containerd's default runtime nvidia?)"
            )
        problems += _env_problems(name, r.get("env") or {}, {k: v for k, v in wanted.items()})
    if problems:
        return _check(False, "; ".join(problems), "; ".join(seen))
    return _check(True, f"{library} is preloaded and the limit env is set in each Pod", "; ".join(seen))


def _compute_limited(ctx: _Ctx) -> tuple[bool, str, str]:
    cores = ctx.expect.get("coresPercent")
    if cores is None:
        return _check(False, "no coresPercent was requested, so there is no compute limit to test", "")
    target = int(cores) / 100
    problems, seen = [], []
    # Only the Pods that measure compute (A): two unlimited baselines at once would halve each other.
    for name in ctx.expect.get("computePods") or ctx.names:
        r = ctx.compute(name)
        if r is None:
            problems.append(ctx.missing(name, "compute"))
            continue
        ratio = r.get("ratio") or {}
        shapes, baseline = r.get("shapes") or {}, (r.get("baseline") or {}).get("shapes") or {}
        many = ratio.get("many_blocks")
        seen.append(
            f"{name}: many_blocks limited {(shapes.get('many_blocks') or {}).get('steady_per_s')}/s vs baseline"
            f" {(baseline.get('many_blocks') or {}).get('steady_per_s')}/s (ratio {many}), few_blocks ratio"
            f" {ratio.get('few_blocks')}, SM limit {(r.get('env') or {}).get('CUDA_DEVICE_SM_LIMIT')}"
        )
        if many is None:
            problems.append(f"Pod {name}: no throughput ratio against an unlimited baseline{_probe_error(r)}")
        elif abs(float(many) - target) > COMPUTE_TOLERANCE:
            problems.append(
                f"Pod {name}: many-block ratio {float(many):.2f}, expected {target:.2f} ± {COMPUTE_TOLERANCE}"
            )
    if problems:
        return _check(False, "; ".join(problems), "; ".join(seen))
    return _check(True, f"many-block kernels run at about {target:.2f} of the baseline", "; ".join(seen))


_JUDGES: dict[str, Callable[[_Ctx], tuple[bool, str, str]]] = {
    "same-gpu": _same_gpu,
    "view-isolation": _view_isolation,
    "quota-injection": _quota_injection,
    "memory-enforced": _memory_enforced,
    "neighbor-isolation": _neighbor_isolation,
    "overcommit-rejected": _overcommit_rejected,
    "monitor-metrics": _monitor_metrics,
    "preload-mechanism": _preload_mechanism,
    "compute-limited": _compute_limited,
}


def _findings(ctx: _Ctx) -> list[dict[str, Any]]:
    findings, seen = [], set()
    for name in ctx.names:
        for probe in ("memory", "compute"):
            for f in (ctx.results.get(name, {}).get(probe) or {}).get("findings") or []:
                key = (name, f.get("id"))
                if key not in seen:
                    seen.add(key)
                    findings.append({"pod": name, "probe": probe, **f})
        compute = ctx.compute(name)
        few = ((compute or {}).get("ratio") or {}).get("few_blocks")
        cores = ctx.expect.get("coresPercent")
        if few is not None and cores is not None and float(few) > int(cores) / 100 + COMPUTE_TOLERANCE:
            key = (name, "compute-few-blocks-unthrottled")
            if key not in seen:
                seen.add(key)
                findings.append(
                    {
                        "pod": name,
                        "probe": "compute",
                        "id": "compute-few-blocks-unthrottled",
                        "tried": f"few long-running blocks under CUDA_DEVICE_SM_LIMIT={cores}",
                        "observed": f"{float(few):.2f} of the unlimited throughput (limit {int(cores) / 100:.2f})",
                        "bypassed": True,
                    }
                )
    return findings


def judge(expect: Mapping[str, Any], evidence: Mapping[str, Any]) -> dict[str, Any]:
    """Evidence → {"passed", "checks", "findings", "ghostQuota"}; a check that could not run fails with why."""
    ctx = _Ctx(expect, evidence)
    checks = []
    for planned in planned_checks(expect):
        judge_one = _JUDGES.get(planned["id"])
        try:
            if judge_one is None:
                raise ValueError(f"unknown check id {planned['id']!r}")
            passed, observed, detail = judge_one(ctx)
        except Exception as exc:  # a malformed input fails its check, never the whole verdict
            passed, observed, detail = False, f"could not judge: {type(exc).__name__}: {exc}", ""
        checks.append({**planned, "passed": passed, "observed": observed, "evidence": detail})
    return {
        "passed": bool(checks) and all(c["passed"] for c in checks),
        "checks": checks,
        "findings": _findings(ctx),
        "ghostQuota": ctx.ghosts,
    }


def failed_verdict(expect: Mapping[str, Any], reason: str) -> dict[str, Any]:
    """The verdict when nothing could be judged (the verifier crashed): every planned check fails with `reason`."""
    checks = [{**c, "passed": False, "observed": reason, "evidence": ""} for c in planned_checks(expect)]
    if not checks:
        checks = [
            {
                "id": "verifier",
                "title": "The verifier ran",
                "expected": "a verdict",
                "passed": False,
                "observed": reason,
                "evidence": "",
            }
        ]
    return {"passed": False, "checks": checks, "findings": [], "ghostQuota": [], "error": reason}


# ---------------------------------------------------------------- termination message


def _cut(value: Any, size: int) -> Any:
    if not isinstance(value, str) or len(value) <= size:
        return value
    return value[: max(size - 1, 0)] + "…" if size > 0 else ""


def _shrunk(result: Mapping[str, Any], size: int, findings: int, ghosts: int) -> dict[str, Any]:
    out: dict[str, Any] = {
        "passed": bool(result.get("passed")),
        "checks": [
            {
                "id": c.get("id"),
                "passed": c.get("passed"),
                "observed": _cut(c.get("observed"), size),
                "evidence": _cut(c.get("evidence"), size // 2),
            }
            for c in result.get("checks") or []
        ],
        "findings": [
            {
                k: _cut(v, size)
                for k, v in f.items()
                if k in ("pod", "id", "tried", "observed", "allocated_mib", "bypassed")
            }
            for f in (result.get("findings") or [])[:findings]
        ],
        "ghostQuota": [
            {k: g.get(k) for k in ("pod", "namespace", "reason", "node", "memMiB", "cores")}
            for g in (result.get("ghostQuota") or [])[:ghosts]
        ],
    }
    if result.get("error"):
        out["error"] = _cut(result["error"], size)
    dropped = len(result.get("findings") or []) - len(out["findings"])
    if dropped > 0:
        out["findingsDropped"] = dropped
    return out


def compact(result: Mapping[str, Any], limit: int = 4096) -> str:
    """The verdict as JSON that fits a termination message (`limit` bytes): no titles/expected, evidence cut."""
    many = max(len(result.get("findings") or []), len(result.get("ghostQuota") or []))
    for size in (600, 300, 160, 80, 40, 0):
        for keep in sorted({many, 8, 4, 2, 0}, reverse=True):
            text = json.dumps(_shrunk(result, size, keep, keep), separators=(",", ":"))
            if len(text.encode()) <= limit:
                return text
    bare = {
        "passed": bool(result.get("passed")),
        "checks": [{"id": c.get("id"), "passed": c.get("passed")} for c in result.get("checks") or []],
        "truncated": True,
    }
    text = json.dumps(bare, separators=(",", ":"))
    if len(text.encode()) <= limit:
        return text
    return json.dumps({"passed": bool(result.get("passed")), "truncated": True})


def expand(compact_json: Mapping[str, Any], expect: Mapping[str, Any]) -> dict[str, Any]:
    """A termination message's verdict + the expectation → the stack output `verification`."""
    got = {c.get("id"): c for c in compact_json.get("checks") or []}
    checks = []
    for planned in planned_checks(expect):
        c = got.get(planned["id"])
        if c is None:
            reason = compact_json.get("error") or "the verifier reported no result for this check"
            checks.append({**planned, "passed": False, "observed": reason, "evidence": ""})
        else:
            checks.append(
                {
                    **planned,
                    "passed": bool(c.get("passed")),
                    "observed": c.get("observed"),
                    "evidence": c.get("evidence"),
                }
            )
    verification = {
        "passed": bool(compact_json.get("passed")) and bool(checks) and all(c["passed"] for c in checks),
        "checks": checks,
        "findings": list(compact_json.get("findings") or []),
        "ghostQuota": list(compact_json.get("ghostQuota") or []),
    }
    if compact_json.get("error"):
        verification["error"] = compact_json["error"]
    return verification
