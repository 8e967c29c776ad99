"""What the proof must observe: one typed structure, serialised by the Pulumi side and parsed in the verifier Pod.

Standard library only. The wire form is JSON with camelCase keys (`limitBytes`); `Expectation.parse` refuses
a missing or mistyped key by name, so the judge never guesses at a default.
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

Mechanism = Literal["hami-core", "mps", "time-sharing"]
MECHANISMS: tuple[Mechanism, ...] = ("hami-core", "mps", "time-sharing")
"""hami-core: KAI (with kai-resource-isolator) and HAMi both preload HAMi-core; mps, time-sharing: GKE's own."""


_UNITS = {"mib": "MiB", "gib": "GiB"}


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(_UNITS.get(part, part.capitalize()) for part in rest)


@dataclass(frozen=True)
class Monitor:
    """A per-node metrics endpoint the verifier reads through the API server's Pod proxy."""

    namespace: str
    label_selector: str
    port: int
    path: str = "/metrics"


@dataclass(frozen=True)
class NodeRegistration:
    """HAMi's device registration on the node: its annotation, the resource and the slots per card."""

    annotation: str
    resource: str
    slots_per_card: int
    cards_per_node: int = 1


@dataclass(frozen=True)
class PodTry:
    """A way around the quota that exists only at Pod creation, tried in its own short-lived Pod."""

    id: str
    pod: str
    tried: str


@dataclass(frozen=True)
class Expectation:
    """Everything the checks compare against, computed from the sharing system's contract and the stack's config."""

    namespace: str
    system: str
    mechanism: Mechanism
    pods: tuple[str, ...]
    """The two proof Pods, a then b."""
    checks: tuple[str, ...]
    card_mib: int
    slice_mib: int
    visible_mib: int
    """What nvidia-smi / NVML must report inside a proof Pod (the card itself where the view is not rewritten)."""
    limit_bytes: int
    """The memory quota in bytes (HAMi-core's OOM line's right-hand side; MPS's pinned limit)."""
    limit_env: Mapping[str, str]
    preload_library: str | None
    """The library ld.so.preload must list (hami-core); None where nothing is preloaded."""
    hold_mib: int
    extra_mib: int
    deadline_seconds: int
    cores_percent: int | None = None
    compute_pods: tuple[str, ...] = ()
    """Only these Pods measure compute: two unlimited baselines at once would halve each other."""
    sweep_gib: tuple[float, ...] = ()
    overcommit_pod: str | None = None
    overcommit_mib: int | None = None
    """The over-commit Pod's request: more than the card has left beside the slices, no more than the card."""
    overcommit_slots: int | None = None
    """GKE's sharing: the `nvidia.com/gpu` slots the over-commit Pod asks for, one more than its node has free."""
    pending_reason: str | None = None
    whole_gpu_pod: str | None = None
    node_memory_label: str | None = None
    monitor: Monitor | None = None
    node_registration: NodeRegistration | None = None
    allocation_annotation: str | None = None
    pod_tries: tuple[PodTry, ...] = ()
    """Pod-level ways around the quota, each tried in its own Pod and reported as a finding."""
    system_namespaces: tuple[str, ...] = ()
    """The GPU software's own namespaces: the GPU audit's `system` class (audit.py)."""
    host_proof: bool = False
    """Judged on a GPU host's processes, not Pods: there is no Pod spec, so no Pod annotation is read (KAI's ask)."""
    # --- several cards per node: which one the proof shares, and what a one-card Pod on it is given ---------------
    cards_per_node: int = 1
    """Cards on each GPU node (gpu.perNode); above 1 the proof Pods share `shared_card_index`, not "the node"."""
    shared_card_index: int | None = None
    """NVML index, on its node, of the one card the proof Pods must share: 1 where the node has several (never 0,
    so a Pod that lands on the default card is caught); None on a one-card node. A host proof may share any card
    (`--device`): its processes are placed by their env, not by a scheduler."""
    shared_card_uuid: str | None = None
    """That card's UUID where `pulumi up` knows it (HAMi: the node's register annotation, read once HAMi registered
    it); None in the offline plan and on a one-card node."""
    pin_annotation: str | None = None
    """The Pod annotation that pins a Pod to the shared card (HAMi's `nvidia.com/use-gpuuuid`), set to its UUID on
    every Pod of `pinned_pods`; None where nothing pins."""
    pinned_pods: tuple[str, ...] = ()
    """The Pods pinned to the shared card: the two proof Pods, the over-commit Pod, and every try that asks the same
    scheduler for a slice."""
    device_limit_env: tuple[str, ...] = ()
    """The per-device memory-limit variables the mechanism injects into a one-card Pod, whatever card it got: HAMi
    `CUDA_DEVICE_MEMORY_LIMIT_0` (indexed by the Pod's own visible devices), KAI the un-indexed
    `CUDA_DEVICE_MEMORY_LIMIT`, MPS `CUDA_MPS_PINNED_DEVICE_MEM_LIMIT` (`0=` inside); any other
    `CUDA_DEVICE_MEMORY_LIMIT_<i>` in a Pod means it was given a second card."""
    whole_gpu_card_index: int | None = None
    """NVML index of the card `whole_gpu_pod` is given (0, beside the shared card), where that Pod runs."""
    allocation_paths: bool = False
    """The proof Pods run the allocation-paths step (every CUDA door asked past the quota), after compute."""
    advisory: tuple[str, ...] = ()
    """Checks judged and reported that do not count toward `passed` (verify.allocationPaths.counts false)."""
    provenance: bool = False
    """Each proof and try Pod carries its own identity (downward API: name, UID, namespace, node) and its probes
    print it with their pids, and the verifier watched the over-commit Pod at every poll: the judge ties every
    result, OOM line and try to the Pod the API server names. Every plan and host proof sets it; a record from
    before it (no such key) is judged without these ties."""

    @property
    def limit_mib(self) -> float:
        return self.limit_bytes / (1 << 20)

    def to_wire(self) -> dict[str, Any]:
        """The JSON-ready form with camelCase keys (what `parse` reads back)."""
        return _to_wire(self)

    def to_json(self) -> str:
        return json.dumps(self.to_wire(), sort_keys=True)

    @classmethod
    def parse(cls, data: Any) -> Expectation:
        """The wire form (a dict or its JSON text) → an Expectation; ValueError naming the key that is wrong."""
        if isinstance(data, (str, bytes)):
            data = json.loads(data)
        expect = _from_wire(cls, data, "expectation")
        problem = not_judgeable(expect)
        if problem:
            raise ValueError(f"not judgeable: {problem}")
        return expect


LIMITED: tuple[Mechanism, ...] = ("hami-core", "mps")
"""The mechanisms that set a limit in the Pod's env (time-sharing sets none)."""


def not_judgeable(e: Expectation) -> str | None:
    """What no plan produces and every per-Pod check would pass vacuously on: the first such field, else None."""
    proof = list(e.pods)
    if len(proof) < 2 or len(set(proof)) != len(proof):
        return f"expectation.pods is {proof}: the proof needs two different Pods side by side"
    for key, value in (("cardMiB", e.card_mib), ("sliceMiB", e.slice_mib), ("visibleMiB", e.visible_mib),
                       ("limitBytes", e.limit_bytes), ("holdMiB", e.hold_mib), ("extraMiB", e.extra_mib),
                       ("deadlineSeconds", e.deadline_seconds)):  # fmt: skip
        if value <= 0:
            return f"expectation.{key} is {value}: a proof with nothing to measure passes vacuously"
    if e.cores_percent is not None and not 0 < e.cores_percent <= 100:
        return f"expectation.coresPercent is {e.cores_percent}: a share is 1 to 100 percent"
    if e.mechanism in LIMITED and not e.limit_env:
        return f"expectation.limitEnv is empty: {e.mechanism} reads its limit from the Pod's env"
    if not e.checks or len(set(e.checks)) != len(e.checks):
        return f"expectation.checks is {list(e.checks)}: each check once, at least one"
    if not set(e.advisory) <= set(e.checks):
        return f"expectation.advisory {list(e.advisory)} names checks the plan does not run {list(e.checks)}"
    if not set(e.compute_pods) <= set(proof):
        return f"expectation.computePods {list(e.compute_pods)} are not all proof Pods {proof}"
    others = [p for p in (e.overcommit_pod, e.whole_gpu_pod, *(t.pod for t in e.pod_tries)) if p]
    if set(others) & set(proof) or len(set(others)) != len(others):
        return f"expectation: the over-commit, whole-GPU and try Pods {others} must differ from each other and {proof}"
    return card_problem(e, {*proof, *others})


def card_problem(e: Expectation, pods: set[str]) -> str | None:
    """What makes the shared card unjudgeable: an index off the node or card 0 beside others, a pin with no card."""
    if e.cards_per_node < 1:
        return f"expectation.cardsPerNode is {e.cards_per_node}: a GPU node has at least one card"
    index = e.shared_card_index
    if e.cards_per_node > 1 and index is None:
        return f"expectation.sharedCardIndex is unset on a {e.cards_per_node}-card node: the proof would share the node"
    # A host places each process by its env: no scheduler can leave one on card 0 unseen, so any card may be shared.
    lowest = 0 if e.host_proof else 1
    if index is not None and not lowest <= index < e.cards_per_node:
        where = f"one of its {e.cards_per_node} cards" if e.host_proof else "a card other than 0"
        return (
            f"expectation.sharedCardIndex is {index}: on a {e.cards_per_node}-card node it is {where}"
            f" ({lowest} to {e.cards_per_node - 1})"
        )
    if e.whole_gpu_card_index is not None and (e.whole_gpu_card_index == index or e.whole_gpu_pod is None):
        return f"expectation.wholeGpuCardIndex is {e.whole_gpu_card_index}: a whole-GPU Pod's card, not the shared one"
    if e.pin_annotation is not None and index is None:
        return f"expectation.pinAnnotation is {e.pin_annotation}: a pin with no shared card to pin to"
    if e.pinned_pods and e.pin_annotation is None:
        return f"expectation.pinnedPods {list(e.pinned_pods)} with no pinAnnotation to carry the card"
    if not set(e.pinned_pods) <= pods or (e.pin_annotation is not None and not set(e.pods) <= set(e.pinned_pods)):
        return f"expectation.pinnedPods {list(e.pinned_pods)} must name both proof Pods and only known Pods"
    return None


def _to_wire(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {_camel(f.name): _to_wire(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): _to_wire(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_to_wire(v) for v in value]
    return value


_SCALARS: dict[Any, tuple[type, ...]] = {str: (str,), int: (int,), float: (int, float), bool: (bool,)}


def _convert(kind: Any, value: Any, where: str) -> Any:
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        return _convert(next(a for a in args if a is not type(None)), value, where)
    if origin is Literal:
        if value not in args:
            raise ValueError(f"{where} is {value!r}; expected one of {', '.join(map(repr, args))}")
        return value
    if origin is tuple:
        if not isinstance(value, list):
            raise ValueError(f"{where} must be a list, got {type(value).__name__}")
        return tuple(_convert(args[0], v, f"{where}[{i}]") for i, v in enumerate(value))
    if origin is Mapping:
        if not isinstance(value, dict):
            raise ValueError(f"{where} must be an object, got {type(value).__name__}")
        return {str(k): str(v) for k, v in value.items()}
    if dataclasses.is_dataclass(kind):
        return _from_wire(kind, value, where)
    accepted = _SCALARS.get(kind)
    if accepted is None:
        raise TypeError(f"{where}: no conversion for {kind!r}")
    valid = isinstance(value, accepted) and (kind is bool or not isinstance(value, bool))
    if not valid:
        raise ValueError(f"{where} must be {kind.__name__}, got {value!r}")
    return float(value) if kind is float else value


def _from_wire(cls: Any, data: Any, where: str) -> Any:
    if not isinstance(data, Mapping):
        raise ValueError(f"{where} must be a JSON object, got {type(data).__name__}")
    hints = typing.get_type_hints(cls)
    known = {_camel(f.name) for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ValueError(f"{where} has unknown keys {unknown}: the verifier and the program disagree on the contract")
    values: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        key = _camel(f.name)
        if key not in data:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise ValueError(f"{where}.{key} is missing")
            continue
        values[f.name] = _convert(hints[f.name], data[key], f"{where}.{key}")
    return cls(**values)
