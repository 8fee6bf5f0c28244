"""LowerOpaqueBlock: blocks disappear, leaving loops, ifs, allocations and attributes."""

import numpy as np
import pytest
from lowering_helpers import func_of, matmul_blocks, mod_of, run_func
from tvm.ffi import assert_structural_equal
from tvm.ir.transform import Sequential
from tvm.tir import (
    EQ, LT, Allocate, AttrStmt, Block, BlockRealize, BufferRegion, BufferStore, DeclBuffer,
    FloatImm, For, ForKind, IfThenElse, IntImm, IterVar, IterVarType, MatchBufferRegion, Range,
    SeqStmt, StringImm, Var, const, decl_buffer,
)
from tvm.tir.analysis import verify_well_formed
from tvm.tir.transform import LowerInitBlock, LowerOpaqueBlock, lower_opaque_block


def _realize(values, ivs, body, name="blk", predicate=None, **fields):
    block = Block(tuple(ivs), (), (), name, body, **fields)
    return BlockRealize(tuple(values), predicate if predicate is not None else IntImm("bool", 1), block)


def test_matmul_becomes_plain_loops():
    func = matmul_blocks(4, 4, 4)
    out = Sequential([LowerInitBlock(), LowerOpaqueBlock()])(mod_of(func))["main"]
    a, b, c = func.params
    A, B, C = (func.buffer_map[p] for p in (a, b, c))
    i, j, k = Var("i"), Var("j"), Var("k")
    body = SeqStmt((
        IfThenElse(EQ(k, 0), BufferStore(C, FloatImm("float32", 0.0), (i, j))),
        BufferStore(C, C[i, j] + A[i, k] * B[k, j], (i, j)),
    ))
    loops = For(i, 0, 4, body=For(j, 0, 4, body=For(k, 0, 4, body=body)))
    expected = func_of([a, b, c], loops, {a: A, b: B, c: C}, "matmul").with_attr(
        "tir.blocks_lowered", True
    )
    assert_structural_equal(out, expected)
    assert verify_well_formed(out)


def test_init_is_lowered_even_without_lower_init_block():
    func = matmul_blocks(3, 3, 3)
    out = lower_opaque_block(func)
    rng = np.random.default_rng(1)
    a, b = rng.random((3, 3), dtype=np.float32), rng.random((3, 3), dtype=np.float32)
    c = np.ones((3, 3), np.float32)
    np.testing.assert_allclose(run_func(out, a, b, c)[2], a @ b, rtol=1e-5)


def test_predicate_becomes_if_and_iter_vars_are_substituted():
    a = Var("a", "handle")
    A = decl_buffer((10,), "float32", "A")
    i, vi = Var("i"), Var("vi")
    store = BufferStore(A, FloatImm("float32", 1.0), (vi,))
    realize = _realize([i * 2], [IterVar(Range(0, 10), vi)], store, predicate=LT(i * 2, 10))
    func = func_of([a], For(i, 0, 8, body=realize), {a: A})
    out = lower_opaque_block(func)
    expected = For(i, 0, 8, body=IfThenElse(LT(i * 2, 10), BufferStore(A, FloatImm("float32", 1.0), (i * 2,))))
    assert_structural_equal(out.body, expected)


def test_alloc_buffers_become_allocate_and_decl_buffer():
    a = Var("a", "handle")
    A = decl_buffer((4,), "float32", "A")
    T = decl_buffer((4, 2), "float32", "T", scope="local")
    vi = Var("vi")
    body = SeqStmt((
        BufferStore(T, FloatImm("float32", 2.0), (vi, 0)),
        BufferStore(A, T[vi, 0], (vi,)),
    ))
    i = Var("i")
    inner = _realize([i], [IterVar(Range(0, 4), vi)], body, "inner")
    root = _realize([], [], For(i, 0, 4, body=inner), "root", alloc_buffers=(T,))
    out = lower_opaque_block(func_of([a], root, {a: A}))
    alloc = out.body
    assert isinstance(alloc, Allocate) and alloc.buffer_var is T.data
    assert alloc.scope == "local" and alloc.dtype == "float32"
    assert [e.value for e in alloc.extents] == [4, 2]
    assert isinstance(alloc.body, DeclBuffer) and alloc.body.buffer is T
    assert verify_well_formed(out)
    np.testing.assert_allclose(run_func(out, np.zeros(4, np.float32))[0], [2.0] * 4)


def test_pragma_annotations_become_attr_stmts_and_others_are_dropped():
    a = Var("a", "handle")
    A = decl_buffer((1,), "int32", "A")
    store = BufferStore(A, const(3, "int32"), (0,))
    realize = _realize([], [], store, "b",
                       annotations={"pragma_auto_unroll_max_step": 16, "meta_schedule.x": "y"})
    out = lower_opaque_block(func_of([a], realize, {a: A}))
    expected = AttrStmt(StringImm("b"), "pragma_auto_unroll_max_step", const(16), store)
    assert_structural_equal(out.body, expected)


def test_thread_binding_loops_are_kept():
    a = Var("a", "handle")
    A = decl_buffer((32,), "float32", "A")
    tx, vi = Var("tx"), Var("vi")
    binding = IterVar(Range(0, 32), Var("threadIdx.x"), IterVarType.THREAD_INDEX, "threadIdx.x")
    realize = _realize([tx], [IterVar(Range(0, 32), vi)], BufferStore(A, FloatImm("float32", 0.0), (vi,)))
    loop = For(tx, 0, 32, ForKind.THREAD_BINDING, realize, binding)
    out = lower_opaque_block(func_of([a], loop, {a: A}))
    assert out.body.kind == ForKind.THREAD_BINDING and out.body.thread_binding is binding
    assert_structural_equal(out.body.body, BufferStore(A, FloatImm("float32", 0.0), (tx,)))


def test_match_buffer_accesses_go_to_the_source_region():
    a = Var("a", "handle")
    A = decl_buffer((8, 8), "float32", "A")
    sub = decl_buffer((2, 2), "float32", "S")
    vi = Var("vi")
    i, x, y = Var("i"), Var("x"), Var("y")
    region = BufferRegion(A, (Range(vi * 2, 2), Range(4, 2)))
    body = For(x, 0, 2, body=For(y, 0, 2, body=BufferStore(sub, sub[x, y] + FloatImm("float32", 1.0), (x, y))))
    realize = _realize([i], [IterVar(Range(0, 4), vi)], body,
                       match_buffers=(MatchBufferRegion(sub, region),))
    out = lower_opaque_block(func_of([a], For(i, 0, 4, body=realize), {a: A}))
    store = out.body.body.body.body
    assert store.buffer is A
    assert_structural_equal(store.indices, (i * 2 + x, 4 + y))
    arr = np.zeros((8, 8), np.float32)
    got = run_func(out, arr)[0]
    expected = np.zeros((8, 8), np.float32)
    expected[:, 4:6] = 1.0
    np.testing.assert_allclose(got, expected)


def test_match_buffer_with_too_many_dimensions_is_an_error():
    a = Var("a", "handle")
    A = decl_buffer((8,), "float32", "A")
    sub = decl_buffer((2, 2), "float32", "S")
    realize = _realize([], [], BufferStore(sub, FloatImm("float32", 0.0), (0, 0)),
                       match_buffers=(MatchBufferRegion(sub, BufferRegion(A, (Range(0, 4),))),))
    with pytest.raises(ValueError, match="at least as many dimensions"):
        lower_opaque_block(func_of([a], realize, {a: A}))


def test_block_with_iter_vars_but_no_realize_is_an_error():
    a = Var("a", "handle")
    A = decl_buffer((4,), "float32", "A")
    vi = Var("vi")
    block = Block((IterVar(Range(0, 4), vi),), (), (), "lonely", BufferStore(A, FloatImm("float32", 0.0), (vi,)))
    with pytest.raises(ValueError, match="lonely"):
        lower_opaque_block(func_of([a], block, {a: A}))


def test_marks_function_and_is_idempotent():
    out = lower_opaque_block(matmul_blocks(2, 2, 2))
    assert out.attrs["tir.blocks_lowered"] is True
    assert lower_opaque_block(out) is out
