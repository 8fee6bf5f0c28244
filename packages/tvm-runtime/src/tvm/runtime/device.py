"""Devices and the device-API interface that target plugins implement.

A :class:`Device` is a DLPack device type plus an ordinal (``cuda(1)``).  What a device can
do (allocate, copy, synchronise) comes from a :class:`DeviceAPI` that a plugin returns from
the ``tvm_device_api(device_type)`` hook; the CPU device API is built in.
"""

from __future__ import annotations

import abc
import ctypes
import re
import threading
from typing import Any

import numpy as np
from tvm.ffi.dlpack import DLDevice, DLDeviceType
from tvm.ffi.plugin import hookimpl

from .error import DeviceUnavailableError

__all__ = [
    "Device",
    "DeviceAPI",
    "CPUDeviceAPI",
    "device",
    "cpu",
    "cuda",
    "opencl",
    "metal",
    "vulkan",
    "webgpu",
    "rocm",
    "ext_dev",
    "get_device_api",
    "DEVICE_TYPE_NAMES",
]

#: Canonical name of each DLPack device type (the name ``str(Device)`` prints).
DEVICE_TYPE_NAMES: dict[int, str] = {
    DLDeviceType.kDLCPU: "cpu",
    DLDeviceType.kDLCUDA: "cuda",
    DLDeviceType.kDLCUDAHost: "cuda_host",
    DLDeviceType.kDLOpenCL: "opencl",
    DLDeviceType.kDLVulkan: "vulkan",
    DLDeviceType.kDLMetal: "metal",
    DLDeviceType.kDLVPI: "vpi",
    DLDeviceType.kDLROCM: "rocm",
    DLDeviceType.kDLROCMHost: "rocm_host",
    DLDeviceType.kDLExtDev: "ext_dev",
    DLDeviceType.kDLCUDAManaged: "cuda_managed",
    DLDeviceType.kDLOneAPI: "oneapi",
    DLDeviceType.kDLWebGPU: "webgpu",
    DLDeviceType.kDLHexagon: "hexagon",
    DLDeviceType.kDLMAIA: "maia",
}

_NAME_TO_TYPE: dict[str, int] = {name: int(t) for t, name in DEVICE_TYPE_NAMES.items()}
_NAME_TO_TYPE.update(
    {
        "llvm": 1,
        "c": 1,
        "stackvm": 1,
        "gpu": 2,
        "nvptx": 2,
        "cl": 4,
        "mtl": 8,
        "metal": 8,
    }
)

# Which distribution provides the device API of a device type (for "please install" errors).
_PROVIDER: dict[int, str] = {
    DLDeviceType.kDLCUDA: "tvm-target-cuda",
    DLDeviceType.kDLCUDAHost: "tvm-target-cuda",
    DLDeviceType.kDLCUDAManaged: "tvm-target-cuda",
    DLDeviceType.kDLOpenCL: "tvm-target-opencl",
    DLDeviceType.kDLMetal: "tvm-target-metal",
    DLDeviceType.kDLVulkan: "tvm-target-vulkan",
    DLDeviceType.kDLWebGPU: "tvm-target-webgpu",
    DLDeviceType.kDLROCM: "tvm-target-rocm",
    DLDeviceType.kDLROCMHost: "tvm-target-rocm",
}

_SPEC = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?::\s*(\d+)|\(\s*(\d+)\s*\))?\s*$")


class Device:
    """A device: a DLPack device type and an ordinal.  ``str(cuda(1)) == "cuda(1)"``."""

    __slots__ = ("_device_type", "_index")

    def __init__(self, device_type: int, index: int = 0) -> None:
        if isinstance(device_type, bool) or not isinstance(device_type, (int, np.integer)):
            raise TypeError(
                f"Device: device_type must be an int (a DLPack device type), got "
                f"{type(device_type).__name__}; use tvm.runtime.device('cuda', 0) for names"
            )
        if isinstance(index, bool) or not isinstance(index, (int, np.integer)):
            raise TypeError(f"Device: index must be an int, got {type(index).__name__}")
        if int(device_type) <= 0:
            raise ValueError(f"Device: device_type must be positive, got {device_type}")
        if int(index) < 0:
            raise ValueError(f"Device: index must be >= 0, got {index}")
        self._device_type = int(device_type)
        self._index = int(index)

    @property
    def device_type(self) -> int:
        """The DLPack device type (``1`` for CPU, ``2`` for CUDA, ...)."""
        return self._device_type

    @property
    def index(self) -> int:
        """The device ordinal."""
        return self._index

    device_id = index

    @property
    def type_name(self) -> str:
        """The canonical device type name (``"cuda"``), or ``"device<N>"`` if unknown."""
        return DEVICE_TYPE_NAMES.get(self._device_type, f"device{self._device_type}")

    @property
    def api(self) -> DeviceAPI:
        """The device API serving this device; DeviceUnavailableError if none is installed."""
        return get_device_api(self._device_type, self)

    @property
    def exist(self) -> bool:
        """Whether the device is present (False when no plugin serves its type)."""
        try:
            api = self.api
        except DeviceUnavailableError:
            return False
        try:
            return bool(api.exists(self))
        except Exception:
            return False

    @property
    def attributes(self) -> dict[str, Any]:
        """Device attributes reported by its API (name, compute version, limits, ...)."""
        return dict(self.api.attributes(self))

    def sync(self) -> None:
        """Wait until all work queued on this device has finished."""
        self.api.synchronize(self)

    def to_dlpack(self) -> DLDevice:
        """The ctypes ``DLDevice`` of this device."""
        return DLDevice(self._device_type, self._index)

    def __dlpack_device__(self) -> tuple[int, int]:
        return (self._device_type, self._index)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Device):
            return NotImplemented
        return self._device_type == other._device_type and self._index == other._index

    def __hash__(self) -> int:
        return hash((Device, self._device_type, self._index))

    def __str__(self) -> str:
        return f"{self.type_name}({self._index})"

    __repr__ = __str__

    def __reduce__(self):
        return (Device, (self._device_type, self._index))


def device(spec: str | int | Device, index: int | None = None) -> Device:
    """Make a device from a name: ``device("cuda", 1)``, ``device("cuda:1")``, ``device("cpu")``.

    Also accepts the printed form (``"cuda(1)"``), a DLPack device type number, or a Device.
    """
    if isinstance(spec, Device):
        if index is not None and index != spec.index:
            raise ValueError(f"device({spec}, {index}): the index is given twice and differs")
        return spec
    if isinstance(spec, str):
        m = _SPEC.match(spec)
        if not m:
            raise ValueError(
                f"device: cannot parse {spec!r}; expected a name with an optional index such "
                "as 'cpu', 'cuda:1' or 'cuda(1)'"
            )
        name, idx1, idx2 = m.groups()
        key = name.lower()
        if key not in _NAME_TO_TYPE:
            known = ", ".join(sorted(set(DEVICE_TYPE_NAMES.values())))
            raise ValueError(f"device: unknown device type {name!r} in {spec!r}; known: {known}")
        parsed = idx1 if idx1 is not None else idx2
        if parsed is not None and index is not None and int(parsed) != index:
            raise ValueError(f"device({spec!r}, {index}): the index is given twice and differs")
        return Device(_NAME_TO_TYPE[key], int(parsed) if parsed is not None else (index or 0))
    if isinstance(spec, (int, np.integer)) and not isinstance(spec, bool):
        return Device(int(spec), 0 if index is None else index)
    raise TypeError(
        f"device: expected a device name, a DLPack device type or a Device, got "
        f"{type(spec).__name__}"
    )


def cpu(index: int = 0) -> Device:
    """The CPU device."""
    return Device(DLDeviceType.kDLCPU, index)


def cuda(index: int = 0) -> Device:
    """A CUDA GPU (served by the tvm-target-cuda plugin)."""
    return Device(DLDeviceType.kDLCUDA, index)


def opencl(index: int = 0) -> Device:
    """An OpenCL device (served by the tvm-target-opencl plugin)."""
    return Device(DLDeviceType.kDLOpenCL, index)


def metal(index: int = 0) -> Device:
    """A Metal GPU (served by the tvm-target-metal plugin)."""
    return Device(DLDeviceType.kDLMetal, index)


def vulkan(index: int = 0) -> Device:
    """A Vulkan device."""
    return Device(DLDeviceType.kDLVulkan, index)


def webgpu(index: int = 0) -> Device:
    """A WebGPU adapter (served by the tvm-target-webgpu plugin)."""
    return Device(DLDeviceType.kDLWebGPU, index)


def rocm(index: int = 0) -> Device:
    """A ROCm GPU."""
    return Device(DLDeviceType.kDLROCM, index)


def ext_dev(index: int = 0) -> Device:
    """An external (vendor) device."""
    return Device(DLDeviceType.kDLExtDev, index)


class DeviceAPI(abc.ABC):
    """What the runtime needs from a device type; a plugin returns one from ``tvm_device_api``.

    Device memory is named by an integer *handle* (a device pointer, or an opaque handle
    such as an OpenCL ``cl_mem``) that becomes the ``data`` field of a DLTensor; offsets are
    in bytes.  Host buffers are 1-D, C-contiguous ``uint8`` numpy arrays.
    """

    #: A short name for messages ("cpu", "cuda", ...).
    name: str = "device"

    @abc.abstractmethod
    def exists(self, dev: Device) -> bool:
        """Whether ``dev`` is present and usable."""

    @abc.abstractmethod
    def alloc(self, dev: Device, nbytes: int, alignment: int) -> int:
        """Allocate ``nbytes`` bytes on ``dev`` aligned to ``alignment``; return the handle."""

    @abc.abstractmethod
    def free(self, dev: Device, handle: int) -> None:
        """Release memory returned by :meth:`alloc`."""

    @abc.abstractmethod
    def copy_from_host(self, dev: Device, dst: int, dst_offset: int, host: np.ndarray) -> None:
        """Copy all of ``host`` to ``dst + dst_offset`` on ``dev``."""

    @abc.abstractmethod
    def copy_to_host(self, dev: Device, src: int, src_offset: int, host: np.ndarray) -> None:
        """Fill ``host`` from ``src + src_offset`` on ``dev``."""

    def copy_device_to_device(
        self,
        src_dev: Device,
        src: int,
        src_offset: int,
        dst_dev: Device,
        dst: int,
        dst_offset: int,
        nbytes: int,
    ) -> None:
        """Copy between two devices served by this API (default: through host memory)."""
        staging = np.empty(nbytes, dtype=np.uint8)
        self.copy_to_host(src_dev, src, src_offset, staging)
        self.copy_from_host(dst_dev, dst, dst_offset, staging)

    def synchronize(self, dev: Device) -> None:  # noqa: B027 - optional for synchronous APIs
        """Wait for queued work on ``dev`` (no-op for synchronous devices)."""

    def attributes(self, dev: Device) -> dict[str, Any]:
        """Descriptive attributes of ``dev`` (at least ``name``)."""
        return {"name": str(dev)}


class CPUDeviceAPI(DeviceAPI):
    """The built-in CPU device API: memory from numpy buffers, copies by ``memmove``."""

    name = "cpu"

    def __init__(self) -> None:
        self._buffers: dict[int, np.ndarray] = {}
        self._lock = threading.Lock()

    def exists(self, dev: Device) -> bool:
        return dev.device_type == DLDeviceType.kDLCPU and dev.index == 0

    def alloc(self, dev: Device, nbytes: int, alignment: int) -> int:
        buf = aligned_host_buffer(nbytes, alignment)
        ptr = buf.ctypes.data
        with self._lock:
            self._buffers[ptr] = buf
        return ptr

    def free(self, dev: Device, handle: int) -> None:
        with self._lock:
            if self._buffers.pop(handle, None) is None:
                raise ValueError(f"CPUDeviceAPI.free: 0x{handle:x} was not allocated by alloc")

    def buffer(self, handle: int) -> np.ndarray:
        """The numpy buffer behind a handle returned by :meth:`alloc`."""
        return self._buffers[handle]

    def copy_from_host(self, dev: Device, dst: int, dst_offset: int, host: np.ndarray) -> None:
        ctypes.memmove(dst + dst_offset, host.ctypes.data, host.nbytes)

    def copy_to_host(self, dev: Device, src: int, src_offset: int, host: np.ndarray) -> None:
        ctypes.memmove(host.ctypes.data, src + src_offset, host.nbytes)

    def copy_device_to_device(
        self, src_dev, src, src_offset, dst_dev, dst, dst_offset, nbytes
    ) -> None:
        ctypes.memmove(dst + dst_offset, src + src_offset, nbytes)

    def attributes(self, dev: Device) -> dict[str, Any]:
        import os
        import platform

        return {
            "name": platform.processor() or platform.machine(),
            "machine": platform.machine(),
            "num_cores": os.cpu_count() or 1,
        }


def aligned_host_buffer(nbytes: int, alignment: int = 64) -> np.ndarray:
    """A 1-D uint8 numpy array of ``nbytes`` bytes whose data is ``alignment``-aligned."""
    if alignment <= 0 or alignment & (alignment - 1):
        raise ValueError(f"alignment must be a positive power of two, got {alignment}")
    raw = np.empty(nbytes + alignment, dtype=np.uint8)
    start = (-raw.ctypes.data) % alignment
    return raw[start : start + nbytes]


CPU_DEVICE_API = CPUDeviceAPI()


class BuiltinCPUPlugin:
    """The built-in plugin that serves the CPU device type."""

    @staticmethod
    @hookimpl(trylast=True)
    def tvm_device_api(device_type: int) -> DeviceAPI | None:
        return CPU_DEVICE_API if device_type == DLDeviceType.kDLCPU else None


def get_device_api(device_type: int, dev: Device | None = None) -> DeviceAPI:
    """The device API of ``device_type`` from the plugins; DeviceUnavailableError if none."""
    return _query(device_type, dev)


def _query(device_type: int, dev: Device | None) -> DeviceAPI:
    from .hooks import call_runtime_hook

    api = call_runtime_hook("tvm_device_api", device_type=int(device_type), required=True)
    if api is None:
        name = dev if dev is not None else Device(device_type, 0)
        provider = _PROVIDER.get(int(device_type))
        what = (
            f"install {provider} (pip install {provider})"
            if provider
            else (
                f"install a plugin that implements the tvm_device_api hook for device type "
                f"{int(device_type)}"
            )
        )
        raise DeviceUnavailableError(
            f"no device API for {name}: no installed plugin provides device type "
            f"'{DEVICE_TYPE_NAMES.get(int(device_type), device_type)}'; {what}"
        )
    if not isinstance(api, DeviceAPI):
        raise DeviceUnavailableError(
            f"the tvm_device_api hook returned {type(api).__name__} for device type "
            f"{device_type}; expected a tvm.runtime.device.DeviceAPI"
        )
    return api
