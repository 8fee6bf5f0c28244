"""Elementwise te computes: unary math, broadcasting binary operators, ``where``, casts."""

from __future__ import annotations

import math
from typing import Any, Callable, Optional

from tvm import te, tir
from tvm.tir.expr import (
    EQ, GE, GT, LE, LT, NE, And, Cast, Div, FloorDiv, FloorMod, Max, Min, Mod, Not, Or, PrimExpr,
    Select, const,
)

from ._util import broadcast_index, cast, is_bool, is_float, is_signed_int

__all__ = [
    "UNARY_FUNCS", "BINARY_FUNCS", "unary", "binary", "where", "clip", "astype", "to_bool",
    "gelu", "gelu_tanh", "sigmoid",
]


def to_bool(x: PrimExpr) -> PrimExpr:
    return x if is_bool(x.dtype) else NE(x, cast(0, x.dtype))


def _zero(x: PrimExpr) -> PrimExpr:
    return cast(0, x.dtype)


def _sign(x: PrimExpr) -> PrimExpr:
    one, zero = cast(1, x.dtype), _zero(x)
    if is_bool(x.dtype):
        return x
    inner = Select(LT(x, zero), cast(-1, x.dtype), zero) if (
        is_float(x.dtype) or is_signed_int(x.dtype)) else zero
    return Select(GT(x, zero), one, inner)


def _float_only(fn: Callable[[PrimExpr], PrimExpr]) -> Callable[[PrimExpr], PrimExpr]:
    """Rounding functions: identity on integers."""
    return lambda x: fn(x) if is_float(x.dtype) else x


def sigmoid(x: PrimExpr) -> PrimExpr:
    one = cast(1, x.dtype)
    return one / (one + tir.exp(-x))


def gelu(x: PrimExpr) -> PrimExpr:
    """``0.5 x (1 + erf(x / sqrt(2)))``."""
    half, one = cast(0.5, x.dtype), cast(1, x.dtype)
    return half * x * (one + tir.erf(x * cast(1 / math.sqrt(2.0), x.dtype)))


def gelu_tanh(x: PrimExpr) -> PrimExpr:
    """``0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))``."""
    half, one = cast(0.5, x.dtype), cast(1, x.dtype)
    inner = cast(math.sqrt(2.0 / math.pi), x.dtype) * (x + cast(0.044715, x.dtype) * x * x * x)
    return half * x * (one + tir.tanh(inner))


UNARY_FUNCS: dict[str, Callable[[PrimExpr], PrimExpr]] = {
    "abs": lambda x: x if is_bool(x.dtype) else tir.abs(x),
    "negative": lambda x: x * cast(-1, x.dtype) if is_float(x.dtype) else _zero(x) - x,
    "sign": _sign,
    "square": lambda x: x * x,
    "exp": tir.exp,
    "exp2": tir.op.exp2,
    "expm1": tir.op.expm1,
    "log": tir.log,
    "log2": tir.op.log2,
    "log10": tir.op.log10,
    "log1p": tir.op.log1p,
    "sqrt": tir.sqrt,
    "rsqrt": lambda x: cast(1, x.dtype) / tir.sqrt(x),
    "sin": tir.sin,
    "cos": tir.cos,
    "tan": tir.tan,
    "tanh": tir.tanh,
    "asin": tir.op.asin,
    "acos": tir.op.acos,
    "atan": tir.op.atan,
    "sinh": tir.op.sinh,
    "cosh": tir.op.cosh,
    "asinh": tir.op.asinh,
    "acosh": tir.op.acosh,
    "atanh": tir.op.atanh,
    "sigmoid": sigmoid,
    "erf": tir.erf,
    "floor": _float_only(tir.floor),
    "ceil": _float_only(tir.ceil),
    "round": _float_only(tir.op.nearbyint),
    "trunc": _float_only(tir.op.trunc),
    "bitwise_not": lambda x: Not(x) if is_bool(x.dtype) else tir.op.bitwise_not(x),
    "logical_not": lambda x: Not(to_bool(x)),
    "isnan": tir.isnan,
    "isinf": tir.isinf,
    "isfinite": tir.isfinite,
    "relu": lambda x: Select(LT(x, _zero(x)), _zero(x), x) if is_float(x.dtype) else Max(
        x, _zero(x)),
    "silu": lambda x: x * sigmoid(x),
    "gelu": gelu,
    "gelu_tanh": gelu_tanh,
}


def _int_division(name: str, what: str, minus_one: Callable[[PrimExpr], PrimExpr],
                  fn: Callable[[PrimExpr, PrimExpr], PrimExpr]) -> Callable[..., PrimExpr]:
    """Integer ``fn(a, b)`` with onnxruntime's semantics and no trap: a zero divisor fails
    the kernel with ``"<name>: integer <what> by zero"`` (the numpy evaluators raise the same),
    and a signed division by -1 is ``minus_one(a)`` (wrapping: ``INT_MIN / -1 == INT_MIN``,
    the remainder 0), so the hardware divide never sees 0 or ``INT_MIN / -1``."""

    def f(a: PrimExpr, b: PrimExpr) -> PrimExpr:
        zero = const(0, b.dtype)
        if is_signed_int(a.dtype):
            by_minus_one = EQ(b, const(-1, b.dtype))
            safe = Select(Or(EQ(b, zero), by_minus_one), const(1, b.dtype), b)
            value = Select(by_minus_one, minus_one(a), fn(a, safe))
        else:
            value = fn(a, Select(EQ(b, zero), const(1, b.dtype), b))
        return tir.op.checked(value, NE(b, zero), f"{name}: integer {what} by zero")

    return f


def _wrapping_neg(a: PrimExpr) -> PrimExpr:
    """``-a`` modulo 2**bits (computed unsigned: signed negation of INT_MIN overflows)."""
    udt = "u" + a.dtype
    return Cast(a.dtype, Cast(udt, const(0, a.dtype)) - Cast(udt, a))


_int_divide = _int_division("divide", "division", _wrapping_neg, Div)
_int_floor_divide = _int_division("floor_divide", "division", _wrapping_neg, FloorDiv)
_int_mod = _int_division("mod", "modulo", lambda a: const(0, a.dtype), Mod)
_int_floor_mod = _int_division("floor_mod", "modulo", lambda a: const(0, a.dtype), FloorMod)


def _divide(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    return Div(a, b) if is_float(a.dtype) else _int_divide(a, b)


def _floor_divide(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    return tir.floor(Div(a, b)) if is_float(a.dtype) else _int_floor_divide(a, b)


def _mod(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    return tir.op.fmod(a, b) if is_float(a.dtype) else _int_mod(a, b)


def _floor_mod(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    if is_float(a.dtype):
        return a - tir.floor(Div(a, b)) * b
    return _int_floor_mod(a, b)


def _power(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    if is_float(a.dtype):
        return tir.power(a, b)
    wide = tir.power(Cast("float64", a), Cast("float64", b))
    return Cast(a.dtype, tir.op.nearbyint(wide))


def _nan_minmax(a: PrimExpr, b: PrimExpr, keep_a: type, int_fn: type) -> PrimExpr:
    """Float max/min as numpy and torch compute them: NaN if either is NaN, and ``a`` when
    the two compare equal (``maximum(-0.0, 0.0)`` is ``-0.0``)."""
    if not is_float(a.dtype):
        return int_fn(a, b)
    return Select(Or(keep_a(a, b), tir.isnan(a)), a, b)


def _logical(cls: type) -> Callable[[PrimExpr, PrimExpr], PrimExpr]:
    return lambda a, b: cls(to_bool(a), to_bool(b))


def _bitwise(bool_cls: type, fn: Callable[[Any, Any], PrimExpr]) -> Callable[..., PrimExpr]:
    return lambda a, b: bool_cls(a, b) if is_bool(a.dtype) else fn(a, b)


BINARY_FUNCS: dict[str, Callable[[PrimExpr, PrimExpr], PrimExpr]] = {
    "add": lambda a, b: a + b,
    "subtract": lambda a, b: a - b,
    "multiply": lambda a, b: a * b,
    "divide": _divide,
    "floor_divide": _floor_divide,
    "mod": _mod,
    "floor_mod": _floor_mod,
    "power": _power,
    "maximum": lambda a, b: _nan_minmax(a, b, GE, Max),
    "minimum": lambda a, b: _nan_minmax(a, b, LE, Min),
    "atan2": tir.op.atan2,
    "copysign": tir.op.copysign,
    "hypot": tir.op.hypot,
    "equal": EQ,
    "not_equal": NE,
    "less": LT,
    "less_equal": LE,
    "greater": GT,
    "greater_equal": GE,
    "logical_and": _logical(And),
    "logical_or": _logical(Or),
    "logical_xor": _logical(NE),
    "bitwise_and": _bitwise(And, tir.op.bitwise_and),
    "bitwise_or": _bitwise(Or, tir.op.bitwise_or),
    "bitwise_xor": _bitwise(NE, tir.op.bitwise_xor),
    "left_shift": tir.op.shift_left,
    "right_shift": tir.op.shift_right,
}


def unary(x: te.Tensor, name: str) -> te.Tensor:
    """``UNARY_FUNCS[name]`` applied to every element of ``x``."""
    fn = UNARY_FUNCS[name]
    return te.compute(x.shape, lambda *i: fn(x(*i)), name=f"T_{name}")


def _operand(t: Any) -> tuple[tuple, Callable[[tuple], PrimExpr]]:
    """(shape, index -> element) of a te tensor or a scalar expression (a 0-d operand)."""
    if isinstance(t, te.Tensor):
        return tuple(t.shape), lambda i: t(*broadcast_index(i, t.shape))
    return (), lambda i: t


def _out_shape(*shapes: tuple) -> tuple:
    """numpy broadcast of the shapes (already checked by StructInfo inference)."""
    ndim = max(len(s) for s in shapes)
    out = []
    for k in range(1, ndim + 1):
        dims = [s[-k] for s in shapes if len(s) >= k]
        chosen = dims[0]
        for d in dims:
            if not (isinstance(d, tir.IntImm) and d.value == 1):
                chosen = d
                break
        out.append(chosen)
    return tuple(reversed(out))


def binary(a: Any, b: Any, name: str) -> te.Tensor:
    """``BINARY_FUNCS[name]`` of ``a`` and ``b`` (tensors or scalars) broadcast together."""
    fn = BINARY_FUNCS[name]
    (sa, fa), (sb, fb) = _operand(a), _operand(b)
    return te.compute(_out_shape(sa, sb), lambda *i: fn(fa(i), fb(i)), name=f"T_{name}")


def where(cond: Any, a: Any, b: Any) -> te.Tensor:
    """``a`` where ``cond`` holds, else ``b`` (all three broadcast)."""
    (sc, fc), (sa, fa), (sb, fb) = _operand(cond), _operand(a), _operand(b)
    return te.compute(
        _out_shape(sc, sa, sb), lambda *i: Select(to_bool(fc(i)), fa(i), fb(i)), name="T_where"
    )


def clip(x: te.Tensor, a_min: Optional[float], a_max: Optional[float]) -> te.Tensor:
    """``x`` limited to ``[a_min, a_max]`` (a None bound is open; NaN stays NaN, and the
    upper bound wins when ``a_min > a_max``, like numpy and torch)."""

    def f(*i: Any) -> PrimExpr:
        v = x(*i)
        if a_min is not None:
            lo = cast(a_min, x.dtype)
            v = Select(LT(v, lo), lo, v)
        if a_max is not None:
            hi = cast(a_max, x.dtype)
            v = Select(GT(v, hi), hi, v)
        return v

    return te.compute(x.shape, f, name="T_clip")


def astype(x: te.Tensor, dtype: str) -> te.Tensor:
    """``x`` converted elementwise to ``dtype`` (to bool: ``x != 0``)."""
    return te.compute(x.shape, lambda *i: cast(x(*i), dtype), name="T_astype")
