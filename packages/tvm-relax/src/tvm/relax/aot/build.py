"""``relax.build(..., exec_mode="aot")``: the VM compiler's passes, then a static plan.

The passes, schedules, weight prepacking, lowering and kernels are those of the bytecode
build (so a C program computes the VM's bits); the bytecode of ``main`` is translated into
a :class:`~tvm.relax.aot.plan.Plan` instead of being run by the VM, and the kernels' heap
allocations are bounded (:mod:`.arena`) to be served from the workspace.
"""

from __future__ import annotations

from typing import Any

from tvm.ir.module import IRModule
from tvm.ir.target import Target
from tvm.ir.transform import Pass
from tvm.tir import expr as tir

from ..expr import Function
from ..struct_info import TensorStructInfo
from .package import AOTPackage
from .arena import arena_bytes
from .plan import AOTError, make_plan, place_workspace

__all__ = ["build_aot"]


def _static_params(func: Function) -> list[tuple[str, str, tuple[int, ...]]]:
    """(name, dtype, shape) of each parameter of ``main``; AOTError for any other kind."""
    out = []
    for p in func.params:
        sinfo = p.struct_info
        where = f"AOT (@main): parameter {p.name_hint}"
        if not isinstance(sinfo, TensorStructInfo):
            raise AOTError(f"{where} is a {type(sinfo).__name__}; AOT takes tensor "
                           "parameters only")
        dims = sinfo.shape_values
        if dims is None or any(not isinstance(d, tir.IntImm) for d in dims) or \
                sinfo.is_unknown_dtype:
            shown = "?" if dims is None else ", ".join(
                str(d.value) if isinstance(d, tir.IntImm) else str(d) for d in dims)
            raise AOTError(f"{where} has shape ({shown}) and dtype {sinfo.dtype}; AOT needs "
                           "static shapes and a known dtype (bind symbolic dimensions first)")
        out.append((p.name_hint, sinfo.dtype, tuple(int(d.value) for d in dims)))
    return out


def build_aot(mod: IRModule, tgt: Target, graph: Pass | None,
              external: tuple[Any, ...] = ()) -> AOTPackage:
    """The AOT package of ``mod["main"]`` for ``tgt`` (``relax.build`` checked the rest);
    ``external`` are the modules of external backends (``offload``) whose packed functions
    the program calls: their C goes into the package."""
    from ..vm.build import lower_to_bytecode

    main = mod["main"] if "main" in mod else None
    if not isinstance(main, Function):
        raise AOTError("AOT compiles the Relax function 'main'; the module has none")
    params = _static_params(main)
    mod, result = lower_to_bytecode(mod, tgt, graph)
    fn = next(f for f in result.program["functions"] if f["name"] == "main")
    kernels = set(result.program["kernels"]) if "kernels" in result.program else set()
    external_names = _external_functions(external)
    plan = make_plan(fn, params, result.constants, kernels | set(external_names), "model")
    kernel_lib: Any = None
    if any(c.symbol not in external_names for c in plan.calls):
        from tvm.tir.build import apply_default_schedule
        from tvm.tir.build import build as tir_build

        kernels_mod = apply_default_schedule(result.kernels, tgt)  # as tir.build would
        with tgt:
            arena = {sym: arena_bytes(sym, kernels_mod[sym])
                     for sym in {c.symbol for c in plan.calls} - set(external_names)}
        for call in plan.calls:
            call.arena = arena.get(call.symbol, 0)  # an external function mallocs its own
        kernel_lib = tir_build(kernels_mod, tgt)
        if getattr(kernel_lib, "link_info", None) is None:
            raise AOTError(
                f"AOT needs kernels as object code with the C ABI; the kernel module of "
                f"target {str(tgt)!r} ({type(kernel_lib).__name__}) has none (build for an "
                "llvm target, e.g. 'llvm' or 'llvm -mtriple=aarch64-linux-gnu')")
    place_workspace(plan)
    for lib in (kernel_lib, *external):
        for fmeta in (getattr(lib, "meta", None) or {}).get("functions", []):
            if fmeta.get("symbol") and fmeta["symbol"] != fmeta["name"]:
                plan.link_symbols[fmeta["name"]] = fmeta["symbol"]
    return AOTPackage(plan, kernel_lib, str(tgt), mod, external)


def _external_functions(external: tuple[Any, ...]) -> dict[str, Any]:
    """name -> module of every function of the external modules; AOTError for a module the
    package cannot compile in (it needs the C source a C-emitting backend keeps)."""
    out: dict[str, Any] = {}
    for m in external:
        backend = getattr(m, "external_backend", "?")
        if "c" not in getattr(m, "source_formats", []) or getattr(m, "link_flags", None) is None:
            raise AOTError(f"AOT: the {backend!r} backend's module ({type(m).__name__}) has no "
                           "C source and link flags to compile into the package; build "
                           "without offloading to it")
        for name in m.function_names:
            out[name] = m
    return out
