"""The memory probe without a GPU: its error path, HAMi-core's OOM line, the search bound, the judgement.

A fake driver stands in for libcuda with HAMi-core's measured rules (exact to the byte, the primary
context charged 518 MiB on an H200) so the whole phase sequence runs here.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.facts.regenerate import OOM_LINES
from tests.helpers.probes import ROOT, load_probe, module_argv

MIB = 1 << 20


memory = load_probe("memory")
findings = load_probe("memory_findings")
child = load_probe("memory_child")
OOM_WITH_THREAD = (
    "[HAMI-core ERROR (pid:54 thread=133390658244608 allocator.c:52)]: Device 0 OOM 8629780480 / 8388608000"
)
OOM_WITHOUT_THREAD = "[HAMI-core ERROR (pid:479 allocator.c:52)]: Device 0 OOM 4401922048 / 4194304000"


class FakeDriver:
    """libcuda as a quota sees it: HAMi-core's rule `used + request > limit` refused, context charged."""

    def __init__(self, physical_mib: int, quota_mib: int | None, context_mib: int, slack_mib: int = 0) -> None:
        self.physical, self.quota, self.context = physical_mib * MIB, quota_mib and quota_mib * MIB, context_mib * MIB
        self.slack = slack_mib * MIB  # bare GPU: free memory a single allocation cannot quite take
        self.used = 0
        self.live: dict[int, int] = {}
        self.calls = 0

    def init(self) -> None: ...
    def name(self) -> str:
        return "NVIDIA H200"

    def uuid(self) -> str:
        return "GPU-3b4d8a8e-1f2a-4c2b-9d1e-0a1b2c3d4e5f"

    def use_primary_context(self) -> None:
        self.used += self.context

    def mem_info(self) -> tuple[int, int]:
        total = self.quota or self.physical
        return total - self.used, total

    def try_alloc(self, nbytes: int) -> tuple[int | None, str | None]:
        self.calls += 1
        if self.quota is not None and self.used + nbytes > self.quota:
            line = f"[HAMI-core ERROR (pid:1 allocator.c:52)]: Device 0 OOM {self.used + nbytes} / {self.quota}\n"
            os.write(2, line.encode())
            return None, "CUDA_ERROR_OUT_OF_MEMORY"
        if self.used + nbytes > self.physical - self.slack:
            return None, "CUDA_ERROR_OUT_OF_MEMORY"
        self.used += nbytes
        ptr = len(self.live) + 1 + max(self.live, default=0)
        self.live[ptr] = nbytes
        return ptr, None

    def free(self, ptr: int) -> None:
        self.used -= self.live.pop(ptr)


class FakeNvml:
    def __init__(self, driver: FakeDriver) -> None:
        self.driver = driver

    def memory(self) -> tuple[int, int]:
        free, total = self.driver.mem_info()
        return total, free

    def uuid(self) -> str:
        return self.driver.uuid()


def _args(**over: Any) -> argparse.Namespace:
    argv = ["--json", "--hold-seconds", "0"]
    for key, value in over.items():
        argv += [f"--{key.replace('_', '-')}"] + ([] if value is True else [str(value)])
    return memory.parse_args(argv)


def _measure(driver: FakeDriver, runner: Any = None, **over: Any) -> dict[str, Any]:
    args = _args(**over)
    result = memory.new_result(args.expect_limit_mib)
    memory.measure(driver, FakeNvml(driver), args, result, lambda _line: None, runner or _no_children)
    return result


def _no_children(mode: str, mib: int, env: dict[str, str]) -> dict[str, Any]:
    raise AssertionError("no child process expected without --findings")


def _run_probe(*argv: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(module_argv("memory", *argv), env=env, cwd=ROOT, capture_output=True, text=True,
                          timeout=60)  # fmt: skip


def test_memory_probe_without_libcuda_prints_a_json_error_and_exits_nonzero(tmp_path: Path) -> None:
    env = {**os.environ, "GPUSHARE_LIBCUDA": str(tmp_path / "libcuda.so.1")}
    result_file = tmp_path / "termination-log"
    ready = tmp_path / "ready"
    done = _run_probe("--json", "--result-file", str(result_file), "--ready-file", str(ready), env=env)
    assert done.returncode != 0
    last = json.loads(done.stdout.strip().splitlines()[-1])
    assert last["probe"] == "memory" and last["ok"] is False
    assert "libcuda.so.1" in last["error"]
    assert json.loads(result_file.read_text())["error"] == last["error"]
    assert not ready.exists()


def test_parse_oom_line_with_thread_field() -> None:
    assert memory.parse_oom_line(OOM_WITH_THREAD) == (0, 8629780480, 8388608000)


def test_parse_oom_line_without_thread_field() -> None:
    assert memory.parse_oom_line(OOM_WITHOUT_THREAD) == (0, 4401922048, 4194304000)


def test_parse_oom_line_ignores_other_lines() -> None:
    assert memory.parse_oom_line("[HAMI-core Msg(54:1:libvgpu.c:836)]: Initializing.....") is None
    assert memory.parse_oom_line("cudaMalloc 4.0 GiB -> errcode=2  OOM") is None


def test_parse_oom_line_reads_every_oom_line_the_labs_recorded() -> None:
    recorded = json.loads(OOM_LINES.read_text())["lines"]  # tests/facts, from ../shared/seeds
    lines = [line for seed in sorted(recorded) for line in recorded[seed]]
    assert len(lines) >= 3  # two from the T4 lab (with no-break spaces, as recorded), one from the k3s lab
    for line in lines:
        parsed = memory.parse_oom_line(line)
        assert parsed is not None, line
        _, used, limit = parsed
        assert used > limit  # a refusal is always over the limit
    # The T4 lab's context overhead: 4401922048 − 4.0 GiB = 102 MiB.
    assert memory.parse_oom_line(OOM_WITHOUT_THREAD)[1] - 4 * 1024 * MIB == 102 * MIB


@pytest.mark.parametrize(
    ("limit", "free", "total"),
    [
        (3482, 3482, 4000),  # HAMi-core under 4000m on an H200: the view's free is the exact answer
        (3898, 3898, 4000),  # the same on a T4 (102 MiB context)
        (4000, 4000, 4000),
        (3482, 4000, 4000),  # a view that does not subtract the context
        (142_626, 142_629, 143_155),  # the bare H200 as measured: 3 MiB of free memory no allocation takes
        (143_000, 143_253, 143_771),  # free more than 64 MiB above the answer
        (143_771, 143_771, 143_771),
        (1, 1, 143_771),
        (0, 0, 4000),
        (77_777, 10_000, 143_771),  # free far below the answer
    ],
)
def test_largest_allocation_finds_the_limit_to_1_mib_within_the_call_bound(limit: int, free: int, total: int) -> None:
    seen: list[int] = []

    def alloc(mib: int) -> bool:
        seen.append(mib)
        return mib <= limit

    largest, calls = memory.largest_allocation(alloc, free, total)
    assert largest == limit
    assert calls == len(seen)
    assert calls <= math.ceil(math.log2(total)) + 2


def test_search_bound_on_the_h200_is_20_calls() -> None:
    assert memory.search_bound(143_771) == 20


def test_memory_probe_under_a_hami_quota_finds_3482_mib_and_judges_it_enforced() -> None:
    driver = FakeDriver(physical_mib=143_771, quota_mib=4000, context_mib=518)
    result = _measure(driver, expect_limit_mib=4000, hold_mib=3072, extra_mib=2048, sweep_gib="2,3,3.8,4,4.5,6")
    assert result["ok"] is True
    assert (result["visible_total_mib"], result["visible_free_mib"]) == (4000, 3482)
    assert result["largest_alloc_mib"] == 3482 and result["context_overhead_mib"] == 518
    assert result["search_calls"] <= memory.search_bound(4000)
    hold = result["phases"]["hold"]
    assert hold["ok"] is True and hold["extra_ok"] is False and hold["extra_error"] == "CUDA_ERROR_OUT_OF_MEMORY"
    assert [s["ok"] for s in result["phases"]["sweep"]] == [True, True, False, False, False, False]
    assert result["phases"]["chunks"]["allocated_mib"] == 13 * 256
    assert result["cuda_error"] == "CUDA_ERROR_OUT_OF_MEMORY"
    assert result["limit_enforced"] is True
    # The refusals' stderr lines, written from below Python (fd 2), were captured and parsed.
    assert result["hami_oom_lines"] and all(memory.parse_oom_line(line) for line in result["hami_oom_lines"])
    assert driver.used == 518 * MIB  # everything but the context was freed


def test_memory_probe_on_a_bare_gpu_judges_the_limit_not_enforced() -> None:
    driver = FakeDriver(physical_mib=143_771, quota_mib=None, context_mib=518, slack_mib=2)
    result = _measure(driver, expect_limit_mib=4000)
    assert result["largest_alloc_mib"] == 143_771 - 518 - 2
    assert result["phases"]["hold"]["extra_ok"] is True
    assert result["context_overhead_mib"] is None  # no quota held, so no context charge to read off
    assert result["limit_enforced"] is False
    assert result["hami_oom_lines"] == []


def test_memory_probe_without_expectation_judges_nothing() -> None:
    result = _measure(FakeDriver(physical_mib=16_000, quota_mib=4000, context_mib=102))
    assert result["largest_alloc_mib"] == 3898 and result["limit_enforced"] is None
    assert memory.should_mark_ready(result) is True


def _recorded(**over: Any) -> dict[str, Any]:
    """A result as a HAMi-core Pod under 4000m records it."""
    result = memory.new_result(4000)
    result.update(ok=True, visible_total_mib=4000, largest_alloc_mib=3482)
    result["phases"]["hold"] = {"ok": True, "extra_ok": False}
    result["phases"]["chunks"] = {"allocated_mib": 3328}
    for key, value in over.items():
        result[key] = value
    return result


@pytest.mark.parametrize(
    ("over", "expected"),
    [
        ({}, True),
        ({"expected_limit_mib": None}, None),
        ({"visible_total_mib": 143_771}, False),  # the view is the whole card and free is unknown
        ({"visible_total_mib": 143_155, "visible_free_mib": 3833, "largest_alloc_mib": 3833}, True),  # MPS
        ({"largest_alloc_mib": 4001}, False),  # one MiB over the quota fitted
        ({"phases": {"hold": {"ok": True, "extra_ok": True}, "chunks": {"allocated_mib": 0}}}, False),
        ({"phases": {"hold": {"ok": False, "extra_ok": False}, "chunks": {"allocated_mib": 0}}}, False),
        ({"phases": {"hold": {"ok": True, "extra_ok": False}, "chunks": {"allocated_mib": 5120}}}, False),
        ({"ok": False}, False),
    ],
)
def test_limit_enforced_judgement_on_recorded_results(over: dict[str, Any], expected: bool | None) -> None:
    assert memory.judge_limit(_recorded(**over)) is expected


def test_ready_file_waits_for_an_enforced_limit() -> None:
    assert memory.should_mark_ready(_recorded(limit_enforced=True)) is True
    assert memory.should_mark_ready(_recorded(limit_enforced=False)) is False
    assert memory.should_mark_ready(_recorded(ok=False, limit_enforced=True)) is False


def _h200_hami_child(quota_mib: int, context_mib: int, parent_cache: str | None) -> Any:
    """A child process as HAMi-core treated it on the H200: a region's limit is its first opener's (a fresh file
    is a new region, its own env's limit then counts; 0 is none), the primary context is charged, a cuCtxCreate
    context is not. No cache variable opens the default file (multiprocess_memory_limit.c:1077-1080)."""
    default = memory.all_findings.__globals__["DEFAULT_CACHE"]
    regions = {parent_cache or default: quota_mib}  # the parent made its region first

    def runner(mode: str, mib: int, env: dict[str, str]) -> dict[str, Any]:
        path = env.get("CUDA_DEVICE_MEMORY_SHARED_CACHE") or default
        own = env.get("CUDA_DEVICE_MEMORY_LIMIT_0") or env.get("CUDA_DEVICE_MEMORY_LIMIT")
        limit = regions.setdefault(path, int(own.rstrip("m")) if own else 0)
        if mode == "view":  # a fresh control child's view: its primary context's charge
            return {"ok": True, "allocated": False, "charged_mib": context_mib, "own_context_mib": None, "stderr": ""}
        held = quota_mib // 2 + context_mib if path == (parent_cache or default) else 0  # the parent's hold
        charged = (0 if mode == "ctx-create" else context_mib) + held
        if mode == "largest":
            largest = mib if limit == 0 else max(min(mib, limit - charged), 0)
            return {"ok": True, "allocated": largest > 0, "largest_mib": largest, "view_total_mib": limit or 143_771,
                    "stderr": ""}  # fmt: skip
        allocated = limit == 0 or charged + mib <= limit
        return {"ok": True, "allocated": allocated, "cuda_error": None if allocated else "CUDA_ERROR_OUT_OF_MEMORY",
                "stderr": "" if allocated else OOM_WITHOUT_THREAD + "\n"}  # fmt: skip

    return runner


@pytest.fixture(autouse=True)
def _default_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The default region file, where a test can see it (never the machine's own /tmp/cudevshr.cache)."""
    path = tmp_path / "cudevshr.cache"
    monkeypatch.setitem(memory.all_findings.__globals__, "DEFAULT_CACHE", str(path))
    monkeypatch.setattr(findings, "DEFAULT_CACHE", str(path))
    return path


def test_findings_report_a_fresh_cache_file_an_own_limit_and_a_created_context_as_bypasses(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CUDA_DEVICE_MEMORY_LIMIT_0", "4000m")
    monkeypatch.setenv("CUDA_DEVICE_MEMORY_SHARED_CACHE", "/tmp/pod.cache")
    driver = FakeDriver(physical_mib=143_771, quota_mib=4000, context_mib=518)
    result = _measure(driver, _h200_hami_child(4000, 518, "/tmp/pod.cache"), expect_limit_mib=4000, findings=True)
    by_id = {f["id"]: f for f in result["findings"]}
    assert list(by_id) == ["fresh-cache-file", "own-limit-fresh-cache", "cuctxcreate-context", "context-charge",
                           "env-less-process", "env-less-first-toucher"]  # fmt: skip
    bypasses = [by_id[f] for f in ("fresh-cache-file", "own-limit-fresh-cache", "cuctxcreate-context")]
    assert all(f["bypassed"] is True and "why" not in f for f in bypasses)
    charged = by_id["context-charge"]  # charged as a fresh control child is: no way around the quota
    assert charged["bypassed"] is False and (charged["charged_mib"], charged["context_mib"]) == (518, 518)
    assert "together 5000 MiB, over the 4000 MiB quota" in by_id["fresh-cache-file"]["observed"]
    assert "was refused 8000 MiB" in by_id["own-limit-fresh-cache"]["observed"]  # the shared file pins the limit
    assert "a fresh child was refused 3741 MiB" in by_id["cuctxcreate-context"]["observed"]
    assert OOM_WITHOUT_THREAD in result["hami_oom_lines"]
    assert result["limit_enforced"] is True  # findings are reported, never judged


def test_created_context_is_not_called_a_bypass_when_a_fresh_primary_context_fits_too(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CUDA_DEVICE_MEMORY_LIMIT_0", "4000m")
    runner = _h200_hami_child(4000, 0, "/tmp/pod.cache")  # a child whose primary context is charged nothing
    found = findings.context_finding(3482, 518, 4000, runner, [])
    assert found["bypassed"] is None and "cannot single out cuCtxCreate" in found["why"]


def test_findings_on_a_bare_gpu_say_there_is_nothing_to_bypass() -> None:
    driver = FakeDriver(physical_mib=143_771, quota_mib=None, context_mib=518)
    result = _measure(driver, _no_children, expect_limit_mib=4000, findings=True)
    assert [f["bypassed"] for f in result["findings"]] == [None] * 6
    assert {f["id"] for f in result["findings"]} >= {"context-charge", "cuctxcreate-context"}
    assert all("did not hold in this process itself" in f["why"] for f in result["findings"])


class MpsDriver(FakeDriver):
    """An MPS client with a pinned limit, as on the H200: the total is the card's, free is the pinned limit less
    the client's context, and a refusal past it prints nothing."""

    def __init__(self, pinned_mib: int, context_mib: int) -> None:
        super().__init__(physical_mib=143_155, quota_mib=None, context_mib=context_mib)
        self.pinned = pinned_mib * MIB

    def mem_info(self) -> tuple[int, int]:
        return self.pinned - self.used, self.physical

    def try_alloc(self, nbytes: int) -> tuple[int | None, str | None]:
        if self.used + nbytes > self.pinned:
            self.calls += 1
            return None, "CUDA_ERROR_OUT_OF_MEMORY"
        return super().try_alloc(nbytes)


def test_memory_probe_recognises_mps_enforcement_without_a_rewritten_view(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", "0=4000M")
    result = _measure(MpsDriver(pinned_mib=4000, context_mib=167), expect_limit_mib=4000, hold_mib=3072,
                      extra_mib=2048)  # fmt: skip
    assert result["mechanism"] == "mps"
    seen = (result["visible_total_mib"], result["visible_free_mib"], result["largest_alloc_mib"])
    assert seen == (143_155, 3833, 3833)
    assert result["enforcement"] == {"view_rewritten": False, "free_within_limit": True, "oom_lines": 0}
    assert result["limit_enforced"] is True and result["search_calls"] == 2


def test_mps_findings_try_a_larger_pinned_limit_and_leaving_the_server(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", "0=4000M")
    asked: list[tuple[str, int, dict[str, str]]] = []

    def runner(mode: str, mib: int, env: dict[str, str]) -> dict[str, Any]:
        asked.append((mode, mib, env))
        pinned = env.get("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", "")
        outside = "no-mps" in env.get("CUDA_MPS_PIPE_DIRECTORY", "")
        allocated = outside or (pinned != "0=4000M" and mode == "alloc")
        return {"ok": True, "allocated": allocated, "cuda_error": None if allocated else "CUDA_ERROR_OUT_OF_MEMORY",
                "stderr": ""}  # fmt: skip

    result = _measure(MpsDriver(pinned_mib=4000, context_mib=167), runner, expect_limit_mib=4000, findings=True)
    by_id = {f["id"]: f["bypassed"] for f in result["findings"]}
    assert by_id == {"mps-own-pinned-limit": True, "mps-pipe-directory": True, "cuctxcreate-context": False}
    assert [e.get("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT") for m, mib, e in asked[:2]] == ["0=4000M", "0=16000M"]


@pytest.mark.parametrize("quota", [4000, 4147, 8000])
@pytest.mark.parametrize("mechanism", ["hami-core", "mps"])
def test_the_boundary_is_found_to_1_mib_within_log2_quota_plus_3_calls(quota: int, mechanism: str) -> None:
    driver = (
        FakeDriver(physical_mib=143_771, quota_mib=quota, context_mib=518)
        if mechanism == "hami-core"
        else MpsDriver(pinned_mib=quota, context_mib=167)
    )
    driver.use_primary_context()
    free, total = (n // MIB for n in driver.mem_info())
    alloc = memory.Allocator(driver)
    largest, calls = memory.largest_allocation(alloc.fits, free, total)
    assert largest == quota - (518 if mechanism == "hami-core" else 167)
    assert not alloc.fits(largest + 1)
    assert calls <= math.ceil(math.log2(quota)) + 3


def test_preload_evidence_lists_what_should_load_and_maps_what_did(tmp_path: Path) -> None:
    lib = tmp_path / "libvgpu.so"
    lib.write_bytes(b"")
    preload = tmp_path / "ld.so.preload"
    preload.write_text(f"{lib}\n/usr/lib/missing.so\n")
    maps = tmp_path / "maps"
    maps.write_text(
        f"7f00-7f01 r-xp 00000000 08:01 1 {lib}\n"
        "7f02-7f03 r-xp 00000000 08:01 2 /usr/lib/libc.so.6\n"
        "7f04-7f05 rw-p 00000000 00:00 0 [heap]\n"
    )
    found = memory.preload_evidence(str(preload), str(maps), env={"LD_PRELOAD": "/opt/other.so"})
    assert found == {"listed": [str(lib), "/usr/lib/missing.so", "/opt/other.so"], "mapped": [str(lib)]}
    assert memory.preload_evidence(str(tmp_path / "none"), str(maps), env={}) == {"listed": [], "mapped": [str(lib)]}


def test_result_file_truncation_keeps_valid_json_within_4096_bytes() -> None:
    result = _recorded(limit_enforced=True, cuda_error="CUDA_ERROR_OUT_OF_MEMORY")
    result["hami_oom_lines"] = [OOM_WITH_THREAD] * 200
    result["findings"] = [{"id": "fresh-cache-file", "tried": "x" * 900, "observed": "y" * 900}] * 3
    text = memory.fit_result(result, memory.DROP_ORDER)
    assert len(text.encode()) <= 4096
    small = json.loads(text)
    assert small["limit_enforced"] is True and small["largest_alloc_mib"] == 3482
    assert "hami_oom_lines" in small["truncated"]


def test_result_file_keeps_a_small_result_whole() -> None:
    result = _recorded(limit_enforced=True)
    assert json.loads(memory.fit_result(result, memory.DROP_ORDER)) == result


class UnchargedDriver(FakeDriver):
    """HAMi-core after it took the neighbour's PID for its own: the primary context exists (NVML counts it) but the
    quota was charged nothing for it, so the whole quota fits beside it."""

    def use_primary_context(self) -> None:
        pass


class CountingNvml(FakeNvml):
    """NVML listing this process with its context's real size, as on a host where the PIDs are ours."""

    def __init__(self, driver: FakeDriver, context_mib: int) -> None:
        super().__init__(driver)
        self.context = context_mib

    def process_used(self, pid: int) -> int | None:
        return self.context * MIB if pid == os.getpid() else None


def test_a_pod_whose_context_went_uncharged_is_a_context_charge_bypass_with_the_mib_over_its_quota(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CUDA_DEVICE_MEMORY_LIMIT_0", "4000m")
    monkeypatch.setenv("CUDA_DEVICE_MEMORY_SHARED_CACHE", "/tmp/pod.cache")
    driver = UnchargedDriver(physical_mib=143_771, quota_mib=4000, context_mib=518)
    args = _args(expect_limit_mib=4000, findings=True)
    result = memory.new_result(4000)
    memory.measure(driver, CountingNvml(driver, 518), args, result, lambda _l: None,
                   _h200_hami_child(4000, 518, "/tmp/pod.cache"))  # fmt: skip
    assert (result["largest_alloc_mib"], result["context_overhead_mib"], result["own_context_mib"]) == (4000, 0, 518)
    assert result["limit_enforced"] is True  # nothing past the quota was allocated: the charge is a finding
    charge = next(f for f in result["findings"] if f["id"] == "context-charge")
    assert charge["bypassed"] is True and (charge["charged_mib"], charge["over_quota_mib"]) == (0, 518)
    assert "it can hold 4000 MiB of allocations beside its 518 MiB context, 518 MiB over its quota" in charge[
        "observed"]  # fmt: skip
    assert charge["references_mib"] == {"a fresh control child's charge": 518}


@pytest.mark.parametrize(
    ("charged", "own", "control", "bypassed", "over"),
    [
        (0, None, 518, True, 518),  # in a Pod NVML cannot name this process: the control's charge is the size
        (442, 518, 0, True, 76),  # the control raced too: NVML's count of this very process decides
        (514, 518, 518, False, 4),  # a few MiB is contexts differing, not a way around the quota
        (518, None, None, None, None),  # nothing to compare with
    ],
)
def test_the_context_charge_is_judged_against_nvmls_count_or_the_largest_charge_seen(
    charged: int, own: int | None, control: int | None, bypassed: bool | None, over: int | None
) -> None:
    found = findings.charge_finding(charged, 4000, {"a fresh control child's charge": control}, own)
    assert found["bypassed"] is bypassed and found.get("over_quota_mib") == over


def test_a_neighbour_charged_in_full_shows_the_uncharged_pod_even_when_its_control_raced_too() -> None:
    alone = findings.charge_finding(0, 4000, {"a fresh control child's charge": 0}, None)
    assert alone["bypassed"] is False  # its own control was charged 0 as well: nothing to see from inside
    found = {**alone, "pod": "gpu-slice-b", "probe": "memory"}
    (again,) = findings.with_neighbours([found], {"gpu-slice-a": 518, "gpu-slice-b": 0})
    assert again["bypassed"] is True and again["over_quota_mib"] == 518 and again["pod"] == "gpu-slice-b"
    assert again["references_mib"] == {"a fresh control child's charge": 0, "neighbour gpu-slice-a's charge": 518}


def test_nvml_counts_a_process_by_its_pid_and_not_one_it_does_not_list() -> None:
    from tests.helpers.probes import load_probe

    bindings = load_probe("nvml")

    def listed(_handle: Any, count: Any, infos: Any) -> int:
        count._obj.value = 2
        infos[0].pid, infos[0].usedGpuMemory = 11, 518 * MIB
        infos[1].pid, infos[1].usedGpuMemory = 12, (1 << 64) - 1  # NVML_VALUE_NOT_AVAILABLE
        return 0

    nvml = bindings.Nvml.__new__(bindings.Nvml)
    nvml.lib, nvml.handle = argparse.Namespace(nvmlDeviceGetComputeRunningProcesses=listed), None
    assert (nvml.process_used(11), nvml.process_used(12), nvml.process_used(13)) == (518 * MIB, None, None)


def test_the_view_child_without_a_driver_answers_json_and_exits_nonzero(tmp_path: Path) -> None:
    env = {**os.environ, "GPUSHARE_LIBCUDA": str(tmp_path / "libcuda.so.1")}
    done = subprocess.run(module_argv("memory_child", "--child", "view", "--child-mib", "0"), env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    answer = json.loads(done.stdout.splitlines()[-1])
    assert done.returncode == 1 and answer["ok"] is False and "cannot load" in answer["error"]


def _recording(runner: Any, seen: list[tuple[str, dict[str, str]]]) -> Any:
    def record(mode: str, mib: int, env: dict[str, str]) -> dict[str, Any]:
        seen.append((mode, dict(env)))
        if "CUDA_DEVICE_MEMORY_SHARED_CACHE" not in env:  # HAMi-core creates the default region's file
            Path(findings.DEFAULT_CACHE).touch()
        return runner(mode, mib, env)

    return record


def test_an_env_less_process_beside_a_hami_pod_opens_its_own_unlimited_region_and_poisons_a_region_it_makes_first(
    monkeypatch: pytest.MonkeyPatch, _default_cache: Path
) -> None:
    for key, value in {
        "CUDA_DEVICE_MEMORY_LIMIT_0": "4000m",
        "CUDA_DEVICE_SM_LIMIT": "30",
        "CUDA_DEVICE_MEMORY_SHARED_CACHE": "/tmp/pod.cache",
        "LD_PRELOAD": "/x/libvgpu.so",
    }.items():
        monkeypatch.setenv(key, value)  # fmt: skip
    seen: list[tuple[str, dict[str, str]]] = []
    after, first = findings.env_less_findings(4000, _recording(_h200_hami_child(4000, 518, "/tmp/pod.cache"), seen), [])
    assert after["id"] == "env-less-process" and after["bypassed"] is True and after["largest_mib"] == 8000
    assert after["region_is_the_pods"] is False and after["region_existed"] is False
    assert first["id"] == "env-less-first-toucher" and first["bypassed"] is True and first["largest_mib"] == 8000
    assert first["after_largest_mib"] <= 4000 and first["reachable"] is False  # the other order is held
    for _mode, env in seen:
        if "CUDA_DEVICE_MEMORY_LIMIT_0" not in env:  # every env-less child: none of HAMi-core's env, the library kept
            assert not {k for k in env if k.startswith(("CUDA_DEVICE_MEMORY_LIMIT", "CUDA_DEVICE_SM_LIMIT"))}
            assert env["LD_PRELOAD"] == "/x/libvgpu.so"
    bare = [env for mode, env in seen if "CUDA_DEVICE_MEMORY_SHARED_CACHE" not in env]
    assert len(bare) == 1  # only the `env -i` child opens the default region
    assert not _default_cache.exists()  # made by the try, not the Pod's: no unlimited region is left behind


def test_in_a_kai_pod_the_env_less_process_joins_the_pods_region_and_is_held_but_as_first_toucher_unlimits_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CUDA_DEVICE_MEMORY_LIMIT", "4147m")  # KAI's binder: no cache file named
    monkeypatch.delenv("CUDA_DEVICE_MEMORY_SHARED_CACHE", raising=False)
    after, first = findings.env_less_findings(4147, _h200_hami_child(4147, 518, None), [])
    assert after["bypassed"] is False and after["region_is_the_pods"] is True and after["largest_mib"] <= 4147
    assert "this Pod's own region" in after["observed"]
    assert first["after_largest_mib"] == after["largest_mib"]  # an env-less process after: the same region, held
    assert first["bypassed"] is True and first["reachable"] is True and "opens this Pod region" in first["observed"]


def test_the_largest_child_asks_the_cap_first_then_halves_to_one_mib() -> None:
    assert child.largest_up_to(lambda mib: True, 8000) == (8000, 1)
    largest, calls = child.largest_up_to(lambda mib: mib <= 3482, 8000)
    assert largest == 3482 and calls <= 1 + math.ceil(math.log2(8000))
    assert child.largest_up_to(lambda mib: False, 8000)[0] == 0
