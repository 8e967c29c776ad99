"""What the GPU software hands to the proof: the promise to check, and what the proof must wait for."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi

from components.contracts.proof import SharingProof


@dataclass(frozen=True)
class ToolkitFacts:
    """Who provides the NVIDIA container toolkit, and what that means for the sharing system."""

    cdi_enabled: bool = False
    """True under a GPU Operator with CDI on: then only the `nvidia-legacy` RuntimeClass injects by env."""
    ready: Sequence[pulumi.Resource] = ()
    outputs: Mapping[str, Any] = field(default_factory=dict)
    images: Sequence[str] = ()
    """Every image the toolkit's releases and Pods pull, after mirroring."""


@dataclass(frozen=True)
class SharingSetup:
    """An installed sharing system: its proof contract, what is ready, and its stack outputs."""

    proof: SharingProof
    ready: Sequence[pulumi.Resource] = ()
    """The proof Pods wait for these (releases Ready, policies Ready)."""
    outputs: Mapping[str, Any] = field(default_factory=dict)
    images: Sequence[str] = ()
    """Every image the sharing system's releases and Pods pull, after mirroring."""
