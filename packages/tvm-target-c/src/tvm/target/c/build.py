"""``build``: an IRModule of lowered (packed) PrimFuncs -> :class:`CModule`."""

from __future__ import annotations

from typing import Any, Optional

from .codegen import generate_source
from .compiler import CompilerOptions, compile_source
from .module import CModule

__all__ = ["build"]


def _as_target(target: Any) -> Any:
    if target is None or isinstance(target, (str, dict)):
        from tvm.ir.target import Target

        from .plugin import ensure_registered

        ensure_registered()
        return Target(target or "c")
    return target


def build(mod: Any, target: Any = None, options: Optional[CompilerOptions] = None) -> CModule:
    """Generate C for ``mod`` (an IRModule or PrimFunc), compile it with the system C
    compiler (through the kernel cache) and load it.

    PrimFuncs that are not packed yet go through MakePackedAPI first.  ``options`` overrides
    the compiler and flags the target implies.
    """
    tgt = _as_target(target)
    num_cores = tgt.get_attr("num-cores") if hasattr(tgt, "get_attr") else None
    source = generate_source(mod, tgt, num_tasks=num_cores or 0)
    options = options or CompilerOptions.from_target(tgt)
    return CModule(compile_source(source, options), source)
