"""Benchmark, not a test: wall time of `python -m components.plan STACK` per stack, as a user runs it, and of
plans with thousands of GPU nodes (the `cluster` stack with `cluster.gpuNodes` of N names: one NodePatch each).

    .venv/bin/python -m tests.bench.plan_time [--runs 5] [--target 2.0] [--nodes 1000 2400 5000] [--node-runs 3]
                                              [--nodes-target 8] [--no-stacks]

Prints the load average it starts under and the CPU seconds of a fixed reference loop (the machine's speed at that
moment: a shared host's varies by half), then min / median / max wall seconds and the median CPU seconds per
stack (`--json`), then per node count and view (text, `--json`, `--markdown`) the median wall and CPU seconds of
`--node-runs` runs, and whether each meets its target (2 s per stack; 8 s for the largest node count, on a 2-core
machine). CPU seconds (the child's user + system time) are printed beside the wall time because a shared
machine's load stretches the wall time of the same work.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from components.plan import EXAMPLE_STACKS, ROOT

VIEWS = ("text", "--json", "--markdown")
WRITES_BYTECODE = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
"""The warm-up's environment: it writes the bytecode caches a user's first run writes, which a shell setting
PYTHONDONTWRITEBYTECODE would otherwise keep from every run (each then compiling the program's modules anew)."""


def time_plan(stack: str, *args: str, env: dict[str, str] | None = None) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one `python -m components.plan` run."""
    before = os.times()
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "components.plan", stack, *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    if done.returncode:  # a stack's warnings stay out of the table; a failure shows why
        sys.exit(f"{stack} {' '.join(args)[:80]}: exit {done.returncode}\n{done.stderr}")
    wall = time.perf_counter() - start
    after = os.times()
    return wall, (after.children_user - before.children_user) + (after.children_system - before.children_system)


def reference_loop() -> float:
    """CPU seconds of 20 million additions: figures taken at different times compare through it."""
    start = time.process_time()
    total = 0
    for i in range(20_000_000):
        total += i
    return time.process_time() - start


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.plan_time", description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--target", type=float, default=2.0, help="seconds the median should not exceed")
    parser.add_argument(
        "--nodes", type=int, nargs="*", default=[5000], help="GPU node counts of the large plans (none: skip them)"
    )
    parser.add_argument("--node-runs", type=int, default=1, help="runs per node count and view (median shown)")
    parser.add_argument(
        "--nodes-target", type=float, default=8.0, help="seconds the largest node count's plan should not exceed"
    )
    parser.add_argument("--no-stacks", action="store_true", help="time only the large plans")
    args = parser.parse_args()
    met = True
    print("load average (1, 5, 15 min): " + " ".join(f"{load:.2f}" for load in os.getloadavg()), flush=True)
    print(
        f"reference loop: {reference_loop():.2f} s CPU (the same pure-Python work each run: larger when the shared "
        "host is slower)",
        flush=True,
    )
    if not args.no_stacks:
        print(f"{'stack':<18}{'min s':>7}{'median s':>10}{'max s':>7}{'CPU s':>7}  target ≤ {args.target:g} s")
        for stack in EXAMPLE_STACKS:
            time_plan(stack, "--json", env=WRITES_BYTECODE)  # warm-up: bytecode caches, page cache
            runs = [time_plan(stack, "--json") for _ in range(args.runs)]
            times = [wall for wall, _ in runs]
            median = statistics.median(times)
            met &= median <= args.target
            verdict = "ok" if median <= args.target else "SLOW"
            cpu = statistics.median(c for _, c in runs)
            print(f"{stack:<18}{min(times):>7.2f}{median:>10.2f}{max(times):>7.2f}{cpu:>7.2f}  {verdict}", flush=True)
    largest = max(args.nodes, default=0)
    if args.nodes:
        time_plan("cluster", env=WRITES_BYTECODE)  # warm-up, as each stack's
    for count in args.nodes:
        nodes = json.dumps([f"gpu-{i}" for i in range(count)])
        for view in VIEWS:
            shown = [view] if view != "text" else []
            runs = [
                time_plan("cluster", "-c", f"gpushare:cluster.gpuNodes={nodes}", *shown) for _ in range(args.node_runs)
            ]
            wall, cpu = statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs)
            line = f"cluster, {count} GPU nodes, {view}: {wall:.2f} s wall, {cpu:.2f} s CPU (median of {len(runs)})"
            if count == largest:
                ok = wall <= args.nodes_target
                met &= ok
                line += f"  {'ok' if ok else 'SLOW'} (target ≤ {args.nodes_target:g} s)"
            print(line, flush=True)
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
