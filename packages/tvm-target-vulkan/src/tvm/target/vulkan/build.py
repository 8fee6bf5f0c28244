"""``build``: an IRModule after the GPU pipeline (or any PrimFunc) -> :class:`VulkanModule`."""

from __future__ import annotations

import base64
from typing import Any

from .codegen import generate_device_code_vulkan
from .runtime import DEVICE_MODULE_VERSION, FORMAT, VulkanModule
from .spirv import compile_glsl

__all__ = ["build"]


def _as_target(target: Any) -> Any:
    if target is None or isinstance(target, (str, dict)):
        from tvm.ir.target import Target

        from .plugin import ensure_registered

        ensure_registered()
        return Target(target or "vulkan")
    return target


def build(mod: Any, target: Any = None) -> VulkanModule:
    """Generate a GLSL compute shader per kernel of ``mod``, compile each to SPIR-V and wrap
    them with their host programs.

    A module that has not been through ``tvm.tir.get_gpu_pipeline`` is lowered first.  The
    module stores the SPIR-V (``kernels[i]["spirv"]``, base64) and the GLSL (``source``).
    """
    tgt = _as_target(target)
    code, printer = generate_device_code_vulkan(mod, tgt)
    for k in code.kernels:
        spirv = compile_glsl(printer.kernel_source(k["name"]), k["name"])
        k["spirv"] = base64.b64encode(spirv).decode("ascii")
    payload = {"format": FORMAT, "version": DEVICE_MODULE_VERSION, **code.to_json(),
               "source_format": "glsl"}
    return VulkanModule(payload)
