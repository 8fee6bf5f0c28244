"""Statements: if/else, while, let, allocations on stack and heap, unrolling, extern calls."""

from __future__ import annotations

import numpy as np
import pytest
from llvm_test_utils import prim_func, run
from tvm import tir
from tvm.target.llvm import build
from tvm.tir import (
    Allocate, DeclBuffer, For, ForKind, IfThenElse, Let, LetStmt, SizeVar, Var, While,
    decl_buffer,
)
from tvm.tir.stmt import BufferStore


def test_if_then_else_statement_and_expression():
    n = SizeVar("n", "int32")
    A = decl_buffer((n,), "int32", "A")
    B = decl_buffer((n,), "int32", "B")
    i = Var("i", "int32")
    # if_then_else guards an out-of-bounds read: only the taken branch is evaluated
    guarded = tir.op.if_then_else(i + 1 < n, A[tir.Min(i + 1, n - 1) * 0 + i + 1], A[0] * 0 - 1)
    body = For(i, 0, n, ForKind.SERIAL, IfThenElse(
        tir.FloorMod(i, 2) == 0, BufferStore(B, guarded, (i,)), BufferStore(B, A[i] * 10, (i,))))
    a = np.arange(7, dtype="int32") + 1
    b = np.zeros(7, "int32")
    run(prim_func("ite", [A, B], body), a, b)
    ref = np.where(np.arange(7) % 2 == 0, np.append(a[1:], -1), a * 10)
    np.testing.assert_array_equal(b, ref)


def test_while_loop_collatz_steps():
    n = SizeVar("n", "int32")
    A = decl_buffer((n,), "int64", "A")
    S = decl_buffer((n,), "int32", "S")
    i = Var("i", "int32")
    x = decl_buffer((1,), "int64", "x", scope="local")
    steps = decl_buffer((1,), "int32", "steps", scope="local")
    loop = While(x[0] != 1, tir.stmt_seq(
        BufferStore(x, tir.Select(tir.FloorMod(x[0], 2) == 0, tir.FloorDiv(x[0], 2),
                                  x[0] * 3 + 1), (0,)),
        BufferStore(steps, steps[0] + 1, (0,))))
    per_item = tir.stmt_seq(BufferStore(x, A[i], (0,)), BufferStore(steps, 0, (0,)), loop,
                            BufferStore(S, steps[0], (i,)))
    body = Allocate(x.data, "int64", (1,), tir.const(True), Allocate(
        steps.data, "int32", (1,), tir.const(True), For(i, 0, n, ForKind.SERIAL, per_item)))
    a = np.array([1, 2, 3, 6, 7, 27], "int64")
    s = np.zeros(6, "int32")
    run(prim_func("collatz", [A, S], body), a, s)

    def ref(v):
        k = 0
        while v != 1:
            v = v // 2 if v % 2 == 0 else 3 * v + 1
            k += 1
        return k

    np.testing.assert_array_equal(s, [ref(int(v)) for v in a])


@pytest.mark.parametrize("size", [16, 100_000])
def test_allocate_stack_and_heap(size):
    """A temporary buffer: small constant -> alloca, large -> aligned_alloc/free."""
    A = decl_buffer((size,), "float32", "A")
    B = decl_buffer((size,), "float32", "B")
    T = decl_buffer((size,), "float32", "T")
    i = Var("i", "int32")
    body = Allocate(T.data, "float32", (size,), tir.const(True), DeclBuffer(T, tir.stmt_seq(
        For(i, 0, size, ForKind.SERIAL, BufferStore(T, A[i] * 2.0, (i,))),
        For(i, 0, size, ForKind.SERIAL, BufferStore(B, T[size - 1 - i] + 1.0, (i,))))))
    f = prim_func("tmp", [A, B], body)
    mod = build(f)
    raw = mod.get_source("ll-raw")
    if size > 4096:
        assert '@"aligned_alloc"(i64 64' in raw and '@"free"' in raw
    else:
        assert "aligned_alloc" not in raw and "alloca [16 x float], align 64" in raw
    a = np.arange(size, dtype="float32")
    b = np.zeros(size, "float32")
    mod["tmp"](a, b)
    np.testing.assert_array_equal(b, (a * 2)[::-1] + 1)


def test_symbolic_size_allocation_uses_the_heap():
    n = SizeVar("n", "int32")
    A = decl_buffer((n,), "int32", "A")
    T = decl_buffer((n,), "int32", "T")
    i = Var("i", "int32")
    body = Allocate(T.data, "int32", (n,), tir.const(True), tir.stmt_seq(
        For(i, 0, n, ForKind.SERIAL, BufferStore(T, A[i], (i,))),
        For(i, 0, n, ForKind.SERIAL, BufferStore(A, T[n - 1 - i], (i,)))))
    a = np.arange(9, dtype="int32")
    run(prim_func("rev", [A], body), a)
    np.testing.assert_array_equal(a, np.arange(9)[::-1])


def test_unrolled_loop_and_let():
    A = decl_buffer((8,), "float32", "A")
    i = Var("i", "int32")
    k = Var("k", "float32")
    body = For(i, 0, 8, ForKind.UNROLLED, LetStmt(
        k, tir.Cast("float32", i) * 0.5, BufferStore(A, Let(Var("t", "float32"), k, k + k), (i,))))
    mod = build(prim_func("unr", [A], body))
    raw = mod.get_source("ll-raw")
    assert "for.i." not in raw  # really unrolled: no loop blocks for i
    a = np.zeros(8, "float32")
    mod["unr"](a)
    np.testing.assert_array_equal(a, np.arange(8, dtype="float32"))


def test_call_extern_and_address_of():
    n = SizeVar("n", "int32")
    A = decl_buffer((n,), "float32", "A")
    B = decl_buffer((n,), "float32", "B")
    # memcpy(&B[0], &A[0], n * 4) through call_extern
    nbytes = tir.Cast("int64", n) * 4
    body = tir.Evaluate(tir.op.call_extern(
        "handle", "memcpy", tir.call_intrin("handle", "tir.address_of", B[0]),
        tir.call_intrin("handle", "tir.address_of", A[0]), nbytes))
    a = np.arange(10, dtype="float32")
    b = np.zeros(10, "float32")
    run(prim_func("copy", [A, B], body), a, b)
    np.testing.assert_array_equal(a, b)


def test_multidimensional_indices_are_flattened_row_major():
    A = decl_buffer((3, 4, 5), "int32", "A")
    i, j, k = Var("i", "int32"), Var("j", "int32"), Var("k", "int32")
    body = For(i, 0, 3, ForKind.SERIAL, For(j, 0, 4, ForKind.SERIAL, For(
        k, 0, 5, ForKind.SERIAL, BufferStore(A, i * 100 + j * 10 + k, (i, j, k)))))
    a = np.zeros((3, 4, 5), "int32")
    run(prim_func("idx3", [A], body), a)
    ii, jj, kk = np.meshgrid(range(3), range(4), range(5), indexing="ij")
    np.testing.assert_array_equal(a, ii * 100 + jj * 10 + kk)


def test_block_is_rejected_with_a_hint():
    A = decl_buffer((4,), "float32", "A")
    block = tir.Block((), (), (), "b", BufferStore(A, 1.0, (0,)))
    body = tir.BlockRealize((), tir.const(True), block)
    with pytest.raises(NotImplementedError, match="blocks"):
        build(prim_func("blk", [A], body))


def test_thread_binding_is_rejected():
    A = decl_buffer((4,), "float32", "A")
    i = Var("i", "int32")
    body = For(i, 0, 4, ForKind.THREAD_BINDING, BufferStore(A, 1.0, (i,)))
    with pytest.raises(ValueError, match="GPU thread"):
        build(prim_func("thr", [A], body))
