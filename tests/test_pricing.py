"""The cost note is computed from the pool's shape and the prices given, says on-demand or Spot, invents nothing."""

from __future__ import annotations

import pytest

from components.config import ConfigError
from components.pricing import LAB_FIGURES, PoolShape, Prices, cost_note, hourly_usd

T4_POOL = PoolShape("n1-standard-2", 3, "nvidia-tesla-t4", 1, spot=False)
N1, T4 = 0.095, 0.35  # illustrative inputs for the arithmetic, not prices the project claims


def test_cost_scales_with_nodes_and_gpus_per_node() -> None:
    assert hourly_usd(T4_POOL, Prices(N1, T4)) == pytest.approx(3 * (N1 + T4))
    four_gpus = PoolShape("n1-standard-16", 3, "nvidia-tesla-t4", 4, spot=False)
    assert hourly_usd(four_gpus, Prices(N1, T4)) == pytest.approx(3 * (N1 + 4 * T4))
    big = PoolShape("n1-standard-2", 1000, "nvidia-tesla-t4", 1, spot=False)
    assert hourly_usd(big, Prices(N1, T4)) == pytest.approx(1000 * (N1 + T4))


def test_a_machine_that_carries_its_gpu_is_priced_by_the_machine_alone() -> None:
    g4 = PoolShape("g4-standard-48", 1, "nvidia-rtx-pro-6000", 1, spot=True, gpu_in_machine_price=True)
    assert hourly_usd(g4, Prices(machine_hourly_usd=4.0)) == pytest.approx(4.0)


def test_no_price_given_means_no_figure_and_the_keys_that_give_one() -> None:
    note = cost_note(T4_POOL, Prices(), price_keys="gpushare:gke.machineHourlyUsd", stop="destroy")
    assert "$" not in note and note.startswith("no figure") and "gpushare:gke.machineHourlyUsd" in note
    assert hourly_usd(T4_POOL, Prices(machine_hourly_usd=N1)) is None  # the GPUs' price is missing


@pytest.mark.parametrize(("spot", "said", "not_said"), [(True, "Spot", "on-demand"), (False, "on-demand", "Spot")])
def test_the_note_says_on_demand_or_spot_as_the_pool_is(spot: bool, said: str, not_said: str) -> None:
    shape = PoolShape("n1-standard-2", 3, "nvidia-tesla-t4", 1, spot=spot)
    note = cost_note(shape, Prices(N1, T4), price_keys="k", stop="destroy")
    assert said in note and not_said not in note
    assert f"${3 * (N1 + T4):.2f}/hour" in note


def test_the_only_lab_figure_is_lab_7s_session_on_its_own_shape() -> None:
    assert set(LAB_FIGURES) == {("g4-standard-48", "nvidia-rtx-pro-6000", True)}
    g4 = PoolShape("g4-standard-48", 1, "nvidia-rtx-pro-6000", 1, spot=True, gpu_in_machine_price=True)
    assert "the k3s lab this stack comes from" in cost_note(g4, Prices(), price_keys="k", stop="s")
    on_demand = PoolShape("g4-standard-48", 1, "nvidia-rtx-pro-6000", 1, spot=False, gpu_in_machine_price=True)
    assert "the k3s lab this stack comes from" not in cost_note(on_demand, Prices(), price_keys="k", stop="s")


def test_stack_cost_notes_follow_the_config(plan_stack) -> None:
    note = plan_stack(
        "gke",
        "gpushare:gke.machineHourlyUsd=0.1",
        "gpushare:gke.gpuHourlyUsd=0.4",
        "gpushare:gke.nodeCount=2",
        "gpushare:gke.spot=true",
    ).outputs["costNote"]
    assert "$1.00/hour" in note and "Spot" in note and "`pulumi destroy -s gke`" in note
    assert plan_stack("gke").outputs["costNote"].startswith("no figure")
    assert "Spot" in plan_stack("k3s").outputs["costNote"]


def test_the_old_single_hourly_figure_is_refused_with_what_replaces_it(plan_stack) -> None:
    with pytest.raises(ConfigError, match=r"gpushare:gke\.machineHourlyUsd and gpushare:gke\.gpuHourlyUsd"):
        plan_stack("gke", "gpushare:gke.hourlyCostUsd=1.35")
