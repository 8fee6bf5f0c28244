"""Converters that create tensors: ``full`` and its family (zeros/ones/empty, ``*_like``,
``new_*``), ``arange``, ``eye``, ``scalar_tensor``, ``fill``.

Sizes may be symbolic.  ``empty*`` tensors are uninitialised in torch; they are created as
zeros here (any value is a correct one, zeros make the result deterministic).
"""

from __future__ import annotations

from typing import Any, Optional

from tvm.tir.expr import PrimExpr

from ... import op as _op
from .common import NodeContext, converter
from .ops_tensor import _check_layout


def _fill_value(ctx: NodeContext, value: Any, dtype: str) -> Any:
    if isinstance(value, bool) or isinstance(value, (int, float)):
        if dtype == "bool":
            value = bool(value)
        elif not dtype.startswith(("float", "bfloat")) and isinstance(value, float):
            if value != value or value in (float("inf"), float("-inf")):
                raise ctx.unsupported(f"fill value {value} for a {dtype} tensor")
            value = int(value)
        return ctx.const(value, dtype)
    if isinstance(value, PrimExpr) or hasattr(value, "struct_info"):
        return ctx.astype(ctx.importer.to_expr(value, dtype), dtype)
    raise ctx.unsupported(f"fill value {value!r}")


def _full(ctx: NodeContext, value: Any, shape: Optional[list] = None) -> Any:
    _check_layout(ctx)
    dtype = ctx.out_dtype()
    shape = ctx.out_shape() if shape is None else shape
    return _op.full(shape, _fill_value(ctx, value, dtype), dtype)


@converter("aten.full.default", "aten.new_full.default")
def _full_op(ctx: NodeContext) -> Any:
    index = 1 if ctx.op == "aten.full.default" else 2
    return _full(ctx, ctx.arg(index, "fill_value"))


@converter("aten.full_like.default")
def _full_like(ctx: NodeContext) -> Any:
    return _full(ctx, ctx.arg(1, "fill_value"))


@converter("aten.zeros.default", "aten.zeros_like.default", "aten.new_zeros.default",
           "aten.empty.memory_format", "aten.empty_like.default", "aten.new_empty.default",
           "aten.empty_strided.default", "aten.new_empty_strided.default",
           "aten.empty_permuted.default", "aten.zero.default")
def _zeros(ctx: NodeContext) -> Any:
    return _full(ctx, 0)


@converter("aten.ones.default", "aten.ones_like.default", "aten.new_ones.default")
def _ones(ctx: NodeContext) -> Any:
    return _full(ctx, 1)


@converter("aten.fill.Scalar", "aten.fill.Tensor")
def _fill(ctx: NodeContext) -> Any:
    value = ctx.arg(1, "value")
    if hasattr(value, "struct_info") and ctx.ndim(value) != 0:
        raise ctx.error(f"fill value must be 0-d, got {ctx.ndim(value)} dimension(s)")
    return _full(ctx, value)


@converter("aten.scalar_tensor.default")
def _scalar_tensor(ctx: NodeContext) -> Any:
    _check_layout(ctx)
    return _fill_value(ctx, ctx.arg(0, "s"), ctx.out_dtype())


@converter("aten.arange.default", "aten.arange.start", "aten.arange.start_step")
def _arange(ctx: NodeContext) -> Any:
    _check_layout(ctx)
    if ctx.op == "aten.arange.default":
        start, end, step = 0, ctx.arg(0, "end"), 1
    else:
        start, end = ctx.arg(0, "start"), ctx.arg(1, "end")
        step = ctx.arg(2, "step", 1) if ctx.op == "aten.arange.start_step" else 1
    for what, v in (("start", start), ("end", end), ("step", step)):
        if not isinstance(v, (int, float, PrimExpr)) or isinstance(v, bool):
            raise ctx.unsupported(f"{what}={v!r} (a number or a size is needed)")
    if isinstance(step, (int, float)) and step == 0:
        raise ctx.error("step must not be zero")
    dtype = ctx.out_dtype()
    floating = dtype.startswith(("float", "bfloat"))
    if not floating and not any(isinstance(v, float) for v in (start, end, step)):
        return _op.arange(start, end, step, dtype)
    # torch counts ceil((end - start) / step) values of start + i * step, in double
    length = ctx.out_shape()[0]
    values = _op.add(_op.multiply(_op.arange(0, length, 1, "float64"),
                                  ctx.importer.to_expr(step, "float64")),
                     ctx.importer.to_expr(start, "float64"))
    return _op.astype(values, dtype)


@converter("aten.eye.default", "aten.eye.m")
def _eye(ctx: NodeContext) -> Any:
    _check_layout(ctx)
    n = ctx.arg(0, "n")
    m = ctx.arg(1, "m") if ctx.op == "aten.eye.m" else n
    return _op.eye(n, m, 0, ctx.out_dtype())
