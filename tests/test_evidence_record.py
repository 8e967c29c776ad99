"""Evidence a new user's cluster could hand the judge, odd in one way each, is not judgeable and fails every check
that reads it: times and provenance, whose OOM line it is, numbers and JSON, identity (the record, record.py).

Each case starts from a recorded run that passes (tests/fixtures; `tied` adds what a run since provenance
carries), makes one edit and names it. The over-commit, the report's way out, the audit and the findings are in
tests/test_evidence_report.py.
"""

from __future__ import annotations

import copy
import json
from datetime import timedelta
from typing import Any

from components.incluster import judge
from tests.helpers.recorded import as_another_process, edit_probe, load, probe_line, set_oom_lines
from tests.helpers.tied import at, iso, tied

MIB = 1 << 20


def checks(expect: Any, evidence: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["id"]: c for c in judge.judge(expect, evidence)["checks"]}


def not_judgeable(expect: Any, evidence: dict[str, Any], *check_ids: str, field: str = "") -> None:
    """Each named check fails, saying the evidence it reads is not judgeable (and which field, when given)."""
    found = checks(expect, evidence)
    for check_id in check_ids:
        c = found[check_id]
        assert c["passed"] is False, (check_id, c["observed"])
        assert "not judgeable: " in c["observed"] and field in c["observed"], (check_id, c["observed"])


def replace_line(evidence: dict[str, Any], pod: str, old: str, new: str, probe: str = "memory") -> None:
    """One textual edit of a probe's JSON line, as the log carries it."""
    lines = evidence["pods"][pod]["logs"].splitlines()
    index = next(i for i, x in enumerate(lines) if x.startswith("{") and json.loads(x).get("probe") == probe)
    if old not in lines[index]:  # the recorded lines are compact JSON
        old, new = old.replace('": ', '":'), new.replace('": ', '":')
    assert old in lines[index], old
    lines[index] = lines[index].replace(old, new, 1)
    evidence["pods"][pod]["logs"] = "\n".join(lines) + "\n"


# ---------------------------------------------------------------- time and provenance


def test_holds_stamped_before_their_pod_was_created_are_not_judgeable() -> None:
    expect, evidence = load("cluster")
    for pod in expect.pods:  # both holds an hour before their Pods existed, still overlapping each other
        created = at(evidence["pods"][pod]["creationTimestamp"])

        def early(r: dict[str, Any], created: Any = created) -> None:
            hold = r["phases"]["hold"]
            length = at(hold["ended_at"]) - at(hold["started_at"])
            before = created - timedelta(hours=1)
            hold.update(started_at=iso(before), ended_at=iso(before + length))

        edit_probe(evidence, pod, early)
    not_judgeable(expect, evidence, "neighbor-isolation", "memory-enforced", field="phases.hold.started_at")


def test_a_probe_that_ends_before_it_starts_is_not_judgeable() -> None:
    expect, evidence = load("cluster")
    edit_probe(evidence, "gpu-slice-a", lambda r: r.update(started_at=r["ended_at"], ended_at=r["started_at"]))
    not_judgeable(expect, evidence, "same-gpu", "memory-enforced", field="gpu-slice-a.memory")


def test_a_keep_holding_since_earlier_than_its_pod_is_not_judgeable() -> None:
    expect, evidence = load("cluster")
    created = at(evidence["pods"]["gpu-slice-a"]["creationTimestamp"])
    edit_probe(evidence, "gpu-slice-a", lambda r: r.update(keep_holding_since=iso(created - timedelta(days=1))))
    not_judgeable(expect, evidence, "neighbor-isolation", field="gpu-slice-a.memory.keep_holding_since")


def _copy_of_a(evidence: dict[str, Any]) -> dict[str, Any]:
    """Pod A's memory result as B's, on another cache file and with another thread in every OOM line."""
    b = copy.deepcopy(probe_line(evidence, "gpu-slice-a"))
    b["env"]["CUDA_DEVICE_MEMORY_SHARED_CACHE"] += ".b"
    set_oom_lines(b, [x.replace("thread=", "thread=9") for x in b["hami_oom_lines"]])
    return b


def _as_b(evidence: dict[str, Any], result: dict[str, Any]) -> None:
    edit_probe(evidence, "gpu-slice-b", lambda r: (r.clear(), r.update(copy.deepcopy(result))))
    lines = [x for x in evidence["pods"]["gpu-slice-b"]["logs"].splitlines() if x.startswith("{")]
    evidence["pods"]["gpu-slice-b"]["logs"] = "\n".join([*result["hami_oom_lines"], *lines]) + "\n"


def test_the_same_instants_written_in_another_time_zone_are_one_process() -> None:
    expect, evidence = load("cluster")
    b = _copy_of_a(evidence)

    def zone(value: str) -> str:
        return (at(value) + timedelta(hours=2)).isoformat(timespec="milliseconds").replace("+00:00", "+02:00")

    for key in ("started_at", "ended_at"):
        b[key] = zone(b[key])
    b["phases"]["hold"].update(started_at=zone(b["phases"]["hold"]["started_at"]),
                               ended_at=zone(b["phases"]["hold"]["ended_at"]))  # fmt: skip
    assert b["started_at"].endswith("+02:00")
    _as_b(evidence, b)
    not_judgeable(expect, evidence, "memory-enforced", "same-gpu", field="identical timestamps")


def test_a_cache_path_that_differs_only_by_a_doubled_slash_is_one_container() -> None:
    expect, evidence = load("cluster")
    cache = probe_line(evidence, "gpu-slice-a")["env"]["CUDA_DEVICE_MEMORY_SHARED_CACHE"]
    doubled = cache.replace("/", "//", 1) if cache.count("/") > 1 else "/" + cache
    edit_probe(evidence, "gpu-slice-b", lambda r: r["env"].update(CUDA_DEVICE_MEMORY_SHARED_CACHE=doubled))
    not_judgeable(expect, evidence, "memory-enforced", field="a file HAMi makes for one container")


def _with_try(expect: Any, evidence: dict[str, Any], result: dict[str, Any], created: str | None = None) -> Any:
    from dataclasses import replace

    from components.incluster.expectation import PodTry

    pod_try = PodTry("cuda-disable-control", "gpu-slice-try", "a Pod setting CUDA_DISABLE_CONTROL=true")
    pod = {"phase": "Succeeded", "nodeName": evidence["pods"]["gpu-slice-a"]["nodeName"],
           "logs": json.dumps(result) + "\n"}  # fmt: skip
    if created:
        pod["creationTimestamp"] = created
    evidence["pods"][pod_try.pod] = pod
    return replace(expect, pod_tries=(pod_try,))


def _try_finding(expect: Any, evidence: dict[str, Any]) -> dict[str, Any]:
    return next(f for f in judge.judge(expect, evidence)["findings"] if f["id"] == "cuda-disable-control")


def test_a_pod_level_try_whose_log_is_a_proof_pods_verbatim_is_not_judged() -> None:
    expect, evidence = load("cluster")
    expect = _with_try(expect, evidence, probe_line(evidence, "gpu-slice-a"))
    found = _try_finding(expect, evidence)
    assert found["bypassed"] is None and "one process's output given as both" in found["why"], found


def test_a_pod_level_try_whose_probe_ran_before_its_pod_existed_is_not_judged() -> None:
    expect, evidence = load("cluster")
    result = as_another_process(probe_line(evidence, "gpu-slice-a"))
    expect = _with_try(expect, evidence, result, created=iso(at(result["ended_at"]) + timedelta(hours=1)))
    found = _try_finding(expect, evidence)
    assert found["bypassed"] is None and "before the Pod was created" in found["why"], found


def test_a_result_that_names_another_pod_uid_is_not_judgeable() -> None:
    expect, evidence = tied("cluster")
    edit_probe(evidence, "gpu-slice-b", lambda r: r["pod"].update(uid="uid-of-an-earlier-pod"))
    not_judgeable(expect, evidence, "same-gpu", "memory-enforced", field="gpu-slice-b.memory.pod.uid")


def test_a_pod_object_without_the_uid_the_api_server_gives_is_not_tied() -> None:
    expect, evidence = tied("cluster")
    del evidence["pods"]["gpu-slice-a"]["uid"]
    not_judgeable(expect, evidence, "memory-enforced", field="carries no UID")


# ---------------------------------------------------------------- whose OOM line it is


def _repid(lines: list[str], old: int, new: int) -> list[str]:
    return [x.replace(f"(pid:{old} ", f"(pid:{new} ") for x in lines]


def test_a_refusal_counted_from_another_process_s_line_is_not_the_pods() -> None:
    expect, evidence = tied("cluster")
    own = probe_line(evidence, "gpu-slice-a")["pod"]["pid"]
    edit_probe(evidence, "gpu-slice-a", lambda r: set_oom_lines(r, _repid(r["hami_oom_lines"], own, 99999)))
    logs = evidence["pods"]["gpu-slice-a"]["logs"].splitlines()
    evidence["pods"]["gpu-slice-a"]["logs"] = "\n".join(_repid(logs, own, 99999)) + "\n"
    failed = checks(expect, evidence)["memory-enforced"]
    assert failed["passed"] is False and "no HAMi-core line asking" in failed["observed"], failed["observed"]


def test_the_own_process_is_the_pid_the_probe_reports_not_the_first_lines() -> None:
    """A foreign line first (in the JSON and the log) and a line the library never printed for the probe's own
    process: the first line's pid is not the probe's, so the unprinted line is still the probe's and is caught."""
    expect, evidence = tied("cluster")
    r = probe_line(evidence, "gpu-slice-a")
    own, first = r["pod"]["pid"], r["hami_oom_lines"][0]
    foreign = first.replace(f"(pid:{own} ", "(pid:4242 ")
    forged = first.replace(" OOM ", " OOM 1").replace(f"(pid:{own} ", f"(pid:{own} ")
    edit_probe(evidence, "gpu-slice-a", lambda r: set_oom_lines(r, [foreign, *r["hami_oom_lines"], forged]))
    evidence["pods"]["gpu-slice-a"]["logs"] = foreign + "\n" + evidence["pods"]["gpu-slice-a"]["logs"]
    failed = checks(expect, evidence)["memory-enforced"]
    assert failed["passed"] is False and "the library never printed in the log" in failed["observed"]


def test_the_boundary_refusal_needs_the_librarys_line() -> None:
    expect, evidence = load("cluster")
    r = probe_line(evidence, "gpu-slice-a")
    ask = (r["visible_total_mib"] - r["visible_free_mib"] + r["largest_alloc_mib"] + 1) * MIB
    gone = [x for x in r["hami_oom_lines"] if abs(int(x.split("OOM ")[1].split(" /")[0]) - ask) <= 2 * MIB]
    assert gone, "the recorded run has the boundary's line"
    edit_probe(evidence, "gpu-slice-a", lambda r: set_oom_lines(r, [x for x in r["hami_oom_lines"] if x not in gone]))
    logs = evidence["pods"]["gpu-slice-a"]["logs"].splitlines()
    evidence["pods"]["gpu-slice-a"]["logs"] = "\n".join(x for x in logs if x not in gone) + "\n"
    failed = checks(expect, evidence)["memory-enforced"]
    assert failed["passed"] is False and "the boundary is not shown to be the quota's" in failed["observed"]


# ---------------------------------------------------------------- numbers and JSON


def test_nan_in_a_probe_line_is_not_json() -> None:
    expect, evidence = load("cluster")
    replace_line(evidence, "gpu-slice-a", '"largest_alloc_mib": 3482', '"largest_alloc_mib": NaN')
    not_judgeable(expect, evidence, "memory-enforced", field="NaN is not a JSON number")


def test_a_float_where_an_integer_belongs_is_not_judgeable() -> None:
    expect, evidence = load("cluster")
    edit_probe(evidence, "gpu-slice-a", lambda r: r.update(largest_alloc_mib=3482.0))
    not_judgeable(expect, evidence, "memory-enforced", field="largest_alloc_mib: 3482.0 is not an integer")


def test_a_string_where_an_integer_belongs_is_not_judgeable() -> None:
    expect, evidence = load("cluster")
    edit_probe(evidence, "gpu-slice-a", lambda r: r.update(visible_total_mib=str(r["visible_total_mib"])))
    not_judgeable(expect, evidence, "view-isolation", field="visible_total_mib")


def test_a_negative_rate_is_not_judgeable() -> None:
    expect, evidence = load("cluster")
    edit_probe(evidence, "gpu-slice-a", lambda r: r["shapes"]["short_many"].update(per_s_min=-1.0), "compute")
    not_judgeable(expect, evidence, "compute-limited", field="per_s_min")


def test_a_launch_count_that_implies_three_times_the_mean_is_not_judgeable() -> None:
    expect, evidence = load("cluster")
    edit_probe(evidence, "gpu-slice-a", lambda r: r["shapes"]["short_many"].update(
        launches=r["shapes"]["short_many"]["launches"] * 3), "compute")  # fmt: skip
    not_judgeable(expect, evidence, "compute-limited", field="short_many.launches")


def test_a_per_second_maximum_below_the_timelines_peak_is_not_judgeable() -> None:
    expect, evidence = load("cluster")
    edit_probe(evidence, "gpu-slice-a", lambda r: r["shapes"]["short_many"].update(
        per_s_max=r["shapes"]["short_many"]["per_s_max"] / 2), "compute")  # fmt: skip
    not_judgeable(expect, evidence, "compute-limited", field="below the timeline's peak")


def test_a_duplicate_json_key_is_refused_not_resolved() -> None:
    expect, evidence = load("cluster")
    twice = '"largest_alloc_mib": 9999, "largest_alloc_mib": 3482'
    replace_line(evidence, "gpu-slice-a", '"largest_alloc_mib": 3482', twice)
    not_judgeable(expect, evidence, "memory-enforced", field="appears twice")


def test_a_lone_surrogate_in_a_probe_line_is_not_utf8_text() -> None:
    expect, evidence = load("cluster")
    replace_line(evidence, "gpu-slice-a", '"gpu_name": "NVIDIA H200"', '"gpu_name": "NVIDIA H200 \\udcff"')
    not_judgeable(expect, evidence, "same-gpu", field="lone surrogate")


def test_the_monitors_usage_above_its_own_limit_is_not_judgeable() -> None:
    expect, evidence = load("kai")
    node = next(iter(evidence["metrics"]))
    lines = evidence["metrics"][node].splitlines()
    index = next(i for i, x in enumerate(lines) if x.startswith("hami_vgpu_memory_used_bytes") and "lab12-a" in x)
    lines[index] = lines[index].rsplit(" ", 1)[0] + " 9.9e+09"
    evidence["metrics"][node] = "\n".join(lines) + "\n"
    not_judgeable(expect, evidence, "monitor-metrics", field="above its own limit")


def test_the_same_series_twice_with_two_values_is_not_judgeable() -> None:
    expect, evidence = load("kai")
    node = next(iter(evidence["metrics"]))
    line = next(x for x in evidence["metrics"][node].splitlines() if x.startswith("hami_vgpu_memory_used_bytes"))
    evidence["metrics"][node] += line.rsplit(" ", 1)[0] + " 4.2e+09\n"
    not_judgeable(expect, evidence, "monitor-metrics", field="appears twice")


# ---------------------------------------------------------------- identity


def test_visible_devices_naming_the_card_and_a_third_uuid_fails_same_gpu() -> None:
    expect, evidence = load("cluster")
    edit_probe(evidence, "gpu-slice-a", lambda r: r["env"].update(
        NVIDIA_VISIBLE_DEVICES=r["gpu_uuid"] + ",GPU-00000000-0000-0000-0000-000000000003"))  # fmt: skip
    failed = checks(expect, evidence)["same-gpu"]
    assert failed["passed"] is False and "names cards beside" in failed["observed"], failed["observed"]


def test_an_allocation_naming_the_card_and_a_third_uuid_fails_same_gpu() -> None:
    expect, evidence = load("cluster")
    annotations = evidence["pods"]["gpu-slice-a"]["annotations"]
    card = annotations[expect.allocation_annotation].split(",")[0]
    annotations[expect.allocation_annotation] = (
        f"{card},NVIDIA,4000,30:GPU-00000000-0000-0000-0000-000000000003,NVIDIA,4000,30:;"
    )
    failed = checks(expect, evidence)["same-gpu"]
    assert failed["passed"] is False and "cards beside" in failed["observed"], failed["observed"]


def test_a_node_registration_listing_one_card_twice_is_not_judgeable() -> None:
    expect, evidence = load("cluster")
    node = evidence["nodes"]["node"]["annotations"]
    devices = json.loads(node["hami.io/node-nvidia-register"])
    node["hami.io/node-nvidia-register"] = json.dumps([*devices, {**devices[0], "devmem": 1}])
    not_judgeable(expect, evidence, "quota-injection", field="twice")


def test_two_cards_registered_for_one_cards_slots_fail_quota_injection() -> None:
    expect, evidence = load("cluster")
    node = evidence["nodes"]["node"]["annotations"]
    devices = json.loads(node["hami.io/node-nvidia-register"])
    node["hami.io/node-nvidia-register"] = json.dumps(
        [*devices, {**devices[0], "id": "GPU-00000000-0000-0000-0000-000000000003"}])  # fmt: skip
    failed = checks(expect, evidence)["quota-injection"]
    assert failed["passed"] is False and "registers 2 cards" in failed["observed"], failed["observed"]


def test_an_allocation_of_all_cores_while_the_env_says_30_fails_same_gpu() -> None:
    expect, evidence = load("cluster")
    annotations = evidence["pods"]["gpu-slice-a"]["annotations"]
    annotations[expect.allocation_annotation] = annotations[expect.allocation_annotation].replace(",30:", ",100:")
    failed = checks(expect, evidence)["same-gpu"]
    assert failed["passed"] is False and "CUDA_DEVICE_SM_LIMIT=30" in failed["observed"], failed["observed"]
