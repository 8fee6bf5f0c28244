"""Helpers shared by the te compute definitions: dtypes, constants, axes and indexing."""

from __future__ import annotations

from typing import Any, Sequence

from tvm.arith import Analyzer
from tvm.ffi.dtype import DTypeCode, is_float_code, parse_dtype
from tvm.tir.expr import GE, LT, And, Cast, IntImm, PrimExpr, Select, const
from tvm.tir.op import checked
from tvm.tir.expr_util import is_const_int

__all__ = [
    "is_float", "is_bool", "is_signed_int", "cast", "int64", "simplify", "prod",
    "broadcast_index", "checked_index",
]

_ANALYZER = Analyzer()


def _code(dtype: str) -> int:
    return parse_dtype(dtype)[0]


def is_float(dtype: str) -> bool:
    """Any float dtype, low-precision formats (``float8_e4m3fn`` ...) included."""
    return is_float_code(_code(dtype))


def is_signed_int(dtype: str) -> bool:
    return _code(dtype) == DTypeCode.INT


def is_bool(dtype: str) -> bool:
    return _code(dtype) == DTypeCode.BOOL


def cast(value: Any, dtype: str) -> PrimExpr:
    """``value`` as ``dtype`` (Python numbers become constants; no-op casts are dropped)."""
    if not isinstance(value, PrimExpr):
        if is_bool(dtype):
            return const(bool(value), dtype)
        if is_float(dtype):
            return const(float(value), dtype)
        return const(int(value), dtype)
    if value.dtype == dtype:
        return value
    if is_bool(dtype):
        return value != cast(0, value.dtype)
    return Cast(dtype, value)


def int64(value: Any) -> PrimExpr:
    return cast(value, "int64")


def simplify(expr: Any) -> PrimExpr:
    return _ANALYZER.simplify(expr)


def prod(values: Sequence[Any]) -> PrimExpr:
    out: PrimExpr = IntImm("int64", 1)
    for v in values:
        out = out * int64(v)
    return simplify(out)


def broadcast_index(out_index: Sequence[PrimExpr], shape: Sequence[PrimExpr]) -> tuple:
    """The index into a tensor of ``shape`` broadcast (numpy rules) to ``out_index``'s rank."""
    offset = len(out_index) - len(shape)
    return tuple(
        IntImm(out_index[offset + i].dtype, 0) if is_const_int(dim, 1) else out_index[offset + i]
        for i, dim in enumerate(shape)
    )


def checked_index(raw: Any, size: Any, op: str, axis: Any) -> PrimExpr:
    """Index ``raw`` into an axis of length ``size``, negative values counting from the end
    (ONNX's rule), checked at run time: a value outside ``[-size, size)`` fails the kernel
    with a message naming ``op``, the value and the axis instead of reading memory."""
    raw, size = int64(raw), simplify(int64(size))
    zero = IntImm("int64", 0)
    wrapped = Select(LT(raw, zero), raw + size, raw)
    return checked(wrapped, And(GE(raw, simplify(zero - size)), LT(raw, size)),
                   f"{op}: index %lld is out of range for axis {axis} of size %lld",
                   raw, size)
