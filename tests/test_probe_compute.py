"""The compute probe without a GPU: its error path, the PTX it JITs, per-second work, the steady state, the findings.

A fake driver on a fake clock stands in for the GPU, throttled the way HAMi-core throttles many-block
launches (full speed for the first 3 s, then about a third), so no test waits on real time.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.probes import PROBES, load_probe

compute = load_probe("compute")


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class ThrottledGpu:
    """Runs `rate` FMA/s; blocks beyond `few` per launch are slowed to `share` of that after `after_s`."""

    def __init__(self, clock: FakeClock, rate: float = 3e13, share: float = 0.33, after_s: float = 3.0) -> None:
        self.clock, self.rate, self.share, self.after_s = clock, rate, share, after_s
        self.launches: list[tuple[int, int, int]] = []

    def load_ptx(self, ptx: str) -> int:
        assert ".entry spin" in ptx
        return 1

    def function(self, module: int, name: str) -> int:
        assert name == compute.KERNEL
        return 2

    def sm_count(self) -> int:
        return 132

    def try_alloc(self, nbytes: int) -> tuple[int | None, str | None]:
        return 0x7F00_0000_0000, None

    def free(self, ptr: int) -> None: ...

    def launch(self, fn: int, grid: int, block: int, args: list[Any]) -> None:
        iters = args[1].value
        self.launches.append((grid, block, iters))
        throttled = grid > 8 and self.clock.now >= self.after_s
        # A thread's dependent FMA chain runs ~5e8 a second: few threads never reach the card's rate.
        rate = min(self.rate, grid * block * 5e8) * (self.share if throttled else 1.0)
        self.clock.now += grid * block * iters / rate + 10e-6

    def synchronize(self) -> None: ...


def test_compute_probe_without_libcuda_prints_a_json_error_and_exits_nonzero(tmp_path: Path) -> None:
    env = {**os.environ, "GPUSHARE_LIBCUDA": str(tmp_path / "libcuda.so.1")}
    argv = [sys.executable, str(PROBES / "compute.py"), "--json", "--seconds", "1", "--ready-file", str(tmp_path / "r")]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    last = json.loads(done.stdout.strip().splitlines()[-1])
    assert last["probe"] == "compute" and last["ok"] is False and "libcuda.so.1" in last["error"]
    assert not (tmp_path / "r").exists()


def test_ptx_is_old_enough_for_t4_and_h200_drivers_to_jit() -> None:
    version = re.search(r"^\.version (\d+)\.(\d+)$", compute.PTX, re.M)
    target = re.search(r"^\.target sm_(\d+)$", compute.PTX, re.M)
    assert version and target
    assert (int(version[1]), int(version[2])) <= (7, 0)  # CUDA ≤ 11.0's ISA: any T4-era driver
    assert int(target[1]) <= 75  # not above the T4's sm_75
    assert ".visible .entry spin(" in compute.PTX and "st.global.f32" in compute.PTX  # the result is kept


def test_per_second_buckets_work_by_completion_second_and_drops_the_overrun() -> None:
    completions = [(0.2, 1.0), (0.9, 1.0), (1.5, 2.0), (2.99, 4.0), (3.01, 100.0)]
    assert compute.per_second(completions, 3) == [2.0, 2.0, 4.0]


def test_steady_state_is_the_median_after_the_first_5_seconds() -> None:
    warm_then_throttled = [10.0, 10.0, 10.0, 9.0, 4.0, 3.0, 3.2, 2.9, 3.1, 50.0, 3.0]
    assert compute.steady_state(warm_then_throttled) == 3.05  # median of the last six
    assert compute.steady_state(warm_then_throttled) != pytest.approx(sum(warm_then_throttled) / 11)


def test_steady_state_of_a_short_run_uses_its_second_half() -> None:
    assert compute.steady_state([10.0, 10.0, 3.0, 3.0]) == 3.0
    assert compute.steady_state([]) is None


def test_measure_reports_the_throttle_in_the_steady_state_not_the_mean() -> None:
    clock = FakeClock()
    gpu = ThrottledGpu(clock)
    shapes = compute.measure(gpu, 20, {"many_blocks": None, "few_blocks": None}, lambda _line: None, clock)
    many, few = shapes["many_blocks"], shapes["few_blocks"]
    assert many["blocks"] == 132 * 16 and few["blocks"] == 2
    assert many["steady_per_s"] == pytest.approx(3e13 * 0.33, rel=0.02)
    assert many["work_per_s"] > many["steady_per_s"] * 1.1  # the first seconds ran unthrottled
    assert few["steady_per_s"] == pytest.approx(few["work_per_s"], rel=0.05)  # two blocks are never throttled
    assert len(many["timeline_per_s"]) == 20
    # Calibrated launch lengths: ~2 ms for many_blocks (~6 ms once throttled), ~100 ms for few_blocks.
    assert 2 <= many["launch_ms_median"] <= 12
    assert 50 <= few["launch_ms_median"] <= 200


def test_measure_uses_the_given_iterations_so_a_baseline_repeats_the_same_launches() -> None:
    clock = FakeClock()
    gpu = ThrottledGpu(clock)
    compute.measure(gpu, 2, {"many_blocks": 1000, "few_blocks": 5000}, lambda _line: None, clock)
    assert {iters for grid, _, iters in gpu.launches if grid > 8} == {1000}
    assert {iters for grid, _, iters in gpu.launches if grid <= 8} == {5000}


def _shape(steady: float) -> dict[str, Any]:
    return {"steady_per_s": steady}


def test_ratio_and_findings_when_a_container_lifts_its_own_sm_limit() -> None:
    limited = {"many_blocks": _shape(1.0e13), "few_blocks": _shape(2.9e9)}
    baseline = {"many_blocks": _shape(3.0e13), "few_blocks": _shape(3.0e9)}
    ratio = compute.ratios(limited, baseline)
    assert ratio == {"many_blocks": pytest.approx(0.3333, abs=1e-4), "few_blocks": pytest.approx(0.9667, abs=1e-4)}
    found = {f["id"]: f for f in compute.findings("30", ratio)}
    assert found["compute-limit-disabled"]["bypassed"] is True
    assert "CUDA_DISABLE_CONTROL=true" in found["compute-limit-disabled"]["tried"]
    assert found["compute-limit-shape"]["bypassed"] is True


def test_findings_without_an_sm_limit_claim_no_bypass() -> None:
    ratio = {"many_blocks": 1.0, "few_blocks": 1.0}
    for env in (None, "0", "100"):
        found = compute.findings(env, ratio)
        assert [f["id"] for f in found] == ["compute-limit-disabled"]
        assert found[0]["bypassed"] is None and "nothing to lift" in found[0]["observed"]


def test_findings_when_the_limit_did_not_bite_claim_no_bypass() -> None:
    found = compute.findings("30", {"many_blocks": 0.97, "few_blocks": 1.0})
    assert found[0]["bypassed"] is None and len(found) == 1


def test_result_file_truncation_keeps_valid_json_within_4096_bytes() -> None:
    timeline = [12345678901234.5] * 600
    shape = {"launches": 9000, "steady_per_s": 1.0e13, "timeline_per_s": timeline}
    result = {"probe": "compute", "ok": True, "error": None, "ratio": {"many_blocks": 0.33, "few_blocks": 0.97},
              "shapes": {"many_blocks": shape, "few_blocks": dict(shape)},
              "baseline": {"many_blocks": dict(shape), "few_blocks": dict(shape)}}  # fmt: skip
    text = compute.fit_result(result, compute.DROP_ORDER)
    assert len(text.encode()) <= 4096
    small = json.loads(text)
    assert small["ratio"] == {"many_blocks": 0.33, "few_blocks": 0.97}
    assert small["shapes"]["many_blocks"]["steady_per_s"] == 1.0e13
