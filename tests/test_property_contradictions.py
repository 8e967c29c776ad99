"""Property: any single edit that makes a recorded run contradict itself fails the check that reads the edited fact.

Each property draws one edit (hypothesis) of one kind to a recorded run that passes (tests/fixtures), and asserts
the check that reads that fact fails; the kinds are the pairs docs/verification.md says each check compares.
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Callable
from datetime import UTC, datetime
from functools import cache
from typing import Any

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from components.incluster import judge
from components.incluster.evidence.parse import timestamp
from tests.helpers.recorded import edit_probe, load, probe_line

EXAMPLES = settings(max_examples=25, deadline=None)


@cache
def _recorded(stack: str) -> tuple[Any, str]:
    expect, evidence = load(stack)
    assert judge.judge(expect, evidence)["passed"] is True
    return expect, json.dumps(evidence)


def run(stack: str) -> tuple[Any, dict[str, Any]]:
    expect, text = _recorded(stack)
    return expect, json.loads(text)


def fails(expect: Any, evidence: dict[str, Any], check_id: str) -> bool:
    return next(c for c in judge.judge(expect, evidence)["checks"] if c["id"] == check_id)["passed"] is False


pods = st.sampled_from(["gpu-slice-a", "gpu-slice-b"])


# ---------------------------------------------------------------- memory-enforced


@EXAMPLES
@given(pod=pods, past=st.integers(1, 100_000))
def test_an_allocation_past_the_quota_fails_memory_enforced(pod: str, past: int) -> None:
    expect, evidence = run("cluster")
    edit_probe(evidence, pod, lambda r: r.update(largest_alloc_mib=int(expect.limit_mib) + past))
    assert fails(expect, evidence, "memory-enforced")


@EXAMPLES
@given(pod=pods, shift=st.integers(-4000, 4000).filter(lambda d: abs(d) > 1))
def test_a_view_that_disagrees_with_the_largest_allocation_fails_memory_enforced(pod: str, shift: int) -> None:
    expect, evidence = run("cluster")
    edit_probe(evidence, pod, lambda r: r.update(visible_free_mib=r["visible_free_mib"] + shift))
    assert fails(expect, evidence, "memory-enforced")


@EXAMPLES
@given(pod=pods, got=st.integers(0, 200_000))
def test_chunks_that_disagree_with_the_largest_allocation_fail_memory_enforced(pod: str, got: int) -> None:
    expect, evidence = run("cluster")
    largest = probe_line(evidence, pod)["largest_alloc_mib"]
    if largest - 256 < got <= largest + 1:
        got += 512  # an edit that keeps the two in agreement is no contradiction
    edit_probe(evidence, pod, lambda r: r["phases"]["chunks"].update(allocated_mib=got))
    assert fails(expect, evidence, "memory-enforced")


@EXAMPLES
@given(pod=pods, index=st.integers(0, 6), requested=st.integers(1, 4_194_304_000), limit=st.booleans())
def test_an_oom_line_the_library_never_prints_fails_memory_enforced(pod: str, index: int, requested: int,
                                                                    limit: bool) -> None:  # fmt: skip
    """One library line, in the JSON and the log alike, rewritten: a request within the limit, or another limit."""
    expect, evidence = run("cluster")
    old = probe_line(evidence, pod)["hami_oom_lines"][index]
    head, numbers = old.split(" OOM ")
    new = f"{head} OOM {requested} / {expect.limit_bytes}" if not limit else (
        f"{head} OOM {numbers.split(' / ')[0]} / {expect.limit_bytes + requested}")  # fmt: skip
    evidence["pods"][pod]["logs"] = evidence["pods"][pod]["logs"].replace(old, new)
    assert fails(expect, evidence, "memory-enforced")


@EXAMPLES
@given(pod=pods, index=st.integers(0, 6))
def test_a_library_line_missing_from_the_probes_json_fails_memory_enforced(pod: str, index: int) -> None:
    expect, evidence = run("cluster")
    edit_probe(evidence, pod, lambda r: r["hami_oom_lines"].pop(index))
    assert fails(expect, evidence, "memory-enforced")


@EXAMPLES
@given(pod=pods, held=st.integers(1, 100_000).filter(lambda m: m != 3072))
def test_a_hold_of_another_size_than_planned_fails_memory_enforced(pod: str, held: int) -> None:
    expect, evidence = run("cluster")
    edit_probe(evidence, pod, lambda r: r["phases"]["hold"].update(hold_mib=held))
    assert fails(expect, evidence, "memory-enforced")


# ---------------------------------------------------------------- a result tied to its Pod


@EXAMPLES
@given(pod=pods, early=st.integers(6, 10**8))
def test_a_result_from_before_its_pod_fails_every_check_that_reads_it(pod: str, early: int) -> None:
    expect, evidence = run("cluster")
    started = timestamp(probe_line(evidence, pod)["started_at"])
    assert started is not None
    created = datetime.fromtimestamp(started + early, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    evidence["pods"][pod]["creationTimestamp"] = created
    assert all(fails(expect, evidence, c) for c in ("same-gpu", "memory-enforced", "neighbor-isolation"))


@EXAMPLES
@given(source=pods)
def test_one_pods_result_given_as_both_fails_memory_enforced(source: str) -> None:
    expect, evidence = run("cluster")
    other = "gpu-slice-b" if source == "gpu-slice-a" else "gpu-slice-a"
    copied = probe_line(evidence, source)
    edit_probe(evidence, other, lambda r: (r.clear(), r.update(copy.deepcopy(copied))))
    assert fails(expect, evidence, "memory-enforced")


@EXAMPLES
@given(pod=pods, uuid=st.uuids())
def test_a_pod_on_another_card_fails_same_gpu(pod: str, uuid: Any) -> None:
    expect, evidence = run("cluster")
    edit_probe(evidence, pod, lambda r: r.update(gpu_uuid=f"GPU-{uuid}"))
    assert fails(expect, evidence, "same-gpu")


# ---------------------------------------------------------------- compute-limited


def _compute(evidence: dict[str, Any], change: Callable[[dict[str, Any]], None]) -> None:
    edit_probe(evidence, "gpu-slice-a", change, "compute")


@EXAMPLES
@given(delta=st.floats(-0.29, 0.7).filter(lambda d: abs(d) > 0.006))
def test_a_reported_share_that_is_not_the_two_means_quotient_fails_compute_limited(delta: float) -> None:
    expect, evidence = run("cluster")
    _compute(evidence, lambda r: r["share"].update(short_many=round(r["share"]["short_many"] + delta, 3)))
    assert fails(expect, evidence, "compute-limited")


@EXAMPLES
@given(factor=st.floats(0.1, 10).filter(lambda f: abs(f - 1) > 0.03))
def test_a_mean_its_timeline_does_not_average_to_fails_compute_limited(factor: float) -> None:
    expect, evidence = run("cluster")
    _compute(evidence, lambda r: r["shapes"]["short_many"].update(mean_per_s=r["shapes"]["short_many"]["mean_per_s"]
                                                                   * factor))  # fmt: skip
    assert fails(expect, evidence, "compute-limited")


@EXAMPLES
@given(length=st.integers(0, 60))
def test_a_timeline_of_another_length_than_its_window_fails_compute_limited(length: int) -> None:
    expect, evidence = run("cluster")
    judged = probe_line(evidence, "gpu-slice-a", "compute")["shapes"]["short_many"]
    assume(length != round(judged["warmup_s"] + judged["window_s"]))  # the recorded run's own length

    def resize(r: dict[str, Any]) -> None:
        line = r["shapes"]["short_many"]["timeline_per_s"]
        r["shapes"]["short_many"]["timeline_per_s"] = (line * 3)[:length]

    _compute(evidence, resize)
    assert fails(expect, evidence, "compute-limited")


@EXAMPLES
@given(key=st.sampled_from(["blocks", "threads", "iters"]), value=st.integers(1, 10**6))
def test_a_baseline_of_other_launches_fails_compute_limited(key: str, value: int) -> None:
    expect, evidence = run("cluster")
    base = probe_line(evidence, "gpu-slice-a", "compute")["baseline"]["shapes"]["short_many"]
    if base[key] == value:
        value += 1
    _compute(evidence, lambda r: r["baseline"]["shapes"]["short_many"].update({key: value}))
    assert fails(expect, evidence, "compute-limited")


# ---------------------------------------------------------------- cluster objects


@EXAMPLES
@given(asked=st.integers(1, 200_000).filter(lambda m: m != 10000))
def test_an_overcommit_pod_asking_other_than_planned_fails_overcommit_rejected(asked: int) -> None:
    expect, evidence = run("cluster")
    evidence["pods"]["gpu-slice-oversubscribe"]["resources"]["limits"]["nvidia.com/gpumem"] = str(asked)
    assert fails(expect, evidence, "overcommit-rejected")


@EXAMPLES
@given(devmem=st.integers(0, 200_000).filter(lambda m: m != 15360))
def test_a_registration_of_another_card_size_fails_quota_injection(devmem: int) -> None:
    expect, evidence = run("cluster")
    node = evidence["nodes"]["node"]["annotations"]
    node["hami.io/node-nvidia-register"] = node["hami.io/node-nvidia-register"].replace(
        '"devmem":15360', f'"devmem":{devmem}')  # fmt: skip
    assert fails(expect, evidence, "quota-injection")


@EXAMPLES
@given(value=st.sampled_from([math.nan, math.inf, -math.inf]) | st.floats(0, 3.2e9))
def test_a_monitor_usage_below_the_hold_or_not_a_number_fails_monitor_metrics(value: float) -> None:
    expect, evidence = run("kai")
    node = next(iter(evidence["metrics"]))
    text = evidence["metrics"][node]
    shown = {math.inf: "+Inf", -math.inf: "-Inf"}.get(value, "NaN" if math.isnan(value) else repr(value))
    evidence["metrics"][node] = text.replace("} 3.328180224e+09", "} " + shown, 1)
    assert fails(expect, evidence, "monitor-metrics")
