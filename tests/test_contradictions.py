"""Evidence that contradicts itself fails the check that reads it, saying which two facts disagree.

Each case takes a recorded run (tests/fixtures), makes one edit a lying or broken cluster would produce, and names
the edit; the untouched runs pass (test_judge.test_recorded_lab_run_passes_every_planned_check). Issue 19's kinds.
"""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from typing import Any

import pytest

from components.incluster import judge
from components.incluster.expectation import Expectation, PodTry
from tests.helpers.recorded import (
    as_another_process,
    edit_probe,
    load,
    load_raw,
    probe_line,
    real_run,
    scale_shape,
    set_oom_lines,
)


def check(expect: Any, evidence: dict[str, Any], check_id: str) -> dict[str, Any]:
    return next(c for c in judge.judge(expect, evidence)["checks"] if c["id"] == check_id)


def failed(expect: Any, evidence: dict[str, Any], check_id: str, *words: str) -> None:
    found = check(expect, evidence, check_id)
    assert found["passed"] is False, found
    for word in words:
        assert word in found["observed"], (word, found["observed"])


def shape(result: dict[str, Any], which: str = "short_many") -> dict[str, Any]:
    return result["shapes"][which]


# ---------------------------------------------------------------- the expectation itself


@pytest.mark.parametrize(
    ("key", "value", "named"),
    [
        ("pods", [], "expectation.pods"),
        ("pods", ["gpu-slice-a"], "expectation.pods"),
        ("pods", ["gpu-slice-a", "gpu-slice-a"], "expectation.pods"),
        ("holdMiB", 0, "expectation.holdMiB"),
        ("extraMiB", 0, "expectation.extraMiB"),
        ("coresPercent", 0, "expectation.coresPercent"),
        ("limitEnv", {}, "expectation.limitEnv"),
        ("sliceMiB", 0, "expectation.sliceMiB"),
        ("limitBytes", 0, "expectation.limitBytes"),
    ],
    ids=["no-pods", "one-pod", "same-pod-twice", "hold-0", "extra-0", "cores-0", "empty-limit-env", "slice-0",
         "limit-0"],
)  # fmt: skip
def test_an_expectation_no_plan_can_produce_is_not_judgeable_naming_the_field(key: str, value: Any,
                                                                               named: str) -> None:  # fmt: skip
    raw, _ = load_raw("cluster")
    raw[key] = value
    with pytest.raises(ValueError, match=f"^not judgeable: {named}"):
        Expectation.parse(raw)


@pytest.mark.parametrize("stack", ["gke", "gke-mps", "gke-time-sharing", "k3s", "cluster"])
def test_every_stacks_planned_expectation_is_judgeable(plan_stack: Any, stack: str) -> None:
    pod = plan_stack(stack).one("kubernetes:core/v1:Pod", "gpushare-proof-verifier-pod")
    env = pod["inputs"]["spec"]["containers"][0]["env"]
    wire = json.loads(next(e["value"] for e in env if e["name"] == "GPUSHARE_EXPECT"))
    assert Expectation.parse(wire).to_wire() == wire


def test_time_sharing_may_carry_no_limit_env() -> None:
    raw, _ = load_raw("cluster")
    raw.update(mechanism="time-sharing", limitEnv={}, preloadLibrary=None)
    assert Expectation.parse(raw).limit_env == {}


# ---------------------------------------------------------------- compute, cross-examined


def test_compute_limited_recomputes_the_share_from_the_two_means() -> None:
    expect, evidence = load("cluster")
    reported = probe_line(evidence, "gpu-slice-a", "compute")["share"]["short_many"]  # the probe's word, left as is
    edit_probe(evidence, "gpu-slice-a", lambda r: scale_shape(shape(r), 2), "compute")  # twice as fast throughout
    failed(expect, evidence, "compute-limited", f"share {reported}", "mean_per_s")


def test_compute_limited_fails_when_the_baseline_ran_without_the_library_the_measured_run_had() -> None:
    expect, evidence = load("cluster")
    edit_probe(evidence, "gpu-slice-a", lambda r: r["baseline"].update(preload={"listed": [], "mapped": []}),
               "compute")  # fmt: skip
    failed(expect, evidence, "compute-limited", "baseline", "libvgpu.so")


def test_compute_limited_fails_when_the_baseline_was_itself_limited() -> None:
    expect, evidence = load("cluster")
    edit_probe(evidence, "gpu-slice-a", lambda r: r["baseline"]["env"].update(GPU_CORE_UTILIZATION_POLICY=None),
               "compute")  # fmt: skip
    failed(expect, evidence, "compute-limited", "baseline", "CUDA_DEVICE_SM_LIMIT=30")


def test_compute_limited_fails_when_the_baseline_ran_another_grid() -> None:
    expect, evidence = load("cluster")

    def other_grid(r: dict[str, Any]) -> None:  # 50 times fewer blocks, 50 times more iterations: the same work
        base = r["baseline"]["shapes"]["short_many"]
        base.update(blocks=264, iters=base["iters"] * 50)

    edit_probe(evidence, "gpu-slice-a", other_grid, "compute")
    failed(expect, evidence, "compute-limited", "264 blocks", "13200 blocks")


def test_compute_limited_fails_when_the_timeline_is_shorter_than_the_claimed_window() -> None:
    expect, evidence = load("cluster")
    judged = shape(probe_line(evidence, "gpu-slice-a", "compute"))
    claimed = f"make {int(judged['warmup_s'] + judged['window_s'])}"  # the seconds its warm-up and window take
    edit_probe(evidence, "gpu-slice-a", lambda r: shape(r).update(timeline_per_s=shape(r)["timeline_per_s"][:8]),
               "compute")  # fmt: skip
    failed(expect, evidence, "compute-limited", "not judgeable", "timeline_per_s", "8 seconds", claimed)


def test_compute_limited_fails_when_the_timelines_mean_is_not_the_reported_mean() -> None:
    expect, evidence = load("cluster")

    def flat(r: dict[str, Any]) -> None:
        shape(r)["timeline_per_s"] = [18000.0] * len(shape(r)["timeline_per_s"])

    reported = shape(probe_line(evidence, "gpu-slice-a", "compute"))["mean_per_s"]
    edit_probe(evidence, "gpu-slice-a", flat, "compute")
    failed(expect, evidence, "compute-limited", "timeline", "18000", f"{reported:.2f}")


def test_compute_limited_judges_the_shape_the_check_names_not_the_one_the_probe_picked() -> None:
    expect, evidence = load("cluster")

    def pick_few_long(r: dict[str, Any]) -> None:
        r["judged_shape"] = "few_long"  # and measured as the judged shape is: the probe's window, held to 0.3
        few = r["shapes"]["few_long"] = copy.deepcopy(shape(r))
        scale_shape(few, r["baseline"]["shapes"]["few_long"]["mean_per_s"] * 0.3 / few["mean_per_s"])
        r["share"]["few_long"] = 0.3
        r["share"]["short_many"] = 0.9
        scale_shape(shape(r), r["baseline"]["shapes"]["short_many"]["mean_per_s"] * 0.9 / shape(r)["mean_per_s"])

    edit_probe(evidence, "gpu-slice-a", pick_few_long, "compute")
    failed(expect, evidence, "compute-limited", "short_many", "0.90")


def test_compute_limited_fails_when_the_measured_process_disabled_its_own_utilization_policy() -> None:
    expect, evidence = load("cluster")
    edit_probe(evidence, "gpu-slice-b", lambda r: r["env"].update(GPU_CORE_UTILIZATION_POLICY="disable"), "compute")
    failed(expect, evidence, "compute-limited", "gpu-slice-b", "GPU_CORE_UTILIZATION_POLICY=disable")


# ---------------------------------------------------------------- memory evidence, cross-examined


def test_memory_enforced_fails_on_an_oom_line_whose_request_is_below_the_limit() -> None:
    expect, evidence = load("cluster")
    for thread, pod in enumerate(expect.pods, 2):  # a forged line per Pod, each naming its own process
        line = f"[HAMI-core ERROR (pid:1 thread={thread} allocator.c:52)]: Device 0 OOM 1048576 / 4194304000"
        edit_probe(evidence, pod, lambda r, line=line: set_oom_lines(r, [line]))
        evidence["pods"][pod]["logs"] = (
            "\n".join(x for x in evidence["pods"][pod]["logs"].splitlines() if not x.startswith("[HAMI-core"))
            + f"\n{line}\n"
        )
    failed(expect, evidence, "memory-enforced", "1048576", "never prints")


def test_memory_enforced_fails_when_the_probes_oom_lines_are_not_the_librarys_lines_in_the_log() -> None:
    expect, evidence = load("cluster")
    edit_probe(evidence, "gpu-slice-a", lambda r: r.update(hami_oom_lines=[x.replace("4194304000", "4194304001")
                                                                           for x in r["hami_oom_lines"]]))  # fmt: skip
    raw = probe_line(evidence, "gpu-slice-a")
    raw["hami_oom_lines"] = [x.replace("4194304001", "4194304000") for x in raw["hami_oom_lines"]]
    edit_probe(evidence, "gpu-slice-a", lambda r: set_oom_lines(r, raw["hami_oom_lines"][:3]))
    failed(expect, evidence, "memory-enforced", "gpu-slice-a", "log")


def test_memory_enforced_fails_when_the_chunks_got_more_than_the_largest_allocation_allows() -> None:
    expect, evidence = load("cluster")
    edit_probe(evidence, "gpu-slice-a", lambda r: r["phases"]["chunks"].update(allocated_mib=8192, calls=33))
    failed(expect, evidence, "memory-enforced", "chunks", "8192")


def test_memory_enforced_fails_when_the_extra_was_refused_by_another_cuda_error_with_no_library_line() -> None:
    expect, evidence = load("cluster")
    extra = expect.hold_mib + expect.extra_mib

    def other_error(r: dict[str, Any]) -> None:
        r["phases"]["hold"]["extra_error"] = "CUDA_ERROR_INVALID_VALUE"
        set_oom_lines(
            r,
            [
                x
                for x in r["hami_oom_lines"]
                if not extra * 2**20 <= int(x.split("OOM ")[1].split(" /")[0]) <= (extra + 1024) * 2**20
            ],
        )

    edit_probe(evidence, "gpu-slice-b", other_error)
    keep = probe_line(evidence, "gpu-slice-b")["hami_oom_lines"]
    logs = evidence["pods"]["gpu-slice-b"]["logs"].splitlines()
    evidence["pods"]["gpu-slice-b"]["logs"] = "\n".join(x for x in logs if not x.startswith("[HAMI-core") or x in keep)
    failed(expect, evidence, "memory-enforced", "gpu-slice-b", "CUDA_ERROR_INVALID_VALUE")


def test_memory_enforced_holds_on_the_allocators_refusal_whatever_the_context_was_charged() -> None:
    """The same-instant H200 run: B's context went uncharged (0 MiB), yet the library refused past the quota."""
    expect, evidence = real_run("cluster", "cluster-hami-core-uncharged")
    b = probe_line(evidence, "gpu-slice-b")
    assert (b["visible_free_mib"], b["largest_alloc_mib"]) == (4000, 4000)
    found = check(expect, evidence, "memory-enforced")
    assert found["passed"] is True, found["observed"]


def test_memory_enforced_fails_when_one_allocation_got_past_the_quota() -> None:
    expect, evidence = real_run("cluster", "cluster-hami-core")
    edit_probe(evidence, "gpu-slice-b", lambda r: r.update(largest_alloc_mib=4001, visible_free_mib=4001))
    failed(expect, evidence, "memory-enforced", "4001 MiB")


# ---------------------------------------------------------------- a probe result tied to its Pod


def test_one_pods_log_passed_off_as_both_fails_every_check_that_reads_them() -> None:
    expect, evidence = load("cluster")
    evidence["pods"]["gpu-slice-b"]["logs"] = evidence["pods"]["gpu-slice-a"]["logs"]
    for check_id in ("same-gpu", "memory-enforced", "neighbor-isolation"):
        failed(expect, evidence, check_id, "gpu-slice-a", "gpu-slice-b", "one process")


def test_a_shared_cache_file_alone_ties_two_results_to_one_process() -> None:
    expect, evidence = load("cluster")
    a = probe_line(evidence, "gpu-slice-a")

    def same_process(r: dict[str, Any]) -> None:
        r["env"]["CUDA_DEVICE_MEMORY_SHARED_CACHE"] = a["env"]["CUDA_DEVICE_MEMORY_SHARED_CACHE"]

    edit_probe(evidence, "gpu-slice-b", same_process)
    failed(expect, evidence, "memory-enforced", "CUDA_DEVICE_MEMORY_SHARED_CACHE", "one process")


def test_probe_output_from_before_the_pod_was_created_is_refused() -> None:
    expect, evidence = load("cluster")
    evidence["pods"]["gpu-slice-a"]["creationTimestamp"] = "2027-01-01T00:00:00Z"
    failed(expect, evidence, "memory-enforced", "gpu-slice-a", "before the Pod was created")


def test_same_gpu_fails_when_a_pod_is_on_no_node() -> None:
    expect, evidence = load("cluster")
    evidence["pods"]["gpu-slice-b"]["nodeName"] = None
    failed(expect, evidence, "same-gpu", "gpu-slice-b", "no node")


# ---------------------------------------------------------------- over-commit, judged on what happened


def test_overcommit_rejected_reads_the_overcommit_pods_own_request() -> None:
    expect, evidence = load("cluster")
    evidence["pods"]["gpu-slice-oversubscribe"]["resources"]["limits"]["nvidia.com/gpumem"] = "90000"
    failed(expect, evidence, "overcommit-rejected", "90000", "10000")


def test_overcommit_rejected_fails_when_other_tenants_memory_on_the_card_keeps_the_pod_out() -> None:
    expect, evidence = load("cluster")
    uuid = probe_line(evidence, "gpu-slice-a")["gpu_uuid"]
    tenant = {
        "name": "training",
        "namespace": "team-x",
        "phase": "Running",
        "nodeName": "node",
        "annotations": {"hami.io/vgpu-devices-allocated": f"{uuid},NVIDIA,6000,0:;"},
        "containerStatuses": [],
    }
    evidence["quotaPods"] = {**{f"gpushare-proof/{n}": evidence["pods"][n] for n in expect.pods},
                             "team-x/training": tenant}  # fmt: skip
    failed(expect, evidence, "overcommit-rejected", "team-x/training", "6000 MiB")


def test_overcommit_rejected_fails_when_the_refusal_names_only_another_node() -> None:
    expect, evidence = load("cluster")
    for event in evidence["pods"]["gpu-slice-oversubscribe"]["events"]:
        event["message"] = "1 nodes CardInsufficientMemory(other-node)"
    failed(expect, evidence, "overcommit-rejected", "other-node", "node")


def test_the_slot_check_compares_the_ask_with_the_nodes_allocatable() -> None:
    expect, evidence = load("cluster")
    expect = replace(expect, mechanism="mps", overcommit_slots=1, overcommit_mib=None,
                     pending_reason="Insufficient nvidia.com/gpu")  # fmt: skip
    pod = evidence["pods"]["gpu-slice-oversubscribe"]
    pod["resources"] = {"limits": {"nvidia.com/gpu": "1"}}
    pod["events"] = [{"reason": "FailedScheduling", "lastTimestamp": "2026-08-20T09:02:09Z",
                      "message": "0/1 nodes are available: 1 Insufficient nvidia.com/gpu."}]  # fmt: skip
    # The node has 10 slots and the proof Pods take 2: one more slot fits, so Pending proves nothing.
    failed(expect, evidence, "overcommit-rejected", "allocatable", "10")


# ---------------------------------------------------------------- Pod-level tries, monitor, registration


def test_a_try_whose_library_was_not_loaded_is_not_reported_as_held() -> None:
    expect, evidence = load("k3s")
    memory = {**as_another_process(probe_line(evidence, "hami-share-a")), "preload": {"listed": [], "mapped": []}}
    pod_try = PodTry("cuda-disable-control", "hami-share-try", "a Pod setting the variable")
    expect = replace(expect, pod_tries=(pod_try,))
    evidence["pods"][pod_try.pod] = {"phase": "Succeeded", "nodeName": "hami-lab-rtx6000",
                                     "logs": json.dumps(memory) + "\n"}  # fmt: skip
    found = next(f for f in judge.judge(expect, evidence)["findings"] if f["id"] == "cuda-disable-control")
    assert found["bypassed"] is not False
    assert "not mapped" in found["observed"]


def test_monitor_metrics_fails_on_a_nan_usage() -> None:
    expect, evidence = load("kai")
    node = next(iter(evidence["metrics"]))
    evidence["metrics"][node] = evidence["metrics"][node].replace("} 3.328180224e+09", "} NaN")
    failed(expect, evidence, "monitor-metrics", "NaN")


def test_quota_injection_fails_when_the_node_registers_a_1_mib_card() -> None:
    expect, evidence = load("cluster")
    node = evidence["nodes"]["node"]
    node["annotations"]["hami.io/node-nvidia-register"] = node["annotations"][
        "hami.io/node-nvidia-register"].replace('"devmem":15360', '"devmem":1')  # fmt: skip
    failed(expect, evidence, "quota-injection", "devmem=1", "15360")


# ---------------------------------------------------------------- the probe against itself


def test_view_isolation_fails_when_free_memory_exceeds_the_total_it_is_part_of() -> None:
    expect, evidence = load("cluster")
    edit_probe(evidence, "gpu-slice-a", lambda r: r.update(nvml_free_mib=r["nvml_total_mib"] + 100))
    failed(expect, evidence, "view-isolation", "gpu-slice-a", "free", "4100")


def test_neighbor_isolation_fails_on_a_hold_that_ended_before_it_started() -> None:
    expect, evidence = load("cluster")

    def backwards(r: dict[str, Any]) -> None:
        hold = r["phases"]["hold"]
        hold["started_at"], hold["ended_at"] = hold["ended_at"], hold["started_at"]

    edit_probe(evidence, "gpu-slice-a", backwards)
    failed(
        expect,
        evidence,
        "neighbor-isolation",
        "not judgeable: gpu-slice-a.memory.phases.hold.ended_at",
        "is before started_at",
        "times run backwards",
    )
