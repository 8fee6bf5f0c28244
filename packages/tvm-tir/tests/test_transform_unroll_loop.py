"""UnrollLoop: unrolled loops become copies of their body, or pragma-annotated serial loops."""

import numpy as np
from lowering_helpers import find_all, func_of, mod_of, run_func
from tvm.ffi import assert_structural_equal
from tvm.ir.transform import PassContext
from tvm.tir import (
    BufferStore, For, ForKind, LetStmt, SeqStmt, Var, convert, decl_buffer,
)
from tvm.tir.analysis import verify_well_formed
from tvm.tir.transform import UnrollLoop, unroll_loop


def _unrolled(extent, body_fn, lo=0):
    a = Var("a", "handle")
    A = decl_buffer((64,), "int32", "A")
    i = Var("i")
    return func_of([a], For(i, lo, extent, ForKind.UNROLLED, body_fn(i, A)), {a: A}), (i, A)


def test_constant_extent_becomes_sequence_of_copies():
    func, (i, A) = _unrolled(3, lambda i, A: BufferStore(A, i * 2, (i,)), lo=1)
    out = unroll_loop(func)
    expected = SeqStmt(tuple(BufferStore(A, convert(k) * 2, (k,)) for k in (1, 2, 3)))
    assert_structural_equal(out.body, expected)


def test_inner_definitions_are_renamed_per_copy():
    def body(i, A):
        j, t = Var("j"), Var("t")
        return For(j, 0, 2, body=LetStmt(t, i * 2 + j, BufferStore(A, t, (t,))))

    func, _ = _unrolled(4, body)
    out = unroll_loop(func)
    loops = find_all(out.body, For)
    assert len(loops) == 4 and len({id(loop.loop_var) for loop in loops}) == 4
    lets = find_all(out.body, LetStmt)
    assert len({id(let.var) for let in lets}) == 4
    assert verify_well_formed(out)
    want = run_func(func, np.zeros(64, np.int32))[0]
    np.testing.assert_array_equal(run_func(out, np.zeros(64, np.int32))[0], want)


def test_above_limit_becomes_serial_with_pragma():
    func, _ = _unrolled(100, lambda i, A: BufferStore(A, i, (i % 64,)))
    out = unroll_loop(func)
    assert out.body.kind == ForKind.SERIAL and out.body.annotations == {"pragma_unroll": 1}


def test_limit_comes_from_pass_context():
    func, _ = _unrolled(8, lambda i, A: BufferStore(A, i, (i,)))
    with PassContext(config={"tir.UnrollLoop.max_unroll": 4}):
        out = UnrollLoop()(mod_of(func))["main"]
    assert isinstance(out.body, For) and out.body.annotations["pragma_unroll"] == 1
    assert isinstance(unroll_loop(func).body, SeqStmt)  # default limit 64


def test_symbolic_extent_becomes_serial_with_pragma():
    n = Var("n")
    func, _ = _unrolled(n, lambda i, A: BufferStore(A, i, (i,)))
    func = func.with_fields(params=(*func.params, n))
    out = unroll_loop(func)
    assert out.body.kind == ForKind.SERIAL and out.body.annotations["pragma_unroll"] == 1


def test_extent_one_and_zero():
    func, (i, A) = _unrolled(1, lambda i, A: BufferStore(A, i, (i,)), lo=5)
    assert_structural_equal(unroll_loop(func).body, BufferStore(A, convert(5), (5,)))
    func0, _ = _unrolled(0, lambda i, A: BufferStore(A, i, (i,)))
    body = unroll_loop(func0).body
    assert body.value.value == 0  # Evaluate(0)


def test_nested_unrolled_loops_unroll_inside_out():
    def body(i, A):
        j = Var("j")
        return For(j, 0, 2, ForKind.UNROLLED, BufferStore(A, i * 2 + j, (i * 2 + j,)))

    func, _ = _unrolled(3, body)
    out = unroll_loop(func)
    assert find_all(out.body, For) == []
    assert len(find_all(out.body, BufferStore)) == 6
    np.testing.assert_array_equal(run_func(out, np.zeros(64, np.int32))[0][:6], np.arange(6))


def test_other_loop_kinds_are_untouched():
    a = Var("a", "handle")
    A = decl_buffer((4,), "int32", "A")
    i = Var("i")
    func = func_of([a], For(i, 0, 4, ForKind.PARALLEL, BufferStore(A, i, (i,))), {a: A})
    assert unroll_loop(func) is func


def test_blocks_inside_unrolled_loops_get_fresh_iter_vars():
    from lowering_helpers import matmul_blocks
    from tvm.tir import Block, BlockRealize

    func = matmul_blocks(3, 2, 2)
    root = func.body.block
    outer = root.body.with_fields(kind=ForKind.UNROLLED)
    func = func.with_body(func.body.with_fields(block=root.with_fields(body=outer)))
    out = unroll_loop(func)
    blocks = [b for b in find_all(out.body, Block) if b.name_hint == "C"]
    assert len(blocks) == 3 and len({id(b.iter_vars[0].var) for b in blocks}) == 3
    assert len(find_all(out.body, BlockRealize)) == 4
    assert verify_well_formed(out)
    a, b = np.ones((3, 2), np.float32), np.ones((2, 2), np.float32)
    c = run_func(out, a, b, np.zeros((3, 2), np.float32))[2]
    np.testing.assert_allclose(c, a @ b)
