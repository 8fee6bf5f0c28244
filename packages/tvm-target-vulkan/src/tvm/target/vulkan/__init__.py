"""tvm.target.vulkan: the ``vulkan`` target — TIR kernels printed as GLSL compute shaders,
compiled to SPIR-V by glslang (validated by spirv-val) and run through the ``vulkan``
Python bindings.

::

    rt_mod = tvm.tir.build(func, target="vulkan")      # default GPU schedule if unscheduled
    dev = tvm.runtime.vulkan(0)
    a = tvm.runtime.tensor(np_a, device=dev)
    rt_mod["add"](a, b)
    print(rt_mod.get_source())                         # the GLSL shaders
    rt_mod.export_library("add.vkmod")                 # loads with tvm-runtime + this package

Compile side: :mod:`.codegen` (:class:`VulkanPrinter`), :mod:`.spirv`, :mod:`.build`.  Run
side (imports neither tvm.tir nor tvm.ir): :mod:`.runtime` (device API,
:class:`VulkanModule`, loader), :mod:`.layout`.  Names are imported lazily.
"""

from __future__ import annotations

from tvm.ffi.lazy import lazy_exports

_EXPORTS = {
    "build": ".build",
    "VulkanPrinter": ".codegen",
    "generate_source": ".codegen",
    "compile_glsl": ".spirv",
    "VulkanModule": ".runtime",
    "VulkanDeviceAPI": ".runtime",
    "device_api": ".runtime",
    "device_target": ".runtime",
    "load_module": ".runtime",
    "vulkan_available": ".runtime",
    "FILE_SUFFIX": ".runtime",
}

__all__ = list(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
