"""Benchmark, on a GPU host: the host proof's time per stack (whole, baseline, Pods), under HAMi-core and bare, each
run's Pod time against the 60 s a compute stack's proof may take.

`python3 tests/bench/host_proof_time.py --expect-dir DIR --lib PATH/libvgpu.so [--runs gke:hami-core,cluster:bare:3]
[--out OUT] [--hold-seconds 5]`, from the repository root; DIR holds `<stack>.json` from
`python -m components.verify.host STACK --write-expect`. A run is `stack:setup[:times]`, setup `hami-core`, `bare`
or `hami-core-staggered` (Pod B 3 s after A, holds 10 s, as a cluster starts them). Each run's verdict and evidence
go to OUT/<stack>-<setup>[-<i>]/ (a temp dir without --out). Prints one line per run (`NAME exit N in S s`, then the
proof's own baseline and Pod seconds against the target) and one JSON object last. No pulumi needed.
`--record DIR` runs nothing: it prints the same for every run recorded under DIR (each `verdict.json`), as
docs/host-proof/record-final.sh does after its runs.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

POD_TARGET_S = 60.0
"""A compute stack's host proof takes at most this much Pod time, its fault and bandwidth steps included."""
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


def against_target(pods: float | None) -> str:
    """`Pods 57.7 s: within the 60 s target (2.3 s to spare)` or `… 0.7 s over it`."""
    if pods is None:
        return "Pods –: not recorded"
    left = round(POD_TARGET_S - pods, 1)
    verdict = (
        f"within the {POD_TARGET_S:g} s target ({left:g} s to spare)"
        if left >= 0
        else f"{-left:g} s over the {POD_TARGET_S:g} s target"
    )
    return f"Pods {pods:g} s: {verdict}"


def recorded(record: Path) -> list[dict[str, object]]:
    """Every run under `record` (each folder holding a verdict.json), in path order."""
    rows = []
    for path in sorted(record.rglob("verdict.json")):
        verdict = json.loads(path.read_text())
        rows.append({"run": str(path.parent.relative_to(record)), "passed": verdict.get("passed"),
                     "computes": any(c.get("id") == "compute-limited" for c in verdict.get("checks") or []),
                     **{k: verdict.get(k) for k in ("baselineSeconds", "podSeconds", "wallSeconds")}})  # fmt: skip
    return rows


def print_record(record: Path) -> int:
    rows = recorded(record)
    for row in rows:
        kind = "compute stack" if row["computes"] else "no compute"
        print(f"{row['run']}: {against_target(row['podSeconds'])} ({kind}; proof {row['wallSeconds']} s)")
    over = [r["run"] for r in rows if r["computes"] and (r["podSeconds"] or 0) > POD_TARGET_S]
    print(f"{len(rows)} runs; compute stacks over the {POD_TARGET_S:g} s target: {', '.join(over) or 'none'}")
    print(json.dumps(rows))
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.bench.host_proof_time", description=__doc__.splitlines()[0])
    p.add_argument("--record", help="print the recorded runs under this folder against the target; run nothing")
    p.add_argument("--expect-dir")
    p.add_argument("--lib")
    p.add_argument("--hold-seconds", type=int, default=5)
    p.add_argument("--runs", default=ALL_RUNS, help="stack:setup[:times] pairs (setups: see above)")
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    if args.record:
        return print_record(Path(args.record))
    if not args.expect_dir or not args.lib:
        p.error("--expect-dir and --lib are needed to run the proofs (or --record DIR to read recorded ones)")
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
        pods = against_target(row["podSeconds"])  # type: ignore[arg-type]
        print(f"  proof {row['wallSeconds']} s: baseline {row['baselineSeconds']} s, {pods}", flush=True)
    print(json.dumps(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
