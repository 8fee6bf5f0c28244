"""tvm.target.webgpu: the ``webgpu`` target — TIR kernels printed as WGSL compute shaders,
run through ``wgpu`` (wgpu-py: Vulkan, Metal or D3D12 underneath; lavapipe on a CPU) or in a
browser through the JavaScript loader (``js/tvm_webgpu.js``).

::

    rt_mod = tvm.tir.build(func, target="webgpu")      # default GPU schedule if unscheduled
    dev = tvm.runtime.webgpu(0)
    a = tvm.runtime.tensor(np_a, device=dev)
    rt_mod["add"](a, b)
    print(rt_mod.get_source())                         # the WGSL shaders
    rt_mod.export_library("add.wgpumod")               # loads with tvm-runtime + this package
    export_web(rt_mod, "site/")                        # kernels.json + tvm_webgpu.js

Compile side: :mod:`.codegen` (:class:`WebGPUPrinter`), :mod:`.build`.  Run side (imports
neither tvm.tir nor tvm.ir): :mod:`.runtime` (device API, :class:`WebGPUModule`, loader),
:mod:`.layout`, :mod:`.web` (the browser bundle).  Names are imported lazily.
"""

from __future__ import annotations

from tvm.ffi.lazy import lazy_exports

_EXPORTS = {
    "build": ".build",
    "WebGPUPrinter": ".codegen",
    "generate_source": ".codegen",
    "WebGPUModule": ".runtime",
    "WebGPUDeviceAPI": ".runtime",
    "device_api": ".runtime",
    "device_target": ".runtime",
    "load_module": ".runtime",
    "webgpu_available": ".runtime",
    "FILE_SUFFIX": ".runtime",
    "export_web": ".web",
    "loader_path": ".web",
}

__all__ = list(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
