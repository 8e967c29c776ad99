"""A libcuda stand-in at the ctypes level: the allocation doors the allocation-paths probe opens, each given the
arguments the real library would get (byref'd ctypes values, structs), with a quota that only some doors count.

`hooked` names the entry points the quota counts (as a preloaded library would hook them); every other door takes
from the card unseen by the quota. What a test asserts about the probe therefore depends on the probe passing the
right struct fields and sizes, not on a hard-coded answer.
"""

from __future__ import annotations

import ctypes
import itertools
from typing import Any

MIB = 1 << 20
OOM = 2  # CUDA_ERROR_OUT_OF_MEMORY
INVALID = 1  # CUDA_ERROR_INVALID_VALUE


def _val(x: Any) -> Any:
    return x.value if hasattr(x, "value") else x


def _out(ref: Any) -> Any:
    return ref._obj  # the ctypes object behind ctypes.byref


class FakeLibcuda:
    def __init__(self, card_mib: int, quota_mib: int, hooked: set[str], context_mib: int = 0) -> None:
        self.card, self.quota, self.hooked = card_mib * MIB, quota_mib * MIB, hooked
        self.counted = context_mib * MIB  # what the quota sees
        self.used = context_mib * MIB  # what the card holds
        self.live: dict[int, tuple[int, bool]] = {}
        self.ids = itertools.count(1 << 32, 1 << 32)
        self.calls: list[str] = []
        self.seen: dict[str, Any] = {}

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(name)

    # ------------------------------------------------------------ bookkeeping
    def _take(self, call: str, nbytes: int) -> int | None:
        self.calls.append(call)
        counted = call in self.hooked
        if nbytes <= 0:
            return None
        if counted and self.counted + nbytes > self.quota:
            return None
        if self.used + nbytes > self.card:
            return None
        handle = next(self.ids)
        self.live[handle] = (nbytes, counted)
        self.used += nbytes
        self.counted += nbytes if counted else 0
        return handle

    def _give(self, handle: int) -> int:
        nbytes, counted = self.live.pop(int(handle))
        self.used -= nbytes
        self.counted -= nbytes if counted else 0
        return 0

    def _alloc_into(self, call: str, ref: Any, nbytes: int) -> int:
        handle = self._take(call, nbytes)
        if handle is None:
            return OOM
        _out(ref).value = handle
        return 0

    # ------------------------------------------------------------ context and view
    def cuInit(self, flags: int) -> int:
        return 0

    def cuGetErrorName(self, code: int, ref: Any) -> int:
        _out(ref).value = {OOM: b"CUDA_ERROR_OUT_OF_MEMORY", INVALID: b"CUDA_ERROR_INVALID_VALUE"}.get(code, b"X")
        return 0

    def cuDeviceGet(self, ref: Any, ordinal: int) -> int:
        _out(ref).value = 0
        return 0

    def cuDeviceGetUuid_v2(self, ref: Any, dev: int) -> int:
        ctypes.memmove(ref._obj, bytes(range(16)), 16)
        return 0

    def cuDevicePrimaryCtxRetain(self, ref: Any, dev: int) -> int:
        _out(ref).value = 7
        return 0

    def cuCtxSetCurrent(self, ctx: Any) -> int:
        return 0

    def cuCtxSynchronize(self) -> int:
        return 0

    def cuStreamSynchronize(self, stream: Any) -> int:
        return 0

    def cuMemGetInfo_v2(self, free: Any, total: Any) -> int:
        _out(free).value, _out(total).value = self.quota - self.counted, self.quota
        return 0

    # ------------------------------------------------------------ the doors
    def cuMemAlloc_v2(self, ref: Any, size: Any) -> int:
        return self._alloc_into("cuMemAlloc_v2", ref, _val(size))

    def cuMemFree_v2(self, ptr: Any) -> int:
        return self._give(_val(ptr))

    def cuMemAllocPitch_v2(self, ref: Any, pitch: Any, width: Any, height: Any, elem: Any) -> int:
        _out(pitch).value = _val(width)
        return self._alloc_into("cuMemAllocPitch_v2", ref, _val(width) * _val(height))

    def cuMemGetAllocationGranularity(self, ref: Any, prop: Any, flags: int) -> int:
        p = _out(prop)
        if p.type != 1 or p.location.type != 1 or p.location.id != 0:
            return INVALID
        _out(ref).value = 2 * MIB
        return 0

    def cuMemAddressReserve(self, ref: Any, size: Any, align: Any, addr: Any, flags: Any) -> int:
        _out(ref).value = next(self.ids)
        self.seen.setdefault("reserved", []).append(_val(size))
        return 0

    def cuMemAddressFree(self, ptr: Any, size: Any) -> int:
        return 0

    def cuMemCreate(self, ref: Any, size: Any, prop: Any, flags: Any) -> int:
        if _out(prop).type != 1:
            return INVALID
        return self._alloc_into("cuMemCreate", ref, _val(size))

    def cuMemRelease(self, handle: Any) -> int:
        return self._give(_val(handle))

    def cuMemMap(self, ptr: Any, size: Any, offset: Any, handle: Any, flags: Any) -> int:
        self.seen.setdefault("mapped", []).append(_val(size))
        return 0

    def cuMemUnmap(self, ptr: Any, size: Any) -> int:
        return 0

    def cuMemSetAccess(self, ptr: Any, size: Any, desc: Any, count: Any) -> int:
        d = _out(desc)
        self.seen.setdefault("access", []).append((d.location.type, d.location.id, d.flags, _val(count)))
        return 0

    def cuMemsetD8_v2(self, ptr: Any, value: Any, size: Any) -> int:
        self.seen.setdefault("touched", []).append(_val(size))
        return 0

    def cuMemAllocManaged(self, ref: Any, size: Any, flags: Any) -> int:
        return self._alloc_into("cuMemAllocManaged", ref, _val(size)) if _val(flags) == 1 else INVALID

    def cuMemPrefetchAsync(self, ptr: Any, size: Any, dev: Any, stream: Any) -> int:
        self.seen.setdefault("prefetched", []).append(_val(size))
        return 0

    def cuMemAllocAsync(self, ref: Any, size: Any, stream: Any) -> int:
        return self._alloc_into("cuMemAllocAsync", ref, _val(size))

    def cuMemFreeAsync(self, ptr: Any, stream: Any) -> int:
        return self._give(_val(ptr))

    def cuDeviceGetDefaultMemPool(self, ref: Any, dev: Any) -> int:
        _out(ref).value = 1
        return 0

    def cuMemPoolCreate(self, ref: Any, props: Any) -> int:
        p = _out(props)
        if p.allocType != 1 or p.location.type != 1:
            return INVALID
        _out(ref).value = 2
        return 0

    def cuMemPoolDestroy(self, pool: Any) -> int:
        return 0

    def cuMemAllocFromPoolAsync(self, ref: Any, size: Any, pool: Any, stream: Any) -> int:
        own = _val(pool) == 2
        return self._alloc_into("cuMemAllocFromPoolAsync" + (":own" if own else ""), ref, _val(size))

    def _array_bytes(self, desc: Any) -> int:
        d = _out(desc)
        texel = {0x03: 4}[d.Format] * d.NumChannels
        return d.Width * d.Height * max(d.Depth, 1) * texel

    def cuArray3DCreate_v2(self, ref: Any, desc: Any) -> int:
        return self._alloc_into("cuArray3DCreate_v2", ref, self._array_bytes(desc))

    def cuArrayDestroy(self, handle: Any) -> int:
        return self._give(_val(handle))

    def cuMipmappedArrayCreate(self, ref: Any, desc: Any, levels: Any) -> int:
        return self._alloc_into("cuMipmappedArrayCreate", ref, self._array_bytes(desc))

    def cuMipmappedArrayDestroy(self, handle: Any) -> int:
        return self._give(_val(handle))

    def cuGraphCreate(self, ref: Any, flags: Any) -> int:
        _out(ref).value = next(self.ids)
        return 0

    def cuGraphAddMemAllocNode(self, ref: Any, graph: Any, deps: Any, n: Any, params: Any) -> int:
        p = _out(params)
        if p.poolProps.allocType != 1 or p.poolProps.location.type != 1 or p.accessDescCount != 0:
            return INVALID
        self.seen.setdefault("graph_ask", []).append(p.bytesize)
        self._graph_params = p
        _out(ref).value = 1
        return 0

    def cuGraphInstantiateWithFlags(self, ref: Any, graph: Any, flags: Any) -> int:
        _out(ref).value = 3
        return 0

    def cuGraphLaunch(self, execd: Any, stream: Any) -> int:
        p = self._graph_params
        handle = self._take("cuGraphAddMemAllocNode", p.bytesize)
        if handle is None:
            return OOM
        p.dptr = handle
        return 0

    def cuGraphExecDestroy(self, execd: Any) -> int:
        return 0

    def cuGraphDestroy(self, graph: Any) -> int:
        return 0

    def cuDeviceGraphMemTrim(self, dev: Any) -> int:
        return 0
