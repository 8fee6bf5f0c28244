"""Converters for elementwise arithmetic, comparisons, activations, reductions and matmul."""

from __future__ import annotations

from typing import Any

from ... import op as _op
from .common import NodeContext, converter

_BINARY = {
    "aten.mul.Tensor": _op.multiply, "aten.mul.Scalar": _op.multiply,
    "aten.maximum.default": _op.maximum, "aten.minimum.default": _op.minimum,
    "aten.pow.Tensor_Tensor": _op.power, "aten.pow.Tensor_Scalar": _op.power,
    "aten.pow.Scalar": _op.power,
}

_COMPARE = {
    "aten.eq": _op.equal, "aten.ne": _op.not_equal, "aten.lt": _op.less,
    "aten.le": _op.less_equal, "aten.gt": _op.greater, "aten.ge": _op.greater_equal,
}

_UNARY = {
    "aten.relu.default": _op.nn.relu, "aten.exp.default": _op.exp,
    "aten.sigmoid.default": _op.sigmoid, "aten.tanh.default": _op.tanh,
    "aten.sqrt.default": _op.sqrt, "aten.rsqrt.default": _op.rsqrt,
    "aten.neg.default": _op.negative, "aten.abs.default": _op.abs,
}


def _binary(fn: Any) -> Any:
    def convert(ctx: NodeContext) -> Any:
        a, b = ctx.operands(0, 1)
        out = fn(a, b)
        want = ctx.out_dtype()
        return ctx.astype(out, want) if want and ctx.dtype(out) != want else out
    return convert


for _name, _fn in _BINARY.items():
    converter(_name)(_binary(_fn))
for _name, _fn in _COMPARE.items():
    converter(f"{_name}.Tensor", f"{_name}.Scalar")(_binary(_fn))


def _unary(fn: Any) -> Any:
    def convert(ctx: NodeContext) -> Any:
        x = ctx.astype(ctx.tensor(0), ctx.out_dtype())
        return fn(x)
    return convert


for _name, _fn in _UNARY.items():
    converter(_name)(_unary(_fn))


@converter("aten.add.Tensor", "aten.add.Scalar", "aten.sub.Tensor", "aten.sub.Scalar")
def _add_sub(ctx: NodeContext) -> Any:
    a, b = ctx.operands(0, 1)
    alpha = ctx.arg(2, "alpha", 1)
    if alpha != 1:
        b = _op.multiply(b, ctx.const(alpha, ctx.dtype(b)))
    return (_op.add if ctx.op.startswith("aten.add") else _op.subtract)(a, b)


@converter("aten.div.Tensor", "aten.div.Scalar", "aten.div.Tensor_mode", "aten.div.Scalar_mode")
def _div(ctx: NodeContext) -> Any:
    mode = ctx.kwargs.get("rounding_mode", ctx.arg(2))
    out_dtype = ctx.out_dtype()
    dtype = ctx.promoted_dtype(0, 1)
    if mode is None and not dtype.startswith(("float", "bfloat")):
        dtype = out_dtype  # true division of integers computes in the default float type
    a, b = (ctx.astype(ctx.importer.to_expr(ctx.arg(i), dtype), dtype) for i in (0, 1))
    if mode is None:
        return _op.divide(a, b)
    if mode == "floor":
        return _op.floor_divide(a, b)
    if mode == "trunc":
        if dtype.startswith(("float", "bfloat")):
            return _op.trunc(_op.divide(a, b))
        return _op.divide(a, b)
    raise ctx.unsupported(f"rounding_mode {mode!r} is not one of None, 'floor', 'trunc'")


@converter("aten._softmax.default", "aten.softmax.int")
def _softmax(ctx: NodeContext) -> Any:
    x = ctx.astype(ctx.tensor(0), ctx.out_dtype())
    return _op.nn.softmax(x, ctx.axis(ctx.arg(1, "dim"), ctx.ndim(x)))


@converter("aten.mean.dim", "aten.sum.dim_IntList")
def _mean_sum(ctx: NodeContext) -> Any:
    x = ctx.tensor(0)
    dims = ctx.arg(1, "dim")
    keep = bool(ctx.arg(2, "keepdim", False))
    dtype = ctx.out_dtype()
    x = ctx.astype(x, dtype)
    axes = None if dims is None or len(dims) == 0 else [ctx.axis(d, ctx.ndim(x)) for d in dims]
    fn = _op.mean if ctx.op.startswith("aten.mean") else _op.sum
    return fn(x, axes, keep)


@converter("aten.mm.default", "aten.bmm.default", "aten.matmul.default")
def _matmul(ctx: NodeContext) -> Any:
    a, b = ctx.operands(0, 1)
    return _op.matmul(a, b)


@converter("aten.addmm.default")
def _addmm(ctx: NodeContext) -> Any:
    bias, a, b = ctx.operands(0, 1, 2)
    beta, alpha = ctx.kwargs.get("beta", 1), ctx.kwargs.get("alpha", 1)
    prod = _op.matmul(a, b)
    if alpha != 1:
        prod = _op.multiply(prod, ctx.const(alpha, ctx.dtype(a)))
    if beta == 0:
        return prod
    if beta != 1:
        bias = _op.multiply(bias, ctx.const(beta, ctx.dtype(bias)))
    return _op.add(prod, bias)


@converter("aten.linear.default")
def _linear(ctx: NodeContext) -> Any:
    x, w = ctx.tensor(0), ctx.tensor(1)
    out = _op.matmul(x, _op.permute_dims(w, [1, 0]) if ctx.ndim(w) == 2 else w)
    if ctx.has(2, "bias"):
        out = _op.add(out, ctx.tensor(2, "bias"))
    return out
