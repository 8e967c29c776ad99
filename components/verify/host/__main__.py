"""`python -m components.verify.host STACK --lib PATH/libvgpu.so`: does HAMi-core enforce on this driver and card?

Runs the stack's proof on this GPU host with no Kubernetes: each proof Pod a process with the Pod's quota env
and its own cache file, the library preloaded (`--lib`), both Pods at once, then the stack's own judge.
Without `--lib` it runs bare, and the proof fails where the library is missing. `--mps` runs the same Pods as
MPS clients of a control daemon it starts and stops. `compare` runs HAMi-core and MPS on the same card.
`--device N` puts the proof Pods on card N; on a host of several cards a whole-card process runs on another card
and a cross-card process (the Pods' quota env, CUDA given every card) beside them.

  python -m components.verify.host cluster --write-expect cluster.expect.json   # where pulumi is installed
  python -m components.verify.host cluster --expect cluster.expect.json --lib ./libvgpu.so --out results/
  python -m components.verify.host compare --expect cluster.expect.json --lib ./libvgpu.so --out results/
  python -m components.verify.host cluster --expect cluster.expect.json --lib ./libvgpu.so --device 1 --out two/

Exit 0 when every check a host can run passed, 1 when one failed, 2 on bad input or a host without a GPU.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from components.verify.host import cards, expectation
from components.verify.host.compare import compare
from components.verify.host.proof import HostOptions, prove
from components.verify.host.runner import card, cards_of_host, mps_daemon


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m components.verify.host", description=__doc__.splitlines()[0])
    p.add_argument("stack", help="a stack name (gke, k3s, cluster), or `compare` for HAMi-core beside MPS")
    p.add_argument("--expect", help="the expectation file written by --write-expect (no pulumi needed)")
    p.add_argument("--stack", dest="compare_stack", default="cluster", help="compare: the stack whose quotas to use")
    p.add_argument("--write-expect", metavar="FILE", help="plan the stack, write its expectation file, run nothing")
    p.add_argument("-c", "--config", action="append", default=[], help="config override key=value for the plan")
    p.add_argument("--lib", help="libvgpu.so to preload (HAMi-core built from source); absent: bare")
    p.add_argument("--mps", action="store_true", help="run the Pods as MPS clients instead of under HAMi-core")
    p.add_argument("--out", help="write verdict.json, evidence.json, expect.json (and the comparison) here")
    p.add_argument("--hold-seconds", type=int, help="each Pod's hold, instead of the stack's verify.holdSeconds")
    p.add_argument("--compute-seconds", type=float, help="the judged window per shape (default 20)")
    p.add_argument("--stagger", type=float, default=0.0, help="start each next Pod this many seconds after A")
    p.add_argument(
        "--compute-shapes",
        default="",
        help="comma list of the kernel shapes to measure (default: all;"
        " short_many alone is the one compute-limited judges)",
    )
    p.add_argument("--workdir", help="cache files, the baseline, MPS pipes (default: a fresh temp dir)")
    p.add_argument("--device", type=int, default=0, metavar="N",
                   help="the card the proof Pods share (nvidia-smi's index); with several cards a whole-card process"
                   " runs on another and a cross-card process beside them")  # fmt: skip
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    stack = args.compare_stack if args.stack == "compare" else args.stack
    gpu = {} if args.write_expect else card()
    if "error" in gpu:  # said once, before planning, rather than by every check that then has nothing to measure
        reason = (str(gpu["error"]).splitlines() or ["no answer"])[0]
        print(
            f"error: this host has no NVIDIA GPU the proof can use (nvidia-smi: {reason}); run it on a GPU host "
            "with the driver installed",
            file=sys.stderr,
        )
        return 2
    try:
        host = expectation.load(args.expect) if args.expect else expectation.host_plan(stack, args.config)
    except Exception as exc:  # a bad file or a config the plan refuses: one line, exit 2
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.write_expect:
        Path(args.write_expect).write_text(json.dumps(host, indent=1, sort_keys=True) + "\n")
        print(f"wrote {args.write_expect}: stack {host['stack']}, Pods {', '.join(host['pods'])}")
        return 0
    host_cards = () if args.write_expect else tuple(cards_of_host())
    refused = cards.refusal(host_cards, args.device)
    if args.stack == "compare" and args.device != 0:
        refused = "--device: compare measures one card, the host's first; --device picks a stack proof's card"
    if refused:
        print(f"error: {refused}", file=sys.stderr)
        return 2
    if args.lib and not os.path.isfile(args.lib):
        print(f"error: --lib {args.lib} is not a file (build HAMi-core's libvgpu.so first)", file=sys.stderr)
        return 2
    if args.stack == "compare" and not args.lib:
        print("error: compare needs --lib PATH/libvgpu.so (HAMi-core is one side of the comparison)", file=sys.stderr)
        return 2
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="gpushare-host-"))
    out = Path(args.out) if args.out else None
    if out:
        out.mkdir(parents=True, exist_ok=True)
    setup = "mps" if args.mps else ("hami-core" if args.lib else "bare")
    options = HostOptions(setup=setup, workdir=workdir, lib=os.path.abspath(args.lib) if args.lib else None,
                          hold_seconds=args.hold_seconds, compute_seconds=args.compute_seconds,
                          stagger_seconds=args.stagger, gpu_uuid=gpu.get("uuid"),
                          compute_shapes=tuple(s for s in args.compute_shapes.split(",") if s))  # fmt: skip
    if args.stack == "compare":  # one card, as before: its baselines run on the host's first card
        compare(host, options, out or workdir)
        return 0
    options = replace(options, device=args.device, cards=host_cards)
    if setup == "mps":
        with mps_daemon(workdir / "mps") as mps_env:
            proven = prove(host, HostOptions(**{**options.__dict__, "mps_env": mps_env}))
    else:
        proven = prove(host, options)
    verdict = proven["verdict"]
    for check in verdict["checks"]:
        mark = {True: "PASS", False: "FAIL", None: "----"}[check["passed"]]
        print(f"{mark} {check['id']}: {check['observed']}")
    for finding in verdict["findings"]:
        print(f"finding {finding.get('pod')} {finding['id']}: bypassed={finding['bypassed']}: {finding['observed']}")
    skipped = ", ".join(verdict["notRunOnHost"]) or "none"
    print(f"{verdict['stack']} on this host under {setup}: passed={verdict['passed']} "
          f"(not run on a host: {skipped}) in {verdict['wallSeconds']} s")  # fmt: skip
    if out:
        (out / "verdict.json").write_text(json.dumps(verdict, indent=1))
        (out / "evidence.json").write_text(json.dumps(proven["evidence"], indent=1))
        (out / "expect.json").write_text(json.dumps(proven["expect"], indent=1))
    print(json.dumps(verdict, separators=(",", ":")))
    return 0 if verdict["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
