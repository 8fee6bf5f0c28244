"""Local value numbering in the LLVM code generator: an integer operation on operands the
basic block computed already is not emitted again, constant integer arithmetic is folded,
and unrolled bodies (the same TIR nodes, the loop variable bound to another constant each
time) still compute each iteration's own values."""

from __future__ import annotations

import re

import numpy as np
from llvm_test_utils import prim_func, run
from tvm import tir
from tvm.target.llvm.build import codegen_ir
from tvm.tir import For, ForKind, SizeVar, Var, decl_buffer
from tvm.tir.stmt import BufferStore


def _body(ir_text: str, name: str) -> str:
    """The text of the function computing ``name`` (its compute function when outlined)."""
    heads = [m.start() for m in re.finditer(rf'define [^\n]*@"{name}(_compute_)?"\(', ir_text)]
    start = heads[-1]
    return ir_text[start:ir_text.index("\n}\n", start)]


def _two_stores(n: SizeVar) -> tir.PrimFunc:
    A = decl_buffer((24,), "float32", "A")
    B = decl_buffer((24,), "float32", "B")
    i, j = Var("i", "int32"), Var("j", "int32")

    def index() -> tir.PrimExpr:  # a fresh expression tree each time, as flattening makes
        return tir.FloorDiv(i * 8 + j, 1) * 1 + tir.FloorMod(i, n) * 0

    body = For(i, 0, 3, ForKind.SERIAL, For(j, 0, 8, ForKind.SERIAL, tir.stmt_seq(
        BufferStore(B, A[index()] + tir.const(1.0, "float32"), (index(),)),
        BufferStore(A, B[index()] * tir.const(2.0, "float32"), (index(),)))))
    return prim_func("two_stores", [A, B, n], body)


def test_an_index_repeated_in_a_block_is_computed_once():
    n = SizeVar("n", "int32")
    text, _ = codegen_ir(_two_stores(n))
    body = _body(text, "two_stores")
    # the index appears in four accesses of the innermost block: computed once, and the
    # four addresses use the one 64-bit offset
    assert len(re.findall(r"= mul nsw i32 %\"i\", 8", body)) == 1, body
    assert len(re.findall(r"= sext i32", body)) == 2, body  # the two index terms
    offsets = re.findall(r"getelementptr inbounds float, ptr %\"[AB]\", i64 (%\"[^\"]+\")", body)
    assert len(offsets) == 4 and len(set(offsets)) == 1, body
    a = np.arange(24, dtype="float32")
    b = np.zeros(24, "float32")
    run(_two_stores(n), a, b, 5)
    np.testing.assert_allclose(b, np.arange(24, dtype="float32") + 1)
    np.testing.assert_allclose(a, (np.arange(24, dtype="float32") + 1) * 2)


def test_constant_integer_arithmetic_is_folded():
    A = decl_buffer((16,), "int64", "A")
    i = Var("i", "int32")
    offset = tir.Cast("int64", tir.const(3, "int32")) * tir.const(4, "int64") + \
        tir.const(-2, "int64")
    body = For(i, 0, 16, ForKind.SERIAL,
               BufferStore(A, tir.Cast("int64", i) + offset, (i,)))
    func = prim_func("folded", [A], body)
    text, _ = codegen_ir(func)
    body_ir = _body(text, "folded")
    assert "sext i32 3" not in body_ir and "mul i64 12" not in body_ir, body_ir
    a = np.zeros(16, "int64")
    run(func, a)
    np.testing.assert_array_equal(a, np.arange(16) + 10)


def test_unrolled_iterations_keep_their_own_values():
    A = decl_buffer((4, 8), "int32", "A")
    i, j = Var("i", "int32"), Var("j", "int32")
    # the same BufferStore node is emitted for j = 0..7 in one basic block
    body = For(i, 0, 4, ForKind.SERIAL, For(j, 0, 8, ForKind.UNROLLED,
                                            BufferStore(A, i * 100 + j * j, (i, j))))
    a = np.zeros((4, 8), "int32")
    run(prim_func("unrolled", [A], body), a)
    ii, jj = np.meshgrid(np.arange(4), np.arange(8), indexing="ij")
    np.testing.assert_array_equal(a, ii * 100 + jj * jj)


def test_one_value_cast_from_two_source_types_extends_each_its_way():
    """int32 -1 and the same bits read as uint32 share an LLVM value; their casts to int64
    (sign- and zero-extension) are different operations."""
    A = decl_buffer((4,), "int32", "A")
    B = decl_buffer((4,), "int64", "B")
    i, x = Var("i", "int32"), Var("x", "int32")
    as_unsigned = tir.op.reinterpret("uint32", x)
    body = For(i, 0, 4, ForKind.SERIAL, tir.LetStmt(x, A[i], BufferStore(
        B, tir.Cast("int64", x) * tir.const(1000000, "int64") + tir.Cast("int64", as_unsigned),
        (i,))))
    a = np.array([-1, 0, 7, -2], "int32")
    b = np.zeros(4, "int64")
    run(prim_func("casts", [A, B], body), a, b)
    want = a.astype("int64") * 1000000 + a.view("uint32").astype("int64")
    np.testing.assert_array_equal(b, want)
