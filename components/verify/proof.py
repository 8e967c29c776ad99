"""The proof as part of the graph: a namespace, the proof Pods, and the verifier whose verdict the stack exports."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.config import StackConfig
from components.gpu.sharing import SharingSetup
from components.images import mirrored
from components.platform.facts import ClusterFacts
from components.verify.collect import Verifier, VerifierArgs
from components.verify.spec import SharingProof
from components.verify.workloads import (
    COMMON_LABELS,
    OVERCOMMIT_POD,
    WHOLE_GPU_POD,
    ProbeSettings,
    ProofWorkloads,
    ProofWorkloadsArgs,
)

NODE_MEMORY_LABEL = "nvidia.com/gpu.memory"
SOFTWARE_ISOLATION_NOTE = (
    "Software isolation, not MIG: HAMi-core, preloaded into each container, enforces the memory quota and "
    "throttles compute; the slices still share one card's SMs, memory bandwidth, driver and faults, and a "
    "process that escapes the preloaded library is not limited (see verification.findings)."
)


@dataclass(frozen=True)
class ProofOutputs:
    """The stack outputs of the proof: `verification`, `report`, `isolationNote` (and `ghostQuota` for HAMi)."""

    outputs: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ProofArgs:
    """Everything the proof needs, already mapped from config."""

    provider: k8s.Provider
    namespace: str
    pod_prefix: str
    proof: SharingProof
    expect: Mapping[str, Any]
    probes: ProbeSettings
    image: str
    smi_image: str | None
    fail_on_violation: bool
    ready: Sequence[pulumi.Resource] = ()
    run_id: str = "1"
    """Changing it replaces the proof Pods and the verifier: the proof runs again."""


def isolation_note(proof: SharingProof) -> str:
    """What the proof does not prove, in one paragraph: software isolation, plus the sharing system's notes."""
    return " ".join([SOFTWARE_ISOLATION_NOTE, *proof.notes])


def expectations(cfg: StackConfig, proof: SharingProof) -> dict[str, Any]:
    """The verifier's GPUSHARE_EXPECT: what every check must observe, from the sharing contract and config."""
    v, monitor = cfg.verify, proof.monitor
    gke = cfg.platform == "gke"
    return {
        "namespace": v.namespace,
        "system": proof.system,
        "pods": [f"{v.pod_prefix}-a", f"{v.pod_prefix}-b"],
        "overcommitPod": OVERCOMMIT_POD if proof.overcommit_request is not None else None,
        "pendingReason": proof.pending_reason,
        "wholeGpuPod": WHOLE_GPU_POD if gke else None,
        "nodeMemoryLabel": NODE_MEMORY_LABEL if gke else None,
        "cardMiB": cfg.card_mib,
        "sliceMiB": cfg.slice_mib,
        "visibleMiB": proof.visible_mib,
        "limitBytes": proof.limit_bytes,
        "limitEnv": dict(proof.limit_env),
        "coresPercent": v.cores_percent,
        # Only A measures compute (workloads.container_command): B's baseline would share A's SMs.
        "computePods": [f"{v.pod_prefix}-a"] if v.cores_percent is not None else [],
        "preloadLibrary": proof.preload_library,
        "holdMiB": round(v.hold_gib * 1024),
        "extraMiB": round(v.extra_gib * 1024),
        "sweepGiB": list(v.sweep_gib),
        "monitor": (
            {"namespace": monitor.namespace, "labelSelector": monitor.label_selector, "port": monitor.port,
             "path": monitor.path}
            if monitor is not None else None
        ),
        "nodeRegistration": dict(proof.node_registration) if proof.node_registration is not None else None,
        "allocationAnnotation": proof.allocation_annotation,
        "checks": list(proof.checks),
        "deadlineSeconds": v.deadline_seconds,
    }  # fmt: skip


def disabled_verification(reason: str) -> dict[str, Any]:
    """A verdict that claims nothing: passed false, with the reason, never passed true."""
    return {"passed": False, "reason": reason, "checks": [], "findings": []}


class Proof(pulumi.ComponentResource):
    """The proof namespace, the proof workloads and the verifier: the stack's last resources."""

    outputs: dict[str, Any]

    def __init__(self, name: str, args: ProofArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpushare:verify:Proof", name, None, opts)
        namespace = k8s.core.v1.Namespace(
            f"{name}-namespace",
            metadata={"name": args.namespace, "labels": COMMON_LABELS},
            opts=pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=list(args.ready)),
        )
        ready = [*args.ready, namespace]
        workloads = ProofWorkloads(
            f"{name}-workloads",
            ProofWorkloadsArgs(
                provider=args.provider,
                namespace=args.namespace,
                pod_prefix=args.pod_prefix,
                proof=args.proof,
                probes=args.probes,
                image=args.image,
                smi_image=args.smi_image,
                ready=ready,
                run_id=args.run_id,
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )
        verifier = Verifier(
            f"{name}-verifier",
            VerifierArgs(
                provider=args.provider,
                namespace=args.namespace,
                expect=args.expect,
                image=args.image,
                config_map_name=workloads.config_map_name,
                proof_pods=workloads.pods,
                fail_on_violation=args.fail_on_violation,
                ready=ready,
                run_id=args.run_id,
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.outputs = {
            "verification": verifier.verification,
            "report": verifier.report,
            "isolationNote": isolation_note(args.proof),
        }
        if args.proof.system == "hami":
            self.outputs["ghostQuota"] = verifier.ghost_quota
        self.register_outputs(dict(self.outputs))


def from_config(cfg: StackConfig, cluster: ClusterFacts, sharing: SharingSetup) -> ProofOutputs:
    """The proof for this stack, or an honest `verification` that says why none runs."""
    v = cfg.verify
    if not v.enabled:
        return ProofOutputs({"verification": disabled_verification("verification disabled")})
    proof = sharing.proof
    if proof is None or cluster.provider is None:
        # A platform or sharing system that hands no contract cannot be proved; say so rather than pass.
        return ProofOutputs({"verification": disabled_verification("no proof contract from the sharing system")})
    image = mirrored(v.probe_image, cfg.image_registry)
    args = ProofArgs(
        provider=cluster.provider,
        namespace=v.namespace,
        pod_prefix=v.pod_prefix,
        proof=proof,
        expect=expectations(cfg, proof),
        probes=ProbeSettings(
            expect_limit_mib=proof.visible_mib,
            hold_mib=round(v.hold_gib * 1024),
            hold_seconds=v.hold_seconds,
            extra_mib=round(v.extra_gib * 1024),
            sweep_gib=tuple(v.sweep_gib),
            cores_percent=v.cores_percent,
            compute_seconds=v.compute_seconds,
        ),
        image=image,
        smi_image=mirrored(v.smi_image, cfg.image_registry) if cfg.platform == "gke" else None,
        fail_on_violation=v.fail_on_violation,
        ready=[*cluster.ready, *sharing.ready],
        run_id=v.run_id,
    )
    return ProofOutputs(Proof("gpushare-proof", args).outputs)
