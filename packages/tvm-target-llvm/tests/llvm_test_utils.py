"""Helpers shared by the llvm target tests: hand-built lowered PrimFuncs."""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np
from tvm.ffi.dtype import to_numpy_dtype
from tvm.target.llvm import build
from tvm.tir import Buffer, For, ForKind, PrimFunc, SizeVar, Var, decl_buffer
from tvm.tir.stmt import BufferStore


def prim_func(name: str, params: Sequence[Any], body: Any, noalias: bool = True) -> PrimFunc:
    """A PrimFunc over ``params`` (Buffers become handle parameters bound in buffer_map)."""
    handles, bmap = [], {}
    for p in params:
        if isinstance(p, Buffer):
            h = Var(p.name, "handle")
            handles.append(h)
            bmap[h] = p
        else:
            handles.append(p)
    attrs = {"global_symbol": name, "tir.noalias": noalias}
    return PrimFunc(handles, body, buffer_map=bmap, attrs=attrs)


def unary_func(name: str, in_dtype: str, out_dtype: str, fn: Callable[[Any], Any],
               n: Any = None, kind: ForKind = ForKind.SERIAL) -> PrimFunc:
    """``B[i] = fn(A[i])`` over a symbolic length ``n``."""
    n = SizeVar("n", "int32") if n is None else n
    A = decl_buffer((n,), in_dtype, "A")
    B = decl_buffer((n,), out_dtype, "B")
    i = Var("i", "int32")
    body = For(i, 0, n, kind, BufferStore(B, fn(A[i]), (i,)))
    return prim_func(name, [A, B], body)


def binary_func(name: str, dtype: str, fn: Callable[[Any, Any], Any], out_dtype: str | None = None,
                n: Any = None) -> PrimFunc:
    """``C[i] = fn(A[i], B[i])``."""
    n = SizeVar("n", "int32") if n is None else n
    A = decl_buffer((n,), dtype, "A")
    B = decl_buffer((n,), dtype, "B")
    C = decl_buffer((n,), out_dtype or dtype, "C")
    i = Var("i", "int32")
    body = For(i, 0, n, ForKind.SERIAL, BufferStore(C, fn(A[i], B[i]), (i,)))
    return prim_func(name, [A, B, C], body)


def run(func: PrimFunc, *args: Any, target: Any = None) -> None:
    """Build ``func`` and call it on ``args`` (numpy arrays are written in place)."""
    mod = build(func, target)
    mod[func.attrs["global_symbol"]](*args)


def np_dtype(dtype: str) -> np.dtype:
    return to_numpy_dtype(dtype)
