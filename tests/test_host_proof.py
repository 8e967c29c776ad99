"""The host proof without a GPU: what it takes from the plan, what each Pod process gets, how it is judged.

The judging tests feed the judge the H200's recorded host-proof output (tests/fixtures/real/h200), unedited.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from components.incluster import judge, message, verifier
from components.incluster.expectation import Expectation
from components.verify import phases
from components.verify.host import expectation
from components.verify.host.proof import HostOptions, pod_env, pod_steps, prove
from components.verify.host.runner import STRIPPED_ENV, clean_env, mps_client_env
from tests.helpers import real_fixtures, recorded
from tests.helpers.probes import ROOT, module_argv

REAL = real_fixtures.REAL


@pytest.fixture(scope="module")
def cluster() -> dict[str, Any]:
    return expectation.host_plan("cluster", ["gpushare:verify.podPrefix=gpu-slice"])  # as the H200 record ran it


def _judged(record: str, stack: dict[str, Any], mechanism: str = "hami-core") -> dict[str, Any]:
    outputs = real_fixtures.real_outputs(record)
    uuid = next(iter(outputs.values()))["memory"]["gpu_uuid"]
    for out in outputs.values():  # the edit: the card named as the host proof names it now (NVIDIA_VISIBLE_DEVICES)
        for result in out.values():
            result["env"]["NVIDIA_VISIBLE_DEVICES"] = uuid
    evidence = {"pods": {pod: {"phase": "Succeeded", "nodeName": "h200", "logs": real_fixtures.probe_log(out)}
                         for pod, out in outputs.items()}}  # fmt: skip
    expect = expectation.host_expect(stack["expect"], mechanism, stack["expect"]["limitEnv"])
    expect = replace(expect, provenance=False)  # recorded before the probes printed their Pod
    return {c["id"]: c for c in judge.judge(before_the_steps(expect), evidence)["checks"]}


def before_the_steps(expect: Any) -> Any:
    """The expectation of a run recorded before the Pods ran the fault, bandwidth and allocation steps (no
    fault-isolation, no allocation-paths)."""
    later = ("fault-isolation", "allocation-paths")
    return replace(expect, checks=tuple(c for c in expect.checks if c not in later), allocation_paths=False)


def test_the_plan_gives_each_proof_pods_probe_arguments(cluster: dict[str, Any]) -> None:
    pods = cluster["pods"]
    assert list(pods) == ["gpu-slice-a", "gpu-slice-b"]
    assert pods["gpu-slice-a"]["compute"] == ["--json", "--seconds", "20", "--baseline", "child"]
    assert "compute" not in pods["gpu-slice-b"]  # in a cluster only A measures compute
    memory = pods["gpu-slice-b"]["memory"]
    assert memory[memory.index("--expect-limit-mib") + 1] == "4000" and "--findings" in memory
    assert cluster["expect"]["coresPercent"] == 30 and cluster["expect"]["limitBytes"] == 4000 * 2**20


def test_the_host_runs_each_pods_fault_and_bandwidth_steps_first_with_its_own_windows(
    cluster: dict[str, Any], tmp_path: Path
) -> None:
    pods = cluster["pods"]
    assert list(pods["gpu-slice-a"]) == ["fault", "bandwidth", "compute", "allocation_paths", "memory"]  # its order
    assert list(pods["gpu-slice-b"]) == ["fault", "bandwidth", "allocation_paths", "memory"]
    options = HostOptions(setup="hami-core", workdir=tmp_path, lib="/x/libvgpu.so", stagger_seconds=3.0)
    env = pod_env(cluster["expect"], options, "gpu-slice-b")
    steps = pod_steps(pods["gpu-slice-b"], env, options, ["--baseline", "b.json"], computes=True)
    modules = [argv[2] for argv, _ in steps]
    order = ("fault", "bandwidth", "compute", "allocation_paths", "memory")
    assert modules == [f"components.incluster.probes.{p}" for p in order]
    assert steps[3][0][-2:] == ["--mechanism", "hami-core"]  # the allocation step told the host's mechanism
    assert all(step_env is env for _, step_env in steps)  # one container: one cache file for every step
    fault_argv, hog_argv = steps[0][0], steps[1][0]
    host = phases.host(3.0)
    assert fault_argv[fault_argv.index("--window") + 1] == f"{host.fault_window_s:g}"
    assert fault_argv[fault_argv.index("--delay") + 1] == f"{host.fault_delay_s:g}"
    assert hog_argv[hog_argv.index("--role") + 1] == "hog" and hog_argv[-2:] == ["--mechanism", "hami-core"]
    assert host.fault_window_s < phases.CLUSTER.fault_window_s


def test_a_probe_run_as_a_module_is_found_in_the_pods_shell_command() -> None:
    found = expectation.probe_argv(["/bin/sh", "-c", "python3 -m gpushare.fault --json --role neighbour; "
                                    "exec python3 /gpushare/memory.py --json"])  # fmt: skip
    assert found == {"fault": ["--json", "--role", "neighbour"], "memory": ["--json"]}


def test_a_pod_command_without_a_memory_probe_is_refused() -> None:
    with pytest.raises(expectation.ExpectationError, match="no memory probe"):
        expectation.probe_argv(["sleep", "infinity"])


def test_host_memory_arguments_drop_the_pod_only_flags_and_take_the_hosts_hold() -> None:
    argv = ["--json", "--hold-seconds", "30", "--result-file", "/dev/termination-log", "--ready-file", "/tmp/r",
            "--keep-holding", "3072", "--findings"]  # fmt: skip
    assert expectation.host_memory_argv(argv, 5, "hami-core") == [
        "--json", "--hold-seconds", "5", "--findings", "--mechanism", "hami-core"
    ]  # fmt: skip
    assert expectation.host_memory_argv(argv, None, "mps")[:3] == ["--json", "--hold-seconds", "30"]


def test_the_host_expectation_leaves_out_what_only_a_cluster_shows(cluster: dict[str, Any]) -> None:
    expect = expectation.host_expect(cluster["expect"], "hami-core", cluster["expect"]["limitEnv"], 143771)
    assert "overcommit-rejected" in cluster["expect"]["checks"] and "overcommit-rejected" not in expect.checks
    assert expect.allocation_annotation is None and expect.node_registration is None and expect.pod_tries == ()
    assert expect.compute_pods == ("gpu-slice-a",)  # as the plan has it: A computes, B beside it does not
    assert expect.card_mib == 143771 and expect.visible_mib == 4000
    mps = expectation.host_expect(cluster["expect"], "mps", {"CUDA_MPS_PINNED_DEVICE_MEM_LIMIT": "0=4000M"}, 143771)
    assert mps.visible_mib == 143771 and mps.preload_library is None and "preload-mechanism" not in mps.checks


def test_each_pod_process_gets_its_own_cache_file_and_the_library_only_under_hami_core(tmp_path: Path) -> None:
    expect = {"limitEnv": {"CUDA_DEVICE_MEMORY_LIMIT_0": "4000m"}, "coresPercent": 30, "visibleMiB": 4000}
    lib = HostOptions(setup="hami-core", workdir=tmp_path, lib="/opt/libvgpu.so")
    a, b = pod_env(expect, lib, "a"), pod_env(expect, lib, "b")
    assert a["LD_PRELOAD"] == "/opt/libvgpu.so" and a["CUDA_DEVICE_SM_LIMIT"] == "30"
    assert a["CUDA_DEVICE_MEMORY_SHARED_CACHE"] != b["CUDA_DEVICE_MEMORY_SHARED_CACHE"]
    bare = pod_env(expect, HostOptions(setup="bare", workdir=tmp_path, lib="/opt/libvgpu.so"), "a")
    assert "LD_PRELOAD" not in bare and bare["CUDA_DEVICE_MEMORY_LIMIT_0"] == "4000m"
    mps = pod_env(expect, HostOptions(setup="mps", workdir=tmp_path, mps_env={"CUDA_MPS_PIPE_DIRECTORY": "/p"}), "a")
    assert mps_client_env(4000, 30, {}) == {"CUDA_MPS_PINNED_DEVICE_MEM_LIMIT": "0=4000M",
                                            "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": "30"}  # fmt: skip
    assert mps["CUDA_MPS_PIPE_DIRECTORY"] == "/p" and "CUDA_DEVICE_MEMORY_LIMIT_0" not in mps


def test_the_hosts_own_quota_settings_never_leak_into_a_pod(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in STRIPPED_ENV:
        monkeypatch.setenv(key, "leaked")
    assert not set(STRIPPED_ENV) & set(clean_env())


def test_without_a_gpu_every_host_check_fails_and_cluster_checks_are_not_run(
    cluster: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GPUSHARE_LIBCUDA", str(tmp_path / "libcuda.so.1"))
    proven = prove(cluster, HostOptions(setup="bare", workdir=tmp_path, hold_seconds=0), log=lambda _line: None)
    verdict = proven["verdict"]
    checks = {c["id"]: c for c in verdict["checks"]}
    assert list(checks) == cluster["expect"]["checks"]
    assert checks["overcommit-rejected"]["passed"] is None
    assert checks["overcommit-rejected"]["observed"].startswith("not run on a host: ")
    assert verdict["notRunOnHost"] == {"overcommit-rejected": checks["overcommit-rejected"]["observed"]}
    assert verdict["passed"] is False and checks["same-gpu"]["passed"] is False
    assert "the library is not there" in checks["memory-enforced"]["observed"]
    # Each process-Pod's probes named the synthetic Pod they ran in: the record took them, tied to it.
    assert proven["expect"]["provenance"] is True
    assert not [c["id"] for c in verdict["checks"] if "not judgeable" in str(c["observed"])]
    for name, out in proven["evidence"].items():
        assert out["memory"]["pod"]["uid"] == out["podObject"]["uid"] and out["memory"]["pod"]["name"] == name
    # Judged again from its record (what `python -m components.verify.host.record --rejudge` does): the same.
    from components.verify.host import record

    run = tmp_path / "record" / "cluster-bare"
    run.mkdir(parents=True)
    for key, name in (("verdict", "verdict.json"), ("evidence", "evidence.json"), ("expect", "expect.json")):
        (run / name).write_text(json.dumps(proven[key]))
    assert record.rejudge(run.parent) == ["cluster-bare"]
    again = json.loads((run / "verdict.json").read_text())["checks"]
    assert [(c["id"], c["passed"]) for c in again] == [(c["id"], c["passed"]) for c in verdict["checks"]]
    assert "the baseline" in verdict["baseline"] and "failed" in verdict["baseline"]
    assert verdict["contextChargeMiB"] == {"gpu-slice-a": None, "gpu-slice-b": None}  # no quota held: no charge
    assert verdict["wallSeconds"] >= verdict["baselineSeconds"] + verdict["podSeconds"] - 0.2


def test_the_h200_run_under_hami_core_passes_every_check_a_host_can_run(cluster: dict[str, Any]) -> None:
    checks = _judged("cluster-hami-core-staggered", cluster)
    assert all(c["passed"] is True for c in checks.values()), {k: c["observed"] for k, c in checks.items()}
    band = "no Pod's short many-block launches ran above 0.30 + 0.12 of the baseline (alone)"
    assert "compute-limited" in checks and band in checks["compute-limited"]["observed"]


def _kai_pods_without_annotations() -> tuple[dict[str, Any], dict[str, Any]]:
    """The `gke` fixture's expectation, and its proof Pods (real H200 probe output) without annotations, as a host."""
    raw, evidence = recorded.load_raw("kai")
    pods = {name: {**pod, "annotations": {}} for name, pod in evidence["pods"].items() if name in raw["pods"]}
    return raw, {"pods": pods}


def test_a_kai_pod_in_a_cluster_without_its_gpu_memory_ask_still_fails_same_gpu() -> None:
    raw, evidence = _kai_pods_without_annotations()
    failed = next(c for c in judge.judge(Expectation.parse(raw), evidence)["checks"] if c["id"] == "same-gpu")
    assert failed["passed"] is False and "asks KAI gpu-memory=None" in failed["observed"]


def test_a_kai_host_proof_judges_same_gpu_on_the_uuids_and_says_the_ask_was_not_run_on_a_host() -> None:
    raw, evidence = _kai_pods_without_annotations()
    host = replace(expectation.host_expect(raw, "hami-core", raw["limitEnv"]), provenance=False)  # recorded before it
    held = next(c for c in judge.judge(host, evidence)["checks"] if c["id"] == "same-gpu")
    assert host.host_proof and held["passed"] is True, held["observed"]
    assert "gpu-memory ask: not run on a host" in held["evidence"]
    b = raw["pods"][1]
    recorded.edit_probe(evidence, b, lambda r: r.update(gpu_uuid="GPU-00000000-0000-0000-0000-000000000000"))
    moved = next(c for c in judge.judge(host, evidence)["checks"] if c["id"] == "same-gpu")
    assert moved["passed"] is False and "different GPUs" in moved["observed"]  # the UUIDs are judged on a host


def test_the_clusters_verifier_refuses_a_host_proofs_expectation(tmp_path: Path) -> None:
    raw, _ = recorded.load_raw("kai")
    env = {"GPUSHARE_EXPECT": json.dumps({**raw, "hostProof": True}), "GPUSHARE_TERMINATION_LOG": str(tmp_path / "t")}
    assert verifier.main(env) == 0
    verdict = message.decode((tmp_path / "t").read_text())
    assert verdict["passed"] is False and "hostProof is true" in verdict["error"]


def test_two_pods_started_in_the_same_instant_left_one_context_uncharged_and_memory_enforced_judges_the_refusal(
    cluster: dict[str, Any],
) -> None:
    b = real_fixtures.real_outputs("cluster-hami-core-uncharged")["gpu-slice-b"]["memory"]
    assert (b["visible_free_mib"], b["largest_alloc_mib"], b["context_overhead_mib"]) == (4000, 4000, 0)
    assert b["own_context_mib"] == 518  # NVML counted the context the quota was not charged for
    charge = next(f for f in b["findings"] if f["id"] == "context-charge")
    assert charge["bypassed"] is True and (charge["charged_mib"], charge["over_quota_mib"]) == (0, 518)
    held = _judged("cluster-hami-core-uncharged", cluster)["memory-enforced"]
    assert held["passed"] is True, held["observed"]  # nothing past the quota fitted; the charge is a finding
    assert "0/518 MiB, is the CUDA context" in held["observed"]


def test_the_h200_run_without_the_library_fails_memory_and_compute_saying_it_is_not_there(
    cluster: dict[str, Any],
) -> None:
    checks = _judged("cluster-bare", cluster)
    for check_id in ("memory-enforced", "compute-limited"):
        assert checks[check_id]["passed"] is False
        assert "libvgpu.so is not mapped into the probe process" in checks[check_id]["observed"]
        assert "the library is not there" in checks[check_id]["observed"]
    assert checks["preload-mechanism"]["passed"] is False and "HAMi-core is not loaded" in checks[
        "preload-mechanism"]["observed"]  # fmt: skip


@pytest.mark.parametrize("probe", ["memory", "compute"])
def test_recorded_outputs_have_exactly_the_keys_the_probes_print(probe: str, tmp_path: Path) -> None:
    env = {**os.environ, "GPUSHARE_LIBCUDA": str(tmp_path / "libcuda.so.1")}
    extra = ["--baseline", "none"] if probe == "compute" else []
    done = subprocess.run(module_argv(probe, "--json", *extra), env=env, cwd=ROOT, capture_output=True, text=True,
                          timeout=60)  # fmt: skip
    printed = json.loads(done.stdout.splitlines()[-1])
    for record in ("cluster-hami-core", "cluster-mps", "cluster-bare", "gke-hami-core", "k3s-hami-core"):
        for pod, outputs in real_fixtures.real_outputs(record).items():
            if probe in outputs:  # recorded before the probes printed their Pod (`pod`) and the lookup (`lookup`)
                assert set(outputs[probe]) == set(printed) - {"pod", "lookup"}, (record, pod)
    assert probe != "compute" or "lookup" in printed
    assert set(printed["pod"]) == {"name", "uid", "namespace", "node", "pid", "children"}


def test_the_judges_fixtures_carry_the_recorded_probe_output() -> None:
    assert real_fixtures.main(["--check"]) == 0


def test_the_record_renders_the_comparison_and_the_docs_from_the_h200_numbers(
    cluster: dict[str, Any], tmp_path: Path
) -> None:
    from components.verify.host import compare, record

    record_dir, root = tmp_path / "record", tmp_path / "repo"
    rows = []
    mps_env = {"CUDA_MPS_PINNED_DEVICE_MEM_LIMIT": "0=4000M", "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": "30"}
    env = {"hami-core": cluster["expect"]["limitEnv"], "mps": mps_env}
    for mech in ("hami-core", "mps"):
        outputs = real_fixtures.real_outputs(f"cluster-{mech}")
        uuid = next(iter(outputs.values()))["memory"]["gpu_uuid"]
        for out in outputs.values():  # the edit: the card named as the host proof names it now
            for result in out.values():
                result["env"]["NVIDIA_VISIBLE_DEVICES"] = uuid
        logs = {p: {"phase": "Succeeded", "logs": real_fixtures.probe_log(o)} for p, o in outputs.items()}
        judged = before_the_steps(
            replace(expectation.host_expect(cluster["expect"], mech, env[mech], 143771), provenance=False)
        )
        verdict = judge.judge(judged, {"pods": logs})  # recorded before the probes printed their Pod
        verdict = {**verdict, "notRunOnHost": {}, "stack": "cluster", "setup": mech, "card": {"mib": 143771}}
        (record_dir / f"cluster-{mech}").mkdir(parents=True)
        (record_dir / f"cluster-{mech}" / "verdict.json").write_text(json.dumps(verdict))
        (record_dir / f"cluster-{mech}" / "evidence.json").write_text(json.dumps(outputs))
        rows.append(compare.summarise(mech, {"verdict": verdict, "evidence": outputs}, {"share": {}}, 4000))
    card = {"name": "NVIDIA H200", "mib": 143771, "driver": "580.159.04", "computeMode": "Default"}
    calibration = {"short_many": {"blocks": 13200, "threads": 256, "launch_ms": 0.486}}
    (record_dir / "comparison.md").write_text(compare.table(rows, 4000, 30, card, calibration))
    (record_dir / "comparison.json").write_text(json.dumps({"card": card, "quotaMiB": 4000, "coresPercent": 30,
        "windowSeconds": 20, "baseline": {"how": "alone", "calibration": calibration}, "rows": rows}))  # fmt: skip
    # An expectation this judge no longer reads (a key it does not know) is planned again from the stack.
    (record_dir / "cluster-mps" / "expect.json").write_text(json.dumps({"retiredKey": 1}))
    assert record.rejudge(record_dir) == ["cluster-mps"]
    rejudged = json.loads((record_dir / "cluster-mps" / "verdict.json").read_text())
    assert rejudged["passed"] is True and {f["id"] for f in rejudged["findings"]} >= {"mps-own-pinned-limit"}
    (root / "docs" / "host-proof").mkdir(parents=True)
    (root / "docs" / "host-proof.md").write_text(f"# x\n{record.README_START}\nold\n{record.README_END}\nrest\n")
    record.install(record_dir, root)
    doc = (root / "docs" / "sharing-comparison.md").read_text()
    assert "| Pod A's memory view: total / free (MiB) | 4000 / 3482 | 143155 / 3833 |" in doc  # A charged 518 MiB
    assert "| `context-charge` | held, held | – |" in doc  # both charged in full (518 MiB each)
    assert "0.289, 0.283 of the unlimited baseline" in doc  # the judged shape, from the H200's numbers
    readme = (root / "docs" / "host-proof.md").read_text()
    assert "\nold\n" not in readme and readme.endswith("rest\n") and "compute share, short_many (0.486 ms" in readme


def test_the_repeated_h200_proofs_give_each_stack_the_same_verdict_every_run() -> None:
    from components.verify.host import repeatability

    record = Path(__file__).resolve().parent.parent / "docs" / "host-proof" / "h200"
    runs = repeatability.repeats(record)
    assert {group: len(r) for group, r in runs.items()} == {"cluster-hami-core": 3, "gke-hami-core": 5,
                                                            "k3s-hami-core": 5}  # fmt: skip
    assert all(repeatability.identical(r) for r in runs.values())  # cluster's uncharged B judged on the refusal
    assert all(v["passed"] for r in runs.values() for _, v, _ in r)
    # Partly uncharged contexts in 7 of the 20 gke/k3s Pods changed no verdict: they are findings.
    charges = [f for _, v, _ in runs["gke-hami-core"] + runs["k3s-hami-core"] for f in v["findings"]
               if f["id"] == "context-charge"]  # fmt: skip
    assert len(charges) == 20 and sum(f["bypassed"] is True for f in charges) == 7
    table = repeatability.table(record)
    assert "`gke-hami-core`, 5 runs" in table
    assert "Same `passed` and same result for every check in every run: yes" in table


def test_runs_that_differ_in_one_check_are_not_called_identical() -> None:
    from components.verify.host import repeatability

    def run(passed: bool) -> tuple[str, dict[str, Any], dict[str, Any]]:
        return "r", {"passed": passed, "checks": [{"id": "memory-enforced", "passed": passed}]}, {}

    assert repeatability.identical([run(True), run(True)]) and not repeatability.identical([run(True), run(False)])


def test_the_comparisons_unlimited_baseline_and_a_proofs_own_never_share_a_file(
    cluster: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from components.verify.host import proof

    written: list[str] = []

    def ran(_argv: list[str], _env: dict[str, str], _timeout: float) -> tuple[int, str, str]:
        return 0, json.dumps({"ok": True, "shapes": {}}), ""

    monkeypatch.setattr(proof, "run_process", ran)
    for setup in ("hami-core", "mps"):
        path, _ = proof.measure_baseline(cluster["expect"], HostOptions(setup=setup, workdir=tmp_path), written.append)
        written.append(path.name)
    from components.verify.host.compare import UNLIMITED_BASELINE

    names = [w for w in written if w.endswith(".json")]
    assert names == ["baseline-hami-core.json", "baseline-mps.json"] and UNLIMITED_BASELINE not in names


@pytest.mark.parametrize("stack", ["gke", "k3s", "cluster"])
def test_every_stacks_committed_host_expectation_parses_for_each_setup(stack: str) -> None:
    host = expectation.load(ROOT / "docs" / "host-proof" / "expect" / f"{stack}.json")
    for mechanism in ("hami-core", "mps"):  # bare runs judge as hami-core (proof.mechanism)
        judged = expectation.host_expect(host["expect"], mechanism, host["expect"].get("limitEnv") or {})
        assert judged.whole_gpu_pod is None and judged.whole_gpu_card_index is None
