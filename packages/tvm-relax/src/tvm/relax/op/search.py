"""``where`` (select by a condition) and ``argmax`` / ``argmin``."""

from __future__ import annotations

from typing import Any, Optional

from tvm.ffi import register_object

from ..expr import Call, Expr, ShapeExpr
from ..struct_info import PrimStructInfo, StructInfo, TensorStructInfo
from ._infer import binary_dtype, broadcast_shapes
from ._lower import te_call
from .base import Attrs, arg_sinfo, arg_tensor, make_call, normalize_axis, op_error, register_op
from .statistical import infer_reduce

__all__ = ["where", "argmax", "argmin", "ArgReduceAttrs"]


@register_op("relax.where", inputs=("condition", "x1", "x2"), op_pattern="broadcast")
def where(condition: Expr, x1: Expr, x2: Expr) -> Call:
    """Elementwise ``x1 if condition else x2`` (the three broadcast together)."""
    return make_call("relax.where", [condition, x1, x2])


@where.infer
def _infer_where(call: Call, ctx: Any) -> StructInfo:
    cond = arg_tensor(call, 0, allow_prim=True)
    x1 = arg_tensor(call, 1, allow_prim=True)
    x2 = arg_tensor(call, 2, allow_prim=True)
    if not cond.is_unknown_dtype and cond.dtype != "bool":
        raise op_error(call, f"the condition must be a bool tensor, got dtype {cond.dtype}")
    dtype = binary_dtype(call, x1, x2)
    if all(isinstance(arg_sinfo(call, i), PrimStructInfo) for i in range(3)):
        return PrimStructInfo(dtype)
    vdevice = next((t.vdevice for t in (cond, x1, x2) if t.vdevice is not None), None)
    if -1 in (cond.ndim, x1.ndim, x2.ndim):
        return TensorStructInfo(None, dtype, -1, vdevice)
    ndim = max(cond.ndim, x1.ndim, x2.ndim)
    values = [t.shape_values for t in (cond, x1, x2)]
    if any(v is None for v in values):
        return TensorStructInfo(None, dtype, ndim, vdevice)
    out = broadcast_shapes(call, values[1], values[2], ctx)
    out = None if out is None else broadcast_shapes(call, values[0], out, ctx, "condition and values")
    if out is None:
        return TensorStructInfo(None, dtype, ndim, vdevice)
    return TensorStructInfo(ShapeExpr(out), dtype, ndim, vdevice)


@where.legalize
def _legalize_where(bb: Any, call: Call) -> Expr:
    from ..topi import elemwise

    return te_call(bb, call, elemwise.where, *call.args)


@register_object("relax.attrs.ArgReduceAttrs")
class ArgReduceAttrs(Attrs):
    """``axis`` (None: over the flattened tensor) and ``keepdims``."""

    axis: Optional[int] = None
    keepdims: bool = False


def _declare(name: str, largest: bool) -> Any:
    op_name = f"relax.{name}"

    def builder(x: Expr, axis: Optional[int] = None, keepdims: bool = False) -> Call:
        attrs = ArgReduceAttrs(axis=None if axis is None else int(axis), keepdims=bool(keepdims))
        return make_call(op_name, [x], attrs)

    builder.__name__ = builder.__qualname__ = name
    which = "maximum" if largest else "minimum"
    builder.__doc__ = (f"Index (int64) of the first {which} along ``axis`` (None: of the "
                       "flattened tensor).")

    def infer(call: Call, ctx: Any) -> StructInfo:
        x = arg_tensor(call, 0)
        if not x.is_unknown_dtype and x.dtype == "bool":
            raise op_error(call, "does not accept bool tensors")
        axis = call.attrs.axis
        if axis is not None and x.ndim != -1:
            normalize_axis(call, axis, x.ndim)
        return infer_reduce(call, ctx, None if axis is None else (axis,), call.attrs.keepdims,
                            "int64")

    def legalize(bb: Any, call: Call) -> Expr:
        from ..topi import reduction

        x = call.args[0].struct_info
        axis = call.attrs.axis
        axis = None if axis is None else axis % x.ndim
        return te_call(bb, call, reduction.arg_reduce, call.args[0], largest, axis,
                       call.attrs.keepdims)

    return register_op(op_name, inputs=("x",), attrs=ArgReduceAttrs, infer=infer,
                       legalize=legalize, op_pattern="reduce")(builder)


argmax = _declare("argmax", True)
argmin = _declare("argmin", False)


# -- numpy semantics --------------------------------------------------------------------------
@where.evaluate(symbolic=True)
def _eval_where(call: Call, cond: Any, a: Any, b: Any) -> Any:
    import numpy as np

    return np.where(np.asarray(cond), a, b)
