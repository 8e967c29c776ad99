"""The card in the zone, as GCE would take it: components/gpus.py's zone table, and the override for a stale row."""

from __future__ import annotations

import pytest

from components.config import GkeConfig, GpuConfig
from components.gpus import ATTACHED_TO_N1, GPU_MODELS, GPU_ZONES, ZONES_READ, zone_gpu_problem
from components.plan import main

L4_IN_A_ZONE_WITHOUT_G2 = (
    "-c",
    "gpushare:gke.zone=us-central1-f",
    "-c",
    "gpushare:gke.machineType=g2-standard-4",
    "-c",
    "gpushare:gpu.type=nvidia-l4",
)


def test_an_l4_in_a_zone_without_g2_is_refused_naming_the_zone_key_the_fix_and_the_override(capsys) -> None:
    assert main(["gke", *L4_IN_A_ZONE_WITHOUT_G2]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1, err
    line = err.strip()
    assert line.startswith("error: gpushare:gke.zone: us-central1-f offers no nvidia-l4"), line
    assert "nearest first: us-central1-a, us-central1-b, us-central1-c, " in line, line
    assert "set gpushare:gpu.zoneCheck to false" in line and ZONES_READ in line, line


def test_zone_check_false_plans_the_zone_the_table_says_lacks_the_card(capsys) -> None:
    assert main(["gke", *L4_IN_A_ZONE_WITHOUT_G2, "-c", "gpushare:gpu.zoneCheck=false"]) == 0, capsys.readouterr().err


def test_the_nearest_zones_come_from_the_same_region_then_the_same_area() -> None:
    problem = zone_gpu_problem("us-east4-b", "nvidia-l4")
    assert problem is not None
    offered = problem.split("nearest first: ")[1].split(" — ")[0].split(", ")
    assert offered == ["us-east4-a", "us-east4-c", "us-east1-b", "us-east1-c", "us-east1-d"]
    europe = zone_gpu_problem("europe-west9-a", "nvidia-l4")
    assert europe is not None and "nearest first: europe-west1-b, europe-west1-c, europe-west2-a" in europe


def test_a_t4_in_a_zone_without_it_is_refused_with_the_same_region_first(capsys) -> None:
    assert main(["gke", "-c", "gpushare:gke.zone=asia-northeast1-b"]) == 2
    line = capsys.readouterr().err.strip()
    assert line.startswith("error: gpushare:gke.zone: asia-northeast1-b offers no nvidia-tesla-t4"), line
    assert (
        "nearest first: asia-northeast1-a, asia-northeast1-c, asia-northeast3-b, asia-northeast3-c, asia-east1-a —"
    ) in line, line


def test_the_gke_default_card_in_the_gke_default_zone_passes_the_zone_check(capsys) -> None:
    zone, card = GkeConfig().zone, GpuConfig().type
    assert (zone, card) == ("asia-northeast1-a", "nvidia-tesla-t4")
    assert zone_gpu_problem(zone, card) is None
    assert main(["gke"]) == 0, capsys.readouterr().err


REFUSED = [
    ("us-central1-f", "nvidia-l4"),
    ("asia-northeast1-b", "nvidia-tesla-t4"),
    ("us-central1-b", "nvidia-tesla-p100"),
    ("us-east1-b", "nvidia-tesla-p4"),
    ("asia-northeast1-a", "nvidia-tesla-v100"),
]


@pytest.mark.parametrize(("zone", "card"), REFUSED)
def test_a_card_in_a_zone_its_row_lacks_is_refused_naming_the_card(zone: str, card: str) -> None:
    problem = zone_gpu_problem(zone, card)
    assert problem is not None and problem.startswith(f"{zone} offers no {card} "), problem


ALLOWED = [
    ("asia-northeast1-a", "nvidia-l4"),
    ("us-central1-b", "nvidia-l4"),
    ("us-central1-f", "nvidia-tesla-t4"),
    ("asia-northeast1-a", "nvidia-tesla-t4"),
    ("us-central1-f", "nvidia-tesla-p100"),
    ("us-west2-c", "nvidia-tesla-p4"),
    ("europe-west4-b", "nvidia-tesla-v100"),
    ("mars-north1-a", "nvidia-a100-80gb"),
    ("mars-north1-a", "nvidia-rtx-pro-6000"),
]


@pytest.mark.parametrize(("zone", "card"), ALLOWED)
def test_a_zone_the_table_lists_or_a_card_without_a_zone_row_is_never_refused(zone: str, card: str) -> None:
    assert zone_gpu_problem(zone, card) is None


def test_the_zone_table_names_only_known_cards_and_real_zones_each_row_sorted_once() -> None:
    assert set(GPU_ZONES) <= set(GPU_MODELS) | set(ATTACHED_TO_N1)
    for zones in GPU_ZONES.values():
        assert zones and all(z.count("-") == 2 and z[-1].isalpha() for z in zones)
        assert list(zones) == sorted(set(zones)), zones


def test_every_machine_series_that_carries_a_gpu_has_its_sizes_in_the_table() -> None:
    from components.gpus import BUNDLED, BUNDLED_COUNT, N1_MACHINE_TYPES, machine_gpu_problem

    assert {next(s for s in BUNDLED if t.startswith(f"{s}-")) for t in BUNDLED_COUNT} == set(BUNDLED)
    for machine, count in BUNDLED_COUNT.items():
        carried = next(g for s, g in BUNDLED.items() if machine.startswith(f"{s}-"))
        assert machine_gpu_problem(machine, carried, count) is None, machine
    assert len(N1_MACHINE_TYPES) == 22 and machine_gpu_problem("n1-standard-96", "nvidia-tesla-v100", 8) is None


def test_kai_reservation_namespace_is_the_pinned_charts_own() -> None:
    import json

    from components.config.gke import KAI_RESERVATION_NAMESPACE
    from components.gpu.gke_cdi import KAI_RESERVATION_NAMESPACE as USED
    from tests.conftest import ROOT

    facts = json.loads((ROOT / "tests/facts/charts/kai-scheduler-v0.17.0.json").read_text())
    assert KAI_RESERVATION_NAMESPACE == USED == _find(facts, "resourceReservation")["namespace"]


def _find(value: object, key: str) -> dict:
    if isinstance(value, dict):
        if key in value and isinstance(value[key], dict):
            return value[key]
        for inner in value.values():
            found = _find(inner, key)
            if found:
                return found
    return {}
