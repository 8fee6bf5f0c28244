"""TFLite elementwise builtins: arithmetic (with fused activations), comparisons, logic,
bitwise ops, unary math, casts, reductions, arg max/min, cumsum, and QUANTIZE, DEQUANTIZE
and FAKE_QUANT as float arithmetic.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import op as _op
from .common import OpContext, converter, dequantize_array, qnn_params, tflite_dtype

_FUSED_BINARY = {  # builtin: (relax op, options table, max version)
    "ADD": (_op.add, "AddOptions", 5),
    "SUB": (_op.subtract, "SubOptions", 5),
    "MUL": (_op.multiply, "MulOptions", 7),
    "DIV": (_op.divide, "DivOptions", 2),
}
_BINARY = {  # builtin: (relax op, max version)
    "MAXIMUM": (_op.maximum, 4), "MINIMUM": (_op.minimum, 4), "POW": (_op.power, 1),
    "FLOOR_DIV": (_op.floor_divide, 3), "FLOOR_MOD": (_op.floor_mod, 2),
    "EQUAL": (_op.equal, 4), "NOT_EQUAL": (_op.not_equal, 3), "LESS": (_op.less, 3),
    "LESS_EQUAL": (_op.less_equal, 3), "GREATER": (_op.greater, 3),
    "GREATER_EQUAL": (_op.greater_equal, 3), "LOGICAL_AND": (_op.logical_and, 1),
    "LOGICAL_OR": (_op.logical_or, 1), "ATAN2": (_op.atan2, 1),
    "BITWISE_XOR": (_op.bitwise_xor, 1), "RIGHT_SHIFT": (_op.right_shift, 1),
}
_UNARY = {  # builtin: (relax op, max version)
    "ABS": (_op.abs, 5), "EXP": (_op.exp, 2), "LOG": (_op.log, 2), "SQRT": (_op.sqrt, 1),
    "RSQRT": (_op.rsqrt, 3), "SIN": (_op.sin, 1), "COS": (_op.cos, 1),
    "NEG": (_op.negative, 1), "FLOOR": (_op.floor, 1), "CEIL": (_op.ceil, 1),
    "SQUARE": (_op.square, 1), "SIGN": (_op.sign, 2), "LOGICAL_NOT": (_op.logical_not, 1),
}


def _register_fused(name: str, fn: Any, options: str, version: int) -> None:
    @converter(name, max_version=version, options=options)
    def impl(ctx: OpContext) -> Any:
        return ctx.activation(fn(ctx.input(0), ctx.input(1)))


def _register_binary(name: str, fn: Any, version: int) -> None:
    @converter(name, max_version=version)
    def impl(ctx: OpContext) -> Any:
        return fn(ctx.input(0), ctx.input(1))


def _register_unary(name: str, fn: Any, version: int) -> None:
    @converter(name, max_version=version)
    def impl(ctx: OpContext) -> Any:
        return fn(ctx.input(0))


for _name, (_fn, _opts, _ver) in _FUSED_BINARY.items():
    _register_fused(_name, _fn, _opts, _ver)
for _name, (_fn, _ver) in _BINARY.items():
    _register_binary(_name, _fn, _ver)
for _name, (_fn, _ver) in _UNARY.items():
    _register_unary(_name, _fn, _ver)


@converter("ROUND", max_version=1)
def _round(ctx: OpContext) -> Any:
    """Round half to even, as TFLite's ROUND (and relax.round)."""
    return _op.round(ctx.input(0))


@converter("SQUARED_DIFFERENCE", max_version=2)
def _squared_difference(ctx: OpContext) -> Any:
    d = _op.subtract(ctx.input(0), ctx.input(1))
    return _op.multiply(d, d)


@converter("ADD_N", max_version=1)
def _add_n(ctx: OpContext) -> Any:
    out = ctx.input(0)
    for i in range(1, ctx.num_inputs):
        out = _op.add(out, ctx.input(i))
    return out


@converter("SELECT", "SELECT_V2", max_version=2)
def _select(ctx: OpContext) -> Any:
    cond = ctx.input(0)
    if ctx.name == "SELECT" and ctx.ndim(0) == 1 and ctx.ndim(1) > 1:
        # SELECT with a vector condition picks whole rows
        cond = _op.reshape(cond, [-1] + [1] * (ctx.ndim(1) - 1))
    return _op.where(cond, ctx.input(1), ctx.input(2))


@converter("CAST", max_version=6)
def _cast(ctx: OpContext) -> Any:
    return _op.astype(ctx.input(0), ctx.output_dtype())


def _quant(ctx: OpContext, tensor: int) -> Any:
    """Tensor ``tensor``'s quantization parameters (an error when it has none)."""
    info = ctx.importer.tensor(tensor)
    if info.quant is None:
        raise ctx.error(f"tensor {info.name!r} has no quantization parameters")
    return info.quant


@converter("DEQUANTIZE", max_version=6)
def _dequantize(ctx: OpContext) -> Any:
    """``relax.qnn.dequantize`` (int8/uint8/int16, per tensor or per channel); a float16
    input is cast (float16 weights); constant weights are dequantized once, here."""
    x, in_dt, out_dt = ctx.input(0), ctx.dtype(0), ctx.output_dtype()
    if in_dt in ("float16", "bfloat16"):
        return _op.astype(x, out_dt)
    quant = _quant(ctx, ctx.op.inputs[0])
    value = ctx.const(0)
    if value is not None:
        return ctx.const_expr(dequantize_array(value, quant), out_dt)
    return _op.qnn.dequantize(x, *qnn_params(quant), out_dt)


@converter("QUANTIZE", max_version=3)
def _quantize(ctx: OpContext) -> Any:
    """Float to integer: ``relax.qnn.quantize`` (``clamp(round(x / scale) + zero_point)``,
    ties to even as LiteRT's builtin kernel; its reference kernel's TfLiteRound rounds them
    away from zero); integer to integer (a change of scale or type): ``relax.qnn.requantize``."""
    x, out_dt = ctx.input(0), ctx.output_dtype()
    scale, zp, axis = qnn_params(_quant(ctx, ctx.output_ids[0]))
    if ctx.dtype(0).startswith("float"):
        return _op.qnn.quantize(x, scale, zp, axis, out_dt)
    in_scale, in_zp, _ = qnn_params(_quant(ctx, ctx.op.inputs[0]))
    if len(scale) > 1 or len(in_scale) > 1:
        raise ctx.unsupported("requantization per channel is not supported")
    return _op.qnn.requantize(x, in_scale, in_zp, scale, zp, out_dtype=out_dt)


def _axes(ctx: OpContext, i: int) -> list[int]:
    axes = ctx.int_list(i, "axis")
    ndim = ctx.ndim(0)
    out = sorted({a + ndim if a < 0 else a for a in axes})
    if any(not 0 <= a < ndim for a in out):
        raise ctx.error(f"axis {axes} is out of range for rank {ndim}")
    return out


_REDUCE = {"MEAN": (_op.mean, 3), "SUM": (_op.sum, 2), "REDUCE_MAX": (_op.max, 3),
           "REDUCE_MIN": (_op.min, 3), "REDUCE_PROD": (_op.prod, 2)}


def _register_reduce(name: str, fn: Any, version: int) -> None:
    @converter(name, max_version=version, options="ReducerOptions")
    def impl(ctx: OpContext) -> Any:
        axes = _axes(ctx, 1)
        if not axes:
            return ctx.input(0)
        return fn(ctx.input(0), axes, keepdims=bool(ctx.options.KeepDims()))


for _name, (_fn, _ver) in _REDUCE.items():
    _register_reduce(_name, _fn, _ver)


@converter("REDUCE_ANY", "REDUCE_ALL", max_version=1, options="ReducerOptions")
def _reduce_logical(ctx: OpContext) -> Any:
    axes = _axes(ctx, 1)
    x = _op.astype(ctx.input(0), "int32")
    fn = _op.max if ctx.name == "REDUCE_ANY" else _op.min
    return _op.astype(fn(x, axes, keepdims=bool(ctx.options.KeepDims())), "bool")


def _arg(ctx: OpContext, fn: Any) -> Any:
    axis = ctx.int_list(1, "axis")
    if len(axis) != 1:
        raise ctx.error(f"axis must be one value, got {axis}")
    out_dt = tflite_dtype(ctx.options.OutputType(), ctx.where())
    return _op.astype(fn(ctx.input(0), axis[0]), out_dt)


@converter("ARG_MAX", max_version=3, options="ArgMaxOptions")
def _arg_max(ctx: OpContext) -> Any:
    return _arg(ctx, _op.argmax)


@converter("ARG_MIN", max_version=3, options="ArgMinOptions")
def _arg_min(ctx: OpContext) -> Any:
    return _arg(ctx, _op.argmin)


@converter("CUMSUM", max_version=1, options="CumsumOptions")
def _cumsum(ctx: OpContext) -> Any:
    axis = ctx.int_list(1, "axis")
    x = ctx.input(0)
    if ctx.options.Reverse():
        x = _op.flip(x, axis[0])
    y = _op.cumsum(x, axis[0], exclusive=bool(ctx.options.Exclusive()))
    return _op.flip(y, axis[0]) if ctx.options.Reverse() else y


@converter("FAKE_QUANT", max_version=2, options="FakeQuantOptions")
def _fake_quant(ctx: OpContext) -> Any:
    """tf.quantization.fake_quant_with_min_max_args: [min, max] nudged so that zero is a
    grid point, x clamped to it and rounded to the grid of 2**num_bits (- narrow) steps."""
    o = ctx.options
    lo, hi, bits = float(o.Min()), float(o.Max()), int(o.NumBits())
    if o.NarrowRange():  # LiteRT refuses it too: it is meant for weights only
        raise ctx.unsupported("narrow_range is not supported")
    qmin, qmax = 0, (1 << bits) - 1
    if not hi > lo:
        raise ctx.error(f"min {lo} must be below max {hi}")
    scale = np.float32((hi - lo) / (qmax - qmin))
    zp_from_min = np.float32(qmin) - np.float32(lo) / scale
    nudged_zp = float(np.clip(np.floor(zp_from_min + np.float32(0.5)), qmin, qmax))
    nmin, nmax = np.float32((qmin - nudged_zp) * scale), np.float32((qmax - nudged_zp) * scale)
    x, dt = ctx.input(0), ctx.dtype(0)
    shifted = _op.subtract(_op.clip(x, float(nmin), float(nmax)), ctx.scalar(nmin, dt))
    steps = _op.floor(_op.add(_op.multiply(shifted, ctx.scalar(1.0 / scale, dt)),
                              ctx.scalar(0.5, dt)))
    return _op.add(_op.multiply(steps, ctx.scalar(scale, dt)), ctx.scalar(nmin, dt))
