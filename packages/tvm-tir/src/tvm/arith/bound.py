"""Constant integer bounds: ``[min, max]`` of an integer expression over its variables.

Variables take their bounds from the analyzer (loop ranges, ``bind``, constraint scopes);
an unbound :class:`~tvm.tir.SizeVar` is ``[0, max]`` of its dtype and any other unbound
variable covers its dtype's range.  ``int64`` limits stand for infinity:
:attr:`ConstIntBound.POS_INF` and :attr:`ConstIntBound.NEG_INF`.

The analysis assumes index arithmetic does not overflow (as TVM does): ``x + 1`` of an
``int32`` ``x`` in ``[0, 2**31 - 1]`` is ``[1, 2**31]``.  Results are memoised per expression
node, so shared subexpressions are analysed once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from tvm.ffi import Object, register_object
from tvm.ffi.dtype import DTypeCode, parse_dtype
from tvm.ir.op import Op
from tvm.tir.expr import (
    EQ, GE, GT, LE, LT, NE, Add, And, Broadcast, Call, Cast, Div, FloatImm, FloorDiv, FloorMod,
    IntImm, Let, Max, Min, Mod, Mul, Not, Or, PrimExpr, Ramp, Select, SizeVar, Sub, Var,
)

__all__ = ["ConstIntBound", "ConstIntBoundAnalyzer", "POS_INF", "NEG_INF", "everything"]

POS_INF = (1 << 63) - 1
NEG_INF = -POS_INF

Bound = tuple[int, int]


@register_object("arith.ConstIntBound")
class ConstIntBound(Object):
    """The closed interval ``[min_value, max_value]``; ±``POS_INF`` means unbounded."""

    min_value: int
    max_value: int

    POS_INF: ClassVar[int] = POS_INF
    NEG_INF: ClassVar[int] = NEG_INF

    def __contains__(self, value: int) -> bool:
        return self.min_value <= value <= self.max_value

    def is_const(self) -> bool:
        return self.min_value == self.max_value

    def __repr__(self) -> str:
        def show(v: int) -> str:
            return "+inf" if v >= POS_INF else "-inf" if v <= NEG_INF else str(v)

        return f"ConstIntBound[{show(self.min_value)}, {show(self.max_value)}]"


def _clamp(v: int) -> int:
    return POS_INF if v >= POS_INF else NEG_INF if v <= NEG_INF else v


def everything(dtype: str) -> Bound:
    """The bound of an unknown value of ``dtype``."""
    code, bits, _ = parse_dtype(dtype)
    if code == DTypeCode.INT:
        return _clamp(-(1 << (bits - 1))), _clamp((1 << (bits - 1)) - 1)
    if code == DTypeCode.UINT:
        return 0, _clamp((1 << bits) - 1)
    if code == DTypeCode.BOOL:
        return 0, 1
    return NEG_INF, POS_INF


# -- infinity-aware interval arithmetic ---------------------------------------------------

def _inf(v: int) -> bool:
    return v >= POS_INF or v <= NEG_INF


def b_add(x: int, y: int) -> int:
    if _inf(x):
        return x
    if _inf(y):
        return y
    return _clamp(x + y)


def b_mul(x: int, y: int) -> int:
    if x == 0 or y == 0:
        return 0
    if _inf(x) or _inf(y):
        return POS_INF if (x > 0) == (y > 0) else NEG_INF
    return _clamp(x * y)


def b_floordiv(x: int, y: int) -> int:
    """``x // y`` for ``y != 0`` with infinite ``x``; ``y`` may be infinite (-> 0 or -1)."""
    if _inf(x):
        return x if y > 0 else -x
    if _inf(y):
        return 0 if (x >= 0) == (y > 0) or x == 0 else -1
    return x // y


def b_truncdiv(x: int, y: int) -> int:
    if _inf(x):
        return x if y > 0 else -x
    if _inf(y):
        return 0
    q = abs(x) // abs(y)
    return q if (x >= 0) == (y > 0) else -q


def _corners(fn: Callable[[int, int], int], a: Bound, b: Bound) -> Bound:
    vals = (fn(a[0], b[0]), fn(a[0], b[1]), fn(a[1], b[0]), fn(a[1], b[1]))
    return min(vals), max(vals)


def bound_add(a: Bound, b: Bound) -> Bound:
    return b_add(a[0], b[0]), b_add(a[1], b[1])


def bound_neg(a: Bound) -> Bound:
    return -a[1], -a[0]


def bound_sub(a: Bound, b: Bound) -> Bound:
    return bound_add(a, bound_neg(b))


def bound_mul(a: Bound, b: Bound) -> Bound:
    return _corners(b_mul, a, b)


def _nonzero_divisor(b: Bound) -> list[Bound]:
    """Split a divisor range into its negative and positive parts (zero is excluded)."""
    parts = []
    if b[0] < 0:
        parts.append((b[0], min(b[1], -1)))
    if b[1] > 0:
        parts.append((max(b[0], 1), b[1]))
    return parts


def _union_all(bounds: list[Bound], default: Bound) -> Bound:
    if not bounds:
        return default
    return min(x[0] for x in bounds), max(x[1] for x in bounds)


def bound_floordiv(a: Bound, b: Bound) -> Bound:
    parts = [_corners(b_floordiv, a, p) for p in _nonzero_divisor(b)]
    return _union_all(parts, (NEG_INF, POS_INF))


def bound_truncdiv(a: Bound, b: Bound) -> Bound:
    parts = [_corners(b_truncdiv, a, p) for p in _nonzero_divisor(b)]
    return _union_all(parts, (NEG_INF, POS_INF))


def bound_floormod(a: Bound, b: Bound) -> Bound:
    if b[0] > 0:
        if b[0] == b[1] and not _inf(a[0]) and not _inf(a[1]):
            c = b[0]
            if a[0] // c == a[1] // c:
                return a[0] % c, a[1] % c
        hi = b_add(b[1], -1)
        if a[0] >= 0:
            hi = min(hi, a[1])
        return 0, hi
    if b[1] < 0:
        lo = b_add(b[0], 1)
        if a[1] <= 0:
            lo = max(lo, a[0])
        return lo, 0
    mag = max(abs(b[0]), abs(b[1]))
    return -b_add(mag, -1), b_add(mag, -1)


def bound_truncmod(a: Bound, b: Bound) -> Bound:
    mag = b_add(max(abs(b[0]), abs(b[1])), -1)
    if a[0] >= 0:
        return 0, min(a[1], mag)
    if a[1] <= 0:
        return max(a[0], -mag), 0
    return max(a[0], -mag), min(a[1], mag)


def bound_min(a: Bound, b: Bound) -> Bound:
    return min(a[0], b[0]), min(a[1], b[1])


def bound_max(a: Bound, b: Bound) -> Bound:
    return max(a[0], b[0]), max(a[1], b[1])


def bound_union(a: Bound, b: Bound) -> Bound:
    return min(a[0], b[0]), max(a[1], b[1])


def bound_intersect(a: Bound, b: Bound) -> Bound:
    return max(a[0], b[0]), min(a[1], b[1])


# -- the analyzer -------------------------------------------------------------------------

_BOOL_NODES = (EQ, NE, LT, LE, GT, GE, And, Or, Not)


class ConstIntBoundAnalyzer:
    """Computes :class:`ConstIntBound` of expressions given bounds of variables."""

    _CACHE_LIMIT = 20000

    def __init__(self) -> None:
        self._var_bounds: dict[Var, Bound] = {}
        self._cache: dict[int, tuple[PrimExpr, Bound]] = {}

    # -- variable bounds ---------------------------------------------------------------
    def var_bound(self, var: Var) -> Bound:
        """The bound of ``var``: recorded, or the dtype default."""
        b = self._var_bounds.get(var)
        if b is not None:
            return b
        lo, hi = everything(var.dtype)
        if isinstance(var, SizeVar):
            lo = max(lo, 0)
        return lo, hi

    def update(self, var: Var, bound: Bound, override: bool = False) -> None:
        """Record ``var``'s bound; a conflicting second bound needs ``override=True``."""
        old = self._var_bounds.get(var)
        if old is not None and old != tuple(bound) and not override:
            raise ValueError(
                f"const_int_bound: variable {var.name!r} is already bound to {list(old)}, "
                f"cannot rebind to {list(bound)} (pass override=True to replace it)"
            )
        self._var_bounds[var] = (int(bound[0]), int(bound[1]))
        self._cache.clear()

    def enter_constraint(self, var: Var, bound: Bound) -> Callable[[], None]:
        """Intersect ``var``'s bound with ``bound``; returns a function that undoes it."""
        had = var in self._var_bounds
        old = self._var_bounds.get(var)
        self._var_bounds[var] = bound_intersect(self.var_bound(var), bound)
        self._cache.clear()

        def restore() -> None:
            if had:
                self._var_bounds[var] = old  # type: ignore[assignment]
            else:
                self._var_bounds.pop(var, None)
            self._cache.clear()

        return restore

    def clear_cache(self) -> None:
        self._cache.clear()

    # -- evaluation --------------------------------------------------------------------
    def __call__(self, expr: PrimExpr) -> ConstIntBound:
        lo, hi = self.bound(expr)
        return ConstIntBound(lo, hi)

    def bound(self, expr: PrimExpr) -> Bound:
        """``(min, max)`` of ``expr`` as a plain tuple (memoised per node)."""
        hit = self._cache.get(id(expr))
        if hit is not None and hit[0] is expr:
            return hit[1]
        handler = _DISPATCH.get(type(expr))
        if handler is None:
            result = self._fallback(expr)
        else:
            result = handler(self, expr)
        if len(self._cache) > self._CACHE_LIMIT:
            self._cache.clear()
        self._cache[id(expr)] = (expr, result)
        return result

    def _fallback(self, expr: Any) -> Bound:
        if isinstance(expr, Var):
            return self.var_bound(expr)
        if not isinstance(expr, PrimExpr):
            raise TypeError(f"const_int_bound expects a PrimExpr, got {type(expr).__name__}")
        if isinstance(expr, _BOOL_NODES):
            return 0, 1
        return everything(expr.dtype)

    def _int_imm(self, e: IntImm) -> Bound:
        return _clamp(e.value), _clamp(e.value)

    def _float_imm(self, e: FloatImm) -> Bound:
        return NEG_INF, POS_INF

    def _var(self, e: Var) -> Bound:
        return self.var_bound(e)

    def _add(self, e: Add) -> Bound:
        return bound_add(self.bound(e.a), self.bound(e.b))

    def _sub(self, e: Sub) -> Bound:
        if e.a is e.b:
            return 0, 0
        return bound_sub(self.bound(e.a), self.bound(e.b))

    def _mul(self, e: Mul) -> Bound:
        return bound_mul(self.bound(e.a), self.bound(e.b))

    def _floordiv(self, e: FloorDiv) -> Bound:
        return bound_floordiv(self.bound(e.a), self.bound(e.b))

    def _floormod(self, e: FloorMod) -> Bound:
        return bound_floormod(self.bound(e.a), self.bound(e.b))

    def _div(self, e: Div) -> Bound:
        if not _is_intish(e.dtype):
            return NEG_INF, POS_INF
        return bound_truncdiv(self.bound(e.a), self.bound(e.b))

    def _mod(self, e: Mod) -> Bound:
        if not _is_intish(e.dtype):
            return NEG_INF, POS_INF
        return bound_truncmod(self.bound(e.a), self.bound(e.b))

    def _min(self, e: Min) -> Bound:
        return bound_min(self.bound(e.a), self.bound(e.b))

    def _max(self, e: Max) -> Bound:
        return bound_max(self.bound(e.a), self.bound(e.b))

    def _select(self, e: Select) -> Bound:
        return bound_union(self.bound(e.true_value), self.bound(e.false_value))

    def _cast(self, e: Cast) -> Bound:
        target = everything(e.dtype)
        if not _is_intish(e.dtype):
            return target
        if not _is_intish(e.value.dtype):
            return target
        inner = self.bound(e.value)
        if target[0] <= inner[0] and inner[1] <= target[1]:
            return inner
        return target

    def _let(self, e: Let) -> Bound:
        restore = self.enter_constraint(e.var, self.bound(e.value))
        try:
            return self.bound(e.body)
        finally:
            restore()

    def _broadcast(self, e: Broadcast) -> Bound:
        return self.bound(e.value)

    def _ramp(self, e: Ramp) -> Bound:
        base = self.bound(e.base)
        last = bound_add(base, bound_mul(self.bound(e.stride), (e.lanes - 1, e.lanes - 1)))
        return bound_union(base, last)

    def _call(self, e: Call) -> Bound:
        op = e.op
        name = op.name if isinstance(op, Op) else ""
        default = everything(e.dtype)
        if name == "tir.if_then_else" and len(e.args) == 3:
            return bound_union(self.bound(e.args[1]), self.bound(e.args[2]))
        if name == "tir.likely" and e.args:
            return self.bound(e.args[0])
        if name == "tir.bitwise_and" and len(e.args) == 2:
            a, b = self.bound(e.args[0]), self.bound(e.args[1])
            if a[0] >= 0 and b[0] >= 0:
                return 0, min(a[1], b[1])
            if a[0] >= 0:
                return 0, a[1]
            if b[0] >= 0:
                return 0, b[1]
            return default
        if name == "tir.shift_right" and len(e.args) == 2:
            a, s = self.bound(e.args[0]), self.bound(e.args[1])
            if a[0] >= 0 and s[0] >= 0 and not _inf(s[1]):
                hi = a[1] if _inf(a[1]) else a[1] >> s[0]
                return a[0] >> s[1] if s[1] < 64 else 0, hi
            return default
        if name == "tir.shift_left" and len(e.args) == 2:
            a, s = self.bound(e.args[0]), self.bound(e.args[1])
            if a[0] >= 0 and 0 <= s[0] and s[1] < 63:
                return bound_intersect(bound_mul(a, (1 << s[0], 1 << s[1])), default)
            return default
        return default


def _is_intish(dtype: str) -> bool:
    return parse_dtype(dtype)[0] in (DTypeCode.INT, DTypeCode.UINT, DTypeCode.BOOL)


_DISPATCH: dict[type, Callable[[ConstIntBoundAnalyzer, Any], Bound]] = {
    IntImm: ConstIntBoundAnalyzer._int_imm,
    FloatImm: ConstIntBoundAnalyzer._float_imm,
    Var: ConstIntBoundAnalyzer._var,
    SizeVar: ConstIntBoundAnalyzer._var,
    Add: ConstIntBoundAnalyzer._add,
    Sub: ConstIntBoundAnalyzer._sub,
    Mul: ConstIntBoundAnalyzer._mul,
    FloorDiv: ConstIntBoundAnalyzer._floordiv,
    FloorMod: ConstIntBoundAnalyzer._floormod,
    Div: ConstIntBoundAnalyzer._div,
    Mod: ConstIntBoundAnalyzer._mod,
    Min: ConstIntBoundAnalyzer._min,
    Max: ConstIntBoundAnalyzer._max,
    Select: ConstIntBoundAnalyzer._select,
    Cast: ConstIntBoundAnalyzer._cast,
    Let: ConstIntBoundAnalyzer._let,
    Broadcast: ConstIntBoundAnalyzer._broadcast,
    Ramp: ConstIntBoundAnalyzer._ramp,
    Call: ConstIntBoundAnalyzer._call,
}
