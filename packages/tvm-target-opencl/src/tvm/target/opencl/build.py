"""``build``: an IRModule after the GPU pipeline (or any PrimFunc) -> :class:`OpenCLModule`."""

from __future__ import annotations

from typing import Any

from .codegen import generate_device_code_opencl
from .runtime import DEVICE_MODULE_VERSION, FORMAT, OpenCLModule

__all__ = ["build"]


def _as_target(target: Any) -> Any:
    if target is None or isinstance(target, (str, dict)):
        from tvm.ir.target import Target

        from .plugin import ensure_registered

        ensure_registered()
        return Target(target or "opencl")
    return target


def build(mod: Any, target: Any = None) -> OpenCLModule:
    """Generate OpenCL C for the kernels of ``mod`` and wrap them with their host programs.

    A module that has not been through ``tvm.tir.get_gpu_pipeline`` is lowered first.  The
    kernels are compiled by the OpenCL driver on first use (per device).
    """
    tgt = _as_target(target)
    code = generate_device_code_opencl(mod, tgt)
    payload = {"format": FORMAT, "version": DEVICE_MODULE_VERSION, **code.to_json(),
               "source_format": "cl"}
    return OpenCLModule(payload)
