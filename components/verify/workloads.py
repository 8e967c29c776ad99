"""The proof Pods: two slices of one card that probe their quota, an over-commit Pod, and their probe files.

The Pods only measure; the verifier (collect.py) waits for them and judges. Pulumi waits for each slice Pod
only until the API server has it (`CREATED`), so a Pod that stays Pending (as the over-commit Pod must) never
hangs `pulumi up`: the verifier does the waiting, with a deadline. They carry no `pulumi.com/skipAwait`, so a
re-run (a new `verify.runId`) waits until the old Pod is gone before it creates its namesake.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import pulumi

from components import incluster
from components.contracts.proof import PodTry, SharingProof, SliceRequest
from components.incluster.probes import compute, provenance
from components.providers import ApiFields, k8s
from components.verify import phases as neighbour_phases

PROBES = "probes"
"""The room of the package the proof Pods run: `python3 -m incluster.probes.<probe>`."""
REQUIRED_FILES = ("__init__.py", "probes/__init__.py", "probes/memory.py", "probes/memory_findings.py",
                  "probes/memory_child.py", "probes/compute.py", "probes/compute_kernel.py", "probes/fault.py",
                  "probes/bandwidth.py", "probes/timeline.py", "probes/allocation_paths.py",
                  "probes/allocation_child.py", "probes/device_nodes.py", "verifier.py", "judge.py",
                  "checks/registry.py", "kube.py")  # fmt: skip
"""Modules the Pods run or import, by path: without one of them the plan stops before any resource."""
READY_FILE = "/tmp/gpushare-ready"
TERMINATION_LOG = "/dev/termination-log"
OVERCOMMIT_POD = "gpushare-overcommit"
WHOLE_GPU_POD = "gpushare-whole-gpu"
PROOF_POD_LABEL = "gpushare.io/proof-pod"
GPU_TAINT_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
COMMON_LABELS = {"app.kubernetes.io/part-of": "gpushare", "app.kubernetes.io/component": "proof"}
# Satisfied once the API server has the Pod. Not skipAwait: on a Pod that also skips the await on delete
# (pulumi-kubernetes provider/pkg/metadata/overrides.go, allowsSkipAwaitWithDelete), and the replacement's create
# then meets the old Pod still terminating (409 AlreadyExists).
# A refresh reads them with the readiness check instead and flags the Pending ones; with no replaceOnChanges the
# next `up` re-awaits this in place (pulumi step_generator.go:2180): a refresh re-runs nothing (docs/day-two.md).
CREATED = {"pulumi.com/waitFor": "jsonpath={.metadata.uid}"}
GRACE_SECONDS = 5
"""A probe (python or sleep as PID 1) has no SIGTERM handler and PID 1 ignores SIGTERM: keep the kill short."""
# Done when the Pod has ended, succeeded or failed, its container run or not (a Pod stopped at its
# activeDeadlineSeconds may never have started): a Failed Pod must not hold `pulumi up` to its timeout. An RFC 9535
# filter, which the provider's waitFor parses since pulumi-kubernetes 4.24.0 (CHANGELOG, provider/pkg/jsonpath).
WAIT_ENDED = {"pulumi.com/waitFor": "jsonpath={.status[?@ == 'Succeeded' || @ == 'Failed']}"}
BASELINE_CHILD_S = len(compute.SHAPES) * (compute.BASELINE_WARMUP_S + compute.BASELINE_SECONDS)
"""How long Pod A's `--baseline child` measures before its limited process makes its own context."""
COMPUTE_LOOKUP_DELAY_S = neighbour_phases.lookup_delay(BASELINE_CHILD_S)
"""Pod B's wait before its first step after the neighbour steps, while Pod A's limited compute process finds its
host PID."""
BASE_ENV = {
    "NVIDIA_DRIVER_CAPABILITIES": "compute,utility",
    # The verifier reads results from the log while the probe still holds memory: no buffered lines.
    "PYTHONUNBUFFERED": "1",
}


@dataclass(frozen=True)
class ProbeSettings:
    """What each proof Pod's memory probe does, and whether Pod A measures compute first."""

    expect_limit_mib: int | None
    """The quota the probe must find enforced; None where the mechanism sets none (time-sharing)."""
    hold_mib: int
    hold_seconds: int
    extra_mib: int
    sweep_gib: tuple[float, ...]
    cores_percent: int | None = None
    compute_seconds: int = 20
    allocation_paths: bool = False
    """Both Pods run the allocation-paths step after the neighbour steps (where a memory quota is expected)."""
    phases: neighbour_phases.Phases = neighbour_phases.CLUSTER
    """The fault and bandwidth steps both Pods run first: A measures, B faults its own context, then hogs."""


@dataclass(frozen=True)
class ProofWorkloadsArgs:
    """The proof Pods of one sharing system, in one namespace, on one provider."""

    provider: k8s.Provider
    namespace: pulumi.Input[str]
    pod_prefix: str
    proof: SharingProof
    probes: ProbeSettings
    image: str
    smi_image: str | None = None
    """Image of the whole-GPU precondition Pod (GKE); None: no such Pod."""
    ready: Sequence[pulumi.Resource] = ()
    """What every Pod waits for: the cluster, the sharing system, the namespace."""
    run_id: str = "1"
    """A new value replaces every proof Pod, so `pulumi up` runs the proof again."""
    pod_tries: Sequence[PodTry] = ()
    """Each runs once, in its own Pod beside A, and ends: the verifier reports what it could allocate."""
    replace_with: Sequence[pulumi.Resource] = ()
    """A replaced node pool or VM replaces every proof Pod (pulumi step_generator.go:2893-2903, ReplaceWith)."""


def placement_trigger(run_id: str, proof: SharingProof) -> pulumi.Input[str]:
    """The proof Pods' replacementTrigger: the run, and on a multi-GPU node what places them (gpu.perNode, the
    pinned card's UUID), since a Pod's annotations update in place (pulumi-kubernetes provider/pkg/provider/
    diff.go:123-151 lists no metadata but name and namespace, :207) and a Pod updated in place is not placed again.
    A one-card node keeps the bare run id, so a stack made before this trigger is not replaced by it."""
    if proof.cards_per_node == 1 and proof.shared_card is None:
        return run_id
    placed = f"{run_id} gpu.perNode={proof.cards_per_node}"
    if proof.shared_card is None:
        return placed
    # Unknown in a preview only while the node's read waits on a new gate: the engine then shows a replace
    # (pulumi pkg/resource/deploy/step_generator.go:3683 shouldTriggerReplace); at `up` it is read first (:1797).
    return pulumi.Output.from_input(proof.shared_card.uuid).apply(lambda uuid: f"{placed} card={uuid}")


def probe_files() -> dict[str, str]:
    """The ConfigMap data mounted at incluster.MOUNT_PATH: the whole in-cluster package, keyed by incluster.key."""
    files = incluster.files()
    missing = [path for path in REQUIRED_FILES if incluster.key(path) not in files]
    if missing:
        raise FileNotFoundError(f"in-cluster files missing: {', '.join(missing)} under {incluster.HERE}")
    return files


def _gib_list(values: Sequence[float]) -> str:
    return ",".join(f"{v:g}" for v in values)


def _memory_probe(probes: ProbeSettings) -> list[str]:
    """The memory probe with the quota it expects (none where the mechanism sets none)."""
    expected = [] if probes.expect_limit_mib is None else ["--expect-limit-mib", str(probes.expect_limit_mib)]
    return incluster.pod_command(f"{PROBES}.memory", "--json", *expected)


def memory_command(probes: ProbeSettings, delay_s: float = 0.0) -> list[str]:
    """The memory probe's argv: the expected quota, the labs' phases, and a hold kept for the later checks; a Pod
    that does not compute beside one that does first waits `delay_s`."""
    return [
        *_memory_probe(probes),
        *(["--delay", f"{delay_s:g}"] if delay_s else []),
        "--hold-mib", str(probes.hold_mib),
        "--hold-seconds", str(probes.hold_seconds),
        "--extra-mib", str(probes.extra_mib),
        "--sweep-gib", _gib_list(probes.sweep_gib),
        "--findings",
        "--result-file", TERMINATION_LOG,
        "--ready-file", READY_FILE,
        "--keep-holding", str(probes.hold_mib),
    ]  # fmt: skip


def compute_command(probes: ProbeSettings) -> list[str]:
    """The compute probe's argv: a limited run and an unlimited baseline on the same card."""
    seconds = str(probes.compute_seconds)
    return incluster.pod_command(f"{PROBES}.compute", "--json", "--seconds", seconds, "--baseline", "child")


def allocation_command(probes: ProbeSettings, delay_s: float = 0.0) -> list[str]:
    """The allocation-paths step: every CUDA door asked past the quota, each in a fresh process."""
    delay = ["--delay", f"{delay_s:g}"] if delay_s else []
    return module_command("allocation_paths", *delay, "--expect-limit-mib", str(probes.expect_limit_mib))


def module_command(probe: str, *args: str) -> list[str]:
    return incluster.pod_command(f"{PROBES}.{probe}", "--json", *args)


def neighbour_commands(steps: neighbour_phases.Phases, pod: Literal["a", "b"]) -> list[list[str]]:
    """The fault and bandwidth steps: Pod A the neighbour that measures, Pod B the one that faults, then hogs."""

    def s(value: float) -> str:
        return f"{value:g}"

    if pod == "a":
        return [
            module_command("fault", "--role", "neighbour", "--window", s(steps.fault_window_s)),
            module_command("bandwidth", "--role", "neighbour", "--window", s(steps.bandwidth_window_s)),
        ]
    return [
        module_command("fault", "--role", "faulter", "--window", s(steps.fault_window_s),
                       "--delay", s(steps.fault_delay_s)),
        module_command("bandwidth", "--role", "hog", "--window", s(steps.bandwidth_window_s),
                       "--delay", s(steps.hog_delay_s), "--hog-seconds", s(steps.hog_seconds)),
    ]  # fmt: skip


def proof_pod_names(prefix: str) -> tuple[str, str]:
    """The two slice Pods, A then B: the workloads create them and the verifier judges them by these names."""
    return f"{prefix}-a", f"{prefix}-b"


def try_pod_name(prefix: str, try_id: str) -> str:
    """The Pod that tries one way around the quota."""
    return f"{prefix}-try-{try_id}"


def try_command(probes: ProbeSettings) -> list[str]:
    """A short memory probe: the view, the preload and the largest allocation; no hold, sweep or findings."""
    return [
        *_memory_probe(probes),
        "--hold-mib", "1", "--hold-seconds", "0", "--extra-mib", "0", "--sweep-gib", "",
    ]  # fmt: skip


def container_command(probes: ProbeSettings, *, pod: Literal["a", "b"]) -> list[str]:
    """Both Pods run the fault and bandwidth steps first (A measures, B disturbs), then A measures compute (where a
    share is asked), then each tries the allocation paths (where a memory quota is expected) and runs the memory
    probe, which holds its quota until the Pod is deleted. Compute straight after the neighbour steps: B's fault and
    hog never fall inside A's compute window, whenever B started; B's next step waits out A's host-PID lookup."""
    steps = neighbour_commands(probes.phases, pod)
    computes = probes.cores_percent is not None
    if pod == "a" and computes:
        steps.append(compute_command(probes))
    wait = COMPUTE_LOOKUP_DELAY_S if pod == "b" and computes else 0.0
    if probes.allocation_paths and probes.expect_limit_mib is not None:
        steps.append(allocation_command(probes, wait))
        wait = 0.0  # B's allocation step already started after A's lookup
    memory = memory_command(probes, wait)
    # `;` not `&&`: a failed step is a result to report, and the memory proof must still run.
    return ["/bin/sh", "-c", "; ".join([*map(shlex.join, steps), f"exec {shlex.join(memory)}"])]


def co_located_with(pod_name: str) -> dict[str, Any]:
    """A required podAffinity onto one Pod's node: the slices share a node by construction, not by luck."""
    return {
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {PROOF_POD_LABEL: pod_name}}, "topologyKey": "kubernetes.io/hostname"}
            ]
        }
    }


def downward_env() -> list[dict[str, Any]]:
    """The Pod's own name, UID, namespace and node, from the downward API: what its probe prints as provenance."""
    return [{"name": provenance.ENV[key], "valueFrom": {"fieldRef": {"fieldPath": path}}}
            for key, path in provenance.FIELD_PATHS.items()]  # fmt: skip


def proof_pod_spec(
    request: SliceRequest,
    *,
    command: list[str],
    image: str,
    config_map_name: pulumi.Input[str] | None,
    affinity: Mapping[str, Any] | None,
) -> ApiFields:
    """A Pod spec from a SliceRequest: scheduler, limits, env, privilege, node selector, host IPC; with a
    ConfigMap, the probe mount and readiness (the over-commit Pod, which only has to be scheduled or not, has
    neither). A request of n containers repeats the container, each with the request's limits."""
    env = {**BASE_ENV, **request.env, **(incluster.pod_env() if config_map_name is not None else {})}
    container: dict[str, Any] = {
        "name": "probe",
        "image": image,
        "command": command,
        "env": [{"name": k, "value": v} for k, v in env.items()],
    }
    if config_map_name is not None:  # a probe runs: it prints the Pod it ran in, as the API server names it
        container["env"] += downward_env()
    if config_map_name is not None:
        container["volumeMounts"] = [incluster.volume_mount("probes")]
        # Ready only once the probe wrote its ready file, which it does only when its checks passed.
        container["readinessProbe"] = {"exec": {"command": ["test", "-f", READY_FILE]}, "periodSeconds": 5}
        container["terminationMessagePolicy"] = "FallbackToLogsOnError"
    if request.limits:
        container["resources"] = {"limits": dict(request.limits)}
    if request.privileged:
        container["securityContext"] = {"privileged": True}
    containers = (
        [container]
        if request.containers == 1
        else [{**container, "name": f"{container['name']}-{i}"} for i in range(request.containers)]
    )
    spec: dict[str, Any] = {
        "schedulerName": request.scheduler_name,
        "restartPolicy": "Never",
        "terminationGracePeriodSeconds": GRACE_SECONDS,
        "tolerations": [GPU_TAINT_TOLERATION],
        "containers": containers,
    }
    if request.node_selector:
        spec["nodeSelector"] = dict(request.node_selector)
    if request.host_ipc:
        spec["hostIPC"] = True
    if request.runtime_class_name:
        spec["runtimeClassName"] = request.runtime_class_name
    if config_map_name is not None:
        spec["volumes"] = [incluster.volume("probes", config_map_name)]
    if affinity:
        spec["affinity"] = dict(affinity)
    return spec


class ProofWorkloads(pulumi.ComponentResource):
    """The probe ConfigMap, the whole-GPU precondition Pod (GKE), slice Pods A and B, and the over-commit Pod."""

    config_map_name: str
    pods: list[k8s.core.v1.Pod]
    """Every Pod the verifier must wait for."""

    def __init__(self, name: str, args: ProofWorkloadsArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpushare:verify:ProofWorkloads", name, None, opts)
        proof, prefix = args.proof, args.pod_prefix
        if len(proof.requests) != 2:
            raise ValueError(f"the proof needs exactly two slice requests (a, b), got {len(proof.requests)}")

        placed = placement_trigger(args.run_id, proof)

        def child(depends_on: Sequence[pulumi.Resource] = (), *, pod: bool = True) -> pulumi.ResourceOptions:
            # Named Pods cannot coexist with their replacement: delete first (the delete is awaited, see CREATED).
            return pulumi.ResourceOptions(
                parent=self,
                provider=args.provider,
                depends_on=[*args.ready, *depends_on],
                delete_before_replace=True,
                replacement_trigger=placed if pod else args.run_id,
                replace_with=list(args.replace_with) or None,
            )

        cm_name = f"{prefix}-probes"
        config_map = k8s.core.v1.ConfigMap(
            f"{name}-probes",
            metadata={"name": cm_name, "namespace": args.namespace, "labels": COMMON_LABELS},
            data=probe_files(),
            opts=child(pod=False),
        )
        self.config_map_name = cm_name

        def metadata(
            pod_name: str, request: SliceRequest | None, annotations: Mapping[str, str]
        ) -> k8s.meta.v1.ObjectMetaArgsDict:
            labels = {**COMMON_LABELS, **(request.labels if request else {}), PROOF_POD_LABEL: pod_name}
            notes = {**(request.annotations if request else {}), **annotations}
            return {"name": pod_name, "namespace": args.namespace, "labels": labels, "annotations": notes}

        before_slices: list[pulumi.Resource] = [config_map]
        self.pods = []
        pod_names: list[str] = []
        if args.smi_image is not None:
            whole_spec: ApiFields = {
                "restartPolicy": "Never",
                "terminationGracePeriodSeconds": GRACE_SECONDS,
                "tolerations": [GPU_TAINT_TOLERATION],
                "containers": [
                    {
                        "name": "nvidia-smi",
                        "image": args.smi_image,
                        "command": ["nvidia-smi"],
                        "resources": {"limits": {"nvidia.com/gpu": "1"}},
                    }
                ],
            }
            whole = k8s.core.v1.Pod(
                f"{name}-whole-gpu",
                metadata=metadata(WHOLE_GPU_POD, None, WAIT_ENDED),
                spec=whole_spec,
                opts=child(),
            )
            before_slices.append(whole)
            self.pods.append(whole)
            pod_names.append(WHOLE_GPU_POD)

        names = proof_pod_names(prefix)
        pod_a = k8s.core.v1.Pod(
            f"{name}-pod-a",
            metadata=metadata(names[0], proof.requests[0], CREATED),
            spec=proof_pod_spec(
                proof.requests[0],
                command=container_command(args.probes, pod="a"),
                image=args.image,
                config_map_name=cm_name,
                affinity=None,
            ),
            opts=child(before_slices),
        )
        pod_b = k8s.core.v1.Pod(
            f"{name}-pod-b",
            metadata=metadata(names[1], proof.requests[1], CREATED),
            spec=proof_pod_spec(
                proof.requests[1],
                command=container_command(args.probes, pod="b"),
                image=args.image,
                config_map_name=cm_name,
                affinity=co_located_with(names[0]),
            ),
            opts=child([*before_slices, pod_a]),
        )
        self.pods += [pod_a, pod_b]
        pod_names += names

        if proof.overcommit_request is not None:
            overcommit_spec = proof_pod_spec(
                proof.overcommit_request,
                command=["sleep", "infinity"],
                image=args.image,
                config_map_name=None,
                affinity=co_located_with(names[0]),
            )
            self.pods.append(
                k8s.core.v1.Pod(
                    f"{name}-overcommit",
                    metadata=metadata(OVERCOMMIT_POD, proof.overcommit_request, CREATED),
                    spec=overcommit_spec,
                    opts=child([pod_a, pod_b]),
                )
            )
            pod_names.append(OVERCOMMIT_POD)

        for pod_try in args.pod_tries:
            try_name = try_pod_name(prefix, pod_try.id)
            self.pods.append(
                k8s.core.v1.Pod(
                    f"{name}-try-{pod_try.id}",
                    metadata=metadata(try_name, pod_try.request, CREATED),
                    spec=proof_pod_spec(
                        pod_try.request,
                        command=try_command(args.probes),
                        image=args.image,
                        config_map_name=cm_name,
                        affinity=co_located_with(names[0]),
                    ),
                    opts=child([pod_a, pod_b]),
                )
            )
            pod_names.append(try_name)

        self.register_outputs({"configMap": cm_name, "pods": pod_names})
