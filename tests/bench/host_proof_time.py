"""Benchmark, on a GPU host: the host proof's time per stack (whole, baseline, Pods), under HAMi-core and bare.

`python3 tests/bench/host_proof_time.py --expect-dir DIR --lib PATH/libvgpu.so [--runs gke:hami-core,cluster:bare:3]
[--out OUT] [--hold-seconds 5]`, from the repository root; DIR holds `<stack>.json` from
`python -m components.verify.host STACK --write-expect`. A run is `stack:setup[:times]`, setup `hami-core`, `bare`
or `hami-core-staggered` (Pod B 3 s after A, holds 10 s, as a cluster starts them). Each run's verdict and evidence
go to OUT/<stack>-<setup>[-<i>]/ (a temp dir without --out). Prints one line per run (`NAME exit N in S s`, then the
proof's own baseline and Pod seconds) and one JSON object last. No pulumi needed.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ALL_RUNS = "gke:hami-core,gke:bare,k3s:hami-core,k3s:bare,cluster:hami-core,cluster:bare"
SETUPS = {
    "hami-core": ["--lib", "{lib}"],
    "bare": [],
    "hami-core-staggered": ["--lib", "{lib}", "--stagger", "3", "--hold-seconds", "10"],
}


def runs(spec: str) -> list[tuple[str, str, str]]:
    """`stack:setup[:times]` pairs → (name, stack, setup), numbered when repeated."""
    out = []
    for pair in spec.split(","):
        stack, setup, *times = pair.split(":")
        if setup not in SETUPS:
            raise SystemExit(f"--runs {pair}: setup must be one of {', '.join(SETUPS)}")
        count = int(times[0]) if times else 1
        for i in range(1, count + 1):
            out.append((f"{stack}-{setup}" + (f"-{i}" if times else ""), stack, setup))
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--expect-dir", required=True)
    p.add_argument("--lib", required=True)
    p.add_argument("--hold-seconds", type=int, default=5)
    p.add_argument("--runs", default=ALL_RUNS, help="stack:setup[:times] pairs (setups: see above)")
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    out = Path(args.out or tempfile.mkdtemp(prefix="gpushare-bench-"))
    rows = []
    for name, stack, setup in runs(args.runs):
        folder = out / name
        cmd = [sys.executable, "-m", "components.verify.host", stack, "--expect",
               str(Path(args.expect_dir) / f"{stack}.json"), "--hold-seconds", str(args.hold_seconds),
               *(word.format(lib=args.lib) for word in SETUPS[setup]), "--out", str(folder)]  # fmt: skip
        start = time.perf_counter()
        done = subprocess.run(cmd, capture_output=True, text=True)
        seconds = round(time.perf_counter() - start)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "run.log").write_text(done.stdout + done.stderr)
        verdict = json.loads((folder / "verdict.json").read_text()) if (folder / "verdict.json").is_file() else {}
        row = {"run": name, "seconds": seconds, "exit": done.returncode, "passed": verdict.get("passed"),
               **{k: verdict.get(k) for k in ("baselineSeconds", "podSeconds", "wallSeconds")}}  # fmt: skip
        rows.append(row)
        print(f"{name} exit {done.returncode} in {seconds} s", flush=True)
        print(f"  proof {row['wallSeconds']} s: baseline {row['baselineSeconds']} s, Pods {row['podSeconds']} s",
              flush=True)  # fmt: skip
    print(json.dumps(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
