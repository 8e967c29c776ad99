"""Benchmark, not a test: wall time of `python -m components.plan STACK` per stack, as a user runs it, and of a
plan with thousands of GPU nodes (the `cluster` stack with `cluster.gpuNodes` of N names: one NodePatch each).

    .venv/bin/python -m tests.bench.plan_time [--runs 5] [--target 2.0] [--nodes 5000] [--nodes-target 10]

Prints min / median / max seconds per stack (`--json`) and the text tree of the large plan, and whether each meets
its target (2 s per stack and 10 s for 5,000 nodes on a 2-core machine).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

from components.plan import ROOT
from tests.golden.regenerate import stacks


def time_plan(stack: str, *args: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "components.plan", stack, *args], cwd=ROOT, check=True,
                   stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--target", type=float, default=2.0, help="seconds the median should not exceed")
    parser.add_argument("--nodes", type=int, default=5000, help="GPU nodes of the large plan (0: skip it)")
    parser.add_argument("--nodes-target", type=float, default=10.0, help="seconds the large plan should not exceed")
    args = parser.parse_args()
    print(f"{'stack':<10}{'min s':>8}{'median s':>10}{'max s':>8}  target ≤ {args.target:g} s")
    met = True
    for stack in stacks():
        time_plan(stack, "--json")  # warm-up: bytecode caches, page cache
        times = [time_plan(stack, "--json") for _ in range(args.runs)]
        median = statistics.median(times)
        met &= median <= args.target
        verdict = "ok" if median <= args.target else "SLOW"
        print(f"{stack:<10}{min(times):>8.2f}{median:>10.2f}{max(times):>8.2f}  {verdict}")
    if args.nodes:
        nodes = json.dumps([f"gpu-{i}" for i in range(args.nodes)])
        for view in ("text", "--json", "--markdown"):
            seconds = time_plan("cluster", "-c", f"gpushare:cluster.gpuNodes={nodes}", *([view] if view != "text"
                                                                                       else []))
            ok = seconds <= args.nodes_target
            met &= ok
            print(f"cluster, {args.nodes} GPU nodes, {view}: {seconds:.2f} s  "
                  f"{'ok' if ok else 'SLOW'} (target ≤ {args.nodes_target:g} s)")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
