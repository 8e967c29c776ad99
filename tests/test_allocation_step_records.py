"""The allocation step beside the memory probe, on the H100 record (docs/host-proof/h100/): what one step
measured is judged by its own check, and a free the library refuses loses no figure."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from components.incluster import judge
from components.incluster.probes import allocation_child
from components.incluster.probes.cuda import CudaError
from components.verify.host import neighbours, record
from tests.conftest import ROOT

H100 = ROOT / "docs" / "host-proof" / "h100"


def _judged(folder: Path) -> dict[str, Any]:
    verdict = json.loads((folder / "verdict.json").read_text())
    outputs = {p: o for p, o in json.loads((folder / "evidence.json").read_text()).items() if p != "alone"}
    expect = neighbours.fitted(record._expectation(folder, verdict), outputs)
    return judge.judge(expect, {"pods": neighbours.pod_logs(outputs)})


def test_the_allocation_steps_oom_line_is_not_held_against_the_memory_probe() -> None:
    """gke-hami-core's Pod B: its allocation step, a process of its own, met HAMi-core's OOM lines past the quota."""
    pod_b = json.loads((H100 / "gke-hami-core" / "evidence.json").read_text())["gpushare-proof-b"]
    step = pod_b["allocation"]["pod"]["pid"]
    assert step != pod_b["memory"]["pod"]["pid"] and step not in pod_b["memory"]["pod"]["children"]
    checks = {c["id"]: c for c in _judged(H100 / "gke-hami-core")["checks"]}
    assert checks["memory-enforced"]["passed"] is True, checks["memory-enforced"]["observed"]


def test_hami_core_lets_cuda_arrays_through_on_the_h100_record() -> None:
    checks = {c["id"]: c for c in _judged(H100 / "gke-hami-core")["checks"]}
    observed = checks["allocation-paths"]["observed"]
    assert checks["allocation-paths"]["passed"] is False
    assert "escaped-via: cuArray3DCreate" in observed and "escaped-via: cuMipmappedArrayCreate" in observed
    assert "escaped-via: cuMemAlloc," not in observed


def test_a_free_the_library_refuses_is_reported_and_every_step_is_still_given_back() -> None:
    freed: list[int] = []

    def refused() -> None:
        freed.append(0)
        raise CudaError("cuMemFreeAsync", -1, "CUDA_ERROR_-1")

    held = [lambda: freed.append(1), refused, lambda: freed.append(2)]
    assert allocation_child.give_back_all(held) == "cuMemFreeAsync failed: CUDA_ERROR_-1 (-1)"
    assert sorted(freed) == [0, 1, 2]
    assert allocation_child.give_back_all([lambda: None]) is None
