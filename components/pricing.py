"""The cost note: what a pool of GPU machines costs an hour, computed from its shape and the prices the user gives.

No price is made up here. The labs state no per-machine price, only lab 7's session total, which is kept as a
note for the exact shape it was measured on (`LAB_FIGURES`); any other shape gets a figure only from prices in
config, and says so when there are none.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PoolShape:
    """What is rented: machines, the cards on each, and how they are provisioned."""

    machine_type: str
    node_count: int
    gpu_type: str
    gpus_per_node: int
    spot: bool
    gpu_in_machine_price: bool = False
    """True where the machine type carries its GPU (G2, G4, A2, A3): the machine's price already includes it."""


@dataclass(frozen=True)
class Prices:
    """USD an hour, for the provisioning model the pool uses (on-demand or Spot); None where not given."""

    machine_hourly_usd: float | None = None
    """One machine, without attached GPUs."""
    gpu_hourly_usd: float | None = None
    """One attached GPU."""


@dataclass(frozen=True)
class LabFigure:
    """A cost a lab states for one shape, and where it says so."""

    text: str
    source: str


LAB_FIGURES: dict[tuple[str, str, bool], LabFigure] = {
    ("g4-standard-48", "nvidia-rtx-pro-6000", True): LabFigure(
        "the k3s lab this stack comes from cost under $2 of GPU time for its whole session on this shape",
        "docs/stacks.md, the k3s stack's outputs",
    ),
}
"""Keyed by (machine type, GPU type, Spot): the only figures the labs state."""


def provisioning(spot: bool) -> str:
    return "Spot" if spot else "on-demand"


def describe(shape: PoolShape) -> str:
    """`3 × n1-standard-2 + 3 × nvidia-tesla-t4, on-demand`."""
    gpus = shape.node_count * shape.gpus_per_node
    cards = "" if shape.gpu_in_machine_price else f" + {gpus} × {shape.gpu_type}"
    carried = f" with {shape.gpus_per_node} × {shape.gpu_type} each" if shape.gpu_in_machine_price else ""
    return f"{shape.node_count} × {shape.machine_type}{carried}{cards}, {provisioning(shape.spot)}"


def hourly_usd(shape: PoolShape, prices: Prices) -> float | None:
    """The pool's price an hour, or None when a price it needs was not given."""
    if prices.machine_hourly_usd is None:
        return None
    if shape.gpu_in_machine_price:
        return shape.node_count * prices.machine_hourly_usd
    if prices.gpu_hourly_usd is None:
        return None
    return shape.node_count * (prices.machine_hourly_usd + shape.gpus_per_node * prices.gpu_hourly_usd)


def cost_note(shape: PoolShape, prices: Prices, *, price_keys: str, stop: str) -> str:
    """One line: the computed figure, or why there is none and which keys give one; then how billing stops."""
    total = hourly_usd(shape, prices)
    if total is not None:
        head = f"about ${total:.2f}/hour while it runs ({describe(shape)}, at the prices in {price_keys})"
    else:
        head = (
            f"no figure ({describe(shape)}): set {price_keys} to your provider's "
            f"{provisioning(shape.spot)} prices to see one"
        )
    lab = LAB_FIGURES.get((shape.machine_type, shape.gpu_type, shape.spot))
    seen = f"; {lab.text} ({lab.source})" if lab else ""
    return f"{head}{seen}; {stop}"
