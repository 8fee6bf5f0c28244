"""Tensor creation: ``zeros``, ``ones``, ``full`` (and ``*_like``), ``arange``, ``eye``,
``tril`` / ``triu``."""

from __future__ import annotations

import math
from typing import Any, Optional, Sequence, Union

from tvm.ffi import register_object
from tvm.tir.expr import FloatImm, IntImm, PrimExpr

from ..expr import Call, Constant, Expr, PrimValue, ShapeExpr, const
from ..struct_info import (
    PrimStructInfo, ShapeStructInfo, StructInfo, TensorStructInfo, canonical_dtype,
)
from ._elementwise import is_float
from ._lower import te_call
from ._utils import out_tensor
from .base import Attrs, arg_sinfo, arg_tensor, make_call, op_error, register_op

__all__ = [
    "zeros", "ones", "full", "zeros_like", "ones_like", "full_like", "arange", "eye", "tril",
    "triu", "InitAttrs", "TriluAttrs",
]

ShapeLike = Union[Expr, Sequence[Any]]


@register_object("relax.attrs.InitAttrs")
class InitAttrs(Attrs):
    """``dtype`` of the created tensor ("void": from the input)."""

    dtype: str = "void"


def _shape_arg(shape: ShapeLike) -> Expr:
    return ShapeExpr(shape) if isinstance(shape, (list, tuple)) else shape


def _fill_arg(value: Any, dtype: Optional[str]) -> Expr:
    if isinstance(value, Expr):
        return value
    if isinstance(value, bool):
        return const(value, dtype or "bool")
    if isinstance(value, int):
        return const(value, dtype or "int64")
    if isinstance(value, float):
        return const(value, dtype or "float32")
    raise TypeError(f"fill_value must be a Relax expression or a Python number, got {value!r}")


def _shape_values(call: Call, index: int) -> tuple[Optional[tuple], int]:
    sinfo = arg_sinfo(call, index)
    if not isinstance(sinfo, ShapeStructInfo):
        raise op_error(call, f"argument {index} must be a shape, got {type(sinfo).__name__}")
    return sinfo.values, sinfo.ndim


def _fill_dtype(call: Call, index: int) -> str:
    sinfo = arg_sinfo(call, index)
    if isinstance(sinfo, PrimStructInfo):
        return sinfo.dtype
    fill = arg_tensor(call, index)
    if fill.ndim not in (-1, 0):
        raise op_error(call, f"fill_value must be a scalar (0-d tensor), got {fill.ndim} dimension(s)")
    return fill.dtype


def _new_tensor(values: Optional[tuple], ndim: int, dtype: str) -> TensorStructInfo:
    return TensorStructInfo(ShapeExpr(values) if values is not None else None, dtype, ndim)


def _creator(name: str, fill: int) -> Any:
    op_name = f"relax.{name}"

    def builder(shape: ShapeLike, dtype: str = "float32") -> Call:
        return make_call(op_name, [_shape_arg(shape)], InitAttrs(dtype=canonical_dtype(dtype)))

    builder.__name__ = builder.__qualname__ = name
    builder.__doc__ = f"A tensor of ``shape`` filled with {fill}."

    def infer(call: Call, ctx: Any) -> StructInfo:
        values, ndim = _shape_values(call, 0)
        return _new_tensor(values, ndim, call.attrs.dtype)

    def legalize(bb: Any, call: Call) -> Expr:
        from ..topi import transform

        sinfo = call.struct_info
        return te_call(bb, call, transform.full, sinfo.shape_values, fill, sinfo.dtype)

    return register_op(op_name, inputs=("shape",), attrs=InitAttrs, infer=infer,
                       legalize=legalize, op_pattern="injective")(builder)


def _like(name: str, fill: Optional[int]) -> Any:
    op_name = f"relax.{name}"
    inputs = ("x",) if fill is not None else ("x", "fill_value")

    if fill is None:

        def builder(x: Expr, fill_value: Any, dtype: Optional[str] = None) -> Call:
            dtype = canonical_dtype(dtype, f"{name}: dtype")
            value = _fill_arg(fill_value, None if dtype == "void" else dtype)
            return make_call(op_name, [x, value], InitAttrs(dtype=dtype))
    else:

        def builder(x: Expr, dtype: Optional[str] = None) -> Call:  # type: ignore[misc]
            return make_call(op_name, [x], InitAttrs(dtype=canonical_dtype(dtype, f"{name}: dtype")))

    builder.__name__ = builder.__qualname__ = name
    what = "fill_value" if fill is None else str(fill)
    builder.__doc__ = (f"A tensor shaped like ``x`` filled with {what} (``dtype`` default: "
                       "x's).")

    def infer(call: Call, ctx: Any) -> StructInfo:
        x = arg_tensor(call, 0)
        if fill is None:
            _fill_dtype(call, 1)
        dtype = x.dtype if call.attrs.dtype == "void" else call.attrs.dtype
        return TensorStructInfo(x.shape, dtype, x.ndim, x.vdevice)

    def legalize(bb: Any, call: Call) -> Expr:
        from ..topi import transform

        sinfo = call.struct_info
        value = call.args[1] if fill is None else fill
        return te_call(bb, call, transform.full, sinfo.shape_values, value, sinfo.dtype)

    return register_op(op_name, inputs=inputs, attrs=InitAttrs, infer=infer, legalize=legalize,
                       op_pattern="injective")(builder)


zeros = _creator("zeros", 0)
ones = _creator("ones", 1)
zeros_like = _like("zeros_like", 0)
ones_like = _like("ones_like", 1)
full_like = _like("full_like", None)


@register_op("relax.full", inputs=("shape", "fill_value"), attrs=InitAttrs, op_pattern="injective")
def full(shape: ShapeLike, fill_value: Any, dtype: Optional[str] = None) -> Call:
    """A tensor of ``shape`` filled with ``fill_value`` (a scalar; ``dtype`` default: its)."""
    dtype = canonical_dtype(dtype, "full: dtype")
    return make_call("relax.full", [_shape_arg(shape), _fill_arg(
        fill_value, None if dtype == "void" else dtype)], InitAttrs(dtype=dtype))


@full.infer
def _infer_full(call: Call, ctx: Any) -> StructInfo:
    values, ndim = _shape_values(call, 0)
    fill_dtype = _fill_dtype(call, 1)
    dtype = fill_dtype if call.attrs.dtype == "void" else call.attrs.dtype
    return _new_tensor(values, ndim, dtype)


@full.legalize
def _legalize_full(bb: Any, call: Call) -> Expr:
    from ..topi import transform

    sinfo = call.struct_info
    value = call.args[1]
    if isinstance(value, Constant) and value.data.ndim == 0:
        value = value.data.item()
    return te_call(bb, call, transform.full, sinfo.shape_values, value, sinfo.dtype)


# -- arange and eye ---------------------------------------------------------------------------------
def _prim(value: Any, what: str) -> Expr:
    if isinstance(value, Expr):
        return value
    if isinstance(value, (int, float, PrimExpr)) and not isinstance(value, bool):
        return PrimValue(value)
    raise TypeError(f"{what} must be a number, a PrimExpr or a PrimValue, got {value!r}")


def _prim_value(call: Call, index: int, what: str) -> PrimExpr:
    sinfo = arg_sinfo(call, index)
    arg = call.args[index]
    if not isinstance(sinfo, PrimStructInfo):
        raise op_error(call, f"{what} must be a scalar (PrimValue), got {type(sinfo).__name__}")
    value = arg.value if isinstance(arg, PrimValue) else sinfo.value
    if value is None:
        raise op_error(call, f"{what} must have a known value")
    return value


@register_op("relax.arange", inputs=("start", "end", "step"), attrs=InitAttrs,
             op_pattern="injective")
def arange(start: Any, end: Any = None, step: Any = 1, dtype: Optional[str] = None) -> Call:
    """``[start, start + step, ...)`` below ``end`` (``arange(n)``: 0 .. n-1).

    ``dtype`` default: int64 for integer arguments, float32 otherwise.
    """
    if end is None:
        start, end = 0, start
    return make_call("relax.arange", [_prim(start, "start"), _prim(end, "end"), _prim(step, "step")],
                     InitAttrs(dtype=canonical_dtype(dtype)))


@arange.infer
def _infer_arange(call: Call, ctx: Any) -> StructInfo:
    start, end, step = (_prim_value(call, i, w) for i, w in enumerate(("start", "end", "step")))
    dtype = call.attrs.dtype
    if dtype == "void":
        dtype = "float32" if any(is_float(v.dtype) for v in (start, end, step)) else "int64"
    consts = [v.value if isinstance(v, (IntImm, FloatImm)) else None for v in (start, end, step)]
    if consts[2] == 0:
        raise op_error(call, "step must not be zero")
    if None not in consts:
        length = max(0, math.ceil((consts[1] - consts[0]) / consts[2]))
        return TensorStructInfo([length], dtype)
    if consts[2] is None or not isinstance(step, IntImm) or any(
        is_float(v.dtype) for v in (start, end)
    ):
        raise op_error(call, "with symbolic bounds, start and end must be integers and step a "
                             "constant integer")
    s = consts[2]
    diff = (end - start) if s > 0 else (start - end)
    length = (diff.astype("int64") + (abs(s) - 1)) // abs(s)
    return out_tensor(TensorStructInfo(None, dtype, 1), [length], dtype, ctx=ctx)


@arange.legalize
def _legalize_arange(bb: Any, call: Call) -> Expr:
    from ..topi import transform

    start = _prim_value(call, 0, "start")
    step = _prim_value(call, 2, "step")
    sinfo = call.struct_info
    return te_call(bb, call, transform.arange, start, step, sinfo.shape_values[0], sinfo.dtype)


@register_op("relax.eye", inputs=("n", "m", "k"), attrs=InitAttrs, op_pattern="injective")
def eye(n: Any, m: Any = None, k: int = 0, dtype: str = "float32") -> Call:
    """An ``n x m`` matrix (``m`` default ``n``) with ones on the ``k``-th diagonal."""
    m = n if m is None else m
    return make_call("relax.eye", [_prim(n, "n"), _prim(m, "m"), _prim(k, "k")],
                     InitAttrs(dtype=canonical_dtype(dtype)))


@eye.infer
def _infer_eye(call: Call, ctx: Any) -> StructInfo:
    n, m = _prim_value(call, 0, "n"), _prim_value(call, 1, "m")
    k = _prim_value(call, 2, "k")
    if not isinstance(k, IntImm):
        raise op_error(call, "k must be a constant integer")
    for what, v in (("n", n), ("m", m)):
        if is_float(v.dtype) or (isinstance(v, IntImm) and v.value < 0):
            raise op_error(call, f"{what} must be a non-negative integer, got {v}")
    dtype = "float32" if call.attrs.dtype == "void" else call.attrs.dtype
    return out_tensor(TensorStructInfo(None, dtype, 2), [n, m], dtype, ctx=ctx)


@eye.legalize
def _legalize_eye(bb: Any, call: Call) -> Expr:
    from ..topi import transform

    sinfo = call.struct_info
    n, m = sinfo.shape_values
    return te_call(bb, call, transform.eye, n, m, _prim_value(call, 2, "k").value, sinfo.dtype)


# -- triangles ---------------------------------------------------------------------------------
@register_object("relax.attrs.TriluAttrs")
class TriluAttrs(Attrs):
    """``k``: the diagonal (0 main, positive above, negative below)."""

    k: int = 0


def _trilu(name: str, upper: bool) -> Any:
    op_name = f"relax.{name}"

    def builder(x: Expr, k: int = 0) -> Call:
        return make_call(op_name, [x], TriluAttrs(k=int(k)))

    builder.__name__ = builder.__qualname__ = name
    side = "below" if upper else "above"
    builder.__doc__ = f"``x`` with the elements {side} the ``k``-th diagonal set to zero."

    def infer(call: Call, ctx: Any) -> StructInfo:
        x = arg_tensor(call, 0)
        if x.ndim != -1 and x.ndim < 2:
            raise op_error(call, f"needs at least 2 dimensions, got {x.ndim}")
        return x

    def legalize(bb: Any, call: Call) -> Expr:
        from ..topi import transform

        return te_call(bb, call, transform.trilu, call.args[0], call.attrs.k, upper)

    return register_op(op_name, inputs=("x",), attrs=TriluAttrs, infer=infer, legalize=legalize,
                       op_pattern="injective")(builder)


tril = _trilu("tril", False)
triu = _trilu("triu", True)
