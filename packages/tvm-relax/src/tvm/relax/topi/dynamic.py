"""TIR for ``dynamic_strided_slice``: a plan function computing, from the run-time
``begin``/``end``/``strides`` tensors, each dimension's start, step and output length, and
the te slice that reads with them (its output shape is bound at run time)."""

from __future__ import annotations

from typing import Any, Sequence

from tvm import te
from tvm.tir import AssertStmt, BufferStore, LetStmt, PrimFunc, Var
from tvm.tir.expr import GT, LT, NE, Max, Min, PrimExpr, Select

from ._tir import FuncBuilder, fresh_shapes, i64, seq
from ._util import int64

__all__ = ["slice_plan_func", "dynamic_strided_slice"]


def slice_plan_func(
    shape: Sequence[Any], dtype: str, axes: Sequence[int], index_dtypes: Sequence[str],
) -> PrimFunc:
    """PrimFunc ``(x, begin, end, strides) -> (out_shape, starts, steps)`` (int64, one entry
    per dimension of ``x``) with numpy slicing rules along ``axes`` (negative bounds count
    from the end and are clamped; a zero stride is a run-time error)."""
    (shape,) = fresh_shapes(shape)
    ndim, k = len(shape), len(axes)
    fb = FuncBuilder()
    fb.arg(shape, dtype, "x")
    begin, end, strides = (fb.arg((i64(k),), dt, name) for dt, name in
                           zip(index_dtypes, ("begin", "end", "strides")))
    out_shape, starts, steps = (fb.arg((i64(ndim),), "int64", name)
                                for name in ("out_shape", "starts", "steps"))
    given = {a: j for j, a in enumerate(axes)}
    stmts = []
    for d in range(ndim):
        dim = int64(shape[d])
        if d not in given:
            stmts += [BufferStore(out_shape, dim, (i64(d),)), BufferStore(starts, i64(0), (i64(d),)),
                      BufferStore(steps, i64(1), (i64(d),))]
            continue
        j = i64(given[d])
        b, e, s = Var(f"b{d}", "int64"), Var(f"e{d}", "int64"), Var(f"s{d}", "int64")
        b_abs = Select(LT(b, i64(0)), b + dim, b)
        e_abs = Select(LT(e, i64(0)), e + dim, e)
        up = GT(s, i64(0))
        start = Select(up, Min(Max(b_abs, i64(0)), dim), Min(Max(b_abs, i64(-1)), dim - 1))
        stop = Select(up, Min(Max(e_abs, i64(0)), dim), Min(Max(e_abs, i64(-1)), dim - 1))
        bs, es = Var(f"start{d}", "int64"), Var(f"stop{d}", "int64")
        length = Select(up, (es - bs + s - 1) // s, (bs - es - s - 1) // (i64(0) - s))
        body = seq(BufferStore(out_shape, Max(length, i64(0)), (i64(d),)),
                   BufferStore(starts, bs, (i64(d),)), BufferStore(steps, s, (i64(d),)))
        body = LetStmt(bs, start, LetStmt(es, stop, body))
        body = AssertStmt(NE(s, i64(0)), f"dynamic_strided_slice: the stride of axis {d} is 0",
                          body)
        stmts.append(LetStmt(b, int64(begin[j]), LetStmt(e, int64(end[j]), LetStmt(
            s, int64(strides[j]), body))))
    return fb.finish(seq(*stmts))


def dynamic_strided_slice(x: te.Tensor, starts: te.Tensor, steps: te.Tensor,
                          out_shape: Sequence[PrimExpr]) -> te.Tensor:
    """``out[i] = x[starts + i * steps]`` (per dimension) of shape ``out_shape``."""
    def f(*idx: PrimExpr) -> PrimExpr:
        return x(*[starts(i64(d)) + int64(i) * steps(i64(d)) for d, i in enumerate(idx)])

    return te.compute(tuple(out_shape), f, name="dynamic_strided_slice")
