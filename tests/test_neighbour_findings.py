"""The findings a neighbour's steps and the memory probe's env-less children leave in the verdict, on the H200's
records: bandwidth-neighbour (alone and beside the hog, the drop, the mechanism) and the env-less process and first
toucher, each with its figures, cross-examined and never counted into `passed`."""

from __future__ import annotations

from typing import Any

from components.incluster import judge
from components.incluster.probes.timeline import stats
from tests.conftest import ROOT
from tests.helpers.neighbour_steps import DISTURBER, NEIGHBOUR, run, shifted


def findings(expect: Any, evidence: dict[str, Any], fid: str) -> list[dict[str, Any]]:
    return [f for f in judge.judge(expect, evidence)["findings"] if f["id"] == fid]


def test_the_neighbours_bandwidth_beside_the_hog_is_a_finding_with_its_figures_under_hami_core() -> None:
    (found,) = findings(*run("cluster-hami-core"), "bandwidth-neighbour")
    assert found["pod"] == NEIGHBOUR and found["probe"] == "bandwidth" and found["bypassed"] is True
    assert found["alone_gbps"] == {"mean": 3768.8, "min": 3745.2, "max": 3792.5, "seconds": 2}
    assert found["beside_gbps"] == {"mean": 1142.5, "min": 1142.5, "max": 1142.5, "seconds": 1}
    assert found["drop_fraction"] == 0.697 and found["mechanism"] == "hami-core" and found["hog_gbps"] == 2181.8
    assert found["observed"].startswith(f"{NEIGHBOUR} streamed 3,769 GB/s alone (3,745 – 3,792, 2 s) and 1,142 GB/s"
                                        f" beside {DISTURBER}'s copy")  # fmt: skip
    assert found["observed"].endswith("a drop of 0.70 under hami-core")


def test_under_mps_the_bandwidth_drop_is_reported_per_mechanism() -> None:
    (found,) = findings(*run("cluster-mps"), "bandwidth-neighbour")
    assert found["mechanism"] == "mps" and found["drop_fraction"] == 0.358 and found["bypassed"] is True
    assert found["alone_gbps"]["mean"] == 3038.7 and found["beside_gbps"]["mean"] == 1952.1


def test_a_bandwidth_figure_that_contradicts_its_own_timeline_is_not_judgeable_and_says_so() -> None:
    expect, evidence = run("cluster-hami-core", lambda r: r[NEIGHBOUR]["bandwidth"]["gbps"].update(mean=3000.0))
    (found,) = findings(expect, evidence, "bandwidth-neighbour")
    assert found["bypassed"] is None and "alone_gbps" not in found
    assert found["why"] == (
        "not judgeable: gpushare-proof-a.bandwidth.gbps.mean: 3000.0, but the timeline's whole seconds give 2485.7"
    )


def test_a_hog_that_copied_outside_the_neighbours_timeline_shows_no_drop() -> None:
    def late(results: dict[str, dict[str, Any]]) -> None:
        for probe in ("bandwidth", "compute", "memory"):  # copies after A's timeline, its own next steps after that
            results[DISTURBER][probe] = shifted(results[DISTURBER][probe], 3.0)

    (found,) = findings(*run("cluster-hami-core", late), "bandwidth-neighbour")
    assert found["bypassed"] is None and "no drop is shown" in found["why"]
    assert found["beside_gbps"]["seconds"] == 0


def test_the_bandwidth_finding_never_changes_passed() -> None:
    expect, evidence = run("cluster-hami-core")
    same_drop = judge.judge(expect, evidence)

    def flat(results: dict[str, dict[str, Any]]) -> None:  # the same seconds alone, 3790 GB/s beside: 7100 copies
        neighbour = results[NEIGHBOUR]["bandwidth"]
        neighbour["timeline"]["per_s"] = [3792.5, 3745.2, 3790.0, 3790.0, 129.4]
        neighbour["gbps"].update(mean=3779.4, min=3745.2, max=3792.5)
        neighbour["copies"] = 7100

    expect, evidence = run("cluster-hami-core", flat)
    no_drop = judge.judge(expect, evidence)
    (found,) = [f for f in no_drop["findings"] if f["id"] == "bandwidth-neighbour"]
    assert found["bypassed"] is False and found["drop_fraction"] < 0.01
    assert [c["passed"] for c in no_drop["checks"]] == [c["passed"] for c in same_drop["checks"]]


def test_a_neighbour_that_never_ran_its_bandwidth_step_leaves_the_finding_unjudged_with_why() -> None:
    expect, evidence = run("cluster-hami-core", lambda r: r[NEIGHBOUR].pop("bandwidth"))
    (found,) = findings(expect, evidence, "bandwidth-neighbour")
    assert found["bypassed"] is None
    assert found["why"] == f"Pod {NEIGHBOUR} has no bandwidth probe result in its log (phase Succeeded)"


def test_a_record_from_before_the_neighbour_steps_has_no_bandwidth_finding() -> None:
    from tests.helpers.recorded import load

    assert findings(*load("cluster"), "bandwidth-neighbour") == []


def test_the_env_less_findings_reach_the_verdict_with_their_figures() -> None:
    expect, evidence = run("cluster-hami-core")
    found = {(f["pod"], f["id"]): f for f in judge.judge(expect, evidence)["findings"] if f["id"].startswith("env-")}
    after, first = found[(NEIGHBOUR, "env-less-process")], found[(NEIGHBOUR, "env-less-first-toucher")]
    assert (after["largest_mib"], after["quota_mib"], after["bypassed"]) == (8000, 4000, True)
    assert after["region"] == "/tmp/cudevshr.cache" and after["region_is_the_pods"] is False
    assert (first["largest_mib"], first["after_largest_mib"], first["quota_mib"]) == (8000, 2964, 4000)
    assert first["bypassed"] is True and first["reachable"] is False
    assert found[(DISTURBER, "env-less-first-toucher")]["after_largest_mib"] == 3044


def test_an_env_less_finding_that_disagrees_with_the_quota_beside_it_is_not_believed() -> None:
    def other_quota(results: dict[str, dict[str, Any]]) -> None:
        for f in results[NEIGHBOUR]["memory"]["findings"]:
            if f["id"] == "env-less-process":
                f["bypassed"] = False  # 8000 MiB against a 4000 MiB quota, said held

    expect, evidence = run("cluster-hami-core", other_quota)
    verdict = judge.judge(expect, evidence)
    env_less = [f for f in verdict["findings"] if f["pod"] == NEIGHBOUR and f["id"] == "env-less-process"]
    assert env_less[0]["bypassed"] is None
    assert "findings[4].bypassed: False for 8000 MiB against the 4000 MiB quota" in env_less[0]["why"]
    memory = next(c for c in verdict["checks"] if c["id"] == "memory-enforced")
    assert memory["passed"] is False and "not judgeable: gpushare-proof-a.memory.findings" in memory["observed"]


AGAIN = ROOT / "docs" / "host-proof" / "h100" / "lookup" / "again"
"""An H100 run whose probe (3.12's compensated float sum) printed a mean that 3.11's plain sum rounds otherwise."""


def test_a_bandwidth_mean_is_the_same_whichever_python_sums_its_seconds() -> None:
    assert stats([2815.4, 2815.4, 1365.8, 1211.2])["mean"] == 2051.9  # 8207.8 / 4 exactly, not 8207.800000000001


def test_the_h100_bandwidth_mean_half_a_tenth_off_its_recomputed_seconds_is_judged() -> None:
    (found,) = findings(*run("k3s-hami-core", None, AGAIN), "bandwidth-neighbour")
    assert found["bypassed"] is True and found["alone_gbps"]["mean"] == 2815.4


def test_a_bandwidth_mean_a_whole_step_of_rounding_off_its_seconds_is_still_refused() -> None:
    expect, evidence = run("cluster-hami-core", lambda r: r[NEIGHBOUR]["bandwidth"]["gbps"].update(mean=2485.9))
    (found,) = findings(expect, evidence, "bandwidth-neighbour")
    assert found["bypassed"] is None and "gbps.mean: 2485.9" in found["why"]
