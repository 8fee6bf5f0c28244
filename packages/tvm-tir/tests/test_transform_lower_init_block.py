"""LowerInitBlock: a block's init becomes ``if first reduction iteration: init`` in its body."""

import numpy as np
import pytest
from lowering_helpers import func_of, matmul_blocks, mod_of, run_func
from tvm.ffi import assert_structural_equal
from tvm.tir import (
    EQ, And, Block, BlockRealize, BufferStore, FloatImm, For, IfThenElse, IntImm, IterVar,
    IterVarType, Range, SeqStmt, Var, decl_buffer,
)
from tvm.tir.transform import LowerInitBlock, lower_init_block


def _reduction_block(red_axes=1, with_dom=True):
    """``B[vi] = sum over v1..vn of A[vi, ...]`` with an init block."""
    a, b = Var("a", "handle"), Var("b", "handle")
    shape = (4,) + (3,) * red_axes
    A = decl_buffer(shape, "float32", "A")
    B = decl_buffer((4,), "float32", "B")
    vi = Var("vi")
    red = [Var(f"vr{k}") for k in range(red_axes)]
    ivs = [IterVar(Range(0, 4), vi, IterVarType.DATA_PAR)]
    ivs += [IterVar(Range(1, 3) if with_dom else None, v, IterVarType.COMM_REDUCE) for v in red]
    loops = [Var("i")] + [Var(f"r{k}") for k in range(red_axes)]
    update = BufferStore(B, B[vi] + A[(vi, *red)], (vi,))
    init = BufferStore(B, FloatImm("float32", 0.0), (vi,))
    block = Block(tuple(ivs), (), (), "B", update, init)
    body = BlockRealize(tuple(loops), IntImm("bool", 1), block)
    for v, ext in reversed(list(zip(loops, [4] + [3] * red_axes))):
        body = For(v, 0, ext, body=body)
    return func_of([a, b], body, {a: A, b: B}), block, vi, red, A, B


def _find_block(stmt):
    while not isinstance(stmt, BlockRealize):
        stmt = stmt.body if not isinstance(stmt, Block) else stmt.body
    return stmt.block


def test_single_reduction_axis_guards_init_with_dom_min():
    func, block, vi, red, A, B = _reduction_block(1)
    out = lower_init_block(func)
    new_block = _find_block(out.body)
    assert new_block.init is None
    expected = SeqStmt((IfThenElse(EQ(red[0], 1), block.init), block.body))
    assert_structural_equal(new_block.body, expected)


def test_two_reduction_axes_use_conjunction():
    func, block, vi, red, A, B = _reduction_block(2)
    new_block = _find_block(lower_init_block(func).body)
    cond = new_block.body.seq[0].condition
    assert_structural_equal(cond, And(EQ(red[0], 1), EQ(red[1], 1)))


def test_no_reduction_axis_runs_init_unconditionally():
    func, block, vi, red, A, B = _reduction_block(0)
    new_block = _find_block(lower_init_block(func).body)
    assert_structural_equal(new_block.body, SeqStmt((block.init, block.body)))


def test_function_without_init_is_returned_unchanged():
    func, *_ = _reduction_block(1)
    once = lower_init_block(func)
    assert lower_init_block(once) is once


def test_pass_object_runs_on_module_and_keeps_numbers():
    func = matmul_blocks(4, 5, 6)
    mod = LowerInitBlock()(mod_of(func))
    lowered = mod["main"]
    assert _find_block(lowered.body.block.body).init is None
    rng = np.random.default_rng(0)
    a = rng.random((4, 6), dtype=np.float32)
    b = rng.random((6, 5), dtype=np.float32)
    c = np.full((4, 5), 7.0, np.float32)  # garbage: init must reset it
    out = run_func(lowered, a, b, c)[2]
    np.testing.assert_allclose(out, a @ b, rtol=1e-5)
    np.testing.assert_allclose(run_func(func, a, b, c)[2], out, rtol=1e-6)


def test_reduction_axis_without_domain_is_an_error():
    func, *_ = _reduction_block(1, with_dom=False)
    with pytest.raises(ValueError, match="no domain"):
        lower_init_block(func)
