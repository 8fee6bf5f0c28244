"""Shape manipulation operators: ``reshape``, ``permute_dims``."""

from __future__ import annotations

from typing import Any, Optional, Sequence

from tvm.ffi import register_object
from tvm.tir.expr import IntImm, PrimExpr

from ..analysis.struct_info_analysis import prim_equal
from ..expr import Call, Expr, ShapeExpr, Var
from ..struct_info import ShapeStructInfo, StructInfo, TensorStructInfo
from ._infer import shape_str
from .base import Attrs, arg_sinfo, arg_tensor, make_call, normalize_axis, op_error, register_op

__all__ = ["reshape", "permute_dims", "PermuteDimsAttrs"]


@register_op("relax.reshape", inputs=("x", "shape"), op_pattern="injective")
def reshape(x: Expr, shape: Any) -> Call:
    """``x`` with a new shape of the same number of elements; one dimension may be -1."""
    if isinstance(shape, (list, tuple)):
        shape = ShapeExpr(shape)
    return make_call("relax.reshape", [x, shape])


def _product(values: Sequence[PrimExpr]) -> PrimExpr:
    out: PrimExpr = IntImm("int64", 1)
    for v in values:
        out = out * v
    return out


@reshape.infer
def _infer_reshape(call: Call, ctx: Any) -> StructInfo:
    x = arg_tensor(call, 0)
    shape_sinfo = arg_sinfo(call, 1)
    if not isinstance(shape_sinfo, ShapeStructInfo):
        raise op_error(call, "argument 'shape' must be a shape (ShapeExpr or shape variable)")
    new = shape_sinfo.values
    if new is None:
        shape = call.args[1] if isinstance(call.args[1], Var) else None
        return TensorStructInfo(shape, x.dtype, shape_sinfo.ndim, x.vdevice)
    infer_at = [i for i, v in enumerate(new) if isinstance(v, IntImm) and v.value == -1]
    if len(infer_at) > 1:
        raise op_error(call, f"at most one dimension may be -1, got shape {shape_str(new)}")
    old = x.shape_values
    analyzer = getattr(ctx, "analyzer", None)
    simplify = analyzer.simplify if analyzer is not None else (lambda e: e)
    if infer_at:
        if old is None:
            return TensorStructInfo(None, x.dtype, len(new), x.vdevice)
        known = [v for i, v in enumerate(new) if i != infer_at[0]]
        rest = simplify(_product(known))
        if isinstance(rest, IntImm) and rest.value == 0:
            raise op_error(call, f"cannot infer the -1 of shape {shape_str(new)}: the other "
                           "dimensions hold 0 elements, so any size fits (as numpy, refused)")
        dim = simplify(_product(old) // rest)
        new = tuple(dim if i == infer_at[0] else v for i, v in enumerate(new))
        return TensorStructInfo(ShapeExpr(new), x.dtype, len(new), x.vdevice)
    if old is not None:
        same = prim_equal(simplify(_product(old)), simplify(_product(new)), analyzer)
        if same is False:
            raise op_error(
                call,
                f"cannot reshape a tensor of shape {shape_str(old)} into {shape_str(new)}: the "
                "numbers of elements differ",
            )
    shape = call.args[1] if isinstance(call.args[1], (ShapeExpr, Var)) else ShapeExpr(new)
    return TensorStructInfo(shape, x.dtype, len(new), x.vdevice)


@register_object("relax.attrs.PermuteDimsAttrs")
class PermuteDimsAttrs(Attrs):
    """``axes``: the new order of the dimensions (None: reversed)."""

    axes: Optional[tuple] = None


@register_op("relax.permute_dims", inputs=("x",), attrs=PermuteDimsAttrs, op_pattern="injective")
def permute_dims(x: Expr, axes: Optional[Sequence[int]] = None) -> Call:
    """``x`` with its dimensions reordered (numpy ``transpose``)."""
    axes = None if axes is None else tuple(int(a) for a in axes)
    return make_call("relax.permute_dims", [x], PermuteDimsAttrs(axes=axes))


@permute_dims.infer
def _infer_permute_dims(call: Call, ctx: Any) -> StructInfo:
    x = arg_tensor(call, 0)
    axes = call.attrs.axes
    if x.ndim == -1:
        return TensorStructInfo(None, x.dtype, len(axes) if axes is not None else -1, x.vdevice)
    if axes is None:
        axes = tuple(reversed(range(x.ndim)))
    if len(axes) != x.ndim:
        raise op_error(
            call, f"axes {list(axes)} must list each of the input's {x.ndim} dimension(s) once"
        )
    norm = [normalize_axis(call, a, x.ndim, "axis") for a in axes]
    if sorted(norm) != list(range(x.ndim)):
        raise op_error(call, f"axes {list(axes)} is not a permutation of 0..{x.ndim - 1}")
    values = x.shape_values
    if values is None:
        return TensorStructInfo(None, x.dtype, x.ndim, x.vdevice)
    return TensorStructInfo(ShapeExpr([values[a] for a in norm]), x.dtype, x.ndim, x.vdevice)


# -- legalization to TIR (te computes of tvm.relax.topi.transform) -----------------------------
@reshape.legalize
def _legalize_reshape(bb: Any, call: Call) -> Any:
    from ..topi import transform
    from ._lower import te_call

    return te_call(bb, call, transform.reshape, call.args[0], call.struct_info.shape_values)


@permute_dims.legalize
def _legalize_permute_dims(bb: Any, call: Call) -> Any:
    from ..topi import transform
    from ._lower import te_call

    ndim = call.args[0].struct_info.ndim
    axes = call.attrs.axes
    axes = list(reversed(range(ndim))) if axes is None else [a % ndim for a in axes]
    return te_call(bb, call, transform.permute_dims, call.args[0], axes)


# -- numpy semantics (these also run on object arrays of symbolic shape values) ---------------
import numpy as _np  # noqa: E402


@reshape.evaluate(symbolic=True)
def _eval_reshape(call: Call, x: Any, shape: Any) -> Any:
    from ._numpy import out_shape

    return _np.reshape(x, out_shape(call))


@permute_dims.evaluate(symbolic=True)
def _eval_permute_dims(call: Call, x: Any) -> Any:
    return _np.transpose(x, call.attrs.axes)
