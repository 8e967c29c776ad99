"""The card in the zone, as GCE would take it: components/gpus.py's zone table, and the override for a stale row."""

from __future__ import annotations

import pytest

from components.gpus import GPU_MODELS, GPU_ZONES, ZONES_READ, zone_gpu_problem
from components.plan import main

L4_IN_A_ZONE_WITHOUT_G2 = ("-c", "gpushare:gke.zone=us-central1-f", "-c", "gpushare:gke.machineType=g2-standard-4",
                           "-c", "gpushare:gpu.type=nvidia-l4")


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


ALLOWED = [("asia-northeast1-a", "nvidia-l4"), ("us-central1-b", "nvidia-l4"), ("us-central1-f", "nvidia-tesla-t4"),
           ("mars-north1-a", "nvidia-a100-80gb")]


@pytest.mark.parametrize(("zone", "card"), ALLOWED)
def test_a_zone_the_table_lists_or_a_card_without_a_zone_row_is_never_refused(zone: str, card: str) -> None:
    assert zone_gpu_problem(zone, card) is None


def test_the_zone_table_names_only_cards_the_gpu_table_knows_and_real_zones() -> None:
    assert set(GPU_ZONES) <= set(GPU_MODELS)
    for zones in GPU_ZONES.values():
        assert zones and all(z.count("-") == 2 and z[-1].isalpha() for z in zones)
