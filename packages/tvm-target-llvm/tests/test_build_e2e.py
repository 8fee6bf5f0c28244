"""End to end: block-level TIR -> tir.build(target="llvm") -> run and compare with numpy."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("llvmlite")
pytest.importorskip("tvm.target.llvm.plugin")

from tvm import tir  # noqa: E402
from tvm.ir.transform import PassContext  # noqa: E402
from tvm.tir import (  # noqa: E402
    LT, Block, BlockRealize, BufferRegion, BufferStore, FloatImm, For, ForKind, IntImm, IterVar,
    IterVarType, PrimFunc, Range, SizeVar, Var, decl_buffer,
)


def _root(body):
    return BlockRealize((), IntImm("bool", 1), Block((), (), (), "root", body))


def _func(params, buffers, body, name):
    return PrimFunc(params, _root(body), buffer_map=dict(zip(params, buffers)),
                    attrs={"global_symbol": name, "tir.noalias": True})


def matmul(n, m, k):
    A, B, C = decl_buffer((n, k), "float32", "A"), decl_buffer((k, m), "float32", "B"), \
        decl_buffer((n, m), "float32", "C")
    i, j, r = Var("i"), Var("j"), Var("k")
    vi, vj, vk = Var("vi"), Var("vj"), Var("vk")
    ivs = (IterVar(Range(0, n), vi), IterVar(Range(0, m), vj),
           IterVar(Range(0, k), vk, IterVarType.COMM_REDUCE))
    block = Block(ivs, (BufferRegion.full_region(A), BufferRegion.full_region(B)),
                  (BufferRegion.full_region(C),), "C",
                  BufferStore(C, C[vi, vj] + A[vi, vk] * B[vk, vj], (vi, vj)),
                  BufferStore(C, FloatImm("float32", 0.0), (vi, vj)))
    body = For(i, 0, n, body=For(j, 0, m, body=For(r, 0, k, body=BlockRealize((i, j, r), IntImm("bool", 1), block))))
    return _func([Var(x, "handle") for x in "abc"], [A, B, C], body, "matmul")


def scaled_add(n, lanes, outer_kind=ForKind.SERIAL):
    """``C[i] = A[i] * 2 + B[i]`` split by ``lanes``: a vectorized inner loop under a tail
    predicate."""
    A, B, C = (decl_buffer((n,), "float32", x) for x in "ABC")
    io, ii, vi = Var("io"), Var("ii"), Var("vi")
    store = BufferStore(C, A[vi] * FloatImm("float32", 2.0) + B[vi], (vi,))
    # The tail predicate is always written; Simplify proves it away when lanes divides n.
    realize = BlockRealize((io * lanes + ii,), LT(io * lanes + ii, n),
                           Block((IterVar(Range(0, n), vi),), (), (), "C", store))
    outer = (n + lanes - 1) // lanes
    body = For(io, 0, outer, outer_kind, For(ii, 0, lanes, ForKind.VECTORIZED, realize))
    return _func([Var(x, "handle") for x in "abc"], [A, B, C], body, "scaled_add")


def test_matmul_end_to_end():
    rt = tir.build(matmul(16, 12, 8), target="llvm")
    rng = np.random.default_rng(0)
    a, b = rng.random((16, 8), dtype=np.float32), rng.random((8, 12), dtype=np.float32)
    c = np.full((16, 12), np.nan, np.float32)  # init must overwrite garbage
    rt["matmul"](a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)


@pytest.mark.parametrize("outer_kind", [ForKind.SERIAL, ForKind.UNROLLED, ForKind.PARALLEL])
def test_vectorized_elementwise_end_to_end(outer_kind):
    rt = tir.build(scaled_add(64, 8, outer_kind), target="llvm")
    a = np.arange(64, dtype=np.float32)
    b = np.ones(64, np.float32)
    c = np.zeros(64, np.float32)
    rt["scaled_add"](a, b, c)
    np.testing.assert_allclose(c, a * 2 + 1)


def test_vector_code_reaches_llvm():
    rt = tir.build(scaled_add(64, 8), target="llvm")
    text = rt.get_source("ll")
    assert "<8 x float>" in text


def test_tail_predicate_falls_back_to_scalar_code():
    rt = tir.build(scaled_add(30, 8), target="llvm")  # 30 % 8: the guarded body stays serial
    a = np.arange(30, dtype=np.float32)
    c = np.zeros(30, np.float32)
    rt["scaled_add"](a, np.zeros(30, np.float32), c)
    np.testing.assert_allclose(c, a * 2)


def test_te_pipeline_with_intermediate_buffer():
    te = pytest.importorskip("tvm.te")
    A = te.placeholder((8, 4), name="A")
    B = te.placeholder((4, 6), name="B")
    k = te.reduce_axis((0, 4), name="k")
    C = te.compute((8, 6), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    D = te.compute((8, 6), lambda i, j: C[i, j] + 1.0, name="D")
    rt = tir.build(te.create_prim_func([A, B, D]), target="llvm", name="mm_plus_one")
    rng = np.random.default_rng(1)
    a, b = rng.random((8, 4), dtype=np.float32), rng.random((4, 6), dtype=np.float32)
    d = np.zeros((8, 6), np.float32)
    rt["mm_plus_one"](a, b, d)
    np.testing.assert_allclose(d, a @ b + 1.0, rtol=1e-5)


def test_symbolic_length_and_shape_check():
    n = SizeVar("n")
    A, B = decl_buffer((n,), "float32", "A"), decl_buffer((n,), "float32", "B")
    i, vi = Var("i"), Var("vi")
    realize = BlockRealize((i,), IntImm("bool", 1),
                           Block((IterVar(Range(0, n), vi),), (), (), "B",
                                 BufferStore(B, A[vi] + FloatImm("float32", 1.0), (vi,))))
    func = _func([Var("a", "handle"), Var("b", "handle")], [A, B], For(i, 0, n, body=realize), "inc")
    with PassContext(config={"ir.verify_after_each_pass": True}):
        rt = tir.build(func, target="llvm")
    for size in (1, 7, 33):
        a = np.arange(size, dtype=np.float32)
        b = np.zeros(size, np.float32)
        rt["inc"](a, b)
        np.testing.assert_allclose(b, a + 1)
    with pytest.raises(Exception, match="shape"):
        rt["inc"](np.zeros(4, np.float32), np.zeros(5, np.float32))
