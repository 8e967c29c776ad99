"""Benchmark, not a test: wall time of `python -m components.plan STACK --json` per stack, as a user runs it.

    .venv/bin/python -m tests.bench.plan_time [--runs 5] [--target 2.0]

Prints min / median / max seconds per stack and whether the median meets the target (2 s on a 2-core machine).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

from components.plan import ROOT
from tests.golden.regenerate import stacks


def time_plan(stack: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "components.plan", stack, "--json"], cwd=ROOT, check=True,
                   stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--target", type=float, default=2.0, help="seconds the median should not exceed")
    args = parser.parse_args()
    print(f"{'stack':<10}{'min s':>8}{'median s':>10}{'max s':>8}  target ≤ {args.target:g} s")
    met = True
    for stack in stacks():
        time_plan(stack)  # warm-up: bytecode caches, page cache
        times = [time_plan(stack) for _ in range(args.runs)]
        median = statistics.median(times)
        met &= median <= args.target
        verdict = "ok" if median <= args.target else "SLOW"
        print(f"{stack:<10}{min(times):>8.2f}{median:>10.2f}{max(times):>8.2f}  {verdict}")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
