"""tvm.target.metal: the ``metal`` target — TIR kernels printed as Metal Shading Language.

::

    rt_mod = tvm.tir.build(func, target="metal")     # default GPU schedule if needed
    print(rt_mod.get_source())                       # the MSL kernels
    rt_mod.export_library("add.mtlmod")              # source + host programs, one file

Running Metal kernels needs macOS and an Apple GPU: on other systems the ``metal`` device
API reports the device as absent and every device operation raises
:class:`~tvm.runtime.DeviceUnavailableError` saying so.  Compile side: :mod:`.codegen`
(:class:`MetalPrinter`), :mod:`.build`; run side: :mod:`.runtime`.  Names load lazily.
"""

from __future__ import annotations

from tvm.ffi.lazy import lazy_exports

_EXPORTS = {
    "build": ".build",
    "MetalPrinter": ".codegen",
    "generate_source": ".codegen",
    "MetalModule": ".runtime",
    "MetalDeviceAPI": ".runtime",
    "device_api": ".runtime",
    "load_module": ".runtime",
    "FILE_SUFFIX": ".runtime",
}

__all__ = list(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
