"""Fixtures of the real-engine scenarios: one control plane for the session, the charts, the stack copies.

Skips, saying why, where the charts folder (GPUSHARE_CHART_DIRS, default ../shared/reference/chart-dirs), the tools
(e2e/tools/build.sh) or the network namespace (e2e/run) is missing. With GPUSHARE_E2E_RECORD=DIR the session
writes DIR/transcript.md (every CLI run) and DIR/summary.json (scenario → passed, seconds).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from e2e.controlplane import ControlPlane, missing_tools
from e2e.stack import REPO, Stack

CARD = {
    "id": "GPU-0e2e0000-0000-4000-8000-000000000001",
    "count": 10,
    "devmem": 15360,
    "devcore": 100,
    "type": "NVIDIA-Tesla T4",
    "health": True,
    "mode": "hami-core",
}
"""The card Pulumi.cluster.yaml plans (gpu.type nvidia-tesla-t4, one a node) as HAMi registers it."""

TRANSCRIPT: list[str] = []
RESULTS: dict[str, dict[str, Any]] = {}


def chart_dirs_path() -> Path:
    return Path(os.environ.get("GPUSHARE_CHART_DIRS") or REPO.parent / "shared" / "reference" / "chart-dirs")


@pytest.fixture(scope="session")
def chart_dirs() -> Path:
    path = chart_dirs_path()
    if not path.is_dir():
        pytest.skip(f"no unpacked charts at {path} (set GPUSHARE_CHART_DIRS; only the project's workspace has them)")
    return path


@pytest.fixture(scope="session")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("e2e")


@pytest.fixture(scope="session")
def control_plane(work: Path, chart_dirs: Path) -> Iterator[ControlPlane]:
    missing = missing_tools()
    if missing:
        pytest.skip(f"tools not built: {', '.join(missing)} (run e2e/tools/build.sh)")
    if os.environ.get("GPUSHARE_E2E_NETNS") != "1":
        pytest.skip("the scenarios run inside their own network namespace: start them with e2e/run")
    plane = ControlPlane(work / "control-plane")
    try:
        plane.start()
        plane.add_gpu_node("node", [CARD])
        plane.add_toolkit_runtime_classes()
        yield plane
    finally:
        plane.stop()


@pytest.fixture(scope="session")
def transcript() -> list[str]:
    return TRANSCRIPT


def new_stack(plane: ControlPlane, work: Path, chart_dirs: Path, name: str = "cluster",
              folder: str = "project", edit: dict[str, Any] | None = None) -> Stack:  # fmt: skip
    return Stack.make(work / folder, name, work / "state", plane.kubeconfig, chart_dirs, TRANSCRIPT, edit)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
        entry = RESULTS.setdefault(report.nodeid.split("::")[-1], {"passed": False, "seconds": 0.0})
        entry["passed"] = report.outcome == "passed"
        entry["seconds"] = round(entry["seconds"] + report.duration, 1)
        if report.outcome == "skipped":
            entry["skipped"] = str(report.longrepr[-1]) if isinstance(report.longrepr, tuple) else "skipped"


def pytest_sessionfinish(session: pytest.Session) -> None:
    out = os.environ.get("GPUSHARE_E2E_RECORD")
    if not out or not RESULTS:
        return
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    summary = {
        "recorded": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "passed": all(r["passed"] for r in RESULTS.values()),
        "scenarios": RESULTS,
    }
    (folder / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    (folder / "transcript.md").write_text(
        "# A recorded run of the real-engine scenarios (e2e/run)\n\n"
        + "\n".join(f"```\n{t.rstrip()}\n```\n" for t in TRANSCRIPT)
    )
