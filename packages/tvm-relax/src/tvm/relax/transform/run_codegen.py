"""RunCodegen: compile the functions marked ``Codegen`` with their backends.

Every function with attribute ``Codegen`` (made by ``FuseOpsByPattern(...,
annotate_codegen=True)`` or :func:`MergeCompositeFunctions`) is handed, with the others of
its backend, to that backend's codegen (:mod:`tvm.relax.backend`), which returns a runtime
module defining one packed function per ``global_symbol`` (``docs/abi.md``).  Calls of the
function become ``R.call_dps_packed("<global_symbol>", args, out_sinfo)``, the functions
leave the module and the modules are kept in its attribute ``external_mods`` (a tuple),
which ``relax.build`` links into the executable.

A function handed to its backend carries ``constant_params``: the indices of the parameters
that every call passes a constant (a weight), so the backend may prepare them once (e.g.
reorder a weight into the layout its kernel wants) instead of on every call.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

from tvm.ir.base import GlobalVar
from tvm.ir.module import IRModule
from tvm.ir.transform import PassContext, module_pass

from ..expr import Call, Constant, ExternFunc, Function
from ..expr_functor import ExprMutator, ExprVisitor
from ..struct_info import TensorStructInfo, TupleStructInfo
from ._graph_utils import relax_functions

__all__ = ["RunCodegen", "EXTERNAL_MODS"]

#: module attribute holding the runtime modules the backends made
EXTERNAL_MODS = "external_mods"


class _CallRewriter(ExprMutator):
    def __init__(self, mod: IRModule, symbols: dict[str, tuple[str, Any]]):
        super().__init__(mod)
        self.symbols = symbols

    def visit_call_(self, call: Call) -> Any:
        new = super().visit_call_(call)
        op = new.op
        if isinstance(op, GlobalVar) and op.name_hint in self.symbols:
            from ..op import call_dps_packed

            symbol, ret = self.symbols[op.name_hint]
            out = list(ret.fields) if isinstance(ret, TupleStructInfo) else ret
            return call_dps_packed(ExternFunc(symbol), list(new.args), out)
        return new


class _ConstantArguments(ExprVisitor):
    """Per callee name: the argument positions that are constants at every call seen."""

    def __init__(self, names: set[str]) -> None:
        self.names = names
        self.found: dict[str, set[int]] = {}

    def visit_call_(self, call: Call) -> None:
        super().visit_call_(call)
        if isinstance(call.op, GlobalVar) and call.op.name_hint in self.names:
            here = {k for k, a in enumerate(call.args) if isinstance(a, Constant)}
            name = call.op.name_hint
            self.found[name] = self.found[name] & here if name in self.found else here


def _constant_params(mod: IRModule, names: set[str]) -> dict[str, tuple[int, ...]]:
    visitor = _ConstantArguments(names)
    for _, func in relax_functions(mod):
        visitor.visit_expr(func)
    return {n: tuple(sorted(k)) for n, k in visitor.found.items() if k}


def RunCodegen(  # noqa: N802 - TVM's pass name
    target_options: Optional[dict[str, Any]] = None,
    entry_functions: Optional[Sequence[str]] = None,
    report: Any = None,
) -> Any:
    """The external code generation pass (see the module docstring); ``target_options``
    maps a backend name to keyword options for its codegen."""
    options = dict(target_options or {})

    @module_pass(opt_level=0, name="RunCodegen")
    def run_codegen(mod: IRModule, ctx: PassContext) -> IRModule:
        from ..backend.registry import get_backend

        by_backend: dict[str, list[tuple[str, Function]]] = {}
        symbols: dict[str, tuple[str, Any]] = {}
        marked = {gv.name_hint for gv, f in mod.items()
                  if isinstance(f, Function) and f.attrs.get("Codegen")}
        constants = _constant_params(mod, marked) if marked else {}
        for gv, func in list(mod.items()):
            if not isinstance(func, Function) or not func.attrs.get("Codegen"):
                continue
            if gv.name_hint in constants:
                func = func.with_attr("constant_params", constants[gv.name_hint])
            backend = str(func.attrs["Codegen"])
            symbol = str(func.attrs.get("global_symbol") or gv.name_hint)
            ret = func.ret_struct_info
            fields = ret.fields if isinstance(ret, TupleStructInfo) else [ret]
            if not all(isinstance(f, TensorStructInfo) for f in fields):
                raise TypeError(f"RunCodegen: {gv.name_hint} ({backend}) must return tensors "
                                f"(or a tuple of tensors) to be called in destination-passing "
                                f"style, it returns {ret}")
            by_backend.setdefault(backend, []).append((symbol, func))
            symbols[gv.name_hint] = (symbol, ret)
        if not by_backend:
            return mod
        modules = list(mod.get_attr(EXTERNAL_MODS) or ())
        for name, funcs in sorted(by_backend.items()):
            backend = get_backend(name)
            if backend.unavailable is not None:
                raise RuntimeError(f"RunCodegen: backend {name!r} cannot compile here: "
                                   f"{backend.unavailable}")
            try:
                module = backend.codegen(funcs, **options.get(name, {}))
            except Exception as err:
                err.add_note(f"RunCodegen: in the codegen of backend {name!r} "
                             f"({backend.package or 'in-process'}) for "
                             f"{', '.join(s for s, _ in funcs)}")
                raise
            missing = [s for s, _ in funcs if module.get_function(s, allow_missing=True) is None]
            if missing:
                raise RuntimeError(f"RunCodegen: backend {name!r} returned a module without "
                                   f"the function(s) {', '.join(missing)}")
            modules.append(module)
        rewriter = _CallRewriter(mod, symbols)
        updates = {}
        for gv, func in relax_functions(mod):
            new = rewriter.visit_expr(func)
            if new is not func:
                updates[gv] = new
        out = mod.with_functions(updates) if updates else mod
        for name in symbols:
            out = out.without_function(name)
        return out.with_attr(EXTERNAL_MODS, tuple(modules))

    return run_codegen
