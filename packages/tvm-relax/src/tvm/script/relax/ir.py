"""Values and statements of the ``R`` namespace other than operators and StructInfo.

Expressions: ``R.const``, ``R.shape``, ``R.prim_value``, ``R.str``, ``R.dtype``,
``R.tuple``, ``R.ExternFunc``, calls (``R.call_tir``, ``R.call_dps_packed``,
``R.call_pure_packed``, ``R.call_packed`` and the generic ``R.call_op`` with ``R.attrs``).
Statements the parser recognises: ``with R.dataflow():``, ``R.output(...)``,
``v = R.match_cast(value, sinfo)`` and ``R.func_attr({...})``.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any, Optional, Union

from tvm.ffi import Object, get_object_type
from tvm.ir.base import GlobalVar
from tvm.ir.op import Op
from tvm.relax import op as _op
from tvm.relax.expr import (
    Call,
    Constant,
    DataTypeImm,
    Expr,
    PrimValue,
    ShapeExpr,
    StringImm,
    Tuple,
    as_expr,
    const as _const,
)
from tvm.relax.struct_info import StructInfo

from .sinfo import _prim, as_struct_info

__all__ = [
    "dataflow", "output", "match_cast", "func_attr", "const", "shape", "prim_value", "str",
    "dtype", "tuple", "ExternFunc", "call_tir", "call_dps_packed", "call_pure_packed",
    "call_packed", "call_op", "attrs", "Dataflow", "Output", "MatchCastValue", "FuncAttrs",
]

_str = builtins.str


# -- statements --------------------------------------------------------------------------------
class Dataflow:
    """``with R.dataflow():`` — a dataflow block (only meaningful inside a Relax function)."""

    __slots__ = ()

    def __enter__(self) -> Dataflow:
        raise RuntimeError("R.dataflow() is TVMScript: use it inside an @R.function body")

    def __exit__(self, *exc: Any) -> None:  # pragma: no cover - never entered
        return None


class Output:
    __slots__ = ("vars",)

    def __init__(self, vars: Sequence[Any]):  # noqa: A002
        self.vars = list(vars)


class MatchCastValue:
    __slots__ = ("value", "struct_info")

    def __init__(self, value: Any, struct_info: StructInfo):
        self.value = value
        self.struct_info = struct_info


class FuncAttrs:
    __slots__ = ("attrs",)

    def __init__(self, attrs: dict):
        self.attrs = attrs


def dataflow() -> Dataflow:
    """``with R.dataflow():`` opens a dataflow block; end it with ``R.output(...)``."""
    return Dataflow()


def output(*vars: Any) -> Output:  # noqa: A002
    """``R.output(a, b)``: the variables of a dataflow block visible after it."""
    return Output(vars)


def match_cast(value: Any, struct_info: Any) -> MatchCastValue:
    """``v = R.match_cast(x, R.Tensor((m,), "float32"))``: a checked cast that may define
    new symbolic variables."""
    return MatchCastValue(value, as_struct_info(struct_info, "R.match_cast StructInfo"))


def func_attr(attrs: dict) -> FuncAttrs:
    """``R.func_attr({"global_symbol": "main"})``: attributes of the function."""
    if not isinstance(attrs, dict) or not all(isinstance(k, _str) for k in attrs):
        raise TypeError(f"R.func_attr takes a dict with str keys, got {attrs!r}")
    return FuncAttrs(attrs)


# -- leaf values -----------------------------------------------------------------------------
def const(value: Any, dtype: Optional[_str] = None) -> Constant:
    """A constant tensor: ``R.const(1.5, "float32")``, ``R.const([[1, 2]], "int32")``,
    ``R.const(numpy_array)``."""
    if isinstance(value, Constant):
        return value if dtype is None or value.dtype == dtype else _const(value.data, dtype)
    return _const(value, dtype)


def shape(values: Any) -> ShapeExpr:
    """A shape value: ``R.shape([n, 4])``."""
    if not isinstance(values, (list, tuple)):
        raise TypeError(f"R.shape takes a list of dimensions, got {type(values).__name__}")
    return ShapeExpr([_prim(v, f"R.shape[{i}]") for i, v in enumerate(values)])


def prim_value(value: Any) -> PrimValue:
    """A scalar value: ``R.prim_value(1)`` (int64), ``R.prim_value(T.float32(0.5))``."""
    if isinstance(value, _str):
        value = _prim(value, "R.prim_value")
    return PrimValue(value)


def str(value: _str) -> StringImm:  # noqa: A001 - TVMScript spelling
    """A string constant: ``R.str("global")``."""
    return StringImm(value)


def dtype(value: Any) -> DataTypeImm:
    """A dtype constant: ``R.dtype("float32")``."""
    return DataTypeImm(_str(getattr(value, "dtype", value)))


def tuple(*fields: Any) -> Tuple:  # noqa: A001
    """A tuple value: ``R.tuple(a, b)`` (same as ``(a, b)``; ``R.tuple()`` is empty)."""
    return Tuple([as_expr(f, "R.tuple field") for f in fields])


def ExternFunc(global_symbol: _str, struct_info: Any = None) -> Any:  # noqa: N802
    """A packed function found by name at run time."""
    from tvm.relax.expr import ExternFunc as _ExternFunc

    sinfo = None if struct_info is None else as_struct_info(struct_info, "R.ExternFunc")
    return _ExternFunc(global_symbol, sinfo)


# -- calls -----------------------------------------------------------------------------------
def _sinfo_list(value: Any, what: _str) -> list[StructInfo]:
    if value is None:
        return []
    if isinstance(value, (list, builtins.tuple)):
        return [as_struct_info(v, f"{what}[{i}]") for i, v in enumerate(value)]
    return [as_struct_info(value, what)]


def _out(value: Any, what: _str) -> Any:
    if isinstance(value, (list, builtins.tuple)):
        return [as_struct_info(v, f"{what}[{i}]") for i, v in enumerate(value)]
    return as_struct_info(value, what)


def call_tir(gvar: GlobalVar, args: Any, out_sinfo: Any, tir_vars: Any = None) -> Call:
    """``R.call_tir(cls.func, (x, y), out_sinfo=R.Tensor((n, 4), "float32"))``."""
    if tir_vars is not None and not isinstance(tir_vars, Expr):
        tir_vars = shape(tir_vars)
    return _op.call_tir(gvar, args, _out(out_sinfo, "out_sinfo"), tir_vars)


def call_dps_packed(func: Any, args: Any, out_sinfo: Any) -> Call:
    """``R.call_dps_packed("name", (x,), out_sinfo=...)``."""
    return _op.call_dps_packed(func, args, _out(out_sinfo, "out_sinfo"))


def call_pure_packed(func: Any, *args: Any, sinfo_args: Any = None) -> Call:
    """``R.call_pure_packed("name", x, y, sinfo_args=R.Tensor(...))``."""
    return _op.call_pure_packed(func, *args, sinfo_args=_sinfo_list(sinfo_args, "sinfo_args"))


def call_packed(func: Any, *args: Any, sinfo_args: Any = None) -> Call:
    """``R.call_packed("name", x, sinfo_args=...)``: call a packed function (impure)."""
    if isinstance(func, _str):
        func = ExternFunc(func)
    return Call(func, [as_expr(a, "R.call_packed argument") for a in args], None,
                _sinfo_list(sinfo_args, "sinfo_args"))


def attrs(type_key: _str, **fields: Any) -> Object:
    """An operator attribute object by type key: ``R.attrs("relax.attrs.SoftmaxAttrs", axis=1)``."""
    cls = get_object_type(type_key)
    return cls(**fields)


def call_op(
    op: Union[_str, Op, Expr, GlobalVar],
    *args: Any,
    attrs: Any = None,  # noqa: A002
    sinfo_args: Any = None,
) -> Call:
    """The general call form: ``R.call_op("relax.add", x, y)``, ``R.call_op(cls.f, x,
    sinfo_args=R.Tensor(...))``, for calls no shorter form prints."""
    callee = Op.get(op) if isinstance(op, _str) else op
    return Call(callee, [as_expr(a, "R.call_op argument") for a in args], attrs,
                _sinfo_list(sinfo_args, "sinfo_args"))
