"""``scatter_elements`` as a hand-written TIR PrimFunc: copy, then apply every update in order."""

from __future__ import annotations

from typing import Any, Sequence

from tvm.tir import BufferStore, PrimFunc
from tvm.tir.expr import LT, Max, Min, Select

from ._tir import FuncBuilder, fresh_shapes, i64, loop_nest, seq
from ._util import int64

__all__ = ["scatter_elements_func"]

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
    ``update``; negative indices count from the end)."""
    combine = _COMBINE[reduction]
    shape, index_shape = fresh_shapes(shape, index_shape)
    fb = FuncBuilder()
    data = fb.arg(shape, dtype, "data")
    indices = fb.arg(index_shape, index_dtype, "indices")
    updates = fb.arg(index_shape, dtype, "updates")
    out = fb.arg(shape, dtype, "out")
    copy = loop_nest(shape, lambda i: BufferStore(out, data[tuple(i)], tuple(i)))

    def apply(p: list) -> Any:
        raw = int64(indices[tuple(p)])
        pos = Select(LT(raw, i64(0)), raw + int64(shape[axis]), raw)
        dst = list(p)
        dst[axis] = pos
        return BufferStore(out, combine(out[tuple(dst)], updates[tuple(p)]), tuple(dst))

    return fb.finish(seq(copy, loop_nest(index_shape, apply, prefix="p")))
