"""TIR for operators whose output sizes depend on the data: ``nonzero`` and ``unique``.

Each runs in two steps.  A first kernel computes everything at a size known beforehand
(``unique``: values, first indices and counts padded to the number of input slices) and
the number of results, an int64 tensor of shape (1,).  The VM reads that number into a
shape (``vm.builtin.tensor_to_shape``), ``match_cast`` binds it to a fresh symbolic
variable, and a second kernel (:func:`crop`, or ``nonzero``'s fill) writes the result at
its final size.  :func:`merge_sort` is the stable merge sort of an index buffer shared with
``non_max_suppression`` (:mod:`.nms`).  Loop flags (and bool values being compared) are
:data:`FLAG_DTYPE` scalars, a type every target has (WGSL has no 8-bit integers).
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

from tvm import te
from tvm.tir import BufferStore, For, IfThenElse, LetStmt, PrimFunc, Stmt, Var, While
from tvm.tir import op as tir_op
from tvm.tir.expr import EQ, LT, NE, And, Min, Not, Or, PrimExpr

from ._tir import FuncBuilder, Scalar, fresh_shapes, i64, loop_nest, seq
from ._util import cast, int64, is_bool, is_float, prod

__all__ = ["merge_sort", "nonzero_count", "nonzero_func", "unique_func", "crop",
           "less_than", "equal_to", "FLAG_DTYPE"]

#: the dtype of the kernels' 0/1 flags
FLAG_DTYPE = "int32"

# comparator: (a, b) element ids -> (statement to run first or None, bool "a < b")
Comparator = Callable[[PrimExpr, PrimExpr], "tuple[Optional[Stmt], PrimExpr]"]


def _compare_dtype(dtype: str) -> str:
    """The dtype values are compared in (low-precision floats widen exactly to float32)."""
    if is_float(dtype) and dtype not in ("float32", "float64"):
        return "float32"
    return FLAG_DTYPE if is_bool(dtype) else dtype


def less_than(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    """``a < b`` with NaN after every number (numpy's sort order)."""
    if not is_float(a.dtype):
        return LT(a, b)
    return Or(LT(a, b), And(tir_op.isnan(b), Not(tir_op.isnan(a))))


def equal_to(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    """``a == b`` with NaN equal to NaN (numpy ``unique``'s ``equal_nan``)."""
    if not is_float(a.dtype):
        return EQ(a, b)
    return Or(EQ(a, b), And(tir_op.isnan(a), tir_op.isnan(b)))


def merge_sort(fb: FuncBuilder, perm: Any, n: PrimExpr, less: Comparator,
               capacity: PrimExpr, name: str = "sort") -> Stmt:
    """Stably sort the ids ``perm[0:n]`` by ``less`` (bottom-up merges of width 1, 2, 4...).

    ``capacity`` is ``perm``'s length (the scratch buffer's size); ``n`` may be computed at
    run time (it is read once).  An element moves before an earlier one only when
    ``less(later, earlier)`` holds, so equal elements keep their order.
    """
    tmp = fb.local((capacity,), "int64", f"{name}_tmp")
    width, left, right = (fb.scalar("int64", f"{name}_{s}") for s in ("width", "left", "right"))
    count, w = Var(f"{name}_n", "int64"), Var(f"{name}_w", "int64")
    lo, mid, hi = (Var(f"{name}_{s}", "int64") for s in ("lo", "mid", "hi"))
    blk, kk, c = (Var(f"{name}_{s}", "int64") for s in ("b", "k", "c"))

    def take(side: Scalar) -> Stmt:
        return seq(BufferStore(tmp, perm[side.value], (kk,)), side.set(side.value + 1))

    prelude, right_first = less(perm[right.value], perm[left.value])
    pick = IfThenElse(right_first, take(right), take(left))
    if prelude is not None:
        pick = seq(prelude, pick)
    step = IfThenElse(LT(right.value, hi), IfThenElse(LT(left.value, mid), pick, take(right)),
                      take(left))
    merge = seq(left.set(lo), right.set(mid), For(kk, lo, hi - lo, body=step))
    blocks = For(blk, i64(0), (count + 2 * w - 1) // (2 * w), body=LetStmt(
        lo, blk * 2 * w, LetStmt(mid, Min(lo + w, count), LetStmt(
            hi, Min(lo + 2 * w, count), merge))))
    copy_back = For(c, i64(0), count, body=BufferStore(perm, tmp[c], (c,)))
    one_pass = LetStmt(w, width.value, seq(blocks, copy_back, width.set(w * 2)))
    return LetStmt(count, n, seq(width.set(i64(1)), While(LT(width.value, count), one_pass)))


# -- nonzero -----------------------------------------------------------------------------------
def nonzero_count(x: te.Tensor) -> te.Tensor:
    """The number of non-zero elements of ``x`` as an int64 tensor of shape (1,)."""
    def nonzero(*idx: Any) -> PrimExpr:
        return cast(NE(x(*idx), cast(0, x.dtype)), "int64")

    if x.ndim == 0:
        return te.compute((1,), lambda _: nonzero(), name="nonzero_count")
    axes = [te.reduce_axis((0, d), name=f"k{i}") for i, d in enumerate(x.shape)]
    return te.compute((1,), lambda _: te.sum(nonzero(*axes), axis=axes), name="nonzero_count")


def nonzero_func(shape: Sequence[Any], dtype: str) -> PrimFunc:
    """PrimFunc ``(x, out)``: the coordinates of ``x``'s non-zero elements in row-major
    order into ``out`` (int64, (ndim, count), count given by :func:`nonzero_count`)."""
    (shape,) = fresh_shapes(shape)
    fb = FuncBuilder()
    x = fb.arg(shape, dtype, "x")
    out = fb.arg((i64(len(shape)), Var("count", "int64")), "int64", "out")
    pos = fb.scalar("int64", "pos")

    def body(idx: list) -> Stmt:
        writes = [BufferStore(out, i, (i64(d), pos.value)) for d, i in enumerate(idx)]
        return IfThenElse(NE(x[tuple(idx)], cast(0, dtype)),
                          seq(*writes, pos.set(pos.value + 1)))

    return fb.finish(seq(pos.set(i64(0)), loop_nest(shape, body)))


# -- unique ------------------------------------------------------------------------------------
def unique_func(shape: Sequence[Any], dtype: str, axis: Optional[int], is_sorted: bool,
                equal_nan: bool = True) -> PrimFunc:
    """PrimFunc ``(x, values, first, inverse, counts, num)`` of ONNX Unique.

    The input is seen as ``m`` rows: its elements (``axis`` None) or its slices along
    ``axis``, each of ``r`` elements in row-major order.  The rows are stably sorted
    (lexicographically, NaN last), equal neighbours form groups (NaN equal to NaN when
    ``equal_nan``, else every NaN apart), and the
    groups are numbered in sorted order or, when not ``is_sorted``, in order of first
    occurrence.  ``values`` (``x``'s shape with ``m`` slices along ``axis``, or (m,)),
    ``first`` and ``counts`` (m,) hold the group results in their first ``num[0]`` slots;
    ``inverse`` (m,) maps every row to its group.
    """
    (shape,) = fresh_shapes(shape)
    fb = FuncBuilder()
    x = fb.arg(shape, dtype, "x")
    flat = axis is None
    m = prod(shape) if flat else int64(shape[axis])
    others = [] if flat else [d for k, d in enumerate(shape) if k != axis]
    r = prod(others) if others else i64(1)
    values = fb.arg((m,) if flat else shape, dtype, "values")
    first, inverse, counts = (fb.arg((m,), "int64", nm) for nm in ("first", "inverse", "counts"))
    num = fb.arg((i64(1),), "int64", "num")
    cdt = _compare_dtype(dtype)
    rows = fb.local((m * r,), cdt, "rows")          # row i, element t at i * r + t
    perm = fb.local((m,), "int64", "perm")          # sorted position -> row
    group = fb.local((m,), "int64", "group")        # row -> group (in sorted order)
    first_row = fb.local((m,), "int64", "first_row")  # group -> its first row
    size = fb.local((m,), "int64", "size")          # group -> its number of rows
    rank = fb.local((m,), "int64", "rank")          # group -> output slot
    ngroups, nxt = fb.scalar("int64", "ngroups"), fb.scalar("int64", "next")

    # rows <- x
    def copy_row(idx: list) -> Stmt:
        if flat:
            lin = _linear(idx, shape)
            return BufferStore(rows, cast(x[tuple(idx)], cdt), (lin,))
        rest = [i for k, i in enumerate(idx) if k != axis]
        lin = int64(idx[axis]) * r + _linear(rest, others)
        return BufferStore(rows, cast(x[tuple(idx)], cdt), (lin,))

    stmts = [loop_nest(shape, copy_row)]
    i = Var("i", "int64")
    stmts.append(For(i, i64(0), m, body=BufferStore(perm, i, (i,))))
    stmts.append(merge_sort(fb, perm, m, _row_less(fb, rows, r, flat), m, "rowsort"))

    # groups of equal neighbours in sorted order
    p = Var("p", "int64")
    row, prev = perm[p], perm[p - 1]
    same = fb.scalar(FLAG_DTYPE, "same")
    new_group = seq(BufferStore(first_row, row, (ngroups.value,)),
                    BufferStore(size, i64(0), (ngroups.value,)),
                    ngroups.set(ngroups.value + 1))
    g = ngroups.value - 1
    scan = seq(
        same.set(cast(0, FLAG_DTYPE)),
        IfThenElse(LT(i64(0), p), _rows_equal(fb, rows, r, flat, row, prev, same,
                                              equal_to if equal_nan else EQ)),
        IfThenElse(EQ(same.value, cast(0, FLAG_DTYPE)), new_group),
        BufferStore(group, g, (row,)),
        BufferStore(size, size[g] + 1, (g,)),
    )
    stmts += [ngroups.set(i64(0)), For(p, i64(0), m, body=scan)]

    # output slot of each group
    q = Var("q", "int64")
    if is_sorted:
        stmts.append(For(q, i64(0), ngroups.value, body=BufferStore(rank, q, (q,))))
    else:  # walk the rows in input order: a group's first row gives it the next slot
        gi = group[q]
        stmts += [nxt.set(i64(0)), For(q, i64(0), m, body=IfThenElse(
            EQ(first_row[gi], q), seq(BufferStore(rank, nxt.value, (gi,)),
                                      nxt.set(nxt.value + 1))))]

    # results
    gv = Var("g", "int64")
    slot, src = rank[gv], first_row[gv]
    if flat:
        copy_value = BufferStore(values, cast(rows[src], dtype), (slot,))
    else:
        def copy_slice(rest: list) -> Stmt:
            dst, srci = list(rest), list(rest)
            dst.insert(axis, slot)
            srci.insert(axis, src)
            return BufferStore(values, x[tuple(srci)], tuple(dst))

        copy_value = loop_nest(others, copy_slice, prefix="j")
    stmts.append(For(gv, i64(0), ngroups.value, body=seq(
        copy_value, BufferStore(first, src, (slot,)), BufferStore(counts, size[gv], (slot,)))))
    each = Var("row", "int64")
    stmts.append(For(each, i64(0), m, body=BufferStore(inverse, rank[group[each]], (each,))))
    stmts.append(BufferStore(num, ngroups.value, (i64(0),)))
    return fb.finish(seq(*stmts))


def _linear(idx: Sequence[Any], shape: Sequence[Any]) -> PrimExpr:
    """Row-major position of ``idx`` in ``shape``."""
    out: PrimExpr = i64(0)
    for i, d in zip(idx, shape):
        out = out * int64(d) + int64(i)
    return out


def _row_less(fb: FuncBuilder, rows: Any, r: PrimExpr, flat: bool) -> Comparator:
    """Lexicographic ``row a < row b``."""
    if flat:
        return lambda a, b: (None, less_than(rows[a], rows[b]))
    t, go, res = (fb.scalar(dt, nm) for dt, nm in
                  (("int64", "cmp_t"), (FLAG_DTYPE, "cmp_go"), (FLAG_DTYPE, "cmp_lt")))

    def less(a: PrimExpr, b: PrimExpr) -> tuple[Stmt, PrimExpr]:
        at, bt = rows[a * r + t.value], rows[b * r + t.value]
        first_diff = _first_difference(t, go, r, at, bt)
        decide = seq(res.set(cast(0, FLAG_DTYPE)), IfThenElse(
            LT(t.value, r), res.set(cast(less_than(at, bt), FLAG_DTYPE))))
        return seq(first_diff, decide), NE(res.value, cast(0, FLAG_DTYPE))

    return less


def _first_difference(t: Scalar, go: Scalar, r: PrimExpr, at: PrimExpr, bt: PrimExpr,
                      equal: Callable[[PrimExpr, PrimExpr], PrimExpr] = equal_to) -> Stmt:
    """``t`` <- the first element position where two rows differ (``r`` if none)."""
    return seq(
        t.set(i64(0)), go.set(cast(LT(i64(0), r), FLAG_DTYPE)),
        While(NE(go.value, cast(0, FLAG_DTYPE)), IfThenElse(
            equal(at, bt),
            seq(t.set(t.value + 1), go.set(cast(LT(t.value, r), FLAG_DTYPE))),
            go.set(cast(0, FLAG_DTYPE)))))


def _rows_equal(fb: FuncBuilder, rows: Any, r: PrimExpr, flat: bool, a: PrimExpr,
                b: PrimExpr, out: Scalar,
                equal: Callable[[PrimExpr, PrimExpr], PrimExpr] = equal_to) -> Stmt:
    """``out`` <- 1 when rows ``a`` and ``b`` are equal (elements compared by ``equal``)."""
    if flat:
        return out.set(cast(equal(rows[a], rows[b]), FLAG_DTYPE))
    t, go = fb.scalar("int64", "eq_t"), fb.scalar(FLAG_DTYPE, "eq_go")
    at, bt = rows[a * r + t.value], rows[b * r + t.value]
    return seq(_first_difference(t, go, r, at, bt, equal),
               out.set(cast(EQ(t.value, r), FLAG_DTYPE)))


# -- crop --------------------------------------------------------------------------------------
def crop(t: te.Tensor, axis: int, size: PrimExpr, name: str = "crop") -> te.Tensor:
    """The first ``size`` entries of ``t`` along ``axis``."""
    shape = list(t.shape)
    shape[axis] = size
    return te.compute(tuple(shape), lambda *idx: t(*idx), name=name)
