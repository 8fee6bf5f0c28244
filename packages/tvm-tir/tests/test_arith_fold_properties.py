"""Hypothesis properties of the one folder and simplifier on what the Simplify pass hands them
besides scalar indices: vector (Ramp/Broadcast) integer expressions, lane by lane, and float
constants, bit for bit against numpy computing in the dtype as the generated code does."""

import math

import ml_dtypes
import numpy as np
from arith_util import evaluate, fmt
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tvm.arith import Analyzer
from tvm.arith import const_fold as F
from tvm.tir import expr as E

x, y = E.Var("x"), E.Var("y")
LANES = 4
SETTINGS = settings(max_examples=100, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# -- vectors ---------------------------------------------------------------------------------

_scalars = st.recursive(
    st.one_of(st.sampled_from([x, y]), st.integers(-6, 12).map(E.const)),
    lambda kids: st.one_of(
        st.builds(lambda a, b: a + b, kids, kids),
        st.builds(lambda a, k: a * k, kids, st.integers(-3, 4)),
        st.builds(lambda a, k: E.FloorDiv(a, E.const(k)), kids, st.sampled_from([2, 3, 4, 8])),
    ),
    max_leaves=4,
)
_vec_leaves = st.one_of(
    st.builds(lambda b, s: E.Ramp(b, E.const(s), LANES), _scalars, st.integers(-3, 4)),
    st.builds(lambda b, s: E.Ramp(b, s, LANES), _scalars, _scalars),
    st.builds(lambda v: E.Broadcast(v, LANES), _scalars),
)
_VEC_OPS = {
    "+": (E.Add, F.add), "-": (E.Sub, F.sub), "*": (E.Mul, F.mul), "min": (E.Min, F.min_),
    "max": (E.Max, F.max_),
}


def _vec_tree(leaves):
    def extend(kids):
        binary = st.tuples(st.sampled_from(sorted(_VEC_OPS)), kids, kids)
        divmod_ = st.tuples(st.sampled_from(["//", "%"]), kids, st.sampled_from([1, 2, 4, 8, 3]))
        select = st.tuples(st.just("sel"), kids, kids, kids, kids)
        return st.one_of(binary, binary, divmod_, select)

    return st.recursive(leaves, extend, max_leaves=6)


def _build(tree, fold: bool):
    """The tree as plain nodes (``fold=False``) or through the const_fold builders."""
    if isinstance(tree, E.PrimExpr):
        return tree
    op = tree[0]
    if op == "sel":
        c = E.LT(_build(tree[1], fold), _build(tree[2], fold))
        if fold:
            c = F.compare(E.LT, c.a, c.b)
        t, f = _build(tree[3], fold), _build(tree[4], fold)
        return F.select(c, t, f) if fold else E.Select(c, t, f)
    a = _build(tree[1], fold)
    if op in ("//", "%"):
        b = E.Broadcast(E.const(tree[2]), LANES)
        cls, builder = (E.FloorDiv, F.floordiv) if op == "//" else (E.FloorMod, F.floormod)
    else:
        b = _build(tree[2], fold)
        cls, builder = _VEC_OPS[op]
    return builder(a, b) if fold else cls(a, b)


_points = st.lists(st.tuples(st.integers(-30, 30), st.integers(-30, 30)), min_size=4,
                   max_size=8)


def _assert_same_lanes(e, out, points, bounds=None):
    assert out.dtype == e.dtype, f"{fmt(e)} -> {fmt(out)}: dtype {out.dtype}"
    for px, py in points:
        if bounds:
            (lx, ex), (ly, ey) = bounds
            px, py = lx + px % ex, ly + py % ey
        env = {x: px, y: py}
        for lane in range(LANES):
            want = evaluate(e, env, lane)
            got = evaluate(out, env, lane)
            assert got == want, f"{fmt(e)} -> {fmt(out)} at {env} lane {lane}: {want} != {got}"


@SETTINGS
@given(tree=_vec_tree(_vec_leaves), points=_points)
def test_vector_builders_keep_lane_values(tree, points):
    _assert_same_lanes(_build(tree, fold=False), _build(tree, fold=True), points)


@SETTINGS
@given(tree=_vec_tree(_vec_leaves), points=_points)
def test_simplify_keeps_lane_values(tree, points):
    e = _build(tree, fold=False)
    _assert_same_lanes(e, Analyzer().simplify(e), points)


@SETTINGS
@given(tree=_vec_tree(_vec_leaves), lo=st.integers(-4, 4), ext=st.integers(1, 16),
       points=_points)
def test_simplify_under_loop_ranges_keeps_lane_values(tree, lo, ext, points):
    e = _build(tree, fold=False)
    ana = Analyzer()
    ana.bind(x, E.Range(lo, ext))
    ana.bind(y, E.Range(0, 8))
    _assert_same_lanes(e, ana.simplify(e), points, ((lo, ext), (0, 8)))


def test_vector_forms_are_kept():
    r = E.Ramp(x * 4, E.const(1), LANES)
    assert isinstance(F.add(r, E.Broadcast(y, LANES)), E.Ramp)
    assert isinstance(F.mul(E.Broadcast(E.const(3), LANES), r), E.Ramp)
    assert isinstance(F.sub(r, r), E.Broadcast)  # both strides cancel: a broadcast of 0
    assert isinstance(F.add(E.Broadcast(x, LANES), E.Broadcast(y, LANES)), E.Broadcast)
    assert isinstance(F.cast("int64x4", E.Broadcast(x, LANES)), E.Broadcast)
    out = Analyzer().simplify(E.Ramp(x, E.const(0), LANES))
    assert isinstance(out, E.Broadcast)


# -- floats ----------------------------------------------------------------------------------

_NP = {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16, "float32": np.float32,
       "float64": np.float64}
_FLOAT_OPS = ["+", "-", "*", "/", "min", "max", "//", "%"]
_CLS = {"+": E.Add, "-": E.Sub, "*": E.Mul, "/": E.Div, "min": E.Min, "max": E.Max,
        "//": E.FloorDiv, "%": E.FloorMod}


def _ref(op, a, b, dtype):
    """``op`` on two values of ``dtype`` as the generated code computes it; None = unfolded."""
    t = _NP[dtype]
    compute = np.float64 if dtype == "float64" else np.float32  # 16-bit types via float32
    with np.errstate(all="ignore"):
        fa, fb = compute(t(a)), compute(t(b))
        if op in ("min", "max"):
            if math.isnan(fa) or math.isnan(fb):
                return None
            r = min(fa, fb) if op == "min" else max(fa, fb)
        elif op == "/":
            if fb == 0:
                return None
            r = fa / fb
        elif op in ("//", "%"):
            if fb == 0 or dtype in ("float16", "bfloat16") or not (
                math.isfinite(fa) and math.isfinite(fb)
            ):
                return None
            if not np.isfinite(fa / fb):
                return None  # an overflowing quotient is left to the program
            q = compute(np.floor(fa / fb))
            r = q if op == "//" else fa - q * fb
        else:
            r = {"+": fa + fb, "-": fa - fb, "*": fa * fb}[op]
        return float(t(r))


_floats = st.one_of(
    st.floats(-1e4, 1e4, allow_nan=False),
    st.sampled_from([0.0, -0.0, 0.1, 1 / 3, 1e-8, 65504.0, 3e38, float("inf"), float("nan")]),
)


def _same_float(a, b):
    return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) ==
                                                 math.copysign(1, b))


@settings(max_examples=300, deadline=None)
@given(op=st.sampled_from(_FLOAT_OPS), a=_floats, b=_floats, dtype=st.sampled_from(sorted(_NP)))
def test_float_folding_rounds_as_the_dtype(op, a, b, dtype):
    # Immediates may hold more digits than their dtype; the program sees the rounded values.
    node = _CLS[op](E.FloatImm(dtype, a), E.FloatImm(dtype, b))
    want = _ref(op, a, b, dtype)
    for out in (F.fold(node), Analyzer().simplify(node)):
        if want is None:
            both_nan = isinstance(out, E.FloatImm) and math.isnan(out.value) and a is b
            assert isinstance(out, _CLS[op]) or both_nan, f"{op}({a}, {b}) {dtype} -> {out}"
            continue
        assert isinstance(out, E.FloatImm) and out.dtype == dtype
        assert _same_float(out.value, want), f"{op}({a}, {b}) {dtype}: {out.value} != {want}"


@settings(max_examples=200, deadline=None)
@given(v=st.one_of(st.integers(-(1 << 63), (1 << 64) - 1), st.integers(-70000, 70000)),
       dtype=st.sampled_from(["float16", "float32", "float64"]))
def test_int_to_float_casts_round_once(v, dtype):
    src = "uint64" if v >= 1 << 63 else "int64"
    out = F.cast(dtype, E.IntImm(src, v))
    with np.errstate(all="ignore"):
        via = np.float64 if dtype == "float64" else np.float32
        want = float(_NP[dtype](np.array(v, dtype=src).astype(via)))
    assert isinstance(out, E.FloatImm) and _same_float(out.value, want), (v, dtype, out)


def test_float_floordiv_follows_the_rounded_quotient():
    # 0.7f / 0.1f rounds to 7.0f in float32 (the exact quotient is just below 7).
    a, b = E.FloatImm("float32", 0.7), E.FloatImm("float32", 0.1)
    assert F.floordiv(a, b).value == 7.0
    r = F.floormod(a, b).value
    assert r == float(np.float32(np.float32(0.7) - np.float32(7.0) * np.float32(0.1)))
    assert isinstance(F.floordiv(E.FloatImm("float16", 1.0), E.FloatImm("float16", 3.0)),
                      E.FloorDiv)
