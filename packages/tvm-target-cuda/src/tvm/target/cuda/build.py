"""``build``: an IRModule after the GPU pipeline (or any PrimFunc) -> :class:`CUDAModule`."""

from __future__ import annotations

from typing import Any

from .codegen import generate_device_code_cuda
from .compiler import compile_ptx
from .runtime import DEVICE_MODULE_VERSION, FORMAT, CUDAModule

__all__ = ["build"]


def _as_target(target: Any) -> Any:
    if target is None or isinstance(target, (str, dict)):
        from tvm.ir.target import Target

        from .plugin import ensure_registered

        ensure_registered()
        return Target(target or "cuda")
    return target


def build(mod: Any, target: Any = None) -> CUDAModule:
    """Generate CUDA C for the kernels of ``mod``, compile it to PTX for the target's
    ``-arch`` with nvcc (or NVRTC, ``-compiler=nvrtc``), and wrap it with the host programs.

    A module that has not been through ``tvm.tir.get_gpu_pipeline`` is lowered first.
    Running the result needs pycuda and a GPU; building does not.
    """
    tgt = _as_target(target)
    code = generate_device_code_cuda(mod, tgt)
    arch = tgt.get_attr("arch") or "sm_80"
    ptx = compile_ptx(code.source, arch, tgt.get_attr("nvcc"), tgt.get_attr("nvcc_flags") or (),
                      compiler=tgt.get_attr("compiler"))
    payload = {"format": FORMAT, "version": DEVICE_MODULE_VERSION, **code.to_json(),
               "source_format": "cu", "ptx": ptx, "arch": arch}
    return CUDAModule(payload)
