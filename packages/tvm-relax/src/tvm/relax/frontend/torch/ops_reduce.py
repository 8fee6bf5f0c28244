"""Converters for ATen reductions, scans, softmax and norms.

A ``dim`` of None or ``[]`` reduces every axis (torch's convention for ``sum``/``mean``/
``amax``...); a 0-d input is treated as one element, as torch does.  Float max/min and
argmax/argmin follow eager on NaN (the NaN wins).  ``var``/``std`` divide by
``max(0, N - correction)`` like eager, with N symbolic under ``torch.export.Dim``.
"""

from __future__ import annotations

import math
from typing import Any, Optional

from ... import op as _op
from .common import NodeContext, converter
from .ops_math import as_dtype, is_float

__all__: list[str] = []


def _axes(ctx: NodeContext, dims: Any, ndim: int) -> Optional[list[int]]:
    """Sorted axes for ``dims`` (an int, a list, or None / [] for all)."""
    if dims is None:
        return None
    if isinstance(dims, int):
        dims = [dims]
    if len(dims) == 0:
        return None
    if ndim == 0:
        for d in dims:
            ctx.axis(d, 0)
        return None
    axes = sorted({ctx.axis(d, ndim) for d in dims})
    return axes


def _dtype_arg(ctx: NodeContext, x: Any) -> Any:
    """``x`` in the node's output dtype (``dtype=`` and integer sums widening to int64)."""
    return as_dtype(ctx, x, ctx.out_dtype())


def _count(ctx: NodeContext, x: Any, axes: Optional[list[int]], dtype: str) -> Any:
    """The number of elements reduced, as a 0-d ``dtype`` tensor (symbolic sizes too)."""
    shape = ctx.shape(x)
    total: Any = 1
    for d in (range(len(shape)) if axes is None else axes):
        total = total * shape[d]
    if isinstance(total, int):
        return ctx.const(total, dtype)
    return ctx.astype(ctx.importer.to_expr(total, dtype), dtype)


@converter("aten.sum.default", "aten.sum.dim_IntList", "aten.mean.default", "aten.mean.dim",
           "aten.prod.default", "aten.prod.dim_int")
def _sum_mean_prod(ctx: NodeContext) -> Any:
    kind = ctx.op.split(".")[1]
    overload = ctx.op.split(".")[2]
    x = _dtype_arg(ctx, ctx.tensor(0))
    if overload == "default":
        dims, keep = None, False
    else:
        dims, keep = ctx.arg(1, "dim"), bool(ctx.arg(2, "keepdim", False))
    axes = _axes(ctx, dims, ctx.ndim(x))
    if ctx.dtype(x) == "bool":  # prod of bools (sum/mean of bools widen first)
        out = _op.min(ctx.astype(x, "uint8"), axes, keep)
        return ctx.astype(out, "bool")
    fn = {"sum": _op.sum, "mean": _op.mean, "prod": _op.prod}[kind]
    return fn(x, axes, keep)


def _extreme(ctx: NodeContext, x: Any, axes: Optional[list[int]], keep: bool,
             largest: bool) -> Any:
    fn = _op.max if largest else _op.min
    if ctx.dtype(x) == "bool":
        return ctx.astype(fn(ctx.astype(x, "uint8"), axes, keep), "bool")
    return fn(x, axes, keep)


@converter("aten.amax.default", "aten.amin.default")
def _amax_amin(ctx: NodeContext) -> Any:
    x = ctx.tensor(0)
    axes = _axes(ctx, ctx.arg(1, "dim", []), ctx.ndim(x))
    return _extreme(ctx, x, axes, bool(ctx.arg(2, "keepdim", False)),
                    ctx.op.startswith("aten.amax"))


@converter("aten.max.default", "aten.min.default")
def _max_min_all(ctx: NodeContext) -> Any:
    return _extreme(ctx, ctx.tensor(0), None, False, ctx.op.startswith("aten.max"))


def _arg_extreme(ctx: NodeContext, x: Any, axis: Optional[int], keep: bool,
                 largest: bool) -> Any:
    if ctx.ndim(x) == 0:
        return _op.zeros([], "int64")
    if ctx.dtype(x) == "bool":
        x = ctx.astype(x, "uint8")
    return (_op.argmax if largest else _op.argmin)(x, axis, keep)


@converter("aten.max.dim", "aten.min.dim")
def _max_min_dim(ctx: NodeContext) -> Any:
    x = ctx.tensor(0)
    largest = ctx.op.startswith("aten.max")
    keep = bool(ctx.arg(2, "keepdim", False))
    if ctx.ndim(x) == 0:
        ctx.axis(ctx.arg(1, "dim"), 0)
        return [x, _op.zeros([], "int64")]
    axis = ctx.axis(ctx.arg(1, "dim"), ctx.ndim(x))
    values = _extreme(ctx, x, [axis], keep, largest)
    return [values, _arg_extreme(ctx, x, axis, keep, largest)]


@converter("aten.argmax.default", "aten.argmin.default")
def _argmax(ctx: NodeContext) -> Any:
    x = ctx.tensor(0)
    dim = ctx.arg(1, "dim")
    keep = bool(ctx.arg(2, "keepdim", False))
    axis = None if dim is None or ctx.ndim(x) == 0 else ctx.axis(dim, ctx.ndim(x))
    if ctx.ndim(x) == 0:
        return _op.zeros([], "int64")
    return _arg_extreme(ctx, x, axis, keep, ctx.op.startswith("aten.argmax"))


@converter("aten.any.default", "aten.any.dim", "aten.any.dims", "aten.all.default",
           "aten.all.dim", "aten.all.dims")
def _any_all(ctx: NodeContext) -> Any:
    x = ctx.tensor(0)
    is_any = ctx.op.startswith("aten.any")
    dims = None if ctx.op.endswith(".default") else ctx.arg(1, "dim")
    keep = bool(ctx.arg(2, "keepdim", False))
    axes = _axes(ctx, dims, ctx.ndim(x))
    flags = ctx.astype(ctx.astype(x, "bool"), "uint8")
    out = (_op.max if is_any else _op.min)(flags, axes, keep)
    return ctx.astype(out, ctx.out_dtype())


def _variance(ctx: NodeContext, x: Any, axes: Optional[list[int]], correction: float,
              keep: bool) -> tuple[Any, Any]:
    """(variance, mean) over ``axes`` with torch's divisor ``max(0, N - correction)``."""
    dtype = ctx.dtype(x)
    mean = _op.mean(x, axes, True)
    diff = _op.subtract(x, mean)
    total = _op.sum(_op.multiply(diff, diff), axes, keep)
    count = _count(ctx, x, axes, dtype)
    divisor = _op.maximum(_op.subtract(count, ctx.const(correction, dtype)), ctx.const(0, dtype))
    var = _op.divide(total, divisor)
    if not keep:
        mean = _op.mean(x, axes, False)
    return var, mean


def _correction(ctx: NodeContext) -> float:
    correction = ctx.kwargs.get("correction", ctx.arg(2) if len(ctx.args) > 2 else None)
    return 1.0 if correction is None else float(correction)


@converter("aten.var.correction", "aten.std.correction", "aten.var_mean.correction",
           "aten.std_mean.correction")
def _var_std(ctx: NodeContext) -> Any:
    kind = ctx.op.split(".")[1]
    x = ctx.tensor(0)
    if not is_float(ctx.dtype(x)):
        raise ctx.unsupported(f"{kind} of a {ctx.dtype(x)} tensor (floating point only)")
    axes = _axes(ctx, ctx.arg(1, "dim"), ctx.ndim(x))
    keep = bool(ctx.kwargs.get("keepdim", ctx.arg(3) if len(ctx.args) > 3 else False))
    var, mean = _variance(ctx, x, axes, _correction(ctx), keep)
    if kind.startswith("std"):
        var = _op.sqrt(var)
    return [var, mean] if kind.endswith("_mean") else var


@converter("aten.cumsum.default", "aten.cumprod.default")
def _cumulative(ctx: NodeContext) -> Any:
    x = _dtype_arg(ctx, ctx.tensor(0))
    ndim = ctx.ndim(x)
    axis = ctx.axis(ctx.arg(1, "dim"), ndim)
    if ndim == 0:
        return x
    if ctx.dtype(x) == "bool":  # a cumulative product of bools
        return ctx.astype(_op.cumprod(ctx.astype(x, "uint8"), axis), "bool")
    return (_op.cumsum if ctx.op.startswith("aten.cumsum") else _op.cumprod)(x, axis)


def _softmax_input(ctx: NodeContext) -> tuple[Any, int, bool]:
    x = _dtype_arg(ctx, ctx.tensor(0))
    ndim = ctx.ndim(x)
    axis = ctx.axis(ctx.arg(1, "dim"), ndim)
    if ndim == 0:
        x = _op.reshape(x, [1])
    return x, axis, ndim == 0


@converter("aten._softmax.default", "aten.softmax.int", "aten._log_softmax.default",
           "aten.log_softmax.int")
def _softmax(ctx: NodeContext) -> Any:
    """``half_to_float`` (``_softmax``) and ``dtype`` (``softmax.int``) both say: compute in
    the output dtype torch recorded."""
    x, axis, scalar = _softmax_input(ctx)
    fn = _op.nn.log_softmax if "log_softmax" in ctx.op else _op.nn.softmax
    out = fn(x, axis)
    return _op.reshape(out, []) if scalar else out


@converter("aten.logsumexp.default")
def _logsumexp(ctx: NodeContext) -> Any:
    """``log(sum(exp(x - m))) + m`` with ``m`` the max (0 where it is infinite)."""
    x = _dtype_arg(ctx, ctx.tensor(0))
    axes = _axes(ctx, ctx.arg(1, "dim"), ctx.ndim(x))
    keep = bool(ctx.arg(2, "keepdim", False))
    m = _op.max(x, axes, True)
    m = _op.where(_op.isinf(m), _op.zeros_like(m), m)
    total = _op.log(_op.sum(_op.exp(_op.subtract(x, m)), axes, keep))
    return _op.add(total, m if keep else _op.squeeze(m, axes))


@converter("aten.linalg_vector_norm.default")
def _vector_norm(ctx: NodeContext) -> Any:
    x = _dtype_arg(ctx, ctx.tensor(0))
    order = ctx.arg(1, "ord", 2)
    axes = _axes(ctx, ctx.arg(2, "dim"), ctx.ndim(x))
    keep = bool(ctx.arg(3, "keepdim", False))
    if not is_float(ctx.dtype(x)):
        raise ctx.unsupported(f"vector norm of a {ctx.dtype(x)} tensor (floating point only)")
    order = float(order)
    mag = _op.abs(x)
    if order == math.inf:
        return _op.max(mag, axes, keep)
    if order == -math.inf:
        return _op.min(mag, axes, keep)
    if order == 0:
        nonzero = ctx.astype(_op.not_equal(x, ctx.const(0, ctx.dtype(x))), ctx.dtype(x))
        return _op.sum(nonzero, axes, keep)
    if order == 1:
        return _op.sum(mag, axes, keep)
    if order == 2:
        return _op.sqrt(_op.sum(_op.multiply(x, x), axes, keep))
    dtype = ctx.dtype(x)
    powered = _op.sum(_op.power(mag, ctx.const(order, dtype)), axes, keep)
    return _op.power(powered, ctx.const(1.0 / order, dtype))


@converter("aten.count_nonzero.dim_IntList", "aten.count_nonzero.default")
def _count_nonzero(ctx: NodeContext) -> Any:
    x = ctx.tensor(0)
    dims = ctx.arg(1, "dim")
    axes = _axes(ctx, dims, ctx.ndim(x))
    flags = ctx.astype(ctx.astype(x, "bool"), "int64")
    return _op.sum(flags, axes, False)



@converter("aten.logcumsumexp.default")
def _logcumsumexp(ctx: NodeContext) -> Any:
    x = _dtype_arg(ctx, ctx.tensor(0))
    axis = ctx.axis(ctx.arg(1, "dim"), ctx.ndim(x))
    if ctx.ndim(x) == 0:
        return x
    if not is_float(ctx.dtype(x)):
        raise ctx.unsupported(f"logcumsumexp of a {ctx.dtype(x)} tensor")
    return _op.logcumsumexp(x, axis)
