"""The allocation-paths probe against a ctypes-level fake libcuda (tests/helpers/fake_libcuda.py): what each door
takes, what the quota counts, and the escapes of the same family."""

from __future__ import annotations

import argparse
from typing import Any

import pytest

from components.incluster.probes import allocation_child, allocation_paths, device_nodes
from components.incluster.probes.cuda import Cuda
from tests.helpers.fake_libcuda import MIB, FakeLibcuda

# What the quota counts when every door but the virtual-memory API and the own pool is hooked.
MOST = {"cuMemAlloc_v2", "cuMemAllocPitch_v2", "cuMemAllocManaged", "cuMemAllocAsync", "cuMemAllocFromPoolAsync",
        "cuArray3DCreate_v2", "cuMipmappedArrayCreate", "cuGraphAddMemAllocNode"}  # fmt: skip


def _cuda(lib: FakeLibcuda) -> Cuda:
    cuda = Cuda.__new__(Cuda)
    cuda.lib, cuda.device, cuda.context = lib, 0, None
    return cuda


class FakeNvml:
    def __init__(self, lib: FakeLibcuda) -> None:
        self.lib = lib

    def process_used(self, pid: int) -> int:
        return self.lib.used

    def memory(self) -> tuple[int, int]:
        return self.lib.card, self.lib.card - self.lib.used

    def uuid(self) -> None:
        return None

    def minor(self) -> int:
        return 0


def _try(lib: FakeLibcuda, path: str, ask: int = 6144) -> dict[str, Any]:
    return allocation_child.try_path(_cuda(lib), FakeNvml(lib), path, ask, allocation_paths.STEP_MIB)


@pytest.mark.parametrize("path", allocation_child.PATHS)
def test_a_hooked_door_stops_at_the_quota_and_frees_everything(path: str) -> None:
    lib = FakeLibcuda(card_mib=80_000, quota_mib=4000, hooked=MOST | {"cuMemCreate", "cuMemAllocFromPoolAsync:own"})
    answer = _try(lib, path)
    assert answer["ok"] is True, answer
    assert answer["got_mib"] == 3584  # seven 512 MiB steps fit under 4000, the eighth does not
    assert answer["refused_with"] == "CUDA_ERROR_OUT_OF_MEMORY"
    assert answer["view_free_mib"] == 4000 - 3584
    assert answer["plain_after_ok"] is False  # the last step's size no longer fits beside it
    assert lib.live == {} and lib.used == 0  # every step given back


@pytest.mark.parametrize("path", ["cuMemCreate", "cuMemAllocFromPoolAsync (own pool)"])
def test_an_unhooked_door_takes_the_whole_ask_and_a_plain_allocation_still_fits(path: str) -> None:
    lib = FakeLibcuda(card_mib=80_000, quota_mib=4000, hooked=MOST)
    answer = _try(lib, path)
    assert answer["got_mib"] == 6144 and answer["refused_with"] is None
    assert answer["nvml_process_mib"] == 6144  # the card holds it although the quota never saw it
    assert answer["plain_after_ok"] is True
    assert lib.live == {}


def test_the_virtual_memory_door_reserves_maps_grants_access_and_writes_each_step() -> None:
    lib = FakeLibcuda(card_mib=80_000, quota_mib=4000, hooked=MOST)
    _try(lib, "cuMemCreate", ask=1024)
    assert lib.seen["reserved"] == lib.seen["mapped"] == lib.seen["touched"] == [512 * MIB, 512 * MIB]
    assert lib.seen["access"] == [(1, 0, 3, 1), (1, 0, 3, 1)]  # device 0, PROT_READWRITE, one descriptor


def test_managed_memory_is_prefetched_to_the_card_and_written_there() -> None:
    lib = FakeLibcuda(card_mib=80_000, quota_mib=4000, hooked=MOST)
    _try(lib, "cuMemAllocManaged", ask=1024)
    assert lib.seen["prefetched"] == lib.seen["touched"] == [512 * MIB, 512 * MIB]


def test_arrays_are_asked_in_256_mib_slices_of_the_step() -> None:
    lib = FakeLibcuda(card_mib=80_000, quota_mib=100_000, hooked=MOST)
    answer = _try(lib, "cuArray3DCreate", ask=2048)
    assert answer["got_mib"] == 2048 and answer["nvml_process_mib"] == 2048  # 4 steps of 2 slices


def test_the_graph_node_is_launched_and_its_memory_given_back() -> None:
    lib = FakeLibcuda(card_mib=80_000, quota_mib=100_000, hooked=MOST)
    answer = _try(lib, "cuGraphAddMemAllocNode", ask=1024)
    assert lib.seen["graph_ask"] == [512 * MIB, 512 * MIB]
    assert answer["got_mib"] == 1024 and lib.live == {}


def test_the_card_refuses_what_no_quota_does() -> None:
    lib = FakeLibcuda(card_mib=3000, quota_mib=100_000, hooked=MOST)
    answer = _try(lib, "cuMemAlloc")
    assert answer["got_mib"] == 2560 and answer["refused_with"] == "CUDA_ERROR_OUT_OF_MEMORY"


def test_a_missing_entry_point_is_a_path_error_not_a_crash(capsys: pytest.CaptureFixture[str]) -> None:
    lib = FakeLibcuda(card_mib=80_000, quota_mib=4000, hooked=MOST)
    del FakeLibcuda.cuMemPoolCreate  # type: ignore[attr-defined]
    try:
        code = allocation_child.child_main("cuMemAllocFromPoolAsync (own pool)", 1024, 512, _cuda(lib), FakeNvml(lib))
    finally:
        FakeLibcuda.cuMemPoolCreate = _pool_create  # type: ignore[attr-defined]
    assert code == 1
    assert "cuMemPoolCreate is missing" in capsys.readouterr().out


_pool_create = FakeLibcuda.cuMemPoolCreate


def test_the_ask_is_clearly_past_the_quota_in_whole_steps() -> None:
    assert allocation_paths.ask_for(4000) == 6144  # 4000 + 2048, rounded up to 512
    assert allocation_paths.ask_for(40_000) == 60_416  # half again past a large quota
    assert allocation_paths.ask_for(4000) % allocation_paths.STEP_MIB == 0


def _args(*argv: str) -> argparse.Namespace:
    return allocation_paths.parse_args(["--json", "--expect-limit-mib", "4000", *argv])


def test_every_path_runs_in_its_own_child_and_the_second_process_asks_beside_a_held_half() -> None:
    lib = FakeLibcuda(card_mib=80_000, quota_mib=4000, hooked=MOST)
    asked: list[tuple[str, int]] = []

    def runner(path: str, ask: int, step: int) -> dict[str, Any]:
        asked.append((path, ask))
        # A later process sees the quota as the one holding the half left it (a shared quota).
        return allocation_child.try_path(_cuda(lib), FakeNvml(lib), path, ask, step)

    result = allocation_paths.new_result(4000)
    allocation_paths.measure(_cuda(lib), FakeNvml(lib), _args(), result, lambda _l: None, runner)
    assert [p for p, _ in asked] == [*allocation_child.PATHS, "cuMemAlloc"]
    assert {a for _, a in asked} == {6144}
    second = result["second_process"]
    assert second["held"] is True and second["hold_mib"] == 2000
    assert second["answer"]["got_mib"] == 1536  # what is left of one quota beside 2000 MiB, in 512 MiB steps
    escaped = {p["path"] for p in result["paths"] if p["got_mib"] > 4000}
    assert escaped == {"cuMemCreate", "cuMemAllocFromPoolAsync (own pool)"}


def test_a_child_that_dies_gives_the_whole_shape_with_its_error() -> None:
    answer = allocation_paths.full_answer("cuMemAlloc", 6144, 512, {"path": "cuMemAlloc", "ok": False, "error": "x"})
    assert set(answer) == set(allocation_child.new_answer("cuMemAlloc", 6144, 512))
    assert answer["got_mib"] == 0 and answer["error"] == "x" and answer["pid"] is None


def test_an_unknown_path_is_refused_by_name() -> None:
    with pytest.raises(SystemExit):
        _args("--paths", "cuMemAlloc;cudaMallocHost")


def test_device_nodes_beyond_the_card_are_told_from_its_own_and_the_control_nodes() -> None:
    assert device_nodes.kind_of("/dev/nvidia3", 3) == "own"
    assert device_nodes.kind_of("/dev/nvidia0", 3) == "card"
    assert device_nodes.kind_of("/dev/nvidiactl", 3) == "control"
    assert device_nodes.kind_of("/dev/infiniband/uverbs0", 3) == "other"
    assert device_nodes.kind_of("/dev/nvidia0", None) == "card"


def test_device_nodes_are_each_tried_once(tmp_path: Any) -> None:
    for name in ("nvidia0", "nvidia1", "nvidiactl"):
        (tmp_path / name).write_text("")
    tried: list[str] = []

    def opener(path: str) -> str | None:
        tried.append(path)
        return None if path.endswith("nvidia1") else "Permission denied"

    found = device_nodes.device_nodes(0, [str(tmp_path / "nvidia*"), str(tmp_path / "nvidia1")], opener)
    assert tried == sorted(str(tmp_path / n) for n in ("nvidia0", "nvidia1", "nvidiactl"))
    opened = [(n["path"].rsplit("/", 1)[1], n["kind"]) for n in found if n["opened"]]
    assert opened == [("nvidia1", "card")]
