"""Config → the proof: what each check must observe, the proof Pods and the verifier, or why none runs."""

from __future__ import annotations

from components.compose.guard import system_namespaces
from components.config import ExistingStack, GkeStack, StackConfig
from components.contracts.cluster import ClusterFacts
from components.contracts.proof import PodTry as SliceTry
from components.contracts.proof import SharingProof, SliceRequest
from components.contracts.sharing import SharingSetup
from components.gpu.gke_cdi import CONTAINER_DRIVER_ENV
from components.gpu.hami import runtime_class_for
from components.images import mirrored
from components.incluster.checks import escape
from components.incluster.checks.allocation_paths import ALLOCATION_PATHS
from components.incluster.checks.registry import REGISTRY
from components.incluster.expectation import LIMITED, Expectation, PodTry
from components.verify.proof import NODE_MEMORY_LABEL, Proof, ProofArgs, ProofOutputs, disabled_verification
from components.verify.workloads import OVERCOMMIT_POD, WHOLE_GPU_POD, ProbeSettings, proof_pod_names, try_pod_name

MIB = 1 << 20


def compute_share(cfg: StackConfig, proof: SharingProof) -> int | None:
    """The compute share to prove: the one the mechanism sets itself (MPS), else the one config asks for."""
    return proof.cores_percent if proof.cores_percent is not None else cfg.verify.cores_percent


def whole_cards_beside_slices(cfg: StackConfig) -> bool:
    """KAI on GKE: nodes offer whole cards beside the slices. Under GKE's own sharing every nvidia.com/gpu is a
    shared slot, so a whole-GPU Pod would only take one and prove nothing about the view."""
    return isinstance(cfg, GkeStack) and cfg.sharing == "kai"


def escape_try(cfg: StackConfig) -> SliceTry:
    """No GPU request, `NVIDIA_VISIBLE_DEVICES=all`, the default scheduler: what any tenant can write. Under a CDI
    GPU Operator the default runtime is runc, so the Pod names the legacy nvidia class itself, as a tenant may."""
    runtime_class = runtime_class_for(cfg.operator_cdi) if isinstance(cfg, ExistingStack) else None
    env = {**(CONTAINER_DRIVER_ENV if isinstance(cfg, GkeStack) else {}), **escape.ENV}
    request = SliceRequest(scheduler_name="default-scheduler", env=env, runtime_class_name=runtime_class)
    return SliceTry(id=escape.TRY_ID, tried=escape.TRIED, request=request)


def pod_tries(cfg: StackConfig, proof: SharingProof) -> tuple[SliceTry, ...]:
    """The sharing system's own tries, then the escape every stack tries; none when verify.podTries is off."""
    return (*proof.pod_tries, escape_try(cfg)) if cfg.verify.pod_tries else ()


def pinned_pods(cfg: StackConfig, proof: SharingProof) -> tuple[str, ...]:
    """Every Pod whose request carries the pin to the shared card: the proof Pods, and the over-commit Pod and
    tries that ask the same scheduler for a slice (the escape try asks for no card, so nothing pins it)."""
    card = proof.shared_card
    if card is None:
        return ()
    prefix = cfg.verify.pod_prefix
    named = [
        *zip(proof_pod_names(prefix), proof.requests, strict=True),
        *([(OVERCOMMIT_POD, proof.overcommit_request)] if proof.overcommit_request is not None else []),
        *((try_pod_name(prefix, t.id), t.request) for t in pod_tries(cfg, proof)),
    ]
    return tuple(name for name, request in named if card.pin_annotation in request.annotations)


def allocation_check(cfg: StackConfig, proof: SharingProof) -> tuple[str, ...]:
    """`allocation-paths` where the step runs: verify.allocationPaths.enabled and a memory quota to pass."""
    step = cfg.verify.allocation_paths.enabled and bool(proof.limit_env) and proof.mechanism in LIMITED
    return (ALLOCATION_PATHS.id,) if step else ()


def expectations(cfg: StackConfig, proof: SharingProof) -> Expectation:
    """What every check must observe, from the sharing contract and config: the verifier's GPUSHARE_EXPECT."""
    v = cfg.verify
    whole = whole_cards_beside_slices(cfg)
    cores = compute_share(cfg, proof)
    pods = proof_pod_names(v.pod_prefix)
    not_offered = [c for c in proof.checks if proof.mechanism not in REGISTRY[c].rules]
    if not_offered:
        raise ValueError(f"the {proof.mechanism} mechanism does not offer the checks {not_offered}")
    return Expectation(
        namespace=v.namespace,
        system=proof.system,
        mechanism=proof.mechanism,
        pods=pods,
        checks=(*proof.checks, *allocation_check(cfg, proof)),
        card_mib=cfg.card_mib,
        slice_mib=cfg.slice_mib,
        visible_mib=proof.visible_mib,
        limit_bytes=proof.limit_bytes,
        limit_env=dict(proof.limit_env),
        preload_library=proof.preload_library,
        hold_mib=round(cfg.hold_gib * 1024),
        extra_mib=round(cfg.extra_gib * 1024),
        deadline_seconds=v.deadline_seconds,
        cores_percent=cores,
        # Only A measures compute (workloads.container_command): B's baseline would share A's SMs.
        compute_pods=pods[:1] if cores is not None else (),
        sweep_gib=cfg.sweep_gib,
        overcommit_pod=OVERCOMMIT_POD if proof.overcommit_request is not None else None,
        overcommit_mib=proof.overcommit_mib if proof.overcommit_request is not None else None,
        overcommit_slots=proof.overcommit_slots if proof.overcommit_request is not None else None,
        pending_reason=proof.pending_reason,
        whole_gpu_pod=WHOLE_GPU_POD if whole else None,
        # Only KAI's pool carries the label (compose/platform.py): under GKE's own sharing nothing writes it.
        node_memory_label=NODE_MEMORY_LABEL if whole else None,
        monitor=proof.monitor,
        node_registration=proof.node_registration,
        allocation_annotation=proof.allocation_annotation,
        pod_tries=tuple(PodTry(t.id, try_pod_name(v.pod_prefix, t.id), t.tried) for t in pod_tries(cfg, proof)),
        system_namespaces=system_namespaces(cfg),
        cards_per_node=proof.cards_per_node,
        shared_card_index=proof.shared_card.index if proof.shared_card else None,
        # Known only at `pulumi up`: the verifier's copy gets it (verify/collect.py), the plan shows none.
        shared_card_uuid=None,
        pin_annotation=proof.shared_card.pin_annotation if proof.shared_card else None,
        pinned_pods=pinned_pods(cfg, proof),
        device_limit_env=tuple(proof.device_limit_env),
        whole_gpu_card_index=0 if whole else None,
        allocation_paths=bool(allocation_check(cfg, proof)),
        advisory=allocation_check(cfg, proof) if not v.allocation_paths.counts else (),
        provenance=True,  # the workloads give each probe its Pod (downward API); the verifier watches the over-commit
    )  # fmt: skip


def proof_args(cfg: StackConfig, cluster: ClusterFacts, sharing: SharingSetup) -> ProofArgs:
    v, contract = cfg.verify, sharing.proof
    expect = expectations(cfg, contract)
    return ProofArgs(
        provider=cluster.provider,
        settings=v,
        proof=contract,
        expect=expect,
        # What the probes do is what the checks expect: the same hold, extra, sweep and compute share.
        probes=ProbeSettings(
            # The quota, which MPS sets below an unchanged view; none to expect where nothing limits memory.
            expect_limit_mib=contract.limit_bytes // MIB if contract.limit_env else None,
            hold_mib=expect.hold_mib,
            hold_seconds=v.hold_seconds,
            extra_mib=expect.extra_mib,
            sweep_gib=expect.sweep_gib,
            cores_percent=expect.cores_percent,
            compute_seconds=v.compute_seconds,
            allocation_paths=expect.allocation_paths,
        ),
        image=mirrored(v.probe_image, cfg.mirrors),
        # The whole-GPU precondition Pod runs only where nodes carry whole cards beside the slices.
        smi_image=mirrored(v.smi_image, cfg.mirrors) if whole_cards_beside_slices(cfg) else None,
        ready=[*cluster.ready, *sharing.ready],
        pod_tries=pod_tries(cfg, contract),
        replace_with=cluster.nodes,
    )


def proof(cfg: StackConfig, cluster: ClusterFacts, sharing: SharingSetup) -> ProofOutputs:
    """The proof for this stack, or an honest `verification` that says why none runs."""
    if not cfg.verify.enabled:
        return ProofOutputs({"verification": disabled_verification("verification disabled")})
    args = proof_args(cfg, cluster, sharing)
    images = tuple(sorted({args.image, *([args.smi_image] if args.smi_image else [])}))
    return ProofOutputs(Proof("gpushare-proof", args, cluster.options()).outputs, images)
