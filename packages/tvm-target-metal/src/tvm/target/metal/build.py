"""``build``: an IRModule after the GPU pipeline (or any PrimFunc) -> :class:`MetalModule`."""

from __future__ import annotations

from typing import Any

from .codegen import generate_device_code_metal
from .runtime import DEVICE_MODULE_VERSION, FORMAT, MetalModule

__all__ = ["build"]


def _as_target(target: Any) -> Any:
    if target is None or isinstance(target, (str, dict)):
        from tvm.ir.target import Target

        from .plugin import ensure_registered

        ensure_registered()
        return Target(target or "metal")
    return target


def build(mod: Any, target: Any = None) -> MetalModule:
    """Generate Metal Shading Language for the kernels of ``mod`` and wrap them with their
    host programs.  A module that has not been through ``tvm.tir.get_gpu_pipeline`` is
    lowered first.  Running the functions needs macOS (see :mod:`.runtime`).
    """
    tgt = _as_target(target)
    code = generate_device_code_metal(mod, tgt)
    payload = {"format": FORMAT, "version": DEVICE_MODULE_VERSION, **code.to_json(),
               "source_format": "metal"}
    return MetalModule(payload)
