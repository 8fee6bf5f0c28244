"""``build``: an IRModule after the GPU pipeline (or any PrimFunc) -> :class:`WebGPUModule`."""

from __future__ import annotations

from typing import Any

from .codegen import generate_device_code_webgpu
from .runtime import DEVICE_MODULE_VERSION, FORMAT, WebGPUModule

__all__ = ["build"]


def _as_target(target: Any) -> Any:
    if target is None or isinstance(target, (str, dict)):
        from tvm.ir.target import Target

        from .plugin import ensure_registered

        ensure_registered()
        return Target(target or "webgpu")
    return target


def build(mod: Any, target: Any = None) -> WebGPUModule:
    """Generate a WGSL compute shader per kernel of ``mod`` and wrap them with their host
    programs.

    A module that has not been through ``tvm.tir.get_gpu_pipeline`` is lowered first.  Each
    kernel description holds its shader (``kernels[i]["wgsl"]``), its parameter layout
    (``layout``) and the adapter features it needs (``features``); ``source`` is all of
    them.  WGSL is compiled by the WebGPU implementation when a kernel is first launched.
    """
    tgt = _as_target(target)
    code, _ = generate_device_code_webgpu(mod, tgt)
    payload = {"format": FORMAT, "version": DEVICE_MODULE_VERSION, **code.to_json(),
               "source_format": "wgsl"}
    return WebGPUModule(payload)
