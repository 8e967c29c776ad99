"""Measurement, on a GPU host: HAMi-core's compute limiter, quota by quota, with the project's own compute probe.

`python3 tests/bench/compute_curve.py --lib PATH/libvgpu.so --out DIR [--alone 10,20,30,40,50,60,80]
[--pairs 20,40,60] [--seconds 20]`, from the repository root. First the baseline the host proof takes under
HAMi-core (the library loaded, GPU_CORE_UTILIZATION_POLICY=disable, alone), then the judged shape (short_many)
with CUDA_DEVICE_SM_LIMIT at each quota: one process alone, then two at once (each its own cache file, as two
Pods), each over the judged window after the probe's warm-up. Writes every probe output to DIR/<run>.json, the
table to DIR/table.md and the figures to DIR/curve.json; prints the table. Standard library only.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from components.incluster.evidence.parse import probe_results
from components.verify.host.runner import clean_env, hami_env, probe, run_process

SHAPE = "short_many"
TIMEOUT_S = 300


def env_for(lib: str, cores: int | None, cache: Path, **extra: str) -> dict[str, str]:
    cache.unlink(missing_ok=True)
    return {**clean_env(), **hami_env(lib, {}, cores, cache), **extra}


def compute(args: list[str], env: dict[str, str]) -> dict[str, Any]:
    code, out, err = run_process(probe("compute", args), env, TIMEOUT_S)
    return probe_results(out).get("compute") or {"ok": False, "error": f"exit {code}: {err[-400:]}"}


def row(name: str, ask: int, result: dict[str, Any], base: float) -> dict[str, Any]:
    """One process's figures in shares of the baseline: mean, whole seconds' min, max, spread and quartiles."""
    shape = (result.get("shapes") or {}).get(SHAPE) or {}
    warm = int(shape.get("warmup_s") or 0)
    seconds = [v / base for v in (shape.get("timeline_per_s") or [])[warm:]] if base else []
    share = (result.get("share") or {}).get(SHAPE)
    quartiles = statistics.quantiles(seconds, n=4) if len(seconds) >= 2 else [None, None, None]
    low, high = (round(min(seconds), 3), round(max(seconds), 3)) if seconds else (None, None)
    return {"run": name, "ask": ask / 100, "share": share,
            "overshoot": None if share is None else round(share - ask / 100, 3), "per_s_min": low, "per_s_max": high,
            "per_s_stdev": round(statistics.pstdev(seconds), 3) if len(seconds) > 1 else None,
            "per_s_q1": None if quartiles[0] is None else round(quartiles[0], 3),
            "per_s_q3": None if quartiles[2] is None else round(quartiles[2], 3),
            "seconds": len(seconds), "ok": result.get("ok"), "error": result.get("error")}  # fmt: skip


def table(rows: list[dict[str, Any]]) -> str:
    head = "| run | ask | share (20 s mean) | above the ask | whole seconds min – max | q1 – q3 | spread (sd) |"
    lines = [head, "|---|---|---|---|---|---|---|"]
    for r in rows:
        if not r["ok"]:
            lines.append(f"| {r['run']} | {r['ask']:.2f} | failed: {r['error']} | | | | |")
            continue
        lines.append(f"| {r['run']} | {r['ask']:.2f} | {r['share']:.3f} | {r['overshoot']:+.3f} | "
                     f"{r['per_s_min']:.2f} – {r['per_s_max']:.2f} | {r['per_s_q1']:.2f} – {r['per_s_q3']:.2f} | "
                     f"{r['per_s_stdev']:.3f} |")  # fmt: skip
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.bench.compute_curve", description=__doc__.splitlines()[0])
    p.add_argument("--lib", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--alone", default="10,20,30,40,50,60,80")
    p.add_argument("--pairs", default="20,40,60")
    p.add_argument("--seconds", type=float, default=20)
    args = p.parse_args(argv)
    out, lib = Path(args.out), os.path.abspath(args.lib)
    out.mkdir(parents=True, exist_ok=True)
    how = "a process with libvgpu.so preloaded and GPU_CORE_UTILIZATION_POLICY=disable, alone"
    baseline = compute(["--baseline", "none", "--seconds", "3", "--warmup", "0.5", "--measured-by", how],
                       env_for(lib, None, out / "baseline.cache", GPU_CORE_UTILIZATION_POLICY="disable"))  # fmt: skip
    (out / "baseline.json").write_text(json.dumps(baseline))
    if not baseline.get("ok"):
        print(f"the baseline failed: {baseline.get('error')}", flush=True)
        return 1
    base = ((baseline.get("shapes") or {}).get(SHAPE) or {}).get("mean_per_s") or 0.0
    limited = ["--baseline", str(out / "baseline.json"), "--shapes", SHAPE, "--no-findings", "--seconds",
               str(args.seconds), "--mechanism", "hami-core"]  # fmt: skip
    rows = []
    for cores in [int(c) for c in args.alone.split(",") if c]:
        result = compute(limited, env_for(lib, cores, out / f"alone-{cores}.cache"))
        (out / f"alone-{cores}.json").write_text(json.dumps(result))
        rows.append(row(f"alone at {cores}", cores, result, base))
        print(table(rows[-1:]).splitlines()[-1], flush=True)
    for cores in [int(c) for c in args.pairs.split(",") if c]:
        results: dict[str, dict[str, Any]] = {}
        envs = {pod: env_for(lib, cores, out / f"pair-{cores}-{pod}.cache") for pod in ("a", "b")}

        def measure(pod: str, results: dict[str, Any] = results, envs: dict[str, Any] = envs) -> None:
            results[pod] = compute(limited, envs[pod])

        threads = [threading.Thread(target=measure, args=(pod,)) for pod in envs]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        for pod in ("a", "b"):
            (out / f"pair-{cores}-{pod}.json").write_text(json.dumps(results[pod]))
            rows.append(row(f"two at {cores}, {pod}", cores, results[pod], base))
            print(table(rows[-1:]).splitlines()[-1], flush=True)
    text = table(rows)
    (out / "table.md").write_text(text)
    (out / "curve.json").write_text(json.dumps({"baseline_gfma_per_s": base, "shape": SHAPE,
                                                "window_s": args.seconds, "rows": rows}, indent=1))  # fmt: skip
    print(text, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
