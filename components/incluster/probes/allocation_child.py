"""One allocation path in a fresh process: the driver calls that take device memory by that door, in steps.

Run as `python3 -m <package>.allocation_child --path NAME --ask-mib N --step-mib S` (allocation_paths.py does): it
retains the primary context, takes `S` MiB at a time by the path named until it holds `N` MiB or a step is refused,
then, still holding it, reads the view (cuMemGetInfo), NVML's count for this process and the card, and whether a
plain cuMemAlloc of one step still succeeds; it frees everything and prints one JSON line. The structs follow the
CUDA driver API header (cuda.h, CUDA 12.x), named after its typedefs. Standard library only.
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Callable
from typing import Any

from .cuda import MIB, Cuda, CudaError, ProbeError
from .nvml import open_nvml
from .output import print_result, record_error

PATHS = (
    "cuMemAlloc",
    "cuMemAllocPitch",
    "cuMemCreate",
    "cuMemAllocManaged",
    "cuMemAllocAsync",
    "cuMemAllocFromPoolAsync (default pool)",
    "cuMemAllocFromPoolAsync (own pool)",
    "cuArray3DCreate",
    "cuMipmappedArrayCreate",
    "cuGraphAddMemAllocNode",
)
"""Every door the probe tries, in order; the names the record accepts (evidence/allocation_schema.py)."""

CU_MEM_ALLOCATION_TYPE_PINNED = 1  # CUmemAllocationType
CU_MEM_LOCATION_TYPE_DEVICE = 1  # CUmemLocationType
CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 3  # CUmemAccess_flags
CU_MEM_ALLOC_GRANULARITY_MINIMUM = 0  # CUmemAllocationGranularity_flags
CU_MEM_ATTACH_GLOBAL = 1  # CUmemAttach_flags
CU_AD_FORMAT_UNSIGNED_INT32 = 0x03  # CUarray_format
ARRAY_SIDE = 4096
"""A 3D array's width and height; 4 channels of 32 bits make each 4096 × 4096 slice 256 MiB."""
SLICE_MIB = ARRAY_SIDE * ARRAY_SIDE * 16 // MIB
PITCH_WIDTH = 1 << 16
"""cuMemAllocPitch's row width in bytes (well under CU_DEVICE_ATTRIBUTE_MAX_PITCH)."""


class CUmemLocation(ctypes.Structure):  # CUmemLocation_st
    _fields_ = (("type", ctypes.c_int), ("id", ctypes.c_int))


class CUmemAllocFlags(ctypes.Structure):  # the anonymous allocFlags of CUmemAllocationProp_st
    _fields_ = (("compressionType", ctypes.c_ubyte), ("gpuDirectRDMACapable", ctypes.c_ubyte),
                ("usage", ctypes.c_ushort), ("reserved", ctypes.c_ubyte * 4))  # fmt: skip


class CUmemAllocationProp(ctypes.Structure):  # CUmemAllocationProp_st
    _fields_ = (("type", ctypes.c_int), ("requestedHandleTypes", ctypes.c_int), ("location", CUmemLocation),
                ("win32HandleMetaData", ctypes.c_void_p), ("allocFlags", CUmemAllocFlags))  # fmt: skip


class CUmemAccessDesc(ctypes.Structure):  # CUmemAccessDesc_st
    _fields_ = (("location", CUmemLocation), ("flags", ctypes.c_int))


class CUmemPoolProps(ctypes.Structure):  # CUmemPoolProps_st (12.x: maxSize and usage carved from reserved[64])
    _fields_ = (("allocType", ctypes.c_int), ("handleTypes", ctypes.c_int), ("location", CUmemLocation),
                ("win32SecurityAttributes", ctypes.c_void_p), ("maxSize", ctypes.c_size_t),
                ("usage", ctypes.c_ushort), ("reserved", ctypes.c_ubyte * 54))  # fmt: skip


class CUDA_ARRAY3D_DESCRIPTOR(ctypes.Structure):  # CUDA_ARRAY3D_DESCRIPTOR_v2_st
    _fields_ = (("Width", ctypes.c_size_t), ("Height", ctypes.c_size_t), ("Depth", ctypes.c_size_t),
                ("Format", ctypes.c_int), ("NumChannels", ctypes.c_uint), ("Flags", ctypes.c_uint))  # fmt: skip


class CUDA_MEM_ALLOC_NODE_PARAMS(ctypes.Structure):  # CUDA_MEM_ALLOC_NODE_PARAMS_v1_st
    _fields_ = (("poolProps", CUmemPoolProps), ("accessDescs", ctypes.POINTER(CUmemAccessDesc)),
                ("accessDescCount", ctypes.c_size_t), ("bytesize", ctypes.c_size_t),
                ("dptr", ctypes.c_uint64))  # fmt: skip


def device_pool_props(device: int) -> CUmemPoolProps:
    props = CUmemPoolProps()
    props.allocType, props.location.type, props.location.id = (
        CU_MEM_ALLOCATION_TYPE_PINNED, CU_MEM_LOCATION_TYPE_DEVICE, device)  # fmt: skip
    return props


class Door:
    """One path's driver calls on the primary context of `cuda`: `take(nbytes)` holds one step and returns how to
    give it back; `close()` releases what the door itself made (a pool, a trimmed graph heap)."""

    def __init__(self, cuda: Cuda, path: str) -> None:
        self.cuda, self.path, self.dev = cuda, path, cuda.device
        self.call = cuda._call
        self.pool: ctypes.c_void_p | None = None
        if path == "cuMemAllocFromPoolAsync (default pool)":
            self.pool = ctypes.c_void_p()
            self.call("cuDeviceGetDefaultMemPool", ctypes.byref(self.pool), self.dev)
        elif path == "cuMemAllocFromPoolAsync (own pool)":
            self.pool = ctypes.c_void_p()
            props = device_pool_props(self.dev)
            self.call("cuMemPoolCreate", ctypes.byref(self.pool), ctypes.byref(props))

    def close(self) -> None:
        if self.path == "cuMemAllocFromPoolAsync (own pool)" and self.pool is not None:
            self.call("cuMemPoolDestroy", self.pool)
        if self.path == "cuGraphAddMemAllocNode":
            self.call("cuDeviceGraphMemTrim", self.dev)  # the graph heap goes back to the OS (cuda.h)

    def touch(self, ptr: int, nbytes: int) -> None:
        """Write every byte on the device, so memory that is only reserved (or managed) is really placed."""
        self.call("cuMemsetD8_v2", ctypes.c_uint64(ptr), ctypes.c_ubyte(0), ctypes.c_size_t(nbytes))
        self.call("cuCtxSynchronize")

    def take(self, nbytes: int) -> Callable[[], None]:
        size = ctypes.c_size_t(nbytes)
        ptr = ctypes.c_uint64()
        path, call = self.path, self.call
        if path == "cuMemAlloc":
            call("cuMemAlloc_v2", ctypes.byref(ptr), size)
            return lambda: call("cuMemFree_v2", ptr)
        if path == "cuMemAllocPitch":
            pitch = ctypes.c_size_t()
            call("cuMemAllocPitch_v2", ctypes.byref(ptr), ctypes.byref(pitch), ctypes.c_size_t(PITCH_WIDTH),
                 ctypes.c_size_t(nbytes // PITCH_WIDTH), ctypes.c_uint(4))  # fmt: skip
            return lambda: call("cuMemFree_v2", ptr)
        if path == "cuMemCreate":
            return self._mapped(nbytes)
        if path == "cuMemAllocManaged":
            call("cuMemAllocManaged", ctypes.byref(ptr), size, ctypes.c_uint(CU_MEM_ATTACH_GLOBAL))
            free = lambda: call("cuMemFree_v2", ptr)  # noqa: E731
            try:  # migrated onto the card before it is written there
                call("cuMemPrefetchAsync", ptr, size, self.dev, None)
                self.touch(ptr.value, nbytes)
            except CudaError:
                free()
                raise
            return free
        if path == "cuMemAllocAsync" or self.pool is not None:
            if self.pool is None:
                call("cuMemAllocAsync", ctypes.byref(ptr), size, None)
            else:
                call("cuMemAllocFromPoolAsync", ctypes.byref(ptr), size, self.pool, None)
            self._settle(ptr)
            return lambda: self._free_async(ptr)
        if path in ("cuArray3DCreate", "cuMipmappedArrayCreate"):
            return self._array(nbytes)
        if path == "cuGraphAddMemAllocNode":
            return self._graph(nbytes)
        raise ProbeError(f"no such allocation path {path!r} (one of {', '.join(PATHS)})")

    def _free_async(self, ptr: ctypes.c_uint64) -> None:
        self.call("cuMemFreeAsync", ptr, None)
        self.call("cuStreamSynchronize", None)

    def _settle(self, ptr: ctypes.c_uint64) -> None:
        """A stream-ordered allocation may fail only when the stream runs: synchronize, and free it if so."""
        try:
            self.call("cuStreamSynchronize", None)
        except CudaError:
            self.call("cuMemFreeAsync", ptr, None)
            raise

    def _mapped(self, nbytes: int) -> Callable[[], None]:
        """cuMemAddressReserve + cuMemCreate + cuMemMap + cuMemSetAccess, then written: the virtual-memory API."""
        call, prop = self.call, CUmemAllocationProp()
        prop.type, prop.location.type, prop.location.id = (
            CU_MEM_ALLOCATION_TYPE_PINNED, CU_MEM_LOCATION_TYPE_DEVICE, self.dev)  # fmt: skip
        gran = ctypes.c_size_t()
        call("cuMemGetAllocationGranularity", ctypes.byref(gran), ctypes.byref(prop),
             CU_MEM_ALLOC_GRANULARITY_MINIMUM)  # fmt: skip
        step = max(gran.value, 1)
        size = ctypes.c_size_t((nbytes + step - 1) // step * step)
        va, handle = ctypes.c_uint64(), ctypes.c_uint64()
        zero = ctypes.c_size_t(0)
        call("cuMemAddressReserve", ctypes.byref(va), size, zero, ctypes.c_uint64(0), ctypes.c_ulonglong(0))
        undo: list[Callable[[], Any]] = [lambda: call("cuMemAddressFree", va, size)]

        def release() -> None:
            for step_back in reversed(undo):
                step_back()

        try:
            call("cuMemCreate", ctypes.byref(handle), size, ctypes.byref(prop), ctypes.c_ulonglong(0))
            undo.append(lambda: call("cuMemRelease", handle))
            call("cuMemMap", va, size, ctypes.c_size_t(0), handle, ctypes.c_ulonglong(0))
            undo.append(lambda: call("cuMemUnmap", va, size))
            access = CUmemAccessDesc()
            access.location.type, access.location.id = CU_MEM_LOCATION_TYPE_DEVICE, self.dev
            access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE
            call("cuMemSetAccess", va, size, ctypes.byref(access), ctypes.c_size_t(1))
            self.touch(va.value, size.value)
        except CudaError:
            release()
            raise
        return release

    def _array(self, nbytes: int) -> Callable[[], None]:
        """A 4096 × 4096 × depth array of 4 × 32-bit texels (256 MiB a slice), plain or with one mip level."""
        desc = CUDA_ARRAY3D_DESCRIPTOR()
        desc.Width = desc.Height = ARRAY_SIDE
        desc.Depth = max(1, nbytes // (SLICE_MIB * MIB))
        desc.Format, desc.NumChannels = CU_AD_FORMAT_UNSIGNED_INT32, 4
        handle = ctypes.c_void_p()
        if self.path == "cuArray3DCreate":
            self.call("cuArray3DCreate_v2", ctypes.byref(handle), ctypes.byref(desc))
            return lambda: self.call("cuArrayDestroy", handle)
        self.call("cuMipmappedArrayCreate", ctypes.byref(handle), ctypes.byref(desc), ctypes.c_uint(1))
        return lambda: self.call("cuMipmappedArrayDestroy", handle)

    def _graph(self, nbytes: int) -> Callable[[], None]:
        """A graph of one memory-allocation node, instantiated and launched: the graph heap holds it afterwards."""
        call = self.call
        graph, node, execd = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
        params = CUDA_MEM_ALLOC_NODE_PARAMS()
        params.poolProps = device_pool_props(self.dev)
        # No access descriptors: the allocating device always has read-write access to its graph memory (cuda.h).
        params.accessDescs, params.accessDescCount = None, 0
        params.bytesize = nbytes
        call("cuGraphCreate", ctypes.byref(graph), ctypes.c_uint(0))
        undo: list[Callable[[], Any]] = [lambda: call("cuGraphDestroy", graph)]

        def release() -> None:
            for step_back in reversed(undo):
                step_back()

        try:
            call("cuGraphAddMemAllocNode", ctypes.byref(node), graph, None, ctypes.c_size_t(0), ctypes.byref(params))
            call("cuGraphInstantiateWithFlags", ctypes.byref(execd), graph, ctypes.c_ulonglong(0))
            undo.append(lambda: call("cuGraphExecDestroy", execd))
            call("cuGraphLaunch", execd, None)
            call("cuStreamSynchronize", None)
            ptr = ctypes.c_uint64(params.dptr)
            undo.append(lambda: self._free_async(ptr))
        except CudaError:
            release()
            raise
        return release


def take_in_steps(door: Door, ask_mib: int, step_mib: int) -> tuple[list[Callable[[], None]], int, int, str | None]:
    """Steps of `step_mib` until `ask_mib` is held or one is refused: (what to free, MiB held, steps, refusal)."""
    held: list[Callable[[], None]] = []
    got, steps, refused = 0, 0, None
    while got < ask_mib:
        step = min(step_mib, ask_mib - got)
        steps += 1
        try:
            held.append(door.take(step * MIB))
        except CudaError as exc:
            refused = exc.name
            break
        got += step
    return held, got, steps, refused


def give_back_all(held: list[Callable[[], None]]) -> str | None:
    """Free every step; the first failure is returned, not raised: what the path took is measured already."""
    # HAMi-core's cuMemFreeAsync frees only what its allocator charged (src/cuda/memory.c:632-641, free_raw_async),
    # so memory from a door it does not hook comes back as CUDA_ERROR -1: a finding, not a lost measurement.
    failure = None
    for give_back in reversed(held):
        try:
            give_back()
        except CudaError as exc:
            failure = failure or str(exc)
    return failure


def try_path(cuda: Cuda, nvml: Any, path: str, ask_mib: int, step_mib: int) -> dict[str, Any]:
    """Fill one path's answer: what it got, the view and NVML while held, and whether a plain allocation fits."""
    answer: dict[str, Any] = new_answer(path, ask_mib, step_mib)
    cuda.init()
    cuda.use_primary_context()
    door = Door(cuda, path)
    held, answer["got_mib"], answer["steps"], answer["refused_with"] = take_in_steps(door, ask_mib, step_mib)
    free, total = cuda.mem_info()
    answer["view_total_mib"], answer["view_free_mib"] = total // MIB, free // MIB
    if nvml is not None:
        used = nvml.process_used(os.getpid())
        answer["nvml_process_mib"] = None if used is None else used // MIB
        card_total, card_free = nvml.memory()
        answer["nvml_used_mib"] = (card_total - card_free) // MIB
    plain, answer["plain_after_error"] = cuda.try_alloc(step_mib * MIB)
    answer["plain_after_ok"] = plain is not None
    if plain is not None:
        cuda.free(plain)
    answer["free_error"] = give_back_all(held)
    door.close()
    answer["ok"] = True
    return answer


def new_answer(path: str, ask_mib: int, step_mib: int) -> dict[str, Any]:
    """Every key a path's answer has, from the start, so an early error still gives the whole shape."""
    return {"path": path, "ok": False, "error": None, "cuda_error": None, "pid": os.getpid(), "asked_mib": ask_mib,
            "step_mib": step_mib, "got_mib": 0, "steps": 0, "refused_with": None, "view_total_mib": None,
            "view_free_mib": None, "nvml_process_mib": None, "nvml_used_mib": None, "plain_after_ok": None,
            "plain_after_error": None, "free_error": None}  # fmt: skip


def child_main(path: str, ask_mib: int, step_mib: int, cuda: Cuda | None = None, nvml: Any = None) -> int:
    answer = new_answer(path, ask_mib, step_mib)
    try:
        cuda = cuda or Cuda()
        if nvml is None:
            cuda.init()
            nvml = open_nvml(cuda.uuid())
        answer = try_path(cuda, nvml, path, ask_mib, step_mib)
    except Exception as exc:  # a child reports, never crashes: its parent needs the JSON
        record_error(answer, exc)
    print_result(answer)
    return 0 if answer["ok"] else 1


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 6 or args[0] != "--path" or args[2] != "--ask-mib" or args[4] != "--step-mib":
        print("usage: python3 -m <package>.allocation_child --path NAME --ask-mib N --step-mib S")
        return 2
    return child_main(args[1], int(args[3]), int(args[5]))


if __name__ == "__main__":
    sys.exit(main())
