"""FoldBatchnormToConv2D: fold an inference batch-norm into the convolution before it.

::

    mod = relax.transform.FoldBatchnormToConv2D()(mod)

    # before                                       # after
    lv  = R.nn.conv2d(x, W)                        lv  = R.nn.conv2d(x, W * s)      (W * s folded)
    bn  = R.nn.batch_norm(lv, g, b, mean, var)     out = R.add(lv, shift)           (1, C, 1, 1)
    out = bn[0]

with ``s = gamma / sqrt(var + eps)`` and ``shift = beta - mean * s``.  A per-channel bias
added between the two (``conv2d(x, W) + bias``, either operand order) is folded into the
shift: ``(bias - mean) * s + beta``.

A batch-norm that a frontend already decomposed into a per-channel scale and shift
(``add(multiply(conv2d(x, W), s), t)``; ONNX BatchNormalization imports so) folds the same
way: ``add(conv2d(x, W * s), t)``, a bias between convolution and scale joining the shift as
``t + bias * s``.

Applies when: the batch-norm is not in training mode and normalises the convolution's
output channel axis; the weight, the batch-norm parameters (and the bias) are constants
(directly, or variables bound to constants); the convolution (and the bias add) feed
nothing but the batch-norm, so nothing is computed twice.  The new weight and shift are
computed with numpy (in float64, cast back to the weight / output dtype).  Any kernel
layout with an ``O`` axis works, grouped and depthwise convolutions included.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from tvm.ffi.dtype import to_numpy_dtype

from ..dpl import Match, RewriteRule, constant_value, is_const, is_op, is_tuple_get_item, rewrite_pass, wildcard
from ..analysis.struct_info_analysis import get_static_shape
from ..expr import Call, Constant, Expr
from ..struct_info import TensorStructInfo

__all__ = ["FoldBatchnormToConv2D", "fold_batchnorm_rules"]


def _channel_vector(bias: np.ndarray, ndim: int, axis: int, channels: int) -> Optional[np.ndarray]:
    """A per-channel bias as a vector of ``channels`` values (None if not per-channel)."""
    if bias.ndim > ndim:
        return None
    full = bias.reshape((1,) * (ndim - bias.ndim) + bias.shape)
    if any(d != 1 for i, d in enumerate(full.shape) if i != axis):
        return None
    if full.shape[axis] not in (1, channels):
        return None
    return np.broadcast_to(full.reshape(-1), (channels,)).astype(np.float64)


def fold_batchnorm_rules() -> list[RewriteRule]:
    """The rule table of :func:`FoldBatchnormToConv2D`."""
    x, weight = wildcard(), is_const()
    conv = is_op("relax.nn.conv2d")(x, weight)
    bias = is_const()
    with_bias = is_op("relax.add")(conv, bias) | is_op("relax.add")(bias, conv)
    gamma, beta, mean, var = is_const(), is_const(), is_const(), is_const()
    bn = is_op("relax.nn.batch_norm")(conv | with_bias, gamma, beta, mean, var)
    pattern = is_tuple_get_item(bn, 0)

    def rewrite(item: Expr, m: Match) -> Optional[Expr]:
        from ..op import add

        bn_call: Call = m.value(bn)
        conv_call: Call = m.value(conv)
        attrs = bn_call.attrs
        if attrs.training:
            return None
        ctx = m.ctx
        if ctx.num_uses(m[conv]) != 1 or (bias in m and ctx.num_uses(bn_call.args[0]) != 1):
            return None
        out = conv_call.struct_info
        if not isinstance(out, TensorStructInfo) or out.ndim != 4:
            return None
        layout = conv_call.attrs.out_layout
        channel_axis = layout.index("C")
        if attrs.axis % 4 != channel_axis:
            return None
        w = constant_value(m.value(weight))
        kernel_layout = conv_call.attrs.kernel_layout
        o_axis = kernel_layout.index("O")
        channels = w.shape[o_axis]
        params = [constant_value(m.value(p)) for p in (gamma, beta, mean, var)]
        if any(p is None or p.size != channels for p in params):
            return None
        g, b, mu, v = (p.reshape(-1).astype(np.float64) for p in params)
        scale = 1.0 / np.sqrt(v + attrs.epsilon)
        if attrs.scale:
            scale = scale * g
        shift = -mu * scale
        if bias in m:
            vec = _channel_vector(constant_value(m.value(bias)), 4, channel_axis, channels)
            if vec is None:
                return None
            shift = shift + vec * scale
        if attrs.center:
            shift = shift + b
        shape = [1] * 4
        shape[o_axis] = channels
        new_w = (w.astype(np.float64) * scale.reshape(shape)).astype(w.dtype)
        shift_shape = [1] * 4
        shift_shape[channel_axis] = channels
        out_dtype = item.struct_info.dtype
        new_shift = shift.reshape(shift_shape).astype(to_numpy_dtype(out_dtype))
        new_conv = Call(conv_call.op, [m[x], Constant(new_w)], conv_call.attrs,
                        span=conv_call.span)
        return add(new_conv, Constant(new_shift))

    return [RewriteRule(pattern, rewrite, "fold-batchnorm-into-conv2d"),
            _fold_channel_scale_rule()]


def _fold_channel_scale_rule() -> RewriteRule:
    """``add(multiply(conv2d(x, W) [+ bias], s), t)`` with constant per-channel ``s`` and
    ``t`` -> ``add(conv2d(x, W * s), t + bias * s)``."""
    x, weight = wildcard(), is_const()
    conv = is_op("relax.nn.conv2d")(x, weight)
    bias, scale, shift = is_const(), is_const(), is_const()
    with_bias = is_op("relax.add")(conv, bias) | is_op("relax.add")(bias, conv)
    inner = conv | with_bias
    scaled_right = is_op("relax.multiply")(inner, scale)
    scaled_left = is_op("relax.multiply")(scale, inner)
    scaled = scaled_right | scaled_left
    pattern = is_op("relax.add")(scaled, shift) | is_op("relax.add")(shift, scaled)

    def rewrite(item: Expr, m: Match) -> Optional[Expr]:
        from ..op import add

        conv_call: Call = m.value(conv)
        ctx = m.ctx
        product = m[scaled_right] if scaled_right in m else m[scaled_left]
        single = [m[conv], product] + ([m[with_bias]] if bias in m else [])
        if any(ctx.num_uses(v) != 1 for v in single):
            return None
        out = conv_call.struct_info
        result = item.struct_info
        if not isinstance(out, TensorStructInfo) or out.ndim != 4 or not isinstance(
                result, TensorStructInfo) or result.dtype != out.dtype \
                or get_static_shape(result) != get_static_shape(out) \
                or get_static_shape(out) is None:
            return None  # the scale or shift must not broadcast the result to a new shape
        channel_axis = conv_call.attrs.out_layout.index("C")
        w = constant_value(m.value(weight))
        o_axis = conv_call.attrs.kernel_layout.index("O")
        channels = w.shape[o_axis]
        vectors = []
        for part in (scale, shift) + ((bias,) if bias in m else ()):
            value = constant_value(m.value(part))
            vec = None if value is None else _channel_vector(value, 4, channel_axis, channels)
            if vec is None or not np.all(np.isfinite(vec)):
                return None
            vectors.append(vec)
        s, t = vectors[0], vectors[1]
        if bias in m:
            t = t + vectors[2] * s
        shape = [1] * 4
        shape[o_axis] = channels
        new_w = (w.astype(np.float64) * s.reshape(shape)).astype(w.dtype)
        new_conv = Call(conv_call.op, [m[x], Constant(new_w)], conv_call.attrs,
                        span=conv_call.span)
        shift_shape = [1] * 4
        shift_shape[channel_axis] = channels
        return add(new_conv, Constant(t.reshape(shift_shape).astype(to_numpy_dtype(out.dtype))))

    return RewriteRule(pattern, rewrite, "fold-channel-scale-into-conv2d")


def FoldBatchnormToConv2D() -> Any:  # noqa: N802 - pass constructors are CamelCase
    """The pass folding inference batch-norms into the preceding conv2d (module docstring)."""
    return rewrite_pass(fold_batchnorm_rules, "FoldBatchnormToConv2D", opt_level=2)
