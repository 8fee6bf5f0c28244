"""Run side of the ``opencl`` target: device API, kernel launches and ``.clmod`` files.

Imports only tvm-runtime, numpy and (lazily) pyopencl, never the compiler, so an exported
module runs with ``tvm-runtime`` and this package alone::

    mod = tvm.runtime.load_module("add.clmod")
    mod["add"](a, b)       # Tensors on tvm.runtime.opencl(0)

Devices: ``opencl(i)`` is the ``i``-th device over all OpenCL platforms (in platform order).
Memory is ``pyopencl.Buffer`` objects; a tensor's data handle is the buffer's ``int_ptr``.
Programs are built once per device and source, and kernels run on one in-order queue per
device, so copies back to the host see the results.  A module whose kernels need an
extension the device lacks (``extensions`` of a kernel description: ``cl_khr_fp16`` for
float16, ``cl_khr_fp64`` for float64) is refused before the build with a KernelError naming
the kernels and dtypes.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
from tvm.runtime.device import Device, DeviceAPI
from tvm.runtime.device_module import (
    DEVICE_MODULE_VERSION, DeviceModule, DevicePtr, kernel_params, load_device_module_payload,
)
from tvm.runtime.error import DeviceUnavailableError, KernelError

__all__ = ["OpenCLDeviceAPI", "OpenCLModule", "device_api", "load_module", "opencl_available",
           "DEVICE_MODULE_VERSION", "FILE_SUFFIX", "FORMAT", "DEVICE_TYPE"]

#: OpenCL extension -> the dtype it gives kernels
_EXTENSION_DTYPES = {"cl_khr_fp16": "float16", "cl_khr_fp64": "float64"}

FORMAT = "opencl"
FILE_SUFFIX = "clmod"
DEVICE_TYPE = 4


def _pyopencl() -> Any:
    try:
        import pyopencl
    except ImportError as err:
        raise DeviceUnavailableError(
            "the opencl device needs pyopencl and an OpenCL driver (ICD): pip install "
            "pyopencl, and e.g. apt-get install pocl-opencl-icd for a CPU implementation"
        ) from err
    return pyopencl


class OpenCLDeviceAPI(DeviceAPI):
    """Allocation, copies and synchronisation on OpenCL devices through pyopencl."""

    name = "opencl"

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._devices: list[Any] | None = None
        self._contexts: dict[int, Any] = {}
        self._queues: dict[int, Any] = {}
        self._buffers: dict[int, tuple[Any, int]] = {}

    # ------------------------------------------------------------------ devices
    def devices(self) -> list[Any]:
        """Every OpenCL device of every platform (an empty list without a driver)."""
        with self._lock:
            if self._devices is None:
                cl = _pyopencl()
                found: list[Any] = []
                try:
                    platforms = cl.get_platforms()
                except cl.Error:  # no ICD installed / no platform
                    platforms = []
                for platform in platforms:
                    try:
                        found.extend(platform.get_devices())
                    except cl.Error:
                        continue
                self._devices = found
            return self._devices

    def _device(self, dev: Device) -> Any:
        devices = self.devices()
        if dev.index >= len(devices):
            raise DeviceUnavailableError(
                f"{dev} does not exist: {len(devices)} OpenCL device(s) found"
                + ("" if devices else " (install an OpenCL driver, e.g. pocl-opencl-icd)")
            )
        return devices[dev.index]

    def context(self, dev: Device) -> Any:
        """The pyopencl context of ``dev`` (one per device)."""
        with self._lock:
            ctx = self._contexts.get(dev.index)
            if ctx is None:
                cl = _pyopencl()
                ctx = cl.Context([self._device(dev)])
                self._contexts[dev.index] = ctx
            return ctx

    def queue(self, dev: Device) -> Any:
        """The in-order command queue of ``dev``."""
        with self._lock:
            q = self._queues.get(dev.index)
            if q is None:
                q = _pyopencl().CommandQueue(self.context(dev))
                self._queues[dev.index] = q
            return q

    def exists(self, dev: Device) -> bool:
        try:
            return dev.device_type == DEVICE_TYPE and dev.index < len(self.devices())
        except DeviceUnavailableError:
            return False

    # ------------------------------------------------------------------ memory
    def alloc(self, dev: Device, nbytes: int, alignment: int) -> int:
        cl = _pyopencl()
        buf = cl.Buffer(self.context(dev), cl.mem_flags.READ_WRITE, size=max(int(nbytes), 1))
        handle = int(buf.int_ptr)
        with self._lock:
            self._buffers[handle] = (buf, dev.index)
        return handle

    def free(self, dev: Device, handle: int) -> None:
        with self._lock:
            entry = self._buffers.pop(int(handle), None)
        if entry is None:
            raise ValueError(f"OpenCLDeviceAPI.free: 0x{int(handle):x} was not allocated by "
                             "this device API")
        entry[0].release()

    def buffer(self, handle: int) -> Any:
        """The ``pyopencl.Buffer`` behind a handle returned by :meth:`alloc`."""
        entry = self._buffers.get(int(handle))
        if entry is None:
            raise KernelError(f"0x{int(handle):x} is not OpenCL memory allocated by tvm (was "
                              "the tensor freed, or made on another device?)")
        return entry[0]

    def copy_from_host(self, dev: Device, dst: int, dst_offset: int, host: np.ndarray) -> None:
        if host.nbytes:
            _pyopencl().enqueue_copy(self.queue(dev), self.buffer(dst), host,
                                     dst_offset=int(dst_offset), is_blocking=True)

    def copy_to_host(self, dev: Device, src: int, src_offset: int, host: np.ndarray) -> None:
        if host.nbytes:
            _pyopencl().enqueue_copy(self.queue(dev), host, self.buffer(src),
                                     src_offset=int(src_offset), is_blocking=True)

    def copy_device_to_device(self, src_dev: Device, src: int, src_offset: int,
                              dst_dev: Device, dst: int, dst_offset: int, nbytes: int) -> None:
        if src_dev != dst_dev:
            super().copy_device_to_device(src_dev, src, src_offset, dst_dev, dst, dst_offset,
                                          nbytes)
            return
        if nbytes:
            _pyopencl().enqueue_copy(self.queue(src_dev), self.buffer(dst), self.buffer(src),
                                     byte_count=int(nbytes), src_offset=int(src_offset),
                                     dst_offset=int(dst_offset))

    def synchronize(self, dev: Device) -> None:
        with self._lock:
            q = self._queues.get(dev.index)
        if q is not None:
            q.finish()

    def attributes(self, dev: Device) -> dict[str, Any]:
        d = self._device(dev)
        return {
            "name": d.name.strip(),
            "vendor": d.vendor.strip(),
            "version": d.version.strip(),
            "platform": d.platform.name.strip(),
            "max_work_group_size": int(d.max_work_group_size),
            "max_work_item_sizes": [int(s) for s in d.max_work_item_sizes],
            "local_mem_size": int(d.local_mem_size),
            "compute_units": int(d.max_compute_units),
        }


_API: list[OpenCLDeviceAPI] = []
_API_LOCK = threading.Lock()


def device_api() -> OpenCLDeviceAPI:
    """The process-wide OpenCL device API (what ``tvm_device_api(4)`` returns)."""
    with _API_LOCK:
        if not _API:
            _API.append(OpenCLDeviceAPI())
        return _API[0]


def opencl_available() -> bool:
    """Whether pyopencl is installed and some OpenCL device exists."""
    try:
        return bool(device_api().devices())
    except DeviceUnavailableError:
        return False


class OpenCLModule(DeviceModule):
    """OpenCL C kernels plus their host functions (``payload["source"]`` is the source)."""

    type_key = FORMAT
    device_type = DEVICE_TYPE
    device_name = "opencl"
    file_suffix = FILE_SUFFIX

    def __init__(self, payload: dict[str, Any]) -> None:
        super().__init__(payload)
        if not isinstance(payload.get("source"), str):
            raise KernelError("an opencl module needs its OpenCL C 'source'")
        self._programs: dict[int, Any] = {}
        self._kernel_objs: dict[tuple[int, str], Any] = {}
        self._lock = threading.Lock()

    def _kernel(self, dev: Device, name: str) -> Any:
        key = (dev.index, name)
        with self._lock:
            k = self._kernel_objs.get(key)
            if k is not None:
                return k
            cl = _pyopencl()
            program = self._programs.get(dev.index)
            if program is None:
                api = device_api()
                self._check_extensions(dev, api)
                try:
                    program = cl.Program(api.context(dev), self.payload["source"]).build()
                except cl.Error as err:
                    raise KernelError(f"opencl: building the kernels of this module failed on "
                                      f"{dev}:\n{err}") from err
                self._programs[dev.index] = program
            k = cl.Kernel(program, name)
            self._kernel_objs[key] = k
            return k

    def _check_extensions(self, dev: Device, api: OpenCLDeviceAPI) -> None:
        device = api._device(dev)
        have = set(device.extensions.split())
        missing = [(name, ext) for name, meta in self.kernels.items()
                   for ext in meta.get("extensions", []) if ext not in have]
        if missing:
            uses = "; ".join(f"kernel {name} uses {_EXTENSION_DTYPES.get(ext, ext)} (needs {ext})"
                             for name, ext in missing)
            raise KernelError(f"opencl: {uses}, which {dev} ({device.name.strip()}) does not "
                              "support; compute in float32 on this device")

    def launch(self, dev: Device, kernel: str, args: list[Any], grid: tuple[int, int, int],
               block: tuple[int, int, int]) -> None:
        api = device_api()
        meta = self.kernels[kernel]
        values = []
        for p, value in zip(kernel_params(meta), args):
            if p["kind"] == "handle":
                if not isinstance(value, DevicePtr):
                    raise KernelError(f"opencl: kernel {kernel} parameter {p['name']} expects "
                                      f"device memory, got {value!r}")
                if value.offset:
                    raise KernelError(
                        f"opencl: kernel {kernel} parameter {p['name']}: tensors that start at "
                        f"a byte offset ({value.offset}) are not supported; copy the view to "
                        "a tensor of its own"
                    )
                values.append(api.buffer(value.handle))
            else:
                values.append(np.dtype(p["dtype"]).type(value))
        k = self._kernel(dev, kernel)
        k.set_args(*values)
        global_size = tuple(g * b for g, b in zip(grid, block))
        _pyopencl().enqueue_nd_range_kernel(api.queue(dev), k, global_size, block)


def load_module(path: str) -> OpenCLModule:
    """Load an exported ``.clmod`` file (the ``tvm_runtime_module_loader`` for ``clmod``)."""
    return OpenCLModule(load_device_module_payload(path, FORMAT))
