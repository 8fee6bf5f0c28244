"""Small helpers for operator declarations: argument normalisation and output StructInfo."""

from __future__ import annotations

from typing import Any, Optional, Sequence

from tvm.tir.expr import IntImm, PrimExpr
from tvm.tir.expr_util import const_int as const_dim  # the one definition, re-exported

from ..expr import Call, DataTypeImm, Expr, PrimValue, ShapeExpr, StringImm
from ..struct_info import ShapeStructInfo, StructInfo, TensorStructInfo
from .base import arg_sinfo, normalize_axis, op_error

__all__ = [
    "int_tuple", "opt_int_tuple", "axes_of", "out_tensor", "simplify_dims", "const_dim",
    "check_float", "unique_axes", "as_shape", "as_dtype", "as_prim", "as_string",
    "infer_alloc_tensor",
]


# -- leaf arguments given as Python values (allocation and memory operators) -----------------
def as_shape(value: Any) -> Expr:
    """A list or tuple of dimensions as a ShapeExpr; an expression as it is."""
    return ShapeExpr(value) if isinstance(value, (list, tuple)) else value


def as_dtype(value: Any) -> Expr:
    """A dtype string as a DataTypeImm; an expression as it is."""
    return DataTypeImm(value) if isinstance(value, str) else value


def as_prim(value: Any) -> Expr:
    """A Python int as a PrimValue; an expression as it is."""
    return PrimValue(value) if isinstance(value, int) else value


def as_string(value: Any) -> Expr:
    """A Python str as a StringImm; an expression as it is."""
    return StringImm(value) if isinstance(value, str) else value


def infer_alloc_tensor(call: Call, shape_index: int, dtype_index: int) -> StructInfo:
    """The tensor an allocation returns: argument ``shape_index`` is its shape,
    ``dtype_index`` a DataTypeImm."""
    shape = arg_sinfo(call, shape_index)
    if not isinstance(shape, ShapeStructInfo):
        raise op_error(call, "argument 'shape' must be a shape")
    dtype = call.args[dtype_index]
    if not isinstance(dtype, DataTypeImm):
        raise op_error(call, "argument 'dtype' must be a DataTypeImm")
    if shape.values is not None:
        return TensorStructInfo(ShapeExpr(shape.values), dtype.value)
    return TensorStructInfo(None, dtype.value, shape.ndim)


def int_tuple(value: Any, n: Optional[int], what: str) -> tuple:
    """``value`` (an int or a sequence) as a tuple of ints; an int is repeated ``n`` times."""
    if isinstance(value, (int, IntImm)) and not isinstance(value, bool):
        if n is None:
            return (int(value),)
        return (int(value),) * n
    if not isinstance(value, (list, tuple)):
        raise TypeError(f"{what} must be an int or a sequence of ints, got {value!r}")
    out = []
    for v in value:
        if isinstance(v, bool) or not isinstance(v, (int, IntImm)):
            raise TypeError(f"{what} must contain ints, got {value!r}")
        out.append(int(v))
    if n is not None and len(out) == 1:
        return tuple(out) * n
    if n is not None and len(out) != n:
        raise ValueError(f"{what} must have {n} value(s), got {value!r}")
    return tuple(out)


def opt_int_tuple(value: Any, what: str) -> Optional[tuple]:
    return None if value is None else int_tuple(value, None, what)


def unique_axes(call: Call, axes: Sequence[int], ndim: int, what: str = "axis") -> list[int]:
    """Normalised axes (each in ``[0, ndim)``); a repeated axis is an error."""
    out = [normalize_axis(call, a, ndim, what) for a in axes]
    if len(set(out)) != len(out):
        raise op_error(call, f"{what} {list(axes)} repeats an axis")
    return out


def axes_of(call: Call, axis: Optional[Sequence[int]], ndim: int) -> list[int]:
    """Reduction-style axes: None means all axes; sorted, normalised, no duplicates."""
    if axis is None:
        return list(range(ndim))
    return sorted(unique_axes(call, axis, ndim))


def simplify_dims(ctx: Any, dims: Sequence[Any]) -> list[PrimExpr]:
    analyzer = getattr(ctx, "analyzer", None)
    out = []
    for d in dims:
        d = IntImm("int64", d) if isinstance(d, int) else d
        if d.dtype != "int64":
            from tvm.tir.expr import Cast

            d = Cast("int64", d)
        out.append(analyzer.simplify(d) if analyzer is not None else d)
    return out


def out_tensor(
    like: TensorStructInfo,
    shape: Optional[Sequence[Any]],
    dtype: Optional[str] = None,
    ndim: int = -1,
    ctx: Any = None,
) -> TensorStructInfo:
    """A result tensor with ``like``'s device: ``shape`` (simplified) or unknown with ``ndim``."""
    dtype = like.dtype if dtype is None else dtype
    if shape is None:
        return TensorStructInfo(None, dtype, ndim, like.vdevice)
    return TensorStructInfo(ShapeExpr(simplify_dims(ctx, shape)), dtype, len(shape), like.vdevice)


def check_float(call: Call, sinfo: StructInfo, what: str) -> None:
    from ._elementwise import is_float

    dtype = getattr(sinfo, "dtype", "void")
    if dtype != "void" and not is_float(dtype):
        raise op_error(call, f"{what} must have a floating-point dtype, got {dtype}")
