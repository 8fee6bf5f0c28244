"""The rewrite rule tables used by :class:`~tvm.arith.rewrite_simplify.RewriteSimplifier`.

``INT_RULES`` hold for integer arithmetic (assuming no overflow, as index arithmetic does),
``FLOAT_RULES`` only reorder commutative operands (no reassociation), ``LOGIC_RULES`` hold
for booleans.  Rules that need the analyzer (bounds, proofs) take the simplifier ``s`` as the
second argument of their condition or right-hand side.  Comparisons, min/max decided by
bounds, and implications between conditions are handled in code by the simplifier.
"""

from __future__ import annotations

from typing import Any

from tvm.tir.expr import FloatImm, IntImm, PrimExpr

from . import const_fold as F
from .pattern import (
    Match, PConst, PVar, RuleTable, pand, pmax, pmin, pnot, por, pselect,
)

__all__ = ["INT_RULES", "FLOAT_RULES", "LOGIC_RULES", "CMP_RULES", "add_const"]

x, y, z = PVar("x"), PVar("y"), PVar("z")
c1, c2, c3 = PConst("c1", "int"), PConst("c2", "int"), PConst("c3", "int")
f1 = PConst("f1", "float")


def add_const(e: PrimExpr, value: int) -> PrimExpr:
    """``e + value`` written as ``e - |value|`` for a negative ``value`` (folded)."""
    if value == 0:
        return e
    if value < 0:
        neg = F.make_int(-value, e.dtype)
        if neg.value == -value:
            return F.sub(e, neg)
    return F.add(e, F.make_int(value, e.dtype))


def _nc(*names: str):
    """Condition: the named bindings are not constants."""

    def cond(m: Match, s: Any) -> bool:
        return not any(isinstance(m[n], (IntImm, FloatImm)) for n in names)

    return cond


def _v(m: Match, name: str) -> int:
    return m[name].value


def _divisible(a: str, b: str):
    return lambda m, s: _v(m, b) > 0 and _v(m, a) % _v(m, b) == 0


def _positive(*names: str):
    return lambda m, s: all(_v(m, n) > 0 for n in names)


def _by_bound_div(m: Match, s: Any) -> PrimExpr | None:
    c = _v(m, "c1")
    if c <= 0:
        return None
    lo, hi = s.analyzer._const_int_bound.bound(m.x)
    if lo >= -(1 << 62) and hi <= (1 << 62) and lo // c == hi // c:
        return F.make_int(lo // c, m.x.dtype)
    return None


def _by_bound_mod(m: Match, s: Any) -> PrimExpr | None:
    c = _v(m, "c1")
    if c <= 0:
        return None
    lo, hi = s.analyzer._const_int_bound.bound(m.x)
    if lo >= -(1 << 62) and hi <= (1 << 62) and lo // c == hi // c:
        return add_const(m.x, -(lo // c) * c)
    return None


def _sym_in_range(m: Match, s: Any) -> bool:
    """``0 <= x < y`` is provable."""
    return s.prove_ge_zero(m.x) and s.prove_lt(m.x, m.y)


INT_RULES = RuleTable()
R = INT_RULES.add

# -- Add ------------------------------------------------------------------------------
R(c1 + x, x + c1, _nc("x"))
R((x + c1) + c2, lambda m, s: add_const(m.x, _v(m, "c1") + _v(m, "c2")))
R((x - c1) + c2, lambda m, s: add_const(m.x, _v(m, "c2") - _v(m, "c1")))
R((c1 - x) + c2, (c1 + c2) - x)
R(x + c1, lambda m, s: add_const(m.x, _v(m, "c1")), lambda m, s: _v(m, "c1") < 0)
R((x + c1) + y, (x + y) + c1, _nc("y"))
R(x + (y + c1), (x + y) + c1, _nc("x"))
R((x - c1) + y, (x + y) - c1, _nc("y"))
R(x + (y - c1), (x + y) - c1, _nc("x"))
R((x - y) + y, x)
R(y + (x - y), x)
R(x + (0 - y), x - y)
R(x * c1 + x * c2, x * (c1 + c2))
R(x * c1 + x, x * (c1 + 1))
R(x + x * c1, x * (c1 + 1))
R(x + x, x * 2)
R((x // c1) * c1 + x % c1, x, _positive("c1"))
R(x % c1 + (x // c1) * c1, x, _positive("c1"))

# -- Sub ------------------------------------------------------------------------------
R(x - x, 0)
R(x - c1, lambda m, s: add_const(m.x, -_v(m, "c1")), lambda m, s: _v(m, "c1") < 0)
R((x + c1) - c2, lambda m, s: add_const(m.x, _v(m, "c1") - _v(m, "c2")))
R((x - c1) - c2, lambda m, s: add_const(m.x, -_v(m, "c1") - _v(m, "c2")))
R(c1 - (x + c2), (c1 - c2) - x)
R(c1 - (x - c2), (c1 + c2) - x)
R(c1 - (c2 - x), lambda m, s: add_const(m.x, _v(m, "c1") - _v(m, "c2")))
R((x + y) - x, y)
R((y + x) - x, y)
R(x - (x + y), 0 - y)
R(x - (y + x), 0 - y)
R((x - y) - x, 0 - y)
R(x - (x - y), y)
R((x + y) - (x + z), y - z)
R((y + x) - (z + x), y - z)
R((x + y) - (z + x), y - z)
R((y + x) - (x + z), y - z)
R((x + c1) - (y + c2), lambda m, s: add_const(F.sub(m.x, m.y), _v(m, "c1") - _v(m, "c2")))
R((x + c1) - y, (x - y) + c1, _nc("y"))
R(x - (y + c1), (x - y) - c1, _nc("x"))
R(x * c1 - x * c2, x * (c1 - c2))
R(x * c1 - x, x * (c1 - 1))
R(x - x * c1, x * (1 - c1))
R(x - (x // c1) * c1, x % c1, _positive("c1"))
R(x - x % c1, (x // c1) * c1, _positive("c1"))

# -- Mul ------------------------------------------------------------------------------
R(c1 * x, x * c1, _nc("x"))
R((x * c1) * c2, x * (c1 * c2))
R((x + c1) * c2, x * c2 + c1 * c2)
R((x - c1) * c2, x * c2 - c1 * c2)
R((x * c1) * y, (x * y) * c1, _nc("y"))
R(x * (y * c1), (x * y) * c1, _nc("x"))

# -- FloorDiv -------------------------------------------------------------------------
R(x // c1, _by_bound_div)
R((x * c1) // c2, x * (c1 // c2), _divisible("c1", "c2"))
R((x * c1) // c2, x // (c2 // c1), lambda m, s: _v(m, "c1") > 0 and _divisible("c2", "c1")(m, s))
R((x * c1 + y) // c2, x * (c1 // c2) + y // c2, _divisible("c1", "c2"))
R((y + x * c1) // c2, y // c2 + x * (c1 // c2), _divisible("c1", "c2"))
R((x + c1) // c2, x // c2 + c1 // c2, _divisible("c1", "c2"))
R((x - c1) // c2, x // c2 - c1 // c2, _divisible("c1", "c2"))
R((x // c1) // c2, x // (c1 * c2), _positive("c1", "c2"))
R(x // y, 0, _sym_in_range)

# -- FloorMod -------------------------------------------------------------------------
R(x % c1, _by_bound_mod)
R((x * c1) % c2, 0, _divisible("c1", "c2"))
R((x * c1 + y) % c2, y % c2, _divisible("c1", "c2"))
R((y + x * c1) % c2, y % c2, _divisible("c1", "c2"))
R((x + c1) % c2, x % c2, _divisible("c1", "c2"))
R((x - c1) % c2, x % c2, _divisible("c1", "c2"))
R((x % c1) % c2, x % c2, _divisible("c1", "c2"))
R(x % y, x, _sym_in_range)

# -- Min / Max ------------------------------------------------------------------------
for _op, _other in ((pmin, pmax), (pmax, pmin)):
    R(_op(c1, x), _op(x, c1), _nc("x"))
    R(_op(_op(x, c1), c2), _op(x, _op(c1, c2)))
    R(_op(x, _op(x, y)), _op(x, y))
    R(_op(_op(x, y), x), _op(x, y))
    R(_op(_op(x, y), y), _op(x, y))
    R(_op(x, _other(x, y)), x)
    R(_op(_other(x, y), x), x)
    R(_op(y, _other(x, y)), y)
    R(_op(_other(x, y), y), y)
    R(_op(x + z, y + z), _op(x, y) + z)
    R(_op(z + x, z + y), z + _op(x, y))
    R(_op(x - z, y - z), _op(x, y) - z)
    R(_op(z - x, z - y), z - _other(x, y))
    R(_op(x * c1, y * c1), _op(x, y) * c1, _positive("c1"))
    R(_op(x * c1, y * c1), _other(x, y) * c1, lambda m, s: _v(m, "c1") < 0)
    R(_op(x // c1, y // c1), _op(x, y) // c1, _positive("c1"))
R(pmin(pmax(x, c1), c2), c2, lambda m, s: _v(m, "c1") >= _v(m, "c2"))
R(pmax(pmin(x, c1), c2), c2, lambda m, s: _v(m, "c2") >= _v(m, "c1"))

# -- Select (integers: a select of a comparison of its branches is a min/max) -----------
R(pselect(x < y, x, y), pmin(x, y))
R(pselect(x < y, y, x), pmax(x, y))
R(pselect(x <= y, x, y), pmin(x, y))
R(pselect(x <= y, y, x), pmax(x, y))

# -- rules for every dtype --------------------------------------------------------------
_COMMON = RuleTable()
_COMMON.add(pselect(pnot(x), y, z), pselect(x, z, y))
_COMMON.add(pselect(x, pselect(x, y, z), PVar("w")), pselect(x, y, PVar("w")))
_COMMON.add(pselect(x, y, pselect(x, z, PVar("w"))), pselect(x, y, PVar("w")))
for _cls_rules in _COMMON._rules.values():
    INT_RULES.extend(_cls_rules)

FLOAT_RULES = RuleTable()
FLOAT_RULES.add(f1 + x, x + f1, _nc("x"))
FLOAT_RULES.add(f1 * x, x * f1, _nc("x"))
for _cls_rules in _COMMON._rules.values():
    FLOAT_RULES.extend(_cls_rules)

# -- logic ----------------------------------------------------------------------------
LOGIC_RULES = RuleTable()
L = LOGIC_RULES.add
L(pand(x, x), x)
L(por(x, x), x)
L(pand(x, pnot(x)), False)
L(pand(pnot(x), x), False)
L(por(x, pnot(x)), True)
L(por(pnot(x), x), True)
L(por(x, pand(x, y)), x)
L(por(x, pand(y, x)), x)
L(por(pand(x, y), x), x)
L(por(pand(y, x), x), x)
L(pand(x, por(x, y)), x)
L(pand(x, por(y, x)), x)
L(pand(por(x, y), x), x)
L(pand(por(y, x), x), x)
L(pand(pand(x, y), x), pand(x, y))
L(pand(pand(x, y), y), pand(x, y))
L(por(por(x, y), x), por(x, y))
L(por(por(x, y), y), por(x, y))
for _cls_rules in _COMMON._rules.values():
    LOGIC_RULES.extend(_cls_rules)

del R, L


# -- comparisons with min/max of one side (after GT/GE became LT/LE) ---------------------
CMP_RULES = RuleTable()
C = CMP_RULES.add
for _m in (pmin(x, y), pmin(y, x)):
    C(_m < x, y < x)
    C(x < _m, False)
    C(_m <= x, True)
    C(x <= _m, x <= y)
for _m in (pmax(x, y), pmax(y, x)):
    C(x < _m, x < y)
    C(_m < x, False)
    C(x <= _m, True)
    C(_m <= x, y <= x)
del C
