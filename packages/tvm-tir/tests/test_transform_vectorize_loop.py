"""VectorizeLoop: vectorized loops become ramp/broadcast code, or serial loops when they cannot."""

import numpy as np
import pytest
from lowering_helpers import find_all, func_of, mod_of, run_func
from tvm.ffi import assert_structural_equal
from tvm.tir import (
    GT, LT, Allocate, Broadcast, BufferLoad, BufferStore, Cast, DeclBuffer, Evaluate, FloatImm, For,
    ForKind, IfThenElse, LetStmt, Ramp, Select, SeqStmt, Var, call_extern, convert,
    decl_buffer, exp,
)
from tvm.tir.analysis import verify_well_formed
from tvm.tir.transform import VectorizeLoop, vectorize_loop


def _vec_func(body_fn, extent=8, dtype="float32", lo=0):
    a, b = Var("a", "handle"), Var("b", "handle")
    A = decl_buffer((16,), dtype, "A")
    B = decl_buffer((16,), dtype, "B")
    i = Var("i")
    loop = For(i, lo, extent, ForKind.VECTORIZED, body_fn(i, A, B))
    return func_of([a, b], loop, {a: A, b: B}), (i, A, B)


def test_elementwise_add_becomes_ramp_load_and_store():
    func, (i, A, B) = _vec_func(lambda i, A, B: BufferStore(B, A[i] + FloatImm("float32", 1.0), (i,)))
    out = vectorize_loop(func)
    ramp = Ramp(0, 1, 8)
    expected = BufferStore(B, BufferLoad(A, (ramp,)) + Broadcast(FloatImm("float32", 1.0), 8), (ramp,))
    assert_structural_equal(out.body, expected)
    assert out.body.value.dtype == "float32x8"
    assert verify_well_formed(out)


def test_loop_min_and_affine_index_fold_into_the_ramp():
    func, (i, A, B) = _vec_func(lambda i, A, B: BufferStore(B, A[i * 2], (i + 4,)), extent=4, lo=2)
    out = vectorize_loop(func)
    assert_structural_equal(out.body.indices[0], Ramp(6, 1, 4))
    assert_structural_equal(out.body.value.indices[0], Ramp(4, 2, 4))


def test_loop_invariant_parts_stay_scalar():
    x = Var("x", "float32")
    func, (i, A, B) = _vec_func(lambda i, A, B: BufferStore(B, A[i] * (x + FloatImm("float32", 2.0)), (i,)))
    func = func.with_fields(params=(*func.params, x))
    out = vectorize_loop(func)
    bcast = out.body.value.b
    assert isinstance(bcast, Broadcast) and bcast.value.dtype == "float32"


def test_select_cast_compare_and_math_calls_widen():
    def body(i, A, B):
        cond = LT(A[i], FloatImm("float32", 0.5))
        value = Select(cond, exp(A[i]), Cast("float32", i))
        return BufferStore(B, value, (i,))

    func, (i, A, B) = _vec_func(body, extent=4)
    out = vectorize_loop(func)
    sel = out.body.value
    assert sel.condition.dtype == "boolx4"
    assert sel.true_value.dtype == "float32x4" and sel.true_value.op.name == "tir.exp"
    assert isinstance(sel.false_value, Cast) and sel.false_value.dtype == "float32x4"
    assert verify_well_formed(out)


def test_if_independent_of_loop_var_is_kept_around_vector_code():
    flag = Var("flag", "bool")

    def body(i, A, B):
        return IfThenElse(flag, BufferStore(B, A[i], (i,)))

    func, _ = _vec_func(body)
    func = func.with_fields(params=(*func.params, flag))
    out = vectorize_loop(func)
    assert isinstance(out.body, IfThenElse) and out.body.then_case.value.dtype == "float32x8"


def test_let_bound_to_vector_gets_a_vector_variable():
    def body(i, A, B):
        t = Var("t", "float32")
        return LetStmt(t, A[i] * 2.0, BufferStore(B, t + t, (i,)))

    func, _ = _vec_func(body, extent=4)
    out = vectorize_loop(func)
    assert out.body.var.dtype == "float32x4"
    assert verify_well_formed(out)


def test_extent_one_is_substituted():
    func, (i, A, B) = _vec_func(lambda i, A, B: BufferStore(B, A[i], (i,)), extent=1, lo=3)
    out = vectorize_loop(func)
    assert_structural_equal(out.body, BufferStore(B, BufferLoad(A, (convert(3),)), (3,)))


def test_pass_keeps_numbers():
    def body(i, A, B):
        return BufferStore(B, Select(LT(A[i], FloatImm("float32", 0.5)), A[i] * 3.0, A[i + 8]), (i + 8,))

    func, _ = _vec_func(body)
    out = VectorizeLoop()(mod_of(func))["main"]
    assert find_all(out, For) == []
    a = np.random.default_rng(0).random(16, dtype=np.float32)
    want = run_func(func, a, np.zeros(16, np.float32))[1]
    got = run_func(out, a, np.zeros(16, np.float32))[1]
    np.testing.assert_allclose(got, want)


# --------------------------------------------------------------------------- fallbacks


def test_symbolic_extent_falls_back_to_serial():
    n = Var("n")
    func, _ = _vec_func(lambda i, A, B: BufferStore(B, A[i], (i,)), extent=n)
    out = vectorize_loop(func)
    assert out.body.kind == ForKind.SERIAL and out.body.body is func.body.body


def test_nested_loop_falls_back():
    def body(i, A, B):
        j = Var("j")
        return For(j, 0, 2, body=BufferStore(B, A[j], (i,)))

    func, _ = _vec_func(body)
    assert vectorize_loop(func).body.kind == ForKind.SERIAL


def test_if_depending_on_loop_var_falls_back():
    # a lower bound (or any condition that is no upper bound on the lanes) stays serial
    func, _ = _vec_func(lambda i, A, B: IfThenElse(GT(i, 3), BufferStore(B, A[i], (i,))))
    assert vectorize_loop(func).body.kind == ForKind.SERIAL


@pytest.mark.parametrize("limit", [3, 8, 5])
def test_upper_bound_on_lanes_becomes_vector_body_and_serial_tail(limit):
    # the last tile of a split over a non-dividing (or symbolic) extent: ``if i < n``
    n = Var("n")

    def body(i, A, B):
        return IfThenElse(LT(i + 8, n), BufferStore(B, A[i] * 2.0, (i,)))

    func, (i, A, B) = _vec_func(body)
    func = func.with_fields(params=(*func.params, n))
    out = vectorize_loop(func)
    assert isinstance(out.body, IfThenElse)
    vector, tail = out.body.then_case, out.body.else_case
    assert isinstance(vector, BufferStore) and vector.value.dtype == "float32x8"
    assert isinstance(tail, For) and tail.kind == ForKind.SERIAL
    a = np.random.default_rng(1).random(16, dtype=np.float32)
    want = run_func(func, a, np.zeros(16, np.float32), limit + 8)[1]
    got = run_func(out, a, np.zeros(16, np.float32), limit + 8)[1]
    np.testing.assert_allclose(got, want)


def test_widening_cast_of_the_lane_index_stays_a_ramp():
    # an int32 loop inside int64 index arithmetic: int64(ramp) -> ramp of int64
    def body(i, A, B):
        return BufferStore(B, A[Cast("int64", i)], (i,))

    func, _ = _vec_func(body)
    load = vectorize_loop(func).body.value
    assert isinstance(load.indices[0], Ramp) and load.indices[0].dtype == "int64x8"


def test_allocation_in_body_falls_back():
    def body(i, A, B):
        T = decl_buffer((1,), "float32", "T")
        inner = SeqStmt((BufferStore(T, A[i], (0,)), BufferStore(B, T[0], (i,))))
        return Allocate(T.data, "float32", (1,), convert(True), DeclBuffer(T, inner))

    func, _ = _vec_func(body)
    assert vectorize_loop(func).body.kind == ForKind.SERIAL


def test_non_vectorizable_call_falls_back():
    func, _ = _vec_func(lambda i, A, B: BufferStore(B, call_extern("float32", "myfn", A[i]), (i,)))
    assert vectorize_loop(func).body.kind == ForKind.SERIAL


def test_side_effect_call_falls_back_even_when_loop_invariant():
    func, _ = _vec_func(lambda i, A, B: Evaluate(call_extern("int32", "tick")))
    assert vectorize_loop(func).body.kind == ForKind.SERIAL


def test_reduction_into_scalar_location_falls_back():
    func, _ = _vec_func(lambda i, A, B: BufferStore(B, B[0] + A[i], (0,)))
    assert vectorize_loop(func).body.kind == ForKind.SERIAL


def test_cross_lane_dependence_falls_back():
    func, _ = _vec_func(lambda i, A, B: BufferStore(B, B[i] + 1.0, (i + 1,)))
    out = vectorize_loop(func)
    assert out.body.kind == ForKind.SERIAL
    b = np.arange(16, dtype=np.float32)
    np.testing.assert_allclose(
        run_func(out, np.zeros(16, np.float32), b)[1], run_func(func, np.zeros(16, np.float32), b)[1]
    )


def test_same_index_read_modify_write_is_vectorized():
    func, _ = _vec_func(lambda i, A, B: BufferStore(B, B[i] * A[i], (i,)))
    out = vectorize_loop(func)
    assert isinstance(out.body, BufferStore) and out.body.value.dtype == "float32x8"


def test_loop_invariant_store_without_self_read_stays_scalar_inside_vector_code():
    def body(i, A, B):
        return SeqStmt((BufferStore(B, A[i], (i,)), BufferStore(A, FloatImm("float32", 0.0), (15,))))

    func, _ = _vec_func(body)
    out = vectorize_loop(func)
    # A is written at 15 and read at ramp: lanes could interact, so this stays serial.
    assert out.body.kind == ForKind.SERIAL


def test_inner_loop_vectorizes_outer_stays():
    a = Var("a", "handle")
    A = decl_buffer((4, 8), "float32", "A")
    i, j = Var("i"), Var("j")
    body = For(i, 0, 4, body=For(j, 0, 8, ForKind.VECTORIZED, BufferStore(A, FloatImm("float32", 1.0), (i, j))))
    out = vectorize_loop(func_of([a], body, {a: A}))
    assert out.body.kind == ForKind.SERIAL
    store = out.body.body
    assert isinstance(store, BufferStore)
    assert_structural_equal(store.indices, (i, Ramp(0, 1, 8)))
    assert store.value.dtype == "float32x8" and isinstance(store.value, Broadcast)


@pytest.mark.parametrize("lanes", [2, 3, 16])
def test_any_constant_extent_is_accepted(lanes):
    func, _ = _vec_func(lambda i, A, B: BufferStore(B, A[i], (i,)), extent=lanes)
    out = vectorize_loop(func)
    assert out.body.value.dtype == f"float32x{lanes}"
    assert isinstance(out.body.indices[0], Ramp) and out.body.indices[0].lanes == lanes


def test_condition_depending_on_a_widened_let_falls_back():
    def body(i, A, B):
        t = Var("t", "float32")
        return LetStmt(t, A[i], IfThenElse(LT(t, FloatImm("float32", 0.5)), BufferStore(B, t, (i,))))

    func, _ = _vec_func(body, extent=4)
    out = vectorize_loop(func)
    assert out.body.kind == ForKind.SERIAL
    assert verify_well_formed(out)


def test_loop_invariant_self_update_falls_back():
    func, _ = _vec_func(lambda i, A, B: BufferStore(B, B[0] + FloatImm("float32", 1.0), (0,)), extent=4)
    out = vectorize_loop(func)
    assert out.body.kind == ForKind.SERIAL
    got = run_func(out, np.zeros(16, np.float32), np.zeros(16, np.float32))[1]
    assert got[0] == 4.0


def test_loop_invariant_plain_store_is_kept_once():
    def body(i, A, B):
        return SeqStmt((BufferStore(B, Cast("float32", i), (i,)), BufferStore(A, FloatImm("float32", 3.0), (15,))))

    func, _ = _vec_func(body, extent=4)
    out = vectorize_loop(func)
    assert isinstance(out.body, SeqStmt) and out.body.seq[1].indices[0].value == 15
    a, b = run_func(out, np.zeros(16, np.float32), np.zeros(16, np.float32))
    assert a[15] == 3.0 and list(b[:4]) == [0.0, 1.0, 2.0, 3.0]
