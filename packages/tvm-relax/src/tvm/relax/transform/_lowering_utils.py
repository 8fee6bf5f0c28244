"""Helpers shared by FuseOps, FuseTIR and the VM lowering passes."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Optional

from tvm.ir.module import IRModule

from ..expr import (
    Call,
    Constant,
    Expr,
    Function,
    Tuple,
    TupleGetItem,
    Var,
)
from ..expr_functor import ExprMutator

__all__ = [
    "value_inputs",
    "substitute_vars",
    "is_primitive",
    "SOURCE_LAYERS",
    "layer_names",
]

#: function attribute: the model layers (names of the bindings' spans) a kernel computes
SOURCE_LAYERS = "source_layers"


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

    def visit_constant_(self, expr: Any) -> Any:
        # FuseOps turns the constants a group reads into parameters of the grouped function
        return self.var_remap.get(expr, expr)


def substitute_vars(expr: Expr, remap: dict, mod: Optional[IRModule] = None) -> Expr:
    """``expr`` with variables (and constants, by identity) replaced by ``remap``
    (StructInfo inferred again)."""
    if not remap:
        return expr
    return _Substituter(remap, mod).visit_expr(expr)


def is_scalar_constant(value: Any) -> bool:
    """A constant tensor of one element (``R.const(0.5)``, a ``[1, 1]`` bias): FuseOps keeps
    it inside the grouped function and FuseTIR writes its value into the fused kernel."""
    if not isinstance(value, Constant):
        return False
    return value.data.size == 1 and value.data.dtype.kind in "biuf"


def is_primitive(func: Any) -> bool:
    return isinstance(func, Function) and bool(func.attrs and func.attrs.get("Primitive"))



def layer_names(bindings: Iterable[Any], into: Optional[list[str]] = None) -> list[str]:
    """The distinct layer names of ``bindings`` in order (appended to ``into``): the
    ``name`` of each binding's span, else of its value's (a call's) span; unnamed spans
    (TVMScript text positions) name no layer."""
    names = [] if into is None else into
    seen = set(names)
    for b in bindings:
        span = b.span if b.span is not None and b.span.name else getattr(b.value, "span", None)
        name = span.name if span is not None else ""
        if name and name not in seen:
            seen.add(name)
            names.append(name)
    return names
