"""Constant folding and exact identities for TIR expressions: the one folder of tvm-tir.

The builders here (:func:`add`, :func:`floordiv`, :func:`select`, ...) construct a node but
fold it first when the operands allow it, with the exact semantics of the dtype:

* integers wrap around at their bit width (``int32`` ``2147483647 + 1`` is ``-2147483648``),
  unsigned integers modulo ``2**bits``;
* ``Div``/``Mod`` truncate toward zero (C), ``FloorDiv``/``FloorMod`` round toward -inf;
* a division or remainder by zero is never folded (it is left for the program to trap);
* floats: the operands are taken at the dtype's precision, ``+ - * /`` are computed in double
  precision and rounded once to the dtype (``float16``, ``bfloat16``, ``float32``), which is
  the correctly rounded result the compiled code computes; ``floordiv``/``floormod`` round
  every step as the code generators do (``floor(a / b)``, ``a - floor(a / b) * b``, in
  ``float32`` for the 16-bit types); ``min``/``max`` are not folded when an operand is NaN.

Vectors keep their structure: ``Ramp``/``Broadcast`` operands of ``+ - *`` give a ``Ramp``
(``ramp(b, s) + x -> ramp(b + x, s)``, ``ramp(b, s) * x -> ramp(b*x, s*x)``), two
``Broadcast`` operands give the ``Broadcast`` of the scalar result, and a ramp of stride 0 is
a broadcast.  The lowering passes build their index arithmetic with these builders.

Identities are only those that hold for every value: ``x + 0``, ``x - 0``, ``x * 1``,
``x * 0`` (integers only), ``x // 1``, ``x % 1`` (integers), ``x - x`` (integers),
``min(x, x)``, ``select`` with a constant condition or equal branches, and
``and``/``or``/``not`` with constants; an identity that would drop or merge an evaluation
(``f() * 0``, ``f() - f()``) is not applied when ``f`` has side effects.  For floats
``x + 0.0`` is folded to ``x`` (equal in value; only the sign of a zero may differ).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from tvm.ffi.dtype import DTypeCode, format_dtype, is_float_code, parse_dtype
from tvm.tir.expr import (
    EQ, GE, GT, LE, LT, NE, Add, And, Broadcast, Cast, Div, FloatImm, FloorDiv, FloorMod, IntImm,
    Max, Min, Mod, Mul, Not, Or, PrimExpr, Ramp, Select, Sub, _match_types, convert,
)
from tvm.tir.expr_util import const_value, has_side_effect, is_const_int, same_expr

__all__ = [
    "int_range", "wrap_int", "round_float", "make_int", "make_float", "make_const",
    "is_signed_int", "is_int_like", "fold_binary", "fold", "add", "sub", "mul", "floordiv",
    "floormod", "truncdiv", "truncmod", "min_", "max_", "compare", "logical_and",
    "logical_or", "logical_not", "select", "cast", "ramp",
]

_ARITH = (Add, Sub, Mul, Div, Mod, FloorDiv, FloorMod, Min, Max)
_CMP = (EQ, NE, LT, LE, GT, GE)
_NP_FLOAT = {16: np.float16, 32: np.float32, 64: np.float64}


# ---------------------------------------------------------------------------------------
# dtype helpers

def int_range(dtype: str) -> tuple[int, int]:
    """The representable ``(min, max)`` of an integer or bool dtype."""
    code, bits, _ = parse_dtype(dtype)
    if code == DTypeCode.INT:
        return -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    if code == DTypeCode.UINT:
        return 0, (1 << bits) - 1
    if code == DTypeCode.BOOL:
        return 0, 1
    raise TypeError(f"int_range: expected an integer dtype, got {dtype!r}")


def is_signed_int(dtype: str) -> bool:
    """Scalar signed integer dtype (the domain of index arithmetic)."""
    code, _, lanes = parse_dtype(dtype)
    return code == DTypeCode.INT and lanes == 1


def is_int_like(dtype: str) -> bool:
    """Integer, unsigned or bool dtype (any lanes)."""
    return parse_dtype(dtype)[0] in (DTypeCode.INT, DTypeCode.UINT, DTypeCode.BOOL)


def _is_float(dtype: str) -> bool:
    return is_float_code(parse_dtype(dtype)[0])


def wrap_int(value: int, dtype: str) -> int:
    """``value`` reduced to the dtype's bit width (two's complement for signed types)."""
    code, bits, _ = parse_dtype(dtype)
    if code == DTypeCode.BOOL:
        return int(value != 0)
    mask = (1 << bits) - 1
    value &= mask
    if code == DTypeCode.INT and value >> (bits - 1):
        value -= 1 << bits
    return value


def round_float(value: float, dtype: str) -> float:
    """``value`` rounded to the precision of the float dtype ``dtype``."""
    code, bits, _ = parse_dtype(dtype)
    if code == DTypeCode.BFLOAT:
        import ml_dtypes

        with np.errstate(over="ignore", invalid="ignore"):
            return float(np.array(value, dtype=np.float32).astype(ml_dtypes.bfloat16))
    if bits == 64:
        return float(value)
    np_type = _NP_FLOAT.get(bits)
    if np_type is None:
        return float(value)
    with np.errstate(over="ignore", invalid="ignore"):
        return float(np_type(value))


_INT_CACHE: dict[tuple[int, str], IntImm] = {}


def make_int(value: int, dtype: str) -> PrimExpr:
    """An integer constant of ``dtype`` (wrapped to its width; broadcast for vector dtypes).
    Immediates are immutable, so the scalar ones are shared."""
    imm = _INT_CACHE.get((value, dtype))
    if imm is not None:
        return imm
    code, bits, lanes = parse_dtype(dtype)
    if lanes > 1:
        scalar = dtype.rsplit("x", 1)[0]
        return Broadcast(make_int(value, scalar), lanes)
    imm = IntImm(dtype, wrap_int(int(value), dtype))
    if len(_INT_CACHE) > 4096:
        _INT_CACHE.clear()
    _INT_CACHE[(value, dtype)] = imm
    return imm


def make_float(value: float, dtype: str) -> PrimExpr:
    """A float constant of ``dtype`` rounded to its precision."""
    code, bits, lanes = parse_dtype(dtype)
    if lanes > 1:
        scalar = dtype.rsplit("x", 1)[0]
        return Broadcast(make_float(value, scalar), lanes)
    return FloatImm(dtype, round_float(float(value), dtype))


def make_const(value: Any, dtype: str) -> PrimExpr:
    """An int, bool or float constant of ``dtype``."""
    return make_float(value, dtype) if _is_float(dtype) else make_int(int(value), dtype)


# ---------------------------------------------------------------------------------------
# folding of two constants

def _trunc_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _int_binary(cls: type, a: int, b: int) -> int | None:
    if cls is Add:
        return a + b
    if cls is Sub:
        return a - b
    if cls is Mul:
        return a * b
    if cls in (Div, Mod, FloorDiv, FloorMod) and b == 0:
        return None
    if cls is Div:
        return _trunc_div(a, b)
    if cls is Mod:
        return a - b * _trunc_div(a, b)
    if cls is FloorDiv:
        return a // b
    if cls is FloorMod:
        return a % b
    if cls is Min:
        return min(a, b)
    if cls is Max:
        return max(a, b)
    raise AssertionError(cls)


def _float_binary(cls: type, a: float, b: float, dtype: str) -> float | None:
    """``cls(a, b)`` of two float constants as the compiled code computes it (rounding to
    ``dtype`` is left to the caller), or ``None`` when it is not folded."""
    if cls is Add:
        return a + b
    if cls is Sub:
        return a - b
    if cls is Mul:
        return a * b
    if cls is Div:
        return None if b == 0 else a / b
    if cls in (Min, Max):
        if math.isnan(a) or math.isnan(b):
            return None
        return min(a, b) if cls is Min else max(a, b)
    if cls in (FloorDiv, FloorMod):
        # floor(a / b) and a - floor(a / b) * b, each step rounded as the generated code does;
        # the 16-bit types compute in float32 on some targets and natively on others.
        if b == 0 or parse_dtype(dtype)[1] < 32 or not (math.isfinite(a) and math.isfinite(b)):
            return None
        q = round_float(a / b, dtype)
        if not math.isfinite(q):
            return None
        q = float(np.floor(q))  # keeps the sign of a zero, as floor() does
        if cls is FloorDiv:
            return q
        return a - round_float(q * b, dtype)
    return None  # Mod on floats: left to the target's fmod


def _compare_values(cls: type, a: Any, b: Any) -> bool:
    if cls is EQ:
        return a == b
    if cls is NE:
        return a != b
    if cls is LT:
        return a < b
    if cls is LE:
        return a <= b
    if cls is GT:
        return a > b
    return a >= b


def fold_binary(cls: type, a: PrimExpr, b: PrimExpr) -> PrimExpr | None:
    """Fold ``cls(a, b)`` when both operands are constants (of one dtype); else ``None``."""
    va, vb = const_value(a), const_value(b)
    if va is None or vb is None:
        return None
    dtype = a.dtype
    if cls in _CMP:
        out_dtype = "bool" if not isinstance(a, Broadcast) else f"boolx{a.lanes}"
        return make_int(int(_compare_values(cls, va, vb)), out_dtype)
    code = parse_dtype(dtype)[0]
    if code == DTypeCode.BOOL:
        return None
    if code in (DTypeCode.INT, DTypeCode.UINT):
        value = _int_binary(cls, int(va), int(vb))
        return None if value is None else make_int(value, dtype)
    if code in (DTypeCode.FLOAT, DTypeCode.BFLOAT):
        # An immediate may hold more digits than its dtype: the program sees the rounded value.
        fa, fb = round_float(float(va), dtype), round_float(float(vb), dtype)
        fvalue = _float_binary(cls, fa, fb, dtype)
        return None if fvalue is None else make_float(fvalue, dtype)
    return None


# ---------------------------------------------------------------------------------------
# builders: fold, apply exact identities, or construct

def _operands(a: Any, b: Any) -> tuple[PrimExpr, PrimExpr]:
    if isinstance(a, PrimExpr) and isinstance(b, PrimExpr) and a.dtype == b.dtype:
        return a, b
    return _match_types(a, b)


def _lanes(expr: PrimExpr) -> int:
    return parse_dtype(expr.dtype)[2]


def _vector(cls: type, a: PrimExpr, b: PrimExpr) -> PrimExpr | None:
    """``cls(a, b)`` of vector operands kept as a Ramp/Broadcast, or ``None``."""
    if isinstance(a, Broadcast) and isinstance(b, Broadcast):
        if cls in _CMP:
            return Broadcast(compare(cls, a.value, b.value), a.lanes)
        return Broadcast(_BUILDERS[cls](a.value, b.value), a.lanes)
    if cls is Add or cls is Sub:
        op = add if cls is Add else sub
        if isinstance(a, Ramp) and isinstance(b, Ramp):
            return ramp(op(a.base, b.base), op(a.stride, b.stride), a.lanes)
        if isinstance(a, Ramp) and isinstance(b, Broadcast):
            return Ramp(op(a.base, b.value), a.stride, a.lanes)
        if isinstance(a, Broadcast) and isinstance(b, Ramp):
            stride = b.stride if cls is Add else sub(make_int(0, b.stride.dtype), b.stride)
            return Ramp(op(a.value, b.base), stride, b.lanes)
    elif cls is Mul:
        if isinstance(a, Broadcast) and isinstance(b, Ramp):
            a, b = b, a
        if isinstance(a, Ramp) and isinstance(b, Broadcast):
            return ramp(mul(a.base, b.value), mul(a.stride, b.value), a.lanes)
    return None


def ramp(base: Any, stride: Any, lanes: int) -> PrimExpr:
    """``Ramp(base, stride, lanes)``; a ramp of stride 0 is a ``Broadcast`` of ``base``."""
    base, stride = convert(base), convert(stride)
    if const_value(stride) == 0:
        return Broadcast(base, lanes)
    return Ramp(base, stride, lanes)


def add(a: Any, b: Any) -> PrimExpr:
    a, b = _operands(a, b)
    folded = fold_binary(Add, a, b)
    if folded is not None:
        return folded
    if _is_zero(b):
        return a
    if _is_zero(a):
        return b
    if _lanes(a) > 1:
        vec = _vector(Add, a, b)
        if vec is not None:
            return vec
    return Add(a, b)


def sub(a: Any, b: Any) -> PrimExpr:
    a, b = _operands(a, b)
    folded = fold_binary(Sub, a, b)
    if folded is not None:
        return folded
    if _is_zero(b):
        return a
    if a is b and is_int_like(a.dtype) and not has_side_effect(a):
        return make_int(0, a.dtype)
    if _lanes(a) > 1:
        vec = _vector(Sub, a, b)
        if vec is not None:
            return vec
    return Sub(a, b)


def mul(a: Any, b: Any) -> PrimExpr:
    a, b = _operands(a, b)
    folded = fold_binary(Mul, a, b)
    if folded is not None:
        return folded
    if const_value(b) == 1:
        return a
    if const_value(a) == 1:
        return b
    if is_int_like(a.dtype) and (
        (is_const_int(a, 0) and not has_side_effect(b))
        or (is_const_int(b, 0) and not has_side_effect(a))
    ):
        return make_int(0, a.dtype)
    if _lanes(a) > 1:
        vec = _vector(Mul, a, b)
        if vec is not None:
            return vec
    return Mul(a, b)


def _div_like(cls: type, a: Any, b: Any) -> PrimExpr:
    a, b = _operands(a, b)
    folded = fold_binary(cls, a, b)
    if folded is not None:
        return folded
    if const_value(b) == 1:
        if is_int_like(a.dtype):
            return a if cls in (Div, FloorDiv) else make_int(0, a.dtype)
        if cls is Div:  # x / 1.0 is exact; floor(x / 1.0) is not x
            return a
    if is_int_like(a.dtype) and is_const_int(a, 0) and const_value(b) not in (None, 0):
        return a
    if _lanes(a) > 1:
        vec = _vector(cls, a, b)
        if vec is not None:
            return vec
    return cls(a, b)


def floordiv(a: Any, b: Any) -> PrimExpr:
    return _div_like(FloorDiv, a, b)


def floormod(a: Any, b: Any) -> PrimExpr:
    return _div_like(FloorMod, a, b)


def truncdiv(a: Any, b: Any) -> PrimExpr:
    return _div_like(Div, a, b)


def truncmod(a: Any, b: Any) -> PrimExpr:
    return _div_like(Mod, a, b)


def min_(a: Any, b: Any) -> PrimExpr:
    a, b = _operands(a, b)
    folded = fold_binary(Min, a, b)
    if folded is not None:
        return folded
    return a if same_expr(a, b, pure=True) else _vector_or(Min, a, b)


def max_(a: Any, b: Any) -> PrimExpr:
    a, b = _operands(a, b)
    folded = fold_binary(Max, a, b)
    if folded is not None:
        return folded
    return a if same_expr(a, b, pure=True) else _vector_or(Max, a, b)


def _vector_or(cls: type, a: PrimExpr, b: PrimExpr) -> PrimExpr:
    vec = _vector(cls, a, b) if _lanes(a) > 1 else None
    return vec if vec is not None else cls(a, b)


def compare(cls: type, a: Any, b: Any) -> PrimExpr:
    """A comparison node (``EQ``..``GE``), folded when both sides are constants."""
    a, b = _operands(a, b)
    folded = fold_binary(cls, a, b)
    return folded if folded is not None else _vector_or(cls, a, b)


def _bool_const(expr: PrimExpr) -> bool | None:
    value = const_value(expr)
    if value is None or not isinstance(expr, (IntImm, Broadcast)):
        return None
    return bool(value)


def logical_and(a: Any, b: Any) -> PrimExpr:
    a, b = convert(a), convert(b)
    ca, cb = _bool_const(a), _bool_const(b)
    if ca is False:
        return a
    if cb is False:
        return b
    if ca is True:
        return b
    if cb is True:
        return a
    return And(a, b)


def logical_or(a: Any, b: Any) -> PrimExpr:
    a, b = convert(a), convert(b)
    ca, cb = _bool_const(a), _bool_const(b)
    if ca is True:
        return a
    if cb is True:
        return b
    if ca is False:
        return b
    if cb is False:
        return a
    return Or(a, b)


def logical_not(a: Any) -> PrimExpr:
    a = convert(a)
    ca = _bool_const(a)
    if ca is not None:
        return make_int(int(not ca), a.dtype)
    if isinstance(a, Not):
        return a.a
    return Not(a)


def select(cond: Any, t: Any, f: Any) -> PrimExpr:
    cond = convert(cond)
    c = _bool_const(cond)
    if c is not None and isinstance(cond, IntImm):
        t, f = _operands(t, f)
        return t if c else f
    node = Select(cond, t, f)
    if same_expr(node.true_value, node.false_value, pure=True):
        return node.true_value
    return node


def cast(dtype: str, value: Any) -> PrimExpr:
    """``Cast(dtype, value)``, folded for constants; a no-op cast returns ``value``."""
    value = convert(value)
    if value.dtype == dtype:
        return value
    folded = _fold_cast(dtype, value)
    return folded if folded is not None else Cast(dtype, value)


def _fold_cast(dtype: str, value: PrimExpr) -> PrimExpr | None:
    if isinstance(value, Broadcast):
        code, bits, lanes = parse_dtype(dtype)
        if lanes != value.lanes:
            return None
        return Broadcast(cast(format_dtype(code, bits), value.value), lanes)
    v = const_value(value)
    if v is None:
        return None
    code = parse_dtype(dtype)[0]
    if code in (DTypeCode.FLOAT, DTypeCode.BFLOAT):
        if isinstance(value, FloatImm):
            return make_float(round_float(v, value.dtype), dtype)
        return make_float(_int_to_float(int(v), dtype), dtype)
    if code == DTypeCode.BOOL:
        return make_int(int(v != 0), dtype)
    if code in (DTypeCode.INT, DTypeCode.UINT):
        if isinstance(value, FloatImm):
            if not math.isfinite(v):
                return None
            iv = int(v)  # truncation toward zero, as C
            lo, hi = int_range(dtype)
            return make_int(iv, dtype) if lo <= iv <= hi else None
        return make_int(int(v), dtype)
    return None


def _int_to_float(v: int, dtype: str) -> float:
    """The integer ``v`` converted as the generated code converts it: rounded once to a float
    of 32 bits or more (then to ``dtype``), not first to double when that would round."""
    if -(1 << 53) <= v <= (1 << 53):
        return float(v)  # exact in double
    if not -(1 << 63) <= v < (1 << 64):
        return math.copysign(math.inf, v)
    via = np.float64 if parse_dtype(dtype)[1] == 64 else np.float32
    with np.errstate(over="ignore"):
        return float(np.array(v, dtype=np.uint64 if v >= 0 else np.int64).astype(via))


def _is_zero(expr: PrimExpr) -> bool:
    return const_value(expr) == 0


# ---------------------------------------------------------------------------------------
# folding of one node

_BUILDERS = {
    Add: add, Sub: sub, Mul: mul, FloorDiv: floordiv, FloorMod: floormod, Div: truncdiv,
    Mod: truncmod, Min: min_, Max: max_,
}


def fold(expr: PrimExpr) -> PrimExpr:
    """Fold one node whose operands are already folded; returns ``expr`` if nothing applies."""
    cls = type(expr)
    builder = _BUILDERS.get(cls)
    if builder is not None:
        out = builder(expr.a, expr.b)
    elif cls in _CMP:
        out = compare(cls, expr.a, expr.b)
    elif cls is And:
        out = logical_and(expr.a, expr.b)
    elif cls is Or:
        out = logical_or(expr.a, expr.b)
    elif cls is Not:
        out = logical_not(expr.a)
    elif cls is Select:
        out = select(expr.condition, expr.true_value, expr.false_value)
    elif cls is Cast:
        out = cast(expr.dtype, expr.value)
    elif cls is Ramp:
        out = ramp(expr.base, expr.stride, expr.lanes)
    else:
        return expr
    if type(out) is cls and all(
        getattr(out, f.name) is getattr(expr, f.name) for f in cls._field_infos if f.kind != "ignore"
    ):
        return expr
    return out
