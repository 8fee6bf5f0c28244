"""Hypothesis properties: simplification keeps values, proofs and bounds are sound."""

from arith_util import evaluate, fmt
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tvm.arith import Analyzer, IntervalSet
from tvm.ffi import structural_equal
from tvm.tir import expr as E
from tvm.tir import op as T

x, y, z = E.Var("x"), E.Var("y"), E.Var("z")
VARS = (x, y, z)
SETTINGS = settings(max_examples=100, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

_CMP = {"<": E.LT, "<=": E.LE, "==": E.EQ, "!=": E.NE, ">": E.GT, ">=": E.GE}
_BIN = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
        "min": T.min, "max": T.max}


def _leaf():
    return st.one_of(st.sampled_from(VARS), st.integers(-20, 20).map(lambda v: E.const(v)))


def _extend(children):
    binary = st.builds(lambda op, a, b: _BIN[op](a, b), st.sampled_from(sorted(_BIN)),
                       children, children)
    divisor = st.one_of(
        st.sampled_from([1, 2, 3, 4, 8, 16, -2, -3]).map(lambda v: E.const(v)), children
    )
    division = st.builds(
        lambda op, a, b: {"//": E.FloorDiv, "%": E.FloorMod, "div": E.Div, "mod": E.Mod}[op](a, b),
        st.sampled_from(["//", "%", "//", "%", "div", "mod"]), children, divisor)
    select = st.builds(lambda op, c1, c2, a, b: E.Select(_CMP[op](c1, c2), a, b),
                       st.sampled_from(sorted(_CMP)), children, children, children, children)
    return st.one_of(binary, binary, division, select)


exprs = st.recursive(_leaf(), _extend, max_leaves=10)


def _index_extend(children):
    scaled = st.builds(lambda a, k: a * k, children, st.sampled_from([1, 2, 3, 4, 8, 16, -1]))
    summed = st.builds(lambda a, b: a + b, children, children)
    div = st.builds(lambda a, k: E.FloorDiv(a, E.const(k)), children,
                    st.sampled_from([2, 3, 4, 8, 16]))
    mod = st.builds(lambda a, k: E.FloorMod(a, E.const(k)), children,
                    st.sampled_from([2, 3, 4, 8, 16]))
    return st.one_of(scaled, summed, summed, div, mod)


# Index-like sums of scaled variables with divisions by positive constants.
index_exprs = st.recursive(
    st.one_of(st.sampled_from(VARS), st.integers(-4, 20).map(lambda v: E.const(v))),
    _index_extend, max_leaves=8,
)
conds = st.recursive(
    st.builds(lambda op, a, b: _CMP[op](a, b), st.sampled_from(sorted(_CMP)), exprs, exprs),
    lambda inner: st.one_of(st.builds(E.And, inner, inner), st.builds(E.Or, inner, inner),
                            st.builds(E.Not, inner)),
    max_leaves=3,
)
ranges = st.tuples(st.integers(-6, 6), st.integers(1, 12))
samples = st.lists(st.tuples(*(st.integers(-40, 40) for _ in VARS)), min_size=6, max_size=12)


def _envs(points, bounds=None):
    for point in points:
        env = {}
        for var, v in zip(VARS, point):
            if bounds and var in bounds:
                lo, ext = bounds[var]
                v = lo + v % ext
            env[var] = v
        yield env


def _value(e, env):
    try:
        return evaluate(e, env)
    except ZeroDivisionError:
        return None


def _bounded_analyzer(rs):
    ana, bounds = Analyzer(), {}
    for var, (lo, ext) in zip(VARS[:2], rs):
        ana.bind(var, E.Range(lo, ext))
        bounds[var] = (lo, ext)
    return ana, bounds


def _assert_same_values(e, out, envs):
    for env in envs:
        want = _value(e, env)
        if want is None:
            continue  # undefined in the original program
        got = _value(out, env)
        assert got == want, f"{fmt(e)} -> {fmt(out)} at {env}: {want} != {got}"


@SETTINGS
@given(e=st.one_of(exprs, index_exprs), points=samples)
def test_simplify_keeps_values(e, points):
    out = Analyzer().simplify(e)
    _assert_same_values(e, out, _envs(points))


@SETTINGS
@given(e=exprs, points=samples)
def test_rewrite_simplify_keeps_values(e, points):
    out = Analyzer().rewrite_simplify(e)
    _assert_same_values(e, out, _envs(points))


@SETTINGS
@given(e=st.one_of(exprs, index_exprs), rs=st.tuples(ranges, ranges), points=samples)
def test_simplify_under_bounds_keeps_values(e, rs, points):
    ana, bounds = _bounded_analyzer(rs)
    out = ana.simplify(e)
    _assert_same_values(e, out, _envs(points, bounds))


@SETTINGS
@given(c=conds, rs=st.tuples(ranges, ranges), points=samples)
def test_can_prove_is_sound(c, rs, points):
    ana, bounds = _bounded_analyzer(rs)
    proved = ana.can_prove(c)
    simplified = ana.simplify(c)
    for env in _envs(points, bounds):
        want = _value(c, env)
        if want is None:
            continue
        if proved:
            assert want, f"proved {fmt(c)} but it fails at {env}"
        got = _value(simplified, env)
        assert got is None or bool(got) == bool(want), f"{fmt(c)} -> {fmt(simplified)} at {env}"


@SETTINGS
@given(c=conds, scope=conds, points=samples)
def test_constraint_scope_is_sound(c, scope, points):
    ana = Analyzer()
    with ana.constraint_scope(scope):
        proved = ana.can_prove(c)
        simplified = ana.simplify(c)
    for env in _envs(points):
        holds = _value(scope, env)
        want = _value(c, env)
        if not holds or want is None:
            continue
        assert not proved or want, f"under {fmt(scope)} proved {fmt(c)}; fails at {env}"
        got = _value(simplified, env)
        assert got is None or bool(got) == bool(want), f"{fmt(c)} -> {fmt(simplified)} at {env}"


@SETTINGS
@given(e=exprs, rs=st.tuples(ranges, ranges), points=samples)
def test_const_int_bound_contains_values(e, rs, points):
    ana, bounds = _bounded_analyzer(rs)
    b = ana.const_int_bound(e)
    for env in _envs(points, bounds):
        v = _value(e, env)
        if v is not None and abs(v) < 2**31:
            assert b.min_value <= v <= b.max_value, f"{fmt(e)}: {v} not in {b}"


@SETTINGS
@given(e=exprs, r=ranges, points=samples)
def test_int_set_contains_values(e, r, points):
    lo, ext = r
    s = Analyzer().int_set(e, {x: IntervalSet(lo, lo + ext - 1)})
    for env in _envs(points, {x: r}):
        v = _value(e, env)
        if v is None:
            continue
        if s.has_lower_bound():
            low = _value(s.min_value, env)
            assert low is None or low <= v, f"{fmt(e)}: {v} below {s!r} at {env}"
        if s.has_upper_bound():
            high = _value(s.max_value, env)
            assert high is None or v <= high, f"{fmt(e)}: {v} above {s!r} at {env}"


@SETTINGS
@given(a=exprs, b=exprs)
def test_commuted_sums_get_identical_output(a, b):
    ana = Analyzer()
    left, right = ana.simplify(a + b), ana.simplify(b + a)
    assert structural_equal(left, right), f"{fmt(left)} vs {fmt(right)}"


def test_div_mod_rules_exhaustively_on_small_ranges():
    """Every (a*x + y + c) // d and % d, with y in [0, e] and x in [0, 5], against brute force:
    catches off-by-one errors at the edges of the bound-based rules."""
    for e in range(1, 9):
        ana = Analyzer()
        ana.bind(x, E.Range(0, 6))
        ana.bind(y, E.Range(0, e + 1))
        for a in (1, 2, 3, 4, 8):
            for d in (2, 3, 4, 8):
                for c in (-3, 0, 1, 3):
                    for op in (E.FloorDiv, E.FloorMod):
                        expr = op(x * a + y + c, E.const(d))
                        out = ana.simplify(expr)
                        for xv in range(6):
                            for yv in range(e + 1):
                                env = {x: xv, y: yv}
                                assert evaluate(out, env) == evaluate(expr, env), (
                                    f"{fmt(expr)} -> {fmt(out)} at x={xv}, y={yv} (y <= {e})"
                                )


def test_div_mod_recombination_exhaustively():
    """Sums mixing q // d, q % d and q with assorted coefficients, against brute force."""
    ana = Analyzer()
    ana.bind(x, E.Range(-9, 19))
    for q in (x, x + 3, x * 2 + 1):
        for d in (2, 4, 3):
            div, mod = E.FloorDiv(q, E.const(d)), E.FloorMod(q, E.const(d))
            for k1 in (d, 2 * d, 1, -d, 0):
                for k2 in (1, 2, -1, 0):
                    for k3 in (0, 1, -1, 2):
                        expr = div * k1 + mod * k2 + q * k3
                        out = ana.simplify(expr)
                        for xv in range(-9, 10):
                            assert evaluate(out, {x: xv}) == evaluate(expr, {x: xv}), (
                                f"{fmt(expr)} -> {fmt(out)} at x={xv}"
                            )
