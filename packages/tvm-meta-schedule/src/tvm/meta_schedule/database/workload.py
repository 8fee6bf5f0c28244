"""How a kernel is identified: the normalized module, its structural hash, its TVMScript."""

from __future__ import annotations

from typing import Any

__all__ = ["normalize_mod", "shash_of", "mod_from_tvmscript", "mod_to_tvmscript"]

#: attributes that name a kernel without changing what it computes; two fused kernels that
#: differ only in them are one workload (``source_layers``: the model layers it came from,
#: written by tvm-relax's fusion, so one record serves the same kernel in every model)
_NAMING_ATTRS = ("global_symbol", "source_layers")


def normalize_mod(mod: Any) -> Any:
    """``mod`` (a PrimFunc, or an IRModule with one PrimFunc or a ``main`` one) as an IRModule
    whose ``main`` is the kernel without its naming attributes, and not marked scheduled."""
    from tvm.ir.module import IRModule
    from tvm.tir.function import PrimFunc
    from tvm.tir.schedule.rules import SCHEDULED_ATTR

    func = mod
    if isinstance(mod, IRModule):
        prims = [(gv.name_hint, f) for gv, f in mod.items() if isinstance(f, PrimFunc)]
        main = [f for name, f in prims if name == "main"]
        if main:
            func = main[0]
        elif len(prims) == 1:
            func = prims[0][1]
        else:
            raise ValueError(f"a tuning workload is one PrimFunc; the module has "
                             f"{len(prims)} PrimFuncs and none is called 'main'")
    if not isinstance(func, PrimFunc):
        raise TypeError(f"a tuning workload is a tir.PrimFunc or an IRModule holding one, got "
                        f"{type(mod).__name__}")
    drop = [k for k in (*_NAMING_ATTRS, SCHEDULED_ATTR) if k in func.attrs]
    if drop:
        func = func.with_fields(attrs={k: v for k, v in func.attrs.items() if k not in drop})
    return IRModule({"main": func})


def shash_of(mod: Any) -> str:
    """The structural hash of a normalized module as 16 hex digits."""
    from tvm.ffi import structural_hash

    return f"{structural_hash(mod) & 0xFFFFFFFFFFFFFFFF:016x}"


def mod_to_tvmscript(mod: Any) -> str:
    return mod.script()


def mod_from_tvmscript(text: str) -> Any:
    """Parse TVMScript text (data: the parser never runs Python of its own) as an IRModule."""
    from tvm.ir.module import IRModule
    from tvm.script.parser_core.entry import from_source

    import tvm.script.tir  # noqa: F401  (registers @T.prim_func with the parser)

    result = from_source(text)
    if not isinstance(result, IRModule):
        raise ValueError(f"the workload text is a {type(result).__name__}, not an IRModule")
    return result
