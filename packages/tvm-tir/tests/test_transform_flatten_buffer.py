"""FlattenBuffer: N-d accesses become 1-D accesses over the same data variable."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lowering_helpers import find_first, func_of, matmul_blocks, mod_of, run_func
from tvm.ffi import assert_structural_equal
from tvm.tir import (
    Allocate, BufferLoad, BufferStore, DeclBuffer, FloatImm, For, IntImm, Ramp, SeqStmt, Var,
    convert, decl_buffer,
)
from tvm.tir.analysis import verify_well_formed
from tvm.tir.transform import FlattenBuffer, LowerOpaqueBlock, flatten_buffer


def _copy_2d(n=4, m=6, **buffer_kwargs):
    a, b = Var("a", "handle"), Var("b", "handle")
    A = decl_buffer((n, m), "float32", "A", **buffer_kwargs)
    B = decl_buffer((n, m), "float32", "B")
    i, j = Var("i"), Var("j")
    body = For(i, 0, n, body=For(j, 0, m, body=BufferStore(B, A[i, j] * FloatImm("float32", 2.0), (i, j))))
    return func_of([a, b], body, {a: A, b: B}), (a, b, A, B, i, j)


def test_row_major_flattening_keeps_buffer_map_and_declares_views():
    func, (a, b, A, B, i, j) = _copy_2d()
    out = flatten_buffer(func)
    assert out.buffer_map[a] is A and out.buffer_map[b] is B  # N-d buffers kept for the ABI
    A1 = A.with_fields(shape=(IntImm("int32", 24),))
    B1 = B.with_fields(shape=(IntImm("int32", 24),))
    store = BufferStore(B1, BufferLoad(A1, (i * 6 + j,)) * FloatImm("float32", 2.0), (i * 6 + j,))
    expected = DeclBuffer(A1, DeclBuffer(B1, For(i, 0, 4, body=For(j, 0, 6, body=store))))
    assert_structural_equal(out.body, expected)
    assert verify_well_formed(out)


def test_one_flattened_buffer_per_original_buffer():
    func, _ = _copy_2d()
    out = flatten_buffer(func)
    decl_a = out.body
    store = decl_a.body.body.body.body
    assert store.value.a.buffer is decl_a.buffer


def test_strides_and_elem_offset_are_used():
    s0, off = Var("s0"), Var("off")
    func, (a, b, A, B, i, j) = _copy_2d(strides=(s0, 1), elem_offset=off)
    out = flatten_buffer(func)
    load = find_first(out.body, BufferStore).value.a
    assert_structural_equal(load.indices, (i * s0 + j + off,))
    assert load.buffer.strides == () and load.buffer.elem_offset is None


def test_allocate_extents_collapse_to_the_flat_shape():
    a = Var("a", "handle")
    A = decl_buffer((3,), "float32", "A")
    T = decl_buffer((3, 5), "float32", "T")
    body = SeqStmt((BufferStore(T, FloatImm("float32", 1.0), (2, 4)), BufferStore(A, T[2, 4], (0,))))
    alloc = Allocate(T.data, "float32", T.shape, convert(True), DeclBuffer(T, body))
    out = flatten_buffer(func_of([a], alloc, {a: A}))
    assert [e.value for e in out.body.extents] == [15]
    assert [e.value for e in out.body.body.buffer.shape] == [15]
    store = out.body.body.body.seq[0]
    assert isinstance(store.indices[0], IntImm) and store.indices[0].value == 14


def test_allocate_without_decl_buffer_uses_product_of_extents():
    a = Var("a", "handle")
    A = decl_buffer((3,), "float32", "A")
    data = Var("T", "handle")
    T = decl_buffer((3, 5), "float32", "T", data=data)
    alloc = Allocate(data, "float32", (3, 5), convert(True), BufferStore(T, FloatImm("float32", 1.0), (1, 1)))
    out = flatten_buffer(func_of([a], alloc, {a: A}))
    assert [e.value for e in out.body.extents] == [15]


def test_ramp_index_in_last_dimension_stays_a_ramp():
    a = Var("a", "handle")
    A = decl_buffer((4, 8), "float32", "A")
    i = Var("i")
    store = BufferStore(A, BufferLoad(A, (i, Ramp(0, 1, 4))), (i, Ramp(4, 1, 4)))
    out = flatten_buffer(func_of([a], For(i, 0, 4, body=store), {a: A}))
    new = out.body.body.body
    assert isinstance(new.indices[0], Ramp) and isinstance(new.value.indices[0], Ramp)
    assert_structural_equal(new.indices[0], Ramp(i * 8 + 4, 1, 4))
    assert_structural_equal(new.value.indices[0], Ramp(i * 8, 1, 4))


def test_axis_separators_flatten_groups_separately():
    a = Var("a", "handle")
    A = decl_buffer((2, 3, 4, 5), "float32", "A", axis_separators=(2,))
    idx = (Var("w"), Var("x"), Var("y"), Var("z"))
    body = BufferStore(A, FloatImm("float32", 0.0), idx)
    for v, ext in reversed(list(zip(idx, (2, 3, 4, 5)))):
        body = For(v, 0, ext, body=body)
    out = flatten_buffer(func_of([a], body, {a: A}))
    flat = out.body.buffer
    assert [s.value for s in flat.shape] == [6, 20] and flat.axis_separators == (1,)
    w, x, y, z = idx
    store = out.body.body.body.body.body.body
    assert_structural_equal(store.indices, (w * 3 + x, y * 5 + z))


def test_zero_dim_buffer_becomes_one_element():
    a = Var("a", "handle")
    A = decl_buffer((), "int32", "A")
    out = flatten_buffer(func_of([a], BufferStore(A, convert(7), ()), {a: A}))
    store = out.body.body
    assert [s.value for s in store.buffer.shape] == [1]
    assert store.indices[0].value == 0


def test_blocks_must_be_lowered_first():
    with pytest.raises(ValueError, match="LowerOpaqueBlock"):
        flatten_buffer(matmul_blocks(2, 2, 2))


def test_flattening_is_idempotent():
    func, _ = _copy_2d()
    once = flatten_buffer(func)
    assert flatten_buffer(once) is once


def test_pass_on_lowered_matmul_keeps_numbers():
    mod = LowerOpaqueBlock()(mod_of(matmul_blocks(3, 4, 5)))
    flat = FlattenBuffer()(mod)["main"]
    assert verify_well_formed(flat)
    rng = np.random.default_rng(3)
    a, b = rng.random((3, 5), dtype=np.float32), rng.random((5, 4), dtype=np.float32)
    out = run_func(flat, a, b, np.zeros((3, 4), np.float32))[2]
    np.testing.assert_allclose(out, a @ b, rtol=1e-5)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=4), st.data())
def test_flat_offset_matches_numpy_ravel(shape, data):
    a = Var("a", "handle")
    A = decl_buffer(tuple(shape), "int32", "A")
    index = tuple(data.draw(st.integers(0, s - 1)) for s in shape)
    out = flatten_buffer(func_of([a], BufferStore(A, convert(1), index), {a: A}))
    store = find_first(out.body, BufferStore)
    assert store.indices[0].value == int(np.ravel_multi_index(index, shape))
