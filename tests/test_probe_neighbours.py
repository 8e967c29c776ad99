"""The fault and bandwidth probes without a GPU: their kernels, timelines, roles, windows and JSON contract.

A fake driver on a fake wall clock stands in for the card: a launch costs time, a store to address 0 makes the
next synchronise fail as a real context fails (CUDA_ERROR_ILLEGAL_ADDRESS, sticky), a neighbour can be made to
die at an instant (what MPS does to a fault's neighbour), so no test waits on real time.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import subprocess
import sys
from typing import Any

import pytest

from components.incluster.evidence import timeline as reading
from components.incluster.evidence.bandwidth_schema import BANDWIDTH
from components.incluster.evidence.fault_schema import FAULT
from components.incluster.evidence.schema import validate
from components.incluster.probes import bandwidth, fault, timeline
from components.incluster.probes.cuda import CudaError
from components.verify import phases
from tests.conftest import ROOT

T0 = 1_796_254_237.0


class Clock:
    def __init__(self, now: float = T0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


class FakeCuda:
    """One context on a fake card: each launch takes `launch_s`; poke(0) or `dies_at` breaks the context."""

    def __init__(self, clock: Clock, launch_s: float = 1e-4, dies_at: float | None = None, free_mib: int = 1 << 20):
        self.clock, self.launch_s, self.dies_at, self.free_mib = clock, launch_s, dies_at, free_mib
        self.broken = False
        self.launches: list[tuple[int, int, int, list[int]]] = []
        self.allocated: list[int] = []
        self.sizes: dict[int, int] = {}

    def init(self) -> None: ...

    def name(self) -> str:
        return "NVIDIA H200"

    def uuid(self) -> str:
        return "GPU-0e0f"

    def use_primary_context(self) -> None: ...

    def sm_count(self) -> int:
        return 132

    def load_ptx(self, ptx: str) -> int:
        return 1

    def function(self, module: int, name: str) -> int:
        return {"tick": 10, "poke": 11, "copy": 12}[name]

    def try_alloc(self, nbytes: int) -> tuple[int | None, str | None]:
        if nbytes > self.free_mib * 2**20:
            return None, "CUDA_ERROR_OUT_OF_MEMORY"
        self.free_mib -= nbytes // 2**20
        self.allocated.append(nbytes)
        ptr = 0x7F00_0000_0000 + len(self.allocated) * 2**32
        self.sizes[ptr] = nbytes
        return ptr, None

    def free(self, ptr: int) -> None:
        self.free_mib += self.sizes.pop(ptr) // 2**20

    def launch(self, fn: int, grid: int, block: int, args: list[Any]) -> None:
        self.launches.append((fn, grid, block, [a.value for a in args]))
        if fn == 11 and args[0].value == 0:
            self.broken = True
        self.clock.now += self.launch_s

    def synchronize(self) -> None:
        if self.dies_at is not None and self.clock.now >= self.dies_at:
            self.broken = True
        if self.broken:
            raise CudaError("cuCtxSynchronize", 700, "CUDA_ERROR_ILLEGAL_ADDRESS")


def test_every_ptx_register_used_is_declared_so_the_driver_jit_accepts_it() -> None:
    for ptx in (fault.PTX, bandwidth.PTX):
        assert re.search(r"^\.version 6\.0$", ptx, re.M) and re.search(r"^\.target sm_52$", ptx, re.M)
        for body in re.findall(r"\.entry \w+\((.*?)\)\s*\{(.*?)\n\}", ptx, re.S):
            params, code = body
            declared = {kind: int(n) for kind, n in re.findall(r"\.reg \.\w+ %(\w+?)<(\d+)>;", code)}
            uses = "\n".join(line for line in code.splitlines() if not line.strip().startswith(".reg"))
            for kind, index in re.findall(r"%(rd|r|p|f)(\d*)\b", uses):
                if kind == "p" and not index:
                    assert ".reg .pred %p;" in code
                    continue
                assert kind in declared and int(index) < declared[kind], (kind, index)
            for name in re.findall(r"\[(\w+)\]", code):
                assert f".param .u64 {name}" in params


def test_the_timeline_counts_each_launch_in_the_second_it_finished_and_keeps_the_partial_last_second() -> None:
    rec = timeline.Recorder(T0)
    for at in (T0 + 0.1, T0 + 0.9, T0 + 1.5, T0 + 2.7):
        rec.add(at, 1)
    line = rec.to_dict(T0 + 2.8)
    assert line == {"t0": timeline.iso(T0), "per_s": [2, 1, 1], "measured_s": 2.8}
    assert timeline.whole_seconds(line) == [2.0, 1.0]  # [2, 2.8) is partial
    assert timeline.epoch(line["t0"]) == pytest.approx(T0, abs=1e-3) and line["t0"].endswith("Z")


def test_a_neighbours_rate_around_a_fault_is_its_whole_seconds_before_and_after_the_faults_second() -> None:
    line = {"t0": timeline.iso(T0), "per_s": [10, 11, 5, 12, 12, 7], "measured_s": 5.5}
    seen = reading.around(line, timeline.iso(T0 + 2.3))
    assert seen == {"inside": True, "before": [10.0, 11.0], "after": [12.0, 12.0], "at_second": 2}
    assert reading.around(line, timeline.iso(T0 + 9))["inside"] is False


def test_bandwidth_beside_a_hog_is_split_from_the_same_timeline_by_the_hogs_instants() -> None:
    line = {"t0": timeline.iso(T0), "per_s": [3800, 3850, 1600, 1500, 3000, 3840], "measured_s": 6.0}
    split = reading.split(line, timeline.iso(T0 + 2.0), timeline.iso(T0 + 4.5))
    assert split["alone"] == {"mean": 3830.0, "min": 3800.0, "max": 3850.0, "seconds": 3}
    assert split["beside"] == {"mean": 1550.0, "min": 1500.0, "max": 1600.0, "seconds": 2}
    assert split["drop_fraction"] == pytest.approx(1 - 1550 / 3830, abs=1e-3)


def test_the_neighbours_loop_stops_at_its_first_error_and_keeps_when() -> None:
    clock = Clock()
    cuda = FakeCuda(clock, launch_s=1e-4, dies_at=T0 + 2.5)
    out = fault.child_main("loop", T0 + 5, clock, cuda)
    assert out["ok"] and out["initialized"] and out["survived"] is False
    assert out["cuda_error"] == "CUDA_ERROR_ILLEGAL_ADDRESS"
    assert timeline.epoch(out["cuda_error_at"]) == pytest.approx(T0 + 2.5, abs=1e-3)
    per_s = out["timeline"]["per_s"]  # 10,000 launches a second, give or take a float clock's rounding
    assert len(per_s) == 3 and all(abs(n - 10000) <= 20 for n in per_s[:2]) and abs(per_s[2] - 5000) <= 20
    assert {launch[1:3] for launch in cuda.launches} == {(1, fault.TICK_THREADS)}  # one tiny block a launch


def test_the_faulting_child_waits_for_its_instant_then_its_store_to_address_zero_fails_its_context() -> None:
    clock = Clock()
    cuda = FakeCuda(clock)
    out = fault.child_main("fault", T0 + 3.7, clock, cuda, clock.sleep)
    assert out["faulted"] is True and out["cuda_error"] == fault.EXPECTED_ERROR
    assert timeline.epoch(out["fault_at"]) == pytest.approx(T0 + 3.7, abs=0.01)
    assert cuda.launches[-1][0] == 11 and cuda.launches[-1][3] == [0]


def _args(**over: Any) -> argparse.Namespace:
    return fault.parse_args([f"--{k.replace('_', '-')}={v}" for k, v in over.items()])


def _runner(clock: Clock, answers: dict[str, list[dict[str, Any]]], calls: list[list[str]]) -> Any:
    """Children that take a second each and answer in turn, per mode."""
    pids = iter(range(200, 300))

    def run(args: list[str], timeout: float) -> dict[str, Any]:
        calls.append(list(args))
        clock.now += 1.0
        answer = answers[args[1]].pop(0)
        return {"pid": next(pids), "exit_code": 0, "started_at": timeline.iso(clock.now - 1),
                "ended_at": timeline.iso(clock.now), "initialized": True, "ok": True, **answer}  # fmt: skip

    return run


def test_the_faulter_faults_at_its_delay_then_a_fresh_process_runs_a_kernel_and_the_step_lasts_its_window() -> None:
    clock, calls = Clock(), []
    answers = {"fault": [{"fault_at": timeline.iso(T0 + 3.7), "cuda_error": fault.EXPECTED_ERROR, "faulted": True}],
               "serve": [{"kernel_ran": False, "cuda_error": "CUDA_ERROR_MPS_SERVER_NOT_READY"},
                         {"kernel_ran": True, "cuda_error": None}]}  # fmt: skip
    result = fault.new_result(_args(role="faulter", window=6.3, delay=3.7), {}, {"listed": [], "mapped": []})
    fault.run_role(_args(role="faulter", window=6.3, delay=3.7), result, _runner(clock, answers, calls), clock,
                   clock.sleep)  # fmt: skip
    assert calls[0] == ["--child", "fault", "--at", f"{T0 + 3.7:.3f}"]
    assert result["ok"] and result["faulted"] and result["served"] and len(result["serve"]) == 2
    assert [c["step"] for c in result["children"]] == ["faulting", "fresh", "fresh"]
    assert result["faulting_pid"] == result["children"][0]["pid"] and result["pid"] == os.getpid()
    assert clock.now == pytest.approx(T0 + 6.3)  # padded to the window: B's next step starts with A's


def test_a_neighbour_that_died_still_reports_its_rate_and_ends_with_the_window() -> None:
    clock, calls = Clock(), []
    line = {"t0": timeline.iso(T0 + 0.8), "per_s": [11490, 11500, 9777, 3], "measured_s": 3.1}
    answers = {"loop": [{"timeline": line, "launches": 32770, "survived": False, "cuda_error": fault.EXPECTED_ERROR,
                         "cuda_error_at": timeline.iso(T0 + 3.9)}]}  # fmt: skip
    args = _args(role="neighbour", window=6.3)
    result = fault.run_role(args, fault.new_result(args, {}, {}), _runner(clock, answers, calls), clock, clock.sleep)
    assert calls == [["--child", "loop", "--at", f"{T0 + 6.3 - fault.END_MARGIN_S:.3f}"]]
    assert result["ok"] and result["survived"] is False and result["timeline"] == line
    assert clock.now == pytest.approx(T0 + 6.3)


def test_a_role_whose_child_never_reached_the_card_fails_at_once_naming_the_child() -> None:
    clock = Clock()

    def run(args: list[str], timeout: float) -> dict[str, Any]:
        return {"pid": 7, "exit_code": 1, "ok": False, "initialized": False, "error": "cannot load libcuda.so.1"}

    args = _args(role="neighbour", window=6.3)
    result = fault.run_role(args, fault.new_result(args, {}, {}), run, clock, clock.sleep)
    assert result["ok"] is False and "cannot load libcuda.so.1" in result["error"]
    assert result["children"][0]["pid"] == 7 and clock.now == T0  # no GPU: nothing to wait for


def test_a_delay_outside_the_window_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        fault.parse_args(["--role", "faulter", "--window", "5", "--delay", "6"])
    assert "--delay 6.0 must lie inside --window 5.0" in capsys.readouterr().err


def test_the_fault_probe_as_a_module_without_libcuda_prints_its_json_with_the_childs_pid(tmp_path: Any) -> None:
    env = {**os.environ, "GPUSHARE_LIBCUDA": str(tmp_path / "libcuda.so.1")}
    argv = [sys.executable, "-m", "components.incluster.probes.fault", "--json", "--role", "faulter", "--window", "2",
            "--delay", "1"]  # fmt: skip
    done = subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, text=True, timeout=60)
    last = json.loads(done.stdout.strip().splitlines()[-1])
    assert done.returncode == 1 and last["probe"] == "fault" and last["role"] == "faulter"
    assert last["ok"] is False and "libcuda.so.1" in last["error"]
    assert last["children"][0]["step"] == "faulting" and last["children"][0]["pid"] != last["pid"]


def _bandwidth(role: str, clock: Clock, cuda: FakeCuda, *extra: str) -> dict[str, Any]:
    args = bandwidth.parse_args(["--role", role, *extra])
    result: dict[str, Any] = {"ok": False}
    bandwidth.measure(args, result, cuda, clock, clock.sleep)
    return result


def test_the_hog_copies_only_from_its_delay_for_its_seconds_and_the_step_lasts_its_window() -> None:
    clock = Clock()
    cuda = FakeCuda(clock, launch_s=2 * 2**30 / 3.85e12)  # 1 GiB each way at 3,850 GB/s
    out = _bandwidth("hog", clock, cuda, "--window", "6.5", "--delay", "3.7", "--hog-seconds", "2.2")
    assert timeline.epoch(out["copy_started_at"]) == pytest.approx(T0 + 3.7, abs=1e-3)
    assert timeline.epoch(out["copy_ended_at"]) == pytest.approx(T0 + 5.9, abs=1e-3)
    assert out["copy"]["mib"] == 1024 and out["copy"]["bytes_per_copy"] == 2 * 2**30
    assert out["gbps"]["min"] <= out["gbps"]["mean"] <= out["gbps"]["max"]
    assert out["gbps"]["mean"] == pytest.approx(3850, rel=0.01) and out["gbps"]["seconds"] == 2
    assert clock.now == pytest.approx(T0 + 6.5) and out["ok"]
    words = cuda.launches[0][3][2]
    assert words == 2**30 // 16 and cuda.launches[0][1] == bandwidth.BLOCKS_PER_SM * 132


def test_the_copy_halves_its_buffers_until_both_fit_under_a_small_quota() -> None:
    clock = Clock()
    out = _bandwidth("neighbour", clock, FakeCuda(clock, free_mib=1500), "--window", "1")
    assert out["copy"]["mib"] == 512


@pytest.mark.parametrize(("max_lag", "lead", "init"), [(0.3, 0.0, phases.HOST_INIT_S), (3.3, 0.0, phases.HOST_INIT_S),
                                                        (10.0, 3.0, phases.INIT_S)])  # fmt: skip
def test_phases_land_the_fault_and_the_hog_inside_the_neighbours_window_for_every_lag_they_allow(
    max_lag: float, lead: float, init: float
) -> None:
    steps = phases.phases(max_lag, lead, init)
    for lag in (-lead, 0.0, max_lag):
        fault_at = lag + steps.fault_delay_s  # on A's clock, from the step's start
        assert fault_at >= init + phases.BEFORE_S - 1e-9  # a whole second of A's rate before
        assert steps.fault_window_s - fault.END_MARGIN_S - fault_at >= phases.AFTER_S - 1e-9  # and after
        hog_from, hog_to = lag + steps.hog_delay_s, lag + steps.hog_delay_s + steps.hog_seconds
        assert hog_from >= init + phases.BEFORE_S - 1e-9
        assert hog_to <= steps.bandwidth_window_s - bandwidth.END_MARGIN_S + 1e-9  # over before A's compute


def test_the_host_proof_steps_add_at_most_11_seconds_and_the_clusters_allow_ten_seconds_of_lag() -> None:
    assert phases.host(0.0).seconds <= 11.0
    assert phases.phases(10.0, 3.0) == phases.CLUSTER and phases.CLUSTER.fault_delay_s == 6.7
    with pytest.raises(ValueError, match="seconds ≥ 0"):
        phases.phases(-1.0)


RECORD = ROOT / "docs" / "host-proof" / "h200"
INSTANT = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def _recorded() -> list[tuple[str, dict[str, Any]]]:
    """Every fault and bandwidth output the H200 runs left: the standalone runs and the host proofs' Pods."""
    found = []
    for probe in ("fault", "bandwidth"):
        for path in sorted((RECORD / probe).glob("*.json")):
            data = json.loads(path.read_text())
            found += [(f"{path.name} {role}", data[role]) for role in ("neighbour", "faulter", "hog") if role in data]
    for path in sorted((RECORD / "neighbour-steps").glob("*/evidence.json")):
        for pod, outputs in json.loads(path.read_text()).items():
            found += [(f"{path.parent.name} {pod} {p}", outputs[p]) for p in ("fault", "bandwidth") if p in outputs]
    return found


@pytest.mark.parametrize("role", ["neighbour", "faulter"])
def test_the_fault_probe_prints_the_keys_it_printed_on_the_h200_and_the_pod_it_ran_in(role: str, tmp_path: Any) -> None:
    env = {**os.environ, "GPUSHARE_LIBCUDA": str(tmp_path / "libcuda.so.1"), "GPUSHARE_POD_NAME": "gpushare-proof-a"}
    argv = [sys.executable, "-m", "components.incluster.probes.fault", "--json", "--role", role, "--window", "1",
            "--delay", "0.5"]  # fmt: skip
    done = subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, text=True, timeout=60)
    line = json.loads(done.stdout.strip().splitlines()[-1])
    recorded = [out for name, out in _recorded() if out.get("probe") == "fault" and out.get("role") == role]
    # The H200's records predate provenance: the `pod` block is the one key they lack.
    assert len(recorded) == 5 and all(set(out) | {"pod"} == set(line) for out in recorded)
    assert line["pod"]["name"] == "gpushare-proof-a" and line["pod"]["pid"] == line["pid"]
    assert "provenance: Pod None/gpushare-proof-a" in done.stdout
    assert validate(FAULT, line, "fault") == line


@pytest.mark.parametrize("role", ["neighbour", "hog"])
def test_the_bandwidth_probe_prints_the_keys_it_printed_on_the_h200_and_the_pod_it_ran_in(
    role: str, tmp_path: Any
) -> None:
    env = {**os.environ, "GPUSHARE_LIBCUDA": str(tmp_path / "libcuda.so.1")}
    argv = [sys.executable, "-m", "components.incluster.probes.bandwidth", "--json", "--role", role, "--window", "1",
            "--delay", "0.2", "--hog-seconds", "0.5"]  # fmt: skip
    done = subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, text=True, timeout=60)
    line = json.loads(done.stdout.strip().splitlines()[-1])
    recorded = [out for name, out in _recorded() if out.get("probe") == "bandwidth" and out.get("role") == role]
    assert len(recorded) == 5 and all(set(out) | {"pod"} == set(line) for out in recorded)
    assert line["pod"]["pid"] == line["pid"] and line["pod"]["children"] == []
    assert validate(BANDWIDTH, line, "bandwidth") == line


def test_the_recorded_h200_outputs_keep_the_documented_contract() -> None:
    outputs = _recorded()
    assert len(outputs) == 20  # 3 setups × 4 outputs, 2 host proofs × 2 Pods × 2 steps
    for name, out in outputs:
        assert validate({"fault": FAULT, "bandwidth": BANDWIDTH}[out["probe"]], out, name) == out
        assert out["ok"] is True and out["error"] is None, name
        assert isinstance(out["pid"], int) and out["role"] in ("neighbour", "faulter", "hog"), name
        for key in ("started_at", "ended_at", "copy_started_at", "copy_ended_at", "fault_at", "cuda_error_at"):
            assert out.get(key) is None or INSTANT.match(out[key]), (name, key, out.get(key))
        took = timeline.epoch(out["ended_at"]) - timeline.epoch(out["started_at"])
        assert took >= out["window_s"] - 0.01, name  # a step lasts its window, so the next ones start together
        line = out.get("timeline")
        if line:
            # ceil(measured_s); the H200's runs rounded measured_s to the nearest ms, so one may have one entry more
            measured = line["measured_s"]
            assert max(math.ceil(measured), 1) <= len(line["per_s"]) <= math.ceil(measured + 0.001), name
            assert INSTANT.match(line["t0"]), name
        if out["probe"] == "bandwidth":
            gbps = out["gbps"]
            assert gbps["seconds"] > 0 and 0 < gbps["min"] <= gbps["mean"] <= gbps["max"], name
            assert out["children"] == [] and out["copy"]["bytes_per_copy"] == 2 * out["copy"]["mib"] * 2**20
        elif out["role"] == "neighbour":
            assert out["launches"] == sum(line["per_s"]) and out["children"][0]["pid"] != out["pid"], name
            assert out["survived"] is (out["cuda_error"] is None), name
        else:
            assert out["faulted"] and out["cuda_error"] == out["expected_error"] == "CUDA_ERROR_ILLEGAL_ADDRESS"
            assert timeline.epoch(out["fault_at"]) >= timeline.epoch(out["started_at"]) + out["delay_s"] - 0.01
            assert out["faulting_pid"] == out["children"][0]["pid"] and out["served"] is True, name
            faulting_ended = timeline.epoch(out["children"][0]["ended_at"])
            assert all(timeline.epoch(s["started_at"]) >= faulting_ended for s in out["serve"]), name


def test_on_the_h200_a_fault_took_the_neighbour_down_only_under_mps() -> None:
    fates = {}
    for setup in ("bare", "hami-core", "mps"):
        data = json.loads((RECORD / "fault" / f"{setup}.json").read_text())
        seen = reading.around(data["neighbour"]["timeline"], data["faulter"]["fault_at"])
        assert seen["inside"] and len(seen["before"]) >= 1 and all(rate > 0 for rate in seen["before"])
        fates[setup] = (data["neighbour"]["survived"], len(seen["after"]) >= 1)
    assert fates == {"bare": (True, True), "hami-core": (True, True), "mps": (False, False)}
