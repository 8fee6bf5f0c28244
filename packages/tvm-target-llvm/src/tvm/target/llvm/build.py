"""``build``: IRModule of lowered PrimFuncs -> :class:`LLVMModule`.

Before code generation each function goes through MakePackedAPI (when not packed yet) and
:func:`~.unswitch.unswitch_invariant_guards` (full register tiles run unguarded) and
:func:`~.promote.promote_loop_accumulators` (their accumulators live in registers).
"""

from __future__ import annotations

from typing import Any

from tvm.ffi.structural import deep_recursion
from tvm.ir.module import IRModule
from tvm.tir import PrimFunc
from tvm.tir.transform.make_packed_api import make_packed_api

from .codegen import CodeGenLLVM
from .llvm_target import LLVMTargetOptions, create_target_machine
from .module import LLVMModule
from .promote import promote_loop_accumulators
from .unswitch import unswitch_invariant_guards

__all__ = ["build", "codegen_ir"]


def _functions(mod: Any) -> list[tuple[str, PrimFunc]]:
    if isinstance(mod, PrimFunc):
        name = mod.attrs.get("global_symbol") or "main"
        return [(name, mod)]
    if not isinstance(mod, IRModule):
        raise TypeError(f"llvm build expects an IRModule or PrimFunc, got {type(mod).__name__}")
    out = []
    for gv, func in mod.items():
        if not isinstance(func, PrimFunc):
            raise TypeError(
                f"llvm build: function {gv.name_hint!r} is a {type(func).__name__}; only TIR "
                "PrimFuncs can be compiled by the llvm target"
            )
        out.append((gv.name_hint, func))
    return out


def codegen_ir(mod: Any, target: Any = None, name: str = "tvm_module") -> tuple[str, Any]:
    """LLVM IR text (unoptimised) of ``mod`` and the resolved target options.

    PrimFuncs that are not packed yet go through MakePackedAPI first.
    """
    opts = target if isinstance(target, LLVMTargetOptions) else \
        LLVMTargetOptions.from_target(target)
    tm = create_target_machine(opts)
    cg = CodeGenLLVM(name, opts.triple, str(tm.target_data), opts.num_cores,
                     protected_slots=opts.is_elf, threading=opts.threading)
    with deep_recursion():  # a packed function nests a let/assert per argument field
        for fname, func in _functions(mod):
            if func.attrs.get("calling_conv") != "packed":
                func = make_packed_api(func, fname)
            cg.add_function(promote_loop_accumulators(unswitch_invariant_guards(func)), fname)
    return str(cg.finish(opts.target_str)), opts


def build(mod: Any, target: Any = None, name: str = "tvm_module") -> LLVMModule:
    """Compile lowered PrimFuncs for an llvm target and JIT them (see :class:`LLVMModule`)."""
    text, opts = codegen_ir(mod, target, name)
    return LLVMModule(text, opts, name)
