"""tvm.target.cuda: the ``cuda`` target — TIR kernels printed as CUDA C, compiled to PTX
with nvcc, run through pycuda.

::

    rt_mod = tvm.tir.build(func, target="cuda -arch=sm_90")   # default GPU schedule if needed
    print(rt_mod.get_source())          # CUDA C;  rt_mod.get_source("ptx"): the PTX
    dev = tvm.runtime.cuda(0)
    rt_mod["add"](tvm.runtime.tensor(a, device=dev), ...)     # needs a GPU and pycuda
    rt_mod.export_library("add.cumod")  # loads with tvm-runtime + this package

Compile side: :mod:`.codegen` (:class:`CUDAPrinter`), :mod:`.compiler` (nvcc, PTX cache),
:mod:`.build`.  Run side (no compiler imports): :mod:`.runtime`.  Names load lazily.
"""

from __future__ import annotations

from tvm.ffi.lazy import lazy_exports

_EXPORTS = {
    "build": ".build",
    "CUDAPrinter": ".codegen",
    "generate_source": ".codegen",
    "compile_ptx": ".compiler",
    "find_nvcc": ".compiler",
    "NVCCError": ".compiler",
    "NVCCNotFoundError": ".compiler",
    "nvrtc_available": ".nvrtc",
    "NVRTCError": ".nvrtc",
    "CUDAModule": ".runtime",
    "CUDADeviceAPI": ".runtime",
    "device_api": ".runtime",
    "load_module": ".runtime",
    "cuda_available": ".runtime",
    "FILE_SUFFIX": ".runtime",
}

__all__ = list(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
