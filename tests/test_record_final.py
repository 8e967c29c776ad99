"""docs/host-proof/record-final.sh, the final H200 recording, read without a GPU: its runs cover every quota three
times and every stack, its expectations are the stacks' plans, each part's stated wall time fits its 540 s, and the
Pod-time benchmark reads what it records."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from components.verify.host import expectation
from components.verify.host.proof import HostOptions, shapes_argv
from tests.conftest import ROOT

SCRIPT = ROOT / "docs" / "host-proof" / "record-final.sh"
EXPECT = ROOT / "docs" / "host-proof" / "expect"
BUDGET_S = 540


def runs(part: str) -> list[dict[str, Any]]:
    """Each `run NAME STACK EXPECT SECONDS FLAGS…` line of one PART's case."""
    text = SCRIPT.read_text()
    body = text[text.index(f"\n{part})\n") :]
    body = body[: body.index(";;")]
    found = []
    for line in body.splitlines():
        words = shlex.split(line.strip())
        if words and words[0] == "run":
            name, stack, expect, seconds, *flags = words[1:]
            found.append({"name": name, "stack": stack, "expect": expect, "seconds": int(seconds), "flags": flags})
    return found


def stated(part: str) -> int:
    """The wall time the header states for a PART (`PART a: about 486 s.`)."""
    return int(re.search(rf"#\s+PART {part}: about (\d+) s", SCRIPT.read_text())[1])


def test_part_a_runs_the_cluster_proof_three_times_at_20_40_and_60_percent_pods_at_once() -> None:
    found = runs("a")
    quotas = [(json.loads((EXPECT / f"{r['expect']}.json").read_text())["expect"]["coresPercent"], r["name"])
              for r in found]  # fmt: skip
    assert sorted(q for q, _ in quotas) == [20, 20, 20, 40, 40, 40, 60, 60, 60]
    assert {name for _, name in quotas} == {f"repeat/cluster{q}-hami-core-{i}" for q in (20, 40, 60) for i in (1, 2, 3)}
    assert all(f"cluster{q}-" in name for q, name in quotas)  # each run's name is its quota's
    for r in found:
        assert r["stack"] == "cluster" and "--stagger" not in r["flags"] and "--mps" not in r["flags"]
        assert r["flags"][:2] == ["--lib", "$lib"] and r["flags"][2:] == ["--compute-shapes", "short_many"]
    assert [q for q, _ in quotas[:3]] == [20, 40, 60]  # rounds, so a cut leaves whole rounds


def test_part_b_runs_gke_and_k3s_three_times_under_the_library_then_every_stack_bare_and_cluster_under_mps() -> None:
    found = {r["name"]: r for r in runs("b")}
    assert sorted(found) == sorted([*(f"repeat/{s}-hami-core-{i}" for s in ("gke", "k3s") for i in (1, 2, 3)),
                                    "gke-bare", "k3s-bare", "cluster-bare", "cluster-mps"])  # fmt: skip
    for name, r in found.items():
        assert r["expect"] == r["stack"] == name.split("/")[-1].split("-")[0]
        wanted = ["--lib", "$lib"] if "hami-core" in name else ["--mps"] if name.endswith("mps") else []
        assert r["flags"] == wanted, name


@pytest.mark.parametrize("part", ["a", "b"])
def test_each_part_is_stated_to_end_within_its_540_seconds_and_its_runs_add_up_to_that(part: str) -> None:
    assert sum(r["seconds"] for r in runs(part)) == stated(part) <= BUDGET_S


def test_the_stated_times_rest_on_the_recorded_pod_seconds() -> None:
    h200 = ROOT / "docs" / "host-proof" / "h200"
    stepped = json.loads((h200 / "neighbour-steps" / "cluster-hami-core" / "verdict.json").read_text())
    mps = json.loads((h200 / "neighbour-steps" / "cluster-mps" / "verdict.json").read_text())
    text = SCRIPT.read_text()
    assert f"{stepped['baselineSeconds']} s of\n# baseline + {stepped['podSeconds']} s of Pods" in text
    assert f"under MPS {mps['wallSeconds']} s in all" in text
    whole = stepped["baselineSeconds"] + stepped["podSeconds"] + 1
    assert 9 * whole > BUDGET_S and f"9 x ({stepped['baselineSeconds']} + {stepped['podSeconds']} + 1)" in text


def test_the_committed_expectations_are_the_stacks_plans_at_each_quota() -> None:
    for stack in ("cluster", "gke", "k3s"):
        plan = json.loads((ROOT / "tests" / "golden" / f"{stack}.json").read_text())
        assert json.loads((EXPECT / f"{stack}.json").read_text()) == expectation.from_plan(plan), stack
    base = json.loads((EXPECT / "cluster.json").read_text())
    for cores in (20, 40, 60):
        at = json.loads((EXPECT / f"cluster-{cores}.json").read_text())
        again = json.loads(json.dumps(base))
        again["expect"]["coresPercent"] = cores
        again["expect"]["limitEnv"]["CUDA_DEVICE_SM_LIMIT"] = str(cores)
        assert at == again, cores


def test_the_host_proof_measures_only_the_shapes_it_is_given(tmp_path: Path) -> None:
    assert shapes_argv(HostOptions(setup="hami-core", workdir=tmp_path)) == []
    assert shapes_argv(HostOptions(setup="hami-core", workdir=tmp_path, compute_shapes=("short_many",))) == [
        "--shapes",
        "short_many",
    ]


def test_the_benchmark_prints_each_recorded_runs_pod_time_against_the_60_second_target() -> None:
    done = subprocess.run([sys.executable, "tests/bench/host_proof_time.py", "--record", "docs/host-proof/h200"],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert (
        "neighbour-steps/cluster-hami-core: Pods 57.7 s: within the 60 s target (2.3 s to spare) (compute stack;"
        " proof 69.3 s)"
    ) in lines
    assert "neighbour-steps/cluster-mps: Pods 60.7 s: 0.7 s over the 60 s target (compute stack; proof 72.0 s)" in lines
    assert "final-26/cluster-mps: Pods 61 s: 1 s over the 60 s target (compute stack; proof 72.4 s)" in lines
    assert (
        "final-26/repeat/cluster40-hami-core-2: Pods 48.6 s: within the 60 s target (11.4 s to spare)"
        " (compute stack; proof 52.9 s)"
    ) in lines
    assert "compute stacks over the 60 s target: final-26/cluster-mps, neighbour-steps/cluster-mps" in done.stdout
