"""``build``: IRModule of lowered PrimFuncs -> :class:`LLVMModule`.

``tvm.tir.build`` hands over packed functions that went through the llvm kind's lowering
passes (:data:`~.plugin.LOWERING_PASSES`: full register tiles unswitched out of their
guards, their accumulators kept in registers) at the end of its pipeline; code generation
itself rewrites no TIR.  Called directly with functions that are not packed yet (tests,
hand-written lowered TIR), :func:`build` first runs the end of that pipeline on them:
MakePackedAPI and the same passes, under the current PassContext.
"""

from __future__ import annotations

from typing import Any

from tvm.ffi.structural import deep_recursion
from tvm.ir.module import IRModule
from tvm.tir import PrimFunc
from tvm.ir.transform import Sequential

from .codegen import CodeGenLLVM
from .llvm_target import LLVMTargetOptions, compile_jobs, create_target_machine
from .module import LLVMModule
from .plugin import LOWERING_PASSES

__all__ = ["build", "codegen_ir", "codegen_parts", "PART_INSTRUCTIONS"]


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


def _packed(funcs: list[tuple[str, PrimFunc]]) -> list[tuple[str, PrimFunc]]:
    """``funcs`` through the end of tir.build's default pipeline (MakePackedAPI, then the
    llvm lowering passes) when some are not packed yet; as they are otherwise."""
    from tvm.tir.transform.make_packed_api import MakePackedAPI

    if all(f.attrs.get("calling_conv") == "packed" for _, f in funcs):
        return funcs
    mod = IRModule(dict(funcs))
    tail = Sequential([MakePackedAPI(), *(make() for make in LOWERING_PASSES.values())],
                      name="tir.llvm.pack_and_lower")
    return [(gv.name_hint, f) for gv, f in tail(mod).items()]


#: a part of a big module gets functions until it holds this many LLVM instructions
PART_INSTRUCTIONS = 20_000


def _options(target: Any) -> LLVMTargetOptions:
    return target if isinstance(target, LLVMTargetOptions) else \
        LLVMTargetOptions.from_target(target)


def _codegen(opts: LLVMTargetOptions, name: str, define_slots: bool = True) -> CodeGenLLVM:
    tm = create_target_machine(opts)
    return CodeGenLLVM(name, opts.triple, str(tm.target_data), opts.num_cores,
                       protected_slots=opts.is_elf, threading=opts.threading,
                       define_slots=define_slots)


def codegen_ir(mod: Any, target: Any = None, name: str = "tvm_module") -> tuple[str, Any]:
    """LLVM IR text (unoptimised) of ``mod`` as one module, and the resolved target options
    (``target``: an llvm Target, its string, LLVMTargetOptions, or None for the host).

    PrimFuncs that are not packed yet go through MakePackedAPI and the llvm lowering passes
    first (see the module docstring).
    """
    parts, opts = codegen_parts(mod, target, name, split=False)
    return parts[0], opts


def codegen_parts(mod: Any, target: Any = None, name: str = "tvm_module", *,
                  split: bool = True) -> tuple[list[str], LLVMTargetOptions]:
    """LLVM IR texts (unoptimised) of ``mod`` in parts of about :data:`PART_INSTRUCTIONS`
    instructions each (one part unless ``split``), and the resolved target options.

    The parts are compiled separately (in parallel, see :mod:`.object_code`) and loaded or
    linked together.  Part 0 defines the runtime slot globals and the module metadata of
    every function; the others declare the slots they use.
    """
    opts = _options(target)
    parts = [_codegen(opts, name)]
    meta: list[dict[str, Any]] = []
    size = seen = 0
    with deep_recursion():  # a packed function nests a let/assert per argument field
        for fname, func in _packed(_functions(mod)):
            cg = parts[-1]
            if split and size >= PART_INSTRUCTIONS:
                meta += cg.meta_functions
                cg = _codegen(opts, name, define_slots=False)
                parts.append(cg)
                size = seen = 0
            cg.add_function(func, fname)
            if split:  # the function and the ones outlined from it, added after the last
                functions = cg.module.functions
                size += sum(len(b.instructions) for f in functions[seen:] for b in f.blocks)
                seen = len(functions)
    meta += parts[-1].meta_functions if len(parts) > 1 else []
    if len(parts) > 1:
        parts[0].slot_num_threads  # noqa: B018 - defined with the others, for every part
    head = parts[0].finish(opts.target_str, opts.requirements,
                           functions=meta if len(parts) > 1 else None)
    return [str(head), *(str(cg.module) for cg in parts[1:])], opts


def build(mod: Any, target: Any = None, name: str = "tvm_module") -> LLVMModule:
    """Compile lowered PrimFuncs for an llvm target and JIT them (see :class:`LLVMModule`);
    a big module is generated in parts when there are several CPUs to compile them on."""
    parts, opts = codegen_parts(mod, target, name, split=compile_jobs() > 1)
    return LLVMModule(parts, opts, name)
