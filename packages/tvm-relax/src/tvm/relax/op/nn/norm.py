"""Normalisations: ``relax.nn.layer_norm``, ``group_norm``, ``batch_norm`` (a tuple of 3),
``rms_norm``, and ``dropout`` (identity at inference, a tuple (output, mask))."""

from __future__ import annotations

from typing import Any, Sequence, Union

from tvm.ffi import register_object

from ...analysis.struct_info_analysis import prim_equal
from ...expr import Call, Expr
from ...struct_info import StructInfo, TensorStructInfo, TupleStructInfo
from .._infer import shape_str
from .._lower import te_call
from .._utils import check_float, const_dim, int_tuple, out_tensor, unique_axes
from ..base import Attrs, arg_tensor, make_call, normalize_axis, op_error, register_op

__all__ = ["layer_norm", "group_norm", "batch_norm", "rms_norm", "dropout", "LayerNormAttrs",
           "GroupNormAttrs", "BatchNormAttrs", "RMSNormAttrs", "DropoutAttrs"]

Axes = Union[int, Sequence[int]]


def _check_param(call: Call, index: int, name: str, data: TensorStructInfo,
                 expected: Sequence[Any], ctx: Any) -> None:
    """Argument ``index`` (gamma, beta, ...) must have shape ``expected`` and data's dtype."""
    p = arg_tensor(call, index)
    if not p.is_unknown_dtype and not data.is_unknown_dtype and p.dtype != data.dtype:
        raise op_error(call, f"{name} must have data's dtype {data.dtype}, got {p.dtype}")
    if p.ndim != -1 and p.ndim != len(expected):
        raise op_error(call, f"{name} must have {len(expected)} dimension(s), got {p.ndim}")
    values = p.shape_values
    if values is None or any(e is None for e in expected):
        return
    analyzer = getattr(ctx, "analyzer", None)
    if any(prim_equal(a, b, analyzer) is False for a, b in zip(values, expected)):
        raise op_error(call, f"{name} has shape {shape_str(values)}, expected {shape_str(expected)}")


def _dims(data: TensorStructInfo, axes: Sequence[int]) -> list:
    values = data.shape_values
    return [values[a] if values is not None else None for a in axes]


def _norm_axes(call: Call, data: TensorStructInfo) -> list[int]:
    return unique_axes(call, call.attrs.axes, data.ndim, "axes") if data.ndim != -1 else []


# -- layer_norm ------------------------------------------------------------------------------------
@register_object("relax.attrs.LayerNormAttrs")
class LayerNormAttrs(Attrs):
    axes: tuple = (-1,)
    epsilon: float = 1e-5
    center: bool = True
    scale: bool = True


@register_op("relax.nn.layer_norm", inputs=("data", "gamma", "beta"), attrs=LayerNormAttrs,
             op_pattern="out_elemwise_fusable")
def layer_norm(data: Expr, gamma: Expr, beta: Expr, axes: Axes = -1, epsilon: float = 1e-5,
               center: bool = True, scale: bool = True) -> Call:
    """``(x - mean) / sqrt(var + eps) * gamma + beta`` with statistics over ``axes``."""
    return make_call("relax.nn.layer_norm", [data, gamma, beta], LayerNormAttrs(
        axes=int_tuple(axes, None, "layer_norm: axes"), epsilon=float(epsilon),
        center=bool(center), scale=bool(scale)))


@layer_norm.infer
def _infer_layer_norm(call: Call, ctx: Any) -> StructInfo:
    data = arg_tensor(call, 0)
    check_float(call, data, "data")
    axes = _norm_axes(call, data)
    if data.ndim != -1:
        for i, name in ((1, "gamma"), (2, "beta")):
            _check_param(call, i, name, data, _dims(data, axes), ctx)
    return data


@layer_norm.legalize
def _legalize_layer_norm(bb: Any, call: Call) -> Expr:
    from ...topi import norm

    a = call.attrs
    axes = sorted(x % call.args[0].struct_info.ndim for x in a.axes)

    def fn(x: Any, g: Any, b: Any) -> Any:
        return norm.layer_norm(x, g if a.scale else None, b if a.center else None, axes, a.epsilon)

    return te_call(bb, call, fn, *call.args)


# -- group_norm ------------------------------------------------------------------------------------
@register_object("relax.attrs.GroupNormAttrs")
class GroupNormAttrs(Attrs):
    num_groups: int = 1
    channel_axis: int = 1
    axes: tuple = (2, 3)
    epsilon: float = 1e-5
    center: bool = True
    scale: bool = True


@register_op("relax.nn.group_norm", inputs=("data", "gamma", "beta"), attrs=GroupNormAttrs,
             op_pattern="out_elemwise_fusable")
def group_norm(data: Expr, gamma: Expr, beta: Expr, num_groups: int, channel_axis: int,
               axes: Axes, epsilon: float = 1e-5, center: bool = True,
               scale: bool = True) -> Call:
    """Normalise each group of ``C / num_groups`` channels together with ``axes``;
    ``gamma``/``beta`` are per channel."""
    return make_call("relax.nn.group_norm", [data, gamma, beta], GroupNormAttrs(
        num_groups=int(num_groups), channel_axis=int(channel_axis),
        axes=int_tuple(axes, None, "group_norm: axes"), epsilon=float(epsilon),
        center=bool(center), scale=bool(scale)))


@group_norm.infer
def _infer_group_norm(call: Call, ctx: Any) -> StructInfo:
    data = arg_tensor(call, 0)
    check_float(call, data, "data")
    a = call.attrs
    if a.num_groups < 1:
        raise op_error(call, f"num_groups must be positive, got {a.num_groups}")
    if data.ndim == -1:
        return data
    c = normalize_axis(call, a.channel_axis, data.ndim, "channel_axis")
    axes = _norm_axes(call, data)
    if c in axes:
        raise op_error(call, f"axes {list(a.axes)} must not contain the channel axis {c}")
    (channels,) = _dims(data, [c])
    if channels is not None and const_dim(channels) is not None and \
            const_dim(channels) % a.num_groups:
        raise op_error(call, f"{const_dim(channels)} channels are not divisible into "
                             f"{a.num_groups} groups")
    for i, name in ((1, "gamma"), (2, "beta")):
        _check_param(call, i, name, data, [channels], ctx)
    return data


@group_norm.legalize
def _legalize_group_norm(bb: Any, call: Call) -> Expr:
    from ...topi import norm

    a = call.attrs
    ndim = call.args[0].struct_info.ndim
    axes = sorted(x % ndim for x in a.axes)

    def fn(x: Any, g: Any, b: Any) -> Any:
        return norm.group_norm(x, g if a.scale else None, b if a.center else None, a.num_groups,
                               a.channel_axis % ndim, axes, a.epsilon)

    return te_call(bb, call, fn, *call.args)


# -- batch_norm ------------------------------------------------------------------------------------
@register_object("relax.attrs.BatchNormAttrs")
class BatchNormAttrs(Attrs):
    axis: int = 1
    epsilon: float = 1e-5
    center: bool = True
    scale: bool = True
    momentum: float = 0.1
    training: bool = False


@register_op("relax.nn.batch_norm",
             inputs=("data", "gamma", "beta", "moving_mean", "moving_var"), attrs=BatchNormAttrs,
             op_pattern="out_elemwise_fusable")
def batch_norm(data: Expr, gamma: Expr, beta: Expr, moving_mean: Expr, moving_var: Expr,
               axis: int = 1, epsilon: float = 1e-5, center: bool = True, scale: bool = True,
               momentum: float = 0.1, training: bool = False) -> Call:
    """Batch normalisation along channel ``axis``; returns (output, mean, var): the moving
    statistics at inference, the updated ones with ``training``."""
    return make_call("relax.nn.batch_norm", [data, gamma, beta, moving_mean, moving_var],
                     BatchNormAttrs(axis=int(axis), epsilon=float(epsilon), center=bool(center),
                                    scale=bool(scale), momentum=float(momentum),
                                    training=bool(training)))


@batch_norm.infer
def _infer_batch_norm(call: Call, ctx: Any) -> StructInfo:
    data = arg_tensor(call, 0)
    check_float(call, data, "data")
    channels = [None]
    if data.ndim != -1:
        c = normalize_axis(call, call.attrs.axis, data.ndim)
        channels = _dims(data, [c])
    for i, name in enumerate(("gamma", "beta", "moving_mean", "moving_var"), 1):
        _check_param(call, i, name, data, channels, ctx)
    stat = out_tensor(data, channels if channels[0] is not None else None, ndim=1)
    return TupleStructInfo([data, stat, stat])


@batch_norm.legalize
def _legalize_batch_norm(bb: Any, call: Call) -> Expr:
    from ...topi import norm

    a = call.attrs
    axis = a.axis % call.args[0].struct_info.ndim

    def fn(x: Any, g: Any, b: Any, mean: Any, var: Any) -> Any:
        return norm.batch_norm(x, g if a.scale else None, b if a.center else None, mean, var,
                               axis, a.epsilon, a.momentum, a.training)

    return te_call(bb, call, fn, *call.args)


# -- rms_norm --------------------------------------------------------------------------------------
@register_object("relax.attrs.RMSNormAttrs")
class RMSNormAttrs(Attrs):
    axes: tuple = (-1,)
    epsilon: float = 1e-5


@register_op("relax.nn.rms_norm", inputs=("data", "weight"), attrs=RMSNormAttrs,
             op_pattern="out_elemwise_fusable")
def rms_norm(data: Expr, weight: Expr, axes: Axes = -1, epsilon: float = 1e-5) -> Call:
    """``x / sqrt(mean(x ** 2, axes) + eps) * weight``."""
    return make_call("relax.nn.rms_norm", [data, weight], RMSNormAttrs(
        axes=int_tuple(axes, None, "rms_norm: axes"), epsilon=float(epsilon)))


@rms_norm.infer
def _infer_rms_norm(call: Call, ctx: Any) -> StructInfo:
    data = arg_tensor(call, 0)
    check_float(call, data, "data")
    axes = _norm_axes(call, data)
    if data.ndim != -1:
        _check_param(call, 1, "weight", data, _dims(data, axes), ctx)
    return data


@rms_norm.legalize
def _legalize_rms_norm(bb: Any, call: Call) -> Expr:
    from ...topi import norm

    axes = sorted(x % call.args[0].struct_info.ndim for x in call.attrs.axes)
    return te_call(bb, call, norm.rms_norm, call.args[0], call.args[1], axes,
                   call.attrs.epsilon)


# -- dropout -----------------------------------------------------------------------------------------
@register_object("relax.attrs.DropoutAttrs")
class DropoutAttrs(Attrs):
    rate: float = 0.5


@register_op("relax.nn.dropout", inputs=("data",), attrs=DropoutAttrs, op_pattern="opaque")
def dropout(data: Expr, rate: float = 0.5) -> Call:
    """Dropout; an inference compiler keeps every element: returns (data, a mask of ones)."""
    if not 0.0 <= float(rate) < 1.0:
        raise ValueError(f"dropout: rate must be in [0, 1), got {rate}")
    return make_call("relax.nn.dropout", [data], DropoutAttrs(rate=float(rate)))


@dropout.infer
def _infer_dropout(call: Call, ctx: Any) -> StructInfo:
    data = arg_tensor(call, 0)
    check_float(call, data, "data")
    return TupleStructInfo([data, data])


@dropout.legalize
def _legalize_dropout(bb: Any, call: Call) -> Expr:
    from tvm import te

    from ...topi._util import cast

    def fn(x: Any) -> Any:
        out = te.compute(x.shape, lambda *i: x(*i), name="T_dropout")
        mask = te.compute(x.shape, lambda *i: cast(1, x.dtype), name="T_dropout_mask")
        return [out, mask]

    return te_call(bb, call, fn, call.args[0])


# -- numpy semantics --------------------------------------------------------------------------
import numpy as _np  # noqa: E402


@batch_norm.evaluate
def _eval_batch_norm(call: Call, x: Any, gamma: Any, beta: Any, mean: Any, var: Any) -> tuple:
    from .._numpy import NumpyEvalError

    a = call.attrs
    if a.training:
        raise NumpyEvalError("relax.nn.batch_norm: only inference mode is evaluated")
    shape = [1] * x.ndim
    shape[a.axis % x.ndim] = -1
    out = (x - mean.reshape(shape)) / _np.sqrt(var.reshape(shape) + a.epsilon)
    if a.scale:
        out = out * gamma.reshape(shape)
    if a.center:
        out = out + beta.reshape(shape)
    return out, mean, var
