"""Run side of the ``vulkan`` target: device API, kernel launches and ``.vkmod`` files.

Imports only tvm-runtime, numpy and (lazily) the ``vulkan`` bindings, never the compiler,
so an exported module runs with ``tvm-runtime`` and this package alone::

    mod = tvm.runtime.load_module("add.vkmod")
    mod["add"](a, b)       # Tensors on tvm.runtime.vulkan(0)

Devices: ``vulkan(i)`` is the ``i``-th physical device, GPUs first and CPU implementations
(lavapipe) last, so lavapipe is chosen only when nothing else exists.  Each device gets a
logical device with every optional feature it supports enabled (int64, float64, float16,
8/16-bit storage) and one compute queue.

Memory: a tensor's handle names a ``VkBuffer`` with its own memory, host-visible where the
device offers device-local host-visible memory (CPUs, integrated GPUs), else device-local
with copies through a host-visible staging buffer.  Launches are recorded into one command
buffer (a memory barrier after each dispatch) that is submitted, and waited for with a
fence, when the host needs the results: a copy, ``free``, ``synchronize``.  Pipelines and
their layouts are made once per kernel, device and workgroup size (the workgroup size is a
specialisation constant); descriptor sets come from a pool reset after each submission.
Timing is by wall clock around ``synchronize`` (as ``time_evaluator`` and the profiler do).
"""

from __future__ import annotations

import base64
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

from .layout import LayoutError, kernel_layout

__all__ = ["VulkanDeviceAPI", "VulkanModule", "device_api", "device_target", "load_module",
           "vulkan_available",
           "DEVICE_MODULE_VERSION", "FILE_SUFFIX", "FORMAT", "DEVICE_TYPE"]

FORMAT = "vulkan"
FILE_SUFFIX = "vkmod"
DEVICE_TYPE = 7  # kDLVulkan

_INSTALL = ("pip install vulkan==1.3.275.1, and a Vulkan driver, e.g. apt-get install "
            "libvulkan1 mesa-vulkan-drivers for lavapipe (Vulkan on the CPU)")
_PACK = {"int32": "i", "uint32": "I", "float32": "f", "int64": "q", "uint64": "Q",
         "float64": "d"}
_SETS_PER_POOL = 256
_SCALAR_LIMITS = ("maxComputeWorkGroupInvocations", "maxComputeSharedMemorySize",
                  "maxStorageBufferRange", "minStorageBufferOffsetAlignment",
                  "maxPushConstantsSize")
_VECTOR_LIMITS = ("maxComputeWorkGroupSize", "maxComputeWorkGroupCount")
_MAX_BINDINGS = 32
#: the device features a kernel may need (``kernels[i]["features"]``) -> where they live
_FEATURES = {"shaderInt64": 0, "shaderFloat64": 0, "shaderInt16": 0,
             "storageBuffer16BitAccess": 11, "storageBuffer8BitAccess": 12,
             "shaderFloat16": 12, "shaderInt8": 12}


def _vk() -> Any:
    try:
        import vulkan
    except (ImportError, OSError) as err:
        raise DeviceUnavailableError(f"the vulkan device needs the vulkan bindings and a "
                                     f"Vulkan loader: {_INSTALL} ({err})") from err
    return vulkan


def _check(vk: Any, result: int, what: str) -> None:
    if result != vk.VK_SUCCESS:
        raise KernelError(f"vulkan: {what} failed (VkResult {result})")


@dataclass
class _Buffer:
    buffer: Any
    memory: Any
    size: int
    mapped: Any  # char* of the persistently mapped memory, or None


@dataclass
class _Context:
    """One physical device with its logical device, queue and per-device state."""

    physical: Any
    name: str
    device_type: int
    limits: dict
    features: set
    subgroup_size: int
    subgroup_ops: int
    memory_types: list
    device: Any = None
    queue: Any = None
    pool: Any = None
    descriptor_pool: Any = None
    fence: Any = None
    cmd: Any = None  # the command buffer being recorded, or None
    staging: Any = None
    lock: Any = field(default_factory=threading.RLock)
    api_version: int = 0
    sets_used: int = 0


class VulkanDeviceAPI(DeviceAPI):
    """Allocation, copies, launches and synchronisation on Vulkan devices."""

    name = "vulkan"

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._instance: Any = None
        self._contexts: list[_Context] | None = None
        self._buffers: dict[int, tuple[_Buffer, int]] = {}
        self._next_handle = 0x10000

    # ------------------------------------------------------------------ devices
    def _create_instance(self, vk: Any) -> Any:
        try:
            version = vk.vkEnumerateInstanceVersion()
        except Exception:  # a Vulkan 1.0 loader
            version = vk.VK_MAKE_VERSION(1, 0, 0)
        app = vk.VkApplicationInfo(pApplicationName="tvm", applicationVersion=1,
                                   pEngineName="tvm", engineVersion=1,
                                   apiVersion=min(version, vk.VK_MAKE_VERSION(1, 3, 0)))
        return vk.vkCreateInstance(vk.VkInstanceCreateInfo(pApplicationInfo=app), None)

    def _probe(self, vk: Any, physical: Any) -> _Context:
        ffi = vk.ffi
        sub = ffi.new("VkPhysicalDeviceSubgroupProperties*")
        sub.sType = vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES
        props2 = ffi.new("VkPhysicalDeviceProperties2*")
        props2.sType = vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2
        props2.pNext = sub
        vk.lib.vkGetPhysicalDeviceProperties2(physical, props2)
        mem = vk.vkGetPhysicalDeviceMemoryProperties(physical)
        types = [int(mem.memoryTypes[i].propertyFlags) for i in range(mem.memoryTypeCount)]
        props = props2.properties
        lim = props.limits
        limits = {n: int(getattr(lim, n)) for n in _SCALAR_LIMITS}
        limits.update({n: [int(getattr(lim, n)[i]) for i in range(3)] for n in _VECTOR_LIMITS})
        name = ffi.string(props.deviceName).decode(errors="replace")
        return _Context(physical, name, int(props.deviceType), limits, set(),
                        int(sub.subgroupSize), int(sub.supportedOperations), types,
                        api_version=int(props.apiVersion))

    def contexts(self) -> list[_Context]:
        """Every Vulkan physical device, GPUs before CPU implementations (an empty list
        without a driver)."""
        with self._lock:
            if self._contexts is None:
                vk = _vk()
                try:
                    self._instance = self._create_instance(vk)
                    physicals = vk.vkEnumeratePhysicalDevices(self._instance)
                except vk.VkError:  # no driver (VK_ERROR_INCOMPATIBLE_DRIVER ...)
                    physicals = []
                found = [self._probe(vk, p) for p in physicals]
                cpu = vk.VK_PHYSICAL_DEVICE_TYPE_CPU
                self._contexts = sorted(found, key=lambda c: c.device_type == cpu)
            return self._contexts

    def devices(self) -> list[str]:
        """The names of the Vulkan devices, in ``vulkan(i)`` order."""
        return [c.name for c in self.contexts()]

    def context(self, dev: Device) -> _Context:
        """The (initialised) context of ``dev``."""
        ctxs = self.contexts()
        if dev.index >= len(ctxs):
            raise DeviceUnavailableError(f"{dev} does not exist: {len(ctxs)} Vulkan device(s) "
                                         f"found" + ("" if ctxs else f" ({_INSTALL})"))
        ctx = ctxs[dev.index]
        with ctx.lock:
            if ctx.device is None:
                self._open(ctx)
        return ctx

    def _open(self, ctx: _Context) -> None:
        vk = _vk()
        ffi = vk.ffi
        families = vk.vkGetPhysicalDeviceQueueFamilyProperties(ctx.physical)
        family = next((i for i, f in enumerate(families)
                       if f.queueFlags & vk.VK_QUEUE_COMPUTE_BIT), None)
        if family is None:
            raise DeviceUnavailableError(f"vulkan: {ctx.name} has no compute queue")
        # query every optional feature and enable what the device has
        f2 = ffi.new("VkPhysicalDeviceFeatures2*")
        f2.sType = vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2
        f11 = ffi.new("VkPhysicalDeviceVulkan11Features*")
        f11.sType = vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES
        f12 = ffi.new("VkPhysicalDeviceVulkan12Features*")
        f12.sType = vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES
        has12 = ctx.api_version >= vk.VK_MAKE_VERSION(1, 2, 0)
        f2.pNext = f11
        if has12:
            f11.pNext = f12
        vk.lib.vkGetPhysicalDeviceFeatures2(ctx.physical, f2)
        where = {0: f2.features, 11: f11, 12: f12}
        ctx.features = {n for n, k in _FEATURES.items()
                        if (k != 12 or has12) and getattr(where[k], n)}
        f2.features.robustBufferAccess = 0  # not needed; costs speed where it exists
        priorities = ffi.new("float[]", [1.0])
        qinfo = ffi.new("VkDeviceQueueCreateInfo*")
        qinfo.sType = vk.VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO
        qinfo.queueFamilyIndex = family
        qinfo.queueCount = 1
        qinfo.pQueuePriorities = priorities
        dinfo = ffi.new("VkDeviceCreateInfo*")
        dinfo.sType = vk.VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO
        dinfo.pNext = f2
        dinfo.queueCreateInfoCount = 1
        dinfo.pQueueCreateInfos = qinfo
        device = ffi.new("VkDevice*")
        _check(vk, vk.lib.vkCreateDevice(ctx.physical, dinfo, ffi.NULL, device), "vkCreateDevice")
        ctx.device = device[0]
        ctx.queue = vk.vkGetDeviceQueue(ctx.device, family, 0)
        ctx.pool = vk.vkCreateCommandPool(ctx.device, vk.VkCommandPoolCreateInfo(
            flags=vk.VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
            queueFamilyIndex=family), None)
        size = vk.VkDescriptorPoolSize(type=vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                       descriptorCount=_SETS_PER_POOL * 8)
        ctx.descriptor_pool = vk.vkCreateDescriptorPool(ctx.device, vk.VkDescriptorPoolCreateInfo(
            maxSets=_SETS_PER_POOL, poolSizeCount=1, pPoolSizes=[size]), None)
        ctx.fence = vk.vkCreateFence(ctx.device, vk.VkFenceCreateInfo(), None)

    def exists(self, dev: Device) -> bool:
        try:
            return dev.device_type == DEVICE_TYPE and dev.index < len(self.contexts())
        except DeviceUnavailableError:
            return False

    def attributes(self, dev: Device) -> dict[str, Any]:
        ctx = self.context(dev)
        vk = _vk()
        lim = ctx.limits
        return {
            "name": ctx.name,
            "device_type": {vk.VK_PHYSICAL_DEVICE_TYPE_CPU: "cpu",
                            vk.VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: "discrete_gpu",
                            vk.VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: "integrated_gpu"}.get(
                ctx.device_type, "other"),
            "api_version": ".".join(str(v) for v in (ctx.api_version >> 22,
                                                    (ctx.api_version >> 12) & 0x3FF)),
            "max_work_group_invocations": lim["maxComputeWorkGroupInvocations"],
            "max_work_group_size": lim["maxComputeWorkGroupSize"],
            "max_work_group_count": lim["maxComputeWorkGroupCount"],
            "max_shared_memory": lim["maxComputeSharedMemorySize"],
            "max_storage_buffer_range": lim["maxStorageBufferRange"],
            "subgroup_size": ctx.subgroup_size,
            "subgroup_shuffle": bool(ctx.subgroup_ops & vk.VK_SUBGROUP_FEATURE_SHUFFLE_BIT),
            "features": sorted(ctx.features),
        }

    # ------------------------------------------------------------------ memory
    def _memory_type(self, ctx: _Context, bits: int, want: list[int]) -> int:
        for flags in want:
            for i, have in enumerate(ctx.memory_types):
                if bits & (1 << i) and have & flags == flags:
                    return i
        raise KernelError(f"vulkan: {ctx.name} has no suitable memory type")

    def _make_buffer(self, ctx: _Context, nbytes: int, host: bool) -> _Buffer:
        vk = _vk()
        usage = (vk.VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | vk.VK_BUFFER_USAGE_TRANSFER_SRC_BIT
                 | vk.VK_BUFFER_USAGE_TRANSFER_DST_BIT)
        buf = vk.vkCreateBuffer(ctx.device, vk.VkBufferCreateInfo(
            size=nbytes, usage=usage, sharingMode=vk.VK_SHARING_MODE_EXCLUSIVE), None)
        req = vk.vkGetBufferMemoryRequirements(ctx.device, buf)
        local, visible = vk.VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, (
            vk.VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | vk.VK_MEMORY_PROPERTY_HOST_COHERENT_BIT)
        want = [visible] if host else [local | visible, local]
        index = self._memory_type(ctx, req.memoryTypeBits, want)
        try:
            mem = vk.vkAllocateMemory(ctx.device, vk.VkMemoryAllocateInfo(
                allocationSize=req.size, memoryTypeIndex=index), None)
        except vk.VkError as err:
            vk.vkDestroyBuffer(ctx.device, buf, None)
            raise MemoryError(f"vulkan: cannot allocate {nbytes} bytes on {ctx.name}: "
                              f"{type(err).__name__}") from None
        vk.vkBindBufferMemory(ctx.device, buf, mem, 0)
        mapped = None
        if ctx.memory_types[index] & visible == visible:
            ptr = vk.ffi.new("void**")
            _check(vk, vk.lib.vkMapMemory(ctx.device, mem, 0, req.size, 0, ptr), "vkMapMemory")
            mapped = vk.ffi.cast("char*", ptr[0])
        return _Buffer(buf, mem, nbytes, mapped)

    def _destroy(self, ctx: _Context, b: _Buffer) -> None:
        vk = _vk()
        if b.mapped is not None:
            vk.vkUnmapMemory(ctx.device, b.memory)
        vk.vkDestroyBuffer(ctx.device, b.buffer, None)
        vk.vkFreeMemory(ctx.device, b.memory, None)

    def alloc(self, dev: Device, nbytes: int, alignment: int) -> int:
        ctx = self.context(dev)
        nbytes = max(int(nbytes), 4)
        limit = ctx.limits["maxStorageBufferRange"]
        if nbytes > limit:
            raise MemoryError(f"vulkan: a buffer of {nbytes} bytes exceeds {ctx.name}'s "
                              f"maxStorageBufferRange ({limit} bytes); kernels address buffers "
                              "with 32-bit indices")
        with ctx.lock:
            b = self._make_buffer(ctx, nbytes, host=False)
        with self._lock:
            handle = self._next_handle
            self._next_handle += 0x10000
            self._buffers[handle] = (b, dev.index)
        return handle

    def free(self, dev: Device, handle: int) -> None:
        with self._lock:
            entry = self._buffers.pop(int(handle), None)
        if entry is None:
            raise ValueError(f"VulkanDeviceAPI.free: 0x{int(handle):x} was not allocated by "
                             "this device API")
        ctx = self.context(Device(DEVICE_TYPE, entry[1]))
        with ctx.lock:
            self._flush(ctx)
            self._destroy(ctx, entry[0])

    def buffer(self, handle: int, dev: Device | None = None) -> _Buffer:
        """The buffer behind a handle returned by :meth:`alloc` (on ``dev``, when given)."""
        entry = self._buffers.get(int(handle))
        if entry is None:
            raise KernelError(f"0x{int(handle):x} is not Vulkan memory allocated by tvm (was "
                              "the tensor freed, or made on another device?)")
        if dev is not None and entry[1] != dev.index:
            raise KernelError(f"0x{int(handle):x} is memory of vulkan({entry[1]}), used on "
                              f"{dev}")
        return entry[0]

    def _staging(self, ctx: _Context, nbytes: int) -> _Buffer:
        if ctx.staging is None or ctx.staging.size < nbytes:
            if ctx.staging is not None:
                self._destroy(ctx, ctx.staging)
                ctx.staging = None
            ctx.staging = self._make_buffer(ctx, max(nbytes, 1 << 20), host=True)
        return ctx.staging

    def _span(self, b: _Buffer, offset: int, nbytes: int) -> None:
        if offset < 0 or offset + nbytes > b.size:
            raise ValueError(f"vulkan: a copy of {nbytes} bytes at offset {offset} is outside "
                             f"the buffer of {b.size} bytes")

    def copy_from_host(self, dev: Device, dst: int, dst_offset: int, host: np.ndarray) -> None:
        if not host.nbytes:
            return
        ctx, b = self.context(dev), self.buffer(dst, dev)
        self._span(b, int(dst_offset), host.nbytes)
        vk = _vk()
        src = vk.ffi.from_buffer(np.ascontiguousarray(host))
        with ctx.lock:
            self._flush(ctx)
            if b.mapped is not None:
                vk.ffi.memmove(b.mapped + int(dst_offset), src, host.nbytes)
                return
            st = self._staging(ctx, host.nbytes)
            vk.ffi.memmove(st.mapped, src, host.nbytes)
            self._record_copy(ctx, st.buffer, 0, b.buffer, int(dst_offset), host.nbytes)
            self._flush(ctx)

    def copy_to_host(self, dev: Device, src: int, src_offset: int, host: np.ndarray) -> None:
        if not host.nbytes:
            return
        ctx, b = self.context(dev), self.buffer(src, dev)
        self._span(b, int(src_offset), host.nbytes)
        vk = _vk()
        if not host.flags.c_contiguous or not host.flags.writeable:
            raise ValueError("vulkan: copy_to_host needs a writeable C-contiguous array")
        dst = vk.ffi.from_buffer(host)
        with ctx.lock:
            if b.mapped is not None:
                self._flush(ctx)
                vk.ffi.memmove(dst, b.mapped + int(src_offset), host.nbytes)
                return
            st = self._staging(ctx, host.nbytes)
            self._record_copy(ctx, b.buffer, int(src_offset), st.buffer, 0, host.nbytes)
            self._flush(ctx)
            vk.ffi.memmove(dst, st.mapped, host.nbytes)

    def copy_device_to_device(self, src_dev: Device, src: int, src_offset: int,
                              dst_dev: Device, dst: int, dst_offset: int, nbytes: int) -> None:
        if src_dev != dst_dev:
            super().copy_device_to_device(src_dev, src, src_offset, dst_dev, dst, dst_offset,
                                          nbytes)
            return
        if nbytes:
            ctx, s, d = (self.context(src_dev), self.buffer(src, src_dev),
                       self.buffer(dst, src_dev))
            self._span(s, int(src_offset), int(nbytes))
            self._span(d, int(dst_offset), int(nbytes))
            with ctx.lock:
                self._record_copy(ctx, s.buffer, int(src_offset), d.buffer, int(dst_offset),
                                  int(nbytes))

    def synchronize(self, dev: Device) -> None:
        ctxs = self._contexts or []
        if dev.index < len(ctxs) and ctxs[dev.index].device is not None:
            with ctxs[dev.index].lock:
                self._flush(ctxs[dev.index])

    # ------------------------------------------------------------------ commands
    def _recording(self, ctx: _Context) -> Any:
        if ctx.cmd is None:
            vk = _vk()
            cmd = vk.vkAllocateCommandBuffers(ctx.device, vk.VkCommandBufferAllocateInfo(
                commandPool=ctx.pool, level=vk.VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                commandBufferCount=1))[0]
            vk.vkBeginCommandBuffer(cmd, vk.VkCommandBufferBeginInfo(
                flags=vk.VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT))
            ctx.cmd = cmd
        return ctx.cmd

    def _barrier(self, ctx: _Context, cmd: Any) -> None:
        vk = _vk()
        access = (vk.VK_ACCESS_SHADER_READ_BIT | vk.VK_ACCESS_SHADER_WRITE_BIT
                  | vk.VK_ACCESS_TRANSFER_READ_BIT | vk.VK_ACCESS_TRANSFER_WRITE_BIT)
        stages = vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | vk.VK_PIPELINE_STAGE_TRANSFER_BIT
        vk.vkCmdPipelineBarrier(cmd, stages, stages, 0, 1,
                                [vk.VkMemoryBarrier(srcAccessMask=access, dstAccessMask=access)],
                                0, None, 0, None)

    def _record_copy(self, ctx: _Context, src: Any, src_offset: int, dst: Any,
                     dst_offset: int, nbytes: int) -> None:
        vk = _vk()
        cmd = self._recording(ctx)
        vk.vkCmdCopyBuffer(cmd, src, dst, 1, [vk.VkBufferCopy(
            srcOffset=src_offset, dstOffset=dst_offset, size=nbytes)])
        self._barrier(ctx, cmd)

    def _flush(self, ctx: _Context) -> None:
        """Submit the recorded commands and wait for them (ctx.lock held)."""
        if ctx.cmd is None:
            return
        vk = _vk()
        cmd, ctx.cmd = ctx.cmd, None
        try:
            vk.vkEndCommandBuffer(cmd)
            vk.vkQueueSubmit(ctx.queue, 1, [vk.VkSubmitInfo(commandBufferCount=1,
                                                            pCommandBuffers=[cmd])], ctx.fence)
            vk.vkWaitForFences(ctx.device, 1, [ctx.fence], vk.VK_TRUE, 0xFFFFFFFFFFFFFFFF)
        except vk.VkError as err:
            raise KernelError(f"vulkan: running kernels on {ctx.name} failed: "
                              f"{type(err).__name__} (a device fault or a lost device)") from err
        finally:
            vk.vkResetFences(ctx.device, 1, [ctx.fence])
            vk.vkFreeCommandBuffers(ctx.device, ctx.pool, 1, [cmd])
            vk.vkResetDescriptorPool(ctx.device, ctx.descriptor_pool, 0)
            ctx.sets_used = 0

    def dispatch(self, dev: Device, kernel: _Kernel, pipeline: Any, buffers: list[DevicePtr],
                 push: bytes, grid: tuple[int, int, int]) -> None:
        """Record one dispatch of ``pipeline`` over ``grid`` workgroups."""
        vk = _vk()
        ctx = self.context(dev)
        with ctx.lock:
            if ctx.sets_used >= _SETS_PER_POOL:
                self._flush(ctx)
            info = vk.VkDescriptorSetAllocateInfo(descriptorPool=ctx.descriptor_pool,
                                                  descriptorSetCount=1,
                                                  pSetLayouts=[kernel.set_layout])
            try:
                dset = vk.vkAllocateDescriptorSets(ctx.device, info)[0]
            except vk.VkError:  # the pool ran out of descriptors: run what is queued
                self._flush(ctx)
                dset = vk.vkAllocateDescriptorSets(ctx.device, info)[0]
            ctx.sets_used = ctx.sets_used + 1
            if buffers:
                infos = []
                for p in buffers:
                    b = self.buffer(p.handle, dev)
                    infos.append(vk.VkDescriptorBufferInfo(buffer=b.buffer, offset=p.offset,
                                                           range=b.size - p.offset))
                writes = [vk.VkWriteDescriptorSet(
                    dstSet=dset, dstBinding=i, descriptorCount=1,
                    descriptorType=vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, pBufferInfo=[info])
                    for i, info in enumerate(infos)]
                vk.vkUpdateDescriptorSets(ctx.device, len(writes), writes, 0, None)
            cmd = self._recording(ctx)
            vk.vkCmdBindPipeline(cmd, vk.VK_PIPELINE_BIND_POINT_COMPUTE, pipeline)
            vk.vkCmdBindDescriptorSets(cmd, vk.VK_PIPELINE_BIND_POINT_COMPUTE, kernel.layout, 0,
                                       1, [dset], 0, None)
            if push:
                vk.vkCmdPushConstants(cmd, kernel.layout, vk.VK_SHADER_STAGE_COMPUTE_BIT, 0,
                                      len(push), vk.ffi.from_buffer(push))
            vk.vkCmdDispatch(cmd, *grid)
            self._barrier(ctx, cmd)


def device_target(index: int = 0) -> str:
    """A ``vulkan`` target string with the limits of device ``vulkan(index)``: its workgroup
    size and shared memory, and its subgroup size as ``-thread_warp_size`` where it has
    subgroup shuffles (reductions then shuffle within subgroups).  On devices whose
    subgroup size varies between pipelines (some Intel GPUs) keep ``-thread_warp_size=1``."""
    vk = _vk()
    api = device_api()
    dev = Device(DEVICE_TYPE, index)
    ctx = api.context(dev)
    lim = ctx.limits
    threads = min(lim["maxComputeWorkGroupInvocations"], 1024)
    dims = ",".join(str(min(d, threads)) for d in lim["maxComputeWorkGroupSize"])
    parts = ["vulkan", f"-max_num_threads={threads}", f"-max_thread_dims={dims}",
             f"-max_shared_memory_per_block={lim['maxComputeSharedMemorySize']}"]
    ops = vk.VK_SUBGROUP_FEATURE_SHUFFLE_BIT | vk.VK_SUBGROUP_FEATURE_SHUFFLE_RELATIVE_BIT
    if ctx.subgroup_ops & ops == ops and ctx.subgroup_size > 1:
        parts.append(f"-thread_warp_size={ctx.subgroup_size}")
    return " ".join(parts)


_API: list[VulkanDeviceAPI] = []
_API_LOCK = threading.Lock()


def device_api() -> VulkanDeviceAPI:
    """The process-wide Vulkan device API (what ``tvm_device_api(7)`` returns)."""
    with _API_LOCK:
        if not _API:
            _API.append(VulkanDeviceAPI())
        return _API[0]


def vulkan_available() -> bool:
    """Whether the vulkan bindings are installed and some Vulkan device exists."""
    try:
        return bool(device_api().contexts())
    except DeviceUnavailableError:
        return False


@dataclass
class _Kernel:
    """A kernel's layouts and pipelines on one device."""

    module: Any
    set_layout: Any
    layout: Any
    pipelines: dict = field(default_factory=dict)


def _release_kernels(objects: dict[tuple[int, str], _Kernel]) -> None:
    """Destroy the pipelines, layouts and shader modules of a module's kernels."""
    if not objects or not _API:
        return
    try:
        vk = _vk()
        api = _API[0]
        for (index, _), k in list(objects.items()):
            ctx = api.contexts()[index]
            with ctx.lock:
                api._flush(ctx)
                for p in k.pipelines.values():
                    vk.vkDestroyPipeline(ctx.device, p, None)
                vk.vkDestroyPipelineLayout(ctx.device, k.layout, None)
                vk.vkDestroyDescriptorSetLayout(ctx.device, k.set_layout, None)
                vk.vkDestroyShaderModule(ctx.device, k.module, None)
        objects.clear()
    except Exception:  # noqa: BLE001 - at interpreter exit the bindings may be gone
        pass


class VulkanModule(DeviceModule):
    """SPIR-V kernels (``kernels[i]["spirv"]``) plus their host functions; ``source`` is
    the GLSL they were compiled from."""

    type_key = FORMAT
    device_type = DEVICE_TYPE
    device_name = "vulkan"
    file_suffix = FILE_SUFFIX

    def __init__(self, payload: dict[str, Any]) -> None:
        super().__init__(payload)
        self._spirv: dict[str, bytes] = {}
        self._layouts = {}
        for name, k in self.kernels.items():
            try:
                self._spirv[name] = base64.b64decode(k["spirv"], validate=True)
                self._layouts[name] = kernel_layout(kernel_params(k), name)
            except (KeyError, TypeError, ValueError, LayoutError) as err:
                raise ModuleLoadError(f"a vulkan module needs each kernel's SPIR-V and a "
                                      f"valid parameter list: kernel {name!r}: {err}") from None
            if len(self._spirv[name]) % 4 or self._layouts[name].num_buffers > _MAX_BINDINGS:
                raise ModuleLoadError(f"vulkan module: kernel {name!r} has malformed SPIR-V "
                                      "or too many buffers")
        self._objects: dict[tuple[int, str], _Kernel] = {}
        self._lock = threading.Lock()
        # the pipelines die with the module (after the work that uses them)
        weakref.finalize(self, _release_kernels, self._objects)

    def _kernel(self, dev: Device, name: str, ctx: _Context) -> _Kernel:
        key = (dev.index, name)
        with self._lock:
            k = self._objects.get(key)
            if k is not None:
                return k
            missing = [f for f in self.kernels[name].get("features", []) if f not in
                       ctx.features and f != "subgroup_shuffle"]
            if missing:
                raise KernelError(f"vulkan: kernel {name} needs the device features "
                                  f"{', '.join(missing)}, which {ctx.name} does not have "
                                  "(e.g. float16 needs shaderFloat16); compute in float32")
            vk = _vk()
            width = self.kernels[name].get("subgroup_size")
            if width is not None:
                ops = vk.VK_SUBGROUP_FEATURE_SHUFFLE_BIT | vk.VK_SUBGROUP_FEATURE_SHUFFLE_RELATIVE_BIT
                if ctx.subgroup_ops & ops != ops or ctx.subgroup_size != width:
                    raise KernelError(f"vulkan: kernel {name} reduces with subgroup shuffles "
                                      f"over {width} lanes, but {ctx.name} has subgroups of "
                                      f"{ctx.subgroup_size} lanes"
                                      + ("" if ctx.subgroup_ops & ops == ops else
                                         " without shuffles")
                                      + f"; build with -thread_warp_size={ctx.subgroup_size} "
                                      "(or 1: a shared-memory tree)")
            code = self._spirv[name]
            shader = vk.vkCreateShaderModule(ctx.device, vk.VkShaderModuleCreateInfo(
                codeSize=len(code), pCode=code), None)
            lay = self._layouts[name]
            bindings = [vk.VkDescriptorSetLayoutBinding(
                binding=i, descriptorType=vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                descriptorCount=1, stageFlags=vk.VK_SHADER_STAGE_COMPUTE_BIT)
                for i in range(lay.num_buffers)]
            set_layout = vk.vkCreateDescriptorSetLayout(ctx.device, vk.VkDescriptorSetLayoutCreateInfo(
                bindingCount=len(bindings), pBindings=bindings or None), None)
            ranges = [vk.VkPushConstantRange(stageFlags=vk.VK_SHADER_STAGE_COMPUTE_BIT,
                                             offset=0, size=lay.push_size)] if lay.push_size else []
            layout = vk.vkCreatePipelineLayout(ctx.device, vk.VkPipelineLayoutCreateInfo(
                setLayoutCount=1, pSetLayouts=[set_layout], pushConstantRangeCount=len(ranges),
                pPushConstantRanges=ranges or None), None)
            k = _Kernel(shader, set_layout, layout)
            self._objects[key] = k
            return k

    def _pipeline(self, ctx: _Context, k: _Kernel, block: tuple[int, int, int]) -> Any:
        p = k.pipelines.get(block)
        if p is None:
            vk = _vk()
            entries = [vk.VkSpecializationMapEntry(constantID=i, offset=4 * i, size=4)
                       for i in range(3)]
            data = struct.pack("<3I", *block)
            spec = vk.VkSpecializationInfo(mapEntryCount=3, pMapEntries=entries,
                                           dataSize=len(data), pData=vk.ffi.from_buffer(data))
            stage = vk.VkPipelineShaderStageCreateInfo(
                stage=vk.VK_SHADER_STAGE_COMPUTE_BIT, module=k.module, pName="main",
                pSpecializationInfo=spec)
            p = vk.vkCreateComputePipelines(ctx.device, None, 1, [vk.VkComputePipelineCreateInfo(
                stage=stage, layout=k.layout)], None)[0]
            k.pipelines[block] = p
        return p

    def launch(self, dev: Device, kernel: str, args: list[Any], grid: tuple[int, int, int],
               block: tuple[int, int, int]) -> None:
        api = device_api()
        ctx = api.context(dev)
        lim = ctx.limits
        for axis in range(3):
            if grid[axis] > lim["maxComputeWorkGroupCount"][axis] or \
                    block[axis] > lim["maxComputeWorkGroupSize"][axis]:
                raise KernelError(f"vulkan: kernel {kernel} launches {grid} workgroups of "
                                  f"{block} threads; {ctx.name} allows at most "
                                  f"{lim['maxComputeWorkGroupCount']} "
                                  f"workgroups of {lim['maxComputeWorkGroupSize']}")
        if block[0] * block[1] * block[2] > lim["maxComputeWorkGroupInvocations"]:
            raise KernelError(f"vulkan: kernel {kernel} uses {block[0] * block[1] * block[2]} "
                              f"threads per workgroup; {ctx.name} allows "
                              f"{lim['maxComputeWorkGroupInvocations']} (build with "
                              "-max_num_threads)")
        meta = self.kernels[kernel]
        lay = self._layouts[kernel]
        push = bytearray(lay.push_size)
        buffers: list[DevicePtr] = []
        align = lim["minStorageBufferOffsetAlignment"]
        for p, off, value in zip(kernel_params(meta), lay.push, args):
            if p["kind"] == "handle":
                if not isinstance(value, DevicePtr):
                    raise KernelError(f"vulkan: kernel {kernel} parameter {p['name']} expects "
                                      f"device memory, got {value!r}")
                if value.offset % align:
                    raise KernelError(f"vulkan: kernel {kernel} parameter {p['name']}: a "
                                      f"tensor at byte offset {value.offset} (not a multiple "
                                      f"of {align}); copy the view to a tensor of its own")
                buffers.append(value)
            else:
                struct.pack_into("<" + _PACK[p["dtype"]], push, off,
                                 np.dtype(p["dtype"]).type(value).item())
        k = self._kernel(dev, kernel, ctx)
        with ctx.lock:
            pipeline = self._pipeline(ctx, k, tuple(int(b) for b in block))
        api.dispatch(dev, k, pipeline, buffers, bytes(push), grid)


def load_module(path: str) -> VulkanModule:
    """Load an exported ``.vkmod`` file (the ``tvm_runtime_module_loader`` for ``vkmod``)."""
    return VulkanModule(load_device_module_payload(path, FORMAT))
