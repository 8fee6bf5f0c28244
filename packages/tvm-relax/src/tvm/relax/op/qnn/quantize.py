"""``relax.qnn.quantize`` / ``dequantize`` / ``requantize``: between float and integer
tensors, and between two integer scales.

Quantization parameters are attributes (compile-time values): ``scale`` and ``zero_point``
are tuples with one value (per tensor) or one per channel along ``axis``.  The real value of
an integer ``q`` is ``(q - zero_point) * scale``.

Rounding: ``quantize`` rounds ``x / scale`` half to even (ONNX QuantizeLinear, in float32)
then saturates to the output dtype.  ``requantize`` never uses floats at run time: the ratio
``input_scale / output_scale`` is turned at compile time into an int32 multiplier ``m`` and a
right shift ``s`` (``ratio ~= m * 2**-s``, ``m`` holding 31 significant bits), and
``(q - zp_in) * m`` (int64) is shifted right by ``s`` rounding half to even, then the output
zero point is added and the result saturated (see ``tvm.relax.topi.qnn``).
"""

from __future__ import annotations

from typing import Any, Optional, Sequence, Union

import numpy as np

from tvm.ffi import register_object

from ...expr import Call, Expr
from ...struct_info import StructInfo, TensorStructInfo
from .._lower import te_call
from ..base import Attrs, arg_tensor, make_call, normalize_axis, op_error, register_op
from ._common import check_channels, check_quant_dtype, float_params, int_params, param_args, pick

__all__ = ["quantize", "dequantize", "requantize", "QuantizeAttrs", "RequantizeAttrs",
           "requantize_params"]

Scale = Union[float, Sequence[float]]
ZeroPoint = Union[int, Sequence[int]]


@register_object("relax.attrs.QuantizeAttrs")
class QuantizeAttrs(Attrs):
    """``scale``/``zero_point``: one value or one per channel of ``axis``; ``out_dtype``:
    the result dtype (integer for quantize, float for dequantize)."""

    scale: tuple = (1.0,)
    zero_point: tuple = (0,)
    axis: int = -1
    out_dtype: str = "int8"


@register_object("relax.attrs.RequantizeAttrs")
class RequantizeAttrs(Attrs):
    """Input and output quantization parameters (one value or one per channel of ``axis``),
    the result dtype and the saturation bounds ``[out_min, out_max]`` (a fused ReLU raises
    ``out_min`` to the output zero point)."""

    input_scale: tuple = (1.0,)
    input_zero_point: tuple = (0,)
    output_scale: tuple = (1.0,)
    output_zero_point: tuple = (0,)
    axis: int = -1
    out_dtype: str = "int8"
    out_min: int = -128
    out_max: int = 127


def _infer_quant(call: Call, ctx: Any, require: str, params: dict[str, tuple]) -> StructInfo:
    from .._elementwise import is_float

    x = arg_tensor(call, 0)
    if not x.is_unknown_dtype:
        ok = is_float(x.dtype) if require == "float" else x.dtype in (
            "int8", "uint8", "int16", "uint16", "int32")
        if not ok:
            kind = "a floating-point" if require == "float" else "an 8/16/32-bit integer"
            raise op_error(call, f"argument 'data' must have {kind} dtype, got {x.dtype}")
    check_channels(call, x, call.attrs.axis, params)
    return TensorStructInfo(x.shape, call.attrs.out_dtype, x.ndim, x.vdevice)


# -- quantize ---------------------------------------------------------------------------------
@register_op("relax.qnn.quantize", inputs=("data",), attrs=QuantizeAttrs,
             op_pattern="elemwise")
def quantize(data: Expr, scale: Scale, zero_point: ZeroPoint = 0, axis: int = -1,
             out_dtype: str = "int8") -> Call:
    """``saturate(round_half_even(data / scale) + zero_point)`` as ``out_dtype``."""
    name = "relax.qnn.quantize"
    check_quant_dtype(name, "out_dtype", out_dtype)
    return make_call(name, [data], QuantizeAttrs(
        scale=float_params(name, "scale", scale),
        zero_point=int_params(name, "zero_point", zero_point, out_dtype),
        axis=int(axis), out_dtype=out_dtype))


@quantize.infer
def _infer_quantize(call: Call, ctx: Any) -> StructInfo:
    a = call.attrs
    return _infer_quant(call, ctx, "float", {"scale": a.scale, "zero_point": a.zero_point})


def _axis(call: Call) -> int:
    ndim = call.args[0].struct_info.ndim
    return normalize_axis(call, call.attrs.axis, ndim) if ndim > 0 else 0


def _legalize_scale_zp(bb: Any, call: Call, compute: Any) -> Expr:
    a = call.attrs
    scale, scale_t = param_args(a.scale, "float32")
    zp, zp_t = param_args(a.zero_point, "int32")
    extra = [t for t in (scale_t, zp_t) if t is not None]
    axis = _axis(call)

    def f(x: Any, *ts: Any) -> Any:
        it = iter(ts)
        s = next(it) if scale_t is not None else scale
        z = next(it) if zp_t is not None else zp
        return compute(x, s, z, axis, a.out_dtype)

    return te_call(bb, call, f, call.args[0], *extra)


@quantize.legalize
def _legalize_quantize(bb: Any, call: Call) -> Expr:
    from ...topi import qnn

    return _legalize_scale_zp(bb, call, qnn.quantize)


def _channel_view(call: Call, values: tuple, x: np.ndarray) -> np.ndarray:
    """``values`` shaped to broadcast along the call's axis of ``x``."""
    arr = np.asarray(values)
    if arr.size == 1 or x.ndim == 0:
        return arr.reshape(())
    shape = [1] * x.ndim
    shape[_axis(call)] = -1
    return arr.reshape(shape)


@quantize.evaluate
def _eval_quantize(call: Call, x: Any) -> Any:
    from ...topi.qnn import INT_RANGES

    a = call.attrs
    lo, hi = INT_RANGES[a.out_dtype]
    scale = _channel_view(call, a.scale, x).astype("float32")
    zp = _channel_view(call, a.zero_point, x).astype("float32")
    y = np.rint(np.asarray(x).astype("float32") / scale) + zp
    return np.clip(y, lo, hi).astype(a.out_dtype)


# -- dequantize -------------------------------------------------------------------------------
@register_op("relax.qnn.dequantize", inputs=("data",), attrs=QuantizeAttrs,
             op_pattern="elemwise")
def dequantize(data: Expr, scale: Scale, zero_point: ZeroPoint = 0, axis: int = -1,
               out_dtype: str = "float32") -> Call:
    """``float(data - zero_point) * scale`` as ``out_dtype`` (float32 or float16)."""
    name = "relax.qnn.dequantize"
    if out_dtype not in ("float32", "float16"):
        raise ValueError(f"{name}: out_dtype must be float32 or float16, got {out_dtype!r}")
    return make_call(name, [data], QuantizeAttrs(
        scale=float_params(name, "scale", scale),
        zero_point=int_params(name, "zero_point", zero_point), axis=int(axis),
        out_dtype=out_dtype))


@dequantize.infer
def _infer_dequantize(call: Call, ctx: Any) -> StructInfo:
    a = call.attrs
    return _infer_quant(call, ctx, "int", {"scale": a.scale, "zero_point": a.zero_point})


@dequantize.legalize
def _legalize_dequantize(bb: Any, call: Call) -> Expr:
    from ...topi import qnn

    return _legalize_scale_zp(bb, call, qnn.dequantize)


@dequantize.evaluate
def _eval_dequantize(call: Call, x: Any) -> Any:
    a = call.attrs
    v = np.asarray(x).astype("int32") - _channel_view(call, a.zero_point, x).astype("int32")
    return (v.astype("float32") * _channel_view(call, a.scale, x).astype("float32")).astype(
        a.out_dtype)


# -- requantize -------------------------------------------------------------------------------
@register_op("relax.qnn.requantize", inputs=("data",), attrs=RequantizeAttrs,
             op_pattern="elemwise")
def requantize(data: Expr, input_scale: Scale, input_zero_point: ZeroPoint,
               output_scale: Scale, output_zero_point: ZeroPoint = 0, axis: int = -1,
               out_dtype: str = "int8", out_min: Optional[int] = None,
               out_max: Optional[int] = None) -> Call:
    """``saturate(zp_out + fixed_point((data - zp_in) * input_scale / output_scale))``
    without floats at run time (module docstring: the rounding); ``out_min``/``out_max``
    narrow the saturation (a fused ReLU)."""
    from ...topi.qnn import INT_RANGES

    name = "relax.qnn.requantize"
    check_quant_dtype(name, "out_dtype", out_dtype)
    lo, hi = INT_RANGES[out_dtype]
    out_min = lo if out_min is None else int(out_min)
    out_max = hi if out_max is None else int(out_max)
    if not lo <= out_min <= out_max <= hi:
        raise ValueError(f"{name}: out_min {out_min} and out_max {out_max} must satisfy "
                         f"{lo} <= out_min <= out_max <= {hi} ({out_dtype})")
    attrs = RequantizeAttrs(
        input_scale=float_params(name, "input_scale", input_scale),
        input_zero_point=int_params(name, "input_zero_point", input_zero_point),
        output_scale=float_params(name, "output_scale", output_scale),
        output_zero_point=int_params(name, "output_zero_point", output_zero_point, out_dtype),
        axis=int(axis), out_dtype=out_dtype, out_min=out_min, out_max=out_max)
    requantize_params(attrs)  # the multipliers exist (a clear error now, not at build time)
    return make_call(name, [data], attrs)


def requantize_params(a: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per channel (length 1 if all parameters are per tensor): the fixed-point multiplier,
    its shift, the input and the output zero point (int64 arrays)."""
    from ...topi.qnn import fixed_point_multiplier

    params = (a.input_scale, a.output_scale, a.input_zero_point, a.output_zero_point)
    lengths = {len(p) for p in params} - {1}
    if len(lengths) > 1:
        raise ValueError(f"relax.qnn.requantize: per-channel parameters have different "
                         f"lengths {sorted(lengths)}")
    n = lengths.pop() if lengths else 1
    sin, sout = pick(a.input_scale, n), pick(a.output_scale, n)
    ms = [fixed_point_multiplier(float(i) / float(o), "relax.qnn.requantize")
          for i, o in zip(sin, sout)]
    m = np.array([v[0] for v in ms], np.int64)
    s = np.array([v[1] for v in ms], np.int64)
    return m, s, pick(a.input_zero_point, n).astype(np.int64), \
        pick(a.output_zero_point, n).astype(np.int64)


@requantize.infer
def _infer_requantize(call: Call, ctx: Any) -> StructInfo:
    a = call.attrs
    return _infer_quant(call, ctx, "int", {
        "input_scale": a.input_scale, "input_zero_point": a.input_zero_point,
        "output_scale": a.output_scale, "output_zero_point": a.output_zero_point})


@requantize.legalize
def _legalize_requantize(bb: Any, call: Call) -> Expr:
    from ...topi import qnn

    a = call.attrs
    values = requantize_params(a)
    dtypes = ("int32", "int32", "int32", "int32")
    # per-channel values that are all equal are one value (no table read in the kernel)
    pairs = [param_args(tuple(int(v) for v in (arr[:1] if np.all(arr == arr[0]) else arr)), dt)
             for arr, dt in zip(values, dtypes)]
    extra = [t for _, t in pairs if t is not None]
    axis = _axis(call)

    def f(x: Any, *ts: Any) -> Any:
        it = iter(ts)
        m, s, zi, zo = (next(it) if t is not None else v for v, t in pairs)
        return qnn.requantize(x, m, s, zi, zo, axis, a.out_dtype, (a.out_min, a.out_max))

    return te_call(bb, call, f, call.args[0], *extra)


@requantize.evaluate
def _eval_requantize(call: Call, x: Any) -> Any:
    from ...topi.qnn import rounding_shift_np

    a = call.attrs
    x = np.asarray(x)
    m, s, zi, zo = (_channel_view(call, tuple(v), x) for v in requantize_params(a))
    y = rounding_shift_np((x.astype(np.int64) - zi) * m, s) + zo
    return np.clip(y, a.out_min, a.out_max).astype(a.out_dtype)
