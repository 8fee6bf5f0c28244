"""tvm.target.opencl: the ``opencl`` target — TIR kernels printed as OpenCL C, run through
pyopencl.

::

    rt_mod = tvm.tir.build(func, target="opencl")      # default GPU schedule if unscheduled
    dev = tvm.runtime.opencl(0)
    a = tvm.runtime.tensor(np_a, device=dev)
    rt_mod["add"](a, b)
    print(rt_mod.get_source())                         # the OpenCL C kernels
    rt_mod.export_library("add.clmod")                 # loads with tvm-runtime + this package

Compile side: :mod:`.codegen` (:class:`OpenCLPrinter`), :mod:`.build`.  Run side (imports
neither tvm.tir nor tvm.ir): :mod:`.runtime` (device API, :class:`OpenCLModule`, loader).
Names are imported lazily.
"""

from __future__ import annotations

from tvm.ffi.lazy import lazy_exports

_EXPORTS = {
    "build": ".build",
    "OpenCLPrinter": ".codegen",
    "generate_source": ".codegen",
    "OpenCLModule": ".runtime",
    "OpenCLDeviceAPI": ".runtime",
    "device_api": ".runtime",
    "load_module": ".runtime",
    "opencl_available": ".runtime",
    "FILE_SUFFIX": ".runtime",
}

__all__ = list(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
