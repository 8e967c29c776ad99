"""Proof Pods as processes: each with the Pod's quota env, its own HAMi-core cache file or MPS client settings.

Standard library only. A mechanism setup says what each process gets: `hami-core` preloads libvgpu.so with
LD_PRELOAD (the Pod gets it from /etc/ld.so.preload), a fresh CUDA_DEVICE_MEMORY_SHARED_CACHE per Pod (the
device plugin mounts one per container) and the limit env; `bare` is the same env with no library; `mps` makes
the Pods clients of a control daemon this host proof starts and stops, with the limits GKE passes to clients.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from components.incluster.probes.process import is_device_limit

ROOT = Path(__file__).resolve().parents[3]
"""The repository root: the probes run as modules of components.incluster.probes from there."""
PACKAGE = "components.incluster.probes"
STRIPPED_ENV = (
    "LD_PRELOAD",
    "CUDA_DEVICE_MEMORY_LIMIT",
    "CUDA_DEVICE_MEMORY_LIMIT_0",
    "CUDA_DEVICE_SM_LIMIT",
    "CUDA_DEVICE_SM_LIMIT_0",
    "CUDA_DEVICE_MEMORY_SHARED_CACHE",
    "GPU_CORE_UTILIZATION_POLICY",
    "CUDA_MPS_PIPE_DIRECTORY",
    "CUDA_MPS_LOG_DIRECTORY",
    "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT",
    "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE",
)
"""What the host's own environment must not leak into a Pod process."""
MPS_CONTROL = "nvidia-cuda-mps-control"


@dataclass
class PodRun:
    """One proof Pod as it ran: its processes' output, exit codes and times."""

    name: str
    logs: str = ""
    exit_codes: list[int] = field(default_factory=list)
    started: float = 0.0
    ended: float = 0.0

    def evidence(self, node: str) -> dict[str, Any]:
        failed = any(code != 0 for code in self.exit_codes)
        return {"name": self.name, "phase": "Failed" if failed else "Succeeded", "nodeName": node, "logs": self.logs}


def clean_env() -> dict[str, str]:
    """This host's environment without any quota (a second card's `_1` too), preload or MPS setting, unbuffered
    Python."""
    env = {k: v for k, v in os.environ.items() if k not in STRIPPED_ENV and not is_device_limit(k)}
    return {**env, "PYTHONUNBUFFERED": "1"}


def mps_client_env(slice_mib: int, cores: int | None, mps_env: Mapping[str, str]) -> dict[str, str]:
    """The env of an MPS client with a pinned memory limit (and a thread percentage when a compute quota is set)."""
    env = {**mps_env, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT": f"0={slice_mib}M"}
    if cores is not None:
        env["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] = str(cores)
    return env


def hami_env(lib: str | None, limit_env: Mapping[str, str], cores: int | None, cache: Path) -> dict[str, str]:
    """The env HAMi's device plugin gives a container (limit, cores, its cache file), plus the library if given."""
    env = {**limit_env, "CUDA_DEVICE_MEMORY_SHARED_CACHE": str(cache)}
    if cores is not None:
        env["CUDA_DEVICE_SM_LIMIT"] = str(cores)
    if lib:
        env["LD_PRELOAD"] = lib
    return env


def run_process(argv: Sequence[str], env: Mapping[str, str], timeout: float) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of one probe process; a timeout is exit 124 with what it printed."""
    try:
        done = subprocess.run(list(argv), env=dict(env), cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else exc.stdout or ""
        err = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else exc.stderr or ""
        return 124, out, err + f"\ntimed out after {timeout:.0f} s"
    return done.returncode, done.stdout, done.stderr


def probe(name: str, args: Sequence[str]) -> list[str]:
    """One probe as a module of the package, run from the repository root (run_process's cwd)."""
    return [sys.executable, "-m", f"{PACKAGE}.{name}", "--json", *args]


def run_pods(
    steps: Mapping[str, Sequence[tuple[list[str], Mapping[str, str]]]],
    timeout: float,
    stagger: float = 0.0,
    meets: Sequence[Mapping[str, int]] = (),
) -> dict[str, PodRun]:
    """Every Pod's steps (argv, env) in order, the Pods at the same time (threads), as the two Pods of a node;
    each Pod after the first starts `stagger` seconds after the one before (a cluster creates B after A). Each meet
    names Pods and the step each waits before until all of them got there, every process before it ended: no new
    process meets a limited one's host-PID lookup, and the holds overlap as a cluster's kept holds do."""
    runs = {name: PodRun(name) for name in steps}
    delays = {name: i * stagger for i, name in enumerate(steps)}
    barriers = [(meet, threading.Barrier(len(meet))) for meet in meets if meet]

    def one(name: str) -> None:
        run = runs[name]
        time.sleep(delays[name])
        run.started = time.time()
        for i, (argv, env) in enumerate(steps[name]):
            for meet, barrier in barriers:
                if meet.get(name) == i:
                    with contextlib.suppress(threading.BrokenBarrierError):  # a Pod stuck past the timeout: go on
                        barrier.wait(timeout * len(steps[name]))
            code, out, err = run_process(argv, env, timeout)
            run.exit_codes.append(code)
            run.logs += out + ("\n" if out and not out.endswith("\n") else "") + err
        run.ended = time.time()

    threads = [threading.Thread(target=one, args=(name,)) for name in steps]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return runs


@contextlib.contextmanager
def mps_daemon(directory: Path, log: Any = print) -> Iterator[dict[str, str]]:
    """An MPS control daemon of our own (private pipe and log directories), always told to quit at the end."""
    pipe, logs = directory / "pipe", directory / "log"
    pipe.mkdir(parents=True, exist_ok=True)
    logs.mkdir(parents=True, exist_ok=True)
    env = {"CUDA_MPS_PIPE_DIRECTORY": str(pipe), "CUDA_MPS_LOG_DIRECTORY": str(logs)}
    full = {**clean_env(), **env}
    started = subprocess.run([MPS_CONTROL, "-d"], env=full, capture_output=True, text=True, timeout=30)
    if started.returncode != 0:
        raise RuntimeError(f"{MPS_CONTROL} -d failed ({started.returncode}): {started.stderr.strip()}")
    log(f"MPS control daemon started, pipes in {pipe}")
    previous = signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        yield env
    finally:
        subprocess.run([MPS_CONTROL], input="quit\n", env=full, capture_output=True, text=True, timeout=60)
        signal.signal(signal.SIGTERM, previous)
        log("MPS control daemon told to quit")


def card() -> dict[str, Any]:
    """The card as nvidia-smi shows it to a process with no quota (name, MiB, driver, compute mode)."""
    query = "name,memory.total,driver_version,compute_mode,uuid"
    try:
        done = subprocess.run(
            ["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader,nounits"],
            env=clean_env(), capture_output=True, text=True, timeout=30,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {"error": str(exc)}
    fields = [f.strip() for f in (done.stdout.splitlines() or [""])[0].split(",")]
    if len(fields) < 5:
        return {"error": done.stderr.strip() or "nvidia-smi printed nothing"}
    return {"name": fields[0], "mib": int(fields[1]), "driver": fields[2], "computeMode": fields[3], "uuid": fields[4]}


def cards_of_host() -> list[dict[str, Any]]:
    """Every card nvidia-smi shows a process with no quota, with its index (what `--device` names); [] when it
    answers nothing."""
    query = "index,name,memory.total,driver_version,compute_mode,uuid"
    try:
        done = subprocess.run(
            ["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader,nounits"],
            env=clean_env(), capture_output=True, text=True, timeout=30,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return []
    found = []
    for line in done.stdout.splitlines():
        fields = [f.strip() for f in line.split(",")]
        if len(fields) >= 6 and fields[0].isdigit() and fields[2].isdigit():
            found.append({"index": int(fields[0]), "name": fields[1], "mib": int(fields[2]), "driver": fields[3],
                          "computeMode": fields[4], "uuid": fields[5]})  # fmt: skip
    return found
