"""ctypes onto the CUDA driver API and NVML, plus what every probe shares: times, stderr capture, result files.

Standard library only: the probes beside it import it relatively, in a Pod as on a host.
`GPUSHARE_LIBCUDA` / `GPUSHARE_LIBNVML` name other libraries to load (a missing one proves the error path).
"""

from __future__ import annotations

import contextlib
import ctypes
import datetime
import json
import os
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from ..evidence.devices import is_device_limit

MIB = 1 << 20
RESULT_FILE_LIMIT = 4096
"""Kubernetes keeps at most 4096 bytes of a container's termination message."""

CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16


class ProbeError(Exception):
    """A failure that ends a probe: reported as `"ok": false, "error": str(exc)`, never as a traceback."""


class CudaError(ProbeError):
    """A CUDA driver call that returned an error; `name` is the CUresult name (CUDA_ERROR_OUT_OF_MEMORY)."""

    def __init__(self, call: str, code: int, name: str) -> None:
        super().__init__(f"{call} failed: {name} ({code})")
        self.call = call
        self.code = code
        self.name = name


def now_iso() -> str:
    """UTC wall time to the millisecond, comparable across Pods on one node."""
    stamp = datetime.datetime.now(datetime.timezone.utc)  # noqa: UP017 (probes run on py3.8 hosts too)
    return stamp.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _load(env_name: str, default: str) -> ctypes.CDLL:
    name = os.environ.get(env_name) or default
    try:
        return ctypes.CDLL(name)
    except OSError as exc:
        raise ProbeError(f"cannot load {name}: {exc}") from exc


def format_uuid(raw: bytes) -> str:
    """16 raw bytes of a CUuuid → the `GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` form nvidia-smi prints."""
    h = raw.hex()
    return f"GPU-{h[0:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


class Cuda:
    """The few driver calls the probes make, on device 0 (the only one a slice Pod sees)."""

    def __init__(self) -> None:
        self.lib = _load("GPUSHARE_LIBCUDA", "libcuda.so.1")
        self.device = 0
        self.context: int | None = None

    def _err_name(self, code: int) -> str:
        name = ctypes.c_char_p()
        try:
            if self.lib.cuGetErrorName(code, ctypes.byref(name)) == 0 and name.value:
                return name.value.decode()
        except AttributeError:
            pass
        return f"CUDA_ERROR_{code}"

    def _call(self, call: str, *args: Any) -> None:
        fn = getattr(self.lib, call, None)
        if fn is None:
            raise ProbeError(f"{call} is missing from the CUDA driver library")
        code = fn(*args)
        if code != 0:
            raise CudaError(call, code, self._err_name(code))

    def _first(self, calls: Sequence[str]) -> str:
        for call in calls:
            if hasattr(self.lib, call):
                return call
        raise ProbeError(f"none of {', '.join(calls)} in the CUDA driver library")

    def init(self) -> None:
        """cuInit and device 0."""
        self._call("cuInit", 0)
        dev = ctypes.c_int()
        self._call("cuDeviceGet", ctypes.byref(dev), 0)
        self.device = dev.value

    def name(self) -> str:
        buf = ctypes.create_string_buffer(256)
        self._call("cuDeviceGetName", buf, 256, self.device)
        return buf.value.decode(errors="replace")

    def uuid(self) -> str:
        raw = (ctypes.c_ubyte * 16)()
        self._call(self._first(("cuDeviceGetUuid_v2", "cuDeviceGetUuid")), ctypes.byref(raw), self.device)
        return format_uuid(bytes(raw))

    def sm_count(self) -> int:
        value = ctypes.c_int()
        self._call("cuDeviceGetAttribute", ctypes.byref(value), CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, self.device)
        return value.value

    def use_primary_context(self) -> None:
        """The context every CUDA runtime program uses, so the one a quota must charge."""
        ctx = ctypes.c_void_p()
        self._call("cuDevicePrimaryCtxRetain", ctypes.byref(ctx), self.device)
        self._call("cuCtxSetCurrent", ctx)
        self.context = ctx.value

    def create_context(self) -> None:
        """A context of our own (cuCtxCreate), made current: the path a quota may not charge."""
        ctx = ctypes.c_void_p()
        self._call(self._first(("cuCtxCreate_v2", "cuCtxCreate")), ctypes.byref(ctx), 0, self.device)
        self.context = ctx.value

    def mem_info(self) -> tuple[int, int]:
        """(free, total) bytes as this context is told (a quota's view under HAMi-core)."""
        free, total = ctypes.c_size_t(), ctypes.c_size_t()
        self._call(self._first(("cuMemGetInfo_v2", "cuMemGetInfo")), ctypes.byref(free), ctypes.byref(total))
        return free.value, total.value

    def try_alloc(self, nbytes: int) -> tuple[int | None, str | None]:
        """cuMemAlloc: (pointer, None) or (None, the CUDA error name)."""
        ptr = ctypes.c_uint64()
        try:
            self._call(self._first(("cuMemAlloc_v2", "cuMemAlloc")), ctypes.byref(ptr), ctypes.c_size_t(nbytes))
        except CudaError as exc:
            return None, exc.name
        return ptr.value, None

    def free(self, ptr: int) -> None:
        self._call(self._first(("cuMemFree_v2", "cuMemFree")), ctypes.c_uint64(ptr))

    def load_ptx(self, ptx: str) -> int:
        """cuModuleLoadData: the driver JIT-compiles the PTX for this GPU (no nvcc anywhere)."""
        module = ctypes.c_void_p()
        self._call("cuModuleLoadData", ctypes.byref(module), ctypes.c_char_p(ptx.encode() + b"\0"))
        return module.value or 0

    def function(self, module: int, name: str) -> int:
        fn = ctypes.c_void_p()
        self._call("cuModuleGetFunction", ctypes.byref(fn), ctypes.c_void_p(module), name.encode())
        return fn.value or 0

    def launch(self, fn: int, grid: int, block: int, args: Sequence[ctypes._SimpleCData]) -> None:
        """cuLaunchKernel on the default stream with a 1-D grid; `args` are ctypes values in kernel order."""
        params = (ctypes.c_void_p * len(args))(*[ctypes.cast(ctypes.byref(a), ctypes.c_void_p) for a in args])
        self._call("cuLaunchKernel", ctypes.c_void_p(fn), grid, 1, 1, block, 1, 1, 0, None, params, None)

    def synchronize(self) -> None:
        self._call("cuCtxSynchronize")


class Nvml:
    """NVML's view of the card CUDA uses (`uuid`), else of its device 0 (what nvidia-smi shows first); every call may
    fail without ending a probe.

    NVML ignores CUDA_VISIBLE_DEVICES: on a host of several cards its device 0 is the host's card 0 whichever card
    CUDA was given, so the card is found by the UUID CUDA reports (a container sees its own card as NVML's 0 anyway).
    """

    def __init__(self, uuid: str | None = None) -> None:
        self.lib = _load("GPUSHARE_LIBNVML", "libnvidia-ml.so.1")
        init = getattr(self.lib, "nvmlInit_v2", None) or self.lib.nvmlInit
        if init() != 0:
            raise ProbeError("nvmlInit failed")
        handle = ctypes.c_void_p()
        by_uuid = getattr(self.lib, "nvmlDeviceGetHandleByUUID", None) if uuid else None
        if by_uuid is not None:
            if by_uuid(str(uuid).encode(), ctypes.byref(handle)) != 0:
                raise ProbeError(f"nvmlDeviceGetHandleByUUID({uuid}) failed")
        else:
            get = getattr(self.lib, "nvmlDeviceGetHandleByIndex_v2", None) or self.lib.nvmlDeviceGetHandleByIndex
            if get(0, ctypes.byref(handle)) != 0:
                raise ProbeError("nvmlDeviceGetHandleByIndex(0) failed")
        self.handle = handle

    def memory(self) -> tuple[int, int]:
        """(total, free) bytes."""

        class Memory(ctypes.Structure):
            _fields_ = (("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong), ("used", ctypes.c_ulonglong))

        mem = Memory()
        if self.lib.nvmlDeviceGetMemoryInfo(self.handle, ctypes.byref(mem)) != 0:
            raise ProbeError("nvmlDeviceGetMemoryInfo failed")
        return mem.total, mem.free

    def process_used(self, pid: int) -> int | None:
        """Bytes NVML counts for process `pid` on device 0 (the count HAMi-core charges a context by, src/utils.c);
        None when NVML does not list it (a container's PIDs are not the host's)."""

        class Info(ctypes.Structure):  # nvmlProcessInfo_v1_t, what the unversioned call fills (nvml.h)
            _fields_ = (("pid", ctypes.c_uint), ("usedGpuMemory", ctypes.c_ulonglong))

        call = getattr(self.lib, "nvmlDeviceGetComputeRunningProcesses", None)
        infos, count = (Info * 256)(), ctypes.c_uint(256)
        if call is None or call(self.handle, ctypes.byref(count), infos) != 0:
            return None
        used = [infos[i].usedGpuMemory for i in range(min(count.value, 256)) if infos[i].pid == pid]
        # NVML_VALUE_NOT_AVAILABLE is all ones: no count, not a huge one.
        return used[0] if used and used[0] < (1 << 62) else None

    def uuid(self) -> str | None:
        buf = ctypes.create_string_buffer(96)
        if self.lib.nvmlDeviceGetUUID(self.handle, buf, 96) != 0:
            return None
        return buf.value.decode(errors="replace")


def open_nvml(uuid: str | None = None) -> Nvml | None:
    """NVML on the card `uuid` (else device 0) if it loads; the probes report null NVML fields rather than fail
    without it."""
    try:
        return Nvml(uuid)
    except (ProbeError, AttributeError):
        return None


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


def fit_result(result: dict[str, Any], drop: Sequence[str], limit: int = RESULT_FILE_LIMIT) -> str:
    """Compact JSON of `result` in at most `limit` bytes: drop the `drop` paths (a.b) in order until it fits."""
    text = json.dumps(result, separators=(",", ":"))
    if len(text.encode()) <= limit:
        return text
    trimmed = json.loads(text)
    dropped: list[str] = []
    for path in drop:
        *parents, leaf = path.split(".")
        node: Any = trimmed
        for key in parents:
            node = node.get(key) if isinstance(node, dict) else None
        if isinstance(node, dict) and leaf in node:
            del node[leaf]
            dropped.append(path)
            trimmed["truncated"] = dropped
            text = json.dumps(trimmed, separators=(",", ":"))
            if len(text.encode()) <= limit:
                return text
    # Last resort: the scalar top-level fields only, which the judge reads first.
    small = {k: v for k, v in trimmed.items() if not isinstance(v, (dict, list))}
    small["truncated"] = ["*"]
    text = json.dumps(small, separators=(",", ":"))
    while len(text.encode()) > limit and "error" in small and small["error"]:
        small["error"] = str(small["error"])[: max(0, len(str(small["error"])) // 2)]
        text = json.dumps(small, separators=(",", ":"))
    return text


def write_result_file(path: str | None, text: str) -> None:
    """Write the JSON to `path` (a termination log); a failure is reported on stderr, never raised."""
    if not path:
        return
    try:
        with open(path, "w") as f:
            f.write(text)
    except OSError as exc:
        print(f"cannot write result file {path}: {exc}", file=sys.stderr)


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


def touch(path: str | None) -> None:
    """Create the readiness file that the Pod's readiness probe waits for."""
    if path:
        with open(path, "a"):
            pass


def finding(fid: str, tried: str, observed: str, bypassed: bool | None, why: str | None = None) -> dict[str, Any]:
    """One finding in the shape every probe reports; `why` only when nothing could be tried."""
    out: dict[str, Any] = {"id": fid, "tried": tried, "observed": observed, "bypassed": bypassed}
    if bypassed is None:
        out["why"] = why or "nothing could be tried"
    return out


MPS_LIMIT_KEYS = ("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE")


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
