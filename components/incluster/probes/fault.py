"""Fault probe: does a Pod whose own kernel writes to an illegal address take its neighbour on the card down?

Run as a module, `python3 -m <package>.fault --json --role neighbour|faulter --window S [--delay S]`: human lines
first, one JSON object last (docs/probes.md lists every field). Both roles last exactly `--window` seconds, so the
steps after this one start together in both Pods. This process never touches CUDA; its children do:
- neighbour: one child launches a 1-block kernel and synchronises, in a loop, until the window's end, counting
  launches per second; it stops at its first CUDA error and keeps the instant;
- faulter: one child (the faulting process) makes its context, waits until `--delay` after this process started,
  launches a kernel that stores to address 0, synchronises (CUDA_ERROR_ILLEGAL_ADDRESS expected) and ends; then a
  fresh child runs one kernel: the card must still serve once the faulting process is gone.
Every child ends on its error, so none holds a broken context while the next one connects (under MPS a fault
reaches every client of the server). The PTX is JIT-compiled by the driver (cuModuleLoadData). Standard library only.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from . import provenance
from .cuda import Cuda, CudaError, ProbeError
from .output import now_iso, print_result, record_error, say
from .process import mechanism_of, preload_evidence, reported_env
from .timeline import Recorder, iso

# tick: each thread stores its index (a launch that does next to nothing, so the rate is the launch rate);
# poke: one store to the address it is given (0: no allocation there). PTX 6.0 / sm_52: JIT-compiled on a T4 or H200.
PTX = """
.version 6.0
.target sm_52
.address_size 64

.visible .entry tick(.param .u64 out)
{
    .reg .b32 %r<2>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [out];
    cvta.to.global.u64 %rd1, %rd1;
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r1;
    ret;
}

.visible .entry poke(.param .u64 addr)
{
    .reg .b32 %r<2>;
    .reg .b64 %rd<2>;
    ld.param.u64 %rd1, [addr];
    mov.u32 %r1, 1;
    st.global.u32 [%rd1], %r1;
    ret;
}
"""
TICK_THREADS = 32
EXPECTED_ERROR = "CUDA_ERROR_ILLEGAL_ADDRESS"
END_MARGIN_S = 0.2
"""The neighbour's loop ends this long before the window, so the child exits and this process reports in time."""
CHILD_GRACE_S = 30
"""A child may take this long past its window (a slow context, an MPS server restarting) before it is killed."""
SERVE_TRIES = 3
SERVE_RETRY_S = 0.5
SERVE_TIMEOUT_S = 20
"""The fresh process after the fault: up to three tries, half a second apart, each bounded."""
HAMI_KEYS = ("CUDA_DEVICE_SM_LIMIT", "CUDA_DEVICE_MEMORY_LIMIT_0", "CUDA_DEVICE_MEMORY_LIMIT")
ENV_KEYS = (
    "CUDA_DEVICE_MEMORY_LIMIT_0",
    "CUDA_DEVICE_MEMORY_LIMIT",
    "CUDA_DEVICE_SM_LIMIT",
    "CUDA_DEVICE_MEMORY_SHARED_CACHE",
    "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE",
    "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT",
    "CUDA_MPS_PIPE_DIRECTORY",
    "NVIDIA_VISIBLE_DEVICES",
    "LD_PRELOAD",
)

ROLE_FIELDS = {
    "neighbour": ("timeline", "launches", "survived", "cuda_error", "cuda_error_at"),
    "faulter": ("fault_at", "cuda_error", "cuda_error_at", "faulted", "faulting_pid", "faulting_ended", "served",
                "serve"),
}  # fmt: skip
"""What each role measures, beside the fields both share (docs/probes.md)."""

Clock = Callable[[], float]
ChildRunner = Callable[[Sequence[str], float], dict[str, Any]]


class Kernels:
    """The two kernels on this process's primary context, and a small buffer for tick to write."""

    def __init__(self, cuda: Any) -> None:
        self.cuda = cuda
        module = cuda.load_ptx(PTX)
        self.tick_fn, self.poke_fn = cuda.function(module, "tick"), cuda.function(module, "poke")
        buffer, err = cuda.try_alloc(TICK_THREADS * 4)
        if buffer is None:
            raise ProbeError(f"cannot allocate the {TICK_THREADS * 4}-byte tick buffer: {err}")
        self.buffer = buffer

    def tick(self) -> None:
        self.cuda.launch(self.tick_fn, 1, TICK_THREADS, [ctypes.c_uint64(self.buffer)])
        self.cuda.synchronize()

    def poke(self, address: int = 0) -> None:
        self.cuda.launch(self.poke_fn, 1, 1, [ctypes.c_uint64(address)])
        self.cuda.synchronize()


def sleep_until(instant: float, clock: Clock = time.time, sleep: Callable[[float], None] = time.sleep) -> None:
    while (left := instant - clock()) > 0:
        sleep(min(left, 0.5))


def timed_loop(work: Callable[[], None], amount: float, until: float,
               clock: Clock = time.time) -> tuple[Recorder, int, float, dict[str, Any]]:  # fmt: skip
    """Run `work` until `until` or its first CUDA error, `amount` recorded in the second each run finished: the
    timeline, the runs, when it stopped, and the error with its instant (both None when it ran to the end)."""
    t0 = now = clock()
    timeline = Recorder(t0)
    runs, error, error_at = 0, None, None
    while now < until:
        try:
            work()
        except CudaError as exc:
            error, error_at = exc.name, clock()
            now = error_at
            break
        now = clock()
        runs += 1
        timeline.add(now, amount)
    return timeline, runs, now, {"cuda_error": error, "cuda_error_at": iso(error_at) if error_at is not None else None}


def launch_loop(launch: Callable[[], None], until: float, clock: Clock = time.time) -> dict[str, Any]:
    """Launch and synchronise until `until` or the first CUDA error: launches per second, and the error's instant."""
    timeline, launches, now, error = timed_loop(launch, 1, until, clock)
    return {"timeline": timeline.to_dict(now), "launches": launches, "survived": error["cuda_error"] is None, **error}


def child_main(mode: str, instant: float | None, clock: Clock = time.time, cuda: Any = None,
               sleep: Callable[[float], None] = time.sleep) -> dict[str, Any]:  # fmt: skip
    """One CUDA process: `loop` until `instant`, `fault` at `instant`, or `serve` one kernel now."""
    out: dict[str, Any] = {"child": mode, "pid": os.getpid(), "ok": False, "error": None, "cuda_error": None,
                           "initialized": False, "started_at": now_iso(), "ended_at": None, "gpu_uuid": None,
                           "gpu_name": None}  # fmt: skip
    try:
        cuda = cuda or Cuda()
        cuda.init()
        out["gpu_name"], out["gpu_uuid"] = cuda.name(), cuda.uuid()
        cuda.use_primary_context()
        kernels = Kernels(cuda)
        out["initialized"] = True
        if mode == "loop":
            out.update(launch_loop(kernels.tick, instant or clock(), clock))
        elif mode == "fault":
            sleep_until(instant or clock(), clock, sleep)
            out["fault_at"] = iso(clock())
            try:
                kernels.poke(0)
                out["cuda_error"], out["cuda_error_at"] = None, None
            except CudaError as exc:
                out["cuda_error"], out["cuda_error_at"] = exc.name, iso(clock())
            out["faulted"] = out["cuda_error"] == EXPECTED_ERROR
        else:
            try:
                kernels.tick()
                out["kernel_ran"], out["cuda_error"] = True, None
            except CudaError as exc:
                out["kernel_ran"], out["cuda_error"] = False, exc.name
        out["ok"] = True
    except Exception as exc:  # a child reports, never crashes: its parent needs the JSON
        record_error(out, exc)
        if isinstance(exc, CudaError):
            out.setdefault("kernel_ran", False)
    out["ended_at"] = now_iso()
    return out


def module_argv(module: str, *args: str) -> tuple[list[str], dict[str, str]]:
    """This package's `module` run with -m in a child, and an env whose PYTHONPATH finds the package (a Pod's
    mount or the repository); abspath, not resolve: a ConfigMap's files are links into a dated folder."""
    package = __package__ or ""
    if not package:
        raise ProbeError("run this probe as a module (python3 -m <package>.fault), not as a file")
    root = os.path.abspath(__file__)
    for _ in package.split("."):
        root = os.path.dirname(root)
    root = os.path.dirname(root)
    paths = [root, *[p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]]
    return [sys.executable, "-m", f"{package}.{module}", *args], {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}


def run_child(args: Sequence[str], timeout: float) -> dict[str, Any]:
    """This probe again as a child (`--child ...`): its JSON line, with its pid and exit code; ok false with why."""
    argv, env = module_argv("fault", *args)
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        err += f"\nkilled after {timeout:.0f} s"
    if err:
        sys.stderr.write(err[-2000:])
    lines = [line for line in out.strip().splitlines() if line.startswith("{")]
    try:
        answer = json.loads(lines[-1]) if lines else {}
    except ValueError:
        answer = {}
    if not answer:
        answer = {"ok": False, "initialized": False, "error": f"child exited {proc.returncode}: {err.strip()[-300:]}"}
    return {**answer, "pid": proc.pid, "exit_code": proc.returncode}


def _summary(step: str, child: Mapping[str, Any]) -> dict[str, Any]:
    keys = ("pid", "exit_code", "started_at", "ended_at", "ok", "error")
    return {"step": step, **{k: child.get(k) for k in keys}}


def neighbour(end: float, window: float, run: ChildRunner, children: list[dict[str, Any]]) -> dict[str, Any]:
    """The loop child until the window's end (less END_MARGIN_S): its rate timeline, whether it survived, its error."""
    child = run(["--child", "loop", "--at", f"{end - END_MARGIN_S:.3f}"], window + CHILD_GRACE_S)
    children.append(_summary("neighbour", child))
    fields = {k: child.get(k) for k in (*ROLE_FIELDS["neighbour"], "gpu_uuid", "gpu_name")}
    if not child.get("initialized") or "launches" not in child:
        raise ProbeError(f"the neighbour's child did not run: {child.get('error')}")
    return fields


def faulter(start: float, window: float, delay: float, run: ChildRunner, clock: Clock,
            sleep: Callable[[float], None], children: list[dict[str, Any]]) -> dict[str, Any]:  # fmt: skip
    """The faulting child at start + delay, then fresh children until one runs a kernel (at most SERVE_TRIES)."""
    end = start + window
    faulting = run(["--child", "fault", "--at", f"{start + delay:.3f}"], window + CHILD_GRACE_S)
    children.append(_summary("faulting", faulting))
    if not faulting.get("initialized") or "fault_at" not in faulting:
        raise ProbeError(f"the faulting child did not reach its fault: {faulting.get('error')}")
    serves: list[dict[str, Any]] = []
    while len(serves) < SERVE_TRIES:
        attempt = run(["--child", "serve"], SERVE_TIMEOUT_S)
        children.append(_summary("fresh", attempt))
        serves.append({k: attempt.get(k) for k in ("pid", "started_at", "ended_at", "kernel_ran", "cuda_error",
                                                    "error")})  # fmt: skip
        if attempt.get("kernel_ran") or clock() + SERVE_RETRY_S >= end:
            break
        sleep(SERVE_RETRY_S)
    fields = {
        "fault_at": faulting.get("fault_at"),
        "cuda_error": faulting.get("cuda_error"),
        "cuda_error_at": faulting.get("cuda_error_at"),
        "faulted": bool(faulting.get("faulted")),
        "faulting_pid": faulting.get("pid"),
        "faulting_ended": faulting.get("exit_code") is not None,
        "served": any(s.get("kernel_ran") for s in serves),
        "serve": serves,
        "gpu_uuid": faulting.get("gpu_uuid"),
        "gpu_name": faulting.get("gpu_name"),
    }
    return fields


def new_result(args: argparse.Namespace, env: Mapping[str, str | None], preload: Mapping[str, Any]) -> dict[str, Any]:
    """Every field of the role, null until measured: the same keys whether or not the role reached the card."""
    mechanism = mechanism_of(env, preload.get("mapped") or [], HAMI_KEYS, args.mechanism)
    measured = ROLE_FIELDS["neighbour" if args.role == "neighbour" else "faulter"]
    return {"probe": "fault", "role": args.role, "ok": False, "error": None, "pid": os.getpid(), "children": [],
            "window_s": args.window, "delay_s": args.delay if args.role == "faulter" else None,
            "expected_error": EXPECTED_ERROR, "mechanism": mechanism, "env": dict(env), "preload": dict(preload),
            "gpu_uuid": None, "gpu_name": None, **dict.fromkeys(measured), "started_at": now_iso(),
            "ended_at": None}  # fmt: skip


def run_role(args: argparse.Namespace, result: dict[str, Any], run: ChildRunner = run_child,
             clock: Clock = time.time, sleep: Callable[[float], None] = time.sleep) -> dict[str, Any]:  # fmt: skip
    """The role's children, then idle until the window's end (so both Pods' next steps start together); a role
    whose children never reached the card ends at once."""
    start = clock()
    end = start + args.window
    children: list[dict[str, Any]] = result["children"]
    try:
        if args.role == "neighbour":
            fields = neighbour(end, args.window, run, children)
        else:
            fields = faulter(start, args.window, args.delay, run, clock, sleep, children)
        result.update(fields)
        result["ok"] = True
        sleep_until(end, clock, sleep)
    except ProbeError as exc:  # a child that never reached the card: the role ends at once, reported
        record_error(result, exc)
    result["ended_at"] = now_iso()
    return result


def describe(result: Mapping[str, Any]) -> str:
    if not result.get("ok"):
        return f"error: {result.get('error')}"
    died = f"died: {result.get('cuda_error')} at {result.get('cuda_error_at')}"
    if result["role"] == "neighbour":
        per_s = (result.get("timeline") or {}).get("per_s")
        fate = "survived" if result.get("survived") else died
        return f"neighbour: {result.get('launches')} launches, per second {per_s}; {fate}"
    after = "ran a kernel" if result.get("served") else "could not run a kernel"
    return f"faulter: kernel at {result.get('fault_at')}, {died}; a fresh process then {after}"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", action="store_true", help="print the result as one JSON object, last line")
    p.add_argument("--role", choices=("neighbour", "faulter"), default="neighbour")
    p.add_argument("--window", type=float, default=8.0, help="seconds this step lasts, in either role")
    p.add_argument("--delay", type=float, default=3.5, help="faulter: seconds after its start that it faults")
    p.add_argument("--mechanism", default="auto", choices=("auto", "hami-core", "mps", "none"))
    p.add_argument("--child", choices=("loop", "fault", "serve"), help=argparse.SUPPRESS)
    p.add_argument("--at", type=float, default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.window <= 0 or args.delay < 0 or (args.role == "faulter" and args.delay >= args.window):
        p.error(f"--delay {args.delay} must lie inside --window {args.window} (both in seconds, window > 0)")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Run the role; 0 when it ran (its judgement is in the JSON), 1 when it could not."""
    args = parse_args(argv)
    if args.child:
        answer = child_main(args.child, args.at)
        print_result(answer)
        return 0 if answer["ok"] else 1
    env = reported_env(ENV_KEYS)
    result = run_role(args, new_result(args, env, preload_evidence()))
    for child in result["children"]:
        provenance.note_child(child)
    result["pod"] = provenance.block(say)
    say(describe(result))
    if args.json:
        print_result(result)
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
