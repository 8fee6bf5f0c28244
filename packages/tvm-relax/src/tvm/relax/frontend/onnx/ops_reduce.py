"""ONNX reductions (Reduce*), ArgMax/ArgMin and the scans CumSum/CumProd."""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from . import runtime_shape as rs
from .common import R, converter

# op -> opset from which ``axes`` is an input instead of an attribute
_AXES_INPUT_SINCE = {"ReduceSum": 13}
RUNTIME = "runtime"  # the axes are an input whose values are known only at run time


def _reduce_axes(ctx: Any) -> Any:
    """The reduced axes (None: all); [] with noop_with_empty_axes means no reduction;
    RUNTIME when they are a non-constant input (of static, non-zero length)."""
    since = _AXES_INPUT_SINCE.get(ctx.op_type, 18)
    if ctx.opset < since:
        axes = ctx.attr("axes", None)
    elif ctx.has(1) and ctx.const(1) is None:
        if ctx.static_shape(1) != [0]:
            return RUNTIME
        axes = []
    else:
        axes = ctx.int_list(1, "axes")
    if not axes:
        if ctx.attr("noop_with_empty_axes", 0) and ctx.opset >= since:
            return []
        return None
    ndim = ctx.ndim(0)
    return sorted({a % ndim for a in axes})


def _reduce(kind: str) -> Any:
    def impl(ctx: Any) -> Any:
        axes = _reduce_axes(ctx)
        keep = bool(ctx.attr("keepdims", 1))
        if axes == RUNTIME:
            return _runtime_reduce(ctx, kind, keep)
        return _reduction(ctx, kind, ctx.input(0), axes, keep, ctx.ndim(0))

    return impl


def _runtime_reduce(ctx: Any, kind: str, keep: bool) -> Any:
    """A reduction over axes given at run time (their number is static, so the output rank
    is known).  Dimension ``j`` of ``x`` is split into (kept ``O_j``, reduced ``R_j``), one of
    them 1: ``x`` reshaped to ``(O_0, R_0, O_1, R_1, ...)`` (the same elements in the same
    order) is reduced over the odd, static axes, giving the keepdims result ``(O_0, ...)``."""
    ndim = ctx.ndim(0)
    shape = ctx.shape(0)
    axes, n = rs.int_vector(ctx, 1, "axes")
    axes, in_range = rs.normalized_axes(ctx, axes, ndim)
    mask = rs.axis_mask(ctx, axes, ndim)  # how often each dimension is named
    once = R.less_equal(R.max(mask, None, False), rs.i64(ctx, 1))
    valid = ctx.emit(R.logical_and(in_range, once))
    dims = rs.dims_vector(ctx, shape)
    one = rs.i64(ctx, 1)
    reduced = R.equal(mask, one)
    kept_dims = R.where(reduced, one, dims)
    red_dims = R.where(reduced, dims, one)
    pairs = R.concat([R.reshape(kept_dims, [ndim, 1]), R.reshape(red_dims, [ndim, 1])], axis=1)
    split = rs.to_dims(ctx, ctx.emit(R.reshape(pairs, [2 * ndim])), 2 * ndim,
                       "axes (out of range or repeated)", valid, "split")
    x = ctx.emit(R.reshape(ctx.input(0), split))
    y = ctx.emit(_reduction(ctx, kind, x, list(range(1, 2 * ndim, 2)), False, 2 * ndim))
    if keep:
        return y
    out = rs.compact(ctx, dims, ctx.emit(one - mask), ndim, ndim - n)
    return R.reshape(y, rs.to_dims(ctx, out, ndim - n, "axes"))


def _reduction(ctx: Any, kind: str, x: Any, axes: Optional[list[int]], keep: bool,
               ndim: int) -> Any:
    """ONNX reduction ``kind`` of ``x`` (rank ``ndim``) over static ``axes``."""
    dt = ctx.dtype(0)
    if axes == []:
        if kind in ("l1",):
            return R.abs(x)
        if kind in ("l2",):
            return R.abs(x)
        if kind == "sumsquare":
            return x * x
        if kind == "logsum":
            return R.log(x)
        if kind == "logsumexp":
            return x
        return x
    if kind in ("sum", "mean", "max", "min", "prod"):
        return getattr(R, kind)(x, axes, keep)
    if kind == "l1":
        return R.sum(R.abs(x), axes, keep)
    if kind == "sumsquare":
        return R.sum(x * x, axes, keep)
    if kind == "l2":
        s = R.sum(x * x, axes, keep)
        if dt.startswith(("int", "uint")):
            return R.astype(R.sqrt(R.astype(s, "float32")), dt)
        return R.sqrt(s)
    if kind == "logsum":
        return R.log(R.sum(x, axes, keep))
    if kind == "logsumexp":
        m = R.max(x, axes, True)
        m = R.where(R.isinf(m), ctx.const_expr(0, dt), m)
        s = R.log(R.sum(R.exp(x - m), axes, True)) + m
        if not keep:
            s = R.squeeze(s, list(range(ndim)) if axes is None else axes)
        return s
    raise ctx.unsupported(f"reduction {kind}")


for _op, _kind in [
    ("ReduceSum", "sum"), ("ReduceMean", "mean"), ("ReduceMax", "max"), ("ReduceMin", "min"),
    ("ReduceProd", "prod"), ("ReduceL1", "l1"), ("ReduceL2", "l2"), ("ReduceLogSum", "logsum"),
    ("ReduceLogSumExp", "logsumexp"), ("ReduceSumSquare", "sumsquare"),
]:
    converter(_op)(_reduce(_kind))


def _arg_reduce(name: str) -> Any:
    def impl(ctx: Any) -> Any:
        ndim = ctx.ndim(0)
        axis = ctx.attr("axis", 0) % max(ndim, 1)
        keep = bool(ctx.attr("keepdims", 1))
        x = ctx.input(0)
        if ctx.attr("select_last_index", 0):
            dim = ctx.shape(0)[axis]
            if not isinstance(dim, int):
                raise ctx.unsupported("select_last_index needs a static axis length")
            idx = getattr(R, name)(R.flip(x, axis), axis, keep)
            return ctx.const_expr(dim - 1, "int64") - idx
        return getattr(R, name)(x, axis, keep)

    return impl


converter("ArgMax")(_arg_reduce("argmax"))
converter("ArgMin")(_arg_reduce("argmin"))


def _scan(name: str) -> Any:
    def impl(ctx: Any) -> Any:
        axis_v = ctx.const(1)
        if axis_v is None:
            return _runtime_scan(ctx, name)
        ndim = ctx.ndim(0)
        axis = int(np.asarray(axis_v).reshape(-1)[0]) % ndim
        x = ctx.input(0)
        exclusive = bool(ctx.attr("exclusive", 0))
        reverse = bool(ctx.attr("reverse", 0))
        if reverse:
            x = R.flip(x, axis)
        y = getattr(R, name)(x, axis, None, exclusive)
        if reverse:
            y = R.flip(y, axis)
        return y

    return impl


def _runtime_scan(ctx: Any, name: str) -> Any:
    """CumSum/CumProd along an axis given at run time: ``x`` reshaped to (before, axis,
    after) (sizes computed at run time), scanned along its static middle axis and reshaped
    back."""
    ndim = ctx.ndim(0)
    shape = ctx.shape(0)
    axis, n = rs.int_vector(ctx, 1, "axis")
    if n != 1:
        raise ctx.error(f"axis must hold one value, got {n}")
    axis, in_range = rs.normalized_axes(ctx, axis, ndim)
    dims = rs.dims_vector(ctx, shape)
    pos = rs.i64(ctx, np.arange(ndim, dtype="int64"))
    one = rs.i64(ctx, 1)
    parts = [R.prod(R.where(R.less(pos, axis), dims, one), [0], True),
             R.sum(R.where(R.equal(pos, axis), dims, rs.i64(ctx, 0)), [0], True),
             R.prod(R.where(R.greater(pos, axis), dims, one), [0], True)]
    three = rs.to_dims(ctx, ctx.emit(R.concat(parts, axis=0)), 3, "axis (out of range)",
                       in_range, "part")
    x = ctx.emit(R.reshape(ctx.input(0), three))
    reverse = bool(ctx.attr("reverse", 0))
    if reverse:
        x = ctx.emit(R.flip(x, 1))
    y = ctx.emit(getattr(R, name)(x, 1, None, bool(ctx.attr("exclusive", 0))))
    if reverse:
        y = ctx.emit(R.flip(y, 1))
    return R.reshape(y, shape)


converter("CumSum")(_scan("cumsum"))
converter("CumProd")(_scan("cumprod"))
