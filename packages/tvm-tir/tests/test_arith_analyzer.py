"""Analyzer: bounds, integer sets, binding, constraint scopes, proofs, linear forms."""

import time

import pytest
from arith_util import fmt
from tvm.arith import (
    NEG_INF, POS_INF, Analyzer, ConstIntBound, IntervalSet, detect_linear_equation, eval_set,
    intersect, union,
)
from tvm.ffi import structural_equal
from tvm.tir import expr as E
from tvm.tir import op as T

x, y, z = E.Var("x"), E.Var("y"), E.Var("z")
INF = ConstIntBound.POS_INF


def bound(ana, expr):
    b = ana.const_int_bound(expr)
    return b.min_value, b.max_value


# -- ConstIntBound ----------------------------------------------------------------------

def test_const_int_bound_of_variables():
    ana = Analyzer()
    assert bound(ana, x) == (-(2**31), 2**31 - 1)
    assert bound(ana, E.SizeVar("n")) == (0, 2**31 - 1)
    assert bound(ana, E.Var("l", "int64")) == (-INF, INF)
    assert bound(ana, E.Var("u", "uint8")) == (0, 255)
    assert bound(ana, E.Var("b", "bool")) == (0, 1)
    ana.bind(x, E.Range(2, 10))
    assert bound(ana, x) == (2, 11)


@pytest.mark.parametrize(
    "make, expected",
    [
        (lambda: x + y, (-3, 12)),
        (lambda: x - y, (-6, 9)),
        (lambda: x * y, (-8, 32)),
        (lambda: x * -3, (-24, 6)),
        (lambda: x // 3, (-1, 2)),
        (lambda: x // -3, (-3, 0)),
        (lambda: x % 3, (0, 2)),
        (lambda: (y + 1) % 16, (0, 5)),  # inside one block of 16: its own range
        (lambda: y % 16, (0, 15)),
        (lambda: E.Div(x, 3), (0, 2)),
        (lambda: E.Mod(x, 3), (-2, 2)),
        (lambda: T.min(x, y), (-2, 4)),
        (lambda: T.max(x, y), (-1, 8)),
        (lambda: E.Select(x < y, x, y * 10), (-10, 40)),
        (lambda: E.Cast("int8", x * 100), (-128, 127)),
        (lambda: E.Cast("int64", x), (-2, 8)),
        (lambda: x < y, (0, 1)),
        (lambda: x // y, (-8, 8)),  # y may be negative, zero is excluded
    ],
)
def test_const_int_bound_ops(make, expected):
    ana = Analyzer()
    ana.bind(x, E.Range(-2, 11))  # [-2, 8]
    ana.bind(y, E.Range(-1, 6))  # [-1, 4]
    assert bound(ana, make()) == expected


def test_const_int_bound_infinity_is_sticky():
    ana = Analyzer()
    l = E.Var("l", "int64")
    assert bound(ana, l + 1) == (-INF, INF)
    assert bound(ana, l * 0) == (0, 0)
    ana.update(l, ConstIntBound(0, INF))
    assert bound(ana, l // 4) == (0, INF)
    assert bound(ana, l % 4) == (0, 3)


def test_update_conflict_needs_override():
    ana = Analyzer()
    ana.update(x, ConstIntBound(0, 3))
    with pytest.raises(ValueError, match="already bound"):
        ana.update(x, ConstIntBound(0, 4))
    ana.update(x, ConstIntBound(0, 4), override=True)
    assert bound(ana, x) == (0, 4)


# -- binding and constraints ------------------------------------------------------------

def test_bind_expression_substitutes():
    ana = Analyzer()
    ana.bind(y, x * 4 + 1)
    assert structural_equal(ana.simplify(y - x * 4), E.const(1))
    with pytest.raises(ValueError, match="already bound"):
        ana.bind(y, x)
    ana.bind(y, x, allow_override=True)
    assert structural_equal(ana.simplify(y - x), E.const(0))
    with pytest.raises(ValueError, match="uses 'x' itself"):
        ana.bind(x, y + 1)  # y is x: a cycle


def test_bind_symbolic_range_gives_facts():
    ana = Analyzer()
    n = E.SizeVar("n")
    ana.bind(x, E.Range(0, n))
    assert ana.can_prove(x < n)
    assert ana.can_prove(x <= n - 1)
    assert ana.can_prove(x >= 0)
    assert not ana.can_prove(x < n - 1)
    assert structural_equal(ana.simplify(T.min(x, n)), x)
    assert structural_equal(ana.simplify(x % n), x)
    assert structural_equal(ana.simplify(x // n), E.const(0))


def test_constraint_scope_is_scoped():
    ana = Analyzer()
    n = E.Var("n")
    with ana.constraint_scope(E.And(x >= 0, x < 8)):
        assert ana.can_prove(x < 8)
        assert bound(ana, x) == (0, 7)
        assert structural_equal(ana.simplify(x // 8), E.const(0))
        with ana.constraint_scope(x < n):
            assert ana.can_prove(x < n + 1)
            assert ana.can_prove(x + 1 <= n)
            assert not ana.can_prove(x + 2 <= n)
        assert not ana.can_prove(x < n + 1)
    assert not ana.can_prove(x < 8)
    assert bound(ana, x)[1] == 2**31 - 1


def test_constraint_scope_with_boolean_literals():
    ana = Analyzer()
    b = E.Var("b", "bool")
    with ana.constraint_scope(b):
        assert ana.can_prove(b)
        assert structural_equal(ana.simplify(E.Select(b, x, y)), x)
    with ana.constraint_scope(E.Not(b)):
        assert structural_equal(ana.simplify(E.Select(b, x, y)), y)
    assert not ana.can_prove(b)


def test_can_prove_and_equal():
    ana = Analyzer()
    assert ana.can_prove(x * 2 // 2 == x)
    assert ana.can_prove(T.max(x, y) >= x)
    assert not ana.can_prove(x < y)  # "not proven" is not "false"
    assert ana.can_prove_equal((x + y) * 2, y * 2 + x * 2)
    assert not ana.can_prove_equal(x // 2 * 2, x)
    f = E.Var("f", "float32")
    assert ana.can_prove_equal(f * 1.0, f)
    assert ana.can_prove_greater_equal(x * x - 2 * x * y + y * y + 0 * z, 0) is False
    ana.bind(z, E.Range(0, 4))
    assert ana.can_prove_greater_equal(z, 0) and ana.can_prove_less(z, 4)


def test_bad_input_errors():
    ana = Analyzer()
    with pytest.raises(TypeError, match="simplify expects a PrimExpr"):
        ana.simplify("x + 1")
    with pytest.raises(TypeError, match="tir.Var"):
        ana.bind(x + 1, E.Range(0, 4))
    with pytest.raises(TypeError, match="IntervalSet or a Range"):
        eval_set(x, {x: (0, 4)})


# -- integer sets -------------------------------------------------------------------------

def _ends(s):
    return s.min_value, s.max_value


def assert_set(s, lo, hi):
    lo, hi = E.convert(lo) if lo is not NEG_INF else lo, E.convert(hi) if hi is not POS_INF else hi
    assert structural_equal(s.min_value, lo) and structural_equal(s.max_value, hi), (
        f"{s!r} != [{fmt(lo)}, {fmt(hi)}]"
    )


def test_int_set_region_inference():
    ana = Analyzer()
    i, j = E.Var("i"), E.Var("j")
    dom = {j: IntervalSet(0, 3)}
    assert_set(ana.int_set(i * 4 + j, dom), i * 4, i * 4 + 3)
    assert_set(ana.int_set((i * 4 + j) // 4, dom), i, i)
    assert_set(ana.int_set((i * 4 + j) % 4, dom), 0, 3)
    assert_set(ana.int_set(j * -2 + 1, dom), -5, 1)
    assert_set(ana.int_set(T.min(j, 2), dom), 0, 2)
    assert_set(ana.int_set(j - j, dom), 0, 0)
    assert_set(ana.int_set(x * j, dom), NEG_INF, POS_INF)
    n = E.SizeVar("n")
    assert_set(ana.int_set(j * n, dom), 0, n * 3)
    assert_set(ana.int_set(i, {i: E.Range(x, 8)}), x, x + 7)


def test_int_set_uses_bound_ranges_by_default():
    ana = Analyzer()
    i = E.Var("i")
    ana.bind(i, E.Range(0, 16))
    s = ana.int_set(i * 2 + 1)
    assert_set(s, 1, 31)
    r = s.to_range(ana)
    assert structural_equal(r.min, E.const(1)) and structural_equal(r.extent, E.const(31))


def test_interval_set_operations():
    a, b = IntervalSet(0, 4), IntervalSet(2, 10)
    assert_set(union([a, b]), 0, 10)
    assert_set(intersect([a, b]), 2, 4)
    assert intersect([IntervalSet(0, 1), IntervalSet(3, 4)]).is_empty()
    assert IntervalSet.everything().is_everything()
    assert IntervalSet.single_point(x).is_single_point()
    assert not IntervalSet(0, POS_INF).is_bounded()
    with pytest.raises(ValueError, match="unbounded"):
        IntervalSet(0, POS_INF).to_range()
    assert_set(union([IntervalSet(x, x + 1), IntervalSet(x + 2, x + 5)]), x, x + 5)
    vector = eval_set(E.Ramp(x * 4, 1, 4), {})
    assert_set(vector, x * 4, x * 4 + 3)


# -- linear forms ---------------------------------------------------------------------------

def test_detect_linear_equation():
    out = detect_linear_equation(x * 4 + y * z + 3 + z, [x, y])
    assert [fmt(e) for e in out] == ["4", "z", "(z + 3)"]
    out = detect_linear_equation((x + 1) * 8 - x, [x])
    assert [fmt(e) for e in out] == ["7", "8"]
    assert detect_linear_equation(x * y, [x, y]) == []
    assert detect_linear_equation(x // 2, [x]) == []
    assert detect_linear_equation(T.min(x, 3), [x]) == []
    out = detect_linear_equation(T.min(z, 3) + x, [x])
    assert [fmt(e) for e in out] == ["1", "min(z, 3)"]


# -- performance ----------------------------------------------------------------------------

def test_typical_index_expression_is_fast():
    ana = Analyzer()
    i, j, k = E.Var("i"), E.Var("j"), E.Var("k")
    ana.bind(i, E.Range(0, 64))
    ana.bind(j, E.Range(0, 16))
    ana.bind(k, E.Range(0, 8))
    exprs = [
        ((i * 16 + j) // 4) * 4 + (i * 16 + j) % 4,
        (i * 64 + j * 8 + k) // 8 % 8,
        ((i // 2) * 2 + i % 2) * 16 + j,
    ]
    start = time.perf_counter()
    rounds = 50
    for _ in range(rounds):
        ana._changed()  # defeat memoisation: measure the real work
        for e in exprs:
            ana.simplify(e)
    per_expr = (time.perf_counter() - start) / (rounds * len(exprs))
    assert per_expr < 5e-3, per_expr  # well under a millisecond on a normal machine


def test_shared_subexpressions_do_not_blow_up():
    e = x
    for q in range(40):
        e = E.Select(e < q, e + 1, e * 2)
    d = x
    for _ in range(40):
        d = T.max(d // 2, d % 3) + d
    start = time.perf_counter()
    ana = Analyzer()
    ana.simplify(e)
    ana.const_int_bound(e)
    ana.simplify(d)
    ana.int_set(e, {x: IntervalSet(0, 5)})
    assert time.perf_counter() - start < 10
