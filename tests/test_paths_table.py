"""The allocation-paths table from the probe's JSON per mechanism (components/verify/host/paths_table.py)."""

from __future__ import annotations

import json
from pathlib import Path

from components.incluster.probes.allocation_child import PATHS
from components.verify.host import paths_table
from tests.test_allocation_paths_check import allocation_line
from tests.test_probe_allocation_paths import MOST


def test_a_path_past_the_quota_reads_took_and_one_within_it_held(tmp_path: Path) -> None:
    (tmp_path / "hami-core.json").write_text(json.dumps(allocation_line(4000, MOST)))
    rows = {r.split(" | ")[0].strip("| `"): r for r in paths_table.render(tmp_path).splitlines() if r.startswith("| `")}
    assert set(rows) == set(PATHS)
    hami = {path: row.split(" | ")[2] for path, row in rows.items()}
    assert hami["cuMemCreate"].startswith("**took 6144 MiB**")
    assert hami["cuMemAlloc"].startswith("held (3584 MiB")
    assert all(row.split(" | ")[3] == "not measured" for row in rows.values())  # mps: no file yet


def test_every_path_has_a_prediction_citing_the_library_s_source() -> None:
    assert set(paths_table.PREDICTED) == set(PATHS)
    for guess, where in paths_table.PREDICTED.values():
        assert guess in ("held", "escapes") and "src/" in where


def test_a_file_that_is_no_allocation_line_is_not_measured(tmp_path: Path) -> None:
    (tmp_path / "mps.json").write_text('{"probe": "memory"}')
    (tmp_path / "bare.json").write_text("")
    assert paths_table.load(tmp_path) == {"hami-core": None, "mps": None, "bare": None}


def test_a_probe_that_could_not_start_says_why_in_every_row(tmp_path: Path) -> None:
    (tmp_path / "bare.json").write_text(json.dumps({"probe": "allocation", "ok": False, "paths": [],
                                                    "error": "cannot load libcuda.so.1"}))  # fmt: skip
    bare = [r.split(" | ")[4] for r in paths_table.render(tmp_path).splitlines() if r.startswith("| `")]
    assert bare == ["probe error: cannot load libcuda.so.1 |"] * len(PATHS)
