"""Compile and run generated C against numpy: dtypes, math, division, vectors, control flow."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from c_kernels import binary_map, prim_func, unary_map, var
from conftest import requires_cc

from tvm import tir
from tvm.ir import IRModule
from tvm.tir import ForKind

pytestmark = requires_cc

ml_dtypes = pytest.importorskip("ml_dtypes")


def build(*funcs):
    from tvm.target.c import build as c_build

    return c_build(IRModule({f.attrs["global_symbol"]: f for f in funcs}), "c")


# --------------------------------------------------------------------------- elementwise

_DTYPES = ["float32", "float64", "float16", "bfloat16", "int8", "int16", "int32", "int64",
           "uint8", "uint16", "uint32", "uint64"]


def _np(dtype):
    return np.dtype(ml_dtypes.bfloat16) if dtype == "bfloat16" else np.dtype(dtype)


@pytest.fixture(scope="module")
def elementwise_module():
    funcs = []
    for dt in _DTYPES:
        # x * 3 + x - 1: wraps for narrow ints exactly like numpy
        funcs.append(unary_map(f"ew_{dt}", dt, lambda x, i, dt=dt: x * 3 + x - tir.const(1, dt)))
    return build(*funcs)


@pytest.mark.parametrize("dtype", _DTYPES)
def test_elementwise_over_dtypes(elementwise_module, dtype):
    rng = np.random.default_rng(0)
    npd = _np(dtype)
    if dtype in ("float16", "bfloat16", "float32", "float64"):
        a = rng.uniform(-100, 100, 37).astype(npd)
    else:
        info = np.iinfo(npd)
        a = rng.integers(info.min, info.max, 37, dtype=npd, endpoint=True)
    b = np.zeros_like(a)
    elementwise_module[f"ew_{dtype}"](a, b)
    if dtype in ("float16", "bfloat16"):
        # every operation rounds back to the half type, as numpy does for float16
        x = a.astype("float32")
        t = (x * 3).astype(npd).astype("float32")
        t = (t + x).astype(npd).astype("float32")
        expected = (t - 1).astype(npd)
        np.testing.assert_array_equal(b.astype("float32"), expected.astype("float32"))
    else:
        with np.errstate(over="ignore"):
            expected = a * npd.type(3) + a - npd.type(1)
        np.testing.assert_array_equal(b, expected)


def test_scalar_arguments_and_bool_buffers():
    n = var("n")
    a, m = tir.decl_buffer((n,), "float32", "A"), tir.decl_buffer((n,), "bool", "M")
    b = tir.decl_buffer((n,), "float32", "B")
    pa, pm, pb = var("A", "handle"), var("M", "handle"), var("B", "handle")
    alpha, k = var("alpha", "float32"), var("k", "int64")
    i = var("i")
    val = tir.Select(m[i], a[i] * alpha, tir.Cast("float32", k))
    body = tir.For(i, 0, n, ForKind.SERIAL, tir.stmt_seq(
        tir.BufferStore(b, val, (i,)),
        tir.BufferStore(m, tir.Not(m[i]), (i,)),
    ))
    mod = build(prim_func("sel", [pa, pm, pb, alpha, k], body, {pa: a, pm: m, pb: b}))
    x = np.arange(6, dtype="float32")
    mask = np.array([1, 0, 1, 1, 0, 0], dtype=bool)
    out = np.zeros(6, "float32")
    mod["sel"](x, mask.copy(), out, 2.5, -3)
    np.testing.assert_array_equal(out, np.where(mask, x * 2.5, -3.0))
    again = mask.copy()
    mod["sel"](x, again, out, 1.0, 0)
    np.testing.assert_array_equal(again, ~mask)


# --------------------------------------------------------------------------- math

_MATH = {
    "exp": (tir.exp, np.exp), "log": (tir.log, np.log), "sqrt": (tir.sqrt, np.sqrt),
    "tanh": (tir.tanh, np.tanh), "erf": (tir.erf, np.vectorize(math.erf)),
    "sigmoid": (tir.sigmoid, lambda x: 1 / (1 + np.exp(-x))), "floor": (tir.floor, np.floor),
    "ceil": (tir.ceil, np.ceil), "round": (tir.round, np.round), "fabs": (tir.fabs, np.abs),
    "rsqrt": (tir.rsqrt, lambda x: 1 / np.sqrt(x)), "exp2": (tir.exp2, np.exp2),
    "log1p": (tir.log1p, np.log1p), "sin": (tir.sin, np.sin), "cos": (tir.cos, np.cos),
    "trunc": (tir.op.trunc, np.trunc), "atan": (tir.op.atan, np.arctan),
}


@pytest.fixture(scope="module")
def math_module():
    funcs = [unary_map(f"m_{name}_{dt}", dt, lambda x, i, f=f: f(x))
             for name, (f, _) in _MATH.items() for dt in ("float32", "float64", "float16")]
    n = var("n")
    funcs.append(binary_map("m_pow", "float32", tir.power))
    funcs.append(binary_map("m_atan2", "float64", tir.op.atan2))
    funcs.append(binary_map("m_max_min", "float32",
                            lambda x, y: tir.Max(x, y) - tir.Min(x, y)))
    funcs.append(unary_map("m_isnan", "float32",
                           lambda x, i: tir.Cast("float32", tir.isnan(x)), n=None))
    del n
    return build(*funcs)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("name", sorted(_MATH))
def test_math_intrinsics(math_module, name, dtype):
    ref = _MATH[name][1]
    x = np.linspace(0.05, 3.0, 41)
    if name == "round":
        x = np.array([0.5, 1.5, 2.5, -0.5, -2.5, 1.2, -1.7])
    elif name not in ("log", "sqrt", "rsqrt", "log1p"):
        x = np.concatenate([x, -x])
    a = x.astype(dtype)
    b = np.zeros_like(a)
    math_module[f"m_{name}_{dtype}"](a, b)
    expected = ref(a.astype("float64"))
    tol = {"float16": 2e-3, "float32": 2e-6, "float64": 1e-12}[dtype]
    np.testing.assert_allclose(b.astype("float64"), expected, rtol=tol, atol=tol)


_INVERSE_TRIG = {  # name -> (numpy reference, input range): libm asin/asinf ... atanh/atanhf
    "asin": (np.arcsin, (-1, 1)), "acos": (np.arccos, (-1, 1)), "atan": (np.arctan, (-9, 9)),
    "sinh": (np.sinh, (-4, 4)), "cosh": (np.cosh, (-4, 4)), "asinh": (np.arcsinh, (-9, 9)),
    "acosh": (np.arccosh, (1, 9)), "atanh": (np.arctanh, (-0.99, 0.99)),
}


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_inverse_and_hyperbolic_math(dtype):
    mod = build(*[unary_map(f"t_{name}_{dtype}", dtype, lambda x, i, f=getattr(tir.op, name): f(x))
                  for name in _INVERSE_TRIG])
    for name, (ref, (lo, hi)) in _INVERSE_TRIG.items():
        a = np.linspace(lo, hi, 33).astype(dtype)
        b = np.zeros_like(a)
        mod[f"t_{name}_{dtype}"](a, b)
        tol = {"float16": 2e-3, "float32": 2e-6, "float64": 1e-12}[dtype]
        np.testing.assert_allclose(b.astype("float64"), ref(a.astype("float64")), rtol=tol,
                                   atol=tol, err_msg=name)


def test_binary_math_and_predicates(math_module):
    x = np.linspace(0.5, 2.0, 9).astype("float32")
    y = np.linspace(-1.0, 1.5, 9).astype("float32")
    out = np.zeros_like(x)
    math_module["m_pow"](x, y, out)
    np.testing.assert_allclose(out, x ** y, rtol=1e-6)
    math_module["m_max_min"](x, y, out)
    np.testing.assert_allclose(out, np.abs(x - y), rtol=1e-6)
    p, q = np.array([1.0, -1.0, 0.0, -2.0]), np.array([1.0, 1.0, -1.0, -0.5])
    r = np.zeros(4)
    math_module["m_atan2"](p, q, r)
    np.testing.assert_allclose(r, np.arctan2(p, q))
    z = np.array([1.0, np.nan, np.inf, -np.nan], dtype="float32")
    flags = np.zeros_like(z)
    math_module["m_isnan"](z, flags)
    np.testing.assert_array_equal(flags, [0, 1, 0, 1])


# --------------------------------------------------------------------------- division

@pytest.fixture(scope="module")
def division_module():
    funcs = []
    for dt in ("int8", "int32", "int64", "float32"):
        funcs.append(binary_map(f"fdiv_{dt}", dt, tir.floordiv))
        funcs.append(binary_map(f"fmod_{dt}", dt, tir.floormod))
    funcs.append(binary_map("tdiv_int32", "int32", tir.truncdiv))
    funcs.append(binary_map("tmod_int32", "int32", tir.truncmod))
    funcs.append(unary_map("fdiv_const", "int32",
                           lambda x, i: tir.floordiv(x, 8) * 100 + tir.floormod(x, 8)))
    return build(*funcs)


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64", "float32"])
def test_floordiv_floormod_with_negatives(division_module, dtype):
    rng = np.random.default_rng(1)
    if dtype == "float32":
        a = rng.uniform(-50, 50, 64).astype(dtype)
        b = rng.choice([-7.5, -3.0, -1.0, 2.0, 4.25], 64).astype(dtype)
    else:
        a = rng.integers(-100, 100, 64).astype(dtype)
        b = rng.choice([-7, -3, -1, 1, 2, 5], 64).astype(dtype)
    out = np.zeros_like(a)
    division_module[f"fdiv_{dtype}"](a, b, out)
    np.testing.assert_allclose(out, np.floor_divide(a, b))
    division_module[f"fmod_{dtype}"](a, b, out)
    np.testing.assert_allclose(out, np.mod(a, b), rtol=1e-5, atol=1e-4)


def test_truncating_division_and_constant_divisors(division_module):
    a = np.array([-9, -8, -1, 0, 7, 9], "int32")
    b = np.array([4, -4, 3, 5, -2, 4], "int32")
    out = np.zeros_like(a)
    division_module["tdiv_int32"](a, b, out)
    np.testing.assert_array_equal(out, np.trunc(a / b).astype("int32"))
    division_module["tmod_int32"](a, b, out)
    np.testing.assert_array_equal(out, np.fmod(a, b))
    division_module["fdiv_const"](a, out)
    np.testing.assert_array_equal(out, (a // 8) * 100 + a % 8)


# --------------------------------------------------------------------------- vectors

def test_vector_ramps_broadcasts_and_shuffles():
    a, b = tir.decl_buffer((64,), "float32", "A"), tir.decl_buffer((64,), "float32", "B")
    pa, pb = var("A", "handle"), var("B", "handle")
    i = var("i")
    ramp = tir.Ramp(i * 8, 1, 8)
    val = tir.BufferLoad(a, (ramp,)) * tir.Broadcast(tir.const(2.0, "float32"), 8) \
        + tir.Broadcast(tir.Cast("float32", i), 8)
    vec = prim_func("vec", [pa, pb], tir.For(i, 0, 8, ForKind.SERIAL,
                                             tir.BufferStore(b, val, (ramp,))), {pa: a, pb: b})
    # a gather/scatter with stride 8 (a transpose of 8x8 blocks)
    j = var("j")
    col = tir.Ramp(j, 8, 8)
    tr = prim_func("transpose", [pa, pb], tir.For(j, 0, 8, ForKind.SERIAL, tir.BufferStore(
        b, tir.BufferLoad(a, (tir.Ramp(j * 8, 1, 8),)), (col,))), {pa: a, pb: b})
    c = tir.decl_buffer((16,), "int32", "C")
    pc = var("C", "handle")
    shift = prim_func("shift", [pc], tir.BufferStore(
        c, tir.BufferLoad(c, (tir.Ramp(0, 1, 8),)), (tir.Ramp(1, 1, 8),)), {pc: c})
    x = var("x", "int32x4")
    rev = tir.Shuffle("int32x8", (x, tir.BufferLoad(c, (tir.Ramp(4, 1, 4),))),
                      (3, 2, 1, 0, 4, 4, 7, 7))
    shuffle = prim_func("shuffle", [pc], tir.LetStmt(
        x, tir.BufferLoad(c, (tir.Ramp(0, 1, 4),)), tir.BufferStore(c, rev, (tir.Ramp(8, 1, 8),))),
        {pc: c})
    mod = build(vec, tr, shift, shuffle)
    src = mod.get_source()
    assert "for (int32_t l = 0; l < 8; ++l)" in src
    av = np.arange(64, dtype="float32")
    bv = np.zeros(64, "float32")
    mod["vec"](av, bv)
    np.testing.assert_array_equal(bv, av * 2 + np.arange(64) // 8)
    mod["transpose"](av, bv)
    np.testing.assert_array_equal(bv.reshape(8, 8), av.reshape(8, 8).T)
    cv = np.arange(16, dtype="int32")
    mod["shift"](cv)
    np.testing.assert_array_equal(cv, [0, 0, 1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12, 13, 14, 15])
    cv = np.arange(16, dtype="int32")
    mod["shuffle"](cv)
    np.testing.assert_array_equal(cv[8:], [3, 2, 1, 0, 4, 4, 7, 7])


# --------------------------------------------------------------------------- control flow

def test_let_if_then_else_while_and_allocations():
    n = var("n")
    d = tir.decl_buffer((n,), "int32", "D")
    pd = var("D", "handle")
    t, cnt = var("t", "handle"), var("cnt", "handle")
    tb, cb = tir.decl_buffer((n,), "int32", "T", data=t), tir.decl_buffer((1,), "int32", "cnt", data=cnt)
    j, x = var("j"), var("x")
    guarded = tir.if_then_else(j > 0, d[tir.Max(j - 1, 0)], tir.const(-100, "int32"))
    fill = tir.For(j, 0, n, ForKind.SERIAL, tir.BufferStore(
        tb, tir.Let(x, d[j] - 5, tir.Select(x < 0, 0 - x, x * 2)) + guarded, (j,)))
    count = tir.stmt_seq(tir.BufferStore(cb, 0, (0,)),
                         tir.While(cb[0] < n, tir.BufferStore(cb, cb[0] + 1, (0,))))
    back = tir.For(j, 0, n, ForKind.SERIAL, tir.IfThenElse(
        tb[j] > 10, tir.BufferStore(d, tb[j] + cb[0], (j,)), tir.BufferStore(d, tb[j], (j,))))
    body = tir.Allocate(t, "int32", (n,), tir.const(True), tir.Allocate(
        cnt, "int32", (1,), tir.const(True), tir.stmt_seq(fill, count, back)))
    mod = build(prim_func("misc", [pd], body, {pd: d}))
    src = mod.get_source()
    assert "tvm_alloc(" in src and "free(t);" in src and "int32_t cnt[1]" in src
    dv = np.arange(12, dtype="int32") * 3 - 7
    orig = dv.copy()
    mod["misc"](dv)
    x_ = orig - 5
    tv = np.where(x_ < 0, -x_, 2 * x_) + np.concatenate([[-100], orig[:-1]])
    np.testing.assert_array_equal(dv, np.where(tv > 10, tv + 12, tv))


# --------------------------------------------------------------------------- property


_leaf = st.one_of(st.just(("a",)), st.just(("b",)), st.tuples(st.just("c"), st.integers(-20, 20)))
_nonzero = st.integers(-7, 7).filter(lambda k: k != 0)


def _extend(sub):
    div_ops = st.sampled_from(["floordiv", "floormod", "truncdiv", "truncmod"])
    return st.one_of(
        st.tuples(st.sampled_from(["add", "sub", "min", "max"]), sub, sub),
        st.tuples(st.just("mulc"), sub, st.integers(-5, 5)),
        st.tuples(div_ops, sub, st.one_of(st.tuples(st.just("c"), _nonzero),
                                          st.tuples(st.just("odd"), sub))),
        st.tuples(st.just("select"), st.sampled_from(["lt", "eq", "ge"]), sub, sub, sub, sub),
        st.tuples(st.just("wrap8"), sub),
        st.tuples(st.just("let"), sub, sub),
    )


_exprs = st.recursive(_leaf, _extend, max_leaves=8)


def _to_tir(t, a, b):
    k = t[0]
    if k == "a":
        return a
    if k == "b":
        return b
    if k == "c":
        return tir.const(t[1], "int32")
    if k == "odd":
        return tir.op.bitwise_or(_to_tir(t[1], a, b), 1)
    if k in ("add", "sub", "min", "max"):
        x, y = _to_tir(t[1], a, b), _to_tir(t[2], a, b)
        return {"add": tir.Add, "sub": tir.Sub, "min": tir.Min, "max": tir.Max}[k](x, y)
    if k == "mulc":
        return _to_tir(t[1], a, b) * tir.const(t[2], "int32")
    if k in ("floordiv", "floormod", "truncdiv", "truncmod"):
        fn = {"floordiv": tir.floordiv, "floormod": tir.floormod, "truncdiv": tir.truncdiv,
              "truncmod": tir.truncmod}[k]
        return fn(_to_tir(t[1], a, b), _to_tir(t[2], a, b))
    if k == "select":
        cmp = {"lt": tir.LT, "eq": tir.EQ, "ge": tir.GE}[t[1]]
        args = [_to_tir(u, a, b) for u in t[2:]]
        return tir.Select(cmp(args[0], args[1]), args[2], args[3])
    if k == "wrap8":
        return tir.Cast("int32", tir.Cast("int8", _to_tir(t[1], a, b)))
    if k == "let":  # let x = t[1] in x * 2 - t[2]
        x = tir.Var("x", "int32")
        return tir.Let(x, _to_tir(t[1], a, b), x * 2 - _to_tir(t[2], a, b))
    raise AssertionError(k)


def _ref(t, a, b):
    """The same tree evaluated with numpy on int64 (floor/trunc semantics spelled out)."""
    k = t[0]
    if k == "a":
        return a
    if k == "b":
        return b
    if k == "c":
        return np.full_like(a, t[1])
    if k == "odd":
        return _ref(t[1], a, b) | 1
    if k in ("add", "sub", "min", "max"):
        x, y = _ref(t[1], a, b), _ref(t[2], a, b)
        return {"add": np.add, "sub": np.subtract, "min": np.minimum, "max": np.maximum}[k](x, y)
    if k == "mulc":
        return _ref(t[1], a, b) * t[2]
    if k in ("floordiv", "floormod", "truncdiv", "truncmod"):
        x, y = _ref(t[1], a, b), _ref(t[2], a, b)
        if k == "floordiv":
            return x // y
        if k == "floormod":
            return x % y
        q = np.abs(x) // np.abs(y) * np.sign(x) * np.sign(y)
        return q if k == "truncdiv" else x - q * y
    if k == "select":
        cmp = {"lt": np.less, "eq": np.equal, "ge": np.greater_equal}[t[1]]
        x, y, p, q = (_ref(u, a, b) for u in t[2:])
        return np.where(cmp(x, y), p, q)
    if k == "wrap8":
        return (_ref(t[1], a, b) + 128) % 256 - 128
    if k == "let":
        return _ref(t[1], a, b) * 2 - _ref(t[2], a, b)
    raise AssertionError(k)


@requires_cc
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_exprs, min_size=1, max_size=4))
def test_random_integer_expressions_match_numpy(trees):
    rng = np.random.default_rng(len(trees))
    a = rng.integers(-30, 30, 50).astype("int32")
    b = rng.integers(-30, 30, 50).astype("int32")
    refs = [_ref(tree, a.astype("int64"), b.astype("int64")) for tree in trees]
    assume(all(np.abs(r).max() < 2**31 for r in refs))  # no int32 overflow (C would be UB)
    mod = build(*[binary_map(f"e{k}", "int32", lambda x, y, t=tree: _to_tir(t, x, y))
                  for k, tree in enumerate(trees)])
    for k, (tree, expected) in enumerate(zip(trees, refs)):
        out = np.zeros_like(a)
        mod[f"e{k}"](a, b, out)
        np.testing.assert_array_equal(out, expected.astype("int32"), err_msg=str(tree))
