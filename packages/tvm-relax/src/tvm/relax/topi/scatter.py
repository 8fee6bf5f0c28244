"""``scatter_elements`` and ``scatter_nd`` as hand-written TIR PrimFuncs: copy, then apply
every update in order."""

from __future__ import annotations

from typing import Any, Sequence

from tvm.tir import BufferStore, PrimFunc
from tvm.tir.expr import Max, Min

from ._tir import FuncBuilder, fresh_shapes, i64, loop_nest, seq
from ._util import checked_index

__all__ = ["scatter_elements_func", "scatter_nd_func"]

_COMBINE = {
    "update": lambda old, new: new,
    "add": lambda old, new: old + new,
    "mul": lambda old, new: old * new,
    "min": Min,
    "max": Max,
}


def scatter_elements_func(
    shape: Sequence[Any], dtype: str, index_shape: Sequence[Any], index_dtype: str,
    axis: int, reduction: str = "update",
) -> PrimFunc:
    """``out = data``; then for each position ``p`` of ``indices``:
    ``out[p with p[axis] = indices[p]] = combine(old, updates[p])`` (later updates win for
    ``update``; negative indices count from the end, others out of range fail the kernel)."""
    combine = _COMBINE[reduction]
    shape, index_shape = fresh_shapes(shape, index_shape)
    fb = FuncBuilder()
    data = fb.arg(shape, dtype, "data")
    indices = fb.arg(index_shape, index_dtype, "indices")
    updates = fb.arg(index_shape, dtype, "updates")
    out = fb.arg(shape, dtype, "out")
    copy = loop_nest(shape, lambda i: BufferStore(out, data[tuple(i)], tuple(i)))

    def apply(p: list) -> Any:
        pos = checked_index(indices[tuple(p)], shape[axis], "scatter_elements", axis)
        dst = list(p)
        dst[axis] = pos
        return BufferStore(out, combine(out[tuple(dst)], updates[tuple(p)]), tuple(dst))

    return fb.finish(seq(copy, loop_nest(index_shape, apply, prefix="p")))


def scatter_nd_func(
    shape: Sequence[Any], dtype: str, index_shape: Sequence[Any], index_dtype: str,
    reduction: str = "update",
) -> PrimFunc:
    """``out = data``; then for each position ``p`` of ``indices[..., :]`` (last axis of
    length ``k``) and each trailing position ``t``: ``out[indices[p], t] =
    combine(old, updates[p, t])`` (ONNX ScatterND; negative indices count from the end)."""
    shape, index_shape = fresh_shapes(shape, index_shape)
    k = int(index_shape[-1])
    outer, trailing = list(index_shape[:-1]), list(shape[k:])
    combine = _COMBINE[reduction]
    fb = FuncBuilder()
    data = fb.arg(shape, dtype, "data")
    indices = fb.arg(index_shape, index_dtype, "indices")
    updates = fb.arg((*outer, *trailing), dtype, "updates")
    out = fb.arg(shape, dtype, "out")
    copy = loop_nest(shape, lambda i: BufferStore(out, data[tuple(i)], tuple(i)))

    def apply(p: list) -> Any:
        head = []
        for j in range(k):
            head.append(checked_index(indices[(*p, i64(j))], shape[j], "scatter_nd", j))

        def store(t: list) -> Any:
            dst = (*head, *t)
            return BufferStore(out, combine(out[dst], updates[(*p, *t)]), dst)

        return loop_nest(trailing, store, prefix="t")

    return fb.finish(seq(copy, loop_nest(outer, apply, prefix="p")))
