"""What a probe reads of its own process: its env, the libraries preloaded into it, the mechanism that limits it,
and HAMi-core's lines on its stderr. Standard library only.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

MEMORY_LIMIT_PREFIX = "CUDA_DEVICE_MEMORY_LIMIT"
SM_LIMIT_PREFIX = "CUDA_DEVICE_SM_LIMIT"
# HAMi-core reads `<prefix>_<i>` for each CUDA device i as printf's %d writes it, else the un-indexed `<prefix>` for
# every device (src/multiprocess/multiprocess_memory_limit.c:178-210): `_01` is read by nothing.
INDEXED = re.compile(rf"^({MEMORY_LIMIT_PREFIX}|{SM_LIMIT_PREFIX})(?:_(0|[1-9]\d*))?$")
MPS_LIMIT_KEYS = ("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE")
OOM_LINE = re.compile(r"Device\s+(\d+)\s+OOM\s+(\d+)\s*/\s*(\d+)")
HAMI_LINE = "[HAMI-core"
HOST_PID_FAILED = ("host pid is error", "SET_TASK_PID FAILED", "Skipped host PID detection")
"""HAMi-core's lines when cuInit found no host PID (src/utils.c: set_task_pid; src/libvgpu.c: postInit): it then
never rate-limits a launch of this process (src/cuda/memory.c: cuLaunchKernel calls rate_limiter only if pidfound)."""
LOOKUP_LINES = 6
LOOKUP_LINE_CHARS = 200
"""HAMi-core's refusal line (src/allocator/allocator.c:52, oom_check): `Device <d> OOM <usage + request> / <limit>`."""


def is_device_limit(key: str) -> bool:
    """Whether an env key is a per-device limit HAMi-core reads (what the probes report beside their fixed keys)."""
    return INDEXED.match(key) is not None


def preload_evidence(
    preload_file: str = "/etc/ld.so.preload", maps_file: str = "/proc/self/maps", env: Mapping[str, str] | None = None
) -> dict[str, list[str]]:
    """What should be preloaded (`listed`: /etc/ld.so.preload and LD_PRELOAD) and what is (`mapped`, from maps).

    `mapped` holds the mapped files that are listed, or whose name starts with libvgpu: a listed library that
    the loader could not load is listed and not mapped.
    """
    listed: list[str] = []
    try:
        with open(preload_file) as handle:
            listed += [word for line in handle for word in line.split() if not word.startswith("#")]
    except OSError:
        pass
    value = (os.environ if env is None else env).get("LD_PRELOAD") or ""
    listed += [word for word in value.replace(":", " ").split() if word]
    wanted = {os.path.realpath(path) for path in listed} | set(listed)
    mapped: list[str] = []
    try:
        with open(maps_file) as handle:
            for line in handle:
                fields = line.split(None, 5)
                path = fields[5].strip() if len(fields) == 6 else ""
                if not path.startswith("/") or path in mapped:
                    continue
                if path in wanted or os.path.realpath(path) in wanted or os.path.basename(path).startswith("libvgpu"):
                    mapped.append(path)
    except OSError:
        pass
    return {"listed": listed, "mapped": mapped}


def reported_env(keys: Sequence[str], environ: Mapping[str, str] | None = None) -> dict[str, str | None]:
    """`keys` as this process has them (None: unset), then every per-device limit it carries beyond them
    (`CUDA_DEVICE_MEMORY_LIMIT_1`, `CUDA_DEVICE_SM_LIMIT_2`): a second card's quota is reported, never hidden by a
    fixed list."""
    env = os.environ if environ is None else environ
    found: dict[str, str | None] = {key: env.get(key) for key in keys}
    found |= {key: env[key] for key in sorted(env) if key not in found and is_device_limit(key)}
    return found


def mechanism_of(env: Mapping[str, Any], mapped: Sequence[str], hami_keys: Sequence[str], given: str = "auto") -> str:
    """`hami-core`, `mps` or `none`: what limits this process, from its env (`hami_keys`: the HAMi-core limits
    the calling probe measures) and the mapped libraries."""
    if given != "auto":
        return given
    if any(env.get(key) for key in MPS_LIMIT_KEYS):
        return "mps"
    if mapped or any(env.get(key) for key in hami_keys):
        return "hami-core"
    return "none"


@contextlib.contextmanager
def captured_stderr(sink: list[str]) -> Iterator[None]:
    """Point fd 2 at a temp file (HAMi-core writes its OOM lines there from C), append them to `sink`, replay them."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            text = tmp.read().decode(errors="replace")
            if text:
                os.write(2, text.encode())
            sink.extend(line for line in text.splitlines() if line.strip())


def parse_oom_line(line: str) -> tuple[int, int, int] | None:
    """HAMi-core's refusal line → (device, used + request bytes, limit bytes), or None for any other line.

    `[HAMI-core ERROR (pid:479 thread=… allocator.c:52)]: Device 0 OOM 4401922048 / 4194304000`;
    the thread= field is absent in some builds.
    """
    match = OOM_LINE.search(line)
    if not match:
        return None
    device, used, limit = (int(g) for g in match.groups())
    return device, used, limit


def host_pid_lookup(lines: Sequence[str], mechanism: str) -> dict[str, Any]:
    """What HAMi-core printed while cuInit looked up this process's host PID, and whether it found one (None where
    HAMi-core does not limit this process): its own lines, a failure's first, at most LOOKUP_LINES, each cut."""
    hami = [line for line in lines if HAMI_LINE in line]
    failed = [line for line in hami if any(mark in line for mark in HOST_PID_FAILED)]
    kept = [line[:LOOKUP_LINE_CHARS] for line in [*failed, *(x for x in hami if x not in failed)]][:LOOKUP_LINES]
    return {"lines": kept, "host_pid_found": None if mechanism != "hami-core" else not failed}
