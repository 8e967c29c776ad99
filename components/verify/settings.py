"""The proof's section of a stack config: the very type the proof takes.

No Pulumi here: config checks it before the program loads.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, Field, field_validator

from components import validate
from components.contracts.settings import Count, FiniteGiB, ImageRef, K8sNamespace, Settings, Text


def _pod_prefix(prefix: str) -> str:
    """Pods are `<prefix>-a`/`-b` and their names are label values too: a DNS label of at most 61 characters."""
    validate.dns_label(prefix, "Pod name prefix")
    if len(prefix) > 61:
        raise ValueError(
            f"{len(prefix)} characters: the Pod names <prefix>-a are label values (at most 63); shorten it to 61"
        )
    return prefix


class AllocationPathsConfig(Settings):
    """The allocation-paths step: every CUDA door to device memory asked past the quota in each proof Pod."""

    enabled: bool = True
    """Run the step in every proof Pod that has a memory quota (one fresh process per path, after compute)."""
    counts: bool = True
    """Whether `allocation-paths` counts toward `passed`; false still judges it and names each escape in the result
    line, without failing `pulumi up`. Ignored while `enabled` is false."""


class VerifyConfig(Settings):
    """The proof: Pods that share one card, and the verifier that judges them."""

    enabled: bool = True
    """Run the proof at all."""
    namespace: K8sNamespace = "gpushare-proof"
    """Namespace of the proof Pods and the verifier."""
    pod_prefix: Annotated[Text, AfterValidator(_pod_prefix)] = "gpushare-proof"
    """Proof Pods are `<prefix>-a` and `<prefix>-b`."""
    slice_mib: Count | None = Field(None, gt=0)
    """Memory each proof Pod asks for; unset scales with the card."""
    cores_percent: Count | None = Field(None, ge=1, le=100)
    """Compute share each proof Pod asks for (HAMi `gpucores`); unset asks none."""
    overcommit_mib: Count | None = Field(None, gt=0)
    """The third Pod's request; unset is computed to fit an empty card but not the remainder."""
    probe_image: ImageRef = "python:3.12-slim-bookworm"
    """Image of the proof Pods and the verifier: any image with python3."""
    smi_image: ImageRef = "nvidia/cuda:12.4.1-base-ubuntu22.04"
    """Image of the whole-GPU precondition Pod that runs nvidia-smi."""
    hold_gib: FiniteGiB | None = None
    """What each proof Pod holds while its neighbour allocates; unset, 3 GiB (half the quota where that is less)."""
    hold_seconds: Count = Field(30, ge=1, le=3600)
    """How long it holds, long enough for the two holds to overlap."""
    extra_gib: FiniteGiB | None = None
    """What it then asks for on top, which must be refused; unset, enough to pass the quota by half a GiB or more."""
    sweep_gib: Annotated[list[FiniteGiB], Field(min_length=1)] | None = None
    """Single allocations tried one by one, each freed again; unset, 2 to 6 GiB and two sizes past the quota."""
    compute_seconds: Count = Field(20, ge=5, le=600)
    """Each compute probe shape runs this long; the throttle bites after 3–4 s."""
    deadline_seconds: Count = Field(900, ge=60, le=7200)
    """How long the verifier waits for the proof Pods."""
    unschedulable_grace_seconds: Count = Field(120, ge=0, le=7200)
    """How long a proof Pod may stay Unschedulable before the verifier ends early, naming the scheduler's reason."""
    fail_on_violation: bool = True
    """Fail `pulumi up` when a check fails, once results are known."""
    pod_tries: bool = True
    """Also try the ways around the quota that a Pod's own spec can take, each in a short-lived Pod (findings)."""
    allocation_paths: AllocationPathsConfig = AllocationPathsConfig()
    """The allocation-paths step and whether its check counts (docs/verification.md "allocation-paths")."""
    run_id: Annotated[Text, Field(min_length=1, max_length=63)] = "1"
    """Change it (`pulumi config set --path gpushare:verify.runId 2`) to run the proof again on fresh Pods."""

    @field_validator("run_id", mode="before")
    @classmethod
    def _run_id_text(cls, value: Any) -> Any:
        return str(value) if isinstance(value, int) and not isinstance(value, bool) else value
