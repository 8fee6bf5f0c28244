"""Helpers shared by FuseOps, FuseTIR and the VM lowering passes."""

from __future__ import annotations

from typing import Any, Callable, Optional

from tvm.ir.base import GlobalVar
from tvm.ir.module import IRModule

from ..expr import (
    Call,
    Constant,
    Expr,
    Function,
    SeqExpr,
    Tuple,
    TupleGetItem,
    Var,
)
from ..expr_functor import ExprMutator

__all__ = [
    "value_inputs",
    "substitute_vars",
    "relax_functions",
    "is_primitive",
    "update_functions",
]


def value_inputs(value: Any) -> list[Any]:
    """Variables and constants a binding's value reads directly (call arguments, tuple
    fields, the tuple of a TupleGetItem, an aliased variable), in order, without repeats."""
    out: list[Any] = []
    seen: set[int] = set()

    def add(e: Any) -> None:
        if isinstance(e, (Var, Constant)):
            if id(e) not in seen:
                seen.add(id(e))
                out.append(e)
        elif isinstance(e, Tuple):
            for f in e.fields:
                add(f)

    if isinstance(value, Call):
        if isinstance(value.op, Var):
            add(value.op)
        for a in value.args:
            add(a)
    elif isinstance(value, TupleGetItem):
        add(value.tuple_value)
    else:
        add(value)
    return out


class _Substituter(ExprMutator):
    def __init__(self, remap: dict, mod: Optional[IRModule]):
        super().__init__(mod)
        self.var_remap.update(remap)


def substitute_vars(expr: Expr, remap: dict, mod: Optional[IRModule] = None) -> Expr:
    """``expr`` with variables replaced by ``remap`` (StructInfo inferred again)."""
    if not remap:
        return expr
    return _Substituter(remap, mod).visit_expr(expr)


def is_primitive(func: Any) -> bool:
    return isinstance(func, Function) and bool(func.attrs and func.attrs.get("Primitive"))


def relax_functions(
    mod: IRModule, skip: Callable[[Function], bool] = lambda f: False
) -> list[tuple[GlobalVar, Function]]:
    """The Relax functions with bodies of ``mod`` (minus those ``skip`` rejects)."""
    out = []
    for gv, func in mod.items():
        if isinstance(func, Function) and isinstance(func.body, SeqExpr) and not skip(func):
            if func.attrs and (func.attrs.get("Codegen") or func.attrs.get("Composite")):
                continue
            out.append((gv, func))
    return out


def update_functions(mod: IRModule, fn: Callable[[Function, GlobalVar], Function],
                     skip: Callable[[Function], bool] = lambda f: False) -> IRModule:
    """Apply ``fn`` to each Relax function; the same module when nothing changed."""
    updates = {}
    for gv, func in relax_functions(mod, skip):
        new = fn(func, gv)
        if new is not func:
            updates[gv] = new
    return mod.with_functions(updates) if updates else mod
