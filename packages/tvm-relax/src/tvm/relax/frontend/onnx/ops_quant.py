"""ONNX quantisation operators: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear,
MatMulInteger, QLinearMatMul, ConvInteger, QLinearConv and the com.microsoft QLinearAdd /
QLinearMul.

With constant quantization parameters and 8-bit tensors they import as the integer operators
of ``relax.qnn`` (int32 accumulation, fixed-point requantize; see ``docs/quantization.md``);
otherwise (parameters computed at run time, 16-bit, float8/int4 types, blocked or per-row
quantization, 1-d or 3-d convolutions) they are decomposed into float arithmetic.

Quantized types: 8/16-bit integers, int4/uint4/int2/uint2 (rounded half to even and clamped
to their range), the float8 formats (``x / scale``, clamped to the finite range when
``saturate``; their zero point is 0) and float4_e2m1fn / float6 (``x / scale + zero_point``,
converted as by Cast)."""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from . import low_precision as lowp
from .common import R, converter, onnx_dtype_to_str
from .ops_math import scalar

_RANGES = {"uint8": (0, 255), "int8": (-128, 127), "uint16": (0, 65535),
           "int16": (-32768, 32767), "int32": (-(2**31), 2**31 - 1),
           "int4": (-8, 7), "uint4": (0, 15), "int2": (-2, 1), "uint2": (0, 3)}
# float formats quantized as x / scale + zero_point, converted like Cast (no saturate attribute)
_FLOAT_QUANT = ("float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn")


def _per_axis(ctx: Any, value: Any, value_i: int, x_ndim: int, axis: int) -> Any:
    """A scale / zero point: scalars broadcast, 1-d ones along ``axis``."""
    if ctx.ndim(value_i) == 0 or x_ndim <= 1:
        return value
    shape = [1] * x_ndim
    shape[axis % x_ndim] = -1
    return R.reshape(value, shape)


def dequantize(ctx: Any, x: Any, x_dt: str, scale: Any, zp: Optional[Any], fdt: str) -> Any:
    xf = R.astype(x, fdt)
    if zp is not None and x_dt not in lowp.SATURATING and x_dt not in _FLOAT_QUANT:
        xf = xf - R.astype(zp, fdt)  # float8 zero points are 0; float4's is ignored
    return xf * scale


def quantize(ctx: Any, x: Any, scale: Any, zp: Optional[Any], out_dt: str, fdt: str,
             saturate: bool = True) -> Any:
    if out_dt in lowp.SATURATING:
        y = x / scale  # the zero point of a float8 type is 0
        if saturate:
            y = lowp.saturate(ctx, y, fdt, out_dt)
        return R.astype(y, out_dt)
    if out_dt in _FLOAT_QUANT:
        y = x / scale
        if zp is not None:
            y = y + R.astype(zp, fdt)
        return R.astype(y, out_dt)
    if out_dt not in _RANGES:
        raise ctx.unsupported(f"output dtype {out_dt}")
    lo, hi = _RANGES[out_dt]
    y = R.round(x / scale)
    if zp is not None:
        y = y + R.astype(zp, fdt)
    y = R.minimum(R.maximum(y, scalar(ctx, lo, fdt)), scalar(ctx, hi, fdt))
    return R.astype(y, out_dt)


def _block_check(ctx: Any) -> None:
    """Blocked quantisation is handled by repeating scales / zero points (see _blocked)."""


def _blocked(ctx: Any, value: Any, value_i: int, ndim: int, axis: int) -> Any:
    """A scale / zero point of blocked quantisation repeated to the input's shape."""
    block = ctx.attr("block_size", 0)
    if not block or value is None:
        return value
    return R.repeat(value, block, axis % ndim)


@converter("DequantizeLinear")
def _dequantize_linear(ctx: Any) -> Any:
    _block_check(ctx)
    if not ctx.attr("block_size", 0) and ctx.dtype(0) in _QNN_DEQUANT_TYPES \
            and ctx.dtype(1) == "float32":
        scale, zp = _const_param(ctx, 1), _const_param(ctx, 2, 0)
        if scale is not None and zp is not None:
            return R.qnn.dequantize(ctx.input(0), scale, zp, _qaxis(ctx, scale, zp))
    ndim = ctx.ndim(0)
    axis = ctx.attr("axis", 1)
    fdt = ctx.dtype(1)
    if ctx.attr("block_size", 0):
        scale = _blocked(ctx, ctx.input(1), 1, ndim, axis)
        zp = _blocked(ctx, ctx.input(2), 2, ndim, axis) if ctx.has(2) else None
    else:
        scale = _per_axis(ctx, ctx.input(1), 1, ndim, axis)
        zp = _per_axis(ctx, ctx.input(2), 2, ndim, axis) if ctx.has(2) else None
    return dequantize(ctx, ctx.input(0), ctx.dtype(0), scale, zp, fdt)


@converter("QuantizeLinear")
def _quantize_linear(ctx: Any) -> Any:
    _block_check(ctx)
    ndim = ctx.ndim(0)
    axis = ctx.attr("axis", 1)
    fdt = ctx.dtype(0)
    if ctx.has(2):
        out_dt = ctx.dtype(2)
    elif ctx.attr("output_dtype", 0):
        out_dt = onnx_dtype_to_str(ctx.attr("output_dtype"), f"{ctx.where()}: output_dtype: ")
    else:
        out_dt = "uint8"
    saturate = bool(ctx.attr("saturate", 1))
    x = ctx.input(0)
    if not ctx.attr("block_size", 0) and out_dt in _QNN_QUANT_TYPES and fdt == "float32" \
            and ctx.dtype(1) == "float32":
        scale, zp = _const_param(ctx, 1), _const_param(ctx, 2, 0)
        if scale is not None and zp is not None:
            return R.qnn.quantize(x, scale, zp, _qaxis(ctx, scale, zp), out_dt)
    if ctx.attr("block_size", 0):
        scale = _blocked(ctx, ctx.input(1), 1, ndim, axis)
        zp = _blocked(ctx, ctx.input(2), 2, ndim, axis) if ctx.has(2) else None
    else:
        scale = _per_axis(ctx, ctx.input(1), 1, ndim, axis)
        zp = _per_axis(ctx, ctx.input(2), 2, ndim, axis) if ctx.has(2) else None
    if ctx.dtype(1) != fdt:
        scale = R.astype(scale, fdt)
    return quantize(ctx, x, scale, zp, out_dt, fdt, saturate)


@converter("DynamicQuantizeLinear")
def _dynamic_quantize_linear(ctx: Any) -> Any:
    x = ctx.emit(ctx.input(0))
    fdt = "float32"
    zero = scalar(ctx, 0, fdt)
    hi = R.maximum(R.max(x), zero)
    lo = R.minimum(R.min(x), zero)
    scale = ctx.emit((hi - lo) / scalar(ctx, 255.0, fdt))
    zp_f = R.minimum(R.maximum(R.round(zero - lo / scale), zero), scalar(ctx, 255, fdt))
    zp = ctx.emit(R.astype(zp_f, "uint8"))
    y = quantize(ctx, x, scale, zp, "uint8", fdt)
    return [y, scale, zp]


@converter("MatMulInteger")
def _matmul_integer(ctx: Any) -> Any:
    q = _integer_matmul(ctx, 0, 2, 1, 3)
    if q is not None:
        return q
    a = R.astype(ctx.input(0), "int32")
    b = R.astype(ctx.input(1), "int32")
    if ctx.has(2):
        azp = R.astype(ctx.input(2), "int32")
        if ctx.ndim(2) == 1 and ctx.ndim(0) >= 2:
            azp = R.reshape(azp, [-1, 1])
        a = a - azp
    if ctx.has(3):
        b = b - R.astype(ctx.input(3), "int32")
    return R.matmul(a, b)


@converter("QLinearMatMul")
def _qlinear_matmul(ctx: Any) -> Any:
    acc = _integer_matmul(ctx, 0, 2, 3, 5)
    params = [_const_param(ctx, i) for i in (1, 4, 6, 7)]
    if acc is not None and all(p is not None for p in params) and ctx.dtype(1) == "float32" \
            and len(params[0]) == 1 and len(params[2]) == 1 and len(params[3]) == 1:
        a_scale, b_scale, y_scale, y_zp = params
        return R.qnn.requantize(acc, _product(a_scale, b_scale), 0, y_scale, y_zp, axis=-1,
                                out_dtype=ctx.dtype(7))
    fdt = "float32"
    a = dequantize(ctx, ctx.input(0), ctx.dtype(0), R.astype(ctx.input(1), fdt), ctx.input(2), fdt)
    b_scale = R.astype(ctx.input(4), fdt)
    b_zp = ctx.input(5)
    if ctx.ndim(4) == 1 and ctx.ndim(3) >= 2:
        b_scale = R.reshape(b_scale, [1, -1])
        b_zp = R.reshape(b_zp, [1, -1])
    b = dequantize(ctx, ctx.input(3), ctx.dtype(3), b_scale, b_zp, fdt)
    y = R.matmul(a, b)
    return quantize(ctx, y, R.astype(ctx.input(6), fdt), ctx.input(7), ctx.dtype(7), fdt)


def _conv_call(ctx: Any, x: Any, w: Any) -> Any:
    from .ops_nn import _auto_pads, _spatial

    nsp, kernel = _spatial(ctx, 1 if ctx.op_type == "ConvInteger" else 3)
    if nsp != 2:
        raise ctx.unsupported(f"{nsp}-d convolution")
    strides = list(ctx.attr("strides", [1] * nsp))
    dilations = list(ctx.attr("dilations", [1] * nsp))
    pads = _auto_pads(ctx, ctx.shape(0)[2:], kernel, strides, dilations)
    return R.nn.conv2d(x, w, strides, pads, dilations, ctx.attr("group", 1))


@converter("ConvInteger")
def _conv_integer(ctx: Any) -> Any:
    q = _integer_conv(ctx, 0, 2, 1, 3)
    if q is not None:
        return q
    x = R.astype(ctx.input(0), "int32")
    w = R.astype(ctx.input(1), "int32")
    if ctx.has(2):
        x = x - R.astype(ctx.input(2), "int32")
    if ctx.has(3):
        w = w - _per_axis(ctx, R.astype(ctx.input(3), "int32"), 3, 4, 0)
    return _conv_call(ctx, x, w)


@converter("QLinearConv")
def _qlinear_conv(ctx: Any) -> Any:
    acc = _integer_conv(ctx, 0, 2, 3, 5)
    params = [_const_param(ctx, i) for i in (1, 4, 6, 7)]
    if acc is not None and all(p is not None for p in params) and ctx.dtype(1) == "float32" \
            and len(params[0]) == 1 and len(params[2]) == 1 and len(params[3]) == 1 \
            and (not ctx.has(8) or ctx.dtype(8) == "int32"):
        x_scale, w_scale, y_scale, y_zp = params
        if ctx.has(8):
            acc = acc + R.reshape(ctx.input(8), [-1, 1, 1])
        return R.qnn.requantize(acc, _product(x_scale, w_scale), 0, y_scale, y_zp, axis=1,
                                out_dtype=ctx.dtype(7))
    fdt = "float32"
    x = dequantize(ctx, ctx.input(0), ctx.dtype(0), R.astype(ctx.input(1), fdt), ctx.input(2), fdt)
    w_scale = _per_axis(ctx, R.astype(ctx.input(4), fdt), 4, 4, 0)
    w_zp = _per_axis(ctx, ctx.input(5), 5, 4, 0)
    w = dequantize(ctx, ctx.input(3), ctx.dtype(3), w_scale, w_zp, fdt)
    y = _conv_call(ctx, x, w)
    if ctx.has(8):
        bias = R.astype(ctx.input(8), fdt) * R.astype(ctx.input(1), fdt) * R.astype(ctx.input(4), fdt)
        y = y + R.reshape(bias, [-1, 1, 1])
    return quantize(ctx, y, R.astype(ctx.input(6), fdt), ctx.input(7), ctx.dtype(7), fdt)


# -- the integer path (relax.qnn) -------------------------------------------------------------
_QNN_TYPES = ("int8", "uint8")  # operands of the integer conv / matmul / add / mul
_QNN_QUANT_TYPES = ("int8", "uint8", "int16", "uint16")
_QNN_DEQUANT_TYPES = _QNN_QUANT_TYPES + ("int32",)  # int32: the biases of QDQ models


def _const_param(ctx: Any, i: int, default: Optional[int] = None) -> Optional[tuple]:
    """A constant scale / zero point input as a tuple (``(default,)`` when absent and a
    default is given; None when it is not a constant of at most one dimension)."""
    if not ctx.has(i):
        return None if default is None else (default,)
    value = ctx.const(i)
    if value is None or np.ndim(value) > 1:
        return None
    return tuple(np.asarray(value).reshape(-1).tolist())


def _qaxis(ctx: Any, *params: tuple) -> int:
    return ctx.attr("axis", 1) if any(len(p) > 1 for p in params) else -1


def _product(a: tuple, b: tuple) -> tuple:
    """Per-channel products of two scales in float32 (as onnxruntime forms them)."""
    return tuple(np.float32(x) * np.float32(y) for x, y in np.broadcast(a, b))


def _integer_matmul(ctx: Any, a_i: int, za_i: int, b_i: int, zb_i: int) -> Any:
    """``relax.qnn.matmul`` of 8-bit operands of at least 2 dimensions with constant zero
    points (a's per tensor, b's per tensor or per column), None otherwise."""
    if ctx.dtype(a_i) not in _QNN_TYPES or ctx.dtype(b_i) not in _QNN_TYPES:
        return None
    if ctx.ndim(a_i) < 2 or ctx.ndim(b_i) < 2:
        return None
    za, zb = _const_param(ctx, za_i, 0), _const_param(ctx, zb_i, 0)
    if za is None or zb is None or len(za) != 1:
        return None
    return R.qnn.matmul(ctx.input(a_i), ctx.input(b_i), za[0], zb)


def _integer_conv(ctx: Any, x_i: int, zx_i: int, w_i: int, zw_i: int) -> Any:
    """``relax.qnn.conv2d`` of an 8-bit 2-d convolution with constant zero points, None
    otherwise."""
    from .ops_nn import _auto_pads, _spatial

    if ctx.dtype(x_i) not in _QNN_TYPES or ctx.dtype(w_i) not in _QNN_TYPES or ctx.ndim(x_i) != 4:
        return None
    zx, zw = _const_param(ctx, zx_i, 0), _const_param(ctx, zw_i, 0)
    if zx is None or zw is None or len(zx) != 1:
        return None
    _, kernel = _spatial(ctx, w_i)
    strides = list(ctx.attr("strides", [1, 1]))
    dilations = list(ctx.attr("dilations", [1, 1]))
    pads = _auto_pads(ctx, ctx.shape(x_i)[2:], kernel, strides, dilations)
    return R.qnn.conv2d(ctx.input(x_i), ctx.input(w_i), zx[0], zw, strides, pads, dilations,
                        ctx.attr("group", 1))


def _qlinear_binary(ctx: Any, op: Any) -> Any:
    params = [_const_param(ctx, i, 0 if i in (2, 5, 7) else None) for i in (1, 2, 4, 5, 6, 7)]
    if ctx.dtype(0) not in _QNN_TYPES or ctx.dtype(3) not in _QNN_TYPES \
            or any(p is None or len(p) != 1 for p in params):
        raise ctx.unsupported("QLinearAdd/QLinearMul need constant per-tensor scales and zero "
                              "points and 8-bit inputs")
    (sa,), (za,), (sb,), (zb,), (sy,), (zy,) = params
    out_dt = ctx.dtype(7) if ctx.has(7) else ctx.dtype(0)
    return op(ctx.input(0), ctx.input(3), sa, za, sb, zb, sy, zy, out_dt)


@converter("QLinearAdd", domain="com.microsoft")
def _qlinear_add(ctx: Any) -> Any:
    return _qlinear_binary(ctx, R.qnn.add)


@converter("QLinearMul", domain="com.microsoft")
def _qlinear_mul(ctx: Any) -> Any:
    return _qlinear_binary(ctx, R.qnn.multiply)
