"""The host proof sizes what depends on the card from the card it runs on, not from the card the stack planned."""

from __future__ import annotations

from functools import cache
from typing import Any

from components.gpus import model_of
from components.verify.host import expectation


@cache
def _small_gke() -> dict[str, Any]:
    """The gke stack at a 3333 MiB ask: KAI's fraction of the planned T4 gives each Pod a 3379 MiB quota."""
    return expectation.host_plan("gke", ["gpushare:verify.sliceMiB=3333"])


def test_the_gke_proof_at_a_small_ask_holds_what_fits_beside_an_h200s_context() -> None:
    host = _small_gke()
    assert (host["expect"]["limitBytes"] >> 20, host["expect"]["holdMiB"]) == (3379, 3072)  # planned for a T4
    on_h200, why = expectation.on_card(host, "NVIDIA H200")
    hold, extra = on_h200["expect"]["holdMiB"], on_h200["expect"]["extraMiB"]
    assert why and "518 MiB context" in why
    assert hold + 518 <= 3379 < hold + extra  # fits beside the context; the extra still passes the quota
    for argv in on_h200["pods"].values():
        memory = argv["memory"]
        assert memory[memory.index("--hold-mib") + 1] == str(hold)
        assert memory[memory.index("--extra-mib") + 1] == str(extra)


def test_on_the_planned_card_the_host_proof_keeps_the_plans_numbers() -> None:
    host = _small_gke()
    on_t4, why = expectation.on_card(host, "Tesla T4")
    assert why is None and on_t4["expect"] == host["expect"] and on_t4["pods"] == host["pods"]


def test_nvidia_smi_names_find_their_cards_context() -> None:
    found = {name: (m.context_mib if (m := model_of(name)) else None) for name in ("Tesla T4", "NVIDIA H200", "X")}
    assert found == {"Tesla T4": 102, "NVIDIA H200": 518, "X": None}
