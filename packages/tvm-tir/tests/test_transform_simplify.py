"""Simplify: expressions folded, provable ifs and asserts removed, unit loops substituted.

The pass simplifies with tvm.arith alone; the property tests check values, not forms.
"""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from lowering_helpers import find_all, func_of, mod_of, run_func
from tvm.arith import Analyzer
from tvm.ffi import assert_structural_equal
from tvm.tir import (
    GE, LT, AssertStmt, Broadcast, BufferStore, FloatImm, FloorDiv, FloorMod, For, ForKind,
    IfThenElse, IntImm, IterVar, IterVarType, LetStmt, Max, Min, Ramp, Range, Select, SeqStmt,
    Var, const, convert, decl_buffer,
)
from tvm.tir.transform import Simplify, simplify


def _one(store_body_fn, extent=16):
    """A function ``for i in range(extent): <store_body_fn(i, A, B)>``."""
    a, b = Var("a", "handle"), Var("b", "handle")
    A = decl_buffer((64,), "int32", "A")
    B = decl_buffer((64,), "int32", "B")
    i = Var("i")
    body = For(i, 0, extent, body=store_body_fn(i, A, B))
    return func_of([a, b], body, {a: A, b: B}), (i, A, B)


def test_constants_and_identities_fold():
    func, (i, A, B) = _one(lambda i, A, B: BufferStore(B, A[i * 1 + 0] + (const(2) + 3), (i + 0,)))
    out = simplify(func)
    assert_structural_equal(out.body.body, BufferStore(B, A[i] + 5, (i,)))


def test_if_with_provable_condition_is_removed():
    def body(i, A, B):
        return IfThenElse(LT(i, 16), BufferStore(B, A[i], (i,)))

    func, (i, A, B) = _one(body)
    out = simplify(func)
    assert_structural_equal(out.body.body, BufferStore(B, A[i], (i,)))


def test_if_with_provably_false_condition_keeps_else():
    def body(i, A, B):
        return IfThenElse(GE(i, 16), BufferStore(B, A[i], (i,)), BufferStore(B, convert(0), (i,)))

    func, (i, A, B) = _one(body)
    out = simplify(func)
    assert_structural_equal(out.body.body, BufferStore(B, convert(0), (i,)))


def test_undecidable_if_is_kept():
    def body(i, A, B):
        return IfThenElse(LT(i, 8), BufferStore(B, A[i], (i,)))

    func, _ = _one(body)
    out = simplify(func)
    assert isinstance(out.body.body, IfThenElse)


def test_unit_extent_loop_is_substituted():
    a = Var("a", "handle")
    A = decl_buffer((64,), "int32", "A")
    i, j = Var("i"), Var("j")
    body = For(i, 0, 4, body=For(j, 0, 1, body=BufferStore(A, convert(1), (i * 4 + j,))))
    out = simplify(func_of([a], body, {a: A}))
    assert_structural_equal(out.body, For(i, 0, 4, body=BufferStore(A, convert(1), (i * 4,))))


def test_thread_binding_loop_of_extent_one_is_kept():
    a = Var("a", "handle")
    A = decl_buffer((1,), "int32", "A")
    t = Var("t")
    binding = IterVar(Range(0, 1), Var("threadIdx.x"), IterVarType.THREAD_INDEX, "threadIdx.x")
    loop = For(t, 0, 1, ForKind.THREAD_BINDING, BufferStore(A, convert(1), (t,)), binding)
    out = simplify(func_of([a], loop, {a: A}))
    assert isinstance(out.body, For) and out.body.kind == ForKind.THREAD_BINDING


def test_let_of_constant_is_inlined():
    a = Var("a", "handle")
    A = decl_buffer((8,), "int32", "A")
    x = Var("x")
    body = LetStmt(x, convert(3), BufferStore(A, x * 2, (x,)))
    out = simplify(func_of([a], body, {a: A}))
    assert_structural_equal(out.body, BufferStore(A, convert(6), (3,)))


def test_floordiv_and_floormod_use_loop_ranges():
    func, (i, A, B) = _one(
        lambda i, A, B: BufferStore(B, A[FloorMod(i, 16)] + FloorDiv(i, 16), (i,))
    )
    out = simplify(func)
    assert_structural_equal(out.body.body, BufferStore(B, A[i], (i,)))


def test_symbolic_loop_range_holds_only_inside_the_loop():
    """``for k in range(g)`` proves ``g > 0`` in its body, not after it (g may be <= 0)."""
    a = Var("a", "handle")
    A = decl_buffer((2,), "int32", "A")
    g, k = Var("g"), Var("k")
    inside = BufferStore(A, Select(GE(g, 1), convert(1), convert(2)), (0,))
    after = BufferStore(A, Select(GE(g, 1), convert(3), convert(4)), (1,))
    out = simplify(func_of([a, g], SeqStmt([For(k, 0, g, body=inside), after]), {a: A}))
    loop, tail = out.body.seq
    assert_structural_equal(loop.body, BufferStore(A, convert(1), (0,)))
    assert isinstance(tail.value, Select)


def test_provable_assert_is_dropped_and_unprovable_kept():
    a = Var("a", "handle")
    A = decl_buffer((8,), "int32", "A")
    n = Var("n")
    store = BufferStore(A, convert(1), (0,))
    kept = AssertStmt(LT(n, 4), "n too large", store)
    out = simplify(func_of([a, n], AssertStmt(LT(convert(1), 2), "never", kept), {a: A}))
    assert isinstance(out.body, AssertStmt) and out.body.message == "n too large"


def test_float_constants_fold_in_their_precision():
    e = Analyzer().simplify(FloatImm("float32", 0.1) + FloatImm("float32", 0.2))
    assert isinstance(e, FloatImm)
    assert e.value == float(np.float32(np.float32(0.1) + np.float32(0.2)))


def test_vector_expressions_are_simplified_too():
    """Ramp/Broadcast arithmetic folds in the pass: ramp + broadcast stays a ramp, a ramp of
    stride 0 is a broadcast, and the scalar parts are simplified under the loop ranges."""
    func, (i, A, B) = _one(lambda i, A, B: BufferStore(
        B, Ramp(FloorMod(i, 16), convert(0), 4) + Broadcast(convert(1), 4),
        (Ramp(i * 4, convert(1), 4) + Broadcast(FloorDiv(i, 16), 4),)))
    out = simplify(func)
    assert_structural_equal(
        out.body.body, BufferStore(B, Broadcast(i + 1, 4), (Ramp(i * 4, convert(1), 4),)))


def test_min_max_select_with_known_ranges_fold():
    func, (i, A, B) = _one(
        lambda i, A, B: BufferStore(B, Min(i, 100) + Max(i, -1) + Select(LT(i, 20), 1, 2), (i,))
    )
    out = simplify(func)
    assert_structural_equal(out.body.body, BufferStore(B, i * 2 + 1, (i,)))


def test_pass_is_idempotent():
    func, (i, A, B) = _one(lambda i, A, B: BufferStore(B, A[i + 0], (i,)))
    out = Simplify()(mod_of(func))["main"]
    assert_structural_equal(out.body.body, BufferStore(B, A[i], (i,)))
    assert simplify(out) is out


# --------------------------------------------------------------------------- property

_VARS = ("i", "j")


def _exprs():
    leaves = st.one_of(st.sampled_from(_VARS), st.integers(-5, 9))

    def extend(children):
        binary = st.tuples(st.sampled_from(["+", "-", "*", "min", "max"]), children, children)
        divmod_ = st.tuples(st.sampled_from(["//", "%"]), children, st.integers(1, 9))
        select = st.tuples(st.just("sel"), children, children, children)
        return st.one_of(binary, divmod_, select)

    return st.recursive(leaves, extend, max_leaves=8)


def _build(tree, env):
    if isinstance(tree, str):
        return env[tree]
    if isinstance(tree, int):
        return convert(tree)
    op = tree[0]
    if op == "sel":
        return Select(LT(_build(tree[1], env), _build(tree[2], env)), _build(tree[2], env),
                      _build(tree[3], env))
    a = _build(tree[1], env)
    b = _build(tree[2], env) if op not in ("//", "%") else IntImm("int32", tree[2])
    return {
        "+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b,
        "min": lambda: Min(a, b), "max": lambda: Max(a, b),
        "//": lambda: FloorDiv(a, b), "%": lambda: FloorMod(a, b),
    }[op]()


@settings(max_examples=40, deadline=None)
@given(_exprs())
def test_simplify_keeps_values(tree):
    a = Var("a", "handle")
    A = decl_buffer((8, 8), "int32", "A")
    i, j = Var("i"), Var("j")
    value = _build(tree, {"i": i, "j": j})
    body = For(i, 0, 8, body=For(j, 0, 8, body=BufferStore(A, value, (i, j))))
    func = func_of([a], body, {a: A})
    out = simplify(func)
    want = run_func(func, np.zeros((8, 8), np.int32))[0]
    got = run_func(out, np.zeros((8, 8), np.int32))[0]
    np.testing.assert_array_equal(got, want)
    assert len(find_all(out, BufferStore)) == 1


def test_let_of_a_load_is_not_moved_past_a_store():
    a = Var("a", "handle")
    A = decl_buffer((4,), "int32", "A")
    x = Var("x")
    body = LetStmt(x, A[0] + 1, SeqStmt((BufferStore(A, convert(5), (0,)), BufferStore(A, x, (1,)))))
    func = func_of([a], body, {a: A})
    out = simplify(func)
    got = run_func(out, np.array([10, 0, 0, 0], np.int32))[0]
    np.testing.assert_array_equal(got, [5, 11, 0, 0])
    assert isinstance(out.body, LetStmt)


# --------------------------------------------------------------------------- vector property


def _vec_exprs():
    """Vector (4-lane) int expressions over ramps of the loop variables and broadcasts."""
    scalars = st.recursive(
        st.one_of(st.sampled_from(_VARS), st.integers(-5, 9)),
        lambda kids: st.tuples(st.sampled_from(["+", "*"]), kids, st.integers(-3, 4)),
        max_leaves=3,
    )
    leaves = st.one_of(st.tuples(st.just("ramp"), scalars, st.integers(-2, 3)),
                       st.tuples(st.just("bcast"), scalars))

    def extend(children):
        binary = st.tuples(st.sampled_from(["+", "-", "*", "min", "max"]), children, children)
        divmod_ = st.tuples(st.sampled_from(["//", "%"]), children, st.integers(1, 9))
        select = st.tuples(st.just("sel"), children, children, children)
        return st.one_of(binary, divmod_, select)

    return st.recursive(leaves, extend, max_leaves=6)


def _build_vec(tree, env):
    op = tree[0]
    if op in ("ramp", "bcast"):
        base = tree[1]
        if isinstance(base, tuple):
            base = _build(base[1], env) * base[2] if base[0] == "*" else (
                _build(base[1], env) + base[2])
        else:
            base = _build(base, env)
        return Ramp(base, convert(tree[2]), 4) if op == "ramp" else Broadcast(base, 4)
    if op == "sel":
        a, b = _build_vec(tree[1], env), _build_vec(tree[2], env)
        return Select(LT(a, b), b, _build_vec(tree[3], env))
    a = _build_vec(tree[1], env)
    if op in ("//", "%"):
        b = Broadcast(IntImm("int32", tree[2]), 4)
        return FloorDiv(a, b) if op == "//" else FloorMod(a, b)
    b = _build_vec(tree[2], env)
    return {"+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b,
            "min": lambda: Min(a, b), "max": lambda: Max(a, b)}[op]()


@settings(max_examples=40, deadline=None)
@given(_vec_exprs())
def test_simplify_keeps_vector_values(tree):
    """Vector stores (as VectorizeLoop leaves them) keep every lane's value."""
    a = Var("a", "handle")
    A = decl_buffer((8, 32), "int32", "A")
    i, j = Var("i"), Var("j")
    value = _build_vec(tree, {"i": i, "j": j})
    store = BufferStore(A, value, (i, Ramp(j * 4, convert(1), 4)))
    func = func_of([a], For(i, 0, 8, body=For(j, 0, 8, body=store)), {a: A})
    out = simplify(func)
    want = run_func(func, np.zeros((8, 32), np.int32))[0]
    got = run_func(out, np.zeros((8, 32), np.int32))[0]
    np.testing.assert_array_equal(got, want)
