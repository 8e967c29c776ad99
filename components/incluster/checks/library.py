"""What the node's monitor and each process's own maps say of the library: monitor-metrics, preload-mechanism.

Standard library only."""

from __future__ import annotations

from typing import Any

from ..evidence.record import Record
from ..expectation import Expectation
from .rule import MIB, Check, Judgement, Rule, env_problems, verdict

# ---------------------------------------------------------------- monitor-metrics


def _monitor_expected(e: Expectation) -> str:
    return (
        f"the monitor on the proof Pods' node exports, for each Pod of namespace {e.namespace} on its card,"
        f" hami_vgpu_memory_limit_bytes = {e.limit_bytes} and hami_vgpu_memory_used_bytes ≥ {e.hold_mib * MIB}"
    )


def _monitor_metrics(rec: Record) -> Judgement:
    e = rec.expect
    floor = e.hold_mib * MIB
    problems, seen = [], []
    for name in rec.names:
        node = rec.node_of(name)
        uuid = (rec.memory(name) or {}).get("gpu_uuid")
        if not node:
            problems.append(f"Pod {name} has no node, so there is no monitor to read")
            continue
        samples = rec.samples(node)
        if samples is None:
            errors = [x for x in rec.errors if node in x or "monitor" in x]
            problems.append(
                f"no metrics were read from the monitor on node {node}" + (f" ({'; '.join(errors)})" if errors else "")
            )
            continue

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
        # Finite, once per Pod and card, used within limit: record.monitor_samples refused the text otherwise.
        if any(int(v) != e.limit_bytes for v in limits):
            problems.append(f"Pod {name}: hami_vgpu_memory_limit_bytes {limits}, expected {e.limit_bytes}")
        if max(used) < floor:
            problems.append(f"Pod {name}: hami_vgpu_memory_used_bytes {max(used):.0f} < {floor} while it holds memory")
    return verdict(problems, f"each Pod's series: limit {e.limit_bytes} bytes, used ≥ {floor} bytes", seen)


# ---------------------------------------------------------------- preload-mechanism


def _preload_expected(e: Expectation) -> str:
    return (
        f"{e.preload_library} is mapped into each probe's process (/proc/self/maps), listed in /etc/ld.so.preload"
        " or LD_PRELOAD, and the limit env is set"
    )


def _preload_mechanism(rec: Record) -> Judgement:
    e = rec.expect
    library = e.preload_library or ""
    problems, seen = [], []
    for name, r in rec.memories().items():
        listed, mapped = r["preload"]["listed"], r["preload"]["mapped"]  # lists of strings: the record checked them
        seen.append(f"{name}: listed {listed}, mapped {mapped}")
        if not any(x.endswith(library) for x in listed):
            problems.append(
                f"Pod {name}: neither /etc/ld.so.preload nor LD_PRELOAD lists {library} ({listed or 'empty'}):"
                " HAMi-core is not loaded, so the limit is not enforced (is containerd's default runtime nvidia?)"
            )
        # Listed is a promise; mapped is the library in the process.
        elif not any(x.endswith(library) for x in mapped):
            problems.append(f"Pod {name}: {library} is listed but not mapped into the probe's process")
        problems += env_problems(name, r.get("env") or {}, e.limit_env)
    return verdict(problems, f"{library} is mapped into each probe's process and the limit env is set", seen)


MONITOR_METRICS = Check(
    "monitor-metrics",
    "The node-local monitor exports each Pod's limit and usage",
    {"hami-core": Rule(_monitor_expected, _monitor_metrics)},
    reads=("pods", "memory", "metrics"),
)
PRELOAD_MECHANISM = Check(
    "preload-mechanism",
    "HAMi-core is loaded into each container's process",
    {"hami-core": Rule(_preload_expected, _preload_mechanism)},
)
