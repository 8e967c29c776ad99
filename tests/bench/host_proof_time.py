"""Benchmark, on a GPU host: the host proof's wall time per stack, under HAMi-core and bare.

`python3 tests/bench/host_proof_time.py --expect-dir DIR --lib PATH/libvgpu.so [--hold-seconds 5]`, from the
repository root; DIR holds `gke.json`, `k3s.json`, `cluster.json` from `python -m components.verify.host STACK
--write-expect`. Prints one line per run and one JSON object last. No pulumi needed.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--expect-dir", required=True)
    p.add_argument("--lib", required=True)
    p.add_argument("--hold-seconds", type=int, default=5)
    p.add_argument("--stacks", default="gke,k3s,cluster")
    args = p.parse_args(argv)
    rows = []
    for stack in args.stacks.split(","):
        for setup, extra in (("hami-core", ["--lib", args.lib]), ("bare", [])):
            expect = str(Path(args.expect_dir) / f"{stack}.json")
            cmd = [sys.executable, "-m", "components.verify.host", stack, "--expect", expect,
                   "--hold-seconds", str(args.hold_seconds), *extra]  # fmt: skip
            start = time.perf_counter()
            done = subprocess.run(cmd, capture_output=True, text=True)
            seconds = round(time.perf_counter() - start, 1)
            rows.append({"stack": stack, "setup": setup, "seconds": seconds, "exit": done.returncode})
            print(f"{stack:8} {setup:9} {seconds:7.1f} s  exit {done.returncode}", flush=True)
    print(json.dumps(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
