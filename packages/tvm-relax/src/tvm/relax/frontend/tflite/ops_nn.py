"""TFLite neural-network builtins: convolutions, fully connected, pooling, softmax,
activations, normalisations, resize, batch matmul.

Layouts stay as the model has them: activations NHWC, convolution weights OHWI
(``CONV_2D``), 1HWC (``DEPTHWISE_CONV_2D``, the ``IHWO`` kernel layout of a grouped
convolution) and OHWI (``TRANSPOSE_CONV``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import op as _op
from .common import OpContext, converter, same_padding, window_padding

_NHWC = "NHWC"


def _bias(ctx: OpContext, y: Any, i: int) -> Any:
    """``y`` plus the bias vector of input ``i`` (when the operator has one)."""
    if not ctx.has(i):
        return y
    return _op.add(y, ctx.input(i))


@converter("CONV_2D", max_version=8, options="Conv2DOptions")
def _conv2d(ctx: OpContext) -> Any:
    o = ctx.options
    x, w = ctx.input(0), ctx.input(1)
    if ctx.ndim(0) != 4 or ctx.ndim(1) != 4:
        raise ctx.error(f"expects 4-d input and filter, got {ctx.shape(0)} and {ctx.shape(1)}")
    kh, kw, cin_g = ctx.static_dims(1, [1, 2, 3], "the filter")
    h, wd, cin = ctx.static_dims(0, [1, 2, 3], "SAME padding") if o.Padding() == 0 else (
        0, 0, ctx.static_dims(0, [3], "the channel count")[0])
    if cin % cin_g:
        raise ctx.error(f"input channels {cin} are not a multiple of the filter's {cin_g}")
    strides, dil = (o.StrideH(), o.StrideW()), (o.DilationHFactor(), o.DilationWFactor())
    pad = window_padding(ctx, o.Padding(), (h, wd), (kh, kw), strides, dil)
    y = _op.nn.conv2d(x, w, strides, pad, dil, groups=cin // cin_g, data_layout=_NHWC,
                      kernel_layout="OHWI")
    return ctx.activation(_bias(ctx, y, 2))


@converter("DEPTHWISE_CONV_2D", max_version=7, options="DepthwiseConv2DOptions")
def _depthwise_conv2d(ctx: OpContext) -> Any:
    o = ctx.options
    x, w = ctx.input(0), ctx.input(1)
    one, kh, kw, cout = ctx.static_dims(1, [0, 1, 2, 3], "the filter")
    if one != 1:
        raise ctx.error(f"the filter must have shape [1, kh, kw, C * multiplier], got "
                        f"{ctx.shape(1)}")
    cin = ctx.static_dims(0, [3], "the channel count")[0]
    if cout % cin:
        raise ctx.error(f"filter channels {cout} are not a multiple of input channels {cin}")
    h, wd = ctx.static_dims(0, [1, 2], "SAME padding") if o.Padding() == 0 else (0, 0)
    strides, dil = (o.StrideH(), o.StrideW()), (o.DilationHFactor(), o.DilationWFactor())
    pad = window_padding(ctx, o.Padding(), (h, wd), (kh, kw), strides, dil)
    y = _op.nn.conv2d(x, w, strides, pad, dil, groups=cin, data_layout=_NHWC,
                      kernel_layout="IHWO")
    return ctx.activation(_bias(ctx, y, 2))


@converter("TRANSPOSE_CONV", max_version=5, options="TransposeConvOptions")
def _transpose_conv(ctx: OpContext) -> Any:
    o = ctx.options
    out_shape = ctx.int_list(0, "output_shape")
    w, x = ctx.input(1), ctx.input(2)
    cout, kh, kw, cin = ctx.static_dims(1, [0, 1, 2, 3], "the filter")
    in_hw = ctx.static_dims(2, [1, 2], "the transposed convolution")
    if len(out_shape) != 4 or out_shape[3] != cout:
        raise ctx.error(f"output_shape {out_shape} does not match the filter's {cout} "
                        "output channels")
    strides = (o.StrideH(), o.StrideW())
    pads, extra = [], []
    for size, out, k, s in zip(in_hw, out_shape[1:3], (kh, kw), strides):
        # the reference kernel writes input pixel i at output i * s - before + (0..k-1) and
        # drops what falls outside [0, out)
        full = (size - 1) * s + k
        if o.Padding() == 0:  # SAME
            before = max((-(-out // s) - 1) * s + k - out, 0) // 2
        elif o.Padding() == 1:  # VALID
            before = 0
        else:
            raise ctx.unsupported(f"unknown padding {o.Padding()}")
        after = full - before - out
        pads.append((before, max(after, 0)))
        extra.append(max(-after, 0))
    if extra[0] >= strides[0] or extra[1] >= strides[1] or cin != ctx.shape(2)[3]:
        raise ctx.error(f"output_shape {out_shape} does not fit input {ctx.shape(2)} and "
                        f"filter {ctx.shape(1)} with strides {list(strides)}")
    y = _op.nn.conv2d_transpose(
        x, w, strides, [pads[0][0], pads[1][0], pads[0][1], pads[1][1]], extra,
        data_layout=_NHWC, kernel_layout="OHWI")
    return ctx.activation(_bias(ctx, y, 3))


@converter("FULLY_CONNECTED", max_version=12, options="FullyConnectedOptions")
def _fully_connected(ctx: OpContext) -> Any:
    o = ctx.options
    if o.WeightsFormat() != 0:
        raise ctx.unsupported(f"weights_format {o.WeightsFormat()} (only DEFAULT is "
                              "supported; SHUFFLED4x16INT8 is an int8 layout)")
    x = ctx.input(0)
    n, k = ctx.static_dims(1, [0, 1], "the weights")
    w = ctx.const(1)
    wt = (ctx.const_expr(np.ascontiguousarray(w.T), ctx.dtype(1)) if w is not None
          else _op.permute_dims(ctx.input(1), [1, 0]))
    if not o.KeepNumDims():
        x = _op.reshape(x, [-1, k])
    elif ctx.shape(0)[-1] != k:
        raise ctx.error(f"keep_num_dims needs the input's last axis to be {k}, got "
                        f"{ctx.shape(0)}")
    y = _op.matmul(x, wt)
    return ctx.activation(_bias(ctx, y, 2))


def _pool(ctx: OpContext, kind: str) -> Any:
    o = ctx.options
    if ctx.ndim(0) != 4:
        raise ctx.error(f"expects a 4-d NHWC input, got {ctx.shape(0)}")
    kernel, strides = (o.FilterHeight(), o.FilterWidth()), (o.StrideH(), o.StrideW())
    hw = ctx.static_dims(0, [1, 2], "SAME padding") if o.Padding() == 0 else (0, 0)
    pad = window_padding(ctx, o.Padding(), hw, kernel, strides, (1, 1))
    x = ctx.input(0)
    if kind == "max":
        y = _op.nn.max_pool2d(x, kernel, strides, pad, layout=_NHWC)
    elif kind == "avg":
        y = _op.nn.avg_pool2d(x, kernel, strides, pad, count_include_pad=False, layout=_NHWC)
    else:  # l2: the root of the mean square over the window's valid pixels
        y = _op.sqrt(_op.nn.avg_pool2d(_op.multiply(x, x), kernel, strides, pad,
                                       count_include_pad=False, layout=_NHWC))
    return ctx.activation(y)


@converter("AVERAGE_POOL_2D", max_version=3, options="Pool2DOptions")
def _avg_pool(ctx: OpContext) -> Any:
    return _pool(ctx, "avg")


@converter("MAX_POOL_2D", max_version=3, options="Pool2DOptions")
def _max_pool(ctx: OpContext) -> Any:
    return _pool(ctx, "max")


@converter("L2_POOL_2D", max_version=1, options="Pool2DOptions")
def _l2_pool(ctx: OpContext) -> Any:
    return _pool(ctx, "l2")


@converter("SOFTMAX", max_version=3, options="SoftmaxOptions")
def _softmax(ctx: OpContext) -> Any:
    x, beta = ctx.input(0), float(ctx.options.Beta())
    if beta != 1.0:
        x = _op.multiply(x, ctx.scalar(beta, ctx.dtype(0)))
    return _op.nn.softmax(x, axis=-1)


@converter("LOG_SOFTMAX", max_version=2)
def _log_softmax(ctx: OpContext) -> Any:
    return _op.nn.log_softmax(ctx.input(0), axis=-1)


@converter("LOGISTIC", max_version=3)
def _logistic(ctx: OpContext) -> Any:
    return _op.sigmoid(ctx.input(0))


@converter("TANH", max_version=3)
def _tanh(ctx: OpContext) -> Any:
    return _op.tanh(ctx.input(0))


@converter("RELU", max_version=3)
def _relu(ctx: OpContext) -> Any:
    return _op.nn.relu(ctx.input(0))


@converter("RELU6", max_version=3)
def _relu6(ctx: OpContext) -> Any:
    return _op.clip(ctx.input(0), 0.0, 6.0)


@converter("RELU_N1_TO_1", max_version=1)
def _relu_n1_to_1(ctx: OpContext) -> Any:
    return _op.clip(ctx.input(0), -1.0, 1.0)


@converter("RELU_0_TO_1", max_version=1)
def _relu_0_to_1(ctx: OpContext) -> Any:
    return _op.clip(ctx.input(0), 0.0, 1.0)


@converter("LEAKY_RELU", max_version=2, options="LeakyReluOptions")
def _leaky_relu(ctx: OpContext) -> Any:
    x, dt = ctx.input(0), ctx.dtype(0)
    alpha = ctx.scalar(float(ctx.options.Alpha()), dt)
    return _op.where(_op.greater(x, ctx.scalar(0, dt)), x, _op.multiply(x, alpha))


@converter("PRELU", max_version=1)
def _prelu(ctx: OpContext) -> Any:
    x, alpha, dt = ctx.input(0), ctx.input(1), ctx.dtype(0)
    return _op.where(_op.greater_equal(x, ctx.scalar(0, dt)), x, _op.multiply(x, alpha))


@converter("HARD_SWISH", max_version=1)
def _hard_swish(ctx: OpContext) -> Any:
    x, dt = ctx.input(0), ctx.dtype(0)
    r6 = _op.clip(_op.add(x, ctx.scalar(3, dt)), 0.0, 6.0)
    return _op.divide(_op.multiply(x, r6), ctx.scalar(6, dt))


@converter("ELU", max_version=1)
def _elu(ctx: OpContext) -> Any:
    x, dt = ctx.input(0), ctx.dtype(0)
    return _op.where(_op.greater(x, ctx.scalar(0, dt)), x,
                     _op.subtract(_op.exp(x), ctx.scalar(1, dt)))


@converter("GELU", max_version=2, options="GeluOptions")
def _gelu(ctx: OpContext) -> Any:
    x = ctx.input(0)
    return _op.nn.gelu_tanh(x) if ctx.options.Approximate() else _op.nn.gelu(x)


@converter("L2_NORMALIZATION", max_version=2, options="L2NormOptions")
def _l2_norm(ctx: OpContext) -> Any:
    x, dt = ctx.input(0), ctx.dtype(0)
    norm = _op.sqrt(_op.sum(_op.multiply(x, x), axis=-1, keepdims=True))
    y = _op.divide(x, _op.maximum(norm, ctx.scalar(1e-6, dt)))
    return ctx.activation(y)


@converter("LOCAL_RESPONSE_NORMALIZATION", max_version=1,
           options="LocalResponseNormalizationOptions")
def _lrn(ctx: OpContext) -> Any:
    """x / (bias + alpha * sum of squares over channels c-r..c+r) ** beta (alpha is not
    divided by the window size, unlike ONNX's LRN)."""
    o = ctx.options
    x, dt = ctx.input(0), ctx.dtype(0)
    r, ndim = int(o.Radius()), ctx.ndim(0)
    c = ctx.static_dims(0, [ndim - 1], "the channel window")[0]
    sq = _op.multiply(x, x)
    padded = _op.nn.pad(sq, [0, 0] * (ndim - 1) + [r, r])
    total = None
    for k in range(2 * r + 1):
        part = _op.strided_slice(padded, [ndim - 1], [k], [k + c])
        total = part if total is None else _op.add(total, part)
    denom = _op.power(
        _op.add(ctx.scalar(float(o.Bias()), dt),
                _op.multiply(ctx.scalar(float(o.Alpha()), dt), total)),
        ctx.scalar(float(o.Beta()), dt))
    return _op.divide(x, denom)


def _resize(ctx: OpContext, method: str) -> Any:
    o = ctx.options
    size = ctx.int_list(1, "size")
    if len(size) != 2:
        raise ctx.error(f"size must have 2 values, got {size}")
    align, half = bool(o.AlignCorners()), bool(o.HalfPixelCenters())
    if align and half:
        raise ctx.unsupported("align_corners and half_pixel_centers together")
    if method == "linear":
        coord = "align_corners" if align else "half_pixel" if half else "asymmetric"
        rounding = "round"
    else:
        coord = ("align_corners" if align else "tf_half_pixel_for_nn" if half
                 else "asymmetric")
        rounding = "round" if align else "floor"
    return _op.image.resize2d(ctx.input(0), size, layout=_NHWC, method=method,
                              coordinate_transformation_mode=coord, rounding_method=rounding)


@converter("RESIZE_BILINEAR", max_version=4, options="ResizeBilinearOptions")
def _resize_bilinear(ctx: OpContext) -> Any:
    return _resize(ctx, "linear")


@converter("RESIZE_NEAREST_NEIGHBOR", max_version=4, options="ResizeNearestNeighborOptions")
def _resize_nearest(ctx: OpContext) -> Any:
    return _resize(ctx, "nearest_neighbor")


def _swap_last(x: Any, ndim: int) -> Any:
    return _op.permute_dims(x, list(range(ndim - 2)) + [ndim - 1, ndim - 2])


@converter("BATCH_MATMUL", max_version=4, options="BatchMatMulOptions")
def _batch_matmul(ctx: OpContext) -> Any:
    o = ctx.options
    x, y = ctx.input(0), ctx.input(1)
    if ctx.ndim(0) < 2 or ctx.ndim(1) < 2:
        raise ctx.error(f"expects inputs of rank >= 2, got {ctx.shape(0)} and {ctx.shape(1)}")
    if o.AdjX():
        x = _swap_last(x, ctx.ndim(0))
    if o.AdjY():
        y = _swap_last(y, ctx.ndim(1))
    return _op.matmul(x, y)


@converter("CONV_3D", max_version=1, options="Conv3DOptions")
def _conv3d(ctx: OpContext) -> Any:
    """NDHWC data, DHWIO filter [kd, kh, kw, in / groups, out]."""
    o = ctx.options
    x, w = ctx.input(0), ctx.input(1)
    if ctx.ndim(0) != 5 or ctx.ndim(1) != 5:
        raise ctx.error(f"expects 5-d input and filter, got {ctx.shape(0)} and {ctx.shape(1)}")
    kernel = ctx.static_dims(1, [0, 1, 2], "the filter")
    cin_g = ctx.static_dims(1, [3], "the filter")[0]
    cin = ctx.static_dims(0, [4], "the channel count")[0]
    strides = (o.StrideD(), o.StrideH(), o.StrideW())
    dil = (o.DilationDFactor(), o.DilationHFactor(), o.DilationWFactor())
    if o.Padding() == 0:
        sizes = ctx.static_dims(0, [1, 2, 3], "SAME padding")
        pairs = [same_padding(s, k, st, d) for s, k, st, d in zip(sizes, kernel, strides, dil)]
        pad = [p[0] for p in pairs] + [p[1] for p in pairs]
    elif o.Padding() == 1:
        pad = [0] * 6
    else:
        raise ctx.unsupported(f"unknown padding {o.Padding()}")
    if cin % cin_g:
        raise ctx.error(f"input channels {cin} are not a multiple of the filter's {cin_g}")
    y = _op.nn.conv3d(x, w, strides, pad, dil, groups=cin // cin_g, data_layout="NDHWC",
                      kernel_layout="DHWIO")
    return ctx.activation(_bias(ctx, y, 2))
