"""ctypes onto the CUDA driver API: the few calls the probes make, and the errors that end a probe.

`GPUSHARE_LIBCUDA` names another library to load (a missing one proves the error path). Standard library only.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Sequence
from typing import Any

MIB = 1 << 20
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


def load_library(env_name: str, default: str) -> ctypes.CDLL:
    """The library `env_name` names, else `default`; ProbeError when it does not load."""
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
        self.lib = load_library("GPUSHARE_LIBCUDA", "libcuda.so.1")
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
