"""Shared pieces of StructInfo inference: numpy broadcasting and dtype agreement."""

from __future__ import annotations

from typing import Any, Optional

from tvm.tir.expr import PrimExpr
from tvm.tir.expr_util import is_const_int

from ..analysis.struct_info_analysis import dim_str, prim_equal
from ..expr import Call
from ..struct_info import TensorStructInfo
from .base import op_error

__all__ = ["broadcast_shapes", "binary_dtype", "shape_str", "dim_str"]


def broadcast_shapes(
    call: Call, lhs: tuple, rhs: tuple, ctx: Any = None, what: str = "operands"
) -> Optional[tuple]:
    """numpy broadcasting of two symbolic shapes.

    Dimensions are aligned from the right; a dimension 1 stretches; equal dimensions (also
    provably equal symbolic ones) stay.  Constant dimensions that differ (and neither is 1)
    are an error.  Symbolic dimensions that cannot be proven equal make the result unknown
    (``None``); the number of dimensions is still known.
    """
    analyzer = getattr(ctx, "analyzer", None)
    out: list[PrimExpr] = []
    n = max(len(lhs), len(rhs))
    for i in range(1, n + 1):
        a = lhs[-i] if i <= len(lhs) else None
        b = rhs[-i] if i <= len(rhs) else None
        if a is None:
            out.append(b)
        elif b is None or is_const_int(b, 1):
            out.append(a)
        elif is_const_int(a, 1):
            out.append(b)
        else:
            eq = prim_equal(a, b, analyzer)
            if eq is True:
                out.append(a)
            elif eq is False:
                raise op_error(
                    call,
                    f"cannot broadcast {what} of shapes {shape_str(lhs)} and {shape_str(rhs)}: "
                    f"dimension {n - i} is {dim_str(a)} vs {dim_str(b)}",
                )
            else:
                return None
    return tuple(reversed(out))


def binary_dtype(call: Call, lhs: TensorStructInfo, rhs: TensorStructInfo) -> str:
    """The common dtype of two operands: equal dtypes (unknown if either is unknown)."""
    if lhs.is_unknown_dtype or rhs.is_unknown_dtype:
        return "void"
    if lhs.dtype != rhs.dtype:
        raise op_error(
            call,
            f"operands must have the same dtype, got {lhs.dtype} and {rhs.dtype} "
            "(insert relax.op.astype to convert one of them)",
        )
    return lhs.dtype


def shape_str(shape: tuple) -> str:
    return "(" + ", ".join(dim_str(d) for d in shape) + ")"
