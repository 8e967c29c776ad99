"""The judging on recorded inputs shaped like the three labs' outputs, and each broken case they warn about."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from components.contracts.proof import CHECK_IDS
from components.incluster import judge
from components.incluster.evidence import parse
from components.incluster.evidence.pods import ghost_quota
from tests.helpers.recorded import (
    FIXTURES,
    edit_probe,
    load,
    probe_line,
    set_compute_share,
    set_oom_lines,
    shift_times,
    unlimited_view,
)


def check(result: dict[str, Any], check_id: str) -> dict[str, Any]:
    return next(c for c in result["checks"] if c["id"] == check_id)


# ---------------------------------------------------------------- the labs' recorded runs pass


@pytest.mark.parametrize("stack", ["kai", "k3s", "cluster"])
def test_recorded_lab_run_passes_every_planned_check(stack: str) -> None:
    expect, evidence = load(stack)
    result = judge.judge(expect, evidence)
    assert tuple(c["id"] for c in result["checks"]) == expect.checks
    assert all(c["passed"] is True for c in result["checks"]), [c for c in result["checks"] if not c["passed"]]
    assert result["passed"] is True
    assert set(expect.checks) <= set(CHECK_IDS)


def test_findings_are_reported_but_never_fail_the_verdict() -> None:
    expect, evidence = load("cluster")
    result = judge.judge(expect, evidence)
    ids = {(f["pod"], f["id"]) for f in result["findings"]}
    recorded = {(pod, f["id"]) for pod in expect.pods for probe in ("memory", "compute")
                for f in probe_line(evidence, pod, probe).get("findings") or []}  # fmt: skip
    assert recorded and recorded <= ids  # every probe's finding, on the Pod that found it
    assert any(f["bypassed"] is True for f in result["findings"])
    assert all(f.get("tried") and f.get("observed") for f in result["findings"])
    assert result["passed"] is True


def test_memory_enforced_reports_the_context_overhead() -> None:
    expect, evidence = load("cluster")
    observed = check(judge.judge(expect, evidence), "memory-enforced")["observed"]
    a = probe_line(evidence, "gpu-slice-a")
    assert f"{a['visible_total_mib'] - a['visible_free_mib']}" in observed and "is the CUDA context" in observed


# ---------------------------------------------------------------- planned checks


def test_planned_checks_carry_the_computed_numbers_and_nothing_observed() -> None:
    expect, _ = load("kai")
    planned = {c["id"]: c for c in judge.planned_checks(expect)}
    assert tuple(planned) == expect.checks
    assert "4147 MiB" in planned["view-isolation"]["expected"]
    assert "15360" in planned["view-isolation"]["expected"]
    assert "4348444672" in planned["monitor-metrics"]["expected"]
    assert all(c["passed"] is None and c["observed"] is None and c["title"] for c in planned.values())


def test_planned_overcommit_names_pod_and_reason() -> None:
    expect, _ = load("k3s")
    planned = {c["id"]: c for c in judge.planned_checks(expect)}
    assert "hami-oversubscribe" in planned["overcommit-rejected"]["expected"]
    assert "CardInsufficientMemory" in planned["overcommit-rejected"]["expected"]
    assert "= 10" in planned["quota-injection"]["expected"]


# ---------------------------------------------------------------- broken cases the labs warn about


def test_preload_mechanism_fails_when_libvgpu_is_not_preloaded() -> None:
    expect, evidence = load("k3s")
    edit_probe(evidence, "hami-share-a", lambda r: r.update(ld_so_preload=[], preload={"listed": [], "mapped": []}))
    result = judge.judge(expect, evidence)
    failed = check(result, "preload-mechanism")
    assert failed["passed"] is False
    assert "hami-share-a" in failed["observed"] and "default runtime nvidia" in failed["observed"]
    assert result["passed"] is False


def test_kai_limit_env_missing_fails_preload_mechanism() -> None:
    """KAI writes no CUDA_DEVICE_MEMORY_LIMIT when the node lacks nvidia.com/gpu.memory."""
    expect, evidence = load("kai")
    edit_probe(evidence, "kai-hami-lab12-b", lambda r: r["env"].update(CUDA_DEVICE_MEMORY_LIMIT=None))
    failed = check(judge.judge(expect, evidence), "preload-mechanism")
    assert failed["passed"] is False
    assert "CUDA_DEVICE_MEMORY_LIMIT is not set" in failed["observed"]


def test_hami_limit_env_missing_fails_quota_injection() -> None:
    expect, evidence = load("cluster")
    edit_probe(evidence, "gpu-slice-a", lambda r: r["env"].pop("CUDA_DEVICE_MEMORY_LIMIT_0"))
    failed = check(judge.judge(expect, evidence), "quota-injection")
    assert failed["passed"] is False
    assert "CUDA_DEVICE_MEMORY_LIMIT_0 is not set" in failed["observed"]


def test_quota_injection_fails_on_a_wrong_sm_limit() -> None:
    expect, evidence = load("cluster")
    edit_probe(evidence, "gpu-slice-b", lambda r: r["env"].update(CUDA_DEVICE_SM_LIMIT="0"))
    failed = check(judge.judge(expect, evidence), "quota-injection")
    assert failed["passed"] is False and "CUDA_DEVICE_SM_LIMIT=0, expected 30" in failed["observed"]


def test_same_gpu_fails_when_the_pods_are_on_different_gpus() -> None:
    expect, evidence = load("kai")
    edit_probe(evidence, "kai-hami-lab12-b", lambda r: r.update(gpu_uuid="GPU-0000aaaa-other-card"))
    failed = check(judge.judge(expect, evidence), "same-gpu")
    assert failed["passed"] is False
    assert "different GPUs" in failed["observed"] and "GPU-0000aaaa-other-card" in failed["observed"]


def test_same_gpu_fails_when_the_hami_allocation_names_another_card() -> None:
    expect, evidence = load("k3s")
    evidence["pods"]["hami-share-b"]["annotations"]["hami.io/vgpu-devices-allocated"] = "GPU-other,NVIDIA,8000,0:;"
    failed = check(judge.judge(expect, evidence), "same-gpu")
    assert failed["passed"] is False and "GPU-other" in failed["observed"]


def test_overcommit_rejected_fails_when_the_overcommit_pod_is_scheduled() -> None:
    expect, evidence = load("k3s")
    pod = evidence["pods"]["hami-oversubscribe"]
    pod.update(phase="Running", nodeName="hami-lab-rtx6000", events=[{"reason": "Scheduled", "message": "ok"}])
    failed = check(judge.judge(expect, evidence), "overcommit-rejected")
    assert failed["passed"] is False
    assert "was scheduled" in failed["observed"] and "FilteringFailed" in failed["observed"]


def test_overcommit_rejected_fails_when_a_proof_pod_no_longer_holds_its_slice() -> None:
    expect, evidence = load("k3s")
    evidence["pods"]["hami-share-b"]["phase"] = "Succeeded"
    failed = check(judge.judge(expect, evidence), "overcommit-rejected")
    assert failed["passed"] is False and "hami-share-b is Succeeded, not Running" in failed["observed"]


def test_neighbor_isolation_fails_when_the_holds_do_not_overlap() -> None:
    expect, evidence = load("kai")

    edit_probe(evidence, "kai-hami-lab12-a", lambda r: r.update(keep_holding_since=None))
    edit_probe(evidence, "kai-hami-lab12-b", lambda r: shift_times(r, 3600))  # B's whole run an hour later
    failed = check(judge.judge(expect, evidence), "neighbor-isolation")
    assert failed["passed"] is False and "did not overlap" in failed["observed"]


def test_neighbor_isolation_counts_keep_holding_as_holding() -> None:
    expect, evidence = load("kai")

    edit_probe(evidence, "kai-hami-lab12-a", lambda r: r.update(keep_holding_since=r["phases"]["hold"]["ended_at"]))
    edit_probe(evidence, "kai-hami-lab12-b", lambda r: shift_times(r, 86400 * 365))  # A keeps holding, its Pod runs
    assert check(judge.judge(expect, evidence), "neighbor-isolation")["passed"] is True


def test_neighbor_isolation_fails_when_a_hold_failed() -> None:
    expect, evidence = load("k3s")
    edit_probe(
        evidence,
        "hami-share-a",
        lambda r: r["phases"]["hold"].update(ok=False, error="CUDA_ERROR_OUT_OF_MEMORY"),
    )
    result = judge.judge(expect, evidence)
    assert check(result, "neighbor-isolation")["passed"] is False
    assert "CUDA_ERROR_OUT_OF_MEMORY" in check(result, "memory-enforced")["observed"]


def test_monitor_metrics_fails_when_the_monitor_lacks_the_pods_series() -> None:
    expect, evidence = load("kai")
    node = next(iter(evidence["metrics"]))
    evidence["metrics"][node] = (
        'hami_host_gpu_memory_used_bytes{device_index="0",device_uuid="GPU-9acc",device_type="T4"} 3.3e+09\n'
        'hami_vgpu_memory_limit_bytes{namespace="other",pod="someone-else",container="c"} 4.348444672e+09\n'
    )
    failed = check(judge.judge(expect, evidence), "monitor-metrics")
    assert failed["passed"] is False
    assert "no hami_vgpu_memory series for Pod gpushare-proof/kai-hami-lab12-a" in failed["observed"]
    assert "someone-else" in failed["observed"]


def test_monitor_metrics_fails_when_no_monitor_was_read_on_the_proof_node() -> None:
    expect, evidence = load("kai")
    evidence["metrics"] = {}
    evidence["errors"] = ["monitor on node gke-kai-hami-test-default-pool-370c394b-pm4j: no Running Pod"]
    failed = check(judge.judge(expect, evidence), "monitor-metrics")
    assert failed["passed"] is False and "no Running Pod" in failed["observed"]


def test_monitor_metrics_fails_on_a_wrong_limit_or_low_usage() -> None:
    expect, evidence = load("kai")
    node = next(iter(evidence["metrics"]))
    text = evidence["metrics"][node]
    evidence["metrics"][node] = text.replace("4.348444672e+09", "4.294967296e+09", 1).replace(
        "3.328180224e+09", "1.0e+08"
    )
    failed = check(judge.judge(expect, evidence), "monitor-metrics")
    assert failed["passed"] is False
    assert "expected 4348444672" in failed["observed"] and "< 3221225472" in failed["observed"]


def test_pending_pod_holding_quota_fails_its_checks_and_is_reported_as_ghost_quota() -> None:
    expect, evidence = load("cluster")
    pod = evidence["pods"]["gpu-slice-b"]
    pod.update(phase="Pending", logs="")
    pod["containerStatuses"] = [{"name": "probe", "state": {"waiting": {"reason": "ImagePullBackOff"}}}]
    result = judge.judge(expect, evidence)
    assert result["passed"] is False
    failed = check(result, "same-gpu")
    assert failed["passed"] is False
    assert "ImagePullBackOff" in failed["observed"] and "holds 4000 MiB / 30%" in failed["observed"]
    assert [(g["pod"], g["memMiB"], g["cores"]) for g in result["ghostQuota"]] == [("gpu-slice-b", 4000, 30)]


def test_ghost_quota_finds_the_not_running_pods_that_hold_quota() -> None:
    """Article section 6.7: eight gpucores=5 Pods, four Running, one in ImagePullBackOff still charged."""
    pods = json.loads((FIXTURES / "ghost_pods.json").read_text())
    ghosts = ghost_quota(pods)
    assert [(g["pod"], g["reason"]) for g in ghosts] == [
        ("cores-test-4", "ImagePullBackOff"),
        ("cores-test-6", "Pending"),
    ]
    assert all(g["cores"] == 5 and g["memMiB"] == 1000 and g["node"] == "node" for g in ghosts)


def test_ghost_quota_ignores_an_overcommit_pod_that_was_never_bound() -> None:
    _, evidence = load("k3s")
    assert ghost_quota(evidence["pods"]) == []


def test_memory_enforced_fails_when_the_extra_allocation_is_not_refused() -> None:
    expect, evidence = load("kai")
    edit_probe(evidence, "kai-hami-lab12-a", lambda r: r["phases"]["hold"].update(extra_ok=True))
    failed = check(judge.judge(expect, evidence), "memory-enforced")
    assert failed["passed"] is False and "was not refused" in failed["observed"]


def test_memory_enforced_fails_when_the_sweep_goes_past_the_quota() -> None:
    expect, evidence = load("cluster")

    def unlimited(r: dict[str, Any]) -> None:
        unlimited_view(r, expect.card_mib, 14930)
        for step in r["phases"]["sweep"]:
            step.update(ok=True, error=None)

    edit_probe(evidence, "gpu-slice-a", unlimited)
    failed = check(judge.judge(expect, evidence), "memory-enforced")
    assert failed["passed"] is False
    assert "14930 MiB allocation succeeded" in failed["observed"]
    assert "sweep sizes above the quota succeeded" in failed["observed"]


def test_memory_enforced_fails_when_the_oom_line_names_another_limit() -> None:
    expect, evidence = load("k3s")
    line = "[HAMI-core ERROR (pid:54 thread=1 allocator.c:52)]: Device 0 OOM 8629780480 / 8589934592"
    edit_probe(evidence, "hami-share-a", lambda r: set_oom_lines(r, [line]))
    failed = check(judge.judge(expect, evidence), "memory-enforced")
    assert failed["passed"] is False and "8589934592" in failed["observed"]


def test_view_isolation_fails_when_the_pod_sees_the_whole_card() -> None:
    expect, evidence = load("k3s")
    edit_probe(evidence, "hami-share-a", lambda r: r.update(visible_total_mib=97887, nvml_total_mib=97887))
    failed = check(judge.judge(expect, evidence), "view-isolation")
    assert failed["passed"] is False and "97887 MiB, not 8000" in failed["observed"]


def test_view_isolation_fails_when_the_node_label_disagrees_with_nvidia_smi() -> None:
    """The lab's warning: label the MiB that nvidia-smi reports (15360), not the nominal 16 GiB."""
    expect, evidence = load("kai")
    node = evidence["pods"]["gpushare-whole-gpu"]["nodeName"]
    evidence["nodes"][node]["labels"]["nvidia.com/gpu.memory"] = "16384"
    failed = check(judge.judge(expect, evidence), "view-isolation")
    assert failed["passed"] is False and "15360 MiB but node" in failed["observed"]


def test_quota_injection_fails_when_hami_did_not_split_the_card() -> None:
    expect, evidence = load("cluster")
    evidence["nodes"]["node"]["allocatable"]["nvidia.com/gpu"] = "1"
    failed = check(judge.judge(expect, evidence), "quota-injection")
    assert failed["passed"] is False and "nvidia.com/gpu=1, expected 10" in failed["observed"]


def test_quota_injection_fails_when_the_register_annotation_lacks_the_card() -> None:
    expect, evidence = load("k3s")
    evidence["nodes"]["hami-lab-rtx6000"]["annotations"]["hami.io/node-nvidia-register"] = "[]"
    failed = check(judge.judge(expect, evidence), "quota-injection")
    card = probe_line(evidence, "hami-share-a")["gpu_uuid"]
    assert failed["passed"] is False and f"does not list {card}" in failed["observed"]


def test_compute_limited_fails_when_many_block_kernels_run_at_full_speed() -> None:
    expect, evidence = load("cluster")
    edit_probe(evidence, "gpu-slice-a", lambda r: set_compute_share(r, 0.97), probe="compute")
    failed = check(judge.judge(expect, evidence), "compute-limited")
    assert failed["passed"] is False and "0.97, expected at most 0.30 + 0.08" in failed["observed"]


def test_compute_limited_fails_without_a_baseline() -> None:
    expect, evidence = load("cluster")
    edit_probe(evidence, "gpu-slice-b", lambda r: set_compute_share(r, None), probe="compute")
    failed = check(judge.judge(expect, evidence), "compute-limited")
    assert failed["passed"] is False and "no share of an unlimited baseline" in failed["observed"]


def test_a_missing_proof_pod_fails_every_check_with_the_reason() -> None:
    expect, evidence = load("kai")
    del evidence["pods"]["kai-hami-lab12-b"]
    result = judge.judge(expect, evidence)
    assert result["passed"] is False
    for c in result["checks"]:
        assert c["passed"] is False, c
        assert "kai-hami-lab12-b" in c["observed"]


def test_a_malformed_probe_result_fails_every_check_that_reads_it_naming_the_field() -> None:
    expect, evidence = load("kai")
    edit_probe(evidence, "kai-hami-lab12-a", lambda r: r.update(phases="garbage"))
    result = judge.judge(expect, evidence)
    for c in result["checks"]:  # every check reads the proof Pods' memory results
        assert c["passed"] is False
        assert c["observed"] == "not judgeable: kai-hami-lab12-a.memory.phases: 'garbage' is not an object"


# ---------------------------------------------------------------- parsers


def test_oom_line_parses_with_and_without_thread_field() -> None:
    lines = [
        "[HAMI-core ERROR (pid:54 thread=133390658244608 allocator.c:52)]: Device 0 OOM 8629780480 / 8388608000",
        "[HAMI-core ERROR (pid:479 allocator.c:52)]: Device 0 OOM 4401922048 / 4194304000",
        "cudaMalloc 2.0 GiB -> errcode=0  OK",
    ]
    assert parse.parse_oom_lines(lines) == [
        {"device": 0, "requested": 8629780480, "limit": 8388608000},
        {"device": 0, "requested": 4401922048, "limit": 4194304000},
    ]


def test_node_register_parses_hami_2_9_0_and_2_10_0_forms() -> None:
    v290 = (
        '[{"id":"GPU-3c4a","count":10,"devmem":97887,"devcore":100,"type":"NVIDIA RTX PRO 6000",'
        '"mode":"hami-core","health":true,"devicepairscore":{}}]'
    )
    v2100 = '[{"id":"GPU-fb00","count":10,"devmem":15360,"devcore":100,"type":"NVIDIA-Tesla T4","health":true}]'
    v2100_indexed = '[{"id":"GPU-1","index":1,"count":10,"devmem":15360,"numa":1,"health":true}]'
    assert parse.parse_node_register(v290)[0] | {} == {
        "id": "GPU-3c4a", "index": 0, "count": 10, "devmem": 97887, "devcore": 100,
        "type": "NVIDIA RTX PRO 6000", "numa": 0, "health": True,
    }  # fmt: skip
    assert parse.parse_node_register(v2100)[0]["devmem"] == 15360
    assert parse.parse_node_register(v2100)[0]["index"] == 0
    assert (
        parse.parse_node_register(v2100_indexed)[0]["index"],
        parse.parse_node_register(v2100_indexed)[0]["numa"],
    ) == (1, 1)
    assert parse.parse_node_register("GPU-old,10,15360,100,NVIDIA-Tesla T4,0,true:")[0]["devmem"] == 15360


def test_allocation_annotation_parses_per_container_devices() -> None:
    value = "GPU-a,NVIDIA,4000,30:;GPU-b,NVIDIA,2000,10:GPU-c,NVIDIA,1000,0:;"
    assert [(d["uuid"], d["memMiB"], d["cores"]) for d in parse.parse_allocation(value)] == [
        ("GPU-a", 4000, 30),
        ("GPU-b", 2000, 10),
        ("GPU-c", 1000, 0),
    ]
    assert parse.parse_allocation(";") == []


def test_nvidia_smi_memory_column_is_parsed() -> None:
    assert parse.parse_nvidia_smi_memory("| N/A 34C P0 48W / 600W |       0MiB /   8000MiB |") == (0, 8000)
    assert parse.parse_nvidia_smi_memory("No devices were found") is None


def test_metrics_parse_scientific_values_and_labels() -> None:
    samples = parse.parse_metrics(
        '# HELP x\nhami_vgpu_memory_used_bytes{namespace="n",pod="p \\"q\\""} 3.328180224e+09 1700000000\n'
    )
    assert samples == [("hami_vgpu_memory_used_bytes", {"namespace": "n", "pod": 'p "q"'}, 3328180224.0)]


def test_probe_results_take_the_last_line_of_each_probe() -> None:
    logs = "\n".join(
        [
            "hello",
            '{"probe":"memory","ok":false}',
            "not json {",
            '{"probe":"compute","ok":true}',
            '{"probe":"memory","ok":true}',
        ]
    )
    found = parse.probe_results(logs)
    assert found["memory"]["ok"] is True and found["compute"]["ok"] is True


def test_failed_verdict_names_the_error_in_every_check() -> None:
    expect, _ = load("kai")
    verdict = judge.failed_verdict(expect, "verifier crashed: KeyError: 'namespace'")
    assert verdict["passed"] is False
    assert all(c["passed"] is False and "KeyError" in c["observed"] for c in verdict["checks"])


def test_compute_limited_judges_only_the_pods_that_measure_compute() -> None:
    expect, evidence = load("cluster")
    expect = replace(expect, compute_pods=("gpu-slice-a",))
    lines = [
        ln
        for ln in evidence["pods"]["gpu-slice-b"]["logs"].splitlines()
        if not (ln.startswith("{") and json.loads(ln).get("probe") == "compute")
    ]
    evidence["pods"]["gpu-slice-b"]["logs"] = "\n".join(lines) + "\n"
    assert check(judge.judge(expect, evidence), "compute-limited")["passed"] is True
    expect = replace(expect, compute_pods=("gpu-slice-b",))
    failed = check(judge.judge(expect, evidence), "compute-limited")
    assert failed["passed"] is False and "gpu-slice-b has no compute probe result" in failed["observed"]
