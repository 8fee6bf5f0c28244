"""Rewrite rules: comparisons, booleans, min/max, select, vectors, and the pattern DSL."""

import pytest
from arith_util import fmt
from tvm.arith import Analyzer
from tvm.arith.pattern import PConst, PVar, Rule, RuleTable
from tvm.ffi import structural_equal
from tvm.tir import expr as E
from tvm.tir import op as T

x, y, z = E.Var("x"), E.Var("y"), E.Var("z")
b, c = E.Var("b", "bool"), E.Var("c", "bool")
f = E.Var("f", "float32")
TRUE, FALSE = E.const(True), E.const(False)


def check(expr, expected, ana=None, method="simplify"):
    ana = ana or Analyzer()
    out = getattr(ana, method)(expr)
    expected = E.convert(expected)
    assert structural_equal(out, expected), f"{fmt(expr)} -> {fmt(out)}, expected {fmt(expected)}"


CASES = [
    # comparisons
    (x < x, FALSE),
    (x <= x, TRUE),
    (x != x, FALSE),
    (x + 1 < 5, x < 4),
    (x - 2 <= 5, x <= 7),
    (x * 4 < 10, x < 3),
    (x * 4 <= 10, x <= 2),
    (x * 2 == 3, FALSE),
    (x * 2 != 3, TRUE),
    (x * 2 == 4, x == 2),
    (y == x, x == y),
    (x > 3, E.LT(E.const(3), x)),
    (x >= 4, E.LE(E.const(4), x)),
    (x + 1 < y, x < y - 1),
    (x + y < y + 3, x < 3),
    (T.max(x, y) < x, FALSE),
    (x < T.max(x, y), x < y),
    (T.min(x, y) <= x, TRUE),
    (z > T.max(z, -1), FALSE),
    # floats: only what IEEE allows
    (f < f, FALSE),
    (f == f, f == f),
    (E.Not(f < 1.0), E.Not(f < 1.0)),
    (E.Not(f == 1.0), f != 1.0),
    # booleans
    (E.And(b, b), b),
    (E.And(b, E.Not(b)), FALSE),
    (E.Or(E.Not(b), b), TRUE),
    (E.Or(b, E.And(b, c)), b),
    (E.And(E.Or(c, b), b), b),
    (E.And(x < 4, x < 8), x < 4),
    (E.Or(x < 4, x < 8), x < 8),
    (E.And(x < 4, x > 5), FALSE),
    (E.Or(x < 4, x >= 4), TRUE),
    (E.Not(x < y), y <= x),
    (E.Not(E.Not(b)), b),
    # min / max
    (T.min(x, x), x),
    (T.max(x + 1, x + 2), x + 2),
    (T.min(x + 1, x - 3), x - 3),
    (T.min(T.min(x, 4), 2), T.min(x, 2)),
    (T.min(T.max(x, 8), 4), E.const(4)),
    (T.max(T.min(x, 2), 5), E.const(5)),
    (T.min(x, T.max(x, y)), x),
    (T.max(x, T.min(x, y)), x),
    (T.min(3, x), T.min(x, 3)),
    (T.min(x * 4, y * 4), T.min(x, y) * 4),
    (T.max(x * -2, y * -2), T.min(x, y) * -2),
    # select
    (E.Select(TRUE, x, y), x),
    (E.Select(b, x, x), x),
    (E.Select(E.Not(b), x, y), E.Select(b, y, x)),
    (E.Select(x < y, x, y), T.min(x, y)),
    (E.Select(x < y, y, x), T.max(x, y)),
    (E.Select(x < x + 1, y, z), y),
    (T.if_then_else(x == x, y, z), y),
]


@pytest.mark.parametrize("expr, expected", CASES, ids=[fmt(c[0]) for c in CASES])
def test_rewrite_golden(expr, expected):
    check(expr, expected)


def test_decided_by_bounds():
    ana = Analyzer()
    i = E.Var("i")
    ana.bind(i, E.Range(0, 16))
    check(i < 16, TRUE, ana)
    check(i < 15, i < 15, ana)
    check(i * 4 + 3 < 64, TRUE, ana)
    check(T.min(i, 20), i, ana)
    check(T.max(i - 20, 0), E.const(0), ana)
    check(E.Select(i >= 0, x, y), x, ana)


RULE_ONLY = [
    ((x + 2) + 3, x + 5),
    ((x - 2) + 3, x + 1),
    (x + -3, x - 3),
    ((x + y) - x, y),
    (x - x, E.const(0)),
    ((x * 2) * 3, x * 6),
    (x * 2 + x * 3, x * 5),
    ((x * 8) // 4, x * 2),
    ((x * 8 + y) // 4, x * 2 + y // 4),
    ((x * 8 + y) % 4, y % 4),
    ((x // 2) // 4, x // 8),
    ((x % 8) % 4, x % 4),
    ((x // 4) * 4 + x % 4, x),
    (x - (x // 4) * 4, x % 4),
]


@pytest.mark.parametrize("expr, expected", RULE_ONLY, ids=[fmt(c[0]) for c in RULE_ONLY])
def test_rewrite_simplify_rules(expr, expected):
    check(expr, expected, method="rewrite_simplify")


def test_rewrite_simplify_keeps_order_of_sums():
    ana = Analyzer()
    expr = y + x * 4
    assert ana.rewrite_simplify(expr) is expr


def test_vector_ramp_broadcast():
    ana = Analyzer()
    four = E.Broadcast(E.const(4), 4)
    check(E.Ramp(x, 1, 4) + E.Broadcast(y, 4), E.Ramp(x + y, 1, 4), ana)
    check(E.Ramp(x, 1, 4) * E.Broadcast(E.const(2), 4), E.Ramp(x * 2, 2, 4), ana)
    check(E.Broadcast(x, 4) + E.Broadcast(E.const(1), 4), E.Broadcast(x + 1, 4), ana)
    check(E.Ramp(x * 4, 1, 4) // four, E.Broadcast(x, 4), ana)
    check(E.Ramp(x * 4, 1, 4) % four, E.Ramp(E.const(0), E.const(1), 4), ana)
    check(E.Ramp(x, 0, 4), E.Broadcast(x, 4), ana)
    # lanes crossing a block boundary stay a vector division
    out = ana.simplify(E.Ramp(x * 4 + 1, 1, 4) // four)
    assert isinstance(out, E.FloorDiv)


def test_unsigned_arithmetic_is_not_canonicalised_unsafely():
    ana = Analyzer()
    u = E.Var("u", "uint32")
    check(u - u, E.const(0, "uint32"), ana)
    check((u + 3) - 1, u + E.const(2, "uint32"), ana)
    check(u < E.const(0, "uint32"), FALSE, ana)
    out = ana.simplify(u - 1 < E.const(5, "uint32"))
    assert isinstance(out, E.LT)  # u - 1 may wrap: not rewritten to u < 6


def test_let_with_simple_value_is_inlined():
    ana = Analyzer()
    check(E.Let(y, x, y * 2 + y), x * 3, ana)
    check(E.Let(y, x + 1, x), x, ana)


def test_pattern_dsl_rules():
    px, pc1, pc2 = PVar("x"), PConst("c1", "int"), PConst("c2", "int")
    table = RuleTable()
    table.add((px + pc1) * pc2, px * pc2 + pc1 * pc2)
    table.add(px - px, 0)
    out = table.apply((x + 2) * 3, None)
    assert structural_equal(out, x * 3 + 6)
    out = table.apply((x + y) - (x + y), None)
    assert structural_equal(out, E.const(0))
    assert table.apply(x - y, None) is None
    with pytest.raises(TypeError, match="node pattern"):
        Rule(px, px)
