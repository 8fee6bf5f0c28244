"""Converters for the gamma family and friends: ``lgamma``, ``digamma``, ``polygamma``,
``special_zeta``, ``igamma``/``igammac``, ``special_erfcx``, ``special_ndtri`` (the Relax ops of
:mod:`tvm.relax.op.special`), ``nextafter`` and ``frexp`` (bit manipulation with
``relax.bitcast``).  ``mvlgamma``, ``special_log_ndtr``, ``special_gammaln``/``psi`` reach
these through torch's decompositions.

Integer inputs compute in the float dtype torch records for the node.
"""

from __future__ import annotations

from typing import Any

from ... import op as _op
from .common import NodeContext, converter
from .ops_math import _const, _no_out, _operands_as_out, as_dtype

__all__: list[str] = []


@converter("aten.lgamma.default", "aten.digamma.default", "aten.special_erfcx.default",
           "aten.special_ndtri.default")
def _special_unary(ctx: NodeContext) -> Any:
    _no_out(ctx)
    name = ctx.op.split(".")[1].replace("special_", "")
    return getattr(_op, name)(as_dtype(ctx, ctx.arg(0, "self"), ctx.out_dtype()))


@converter("aten.polygamma.default")
def _polygamma(ctx: NodeContext) -> Any:
    _no_out(ctx)
    n = ctx.arg(0, "n")
    if not isinstance(n, int):
        raise ctx.unsupported(f"polygamma needs a constant integer order n, got {n!r}")
    if n < 0:
        raise ctx.error(f"polygamma does not support negative n, got n={n}")
    return _op.polygamma(as_dtype(ctx, ctx.arg(1, "self"), ctx.out_dtype()), n)


@converter("aten.special_zeta.default", "aten.special_zeta.self_scalar",
           "aten.special_zeta.other_scalar", "aten.igamma.default", "aten.igammac.default",
           "aten.nextafter.default")
def _special_binary(ctx: NodeContext) -> Any:
    _no_out(ctx)
    name = ctx.op.split(".")[1].replace("special_", "")
    a, b = _operands_as_out(ctx, 0, 1)
    return getattr(_op, name)(a, b)


# (total bits, mantissa bits, exponent bits) of the float formats frexp splits
_FLOAT_LAYOUT = {"float16": (16, 10, 5), "bfloat16": (16, 7, 8), "float32": (32, 23, 8),
                 "float64": (64, 52, 11)}


@converter("aten.frexp.Tensor")
def _frexp(ctx: NodeContext) -> Any:
    """``x = mantissa * 2^exponent`` with ``0.5 <= |mantissa| < 1`` (int32 exponent); zero,
    inf and NaN give ``(x, 0)``, like C's frexp.  Subnormals are scaled into the normal range
    first."""
    x = ctx.tensor(0)
    dtype = ctx.dtype(x)
    if dtype not in _FLOAT_LAYOUT:
        raise ctx.unsupported(f"frexp of dtype {dtype} (needs a float16/bfloat16/float32/"
                              "float64 tensor)")
    width, mant, ebits = _FLOAT_LAYOUT[dtype]
    idt = f"int{width}"
    bias = (1 << (ebits - 1)) - 1
    ic = lambda v: ctx.const(v, idt)  # noqa: E731
    tiny = 2.0 ** (1 - bias)  # the smallest normal
    sub = _op.logical_and(_op.less(_op.abs(x), _const(ctx, tiny, x)),
                          _op.not_equal(x, _const(ctx, 0, x)))
    xs = ctx.emit(_op.where(sub, _op.multiply(x, _const(ctx, 2.0 ** mant, x)), x))
    bits = ctx.emit(_op.bitcast(xs, idt))
    biased = _op.bitwise_and(_op.right_shift(bits, ic(mant)), ic((1 << ebits) - 1))
    exponent = _op.subtract(_op.subtract(biased, ic(bias - 1)),
                            _op.where(sub, ic(mant), ic(0)))
    field = ((1 << ebits) - 1) << mant
    if field >= 1 << (width - 1):  # never: the sign bit is above the exponent field
        raise ctx.error("unexpected float layout")
    keep = ~field  # a negative int of the same width: sign and mantissa bits
    mbits = _op.bitwise_or(_op.bitwise_and(bits, ic(keep)), ic((bias - 1) << mant))
    mantissa = _op.bitcast(mbits, dtype)
    special = ctx.emit(_op.logical_not(_op.logical_and(
        _op.isfinite(x), _op.not_equal(x, _const(ctx, 0, x)))))
    mantissa = _op.where(special, x, mantissa)
    exponent = _op.where(special, ic(0), exponent)
    return [mantissa, ctx.astype(exponent, "int32")]
