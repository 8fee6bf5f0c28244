"""Vector expressions: contiguous ramps, gathers/scatters, broadcasts, shuffles; the vector
instructions that must appear in the assembly."""

from __future__ import annotations

import re

import numpy as np
import pytest
from llvm_test_utils import prim_func, run
from tvm import tir
from tvm.target.llvm import build, host_has_feature
from tvm.tir import Broadcast, For, ForKind, Ramp, Var, decl_buffer
from tvm.tir.stmt import BufferStore

HASWELL = "llvm -mtriple=x86_64-unknown-linux-gnu -mcpu=haswell"


def _axpy_x8(dtype: str = "float32", n: int = 64) -> tir.PrimFunc:
    A = decl_buffer((n,), dtype, "A")
    B = decl_buffer((n,), dtype, "B")
    C = decl_buffer((n,), dtype, "C")
    i = Var("i", "int32")
    idx = Ramp(i * 8, 1, 8)
    value = A[idx] * Broadcast(tir.const(2.0, dtype), 8) + B[idx]
    return prim_func("axpy8", [A, B, C], For(i, 0, n // 8, ForKind.SERIAL,
                                             BufferStore(C, value, (idx,))))


def test_contiguous_ramp_is_a_vector_load_and_store():
    f = _axpy_x8()
    mod = build(f)
    raw = mod.get_source("ll-raw")
    assert "load <8 x float>" in raw and "store <8 x float>" in raw
    a, b = np.arange(64, dtype="float32"), np.ones(64, "float32")
    c = np.zeros(64, "float32")
    mod["axpy8"](a, b, c)
    np.testing.assert_allclose(c, a * 2 + 1)


def test_float32x8_uses_ymm_avx2_instructions():
    # Code generation for a Haswell CPU works on any machine; the asm must use 256-bit ops.
    asm = build(_axpy_x8(), HASWELL).get_source("asm")
    assert re.search(r"\bv(fmadd\w*ps|addps|mulps)\b[^\n]*%ymm", asm), asm[:2000]


@pytest.mark.skipif(not host_has_feature("avx2"), reason="host CPU has no AVX2")
def test_host_build_uses_ymm():
    asm = build(_axpy_x8()).get_source("asm")
    assert "%ymm" in asm and re.search(r"\bv(fmadd\w*ps|addps)\b", asm)


def test_scalar_loop_is_auto_vectorized_for_the_host():
    n = tir.SizeVar("n", "int32")
    A = decl_buffer((n,), "float32", "A")
    B = decl_buffer((n,), "float32", "B")
    i = Var("i", "int32")
    f = prim_func("scale", [A, B], For(i, 0, n, ForKind.SERIAL,
                                       BufferStore(B, A[i] * 3.0 + 1.0, (i,))))
    asm = build(f, HASWELL).get_source("asm")
    assert "%ymm" in asm  # the loop vectorizer widened the loop


def test_gather_and_scatter_with_strided_ramps():
    n = 32
    A = decl_buffer((2 * n,), "float32", "A")
    B = decl_buffer((2 * n,), "float32", "B")
    i = Var("i", "int32")
    src = Ramp(i * 8, 2, 4)  # A[8i], A[8i+2], A[8i+4], A[8i+6]
    dst = Ramp(i * 8 + 1, 2, 4)  # B[8i+1], ...
    body = For(i, 0, (2 * n) // 8, ForKind.SERIAL, BufferStore(B, A[src] + 1.0, (dst,)))
    a = np.arange(2 * n, dtype="float32")
    b = np.zeros(2 * n, "float32")
    run(prim_func("gather", [A, B], body), a, b)
    ref = np.zeros(2 * n, "float32")
    for k in range(0, 2 * n, 8):
        ref[k + 1:k + 8:2] = a[k:k + 8:2] + 1
    np.testing.assert_array_equal(b, ref)


def test_vector_index_gather_and_int_vectors():
    A = decl_buffer((16,), "int32", "A")
    idx_buf = decl_buffer((16,), "int32", "I")
    B = decl_buffer((16,), "int32", "B")
    i = Var("i", "int32")
    lanes = Ramp(i * 4, 1, 4)
    body = For(i, 0, 4, ForKind.SERIAL,
               BufferStore(B, A[idx_buf[lanes]] * Broadcast(3, 4) - Ramp(0, 1, 4), (lanes,)))
    a = np.arange(100, 116, dtype="int32")
    perm = np.random.default_rng(0).permutation(16).astype("int32")
    b = np.zeros(16, "int32")
    run(prim_func("vgather", [A, idx_buf, B], body), a, perm, b)
    np.testing.assert_array_equal(b, a[perm] * 3 - np.tile(np.arange(4), 4))


def test_shuffle_and_vector_select():
    A = decl_buffer((8,), "float32", "A")
    B = decl_buffer((8,), "float32", "B")
    v = A[Ramp(0, 1, 8)]
    rev = tir.Shuffle("float32x8", (v,), tuple(tir.const(7 - k, "int32") for k in range(8)))
    picked = tir.Select(rev > Broadcast(tir.const(3.5, "float32"), 8), rev, Broadcast(
        tir.const(-1.0, "float32"), 8))
    body = BufferStore(B, picked, (Ramp(0, 1, 8),))
    a = np.arange(8, dtype="float32")
    b = np.zeros(8, "float32")
    run(prim_func("shuf", [A, B], body), a, b)
    r = a[::-1]
    np.testing.assert_array_equal(b, np.where(r > 3.5, r, -1))


def test_vectorized_loop_falls_back_to_serial():
    n = tir.SizeVar("n", "int32")
    A = decl_buffer((n,), "float64", "A")
    i = Var("i", "int32")
    body = For(i, 0, n, ForKind.VECTORIZED, BufferStore(A, A[i] * 2.0, (i,)))
    a = np.arange(13, dtype="float64")
    run(prim_func("vec_serial", [A], body), a)
    np.testing.assert_array_equal(a, np.arange(13) * 2.0)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "int8", "uint16"])
def test_vector_ops_on_narrow_types(dtype):
    from tvm.ffi.dtype import to_numpy_dtype

    A = decl_buffer((16,), dtype, "A")
    B = decl_buffer((16,), dtype, "B")
    i = Var("i", "int32")
    lanes = Ramp(i * 8, 1, 8)
    body = For(i, 0, 2, ForKind.SERIAL,
               BufferStore(B, A[lanes] + A[lanes], (lanes,)))
    a = np.arange(16).astype(to_numpy_dtype(dtype))
    b = np.zeros(16, to_numpy_dtype(dtype))
    run(prim_func(f"v_{dtype}", [A, B], body), a, b)
    np.testing.assert_array_equal(b.astype(np.float32), (a + a).astype(np.float32))


def test_noalias_removes_runtime_alias_checks():
    from llvm_test_utils import unary_func

    f = unary_func("scale", "float32", "float32", lambda x: x * 2.0 + 1.0)
    assert "noalias" in build(f, HASWELL).get_source("ll-raw")
    assert "vector.memcheck" not in build(f, HASWELL).get_source("ll")
    aliased = f.with_attr("tir.noalias", False)
    assert "vector.memcheck" in build(aliased, HASWELL).get_source("ll")


def test_vector_access_alignment_from_local_allocation():
    A = decl_buffer((64,), "float32", "A")
    T = decl_buffer((64,), "float32", "T")
    i = Var("i", "int32")
    lanes = Ramp(i * 8, 1, 8)
    body = tir.Allocate(T.data, "float32", (64,), tir.const(True), tir.stmt_seq(
        For(i, 0, 8, ForKind.SERIAL, BufferStore(T, A[lanes] * 2.0, (lanes,))),
        For(i, 0, 8, ForKind.SERIAL, BufferStore(A, T[lanes], (lanes,)))))
    mod = build(prim_func("aligned", [A], body))
    raw = mod.get_source("ll-raw")
    assert "store <8 x float>" in raw and ", align 32" in raw  # 8 lanes * 4 bytes, known
    assert "load <8 x float>" in raw and ", align 4" in raw  # argument: element alignment
    a = np.arange(64, dtype="float32")
    mod["aligned"](a)
    np.testing.assert_array_equal(a, np.arange(64) * 2)
