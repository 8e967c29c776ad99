"""Benchmark, on a GPU host: the host proof's wall time per stack, under HAMi-core and bare.

`python3 tests/bench/host_proof_time.py --expect-dir DIR --lib PATH/libvgpu.so [--runs gke:hami-core,gke:bare]
[--out OUT] [--hold-seconds 5]`, from the repository root; DIR holds `<stack>.json` from
`python -m components.verify.host STACK --write-expect`. Each run's verdict and evidence go to OUT/<stack>-<setup>/
when --out is given. Prints one line per run (`NAME exit N in S s`) and one JSON object last. No pulumi needed.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ALL_RUNS = "gke:hami-core,gke:bare,k3s:hami-core,k3s:bare,cluster:hami-core,cluster:bare"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--expect-dir", required=True)
    p.add_argument("--lib", required=True)
    p.add_argument("--hold-seconds", type=int, default=5)
    p.add_argument("--runs", default=ALL_RUNS, help="stack:setup pairs, setup hami-core or bare")
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    rows = []
    for pair in args.runs.split(","):
        stack, setup = pair.split(":")
        name = f"{stack}-{setup}"
        cmd = [sys.executable, "-m", "components.verify.host", stack, "--expect",
               str(Path(args.expect_dir) / f"{stack}.json"), "--hold-seconds", str(args.hold_seconds)]  # fmt: skip
        if setup == "hami-core":
            cmd += ["--lib", args.lib]
        if args.out:
            cmd += ["--out", str(Path(args.out) / name)]
        start = time.perf_counter()
        done = subprocess.run(cmd, capture_output=True, text=True)
        seconds = round(time.perf_counter() - start)
        rows.append({"run": name, "seconds": seconds, "exit": done.returncode})
        print(f"{name} exit {done.returncode} in {seconds} s", flush=True)
    print(json.dumps(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
