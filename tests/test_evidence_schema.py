"""The declared schemas are the one source: the committed JSON Schema files are theirs, every recorded run fits them,
every committed host-proof record judges as it was recorded, check by check, and (properties) any value the schemas
allow is judged without a crash while any single edit that breaks a declared invariant fails the checks reading it.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from components.incluster import judge
from components.incluster.evidence.allocation_schema import ALLOCATION
from components.incluster.evidence.bandwidth_schema import BANDWIDTH
from components.incluster.evidence.compute_schema import COMPUTE
from components.incluster.evidence.fault_schema import FAULT
from components.incluster.evidence.memory_schema import MEMORY
from components.incluster.evidence.object_schema import EVENT, NODE, POD, WATCH_ENTRY
from components.incluster.evidence.probe_fields import PROVENANCE
from components.incluster.evidence.schema import invariants, validate
from components.incluster.evidence.strict import NotJudgeable
from components.verify import evidence_schema
from components.verify.host import neighbours, record
from tests.conftest import ROOT
from tests.helpers import neighbour_steps
from tests.helpers import schema_strategies as schemas
from tests.helpers.recorded import edit_probe, load, probe_line
from tests.helpers.tied import tied

HOST_PROOF = ROOT / "docs" / "host-proof" / "h200"
RECORDS = sorted(p.parent for p in HOST_PROOF.rglob("expect.json"))
REAL = sorted((ROOT / "tests" / "fixtures" / "real").rglob("evidence.json"))
EXAMPLES = settings(max_examples=40, deadline=None)


def validator(name: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(json.loads((evidence_schema.FOLDER / name).read_text()))


def test_the_committed_json_schemas_are_the_declared_ones() -> None:
    assert evidence_schema.main([]) == 0
    for name in evidence_schema.documents():
        jsonschema.Draft202012Validator.check_schema(json.loads((evidence_schema.FOLDER / name).read_text()))


@pytest.mark.parametrize("path", [*sorted(HOST_PROOF.rglob("evidence.json")), *REAL],
                         ids=lambda p: str(p.relative_to(ROOT)))  # fmt: skip
def test_every_recorded_host_run_fits_the_json_schema(path: Path) -> None:
    errors = list(validator("host-evidence.schema.json").iter_errors(json.loads(path.read_text())))
    assert not errors, [(list(e.absolute_path), e.message[:200]) for e in errors[:3]]


@pytest.mark.parametrize("stack", ["kai", "k3s", "cluster"])
def test_every_recorded_cluster_run_and_its_probe_lines_fit_the_json_schemas(stack: str) -> None:
    _, evidence = load(stack)
    assert not list(validator("evidence.schema.json").iter_errors(evidence))
    for name in evidence["pods"]:
        for probe in ("memory", "compute"):
            try:
                line = probe_line(evidence, name, probe)
            except LookupError:
                continue
            assert not list(validator(f"{probe}.schema.json").iter_errors(line)), (name, probe)


# ---------------------------------------------------------------- the recorded runs judge as they were recorded


def _logs(outputs: dict[str, Any]) -> dict[str, Any]:
    """A record's probe output as Pod logs, as record.rejudge rebuilds them."""
    return neighbour_steps.logs(outputs)


def _judged(folder: Path, outputs: dict[str, Any]) -> dict[str, Any]:
    verdict = json.loads((folder / "verdict.json").read_text())
    expect = neighbours.fitted(record._expectation(folder, verdict), outputs)  # as its Pods ran: steps or none
    judged = judge.judge(expect, {"pods": _logs(outputs)})
    return {c["id"]: c["passed"] for c in judged["checks"]}


def _recorded(folder: Path) -> dict[str, Any]:
    checks = json.loads((folder / "verdict.json").read_text())["checks"]
    return {c["id"]: c["passed"] for c in checks if c["passed"] is not None}


@pytest.mark.parametrize("folder", RECORDS, ids=lambda p: str(p.relative_to(HOST_PROOF)))
def test_every_committed_host_proof_record_judges_as_recorded_check_by_check(folder: Path) -> None:
    outputs = {p: o for p, o in json.loads((folder / "evidence.json").read_text()).items() if p != "alone"}
    judged, recorded = _judged(folder, outputs), _recorded(folder)
    assert recorded and {k: judged[k] for k in recorded} == recorded


@pytest.mark.parametrize("fixture", [p.parent.name for p in REAL])
def test_every_real_fixture_judges_as_the_record_it_was_copied_from(fixture: str) -> None:
    source = HOST_PROOF / record.FIXTURE_RUNS[fixture]
    copied = json.loads((ROOT / "tests" / "fixtures" / "real" / "h200" / fixture / "evidence.json").read_text())
    outputs = {p: o for p, o in copied.items() if p != "alone"}
    judged, recorded = _judged(source, outputs), _recorded(source)
    assert recorded and {k: judged[k] for k in recorded} == recorded


# ---------------------------------------------------------------- values the schemas allow


@EXAMPLES
@given(data=st.data())
@pytest.mark.parametrize("schema", [POD, NODE, EVENT, WATCH_ENTRY, PROVENANCE], ids=["pod", "node", "event", "watch",
                                                                                    "provenance"])  # fmt: skip
def test_a_value_the_schemas_generate_is_valid_and_the_json_schema_agrees(schema: Any, data: st.DataObject) -> None:
    value = data.draw(schemas.values(schema))
    try:
        checked = validate(schema, value, "x")
    except NotJudgeable:
        assume(False)
    assert checked == value
    jsonschema.Draft202012Validator(schema.json()).validate(value)


@cache
def _cluster() -> tuple[Any, str]:
    expect, evidence = load("cluster")
    return expect, json.dumps(evidence)


def _run() -> tuple[Any, dict[str, Any]]:
    expect, text = _cluster()
    return expect, json.loads(text)


@EXAMPLES
@given(
    data=st.data(), pod=st.sampled_from(["gpu-slice-a", "gpu-slice-b"]), probe=st.sampled_from(["memory", "compute"])
)
def test_any_valid_record_is_judged_without_a_crash(data: st.DataObject, pod: str, probe: str) -> None:
    """A recorded result with one leaf redrawn from its kind: if the record takes it, the JSON Schema takes it, and
    no check fails for want of a number it did not check (`could not judge`)."""
    expect, evidence = _run()
    result = probe_line(evidence, pod, probe)
    path, kind = data.draw(st.sampled_from(schemas.leaves(PROBES[probe], result)))
    schemas.put(result, path, data.draw(schemas.values(kind)))
    try:
        validate(PROBES[probe], result, "x")
    except NotJudgeable:
        assume(False)
    jsonschema.Draft202012Validator(PROBES[probe].json()).validate(result)
    edit_probe(evidence, pod, lambda r: (r.clear(), r.update(result)), probe)
    assert not [c for c in judge.judge(expect, evidence)["checks"] if "could not judge" in c["observed"]]


PROBES = {"memory": MEMORY, "compute": COMPUTE, "fault": FAULT, "bandwidth": BANDWIDTH}
READS = {"memory": ("same-gpu", "memory-enforced", "neighbor-isolation", "preload-mechanism"),
         "compute": ("compute-limited",), "fault": ("fault-isolation",), "bandwidth": ()}  # fmt: skip
FINDINGS_READING = {"bandwidth": "bandwidth-neighbour"}
"""A probe no check reads is read by a finding: not judgeable, it says so (bypassed null and why)."""


def _fails_reading(expect: Any, evidence: dict[str, Any], check_ids: tuple[str, ...], probe: str = "") -> None:
    verdict = judge.judge(expect, evidence)
    found = {c["id"]: c for c in verdict["checks"]}
    for check_id in check_ids:
        assert found[check_id]["passed"] is False and "not judgeable: " in found[check_id]["observed"], check_id
    if probe in FINDINGS_READING:
        got = next(f for f in verdict["findings"] if f["id"] == FINDINGS_READING[probe])
        assert got["bypassed"] is None and "not judgeable: " in got["why"], got


@EXAMPLES
@given(
    data=st.data(), pod=st.sampled_from(["gpu-slice-a", "gpu-slice-b"]), probe=st.sampled_from(["memory", "compute"])
)
def test_a_leaf_of_the_wrong_kind_fails_every_check_that_reads_it(data: st.DataObject, pod: str, probe: str) -> None:
    expect, evidence = _run()
    result = probe_line(evidence, pod, probe)
    path, kind = data.draw(st.sampled_from([x for x in schemas.leaves(PROBES[probe], result) if x[0] != ("probe",)]))
    schemas.put(result, path, data.draw(schemas.wrong(kind)))
    edit_probe(evidence, pod, lambda r: (r.clear(), r.update(result)), probe)
    _fails_reading(expect, evidence, READS[probe])


# ---------------------------------------------------------------- every declared invariant, broken one edit at a time


def _shape(r: dict[str, Any]) -> dict[str, Any]:
    return r["shapes"]["short_many"]


def _swap(d: dict[str, Any], a: str, b: str) -> None:
    d[a], d[b] = d[b], d[a]


def _twice(findings: list[dict[str, Any]], k: int) -> None:
    findings.append(copy.deepcopy(findings[k % len(findings)]))


def _charge(r: dict[str, Any]) -> dict[str, Any]:
    return next(f for f in r["findings"] if f["id"] == "context-charge")


def _found_beside_failure(pid: int, at: str) -> dict[str, Any]:
    line = f"[HAMI-core ERROR (pid:{pid} thread=1 utils.c:158)]: host pid is error!"
    return {"lines": [line], "host_pid_found": True, "context_at": at}


Break = Callable[[dict[str, Any], int], None]
BREAKS: dict[tuple[str, str], Break] = {
    ("memory", "ok-without-error"): lambda r, k: r.update(error=f"error {k}"),
    ("memory", "view-free-within-total"): lambda r, k: r.update(visible_free_mib=r["visible_total_mib"] + k),
    ("memory", "nvml-free-within-total"): lambda r, k: r.update(nvml_free_mib=r["nvml_total_mib"] + k),
    ("memory", "largest-within-view"): lambda r, k: r.update(largest_alloc_mib=r["visible_total_mib"] + k),
    ("memory", "allocation-needs-a-card"): lambda r, k: r.update(gpu_uuid=None),
    ("memory", "context-is-quota-less-largest"): lambda r, k: r.update(
        context_overhead_mib=r["context_overhead_mib"] + k
    ),
    ("memory", "chunks-add-up"): lambda r, k: r["phases"]["chunks"].update(
        allocated_mib=r["phases"]["chunks"]["allocated_mib"] + k
    ),
    ("memory", "oom-lines-are-the-librarys"): lambda r, k: r["enforcement"].update(
        oom_lines=r["enforcement"]["oom_lines"] + k
    ),
    ("memory", "hold-in-order"): lambda r, k: _swap(r["phases"]["hold"], "started_at", "ended_at"),
    ("memory", "memory-times-in-order"): lambda r, k: _swap(r, "started_at", "ended_at"),
    ("memory", "findings-once"): lambda r, k: _twice(r["findings"], k),
    ("memory", "context-charge-agrees"): lambda r, k: _charge(r).update(charged_mib=_charge(r)["charged_mib"] + k),
    ("memory", "env-less-agrees"): lambda r, k: r["findings"].append(
        {
            "id": "env-less-process",
            "tried": "t",
            "observed": "o",
            "bypassed": True,
            "largest_mib": 2 * r["expected_limit_mib"],
            "quota_mib": r["expected_limit_mib"] + k,
        }
    ),
    ("compute", "ok-without-error"): lambda r, k: r.update(error=f"error {k}"),
    ("compute", "shape-agrees-with-its-timeline"): lambda r, k: _shape(r).update(
        launches=_shape(r)["launches"] * (k + 2)
    ),
    ("compute", "judged-shape-window"): lambda r, k: r.update(window_s=r["window_s"] + k),
    ("compute", "compute-times-in-order"): lambda r, k: _swap(r, "started_at", "ended_at"),
    ("compute", "lookup-agrees"): lambda r, k: r.update(lookup=_found_beside_failure(k, r["started_at"])),
    ("compute", "findings-once"): lambda r, k: _twice(r["findings"], k),
}


def _other_pod(r: dict[str, Any], k: int) -> None:
    r["pod"] = {"name": "x", "uid": "u", "namespace": "n", "node": "h", "pid": r["pid"] + k, "children": []}


def _append(line: dict[str, Any], k: int) -> None:
    line["per_s"].append(k)


A, B = neighbour_steps.NEIGHBOUR, neighbour_steps.DISTURBER
STEP_BREAKS: dict[tuple[str, str], tuple[str, Break]] = {
    ("fault", "ok-without-error"): (B, lambda r, k: r.update(error=f"error {k}")),
    ("fault", "fault-role-fields"): (A, lambda r, k: r.update(fault_at=r["started_at"])),
    ("fault", "fault-times-in-order"): (A, lambda r, k: _swap(r, "started_at", "ended_at")),
    ("fault", "error-has-its-instant"): (B, lambda r, k: r.update(cuda_error_at=None)),
    ("fault", "fault-children-once"): (B, lambda r, k: r["children"][1].update(pid=r["children"][0]["pid"])),
    ("fault", "neighbour-agrees-with-its-timeline"): (A, lambda r, k: r.update(launches=r["launches"] + k)),
    ("fault", "faulter-in-order"): (B, lambda r, k: r.update(fault_at=r["started_at"])),
    ("fault", "fault-pod-is-this-process"): (A, _other_pod),
    ("fault", "timeline-length"): (A, lambda r, k: _append(r["timeline"], k)),
    ("fault", "child-times-in-order"): (A, lambda r, k: _swap(r["children"][0], "started_at", "ended_at")),
    ("bandwidth", "ok-without-error"): (A, lambda r, k: r.update(error=f"error {k}")),
    ("bandwidth", "bandwidth-roles"): (A, lambda r, k: r.update(delay_s=k)),
    ("bandwidth", "bandwidth-times-in-order"): (A, lambda r, k: _swap(r, "started_at", "ended_at")),
    ("bandwidth", "error-has-its-instant"): (B, lambda r, k: r.update(cuda_error_at=r["ended_at"])),
    ("bandwidth", "bandwidth-agrees-with-its-timeline"): (A, lambda r, k: r["gbps"].update(mean=r["gbps"]["mean"]
                                                                                             + k)),
    ("bandwidth", "bandwidth-pod-is-this-process"): (B, _other_pod),
    ("bandwidth", "timeline-length"): (A, lambda r, k: _append(r["timeline"], k)),
    ("bandwidth", "copy-moves-both-buffers"): (A, lambda r, k: r["copy"].update(bytes_per_copy=r["copy"][
        "bytes_per_copy"] + k)),
}  # fmt: skip


def test_every_declared_invariant_has_an_edit_that_breaks_it() -> None:
    declared = {(probe, i.name) for probe, schema in PROBES.items() for i in invariants(schema)}
    objects = {i.name for i in invariants(POD)}
    assert declared == set(BREAKS) | set(STEP_BREAKS) and objects == {"watch-in-order"}


@EXAMPLES
@given(run=st.sampled_from(neighbour_steps.RUNS), k=st.integers(1, 10_000))
@pytest.mark.parametrize("broken", sorted(STEP_BREAKS), ids=lambda b: f"{b[0]}-{b[1]}")
def test_an_edit_that_breaks_a_steps_invariant_fails_what_reads_it(broken: tuple[str, str], run: str, k: int) -> None:
    probe, _ = broken
    pod, edit = STEP_BREAKS[broken]
    results = neighbour_steps.outputs(run)
    edit(results[pod][probe], k)
    with pytest.raises(NotJudgeable):
        validate(PROBES[probe], results[pod][probe], "x")
    _fails_reading(neighbour_steps.expectation(run), {"pods": neighbour_steps.logs(results)}, READS[probe], probe)


@EXAMPLES
@given(
    data=st.data(),
    run=st.sampled_from(neighbour_steps.RUNS),
    pod=st.sampled_from([A, B]),
    probe=st.sampled_from(["fault", "bandwidth"]),
)
def test_a_steps_leaf_redrawn_or_of_the_wrong_kind_is_judged_without_a_crash_or_refused(
    data: st.DataObject, run: str, pod: str, probe: str
) -> None:
    """One leaf of a recorded step redrawn within its kind: if the record takes it, the JSON Schema does and nothing
    fails for want of a number it did not check; of the wrong kind, everything reading it is not judgeable."""
    results = neighbour_steps.outputs(run)
    result = results[pod][probe]
    leaves = [x for x in schemas.leaves(PROBES[probe], result) if x[0] not in (("probe",), ("role",))]
    path, kind = data.draw(st.sampled_from(leaves))
    wrong = data.draw(st.booleans())
    schemas.put(result, path, data.draw(schemas.wrong(kind) if wrong else schemas.values(kind)))
    expect, evidence = neighbour_steps.expectation(run), {"pods": neighbour_steps.logs(results)}
    if wrong:
        _fails_reading(expect, evidence, READS[probe], probe)
        return
    try:
        validate(PROBES[probe], result, "x")
    except NotJudgeable:
        assume(False)
    jsonschema.Draft202012Validator(PROBES[probe].json()).validate(result)
    verdict = judge.judge(expect, evidence)
    assert not [c for c in verdict["checks"] if "could not judge" in c["observed"]]


@EXAMPLES
@given(pod=st.sampled_from(["gpu-slice-a", "gpu-slice-b"]), k=st.integers(1, 10_000))
@pytest.mark.parametrize("broken", sorted(BREAKS), ids=lambda b: f"{b[0]}-{b[1]}")
def test_an_edit_that_breaks_an_invariant_fails_the_checks_that_read_it(
    broken: tuple[str, str], pod: str, k: int
) -> None:
    probe, _ = broken
    expect, evidence = _run()
    result = probe_line(evidence, pod, probe)
    BREAKS[broken](result, k)
    with pytest.raises(NotJudgeable):
        validate(PROBES[probe], result, "x")
    edit_probe(evidence, pod, lambda r: (r.clear(), r.update(result)), probe)
    _fails_reading(expect, evidence, READS[probe])


def test_a_watch_that_runs_backwards_fails_the_overcommit_check() -> None:
    expect, evidence = tied("cluster")
    watch = evidence["pods"][expect.overcommit_pod]["watch"]
    watch[0]["at"], watch[-1]["at"] = watch[-1]["at"], watch[0]["at"]
    found = next(c for c in judge.judge(expect, evidence)["checks"] if c["id"] == "overcommit-rejected")
    assert found["passed"] is False and "the watch runs backwards" in found["observed"]


def test_the_verification_page_names_every_invariant_and_what_each_check_reads() -> None:
    from components.incluster.checks.registry import CHECKS

    text = (ROOT / "docs" / "verification.md").read_text()
    names = {i.name for schema in (MEMORY, COMPUTE, FAULT, BANDWIDTH, ALLOCATION, POD) for i in invariants(schema)}
    assert [n for n in sorted(names) if f"`{n}`" not in text] == []
    table = text[text.index("**Which check reads which part**") :]
    assert [c.id for c in CHECKS if f"`{c.id}`" not in table.split("\n\n")[1]] == []
