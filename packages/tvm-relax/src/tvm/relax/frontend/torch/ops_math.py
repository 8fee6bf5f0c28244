"""Converters for elementwise ATen ops: unary math, arithmetic with torch's type promotion,
comparisons, logical and bitwise ops, ``where``/``clamp`` and activations.

Every converter computes in the dtype torch records for the node (``ctx.out_dtype()``) or,
for comparisons, in the operands' promoted dtype, and follows eager's NaN and signed-zero
behaviour: the Relax ``maximum``/``minimum``/``clip``/``relu`` propagate NaN, float floor
division and ``remainder`` use torch's fmod-based formulas, integer ``div`` with
``rounding_mode="trunc"`` truncates and ``"floor"`` floors.
"""

from __future__ import annotations

import math
from typing import Any, Callable

from ... import op as _op
from .common import NodeContext, converter

__all__: list[str] = []


def is_float(dtype: str) -> bool:
    return dtype.startswith(("float", "bfloat"))


def _const(ctx: NodeContext, value: Any, like: Any) -> Any:
    """A constant of ``like``'s dtype (``like``: a bound value or a dtype string)."""
    return ctx.const(value, like if isinstance(like, str) else ctx.dtype(like))


def bound(ctx: NodeContext, expr: Any) -> Any:
    """``expr`` bound to a variable unless it is one (or a constant) already, so later
    dtype/shape queries do not normalise, and emit, its subexpressions again."""
    from ...expr import Constant, Var

    return expr if isinstance(expr, (Var, Constant)) else ctx.emit(expr)


def as_dtype(ctx: NodeContext, value: Any, dtype: str) -> Any:
    """An imported argument (tensor or scalar) as a bound tensor of ``dtype``."""
    return bound(ctx, ctx.astype(ctx.importer.to_expr(value, dtype), dtype))


def _in_out_dtype(ctx: NodeContext, i: int = 0, name: str = "self") -> Any:
    """Argument ``i`` as a tensor of the node's output dtype."""
    if ctx.arg(i, name) is None:
        raise ctx.error(f"argument {name or i} is missing")
    return as_dtype(ctx, ctx.arg(i, name), ctx.out_dtype())


def _operands_as_out(ctx: NodeContext, *indices: int) -> list[Any]:
    """Arguments ``indices`` in the output dtype (ops whose result dtype is the promoted
    one, or the default float for integer inputs of float functions)."""
    dtype = ctx.out_dtype()
    return [as_dtype(ctx, ctx.arg(i), dtype) for i in indices]


def _no_out(ctx: NodeContext) -> None:
    if ctx.kwargs.get("out") is not None:
        raise ctx.unsupported("the out= argument is not supported")


# -- unary ----------------------------------------------------------------------------------

def _reciprocal(ctx: NodeContext, x: Any) -> Any:
    return _op.divide(_const(ctx, 1, ctx.out_dtype()), x)


def _frac(ctx: NodeContext, x: Any) -> Any:
    return _op.subtract(x, _op.trunc(x))


def _erfc(ctx: NodeContext, x: Any) -> Any:
    return _op.subtract(_const(ctx, 1, x), _op.erf(x))


# Giles, "Approximating the erfinv function" (GPU Computing Gems, 2011), single precision.
_ERFINV_SMALL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
                 0.00021858087, -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_ERFINV_LARGE = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844,
                 0.00573950773, -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)


def _erfinv(ctx: NodeContext, x: Any) -> Any:
    """Giles' approximation plus one Newton step on ``erf(y) = x``; ``+-1 -> +-inf``,
    ``|x| > 1 -> NaN``."""
    one = _const(ctx, 1, x)
    w = _op.negative(_op.log(_op.multiply(_op.subtract(one, x), _op.add(one, x))))

    def poly(coeffs: tuple, t: Any) -> Any:
        p = _const(ctx, coeffs[0], x)
        for c in coeffs[1:]:
            p = _op.add(_const(ctx, c, x), _op.multiply(p, t))
        return p

    small = poly(_ERFINV_SMALL, _op.subtract(w, _const(ctx, 2.5, x)))
    large = poly(_ERFINV_LARGE, _op.subtract(_op.sqrt(w), _const(ctx, 3.0, x)))
    y = _op.multiply(_op.where(_op.less(w, _const(ctx, 5.0, x)), small, large), x)
    # one Newton step: y -= (erf(y) - x) / (2 / sqrt(pi) * exp(-y^2))
    slope = _op.multiply(_const(ctx, 2 / math.sqrt(math.pi), x),
                         _op.exp(_op.negative(_op.multiply(y, y))))
    refined = _op.subtract(y, _op.divide(_op.subtract(_op.erf(y), x), slope))
    y = _op.where(_op.isfinite(refined), refined, y)
    edge = _op.equal(_op.abs(x), one)
    return _op.where(edge, _op.copysign(_const(ctx, math.inf, x), x), y)


_UNARY: dict[str, Callable[[NodeContext, Any], Any]] = {
    "abs": lambda c, x: _op.abs(x), "neg": lambda c, x: _op.negative(x),
    "exp": lambda c, x: _op.exp(x), "exp2": lambda c, x: _op.exp2(x),
    "expm1": lambda c, x: _op.expm1(x), "log": lambda c, x: _op.log(x),
    "log2": lambda c, x: _op.log2(x), "log10": lambda c, x: _op.log10(x),
    "log1p": lambda c, x: _op.log1p(x), "sqrt": lambda c, x: _op.sqrt(x),
    "rsqrt": lambda c, x: _op.rsqrt(x), "reciprocal": _reciprocal,
    "sin": lambda c, x: _op.sin(x), "cos": lambda c, x: _op.cos(x),
    "tan": lambda c, x: _op.tan(x), "asin": lambda c, x: _op.asin(x),
    "acos": lambda c, x: _op.acos(x), "atan": lambda c, x: _op.atan(x),
    "sinh": lambda c, x: _op.sinh(x), "cosh": lambda c, x: _op.cosh(x),
    "tanh": lambda c, x: _op.tanh(x), "asinh": lambda c, x: _op.asinh(x),
    "acosh": lambda c, x: _op.acosh(x), "atanh": lambda c, x: _op.atanh(x),
    "sigmoid": lambda c, x: _op.sigmoid(x), "erf": lambda c, x: _op.erf(x),
    "erfc": _erfc, "erfinv": _erfinv,
    "floor": lambda c, x: _op.floor(x), "ceil": lambda c, x: _op.ceil(x),
    "trunc": lambda c, x: _op.trunc(x), "fix": lambda c, x: _op.trunc(x),
    "frac": _frac, "sign": lambda c, x: _op.sign(x), "sgn": lambda c, x: _op.sign(x),
    "square": lambda c, x: _op.multiply(x, x), "positive": lambda c, x: x,
    "bitwise_not": lambda c, x: _op.bitwise_not(x),
    "relu": lambda c, x: _op.nn.relu(x), "silu": lambda c, x: _op.nn.silu(x),
}


def _unary(fn: Callable[[NodeContext, Any], Any]) -> Callable[[NodeContext], Any]:
    def convert(ctx: NodeContext) -> Any:
        _no_out(ctx)
        return fn(ctx, _in_out_dtype(ctx))
    return convert


for _name, _fn in _UNARY.items():
    converter(f"aten.{_name}.default")(_unary(_fn))


@converter("aten.round.default", "aten.round.decimals")
def _round(ctx: NodeContext) -> Any:
    x = _in_out_dtype(ctx)
    decimals = int(ctx.arg(1, "decimals", 0) or 0)
    if decimals == 0 or not is_float(ctx.dtype(x)):
        return _op.round(x)
    scale = _const(ctx, 10.0 ** abs(decimals), x)
    if decimals > 0:
        return _op.divide(_op.round(_op.multiply(x, scale)), scale)
    return _op.multiply(_op.round(_op.divide(x, scale)), scale)


@converter("aten.logical_not.default")
def _logical_not(ctx: NodeContext) -> Any:
    out = _op.logical_not(ctx.tensor(0))
    return ctx.astype(out, ctx.out_dtype())


@converter("aten.isnan.default", "aten.isinf.default", "aten.isfinite.default",
           "aten.isposinf.default", "aten.isneginf.default", "aten.signbit.default")
def _float_predicate(ctx: NodeContext) -> Any:
    x = ctx.tensor(0)
    kind = ctx.op.split(".")[1]
    if not is_float(ctx.dtype(x)):  # integers are finite, never NaN, never -0.0
        if kind == "signbit":
            return _op.less(x, _const(ctx, 0, x))
        same = _op.equal(x, x)
        return same if kind == "isfinite" else _op.logical_not(same)
    if kind == "isposinf":
        return _op.equal(x, _const(ctx, math.inf, x))
    if kind == "isneginf":
        return _op.equal(x, _const(ctx, -math.inf, x))
    if kind == "signbit":
        return _op.less(_op.copysign(_const(ctx, 1, x), x), _const(ctx, 0, x))
    return {"isnan": _op.isnan, "isinf": _op.isinf, "isfinite": _op.isfinite}[kind](x)


@converter("aten.nan_to_num.default")
def _nan_to_num(ctx: NodeContext) -> Any:
    x = _in_out_dtype(ctx)
    dtype = ctx.dtype(x)
    if not is_float(dtype):
        return x
    import numpy as np
    from tvm.ffi.dtype import to_numpy_dtype

    info = np.finfo(to_numpy_dtype(dtype)) if dtype != "bfloat16" else None
    big = float(info.max) if info is not None else 3.3895313892515355e38
    nan, pos, neg = ctx.arg(1, "nan"), ctx.arg(2, "posinf"), ctx.arg(3, "neginf")
    out = _op.where(_op.isnan(x), _const(ctx, 0.0 if nan is None else nan, x), x)
    out = _op.where(_op.equal(out, _const(ctx, math.inf, x)),
                    _const(ctx, big if pos is None else pos, x), out)
    return _op.where(_op.equal(out, _const(ctx, -math.inf, x)),
                     _const(ctx, -big if neg is None else neg, x), out)


# -- arithmetic -------------------------------------------------------------------------------

def _scaled(ctx: NodeContext, b: Any, alpha: Any) -> Any:
    """``alpha * b`` with ``b`` in the output dtype."""
    if alpha is None or alpha == 1:
        return b
    dtype = ctx.out_dtype()
    if dtype == "bool":
        return b if alpha else _op.zeros_like(b)
    return _op.multiply(b, _const(ctx, alpha, dtype))


@converter("aten.add.Tensor", "aten.add.Scalar", "aten.sub.Tensor", "aten.sub.Scalar",
           "aten.rsub.Tensor", "aten.rsub.Scalar")
def _add_sub(ctx: NodeContext) -> Any:
    _no_out(ctx)
    kind = ctx.op.split(".")[1]
    a, b = _operands_as_out(ctx, 0, 1)
    alpha = ctx.arg(2, "alpha", 1)
    if kind == "rsub":
        a, b = b, a
    b = _scaled(ctx, b, alpha)
    if kind == "add":
        return _op.logical_or(a, b) if ctx.dtype(a) == "bool" else _op.add(a, b)
    if ctx.dtype(a) == "bool":
        raise ctx.unsupported("subtraction of bool tensors (torch rejects it too)")
    return _op.subtract(a, b)


@converter("aten.mul.Tensor", "aten.mul.Scalar")
def _mul(ctx: NodeContext) -> Any:
    a, b = _operands_as_out(ctx, 0, 1)
    return _op.logical_and(a, b) if ctx.dtype(a) == "bool" else _op.multiply(a, b)


def _float_floor_divide(ctx: NodeContext, a: Any, b: Any) -> Any:
    """torch's ``div_floor_floating``: ``(a - fmod(a, b)) / b`` corrected toward -inf and
    rounded, so ``5.0 // 0.1 == 49`` as in Python; a zero quotient keeps the sign of
    ``a / b``, a zero divisor gives ``a / b``."""
    zero, one = _const(ctx, 0, a), _const(ctx, 1, a)
    quotient = _op.divide(a, b)
    mod = _op.mod(a, b)
    div = _op.divide(_op.subtract(a, mod), b)
    wrong_side = _op.logical_and(_op.not_equal(mod, zero),
                                 _op.not_equal(_op.less(b, zero), _op.less(mod, zero)))
    div = _op.where(wrong_side, _op.subtract(div, one), div)
    floored = _op.floor(div)
    floored = _op.where(_op.greater(_op.subtract(div, floored), _const(ctx, 0.5, a)),
                        _op.add(floored, one), floored)
    out = _op.where(_op.equal(div, zero), _op.copysign(zero, quotient), floored)
    return _op.where(_op.equal(b, zero), quotient, out)


def _divide(ctx: NodeContext, a: Any, b: Any, mode: Any) -> Any:
    if mode is None:
        return _op.divide(a, b)
    floating = is_float(ctx.dtype(a))
    if mode == "trunc":
        return _op.trunc(_op.divide(a, b)) if floating else _op.divide(a, b)
    if mode == "floor":
        return _float_floor_divide(ctx, a, b) if floating else _op.floor_divide(a, b)
    raise ctx.unsupported(f"rounding_mode {mode!r} is not one of None, 'floor', 'trunc'")


@converter("aten.div.Tensor", "aten.div.Scalar", "aten.div.Tensor_mode",
           "aten.div.Scalar_mode", "aten.true_divide.Tensor", "aten.true_divide.Scalar")
def _div(ctx: NodeContext) -> Any:
    _no_out(ctx)
    mode = ctx.arg(2, "rounding_mode")
    a, b = _operands_as_out(ctx, 0, 1)  # true division of integers: in the default float
    if ctx.dtype(a) == "bool":
        raise ctx.unsupported("division of bool tensors with a rounding mode")
    return _divide(ctx, a, b, mode)


@converter("aten.floor_divide.default", "aten.floor_divide.Scalar")
def _floor_divide(ctx: NodeContext) -> Any:
    a, b = _operands_as_out(ctx, 0, 1)
    return _divide(ctx, a, b, "floor")


@converter("aten.remainder.Tensor", "aten.remainder.Scalar", "aten.remainder.Scalar_Tensor")
def _remainder(ctx: NodeContext) -> Any:
    """Python's ``%``: the sign of the divisor (torch: ``fmod`` plus ``b`` when the signs
    differ, for floats)."""
    a, b = _operands_as_out(ctx, 0, 1)
    if not is_float(ctx.dtype(a)):
        return _op.floor_mod(a, b)
    zero = _const(ctx, 0, a)
    mod = _op.mod(a, b)
    wrong_side = _op.logical_and(_op.not_equal(mod, zero),
                                 _op.not_equal(_op.less(b, zero), _op.less(mod, zero)))
    return _op.where(wrong_side, _op.add(mod, b), mod)


@converter("aten.fmod.Tensor", "aten.fmod.Scalar")
def _fmod(ctx: NodeContext) -> Any:
    a, b = _operands_as_out(ctx, 0, 1)
    return _op.mod(a, b)


# pow(x, e) for these float exponents is computed the way torch's CPU kernel does it
_POW_SPECIAL: dict[float, Callable[[NodeContext, Any], Any]] = {
    0.5: lambda c, x: _op.sqrt(x),
    -0.5: lambda c, x: _op.rsqrt(x),
    1.0: lambda c, x: x,
    2.0: lambda c, x: _op.multiply(x, x),
    3.0: lambda c, x: _op.multiply(_op.multiply(x, x), x),
    -1.0: _reciprocal,
    -2.0: lambda c, x: _reciprocal(c, _op.multiply(x, x)),
}


@converter("aten.pow.Tensor_Tensor", "aten.pow.Tensor_Scalar", "aten.pow.Scalar")
def _pow(ctx: NodeContext) -> Any:
    _no_out(ctx)
    exponent = ctx.arg(1, "exponent")
    a, b = _operands_as_out(ctx, 0, 1)
    dtype = ctx.dtype(a)
    if ctx.op.endswith("Tensor_Scalar") and isinstance(exponent, (int, float)):
        if not is_float(dtype) and exponent < 0:
            raise ctx.unsupported(f"integer tensors to the negative power {exponent} "
                                  "(torch rejects them too)")
        special = _POW_SPECIAL.get(float(exponent)) if is_float(dtype) else None
        if special is not None:
            return special(ctx, a)
        if exponent == 0:
            return _op.ones_like(a)
    if dtype == "bool":
        a, b = ctx.astype(a, "uint8"), ctx.astype(b, "uint8")
        return ctx.astype(_op.power(a, b), "bool")
    return _op.power(a, b)


@converter("aten.ldexp.Tensor")
def _ldexp(ctx: NodeContext) -> Any:
    a, b = _operands_as_out(ctx, 0, 1)
    return _op.multiply(a, _op.exp2(b))


def _float_binary(fn: Callable[[Any, Any], Any]) -> Callable[[NodeContext], Any]:
    def convert(ctx: NodeContext) -> Any:
        a, b = _operands_as_out(ctx, 0, 1)
        return fn(a, b)
    return convert


converter("aten.atan2.default")(_float_binary(_op.atan2))
converter("aten.hypot.default")(_float_binary(_op.hypot))
converter("aten.copysign.Tensor", "aten.copysign.Scalar")(_float_binary(_op.copysign))


@converter("aten.xlogy.Tensor", "aten.xlogy.Scalar_Self", "aten.xlogy.Scalar_Other")
def _xlogy(ctx: NodeContext) -> Any:
    """``x * log(y)``, 0 where ``x == 0`` unless ``y`` is NaN."""
    x, y = _operands_as_out(ctx, 0, 1)
    zero = _const(ctx, 0, x)
    out = _op.multiply(x, _op.log(y))
    keep = _op.logical_or(_op.not_equal(x, zero), _op.isnan(y))
    return _op.where(keep, out, zero)


@converter("aten.lerp.Scalar", "aten.lerp.Tensor")
def _lerp(ctx: NodeContext) -> Any:
    """torch's two-sided formula: ``start + w (end - start)`` for ``|w| < 0.5``, else
    ``end - (end - start)(1 - w)`` (exact at ``w = 1``)."""
    start, end, weight = _operands_as_out(ctx, 0, 1, 2)
    diff = _op.subtract(end, start)
    low = _op.add(start, _op.multiply(weight, diff))
    high = _op.subtract(end, _op.multiply(diff, _op.subtract(_const(ctx, 1, weight), weight)))
    return _op.where(_op.less(_op.abs(weight), _const(ctx, 0.5, weight)), low, high)


@converter("aten.addcmul.default", "aten.addcdiv.default")
def _addc(ctx: NodeContext) -> Any:
    x, t1, t2 = _operands_as_out(ctx, 0, 1, 2)
    value = ctx.arg(3, "value", 1)
    if ctx.op.startswith("aten.addcdiv"):
        if not is_float(ctx.dtype(x)):
            raise ctx.unsupported("addcdiv of integer tensors (torch rejects it too)")
        prod = _op.divide(t1, t2)
    else:
        prod = _op.multiply(t1, t2)
    return _op.add(x, _scaled(ctx, prod, value))


# -- max/min, comparisons, logic --------------------------------------------------------------

@converter("aten.maximum.default", "aten.minimum.default", "aten.max.other",
           "aten.min.other")
def _max_min(ctx: NodeContext) -> Any:
    a, b = _operands_as_out(ctx, 0, 1)
    largest = ctx.op.startswith(("aten.maximum", "aten.max."))
    if ctx.dtype(a) == "bool":
        return (_op.logical_or if largest else _op.logical_and)(a, b)
    return (_op.maximum if largest else _op.minimum)(a, b)


@converter("aten.fmax.default", "aten.fmin.default")
def _fmax_fmin(ctx: NodeContext) -> Any:
    """Like maximum/minimum but a NaN loses to a number."""
    a, b = _operands_as_out(ctx, 0, 1)
    fn = _op.maximum if ctx.op.startswith("aten.fmax") else _op.minimum
    if not is_float(ctx.dtype(a)):
        return fn(a, b)
    out = fn(a, b)
    return _op.where(_op.isnan(a), b, _op.where(_op.isnan(b), a, out))


_COMPARE = {"eq": _op.equal, "ne": _op.not_equal, "lt": _op.less, "le": _op.less_equal,
            "gt": _op.greater, "ge": _op.greater_equal}
_LOGICAL = {"logical_and": _op.logical_and, "logical_or": _op.logical_or,
            "logical_xor": _op.logical_xor}


def _predicate(fn: Callable[[Any, Any], Any]) -> Callable[[NodeContext], Any]:
    def convert(ctx: NodeContext) -> Any:
        _no_out(ctx)
        a, b = ctx.operands(0, 1)
        return ctx.astype(fn(a, b), ctx.out_dtype())
    return convert


for _name, _fn in _COMPARE.items():
    converter(f"aten.{_name}.Tensor", f"aten.{_name}.Scalar")(_predicate(_fn))
for _name, _fn in _LOGICAL.items():
    converter(f"aten.{_name}.default")(_predicate(_fn))


_BITWISE = {"bitwise_and": _op.bitwise_and, "bitwise_or": _op.bitwise_or,
            "bitwise_xor": _op.bitwise_xor}


def _bitwise(fn: Callable[[Any, Any], Any]) -> Callable[[NodeContext], Any]:
    def convert(ctx: NodeContext) -> Any:
        a, b = _operands_as_out(ctx, 0, 1)
        if is_float(ctx.dtype(a)):
            raise ctx.unsupported(f"{ctx.op} of {ctx.dtype(a)} tensors (integers and bool only)")
        return fn(a, b)
    return convert


for _name, _fn in _BITWISE.items():
    converter(f"aten.{_name}.Tensor", f"aten.{_name}.Scalar",
              f"aten.{_name}.Scalar_Tensor")(_bitwise(_fn))


@converter("aten.bitwise_left_shift.Tensor", "aten.bitwise_left_shift.Tensor_Scalar",
           "aten.bitwise_left_shift.Scalar_Tensor", "aten.bitwise_right_shift.Tensor",
           "aten.bitwise_right_shift.Tensor_Scalar", "aten.bitwise_right_shift.Scalar_Tensor",
           "aten.__lshift__.Tensor", "aten.__lshift__.Scalar", "aten.__rshift__.Tensor",
           "aten.__rshift__.Scalar")
def _shift(ctx: NodeContext) -> Any:
    """torch's shifts: a count outside ``[0, bits)`` shifts everything out (0, or the
    sign for an arithmetic right shift)."""
    a, b = _operands_as_out(ctx, 0, 1)
    dtype = ctx.dtype(a)
    if is_float(dtype) or dtype == "bool":
        raise ctx.unsupported(f"{ctx.op} of {dtype} tensors (integers only)")
    bits = int("".join(ch for ch in dtype if ch.isdigit()))
    zero = _const(ctx, 0, a)
    out_of_range = _op.logical_or(_op.less(b, zero), _op.greater_equal(b, _const(ctx, bits, a)))
    safe = _op.where(out_of_range, zero, b)
    if "left" in ctx.op or "lshift" in ctx.op:
        return _op.where(out_of_range, zero, _op.left_shift(a, safe))
    shifted = _op.right_shift(a, safe)
    full = _op.right_shift(a, _const(ctx, bits - 1, a)) if dtype.startswith("int") else zero
    return _op.where(out_of_range, full, shifted)


# -- where / clamp ----------------------------------------------------------------------------

@converter("aten.where.self", "aten.where.ScalarSelf", "aten.where.ScalarOther",
           "aten.where.Scalar")
def _where(ctx: NodeContext) -> Any:
    cond = ctx.astype(ctx.importer.to_expr(ctx.arg(0), "bool"), "bool")
    x, y = _operands_as_out(ctx, 1, 2)
    return _op.where(cond, x, y)


def _bound(ctx: NodeContext, value: Any, dtype: str) -> Any:
    return ctx.astype(ctx.importer.to_expr(value, dtype), dtype)


@converter("aten.clamp.default", "aten.clamp.Tensor", "aten.clamp_min.default",
           "aten.clamp_min.Tensor", "aten.clamp_max.default", "aten.clamp_max.Tensor")
def _clamp(ctx: NodeContext) -> Any:
    """``min(max(x, lo), hi)``: NaN stays NaN, ``hi`` wins when ``lo > hi``."""
    kind = ctx.op.split(".")[1]
    x = _in_out_dtype(ctx)
    dtype = ctx.dtype(x)
    if kind == "clamp_min":
        lo, hi = ctx.arg(1, "min"), None
    elif kind == "clamp_max":
        lo, hi = None, ctx.arg(1, "max")
    else:
        lo, hi = ctx.arg(1, "min"), ctx.arg(2, "max")
    if lo is None and hi is None:
        raise ctx.error("clamp needs at least one of min and max")
    if dtype == "bool":
        raise ctx.unsupported("clamp of bool tensors")
    scalars = all(v is None or isinstance(v, (int, float)) for v in (lo, hi))
    if scalars and (is_float(dtype) or all(v is None or isinstance(v, int) for v in (lo, hi))):
        return _op.clip(x, lo, hi)
    if lo is not None:
        x = _op.maximum(x, _bound(ctx, lo, dtype))
    if hi is not None:
        x = _op.minimum(x, _bound(ctx, hi, dtype))
    return x


# -- activations ------------------------------------------------------------------------------

@converter("aten.hardtanh.default", "aten.relu6.default")
def _hardtanh(ctx: NodeContext) -> Any:
    x = _in_out_dtype(ctx)
    if ctx.op.startswith("aten.relu6"):
        return _op.clip(x, 0, 6)
    return _op.clip(x, ctx.arg(1, "min_val", -1.0), ctx.arg(2, "max_val", 1.0))


@converter("aten.leaky_relu.default")
def _leaky_relu(ctx: NodeContext) -> Any:
    x = _in_out_dtype(ctx)
    slope = ctx.arg(1, "negative_slope", 0.01)
    return _op.where(_op.greater(x, _const(ctx, 0, x)), x, _op.multiply(x, _const(ctx, slope, x)))


def _elu(ctx: NodeContext, x: Any, alpha: float, scale: float, input_scale: float) -> Any:
    """torch's ``x > 0 ? scale x : alpha scale expm1(input_scale x)``."""
    neg = _op.expm1(_op.multiply(x, _const(ctx, input_scale, x)))
    neg = _op.multiply(neg, _const(ctx, alpha * scale, x))
    pos = x if scale == 1 else _op.multiply(x, _const(ctx, scale, x))
    return _op.where(_op.greater(x, _const(ctx, 0, x)), pos, neg)


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


@converter("aten.elu.default")
def _elu_conv(ctx: NodeContext) -> Any:
    return _elu(ctx, _in_out_dtype(ctx), float(ctx.arg(1, "alpha", 1.0)),
                float(ctx.arg(2, "scale", 1.0)), float(ctx.arg(3, "input_scale", 1.0)))


@converter("aten.celu.default")
def _celu(ctx: NodeContext) -> Any:
    alpha = float(ctx.arg(1, "alpha", 1.0))
    if alpha == 0:
        raise ctx.error("celu alpha must not be 0")
    return _elu(ctx, _in_out_dtype(ctx), alpha, 1.0, 1.0 / alpha)


@converter("aten.selu.default")
def _selu(ctx: NodeContext) -> Any:
    return _elu(ctx, _in_out_dtype(ctx), _SELU_ALPHA, _SELU_SCALE, 1.0)


@converter("aten.gelu.default")
def _gelu(ctx: NodeContext) -> Any:
    approximate = ctx.arg(1, "approximate", "none")
    x = _in_out_dtype(ctx)
    if approximate == "none":
        return _op.nn.gelu(x)
    if approximate == "tanh":
        return _op.nn.gelu_tanh(x)
    raise ctx.unsupported(f"gelu approximate={approximate!r} (only 'none' and 'tanh')")


def _softplus(ctx: NodeContext, x: Any, beta: float, threshold: float) -> Any:
    """torch's ``beta x > threshold ? x : log1p(exp(beta x)) / beta``."""
    bx = x if beta == 1 else _op.multiply(x, _const(ctx, beta, x))
    soft = _op.log1p(_op.exp(bx))
    if beta != 1:
        soft = _op.divide(soft, _const(ctx, beta, x))
    return _op.where(_op.greater(bx, _const(ctx, threshold, x)), x, soft)


@converter("aten.softplus.default")
def _softplus_conv(ctx: NodeContext) -> Any:
    return _softplus(ctx, _in_out_dtype(ctx), float(ctx.arg(1, "beta", 1.0)),
                     float(ctx.arg(2, "threshold", 20.0)))


@converter("aten.mish.default")
def _mish(ctx: NodeContext) -> Any:
    x = _in_out_dtype(ctx)
    return _op.multiply(x, _op.tanh(_softplus(ctx, x, 1.0, 20.0)))


def _hard_gate(ctx: NodeContext, x: Any) -> Any:
    """``clamp(x + 3, 0, 6) / 6`` (hardsigmoid)."""
    return _op.divide(_op.clip(_op.add(x, _const(ctx, 3, x)), 0, 6), _const(ctx, 6, x))


@converter("aten.hardsigmoid.default")
def _hardsigmoid(ctx: NodeContext) -> Any:
    return _hard_gate(ctx, _in_out_dtype(ctx))


@converter("aten.hardswish.default")
def _hardswish(ctx: NodeContext) -> Any:
    x = _in_out_dtype(ctx)
    return _op.multiply(x, _hard_gate(ctx, x))


@converter("aten.softsign.default")
def _softsign(ctx: NodeContext) -> Any:
    x = _in_out_dtype(ctx)
    return _op.divide(x, _op.add(_const(ctx, 1, x), _op.abs(x)))


@converter("aten.threshold.default")
def _threshold(ctx: NodeContext) -> Any:
    x = _in_out_dtype(ctx)
    limit, value = ctx.arg(1, "threshold"), ctx.arg(2, "value")
    return _op.where(_op.less_equal(x, _const(ctx, limit, x)), _const(ctx, value, x), x)


@converter("aten._prelu_kernel.default", "aten.prelu.default")
def _prelu(ctx: NodeContext) -> Any:
    x, w = _operands_as_out(ctx, 0, 1)
    if ctx.op.startswith("aten.prelu") and ctx.ndim(x) >= 2 and ctx.ndim(w) == 1:
        w = _op.reshape(w, [ctx.shape(w)[0]] + [1] * (ctx.ndim(x) - 2))
    return _op.where(_op.greater(x, _const(ctx, 0, x)), x, _op.multiply(w, x))


@converter("aten.glu.default")
def _glu(ctx: NodeContext) -> Any:
    x = _in_out_dtype(ctx)
    axis = ctx.axis(ctx.arg(1, "dim", -1), ctx.ndim(x))
    size = ctx.shape(x)[axis]
    if isinstance(size, int) and size % 2:
        raise ctx.error(f"glu halves dimension {axis}, whose size {size} is odd")
    halves = ctx.emit(_op.split(x, 2, axis))
    from ...expr import TupleGetItem

    return _op.multiply(TupleGetItem(halves, 0), _op.sigmoid(TupleGetItem(halves, 1)))


@converter("aten.log_sigmoid_forward.default")
def _log_sigmoid(ctx: NodeContext) -> Any:
    """``min(x, 0) - log1p(exp(-|x|))``; the second output (a buffer only the backward
    pass reads) is zeros of the shape torch recorded."""
    x = _in_out_dtype(ctx)
    zero = _const(ctx, 0, x)
    out = _op.subtract(_op.minimum(x, zero), _op.log1p(_op.exp(_op.negative(_op.abs(x)))))
    return [out, _op.zeros(ctx.out_shape(1), ctx.out_dtype(1))]
