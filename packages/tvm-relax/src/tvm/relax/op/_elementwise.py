"""Inference shared by elementwise operators (unary and broadcasting binary)."""

from __future__ import annotations

from typing import Any

from tvm.ffi.dtype import DTypeCode, is_float_code, parse_dtype

from ..expr import Call, Expr, ShapeExpr
from ..struct_info import PrimStructInfo, StructInfo, TensorStructInfo
from ._infer import binary_dtype, broadcast_shapes
from .base import OpSpec, arg_sinfo, arg_tensor, make_call, op_error, register_op

__all__ = ["infer_unary", "infer_binary", "is_float", "is_int_or_bool", "declare_unary",
           "declare_binary"]


def is_float(dtype: str) -> bool:
    """Any float dtype, low-precision formats (``float8_e4m3fn`` ...) included."""
    return dtype != "void" and is_float_code(parse_dtype(dtype)[0])


def is_int_or_bool(dtype: str) -> bool:
    return dtype != "void" and parse_dtype(dtype)[0] in (
        DTypeCode.INT, DTypeCode.UINT, DTypeCode.BOOL
    )


def infer_unary(call: Call, ctx: Any, require: str = "", out_dtype: str = "") -> StructInfo:
    """Same shape as the input; ``require`` is ``"float"``, ``"int"`` or ``""``.

    ``out_dtype`` overrides the output dtype (``"bool"`` for predicates).
    """
    sinfo = arg_sinfo(call, 0)
    if isinstance(sinfo, PrimStructInfo):
        _check_dtype(call, sinfo.dtype, require)
        return PrimStructInfo(out_dtype or sinfo.dtype)
    x = arg_tensor(call, 0, allow_prim=True)
    _check_dtype(call, x.dtype, require)
    if not out_dtype or out_dtype == x.dtype:
        return x
    return TensorStructInfo(x.shape, out_dtype, x.ndim, x.vdevice)


def _check_dtype(call: Call, dtype: str, require: str) -> None:
    if dtype == "void" or not require:
        return
    if require == "float" and not is_float(dtype):
        raise op_error(call, f"requires a floating-point input, got dtype {dtype}")
    if require == "int" and not is_int_or_bool(dtype):
        raise op_error(call, f"requires an integer or bool input, got dtype {dtype}")


def infer_binary(call: Call, ctx: Any, out_dtype: str = "", require: str = "") -> StructInfo:
    """numpy-broadcast shape; equal operand dtypes; ``out_dtype`` (e.g. bool) overrides."""
    lhs_s, rhs_s = arg_sinfo(call, 0), arg_sinfo(call, 1)
    lhs = arg_tensor(call, 0, allow_prim=True)
    rhs = arg_tensor(call, 1, allow_prim=True)
    dtype = binary_dtype(call, lhs, rhs)
    _check_dtype(call, dtype, require)
    result_dtype = out_dtype or dtype
    if isinstance(lhs_s, PrimStructInfo) and isinstance(rhs_s, PrimStructInfo):
        return PrimStructInfo(result_dtype)
    vdevice = lhs.vdevice if lhs.vdevice is not None else rhs.vdevice
    if lhs.ndim == -1 or rhs.ndim == -1:
        return TensorStructInfo(None, result_dtype, -1, vdevice)
    ndim = max(lhs.ndim, rhs.ndim)
    lv, rv = lhs.shape_values, rhs.shape_values
    if lv is None or rv is None:
        if lhs.shape is not None and lhs.shape is rhs.shape:
            return TensorStructInfo(lhs.shape, result_dtype, ndim, vdevice)
        return TensorStructInfo(None, result_dtype, ndim, vdevice)
    out = broadcast_shapes(call, lv, rv, ctx)
    if out is None:
        return TensorStructInfo(None, result_dtype, ndim, vdevice)
    for side in (lhs, rhs):
        if isinstance(side.shape, ShapeExpr) or side.shape is None:
            continue
        if len(out) == len(side.shape_values) and all(
            a is b for a, b in zip(out, side.shape_values)
        ):
            return TensorStructInfo(side.shape, result_dtype, ndim, vdevice)
    return TensorStructInfo(ShapeExpr(out), result_dtype, ndim, vdevice)


def declare_unary(name: str, doc: str, require: str = "", out_dtype: str = "",
                  op_pattern: str = "elemwise") -> OpSpec:
    """Register ``relax.<name>(x)``, an elementwise op inferred by :func:`infer_unary`, and
    return its spec (the caller adds the legalization and the numpy evaluator)."""
    op_name = f"relax.{name}"

    def builder(x: Expr) -> Call:
        return make_call(op_name, [x])

    builder.__name__ = builder.__qualname__ = name
    builder.__doc__ = doc

    def infer(call: Call, ctx: Any) -> StructInfo:
        return infer_unary(call, ctx, require, out_dtype)

    return register_op(op_name, inputs=("x",), infer=infer, op_pattern=op_pattern)(builder)


def declare_binary(name: str, doc: str, out_dtype: str = "", require: str = "",
                   op_pattern: str = "broadcast", inputs: tuple[str, str] = ("x1", "x2")
                   ) -> OpSpec:
    """Register ``relax.<name>(a, b)``, a broadcasting op inferred by :func:`infer_binary`,
    and return its spec."""
    op_name = f"relax.{name}"

    def builder(x1: Expr, x2: Expr) -> Call:
        return make_call(op_name, [x1, x2])

    builder.__name__ = builder.__qualname__ = name
    builder.__doc__ = doc

    def infer(call: Call, ctx: Any) -> StructInfo:
        return infer_binary(call, ctx, out_dtype, require)

    return register_op(op_name, inputs=inputs, infer=infer, op_pattern=op_pattern)(builder)
