"""The compute probe without a GPU: its error path, the PTX it JITs, the window mean, calibration, shares, findings.

A fake driver on a fake clock stands in for the GPU, throttled the way HAMi-core throttles many-block
launches (full speed for the first 3 s, then about a third), so no test waits on real time.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.probes import ROOT, load_probe, module_argv

compute = load_probe("compute")
kernel = load_probe("compute_kernel")


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
        assert name == kernel.KERNEL
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
    argv = module_argv("compute", "--json", "--seconds", "1", "--baseline", "none", "--ready-file", str(tmp_path / "r"))
    done = subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    last = json.loads(done.stdout.strip().splitlines()[-1])
    assert last["probe"] == "compute" and last["ok"] is False and "libcuda.so.1" in last["error"]
    assert not (tmp_path / "r").exists()


def test_ptx_is_old_enough_for_t4_and_h200_drivers_to_jit() -> None:
    version = re.search(r"^\.version (\d+)\.(\d+)$", kernel.PTX, re.M)
    target = re.search(r"^\.target sm_(\d+)$", kernel.PTX, re.M)
    assert version and target
    assert (int(version[1]), int(version[2])) <= (7, 0)  # CUDA ≤ 11.0's ISA: any T4-era driver
    assert int(target[1]) <= 75  # not above the T4's sm_75
    assert ".visible .entry spin(" in kernel.PTX and "st.global.f32" in kernel.PTX  # the result is kept


def test_per_second_buckets_work_by_completion_second_and_drops_the_overrun() -> None:
    completions = [(0.2, 1.0), (0.9, 1.0), (1.5, 2.0), (2.99, 4.0), (3.01, 100.0)]
    assert kernel.per_second(completions, 3) == [2.0, 2.0, 4.0]


def test_window_mean_leaves_out_the_warm_up_and_keeps_the_spread_of_whole_seconds() -> None:
    # Full speed (10/s) in the 3 s warm-up, then bursts: 9, 1, 9, 1 …
    completions = [(t + 0.5, 10.0) for t in range(3)] + [(3 + t + 0.5, 9.0 if t % 2 == 0 else 1.0) for t in range(20)]
    stats = kernel.window_stats(completions, 3, 20)
    assert stats["mean_per_s"] == pytest.approx(5.0)  # the bursts' mean, not the warm-up's 10
    assert (stats["per_s_min"], stats["per_s_max"]) == (1.0, 9.0)
    assert stats["per_s_stdev"] == pytest.approx(4.0)


def _no_log(_line: str) -> None: ...


def test_measure_calibrates_each_shape_to_its_launch_length_and_reports_the_throttled_window() -> None:
    clock = FakeClock()
    gpu = ThrottledGpu(clock)
    shapes, calibration = kernel.measure(gpu, list(compute.SHAPES), 3, 20, {}, _no_log, clock)
    assert calibration["short_many"]["blocks"] == 132 * 100
    assert calibration["short_many"]["launch_ms"] == pytest.approx(0.5, rel=0.25)
    assert calibration["long_many"]["launch_ms"] == pytest.approx(2.0, rel=0.25)
    assert calibration["few_long"]["launch_ms"] == pytest.approx(100, rel=0.25)
    short, few = shapes["short_many"], shapes["few_long"]
    full = 3e13 / 1e9  # GFMA/s
    assert short["mean_per_s"] == pytest.approx(full * 0.33, rel=0.05)  # the window is after the 3 s warm-up
    assert few["mean_per_s"] == pytest.approx(2 * 128 * 5e8 / 1e9, rel=0.05)  # two blocks are never throttled
    assert len(short["timeline_per_s"]) == 23 and short["window_s"] == 20


def test_measure_repeats_the_baselines_launches_even_when_told_of_fewer_multiprocessors() -> None:
    clock = FakeClock()
    gpu = ThrottledGpu(clock)
    gpu.sm_count = lambda: 38  # type: ignore[method-assign]  # an MPS client at 30 % is told of 38 of 132
    shapes, calibration = kernel.measure(
        gpu, ["short_many"], 0, 1, {"short_many": 2541}, _no_log, clock, blocks={"short_many": 13200}
    )
    assert calibration == {}
    assert {(grid, iters) for grid, _, iters in gpu.launches} == {(13200, 2541)}
    assert shapes["short_many"]["blocks"] == 13200


def test_shares_divide_each_window_mean_by_the_baselines() -> None:
    limited = {"short_many": {"mean_per_s": 5800.0}, "few_long": {"mean_per_s": 32.0}}
    baseline = {"short_many": {"mean_per_s": 18000.0}, "few_long": {"mean_per_s": 69.6}}
    assert compute.shares(limited, baseline) == {"short_many": 0.322, "few_long": 0.46}
    assert compute.shares({"short_many": {"mean_per_s": 1.0}}, {}) == {"short_many": None}


def _measured(blocks: int) -> dict[str, Any]:
    return {"blocks": blocks, "threads": 256, "launch_ms_median": 4.1}


def test_long_kernels_escape_hami_core_but_a_few_blocks_stay_inside_an_mps_partition() -> None:
    share = {"short_many": 0.32, "long_many": 0.47, "few_long": 0.46}
    measured = {"long_many": _measured(2112), "few_long": _measured(2)}
    hami = {f["id"]: f for f in compute.shape_findings(share, 30, measured, "hami-core", 132)}
    assert hami["long-kernels"]["bypassed"] is True and hami["few-block-kernels"]["bypassed"] is True
    mps_share = {"short_many": 0.30, "long_many": 0.30, "few_long": 1.0}
    mps = {f["id"]: f for f in compute.shape_findings(mps_share, 30, measured, "mps", 38)}
    assert mps["long-kernels"]["bypassed"] is False
    few = mps["few-block-kernels"]
    assert few["bypassed"] is False and "fit in the 38 multiprocessors" in few["observed"]


def test_shape_findings_without_a_limit_or_baseline_say_why_nothing_was_judged() -> None:
    measured = {"long_many": _measured(2112)}
    (found,) = compute.shape_findings({"short_many": 1.0, "long_many": 1.0}, None, measured, "none", 132)
    assert found["bypassed"] is None and found["why"] == "no compute limit is set here"
    (found,) = compute.shape_findings({"short_many": None, "long_many": None}, 30, measured, "hami-core", 132)
    assert found["bypassed"] is None and "no unlimited baseline" in found["why"]


def test_a_child_lifted_its_limit_when_it_ran_much_faster_than_this_limited_process() -> None:
    tried = "the same launches in a child process with GPU_CORE_UTILIZATION_POLICY=disable"
    # Beside a neighbour the child cannot reach 1.0: on the H200 it ran at 0.41 while the Pod ran at 0.317.
    assert compute.lift_finding("utilization-policy-disabled", tried, 0.41, 0.317, 30)["bypassed"] is True
    assert compute.lift_finding("utilization-policy-disabled", tried, 0.33, 0.317, 30)["bypassed"] is False
    unlimited = compute.lift_finding("utilization-policy-disabled", tried, 1.0, 0.98, 30)
    assert unlimited["bypassed"] is None and "did not hold in this process" in unlimited["why"]
    failed = compute.lift_finding("mps-own-thread-percentage", tried, None, 0.3, 30, "exit 1")
    assert failed["bypassed"] is None and "exit 1" in failed["observed"]


@pytest.mark.parametrize(
    ("env", "mechanism", "limit"),
    [
        ({"CUDA_DEVICE_SM_LIMIT": "30"}, "hami-core", 30),
        ({"CUDA_DEVICE_SM_LIMIT_0": "25", "CUDA_DEVICE_SM_LIMIT": "30"}, "hami-core", 25),
        ({"CUDA_DEVICE_SM_LIMIT": "0"}, "hami-core", None),
        ({"CUDA_DEVICE_SM_LIMIT": "100"}, "hami-core", None),
        ({"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": "30"}, "mps", 30),
        ({}, "none", None),
    ],
)
def test_limit_and_mechanism_come_from_the_env(env: dict[str, str], mechanism: str, limit: int | None) -> None:
    assert compute.mechanism_of(env, [], compute.HAMI_COMPUTE_KEYS) == mechanism
    assert compute.limit_percent(env, mechanism) == limit


def test_result_file_truncation_keeps_the_shares_within_4096_bytes() -> None:
    real = Path(__file__).parent / "fixtures" / "real" / "h200" / "cluster-hami-core" / "evidence.json"
    result = json.loads(real.read_text())["gpu-slice-a"]["compute"]
    assert len(json.dumps(result)) > 4096  # the H200's whole result does not fit a termination message
    small = json.loads(compute.fit_result(result, compute.DROP_ORDER))
    assert len(compute.fit_result(result, compute.DROP_ORDER).encode()) <= 4096
    assert small["share"] == result["share"] and small["judged_shape"] == "short_many"
    assert small["shapes"]["short_many"]["mean_per_s"] == result["shapes"]["short_many"]["mean_per_s"]


def test_only_the_judged_shape_gets_the_long_window_the_finding_shapes_a_short_one() -> None:
    assert kernel.shape_window("short_many", 2, 20) == (2, 20)
    assert kernel.shape_window("long_many", 2, 20) == (kernel.FINDING_SHAPE_WARMUP_S, kernel.FINDING_SHAPE_SECONDS)
    assert kernel.shape_window("few_long", 0.5, 3) == (0.5, 3)  # a baseline's shorter window stays its own


def test_measure_gives_the_finding_shapes_their_short_window_and_the_judged_shape_its_own() -> None:
    clock = FakeClock()
    shapes, _ = kernel.measure(ThrottledGpu(clock), list(compute.SHAPES), 2, 20, {}, _no_log, clock)
    assert (shapes["short_many"]["warmup_s"], shapes["short_many"]["window_s"]) == (2, 20)
    assert len(shapes["short_many"]["timeline_per_s"]) == 22
    for name in ("long_many", "few_long"):
        assert (shapes[name]["warmup_s"], shapes[name]["window_s"]) == (1, 3)  # whole seconds


def _baseline(env: dict[str, str], mapped: list[str]) -> dict[str, Any]:
    return {"source": "file", "how": "a process", "env": env, "preload": {"mapped": mapped}}


LIB = ["/opt/libvgpu.so"]
DISABLED = {"CUDA_DEVICE_SM_LIMIT": "30", "GPU_CORE_UTILIZATION_POLICY": "disable"}


@pytest.mark.parametrize(
    ("baseline", "lifted"),
    [
        (_baseline(DISABLED, LIB), True),  # the host proof's baseline: this very try, measured alone
        (_baseline({"CUDA_DEVICE_SM_LIMIT": "30"}, LIB), False),  # limited, not lifted
        (_baseline({**DISABLED, "CUDA_DEVICE_SM_LIMIT": "50"}, LIB), False),  # another limit
        (_baseline(DISABLED, []), False),  # the library was not loaded: it lifted nothing
        (_baseline({}, []), False),  # a process with no library at all (the comparison's baseline)
    ],
)
def test_a_baseline_counts_as_the_lift_try_only_with_the_library_this_limit_and_its_no_limit_setting(
    baseline: dict[str, Any], lifted: bool
) -> None:
    assert compute.baseline_lifted(baseline, compute.NO_LIMIT_ENV["hami-core"], 30, "hami-core") is lifted


def test_the_lift_finding_is_read_off_a_baseline_that_was_the_try_without_a_second_child(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def no_child(*_a: Any, **_k: Any) -> dict[str, Any]:
        raise AssertionError("no child: the baseline already ran with GPU_CORE_UTILIZATION_POLICY=disable")

    monkeypatch.setattr(compute, "run_child", no_child)
    args = compute.parse_args(["--baseline", "/tmp/baseline.json"])
    (found,) = compute.lift_findings(args, "hami-core", 30, _baseline(DISABLED, LIB), {"short_many": 0.29}, _no_log)
    assert found["id"] == "utilization-policy-disabled" and found["bypassed"] is True
    assert "the baseline itself" in found["tried"]
