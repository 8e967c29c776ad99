"""Which card of a multi-GPU node HAMi's proof shares, and how a Pod is pinned to it: pure functions.

HAMi places a Pod on a card by the card's UUID only (`nvidia.com/use-gpuuuid`), and a UUID exists only once the
node's device plugin registered it, so the card is chosen by index (1, never the default card 0) and its UUID is
read from the node's register annotation at `pulumi up` (components/gpu/hami.py).

Not a scheduler policy: `hami.io/gpu-scheduler-policy: binpack` on both Pods shares a card, but which one is luck.
HAMi tries cards from the end of a list sorted by score (v2.9.0 pkg/scheduler/score.go:69, pkg/device/nvidia/
device.go:742), on an idle node all tie, and ties keep the register annotation's order, which is Go map order.
"""

from __future__ import annotations

from components.incluster.evidence.parse import parse_node_register

USE_UUID_ANNOTATION = "nvidia.com/use-gpuuuid"
"""HAMi's Pod annotation: a comma-separated list of the only card UUIDs the Pod may be placed on (HAMi v2.9.0
pkg/device/nvidia/device.go:49 GPUUseUUID, read by pkg/device/devices.go:652 CheckUUID; v2.10.0 device.go:50)."""
SHARED_CARD_INDEX = 1
"""The card the proof Pods share where a node has several: not 0, the card a Pod that escaped its pin would use."""


def registered_card(annotation: str | None, index: int, node: str) -> str:
    """The UUID of the card with NVML index `index` in `hami.io/node-nvidia-register`; ValueError naming the node
    and gpu.perNode where it registers no such card.

    The device plugin lists the cards in map order, each with its NVML index (`index`, omitted when 0): never
    by position (HAMi v2.9.0 pkg/device-plugin/nvidiadevice/nvinternal/plugin/register.go:105-111 and 177,
    pkg/device/devices.go:331 MarshalNodeDevices; v2.10.0 register.go:109-115 and 181).
    """
    cards = parse_node_register(annotation)
    found = [c["id"] for c in cards if c["index"] == index and c["id"]]
    if len(found) != 1:
        listed = ", ".join(f"{c['index']}={c['id']}" for c in sorted(cards, key=lambda c: c["index"])) or "none"
        raise ValueError(
            f"node {node}: HAMi registers no single card with index {index} (registered: {listed}); the proof "
            f"shares card {index} where gpushare:gpu.perNode is above 1, so set it to the node's card count"
        )
    return found[0]
