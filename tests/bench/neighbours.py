"""Measurement, on a GPU host: the fault and bandwidth steps of two Pods, bare, under HAMi-core and under MPS, and
the env-less first toucher of a HAMi-core region in both orders.

`python3 tests/bench/neighbours.py --lib PATH/libvgpu.so --out DIR [--setups bare,hami-core,mps] [--first-toucher]`,
from the repository root. Each setup runs Pod A's and Pod B's steps as the proof Pods run them (A: the fault
neighbour, then the bandwidth neighbour; B: the faulter, then the hog), at once, with the `cluster` stack's quotas
(4000 MiB, 30 %): under HAMi-core each its own cache file, under MPS both clients of one control daemon started
here and told to quit. The bandwidth step after the fault is the card serving the next step. Longer windows than
a proof's, for the record. Writes DIR/<setup>/result.json (the four probe outputs and how they read) and prints one
line per setup; `--first-toucher` writes DIR/first-toucher/*.json. No pulumi needed; standard library only.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from components.incluster.evidence.parse import probe_results
from components.incluster.evidence.timeline import around, split
from components.verify.host.runner import (
    ROOT,
    clean_env,
    hami_env,
    mps_client_env,
    mps_daemon,
    probe,
    run_pods,
    run_process,
)

QUOTA = {"CUDA_DEVICE_MEMORY_LIMIT_0": "4000m"}
CORES = 30
FAULT = ["--window", "9", "--delay", "4.5"]
BANDWIDTH = ["--window", "11", "--delay", "4.5", "--hog-seconds", "4"]
DEFAULT_CACHE = "/tmp/cudevshr.cache"


def envs(setup: str, lib: str, workdir: Path, mps: dict[str, str] | None) -> dict[str, dict[str, str]]:
    out = {}
    for pod in ("a", "b"):
        if setup == "mps":
            out[pod] = {**clean_env(), **mps_client_env(4000, CORES, mps or {})}
            continue
        cache = workdir / f"{setup}-{pod}.cache"
        cache.unlink(missing_ok=True)
        out[pod] = {**clean_env(), **hami_env(lib if setup == "hami-core" else None, QUOTA, CORES, cache)}
    return out


def steps(setup: str, env: dict[str, dict[str, str]]) -> dict[str, list[tuple[list[str], dict[str, str]]]]:
    mech = ["--mechanism", "none" if setup == "bare" else setup]
    return {
        "a": [(probe("fault", ["--role", "neighbour", *FAULT, *mech]), env["a"]),
              (probe("bandwidth", ["--role", "neighbour", *BANDWIDTH, *mech]), env["a"])],
        "b": [(probe("fault", ["--role", "faulter", *FAULT, *mech]), env["b"]),
              (probe("bandwidth", ["--role", "hog", *BANDWIDTH, *mech]), env["b"])],
    }  # fmt: skip


def reading(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """How the four outputs read: the neighbour's rate around the fault, its bandwidth alone and beside the hog."""
    fa, fb, ba, bb = (x.get(k) or {} for x, k in ((a, "fault"), (b, "fault"), (a, "bandwidth"), (b, "bandwidth")))
    rate = around(fa.get("timeline") or {}, fb.get("fault_at"))
    return {
        "fault": {"faulted": fb.get("faulted"), "fault_error": fb.get("cuda_error"), "fault_at": fb.get("fault_at"),
                  "neighbour_survived": fa.get("survived"), "neighbour_error": fa.get("cuda_error"),
                  "neighbour_error_at": fa.get("cuda_error_at"), "fresh_process_served": fb.get("served"),
                  **rate},
        "bandwidth": {**split(ba.get("timeline") or {}, bb.get("copy_started_at"), bb.get("copy_ended_at")),
                      "hog": bb.get("gbps"), "neighbour_ok": ba.get("ok"), "hog_ok": bb.get("ok")},
    }  # fmt: skip


def one_setup(setup: str, lib: str, out: Path, mps: dict[str, str] | None) -> dict[str, Any]:
    folder = out / setup
    folder.mkdir(parents=True, exist_ok=True)
    runs = run_pods(steps(setup, envs(setup, lib, folder, mps)), timeout=120)
    outputs = {pod: probe_results(run.logs) for pod, run in runs.items()}
    for pod, run in runs.items():
        (folder / f"{pod}.log").write_text(run.logs)
    result = {"setup": setup, "quota": {**QUOTA, "cores": CORES}, "outputs": outputs,
              "reading": reading(outputs["a"], outputs["b"]),
              "exit_codes": {pod: run.exit_codes for pod, run in runs.items()}}  # fmt: skip
    (folder / "result.json").write_text(json.dumps(result, indent=1))
    return result


def _memory(env: dict[str, str], *args: str) -> dict[str, Any]:
    code, out, err = run_process(
        probe(
            "memory",
            [
                "--expect-limit-mib",
                "4000",
                "--hold-mib",
                "1024",
                "--hold-seconds",
                "0",
                "--extra-mib",
                "3500",
                "--sweep-gib",
                "",
                *args,
            ],
        ),
        env,
        180,
    )
    return probe_results(out).get("memory") or {"ok": False, "error": f"exit {code}: {err[-300:]}"}  # fmt: skip


def first_toucher(lib: str, out: Path) -> dict[str, Any]:
    """The orders that matter (memory_findings.env_less_findings) where they are real: a KAI-style Pod (no cache
    file named, so its region is the default file) first, with its findings (an env-less process after it); and an
    env-less process first, then the Pod's own probe. A HAMi-style Pod's findings are in the host proof's."""
    folder = out / "first-toucher"
    folder.mkdir(parents=True, exist_ok=True)
    kai = {**clean_env(), "LD_PRELOAD": lib, "CUDA_DEVICE_MEMORY_LIMIT": "4000m"}
    bare = {**clean_env(), "LD_PRELOAD": lib}  # what `env -i` or SSH leaves: the preloaded library, no HAMi-core env
    found: dict[str, Any] = {}
    Path(DEFAULT_CACHE).unlink(missing_ok=True)
    found["kai-pod-first"] = _memory(kai, "--findings")
    Path(DEFAULT_CACHE).unlink(missing_ok=True)
    child = [sys.executable, "-m", "components.incluster.probes.memory_child", "--child", "view", "--child-mib", "0"]
    made = subprocess.run(child, env=bare, capture_output=True, text=True, timeout=120, cwd=ROOT)
    found["env-less-first"] = {"env_less_child": made.stdout.strip().splitlines()[-1:] or made.stderr[-300:],
                               "kai_pod_after": _memory(kai)}  # fmt: skip
    Path(DEFAULT_CACHE).unlink(missing_ok=True)
    for name, value in found.items():
        (folder / f"{name}.json").write_text(json.dumps(value, indent=1))
    return found


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.bench.neighbours", description=__doc__.splitlines()[0])
    p.add_argument("--lib", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--setups", default="bare,hami-core,mps")
    p.add_argument("--first-toucher", action="store_true")
    args = p.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    lib = os.path.abspath(args.lib)
    for setup in [s for s in args.setups.split(",") if s]:
        if setup == "mps":
            with mps_daemon(out / "mps-daemon") as mps:
                result = one_setup(setup, lib, out, mps)
        else:
            result = one_setup(setup, lib, out, None)
        r = result["reading"]
        print(f"{setup}: fault {r['fault']['fault_error']}; neighbour survived={r['fault']['neighbour_survived']} "
              f"({r['fault']['neighbour_error']}), before {r['fault']['before']} after {r['fault']['after']}; "
              f"fresh served={r['fault']['fresh_process_served']}; bandwidth alone {r['bandwidth']['alone']} "
              f"beside {r['bandwidth']['beside']} drop {r['bandwidth']['drop_fraction']}", flush=True)  # fmt: skip
    if args.first_toucher:
        found = first_toucher(lib, out)
        for name, value in found.items():
            print(f"first-toucher {name}: {json.dumps(value)[:600]}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
