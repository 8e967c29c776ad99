"""The proof as part of the graph: a namespace, the proof Pods, and the verifier whose verdict the stack exports."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi

from components.contracts.proof import PodTry, SharingProof
from components.incluster.expectation import Expectation
from components.providers import k8s
from components.verify.collect import Verifier, VerifierArgs
from components.verify.report import NOT_MIG
from components.verify.settings import VerifyConfig
from components.verify.workloads import (
    COMMON_LABELS,
    ProbeSettings,
    ProofWorkloads,
    ProofWorkloadsArgs,
)

NODE_MEMORY_LABEL = "nvidia.com/gpu.memory"


@dataclass(frozen=True)
class ProofOutputs:
    """The stack outputs of the proof: `verification`, `report`, `isolationNote`, `gpuAudit` (and `ghostQuota` for
    HAMi)."""

    outputs: dict[str, Any] = field(default_factory=dict)
    images: tuple[str, ...] = ()
    """The proof Pods' and the verifier's images, after mirroring."""


@dataclass(frozen=True)
class ProofArgs:
    """Everything the proof needs, already mapped from config."""

    provider: k8s.Provider
    settings: VerifyConfig
    """The `gpushare:verify` section config validated, as it is: namespace, Pod prefix, runId, failOnViolation."""
    proof: SharingProof
    expect: Expectation
    probes: ProbeSettings
    image: str
    smi_image: str | None
    ready: Sequence[pulumi.Resource] = ()
    pod_tries: Sequence[PodTry] = ()
    """The ways around the quota a Pod's spec can take, each tried in its own Pod (the expectation names them)."""
    replace_with: Sequence[pulumi.Resource] = ()
    """What the GPU nodes are (the pool, the VM): the proof Pods and the verifier are replaced whenever one is."""


def isolation_note(proof: SharingProof) -> str:
    """What the proof does not prove, in one paragraph: what its mechanism is not, plus the system's notes."""
    return " ".join([NOT_MIG[proof.mechanism], *proof.notes])


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
            metadata={"name": args.settings.namespace, "labels": COMMON_LABELS},
            opts=pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=list(args.ready)),
        )
        ready = [*args.ready, namespace]
        workloads = ProofWorkloads(
            f"{name}-workloads",
            ProofWorkloadsArgs(
                provider=args.provider,
                namespace=args.settings.namespace,
                pod_prefix=args.settings.pod_prefix,
                proof=args.proof,
                probes=args.probes,
                image=args.image,
                smi_image=args.smi_image,
                ready=ready,
                run_id=args.settings.run_id,
                pod_tries=args.pod_tries,
                replace_with=args.replace_with,
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )
        verifier = Verifier(
            f"{name}-verifier",
            VerifierArgs(
                provider=args.provider,
                namespace=args.settings.namespace,
                expect=args.expect,
                image=args.image,
                config_map_name=workloads.config_map_name,
                proof_pods=workloads.pods,
                fail_on_violation=args.settings.fail_on_violation,
                ready=ready,
                run_id=args.settings.run_id,
                replace_with=args.replace_with,
                unschedulable_grace_seconds=args.settings.unschedulable_grace_seconds,
                shared_card_uuid=args.proof.shared_card.uuid if args.proof.shared_card else None,
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.outputs = {
            "verification": verifier.verification,
            "report": verifier.report,
            "isolationNote": isolation_note(args.proof),
        }
        self.outputs["gpuAudit"] = verifier.gpu_audit
        if args.proof.system == "hami":
            self.outputs["ghostQuota"] = verifier.ghost_quota
        self.register_outputs(dict(self.outputs))
