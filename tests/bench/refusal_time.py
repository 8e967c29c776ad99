"""Benchmark, not a test: wall time from `python -m components.plan STACK -c <bad value>` to its one-line
refusal, as a user meets it (config is checked before Pulumi and the program load).

    .venv/bin/python -m tests.bench.refusal_time [--runs 7] [--target 0.3]

Prints min / median / max seconds per refusal and whether the median meets the target (0.3 s on a 2-core machine).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from components.plan import ROOT

REFUSALS = [
    ("gke", "gpushare:verify.sliceMiB=0"),
    ("gke", "gpushare:gpu.type=nvidia-l4"),
    ("k3s", "gpushare:hami.version=2.9"),
    ("cluster", "gpushare:verify.namespace=kube-system"),
    ("gke", "gpushare:platfrom=gke"),
]
"""A refusal by pydantic, by a check across sections, by YAML's types, by the namespaces, by an unknown key."""


USER_ENV = {
    **{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
    "PYTHONPYCACHEPREFIX": str(Path(tempfile.gettempdir()) / "gpushare-bench-pycache"),
}
"""As a user runs it: bytecode cached after the first run (kept out of the tree), whatever this shell says."""


def time_refusal(stack: str, override: str) -> float:
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "components.plan", stack, "-c", override],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=USER_ENV,
    )
    elapsed = time.perf_counter() - start
    if done.returncode != 2 or len(done.stderr.strip().splitlines()) != 1:
        raise SystemExit(f"{stack} -c {override}: expected one refusal line, got {done.returncode}: {done.stderr}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.refusal_time", description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--target", type=float, default=0.3, help="seconds the median should not exceed")
    args = parser.parse_args()
    print(f"{'refusal':<48}{'min s':>8}{'median s':>10}{'max s':>8}  target ≤ {args.target:g} s")
    met = True
    for stack, override in REFUSALS:
        time_refusal(stack, override)  # warm-up: bytecode caches, page cache
        times = [time_refusal(stack, override) for _ in range(args.runs)]
        median = statistics.median(times)
        met &= median <= args.target
        label, verdict = f"{stack} -c {override}", "ok" if median <= args.target else "SLOW"
        print(f"{label:<48}{min(times):>8.2f}{median:>10.2f}{max(times):>8.2f}  {verdict}")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
