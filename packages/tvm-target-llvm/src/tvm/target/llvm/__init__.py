"""tvm.target.llvm: CPU code generation with LLVM (through llvmlite).

Lowered TIR (packed by ``tvm.tir.transform.MakePackedAPI``) becomes LLVM IR
(:class:`CodeGenLLVM`), is optimised for the target CPU and JIT-compiled
(:class:`LLVMModule`), or exported as a shared library that ``tvm.runtime.load_module``
reads back without LLVM.

Names are imported lazily: the plugin host imports this package (for
:mod:`.plugin`) in every process that loads plugins, a deployed one that only runs
exported kernels included, and that must not import the compiler (tvm.ir, tvm.tir).
"""

from __future__ import annotations

from tvm.ffi.lazy import lazy_exports

_EXPORTS = {
    "build": ".build",
    "codegen_ir": ".build",
    "CodeGenLLVM": ".codegen",
    "host_cpu_features": ".host_cpu",
    "host_cpu_name": ".host_cpu",
    "host_has_feature": ".host_cpu",
    "host_target_string": ".host_cpu",
    "LLVMTargetOptions": ".llvm_target",
    "LLVMModule": ".module",
}

__all__ = list(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
