"""Run side of the ``cuda`` target: device API and kernel launches through pycuda, ``.cumod``
files.

Imports only tvm-runtime, numpy and (lazily) pycuda — never the compiler — so an exported
module runs with ``tvm-runtime`` and this package (``pip install tvm-target-cuda[pycuda]``)::

    mod = tvm.runtime.load_module("add.cumod")
    mod["add"](a, b)       # Tensors on tvm.runtime.cuda(0)

Each device uses its primary context (shared with other CUDA libraries of the process),
made current around every driver call.  A module loads its PTX once per device.  Memory
handles are device pointers, so tensor views with a byte offset work.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np
from tvm.runtime.device import Device, DeviceAPI
from tvm.runtime.device_module import (
    DEVICE_MODULE_VERSION, DeviceModule, DevicePtr, kernel_params, load_device_module_payload,
)
from tvm.runtime.error import DeviceUnavailableError, KernelError

__all__ = ["CUDADeviceAPI", "CUDAModule", "device_api", "load_module", "cuda_available",
           "DEVICE_MODULE_VERSION", "FILE_SUFFIX", "FORMAT", "DEVICE_TYPE"]

FORMAT = "cuda"
FILE_SUFFIX = "cumod"
DEVICE_TYPE = 2


def _driver() -> Any:
    try:
        import pycuda.driver as drv
    except ImportError as err:
        raise DeviceUnavailableError(
            "the cuda device needs pycuda and an NVIDIA driver: pip install "
            "'tvm-target-cuda[pycuda]' (or pip install pycuda)"
        ) from err
    try:
        drv.init()
    except drv.Error as err:
        raise DeviceUnavailableError(f"the CUDA driver could not be initialised: {err}") from err
    return drv


class CUDADeviceAPI(DeviceAPI):
    """Allocation, copies and synchronisation on CUDA GPUs through pycuda."""

    name = "cuda"

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._contexts: dict[int, Any] = {}
        self._allocations: dict[int, Any] = {}

    def device_count(self) -> int:
        return int(_driver().Device.count())

    @contextlib.contextmanager
    def activate(self, dev: Device) -> Iterator[Any]:
        """Make ``dev``'s primary context current for the duration of the block."""
        drv = _driver()
        with self._lock:
            ctx = self._contexts.get(dev.index)
            if ctx is None:
                if dev.index >= drv.Device.count():
                    raise DeviceUnavailableError(
                        f"{dev} does not exist: {drv.Device.count()} CUDA device(s) found")
                ctx = drv.Device(dev.index).retain_primary_context()
                self._contexts[dev.index] = ctx
        ctx.push()
        try:
            yield drv
        finally:
            drv.Context.pop()

    def exists(self, dev: Device) -> bool:
        try:
            return dev.device_type == DEVICE_TYPE and dev.index < self.device_count()
        except DeviceUnavailableError:
            return False

    def alloc(self, dev: Device, nbytes: int, alignment: int) -> int:
        with self.activate(dev) as drv:
            mem = drv.mem_alloc(max(int(nbytes), 1))
        handle = int(mem)
        with self._lock:
            self._allocations[handle] = (mem, dev.index)
        return handle

    def free(self, dev: Device, handle: int) -> None:
        with self._lock:
            entry = self._allocations.pop(int(handle), None)
        if entry is None:
            raise ValueError(f"CUDADeviceAPI.free: 0x{int(handle):x} was not allocated by this "
                             "device API")
        with self.activate(dev):
            entry[0].free()

    def copy_from_host(self, dev: Device, dst: int, dst_offset: int, host: np.ndarray) -> None:
        if host.nbytes:
            with self.activate(dev) as drv:
                drv.memcpy_htod(int(dst) + int(dst_offset), host)

    def copy_to_host(self, dev: Device, src: int, src_offset: int, host: np.ndarray) -> None:
        if host.nbytes:
            with self.activate(dev) as drv:
                drv.memcpy_dtoh(host, int(src) + int(src_offset))

    def copy_device_to_device(self, src_dev: Device, src: int, src_offset: int,
                              dst_dev: Device, dst: int, dst_offset: int, nbytes: int) -> None:
        if src_dev != dst_dev:
            super().copy_device_to_device(src_dev, src, src_offset, dst_dev, dst, dst_offset,
                                          nbytes)
            return
        if nbytes:
            with self.activate(src_dev) as drv:
                drv.memcpy_dtod(int(dst) + int(dst_offset), int(src) + int(src_offset),
                                int(nbytes))

    def synchronize(self, dev: Device) -> None:
        with self.activate(dev) as drv:
            drv.Context.synchronize()

    def attributes(self, dev: Device) -> dict[str, Any]:
        with self.activate(dev) as drv:
            d = drv.Device(dev.index)
            attr = drv.device_attribute
            major, minor = d.compute_capability()
            return {
                "name": d.name(),
                "compute_version": f"{major}.{minor}",
                "arch": f"sm_{major}{minor}",
                "total_memory": int(d.total_memory()),
                "multiprocessors": int(d.get_attribute(attr.MULTIPROCESSOR_COUNT)),
                "max_threads_per_block": int(d.get_attribute(attr.MAX_THREADS_PER_BLOCK)),
                "max_shared_memory_per_block": int(
                    d.get_attribute(attr.MAX_SHARED_MEMORY_PER_BLOCK)),
                "warp_size": int(d.get_attribute(attr.WARP_SIZE)),
            }


_API: list[CUDADeviceAPI] = []
_API_LOCK = threading.Lock()


def device_api() -> CUDADeviceAPI:
    """The process-wide CUDA device API (what ``tvm_device_api(2)`` returns)."""
    with _API_LOCK:
        if not _API:
            _API.append(CUDADeviceAPI())
        return _API[0]


def cuda_available() -> bool:
    """Whether pycuda is installed and a CUDA GPU is present."""
    try:
        return device_api().device_count() > 0
    except (DeviceUnavailableError, Exception):
        return False


class CUDAModule(DeviceModule):
    """CUDA kernels (``payload["ptx"]``, from ``payload["source"]``) and their host
    functions."""

    type_key = FORMAT
    device_type = DEVICE_TYPE
    device_name = "cuda"
    file_suffix = FILE_SUFFIX

    def __init__(self, payload: dict[str, Any]) -> None:
        super().__init__(payload)
        if not isinstance(payload.get("ptx"), str):
            raise KernelError("a cuda module needs the 'ptx' of its kernels")
        self._sources["ptx"] = payload["ptx"]
        self._modules: dict[int, Any] = {}
        self._funcs: dict[tuple[int, str], Any] = {}
        self._lock = threading.Lock()

    @property
    def arch(self) -> str:
        """The GPU architecture the PTX was generated for (``sm_80``)."""
        return str(self.payload.get("arch", ""))

    def _function(self, drv: Any, dev: Device, name: str) -> Any:
        key = (dev.index, name)
        with self._lock:
            fn = self._funcs.get(key)
            if fn is None:
                module = self._modules.get(dev.index)
                if module is None:
                    try:
                        module = drv.module_from_buffer(self.payload["ptx"].encode("utf-8"))
                    except drv.Error as err:
                        raise KernelError(f"cuda: loading the PTX ({self.arch}) on {dev} "
                                          f"failed: {err}") from err
                    self._modules[dev.index] = module
                fn = module.get_function(name)
                self._funcs[key] = fn
            return fn

    def launch(self, dev: Device, kernel: str, args: list[Any], grid: tuple[int, int, int],
               block: tuple[int, int, int]) -> None:
        meta = self.kernels[kernel]
        values = []
        for p, value in zip(kernel_params(meta), args):
            if p["kind"] == "handle":
                if not isinstance(value, DevicePtr):
                    raise KernelError(f"cuda: kernel {kernel} parameter {p['name']} expects "
                                      f"device memory, got {value!r}")
                values.append(np.uintp(value.handle + value.offset))
            else:
                values.append(np.dtype(p["dtype"]).type(value))
        with device_api().activate(dev) as drv:
            fn = self._function(drv, dev, kernel)
            fn(*values, block=tuple(int(b) for b in block), grid=tuple(int(g) for g in grid))


def load_module(path: str) -> CUDAModule:
    """Load an exported ``.cumod`` file (the ``tvm_runtime_module_loader`` for ``cumod``)."""
    return CUDAModule(load_device_module_payload(path, FORMAT))
