"""sort / argsort / topk as a hand-written TIR PrimFunc: a stable bottom-up merge sort.

Each slice along the sorted axis sorts a permutation of positions (merge passes of width
1, 2, 4, ... between two index buffers), then gathers the values and/or positions of the
first ``k`` entries.  Ties keep their original order in both directions.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

from tvm.tir import BufferStore, For, LetStmt, PrimFunc, Var
from tvm.tir.expr import GT, LT, Min

from ._tir import FuncBuilder, fresh_shapes, i64, if_then, loop_nest, seq, while_loop
from ._util import cast, int64

__all__ = ["sort_func"]


def sort_func(
    shape: Sequence[Any],
    dtype: str,
    axis: int,
    descending: bool = False,
    outputs: str = "values",
    k: Optional[int] = None,
    index_dtype: str = "int64",
) -> PrimFunc:
    """Sort ``x`` (``shape``, ``dtype``) along ``axis``.

    ``outputs``: ``"values"``, ``"indices"`` or ``"both"`` (values first); ``k`` keeps only
    the first ``k`` sorted entries (topk).  Positions are written as ``index_dtype``.
    """
    (shape,) = fresh_shapes(shape)
    fb = FuncBuilder()
    x = fb.arg(shape, dtype, "data")
    n = int64(shape[axis])
    count = n if k is None else i64(k)
    out_shape = list(shape)
    out_shape[axis] = count
    values = fb.arg(out_shape, dtype, "values") if outputs in ("values", "both") else None
    indices = fb.arg(out_shape, index_dtype, "indices") if outputs in ("indices", "both") else None
    perm = fb.local((n,), "int64", "perm")
    tmp = fb.local((n,), "int64", "perm_tmp")
    width = fb.scalar("int64", "width")
    left = fb.scalar("int64", "left")
    right = fb.scalar("int64", "right")
    outer_extents = [d for a, d in enumerate(shape) if a != axis]

    def slice_body(outer: list) -> Any:
        def at(pos: Any) -> Any:
            idx = list(outer)
            idx.insert(axis, pos)
            return x[tuple(idx)]

        def take(dst: Any, side: Any) -> Any:
            return seq(BufferStore(tmp, perm[side.value], (dst,)), side.set(side.value + 1))

        def merge_step(kk: Var, mid: Var, hi: Var) -> Any:
            r_wins = GT(at(perm[right.value]), at(perm[left.value])) if descending else \
                LT(at(perm[right.value]), at(perm[left.value]))
            both = if_then(r_wins, take(kk, right), take(kk, left))
            return if_then(
                LT(right.value, hi),
                if_then(LT(left.value, mid), both, take(kk, right)),
                take(kk, left),
            )

        def merge_pass() -> Any:
            b, w = Var("b", "int64"), Var("w", "int64")
            lo, mid, hi = Var("lo", "int64"), Var("mid", "int64"), Var("hi", "int64")
            kk = Var("k", "int64")
            merge = seq(
                left.set(lo), right.set(mid),
                For(kk, lo, hi - lo, body=merge_step(kk, mid, hi)),
            )
            blocks = For(b, i64(0), (n + 2 * w - 1) // (2 * w), body=LetStmt(
                lo, b * 2 * w, LetStmt(mid, Min(lo + w, n), LetStmt(hi, Min(lo + 2 * w, n), merge))))
            c = Var("c", "int64")
            copy_back = For(c, i64(0), n, body=BufferStore(perm, tmp[c], (c,)))
            return LetStmt(w, width.value, seq(blocks, copy_back, width.set(w * 2)))

        i = Var("i", "int64")
        init = For(i, i64(0), n, body=BufferStore(perm, i, (i,)))
        j = Var("j", "int64")
        out_idx = list(outer)
        out_idx.insert(axis, j)
        writes = []
        if values is not None:
            writes.append(BufferStore(values, at(perm[j]), tuple(out_idx)))
        if indices is not None:
            writes.append(BufferStore(indices, cast(perm[j], index_dtype), tuple(out_idx)))
        gather = For(j, i64(0), count, body=seq(*writes))
        return seq(init, width.set(i64(1)), while_loop(LT(width.value, n), merge_pass()), gather)

    return fb.finish(loop_nest(outer_extents, slice_body))
