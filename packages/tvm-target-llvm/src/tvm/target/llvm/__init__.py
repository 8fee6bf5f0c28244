"""tvm.target.llvm: CPU code generation with LLVM (through llvmlite).

Lowered TIR (packed by ``tvm.tir.transform.MakePackedAPI``) becomes LLVM IR
(:class:`CodeGenLLVM`), is optimised for the target CPU and JIT-compiled
(:class:`LLVMModule`), or exported as a shared library that ``tvm.runtime.load_module``
reads back without LLVM.
"""

from .build import build, codegen_ir
from .codegen import CodeGenLLVM
from .host_cpu import host_cpu_features, host_cpu_name, host_has_feature, host_target_string
from .llvm_target import LLVMTargetOptions
from .module import LLVMModule

__all__ = [
    "build", "codegen_ir", "CodeGenLLVM", "LLVMModule", "LLVMTargetOptions",
    "host_cpu_name", "host_cpu_features", "host_has_feature", "host_target_string",
]
