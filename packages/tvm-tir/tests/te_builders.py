"""Builders for expected block-level TIR in the te tests, shaped like the TVMScript they stand for.

    with T.block("C"):                      block("C", [(S, 128, vi, i), (R, 64, vk, k)],
        vi, vk = T.axis.remap("SR", [i, k])        reads=[point(A, vi, vk)],
        T.reads(A[vi, vk])                          writes=[point(C, vi)],
        T.writes(C[vi])                             init=store(C, 0.0, vi),
        with T.init(): C[vi] = 0.0                  body=store(C, C[vi] + A[vi, vk], vi))
        C[vi] = C[vi] + A[vi, vk]
"""

from __future__ import annotations

from typing import Any, Sequence

from tvm import tir
from tvm.tir import (
    Block, BlockRealize, BufferRegion, BufferStore, For, ForKind, IterVar, IterVarType, PrimFunc,
    Range, Var, const,
)

S = IterVarType.DATA_PAR
R = IterVarType.COMM_REDUCE


def vars_(names: str, dtype: str = "int32") -> list[Var]:
    """``vars_("i j k")`` -> three int32 variables."""
    return [Var(n, dtype) for n in names.split()]


def point(buffer: tir.Buffer, *indices: Any) -> BufferRegion:
    """``A[vi, vk]`` in ``T.reads``: a point per index, a Range passes through."""
    return BufferRegion(
        buffer, tuple(i if isinstance(i, Range) else Range(tir.convert(i), 1) for i in indices)
    )


def store(buffer: tir.Buffer, value: Any, *indices: Any) -> BufferStore:
    if not isinstance(value, tir.PrimExpr):
        value = const(value, buffer.dtype)
    return BufferStore(buffer, value, tuple(indices))


def grid(loops: Sequence[tuple], body: Any) -> Any:
    """Nested serial loops; each loop is ``(var, extent)`` or ``(var, min, extent)``."""
    for loop in reversed(loops):
        if len(loop) == 2:
            var, lo, extent = loop[0], 0, loop[1]
        else:
            var, lo, extent = loop
        body = For(var, lo, extent, ForKind.SERIAL, body)
    return body


def block(
    name: str,
    iters: Sequence[tuple],
    body: Any,
    reads: Sequence[BufferRegion] = (),
    writes: Sequence[BufferRegion] = (),
    init: Any = None,
    alloc: Sequence[tir.Buffer] = (),
    annotations: dict | None = None,
) -> BlockRealize:
    """A realized block; each iter is ``(kind, extent_or_range, block_var, binding)``."""
    iter_vars, values = [], []
    for kind, dom, var, binding in iters:
        rng = dom if isinstance(dom, Range) else Range(0, dom)
        iter_vars.append(IterVar(rng, var, kind))
        values.append(binding)
    blk = Block(tuple(iter_vars), tuple(reads), tuple(writes), name, body, init, tuple(alloc),
                annotations=annotations or {})
    return BlockRealize(tuple(values), const(True), blk)


def root(*stmts: Any, alloc: Sequence[tir.Buffer] = ()) -> BlockRealize:
    body = tir.stmt_seq(*stmts)
    return BlockRealize((), const(True), Block((), (), (), "root", body, None, tuple(alloc)))


def prim_func(args: Sequence[Any], body: Any, **extra_attrs: Any) -> PrimFunc:
    """Parameters in order: a buffer becomes a handle parameter bound in the buffer map."""
    params, buffer_map = [], {}
    for arg in args:
        if isinstance(arg, tir.Buffer):
            handle = Var(arg.name, "handle")
            params.append(handle)
            buffer_map[handle] = arg
        else:
            params.append(arg)
    attrs = {"global_symbol": "main", "tir.noalias": True, **extra_attrs}
    return PrimFunc(params, body, buffer_map=buffer_map, attrs=attrs)
