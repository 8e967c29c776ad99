"""Each check cross-examines its evidence: recorded runs edited the way real clusters go wrong must fail.

Every case edits one recorded run (tests/fixtures) and names the edit; the untouched runs pass
(test_judge.test_recorded_lab_run_passes_every_planned_check).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from components.incluster import judge
from tests.helpers.recorded import (
    edit_probe,
    load,
    probe_line,
    set_compute_window,
    set_largest,
    set_oom_lines,
    shift_times,
)


def check(expect: Any, evidence: dict[str, Any], check_id: str) -> dict[str, Any]:
    return next(c for c in judge.judge(expect, evidence)["checks"] if c["id"] == check_id)


# ---------------------------------------------------------------- memory-enforced


def test_memory_enforced_fails_on_a_refusal_far_below_the_quota_without_hami_cores_oom_line() -> None:
    """The card was full of other tenants' memory; the probe called the shortfall context overhead."""
    expect, evidence = load("cluster")

    def card_full(r: dict[str, Any]) -> None:
        set_largest(r, 1500)
        set_oom_lines(r, [])
        r["findings"] = [f for f in r["findings"] if f["id"] != "context-charge"]  # its charge was the old one

    for pod in expect.pods:
        edit_probe(evidence, pod, card_full)
        logs = evidence["pods"][pod]["logs"].splitlines()
        evidence["pods"][pod]["logs"] = "\n".join(line for line in logs if "HAMI-core ERROR" not in line) + "\n"
    failed = check(expect, evidence, "memory-enforced")
    assert failed["passed"] is False
    assert "no HAMi-core OOM line" in failed["observed"]
    below = round(expect.limit_mib - 1500)
    assert f"refused at 1500 MiB, {below} MiB below the quota, more than its" in failed["observed"]


def test_memory_enforced_fails_when_the_probe_could_not_tell_whether_the_limit_held() -> None:
    expect, evidence = load("k3s")
    edit_probe(evidence, "hami-share-b", lambda r: r.update(limit_enforced=None))
    failed = check(expect, evidence, "memory-enforced")
    assert failed["passed"] is False and "limit_enforced=None" in failed["observed"]


def test_memory_enforced_fails_when_the_probe_reported_not_ok() -> None:
    expect, evidence = load("kai")
    edit_probe(evidence, "kai-hami-lab12-a", lambda r: r.update(ok=False, error="cuInit failed midway"))
    failed = check(expect, evidence, "memory-enforced")
    assert failed["passed"] is False and "ok=False (probe error: cuInit failed midway)" in failed["observed"]


def test_memory_enforced_fails_when_the_views_shortfall_is_more_than_a_cuda_context() -> None:
    expect, evidence = load("cluster")

    def short(r: dict[str, Any]) -> None:
        r["visible_free_mib"] = r["visible_total_mib"] - 2100
        set_largest(r, r["visible_total_mib"] - 2100)
        r["findings"] = [f for f in r["findings"] if f["id"] != "context-charge"]  # its charge was the old one

    edit_probe(evidence, "gpu-slice-a", short)
    failed = check(expect, evidence, "memory-enforced")
    assert failed["passed"] is False and "a 2100 MiB shortfall in the view is not a CUDA context" in failed["observed"]


def test_memory_enforced_fails_when_the_pod_held_another_size_than_planned() -> None:
    expect, evidence = load("k3s")
    edit_probe(evidence, "hami-share-a", lambda r: r["phases"]["hold"].update(hold_mib=1024))
    failed = check(expect, evidence, "memory-enforced")
    assert failed["passed"] is False and f"held 1024 MiB, the plan asked for {expect.hold_mib}" in failed["observed"]


# ---------------------------------------------------------------- neighbor-isolation


def test_neighbor_isolation_does_not_count_keep_holding_of_a_pod_that_ended() -> None:
    """A holds from 05:11:46 on by its word, but its Pod failed; B's hold came later."""
    expect, evidence = load("kai")
    pod_a = evidence["pods"]["kai-hami-lab12-a"]
    pod_a["phase"] = "Failed"
    ended = probe_line(evidence, "kai-hami-lab12-a")["ended_at"]
    pod_a["containerStatuses"] = [{"name": "probe", "state": {"terminated": {"finishedAt": ended}}}]
    edit_probe(evidence, "kai-hami-lab12-a", lambda r: r.update(keep_holding_since=r["ended_at"]))
    edit_probe(evidence, "kai-hami-lab12-b", lambda r: shift_times(r, 3600))  # B's whole run an hour later
    failed = check(expect, evidence, "neighbor-isolation")
    assert failed["passed"] is False and "did not overlap" in failed["observed"]


def test_neighbor_isolation_fails_on_a_bare_card_where_nothing_refuses_the_extra() -> None:
    """No library: both holds overlap on a big card, and the extra allocation simply fits."""
    expect, evidence = load("k3s")
    for pod in expect.pods:
        edit_probe(evidence, pod, lambda r: r["phases"]["hold"].update(extra_ok=True, extra_error=None))
    failed = check(expect, evidence, "neighbor-isolation")
    assert failed["passed"] is False and f"{expect.extra_mib} MiB beyond the hold was not refused" in failed["observed"]


# ---------------------------------------------------------------- same-gpu


def test_same_gpu_fails_when_one_uuid_is_reported_from_two_nodes() -> None:
    expect, evidence = load("kai")
    evidence["pods"]["kai-hami-lab12-b"]["nodeName"] = "gke-kai-hami-test-default-pool-370c394b-zz9q"
    failed = check(expect, evidence, "same-gpu")
    assert failed["passed"] is False and "not on one node" in failed["observed"]


def test_same_gpu_fails_when_privileged_pods_see_every_card_and_measure_device_0() -> None:
    expect, evidence = load("kai")
    for pod in expect.pods:
        edit_probe(evidence, pod, lambda r: r["env"].update(NVIDIA_VISIBLE_DEVICES="all"))
    failed = check(expect, evidence, "same-gpu")
    assert failed["passed"] is False and "NVIDIA_VISIBLE_DEVICES=all does not name" in failed["observed"]


def test_same_gpu_fails_when_the_allocation_annotation_names_another_size_than_the_slice() -> None:
    expect, evidence = load("cluster")
    annotations = evidence["pods"]["gpu-slice-b"]["annotations"]
    card = probe_line(evidence, "gpu-slice-b")["gpu_uuid"]
    annotations["hami.io/vgpu-devices-allocated"] = f"{card},NVIDIA,2000,30:;"
    failed = check(expect, evidence, "same-gpu")
    assert failed["passed"] is False
    assert f"allocates [2000] MiB, the slice is {expect.slice_mib} MiB" in failed["observed"]


# ---------------------------------------------------------------- overcommit-rejected


def test_overcommit_rejected_fails_when_the_pod_is_too_large_for_even_an_empty_card() -> None:
    expect, evidence = load("k3s")
    too_big = expect.card_mib + 1000
    failed = check(replace(expect, overcommit_mib=too_big), evidence, "overcommit-rejected")
    assert failed["passed"] is False and f"asks {too_big} MiB" in failed["observed"]


def test_overcommit_rejected_fails_when_the_pod_would_fit_beside_the_slices() -> None:
    expect, evidence = load("k3s")
    left = expect.card_mib - 2 * expect.slice_mib
    failed = check(replace(expect, overcommit_mib=left - 1000), evidence, "overcommit-rejected")
    assert failed["passed"] is False and f"above the {left} MiB left" in failed["observed"]


def test_overcommit_rejected_ignores_an_event_left_over_from_an_earlier_pod_of_the_same_name() -> None:
    expect, evidence = load("k3s")
    for event in evidence["pods"]["hami-oversubscribe"]["events"]:
        event["lastTimestamp"] = "2026-07-06T09:00:00Z"  # the day before this Pod was created
    failed = check(expect, evidence, "overcommit-rejected")
    assert failed["passed"] is False
    assert "no FilteringFailed event naming CardInsufficientMemory since its creation" in failed["observed"]


# ---------------------------------------------------------------- compute-limited


def test_compute_limited_fails_when_the_probe_ran_under_another_sm_limit() -> None:
    expect, evidence = load("cluster")
    edit_probe(evidence, "gpu-slice-a", lambda r: r["env"].update(CUDA_DEVICE_SM_LIMIT="100"), probe="compute")
    failed = check(expect, evidence, "compute-limited")
    assert failed["passed"] is False and "CUDA_DEVICE_SM_LIMIT=100, expected 30" in failed["observed"]


def test_compute_limited_fails_on_a_window_too_short_to_be_steady() -> None:
    expect, evidence = load("cluster")
    edit_probe(evidence, "gpu-slice-a", lambda r: set_compute_window(r, 2), probe="compute")
    failed = check(expect, evidence, "compute-limited")
    assert failed["passed"] is False and "a 2 s window is too short" in failed["observed"]


def test_compute_limited_fails_when_the_compute_probe_reported_not_ok() -> None:
    expect, evidence = load("cluster")
    edit_probe(evidence, "gpu-slice-b", lambda r: r.update(ok=False, error="kernel launch failed"), probe="compute")
    failed = check(expect, evidence, "compute-limited")
    assert failed["passed"] is False and "ok=False (probe error: kernel launch failed)" in failed["observed"]


def test_compute_limited_fails_when_compute_ran_on_another_card_than_the_memory_probe() -> None:
    expect, evidence = load("cluster")
    edit_probe(evidence, "gpu-slice-a", lambda r: r.update(gpu_uuid="GPU-0000-another-card"), probe="compute")
    failed = check(expect, evidence, "compute-limited")
    assert failed["passed"] is False and "compute ran on GPU-0000-another-card" in failed["observed"]


# ---------------------------------------------------------------- preload-mechanism


def test_preload_mechanism_fails_when_the_library_is_listed_but_not_mapped_into_the_process() -> None:
    expect, evidence = load("k3s")
    edit_probe(evidence, "hami-share-b", lambda r: r["preload"].update(mapped=[]))
    failed = check(expect, evidence, "preload-mechanism")
    assert failed["passed"] is False and "listed but not mapped" in failed["observed"]


def test_preload_mechanism_fails_without_the_probes_preload_evidence() -> None:
    expect, evidence = load("kai")
    edit_probe(evidence, "kai-hami-lab12-a", lambda r: r.pop("preload"))
    failed = check(expect, evidence, "preload-mechanism")
    assert failed["passed"] is False and failed["observed"] == "not judgeable: kai-hami-lab12-a.memory.preload: missing"


# ---------------------------------------------------------------- monitor-metrics


def test_monitor_metrics_fails_on_series_without_the_pods_namespace() -> None:
    expect, evidence = load("kai")
    node = next(iter(evidence["metrics"]))
    evidence["metrics"][node] = evidence["metrics"][node].replace('namespace="gpushare-proof",', "")
    failed = check(expect, evidence, "monitor-metrics")
    assert failed["passed"] is False and "no hami_vgpu_memory series for Pod gpushare-proof/" in failed["observed"]


def test_monitor_metrics_fails_on_series_of_another_card() -> None:
    expect, evidence = load("kai")
    node = next(iter(evidence["metrics"]))
    card = probe_line(evidence, "kai-hami-lab12-a")["gpu_uuid"]
    evidence["metrics"][node] = evidence["metrics"][node].replace(card, "GPU-0000dead-0000-0000-0000-000000000000")
    failed = check(expect, evidence, "monitor-metrics")
    assert failed["passed"] is False and f"on {card}" in failed["observed"]


def _per_shape(r: dict[str, Any]) -> None:
    """The compute probe's per-shape form: a share per kernel shape, the judged one named, a window per shape."""
    if "share" in r:
        return
    r.update(
        judged_shape="short_many",
        window_s=20,
        share={"short_many": r["ratio"]["many_blocks"], "few_long": 0.98},
        shapes={"short_many": {"window_s": 20, "warmup_s": 3.0}, "few_long": {"window_s": 20, "warmup_s": 3.0}},
    )
    del r["ratio"], r["seconds"]


def test_compute_limited_reads_the_judged_shapes_share_and_its_window() -> None:
    expect, evidence = load("cluster")
    for pod in expect.pods:
        edit_probe(evidence, pod, _per_shape, probe="compute")
    assert check(expect, evidence, "compute-limited")["passed"] is True
    edit_probe(evidence, "gpu-slice-a", lambda r: set_compute_window(r, 4), probe="compute")
    failed = check(expect, evidence, "compute-limited")
    assert failed["passed"] is False and "a 4 s window is too short" in failed["observed"]
