"""``relax.qnn.add`` / ``multiply`` / ``concat``: elementwise integer ops whose inputs and
output each have their own (per-tensor) scale and zero point.

* add: ``zo + round((sa (a - za) + sb (b - zb)) / so)`` -- both rescalings share one shift
  so the sum is rounded once (half to even);
* multiply: ``zo + round(sa sb (a - za)(b - zb) / so)``;
* concat: each input rescaled to the output's parameters (copied when they are equal).

The multipliers are fixed-point constants computed at compile time (see
``relax.qnn.requantize``); no floats at run time.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from tvm.ffi import register_object

from ...expr import Call, Expr, Tuple, TupleGetItem
from ...struct_info import StructInfo, TensorStructInfo, TupleStructInfo
from .._infer import broadcast_shapes
from .._lower import te_call
from .._utils import out_tensor
from ..base import Attrs, arg_sinfo, arg_tensor, make_call, normalize_axis, op_error, register_op
from ._common import check_quant_dtype, float_params, int_params

__all__ = ["add", "multiply", "concat", "QBinaryAttrs", "QConcatAttrs", "binary_multipliers"]

_INT8 = ("int8", "uint8")


@register_object("relax.attrs.QBinaryAttrs")
class QBinaryAttrs(Attrs):
    """Per-tensor scale and zero point of each input and of the output; the output dtype."""

    lhs_scale: float = 1.0
    lhs_zero_point: int = 0
    rhs_scale: float = 1.0
    rhs_zero_point: int = 0
    output_scale: float = 1.0
    output_zero_point: int = 0
    out_dtype: str = "int8"


def _scalar_f(name: str, what: str, v: Any) -> float:
    vals = float_params(name, what, v)
    if len(vals) != 1:
        raise ValueError(f"{name}: {what} must be one value (per tensor), got {vals}")
    return vals[0]


def _scalar_i(name: str, what: str, v: Any, dtype: Any = None) -> int:
    vals = int_params(name, what, v, dtype)
    if len(vals) != 1:
        raise ValueError(f"{name}: {what} must be one value (per tensor), got {vals}")
    return vals[0]


def _binary(name: str, lhs: Expr, rhs: Expr, lhs_scale: float, lhs_zero_point: int,
            rhs_scale: float, rhs_zero_point: int, output_scale: float,
            output_zero_point: int, out_dtype: str) -> Call:
    check_quant_dtype(name, "out_dtype", out_dtype)
    attrs = QBinaryAttrs(
        lhs_scale=_scalar_f(name, "lhs_scale", lhs_scale),
        lhs_zero_point=_scalar_i(name, "lhs_zero_point", lhs_zero_point),
        rhs_scale=_scalar_f(name, "rhs_scale", rhs_scale),
        rhs_zero_point=_scalar_i(name, "rhs_zero_point", rhs_zero_point),
        output_scale=_scalar_f(name, "output_scale", output_scale),
        output_zero_point=_scalar_i(name, "output_zero_point", output_zero_point, out_dtype),
        out_dtype=out_dtype)
    call = make_call(name, [lhs, rhs], attrs)
    binary_multipliers(call.op.name, attrs)
    return call


def binary_multipliers(name: str, a: Any) -> tuple[list[int], int]:
    """Fixed-point multipliers and their shared shift: ``[ma, mb], s`` for add, ``[m], s``
    for multiply."""
    from ...topi.qnn import common_shift_multipliers, fixed_point_multiplier

    if name == "relax.qnn.add":
        return common_shift_multipliers(
            [a.lhs_scale / a.output_scale, a.rhs_scale / a.output_scale], name)
    m, s = fixed_point_multiplier(a.lhs_scale * a.rhs_scale / a.output_scale, name)
    return [m], s


def _infer_binary(call: Call, ctx: Any) -> StructInfo:
    lhs, rhs = arg_tensor(call, 0), arg_tensor(call, 1)
    for name, t in (("lhs", lhs), ("rhs", rhs)):
        if not t.is_unknown_dtype and t.dtype not in _INT8:
            raise op_error(call, f"argument {name!r} must be int8 or uint8, got {t.dtype}")
    dtype = call.attrs.out_dtype
    if lhs.shape_values is None or rhs.shape_values is None:
        ndim = -1 if lhs.ndim == -1 or rhs.ndim == -1 else max(lhs.ndim, rhs.ndim)
        return out_tensor(lhs, None, dtype, ndim)
    shape = broadcast_shapes(call, lhs.shape_values, rhs.shape_values, ctx)
    if shape is None:
        return out_tensor(lhs, None, dtype, max(lhs.ndim, rhs.ndim))
    return out_tensor(lhs, shape, dtype, ctx=ctx)


def _clip(dtype: str) -> tuple[int, int]:
    from ...topi.qnn import INT_RANGES

    return INT_RANGES[dtype]


@register_op("relax.qnn.add", inputs=("lhs", "rhs"), attrs=QBinaryAttrs, infer=_infer_binary,
             op_pattern="broadcast")
def add(lhs: Expr, rhs: Expr, lhs_scale: float, lhs_zero_point: int, rhs_scale: float,
        rhs_zero_point: int, output_scale: float, output_zero_point: int = 0,
        out_dtype: str = "int8") -> Call:
    """Quantized ``lhs + rhs`` with numpy broadcasting (module docstring)."""
    return _binary("relax.qnn.add", lhs, rhs, lhs_scale, lhs_zero_point, rhs_scale,
                   rhs_zero_point, output_scale, output_zero_point, out_dtype)


@register_op("relax.qnn.multiply", inputs=("lhs", "rhs"), attrs=QBinaryAttrs,
             infer=_infer_binary, op_pattern="broadcast")
def multiply(lhs: Expr, rhs: Expr, lhs_scale: float, lhs_zero_point: int, rhs_scale: float,
             rhs_zero_point: int, output_scale: float, output_zero_point: int = 0,
             out_dtype: str = "int8") -> Call:
    """Quantized ``lhs * rhs`` with numpy broadcasting (module docstring)."""
    return _binary("relax.qnn.multiply", lhs, rhs, lhs_scale, lhs_zero_point, rhs_scale,
                   rhs_zero_point, output_scale, output_zero_point, out_dtype)


@add.legalize
def _legalize_add(bb: Any, call: Call) -> Expr:
    from ...topi import qnn

    a = call.attrs
    (ma, mb), s = binary_multipliers(call.op.name, a)
    return te_call(bb, call, lambda x, y: qnn.add(
        x, y, a.lhs_zero_point, a.rhs_zero_point, ma, mb, s, a.output_zero_point, a.out_dtype,
        _clip(a.out_dtype)), call.args[0], call.args[1])


@multiply.legalize
def _legalize_multiply(bb: Any, call: Call) -> Expr:
    from ...topi import qnn

    a = call.attrs
    (m,), s = binary_multipliers(call.op.name, a)
    return te_call(bb, call, lambda x, y: qnn.multiply(
        x, y, a.lhs_zero_point, a.rhs_zero_point, m, s, a.output_zero_point, a.out_dtype,
        _clip(a.out_dtype)), call.args[0], call.args[1])


@add.evaluate
def _eval_add(call: Call, x: Any, y: Any) -> Any:
    from ...topi.qnn import rounding_shift_np

    a = call.attrs
    (ma, mb), s = binary_multipliers(call.op.name, a)
    acc = (np.asarray(x).astype(np.int64) - a.lhs_zero_point) * ma \
        + (np.asarray(y).astype(np.int64) - a.rhs_zero_point) * mb
    out = rounding_shift_np(acc, s) + a.output_zero_point
    return np.clip(out, *_clip(a.out_dtype)).astype(a.out_dtype)


@multiply.evaluate
def _eval_multiply(call: Call, x: Any, y: Any) -> Any:
    from ...topi.qnn import rounding_shift_np

    a = call.attrs
    (m,), s = binary_multipliers(call.op.name, a)
    acc = (np.asarray(x).astype(np.int64) - a.lhs_zero_point) \
        * (np.asarray(y).astype(np.int64) - a.rhs_zero_point) * m
    out = rounding_shift_np(acc, s) + a.output_zero_point
    return np.clip(out, *_clip(a.out_dtype)).astype(a.out_dtype)


# -- concat -----------------------------------------------------------------------------------
@register_object("relax.attrs.QConcatAttrs")
class QConcatAttrs(Attrs):
    """Per input its scale and zero point; the output's; the axis and the output dtype."""

    input_scales: tuple = ()
    input_zero_points: tuple = ()
    output_scale: float = 1.0
    output_zero_point: int = 0
    axis: int = 0
    out_dtype: str = "int8"


@register_op("relax.qnn.concat", inputs=("tensors",), attrs=QConcatAttrs,
             op_pattern="injective")
def concat(tensors: Any, input_scales: Sequence[float], input_zero_points: Sequence[int],
           output_scale: float, output_zero_point: int = 0, axis: int = 0,
           out_dtype: str = "int8") -> Call:
    """Quantized concatenation of ``tensors`` (a list or a tuple expression) along ``axis``,
    each rescaled to the output's scale and zero point."""
    name = "relax.qnn.concat"
    check_quant_dtype(name, "out_dtype", out_dtype)
    if isinstance(tensors, (list, tuple)):
        if not tensors:
            raise ValueError(f"{name}: needs at least one tensor")
        tensors = Tuple(list(tensors))
    scales = float_params(name, "input_scales", input_scales)
    zps = int_params(name, "input_zero_points", input_zero_points, per_channel=False)
    if len(scales) != len(zps):
        raise ValueError(f"{name}: {len(scales)} input_scales but {len(zps)} input_zero_points")
    call = make_call(name, [tensors], QConcatAttrs(
        input_scales=scales, input_zero_points=zps,
        output_scale=_scalar_f(name, "output_scale", output_scale),
        output_zero_point=_scalar_i(name, "output_zero_point", output_zero_point, out_dtype),
        axis=int(axis), out_dtype=out_dtype))
    concat_params(call.attrs)
    return call


def concat_params(a: Any) -> list[tuple]:
    """Per input ``(zero_point, multiplier, shift)``, the multiplier None for a copy."""
    from ...topi.qnn import fixed_point_multiplier

    out = []
    for s, z in zip(a.input_scales, a.input_zero_points):
        if s == a.output_scale and z == a.output_zero_point:
            out.append((z, None, None))
        else:
            out.append((z, *fixed_point_multiplier(s / a.output_scale, "relax.qnn.concat")))
    return out


@concat.infer
def _infer_concat(call: Call, ctx: Any) -> StructInfo:
    from ...analysis.struct_info_analysis import prim_equal

    tup = arg_sinfo(call, 0)
    if not isinstance(tup, TupleStructInfo) or not all(
            isinstance(f, TensorStructInfo) for f in tup.fields) or not tup.fields:
        raise op_error(call, "argument 'tensors' must be a non-empty tuple of tensors")
    fields = tup.fields
    a = call.attrs
    if len(fields) != len(a.input_scales):
        raise op_error(call, f"{len(fields)} tensors but {len(a.input_scales)} input_scales")
    for k, f in enumerate(fields):
        if not f.is_unknown_dtype and f.dtype not in _INT8 + ("int32",):
            raise op_error(call, f"tensor {k} must be int8, uint8 or int32, got {f.dtype}")
    if any(f.ndim == -1 for f in fields):
        return out_tensor(fields[0], None, a.out_dtype, -1)
    ndim = fields[0].ndim
    if any(f.ndim != ndim for f in fields):
        raise op_error(call, f"tensors have different ranks {[f.ndim for f in fields]}")
    axis = normalize_axis(call, a.axis, ndim)
    if any(f.shape_values is None for f in fields):
        return out_tensor(fields[0], None, a.out_dtype, ndim)
    shape = list(fields[0].shape_values)
    for k, f in enumerate(fields[1:], 1):
        for d in range(ndim):
            if d == axis:
                shape[d] = shape[d] + f.shape_values[d]
            elif prim_equal(shape[d], f.shape_values[d], getattr(ctx, "analyzer", None)) is False:
                raise op_error(call, f"tensor {k} differs from tensor 0 in dimension {d}")
    return out_tensor(fields[0], shape, a.out_dtype, ctx=ctx)


@concat.legalize
def _legalize_concat(bb: Any, call: Call) -> Expr:
    from ...topi import qnn

    a = call.attrs
    tup = call.args[0]
    fields = tup.fields if isinstance(tup, Tuple) else [
        bb.normalize_argument(TupleGetItem(tup, i)) for i in range(len(tup.struct_info.fields))]
    axis = normalize_axis(call, a.axis, fields[0].struct_info.ndim)
    params = concat_params(a)
    return te_call(bb, call, lambda *ts: qnn.concat(
        ts, axis, params, a.output_zero_point, a.out_dtype), *fields)


@concat.evaluate
def _eval_concat(call: Call, tensors: Any) -> Any:
    from ...topi.qnn import INT_RANGES, rounding_shift_np

    a = call.attrs
    out = []
    for x, (z, m, s) in zip(tensors, concat_params(a)):
        x = np.asarray(x)
        if m is None:
            out.append(x.astype(a.out_dtype))
            continue
        y = rounding_shift_np((x.astype(np.int64) - z) * m, s) + a.output_zero_point
        out.append(np.clip(y, *INT_RANGES[a.out_dtype]).astype(a.out_dtype))
    return np.concatenate(out, axis=a.axis)
