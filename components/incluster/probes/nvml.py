"""ctypes onto NVML: the card's memory and one process's share of it, as nvidia-smi reads them.

`GPUSHARE_LIBNVML` names another library to load. Standard library only.
"""

from __future__ import annotations

import ctypes

from .cuda import ProbeError, load_library


class Nvml:
    """NVML's view of the card CUDA uses (`uuid`), else of its device 0 (what nvidia-smi shows first); every call may
    fail without ending a probe.

    NVML ignores CUDA_VISIBLE_DEVICES: on a host of several cards its device 0 is the host's card 0 whichever card
    CUDA was given, so the card is found by the UUID CUDA reports (a container sees its own card as NVML's 0 anyway).
    """

    def __init__(self, uuid: str | None = None) -> None:
        self.lib = load_library("GPUSHARE_LIBNVML", "libnvidia-ml.so.1")
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

    def minor(self) -> int | None:
        """The card's minor number: the N of the /dev/nvidiaN its container is given (nvmlDeviceGetMinorNumber)."""
        value = ctypes.c_uint()
        call = getattr(self.lib, "nvmlDeviceGetMinorNumber", None)
        if call is None or call(self.handle, ctypes.byref(value)) != 0:
            return None
        return value.value

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
