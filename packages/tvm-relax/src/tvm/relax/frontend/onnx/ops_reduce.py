"""ONNX reductions (Reduce*), ArgMax/ArgMin and the scans CumSum/CumProd."""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from .common import R, converter

# op -> opset from which ``axes`` is an input instead of an attribute
_AXES_INPUT_SINCE = {"ReduceSum": 13}


def _reduce_axes(ctx: Any) -> Optional[list[int]]:
    """The reduced axes (None: all); [] with noop_with_empty_axes means no reduction."""
    since = _AXES_INPUT_SINCE.get(ctx.op_type, 18)
    if ctx.opset < since:
        axes = ctx.attr("axes", None)
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
        x = ctx.input(0)
        dt = ctx.dtype(0)
        axes = _reduce_axes(ctx)
        keep = bool(ctx.attr("keepdims", 1))
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
                s = R.squeeze(s, list(range(ctx.ndim(0))) if axes is None else axes)
            return s
        raise ctx.unsupported(f"reduction {kind}")

    return impl


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
            raise ctx.unsupported("axis must be a constant")
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


converter("CumSum")(_scan("cumsum"))
converter("CumProd")(_scan("cumprod"))
