"""``BlockBuilder.emit_te``: from Relax values to te placeholders, and back to ``call_tir``."""

from __future__ import annotations

from typing import Any, Callable, Optional

from tvm import te
from tvm.tir.expr import PrimExpr, Var as TirVar
from tvm.tir.stmt_functor import free_vars

from .errors import StructInfoError
from .expr import Expr, Tuple
from .op.call import call_tir
from .struct_info import (
    PrimStructInfo, ShapeStructInfo, TensorStructInfo, TupleStructInfo, to_shape_value,
)

__all__ = ["build_te_call"]


class _Converter:
    """Replaces Relax tensors by placeholders (remembering them in order)."""

    def __init__(self, who: str):
        self.who = who
        self.inputs: list[Any] = []          # te placeholders, parameter order
        self.relax_args: list[Expr] = []     # the Relax values they stand for
        self.scalar_vars: list[TirVar] = []  # tir vars in PrimValue and shape arguments
        self._seen: dict[int, Any] = {}

    def convert(self, value: Any) -> Any:
        if isinstance(value, Expr):
            return self._convert_expr(value)
        if isinstance(value, list):
            return [self.convert(v) for v in value]
        if isinstance(value, tuple):
            return tuple(self.convert(v) for v in value)
        if isinstance(value, dict):
            return {k: self.convert(v) for k, v in value.items()}
        return value

    def _convert_expr(self, expr: Expr) -> Any:
        if id(expr) in self._seen:
            return self._seen[id(expr)]
        sinfo = getattr(expr, "struct_info_", None)
        if isinstance(expr, Tuple) or isinstance(sinfo, TupleStructInfo):
            if not isinstance(expr, Tuple):
                raise StructInfoError(
                    f"{self.who}: a tuple-valued argument must be a Tuple literal of tensors"
                )
            out = [self.convert(f) for f in expr.fields]
        elif isinstance(sinfo, TensorStructInfo):
            values = sinfo.shape_values
            if values is None:
                raise StructInfoError(
                    f"{self.who}: tensor argument {len(self.inputs)} has no known shape "
                    "(match_cast it to a shape with symbolic dimensions first)"
                )
            if sinfo.is_unknown_dtype:
                raise StructInfoError(f"{self.who}: tensor argument {len(self.inputs)} has no dtype")
            name = getattr(expr, "name_hint", "") or f"arg{len(self.inputs)}"
            out = te.placeholder(values, sinfo.dtype, name)
            self.inputs.append(out)
            self.relax_args.append(expr)
        elif isinstance(sinfo, PrimStructInfo):
            value = getattr(expr, "value", None)
            if not isinstance(value, PrimExpr):
                value = sinfo.value
            if value is None:
                raise StructInfoError(f"{self.who}: a scalar argument needs a known value")
            out = value
            self._note_vars([value])
        elif isinstance(sinfo, ShapeStructInfo):
            if sinfo.values is None:
                raise StructInfoError(f"{self.who}: a shape argument needs known values")
            out = list(sinfo.values)
            self._note_vars(out)
        else:
            raise StructInfoError(
                f"{self.who}: cannot pass a value of {type(sinfo).__name__} to a te function"
            )
        self._seen[id(expr)] = out
        return out

    def _note_vars(self, values: list) -> None:
        for value in values:
            for v in free_vars(value):
                if all(v is not w for w in self.scalar_vars):
                    self.scalar_vars.append(v)


def _collect_tensors(out: Any, who: str) -> list[Any]:
    items = list(out) if isinstance(out, (list, tuple)) else [out]
    for i, t in enumerate(items):
        if not isinstance(t, te.Tensor):
            raise TypeError(f"{who}: the te function must return te tensors, output {i} is {t!r}")
    return items


def _own_symbolic_vars(func: Any) -> Any:
    """``func`` with fresh copies of the symbolic variables it shares with the Relax
    function (buffer shapes, scalar parameters): functions of a module never share
    variables, so a module prints and parses back to a structurally equal one."""
    from tvm.tir.stmt_functor import substitute

    shared: dict[int, TirVar] = {}
    for buf in func.buffer_map.values():
        for dim in (*buf.shape, *buf.strides):
            for v in free_vars(dim):
                shared.setdefault(id(v), v)
    for p in func.params:
        if p not in func.buffer_map:
            shared.setdefault(id(p), p)
    return substitute(func, {v: type(v)(v.name, v.dtype) for v in shared.values()})


def build_te_call(bb: Any, te_func: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
    """The ``call_tir`` Call computing ``te_func(*args, **kwargs)``; adds its PrimFunc to ``bb``."""
    name_hint: Optional[str] = kwargs.pop("primfunc_name_hint", None)
    prim_attrs: Optional[dict] = kwargs.pop("primfunc_attrs", None)
    who = f"emit_te({getattr(te_func, '__name__', 'te_func')})"
    conv = _Converter(who)
    te_args = conv.convert(list(args))
    te_kwargs = conv.convert(kwargs)
    outs = _collect_tensors(te_func(*te_args, **te_kwargs), who)
    # a variable that is some input's dimension is bound by that buffer; any other one
    # (only inside a compound input dimension such as ``n * 4``, only in an output shape,
    # or in the value of a scalar or shape argument) is passed to the PrimFunc as a scalar
    bound = {id(d) for t in conv.inputs for d in t.shape if isinstance(d, TirVar)}
    extra: dict[int, TirVar] = {}
    for t in (*conv.inputs, *outs):
        for dim in t.shape:
            for v in free_vars(dim):
                if id(v) not in bound:
                    extra.setdefault(id(v), v)
    for v in conv.scalar_vars:
        if id(v) not in bound:
            extra.setdefault(id(v), v)
    tir_vars = list(extra.values())
    from tvm.te import create_prim_func

    func = create_prim_func([*conv.inputs, *outs, *tir_vars])
    func = _own_symbolic_vars(func).without_attr("global_symbol")
    if prim_attrs:
        func = func.with_attrs(prim_attrs)
    name = name_hint or getattr(te_func, "__name__", None) or "te_func"
    if name == "<lambda>":
        name = outs[0].op.name if hasattr(outs[0].op, "name") else "te_func"
    gv = bb.add_func(func, name)
    out_sinfo = [
        TensorStructInfo([to_shape_value(d, who) for d in t.shape], t.dtype) for t in outs
    ]
    return call_tir(gv, conv.relax_args, out_sinfo, tir_vars or None)
