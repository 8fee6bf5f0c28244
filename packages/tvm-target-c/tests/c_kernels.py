"""Hand-built lowered TIR used by the c target tests (flat 1-D buffers, no blocks)."""

from __future__ import annotations

from tvm import tir
from tvm.tir import ForKind


def var(name, dtype="int32"):
    return tir.Var(name, dtype)


def prim_func(name, params, body, buffer_map=None, **attrs):
    return tir.PrimFunc(params, body, buffer_map=buffer_map or {},
                        attrs={"global_symbol": name, **attrs})


def unary_map(name, dtype, fn, n=None, kind=ForKind.SERIAL, out_dtype=None):
    """``B[i] = fn(A[i])`` over ``n`` elements (symbolic when n is None)."""
    size = var("n") if n is None else n
    a = tir.decl_buffer((size,), dtype, "A")
    b = tir.decl_buffer((size,), out_dtype or dtype, "B")
    pa, pb = var("A", "handle"), var("B", "handle")
    i = var("i")
    body = tir.For(i, 0, size, kind, tir.BufferStore(b, fn(a[i], i), (i,)))
    return prim_func(name, [pa, pb], body, {pa: a, pb: b})


def binary_map(name, dtype, fn, out_dtype=None):
    """``C[i] = fn(A[i], B[i])`` over a symbolic n."""
    n = var("n")
    a, b = tir.decl_buffer((n,), dtype, "A"), tir.decl_buffer((n,), dtype, "B")
    c = tir.decl_buffer((n,), out_dtype or dtype, "C")
    pa, pb, pc = var("A", "handle"), var("B", "handle"), var("C", "handle")
    i = var("i")
    body = tir.For(i, 0, n, ForKind.SERIAL, tir.BufferStore(c, fn(a[i], b[i]), (i,)))
    return prim_func(name, [pa, pb, pc], body, {pa: a, pb: b, pc: c})
