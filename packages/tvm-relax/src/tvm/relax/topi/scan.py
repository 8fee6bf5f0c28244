"""Cumulative sum / product / log-sum-exp along an axis, as a hand-written TIR PrimFunc (a
serial scan)."""

from __future__ import annotations

import math
from typing import Any, Optional, Sequence

from tvm import tir
from tvm.tir import BufferStore, For, PrimFunc, Var
from tvm.tir.expr import EQ, Select

from ._tir import FuncBuilder, fresh_shapes, i64, loop_nest, seq
from ._util import cast, prod
from .transform import unravel_index

__all__ = ["scan_func"]


def scan_func(
    shape: Sequence[Any],
    dtype: str,
    out_dtype: str,
    axis: Optional[int],
    kind: str = "sum",
    exclusive: bool = False,
) -> PrimFunc:
    """``out = cumsum(x, axis)`` (``kind`` "sum"; "prod": cumprod, "logaddexp":
    logcumsumexp): ``x`` of ``shape``/``dtype``.

    ``axis=None`` scans the flattened input (the output is 1-d).  ``exclusive`` shifts the
    result by one (the first element is the identity).
    """
    (shape,) = fresh_shapes(shape)
    fb = FuncBuilder()
    x = fb.arg(shape, dtype, "x")
    flat = axis is None
    out_shape = (prod(shape),) if flat else tuple(shape)
    out = fb.arg(out_shape, out_dtype, "out")
    acc = fb.scalar(out_dtype, "acc")
    identity = (tir.neg_infinity(out_dtype) if kind == "logaddexp"
                else cast(0 if kind == "sum" else 1, out_dtype))
    scan_axis = 0 if flat else axis
    outer_extents = [d for k, d in enumerate(out_shape) if k != scan_axis]

    def combine(a: Any, b: Any) -> Any:
        if kind == "logaddexp":
            return _logaddexp(a, b)
        return a + b if kind == "sum" else a * b

    def body(outer: list) -> Any:
        def step(j: Any) -> Any:
            idx = list(outer)
            idx.insert(scan_axis, j)
            src = unravel_index(j, shape) if flat else idx
            value = cast(x[tuple(src)], out_dtype)
            if exclusive:
                return seq(out_store(idx, acc.value), acc.set(combine(acc.value, value)))
            return seq(acc.set(combine(acc.value, value)), out_store(idx, acc.value))

        j = Var("j", "int64")
        return seq(acc.set(identity), For(j, i64(0), out_shape[scan_axis], body=step(j)))

    def out_store(idx: list, value: Any) -> Any:
        return BufferStore(out, value, tuple(idx))

    return fb.finish(loop_nest(outer_extents, body))


def _logaddexp(a: Any, b: Any) -> Any:
    """``log(exp(a) + exp(b))``: ``max + log1p(exp(-|a - b|))``, exact for -inf and for
    equal operands (``inf`` with ``inf`` too); NaN propagates."""
    ninf = tir.neg_infinity(a.dtype)
    both = a + cast(math.log(2.0), a.dtype)
    mixed = tir.Max(a, b) + tir.op.log1p(tir.exp(cast(0, a.dtype) - tir.abs(a - b)))
    return Select(EQ(a, ninf), b, Select(EQ(b, ninf), a, Select(EQ(a, b), both, mixed)))
