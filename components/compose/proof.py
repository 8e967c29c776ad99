"""Config → the proof: what each check must observe, the proof Pods and the verifier, or why none runs."""

from __future__ import annotations

from typing import Any

from components.config import GkeStack, StackConfig
from components.contracts.cluster import ClusterFacts
from components.contracts.proof import SharingProof
from components.contracts.sharing import SharingSetup
from components.images import mirrored
from components.verify.proof import NODE_MEMORY_LABEL, Proof, ProofArgs, ProofOutputs, disabled_verification
from components.verify.workloads import OVERCOMMIT_POD, WHOLE_GPU_POD, ProbeSettings


def expectations(cfg: StackConfig, proof: SharingProof) -> dict[str, Any]:
    """The verifier's GPUSHARE_EXPECT: what every check must observe, from the sharing contract and config."""
    v, monitor = cfg.verify, proof.monitor
    gke = isinstance(cfg, GkeStack)
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


def proof_args(cfg: StackConfig, cluster: ClusterFacts, sharing: SharingSetup) -> ProofArgs:
    v, contract = cfg.verify, sharing.proof
    return ProofArgs(
        provider=cluster.provider,
        namespace=v.namespace,
        pod_prefix=v.pod_prefix,
        proof=contract,
        expect=expectations(cfg, contract),
        probes=ProbeSettings(
            expect_limit_mib=contract.visible_mib,
            hold_mib=round(v.hold_gib * 1024),
            hold_seconds=v.hold_seconds,
            extra_mib=round(v.extra_gib * 1024),
            sweep_gib=tuple(v.sweep_gib),
            cores_percent=v.cores_percent,
            compute_seconds=v.compute_seconds,
        ),
        image=mirrored(v.probe_image, cfg.image_registry),
        # The whole-GPU precondition Pod runs only on GKE, where nodes carry whole cards beside the slices.
        smi_image=mirrored(v.smi_image, cfg.image_registry) if isinstance(cfg, GkeStack) else None,
        fail_on_violation=v.fail_on_violation,
        ready=[*cluster.ready, *sharing.ready],
        run_id=v.run_id,
    )


def proof(cfg: StackConfig, cluster: ClusterFacts, sharing: SharingSetup) -> ProofOutputs:
    """The proof for this stack, or an honest `verification` that says why none runs."""
    if not cfg.verify.enabled:
        return ProofOutputs({"verification": disabled_verification("verification disabled")})
    return ProofOutputs(Proof("gpushare-proof", proof_args(cfg, cluster, sharing)).outputs)
