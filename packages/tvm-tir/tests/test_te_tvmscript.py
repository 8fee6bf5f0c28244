"""te.create_prim_func against the same computation written in TVMScript.

Skipped until the TVMScript parser (``tvm.script.tir.prim_func``) is available.
"""

from __future__ import annotations

import pytest

from tvm import te, tir
from tvm.ffi import assert_structural_equal

T = pytest.importorskip("tvm.script.tir")
if not hasattr(T, "prim_func"):
    pytest.skip("the TVMScript parser (T.prim_func) is not available", allow_module_level=True)


def check(func, expected):
    # Function attributes are checked by test_te_create_prim_func; here the program itself.
    assert_structural_equal(func, expected.with_fields(attrs=func.attrs))


def test_matmul_matches_tvmscript():
    @T.prim_func
    def expected(A: T.Buffer((16, 4), "float32"), B: T.Buffer((4, 8), "float32"),
                 C: T.Buffer((16, 8), "float32")):
        for i, j, k in T.grid(16, 8, 4):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                T.reads(A[vi, vk], B[vk, vj])
                T.writes(C[vi, vj])
                with T.init():
                    C[vi, vj] = T.float32(0)
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]

    A = te.placeholder((16, 4), name="A")
    B = te.placeholder((4, 8), name="B")
    k = te.reduce_axis((0, 4), name="k")
    C = te.compute((16, 8), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    check(te.create_prim_func([A, B, C]), expected)


def test_broadcast_add_with_intermediate_matches_tvmscript():
    @T.prim_func
    def expected(A: T.Buffer((4, 8), "float32"), B: T.Buffer((8,), "float32"),
                 D: T.Buffer((4, 8), "float32")):
        C = T.alloc_buffer((4, 8), "float32")
        for i, j in T.grid(4, 8):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                T.reads(A[vi, vj], B[vj])
                T.writes(C[vi, vj])
                C[vi, vj] = A[vi, vj] + B[vj]
        for i, j in T.grid(4, 8):
            with T.block("D"):
                vi, vj = T.axis.remap("SS", [i, j])
                T.reads(C[vi, vj])
                T.writes(D[vi, vj])
                D[vi, vj] = C[vi, vj] * T.float32(2)

    A = te.placeholder((4, 8), name="A")
    B = te.placeholder((8,), name="B")
    C = te.compute((4, 8), lambda i, j: A[i, j] + B[j], name="C")
    D = te.compute((4, 8), lambda i, j: C[i, j] * 2.0, name="D")
    check(te.create_prim_func([A, B, D]), expected)


def test_reduction_with_where_matches_tvmscript():
    @T.prim_func
    def expected(A: T.Buffer((8, 8), "float32"), B: T.Buffer((8,), "float32")):
        for i, k in T.grid(8, 8):
            with T.block("B"):
                vi, vk = T.axis.remap("SR", [i, k])
                T.reads(A[vi, vk])
                T.writes(B[vi])
                with T.init():
                    B[vi] = T.float32(0)
                if vk > vi:
                    B[vi] = B[vi] + A[vi, vk]

    A = te.placeholder((8, 8), name="A")
    k = te.reduce_axis((0, 8), name="k")
    B = te.compute((8,), lambda i: te.sum(A[i, k], axis=k, where=k > i), name="B")
    check(te.create_prim_func([A, B]), expected)


def test_padding_stage_matches_tvmscript():
    @T.prim_func
    def expected(A: T.Buffer((6,), "float32"), P: T.Buffer((8,), "float32")):
        for i in range(8):
            with T.block("P"):
                vi = T.axis.spatial(8, i)
                T.reads(A[vi - 1])
                T.writes(P[vi])
                P[vi] = T.if_then_else(vi >= 1 and vi < 7, A[vi - 1], T.float32(0))

    A = te.placeholder((6,), name="A")
    P = te.compute((8,), lambda i: te.if_then_else(tir.all(i >= 1, i < 7), A[i - 1], 0.0),
                   name="P")
    check(te.create_prim_func([A, P]), expected)


def test_symbolic_shape_matches_tvmscript():
    @T.prim_func
    def expected(a: T.handle, b: T.handle):
        n = T.int32()
        A = T.match_buffer(a, (n, 4), "float32")
        B = T.match_buffer(b, (n, 4), "float32")
        for i, j in T.grid(n, 4):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                T.reads(A[vi, vj])
                T.writes(B[vi, vj])
                B[vi, vj] = A[vi, vj] * T.float32(2)

    n = te.var("n")
    A = te.placeholder((n, 4), name="A")
    B = te.compute((n, 4), lambda i, j: A[i, j] * 2.0, name="B")
    check(te.create_prim_func([A, B]), expected)
