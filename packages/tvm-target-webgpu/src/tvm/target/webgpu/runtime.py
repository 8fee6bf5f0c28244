"""Run side of the ``webgpu`` target: device API, kernel launches and ``.wgpumod`` files.

Imports only tvm-runtime, numpy and (lazily) ``wgpu`` (wgpu-py), never the compiler, so an
exported module runs with ``tvm-runtime`` and this package alone::

    mod = tvm.runtime.load_module("add.wgpumod")
    mod["add"](a, b)       # Tensors on tvm.runtime.webgpu(0)

Devices: ``webgpu(i)`` is the ``i``-th adapter wgpu enumerates, GPUs first and CPU
implementations (lavapipe, SwiftShader) last.  Each gets a device with the adapter's own
limits for buffer sizes, bindings and workgroups, and the ``shader-f16`` feature where the
adapter has it.

Memory: a tensor's handle names a ``GPUBuffer`` (usage storage + copies; sizes rounded up
to 16 bytes, copies that do not start or end on 4 bytes go through the covering words).
A launch creates the kernel's bind group (and the uniform buffer of its scalars) and
submits one compute pass; submissions run in order, and copies to the host wait for them.
Pipelines are made once per kernel, device and workgroup size (the workgroup size is a
pipeline-overridable constant).  Timing is by wall clock around ``synchronize`` (as
``time_evaluator`` and the profiler do).
"""

from __future__ import annotations

import struct
import threading
import weakref
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from tvm.runtime.device import Device, DeviceAPI
from tvm.runtime.device_module import (
    DEVICE_MODULE_VERSION, DeviceModule, DevicePtr, kernel_params, load_device_module_payload,
)
from tvm.runtime.error import DeviceUnavailableError, KernelError, ModuleLoadError

from .layout import UNIFORM_TYPES, LayoutError, kernel_layout

__all__ = ["WebGPUDeviceAPI", "WebGPUModule", "device_api", "device_target", "load_module",
           "webgpu_available", "DEVICE_MODULE_VERSION", "FILE_SUFFIX", "FORMAT", "DEVICE_TYPE"]

FORMAT = "webgpu"
FILE_SUFFIX = "wgpumod"
DEVICE_TYPE = 15  # kDLWebGPU

_INSTALL = ("pip install wgpu==0.32.0, and a GPU driver wgpu can use (Vulkan, Metal or "
            "D3D12), e.g. apt-get install libvulkan1 mesa-vulkan-drivers for lavapipe "
            "(Vulkan on the CPU)")
#: adapter limits the device is created with (the adapter's own values)
_LIMITS = ("max-storage-buffer-binding-size", "max-buffer-size",
           "max-compute-workgroup-storage-size", "max-compute-invocations-per-workgroup",
           "max-compute-workgroup-size-x", "max-compute-workgroup-size-y",
           "max-compute-workgroup-size-z", "max-compute-workgroups-per-dimension",
           "max-storage-buffers-per-shader-stage", "max-bindings-per-bind-group")
_INT32 = (-(2 ** 31), 2 ** 31 - 1)


def _wgpu() -> Any:
    try:
        import wgpu
    except (ImportError, OSError) as err:
        raise DeviceUnavailableError(f"the webgpu device needs wgpu: {_INSTALL} ({err})") from err
    return wgpu


@dataclass
class _Context:
    """One adapter with its device (made on first use)."""

    adapter: Any
    name: str
    adapter_type: str
    features: set
    limits: dict
    device: Any = None
    fence: Any = None  # a small buffer read to wait for the queue
    lock: Any = field(default_factory=threading.RLock)


class WebGPUDeviceAPI(DeviceAPI):
    """Allocation, copies, launches and synchronisation on WebGPU adapters (through wgpu)."""

    name = "webgpu"

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._contexts: list[_Context] | None = None
        self._buffers: dict[int, tuple[Any, int, int]] = {}  # handle -> (buffer, size, index)
        self._next_handle = 0x10000

    # ------------------------------------------------------------------ devices
    def contexts(self) -> list[_Context]:
        """Every WebGPU adapter, GPUs before CPU implementations (an empty list without a
        driver)."""
        with self._lock:
            if self._contexts is None:
                wgpu = _wgpu()
                try:
                    adapters = wgpu.gpu.enumerate_adapters_sync()
                except Exception:  # noqa: BLE001 - no backend at all
                    adapters = []
                found = []
                for a in adapters:
                    info = a.info
                    limits = {k: int(a.limits[k]) for k in _LIMITS if k in a.limits}
                    found.append(_Context(a, str(info.get("device") or info.get("description")
                                                 or "adapter"),
                                          str(info.get("adapter_type", "")).lower(),
                                          set(a.features), limits))
                self._contexts = sorted(found, key=lambda c: c.adapter_type == "cpu")
            return self._contexts

    def devices(self) -> list[str]:
        """The names of the WebGPU adapters, in ``webgpu(i)`` order."""
        return [c.name for c in self.contexts()]

    def context(self, dev: Device) -> _Context:
        """The (opened) context of ``dev``."""
        ctxs = self.contexts()
        if dev.index >= len(ctxs):
            raise DeviceUnavailableError(f"{dev} does not exist: {len(ctxs)} WebGPU adapter(s) "
                                         "found" + ("" if ctxs else f" ({_INSTALL})"))
        ctx = ctxs[dev.index]
        with ctx.lock:
            if ctx.device is None:
                features = [f for f in ("shader-f16",) if f in ctx.features]
                ctx.device = ctx.adapter.request_device_sync(
                    required_features=features, required_limits=dict(ctx.limits),
                    label=f"tvm webgpu({dev.index})")
        return ctx

    def exists(self, dev: Device) -> bool:
        try:
            return dev.device_type == DEVICE_TYPE and dev.index < len(self.contexts())
        except DeviceUnavailableError:
            return False

    def attributes(self, dev: Device) -> dict[str, Any]:
        ctx = self.context(dev)
        lim = ctx.limits
        return {
            "name": ctx.name,
            "adapter_type": ctx.adapter_type,
            "backend": str(ctx.adapter.info.get("backend_type", "")),
            "max_work_group_invocations": lim.get("max-compute-invocations-per-workgroup"),
            "max_work_group_size": [lim.get(f"max-compute-workgroup-size-{a}") for a in "xyz"],
            "max_work_group_count": lim.get("max-compute-workgroups-per-dimension"),
            "max_shared_memory": lim.get("max-compute-workgroup-storage-size"),
            "max_storage_buffer_binding_size": lim.get("max-storage-buffer-binding-size"),
            "features": sorted(f for f in ctx.features if f.startswith("shader-")),
        }

    # ------------------------------------------------------------------ memory
    def alloc(self, dev: Device, nbytes: int, alignment: int) -> int:
        ctx = self.context(dev)
        wgpu = _wgpu()
        size = max(16, (int(nbytes) + 15) // 16 * 16)
        limit = min(ctx.limits.get("max-storage-buffer-binding-size", 1 << 27),
                    ctx.limits.get("max-buffer-size", 1 << 28), 2 ** 31 - 1)
        if size > limit:
            raise MemoryError(f"webgpu: a buffer of {nbytes} bytes exceeds {ctx.name}'s "
                              f"largest storage buffer binding ({limit} bytes)")
        usage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST
        with ctx.lock:
            buf = ctx.device.create_buffer(size=size, usage=usage)
        with self._lock:
            handle = self._next_handle
            self._next_handle += 0x10000
            self._buffers[handle] = (buf, size, dev.index)
        return handle

    def free(self, dev: Device, handle: int) -> None:
        with self._lock:
            entry = self._buffers.pop(int(handle), None)
        if entry is None:
            raise ValueError(f"WebGPUDeviceAPI.free: 0x{int(handle):x} was not allocated by "
                             "this device API")
        entry[0].destroy()

    def buffer(self, handle: int, dev: Device | None = None) -> tuple[Any, int]:
        """``(GPUBuffer, size)`` behind a handle returned by :meth:`alloc`."""
        entry = self._buffers.get(int(handle))
        if entry is None:
            raise KernelError(f"0x{int(handle):x} is not WebGPU memory allocated by tvm (was "
                              "the tensor freed, or made on another device?)")
        if dev is not None and entry[2] != dev.index:
            raise KernelError(f"0x{int(handle):x} is memory of webgpu({entry[2]}), used on {dev}")
        return entry[0], entry[1]

    @staticmethod
    def _span(size: int, offset: int, nbytes: int) -> None:
        if offset < 0 or offset + nbytes > size:
            raise ValueError(f"webgpu: a copy of {nbytes} bytes at offset {offset} is outside "
                             f"the buffer of {size} bytes")

    def copy_from_host(self, dev: Device, dst: int, dst_offset: int, host: np.ndarray) -> None:
        nbytes = host.nbytes
        if not nbytes:
            return
        ctx = self.context(dev)
        buf, size = self.buffer(dst, dev)
        off = int(dst_offset)
        self._span(size, off, nbytes)
        data = np.ascontiguousarray(host).reshape(-1).view(np.uint8)
        lo, hi = off // 4 * 4, (off + nbytes + 3) // 4 * 4
        with ctx.lock:
            if (lo, hi) != (off, off + nbytes):  # patch the covering words
                words = np.frombuffer(ctx.device.queue.read_buffer(buf, lo, hi - lo),
                                      np.uint8).copy()
                words[off - lo:off - lo + nbytes] = data
                data, off = words, lo
            ctx.device.queue.write_buffer(buf, off, data)

    def copy_to_host(self, dev: Device, src: int, src_offset: int, host: np.ndarray) -> None:
        nbytes = host.nbytes
        if not nbytes:
            return
        if not host.flags.c_contiguous or not host.flags.writeable:
            raise ValueError("webgpu: copy_to_host needs a writeable C-contiguous array")
        ctx = self.context(dev)
        buf, size = self.buffer(src, dev)
        off = int(src_offset)
        self._span(size, off, nbytes)
        lo, hi = off // 4 * 4, (off + nbytes + 3) // 4 * 4
        with ctx.lock:
            raw = ctx.device.queue.read_buffer(buf, lo, hi - lo)  # waits for queued work
        host.reshape(-1).view(np.uint8)[:] = np.frombuffer(raw, np.uint8)[off - lo:off - lo
                                                                           + nbytes]

    def copy_device_to_device(self, src_dev: Device, src: int, src_offset: int,
                              dst_dev: Device, dst: int, dst_offset: int, nbytes: int) -> None:
        aligned = not (int(src_offset) % 4 or int(dst_offset) % 4 or int(nbytes) % 4)
        if src_dev != dst_dev or not aligned:
            super().copy_device_to_device(src_dev, src, src_offset, dst_dev, dst, dst_offset,
                                          nbytes)
            return
        if nbytes:
            ctx = self.context(src_dev)
            (s, ssize), (d, dsize) = self.buffer(src, src_dev), self.buffer(dst, src_dev)
            self._span(ssize, int(src_offset), int(nbytes))
            self._span(dsize, int(dst_offset), int(nbytes))
            with ctx.lock:
                enc = ctx.device.create_command_encoder()
                enc.copy_buffer_to_buffer(s, int(src_offset), d, int(dst_offset), int(nbytes))
                ctx.device.queue.submit([enc.finish()])

    def synchronize(self, dev: Device) -> None:
        ctxs = self._contexts or []
        if dev.index < len(ctxs) and ctxs[dev.index].device is not None:
            ctx = ctxs[dev.index]
            with ctx.lock:
                # a read waits for the work submitted before it (wgpu 0.32's
                # on_submitted_work_done_sync does not work with its wgpu-native)
                if ctx.fence is None:
                    ctx.fence = ctx.device.create_buffer(
                        size=4, usage=_wgpu().BufferUsage.COPY_SRC | _wgpu().BufferUsage.COPY_DST)
                ctx.device.queue.read_buffer(ctx.fence, 0, 4)


def device_target(index: int = 0) -> str:
    """A ``webgpu`` target string with the limits of adapter ``webgpu(index)``: its
    workgroup size and workgroup memory."""
    ctx = device_api().context(Device(DEVICE_TYPE, index))
    lim = ctx.limits
    threads = min(lim.get("max-compute-invocations-per-workgroup", 256), 1024)
    dims = ",".join(str(min(lim.get(f"max-compute-workgroup-size-{a}", 64), threads))
                    for a in "xyz")
    return (f"webgpu -max_num_threads={threads} -max_thread_dims={dims} "
            f"-max_shared_memory_per_block={lim.get('max-compute-workgroup-storage-size', 16384)}")


_API: list[WebGPUDeviceAPI] = []
_API_LOCK = threading.Lock()


def device_api() -> WebGPUDeviceAPI:
    """The process-wide WebGPU device API (what ``tvm_device_api(15)`` returns)."""
    with _API_LOCK:
        if not _API:
            _API.append(WebGPUDeviceAPI())
        return _API[0]


def webgpu_available() -> bool:
    """Whether wgpu is installed and finds some adapter."""
    try:
        return bool(device_api().contexts())
    except DeviceUnavailableError:
        return False


@dataclass
class _Kernel:
    """A kernel's shader module, layouts and pipelines on one device."""

    module: Any
    group_layout: Any
    layout: Any
    pipelines: dict = field(default_factory=dict)


class WebGPUModule(DeviceModule):
    """WGSL kernels (``kernels[i]["wgsl"]``) plus their host functions; ``source`` is all
    the shaders."""

    type_key = FORMAT
    device_type = DEVICE_TYPE
    device_name = "webgpu"
    file_suffix = FILE_SUFFIX

    def __init__(self, payload: dict[str, Any]) -> None:
        super().__init__(payload)
        self._layouts = {}
        for name, k in self.kernels.items():
            try:
                if not isinstance(k["wgsl"], str):
                    raise TypeError("the shader is not text")
                self._layouts[name] = kernel_layout(kernel_params(k), name)
                read_only = k["layout"]["read_only"]
                if len(read_only) != self._layouts[name].num_storage:
                    raise ValueError("read_only does not match the storage buffers")
            except (KeyError, TypeError, ValueError, LayoutError) as err:
                raise ModuleLoadError(f"a webgpu module needs each kernel's WGSL and a valid "
                                      f"parameter layout: kernel {name!r}: {err}") from None
        self._objects: dict[tuple[int, str], _Kernel] = {}
        self._lock = threading.Lock()
        weakref.finalize(self, self._objects.clear)

    def _kernel(self, dev: Device, name: str, ctx: _Context) -> _Kernel:
        key = (dev.index, name)
        with self._lock:
            k = self._objects.get(key)
            if k is not None:
                return k
            meta = self.kernels[name]
            missing = [f for f in meta.get("features", []) if f not in ctx.features]
            if missing:
                raise KernelError(f"webgpu: kernel {name} needs the adapter features "
                                  f"{', '.join(missing)}, which {ctx.name} does not have "
                                  "(float16 needs shader-f16); compute in float32")
            wgpu = _wgpu()
            try:
                module = ctx.device.create_shader_module(code=meta["wgsl"], label=name)
            except Exception as err:  # noqa: BLE001 - wgpu reports WGSL errors as exceptions
                raise KernelError(f"webgpu: the WGSL of kernel {name} does not compile on "
                                  f"{ctx.name}: {err}") from None
            lay = self._layouts[name]
            storage, ro = wgpu.BufferBindingType.storage, wgpu.BufferBindingType.read_only_storage
            entries = [{"binding": i, "visibility": wgpu.ShaderStage.COMPUTE,
                        "buffer": {"type": ro if meta["layout"]["read_only"][i] else storage}}
                       for i in range(lay.num_storage)]
            if lay.uniform_binding is not None:
                entries.append({"binding": lay.uniform_binding,
                                "visibility": wgpu.ShaderStage.COMPUTE,
                                "buffer": {"type": wgpu.BufferBindingType.uniform}})
            group = ctx.device.create_bind_group_layout(entries=entries)
            layout = ctx.device.create_pipeline_layout(bind_group_layouts=[group])
            k = _Kernel(module, group, layout)
            self._objects[key] = k
            return k

    def _pipeline(self, ctx: _Context, k: _Kernel, name: str, block: tuple[int, int, int]) -> Any:
        p = k.pipelines.get(block)
        if p is None:
            constants = {"tvm_wg_x": block[0], "tvm_wg_y": block[1], "tvm_wg_z": block[2]}
            try:
                p = ctx.device.create_compute_pipeline(layout=k.layout, compute={
                    "module": k.module, "entry_point": "main", "constants": constants})
            except Exception as err:  # noqa: BLE001
                raise KernelError(f"webgpu: kernel {name} cannot be made into a pipeline on "
                                  f"{ctx.name}: {err}") from None
            k.pipelines[block] = p
        return p

    def launch(self, dev: Device, kernel: str, args: list[Any], grid: tuple[int, int, int],
               block: tuple[int, int, int]) -> None:
        api = device_api()
        ctx = api.context(dev)
        lim = ctx.limits
        most = lim.get("max-compute-workgroups-per-dimension", 65535)
        sizes = [lim.get(f"max-compute-workgroup-size-{a}", 256) for a in "xyz"]
        if any(g > most for g in grid) or any(b > s for b, s in zip(block, sizes)):
            raise KernelError(f"webgpu: kernel {kernel} launches {grid} workgroups of {block} "
                              f"threads; {ctx.name} allows at most {most} workgroups per "
                              f"dimension of {sizes}")
        threads = block[0] * block[1] * block[2]
        if threads > lim.get("max-compute-invocations-per-workgroup", 256):
            raise KernelError(f"webgpu: kernel {kernel} uses {threads} threads per workgroup; "
                              f"{ctx.name} allows "
                              f"{lim.get('max-compute-invocations-per-workgroup')} (build with "
                              "-max_num_threads)")
        wgpu = _wgpu()
        lay = self._layouts[kernel]
        uniform = bytearray(lay.uniform_size)
        entries = []
        for p, binding, off, value in zip(kernel_params(self.kernels[kernel]), lay.bindings,
                                          lay.uniform, args):
            if p["kind"] == "handle":
                if not isinstance(value, DevicePtr):
                    raise KernelError(f"webgpu: kernel {kernel} parameter {p['name']} expects "
                                      f"device memory, got {value!r}")
                buf, size = api.buffer(value.handle, dev)
                entries.append({"binding": binding, "resource": {
                    "buffer": buf, "offset": value.offset, "size": size - value.offset}})
            else:
                dtype = p["dtype"]
                if dtype == "int64" and not _INT32[0] <= int(value) <= _INT32[1]:
                    raise KernelError(f"webgpu: kernel {kernel} parameter {p['name']} = "
                                      f"{value} does not fit in 32 bits (WGSL has no 64-bit "
                                      "integers)")
                struct.pack_into("<" + UNIFORM_TYPES[dtype][1], uniform, off,
                                 np.dtype(dtype).type(value).item())
        k = self._kernel(dev, kernel, ctx)
        with ctx.lock:
            pipeline = self._pipeline(ctx, k, kernel, tuple(int(b) for b in block))
            device = ctx.device
            if lay.uniform_binding is not None:
                ubuf = device.create_buffer_with_data(
                    data=bytes(uniform), usage=wgpu.BufferUsage.UNIFORM)
                entries.append({"binding": lay.uniform_binding, "resource": {
                    "buffer": ubuf, "offset": 0, "size": lay.uniform_size}})
            try:
                group = device.create_bind_group(layout=k.group_layout, entries=entries)
            except Exception as err:  # noqa: BLE001
                raise KernelError(f"webgpu: kernel {kernel}: its buffers cannot be bound "
                                  f"({err}); tensors at byte offsets that are not multiples "
                                  "of the adapter's min-storage-buffer-offset-alignment must "
                                  "be copied to tensors of their own") from None
            enc = device.create_command_encoder()
            cpass = enc.begin_compute_pass()
            cpass.set_pipeline(pipeline)
            cpass.set_bind_group(0, group)
            cpass.dispatch_workgroups(*grid)
            cpass.end()
            device.queue.submit([enc.finish()])


def load_module(path: str) -> WebGPUModule:
    """Load an exported ``.wgpumod`` file (the ``tvm_runtime_module_loader`` for
    ``wgpumod``)."""
    return WebGPUModule(load_device_module_payload(path, FORMAT))
