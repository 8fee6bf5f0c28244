"""Converters for the matmul family: mm/bmm/matmul, addmm/addmv/addbmm/baddbmm/addr
(``beta``/``alpha``), mv/dot/vdot/outer, ``linear`` (kept whole: one ``matmul`` with the
transposed weight) and ``einsum``.

``beta == 0`` drops the added term entirely, as eager does (NaN/inf in it do not leak).
"""

from __future__ import annotations

from typing import Any

from ... import op as _op
from .common import NodeContext, converter
from .ops_math import as_dtype, is_float

__all__: list[str] = []


def _in_out(ctx: NodeContext, *indices: int) -> list[Any]:
    dtype = ctx.out_dtype()
    return [as_dtype(ctx, ctx.arg(i), dtype) for i in indices]


def _check_ranks(ctx: NodeContext, ranks: dict[str, tuple[Any, int]]) -> None:
    for name, (expr, want) in ranks.items():
        if ctx.ndim(expr) != want:
            raise ctx.error(f"{name} must be {want}-d, got {ctx.ndim(expr)}-d")


def _scale(ctx: NodeContext, x: Any, factor: Any) -> Any:
    if factor == 1:
        return x
    dtype = ctx.out_dtype()
    if not is_float(dtype) and isinstance(factor, float) and not factor.is_integer():
        raise ctx.unsupported(f"a non-integer factor {factor} for {dtype} tensors")
    return _op.multiply(x, ctx.const(factor, dtype))


def _affine(ctx: NodeContext, bias: Any, prod: Any) -> Any:
    """``beta * bias + alpha * prod`` with torch's keyword defaults of 1."""
    beta, alpha = ctx.kwargs.get("beta", 1), ctx.kwargs.get("alpha", 1)
    prod = _scale(ctx, prod, alpha)
    if beta == 0:
        return prod  # the product has the full output shape; bias only broadcasts
    return _op.add(_scale(ctx, bias, beta), prod)


@converter("aten.mm.default", "aten.bmm.default", "aten.mv.default", "aten.dot.default",
           "aten.vdot.default", "aten.matmul.default")
def _matmul(ctx: NodeContext) -> Any:
    a, b = _in_out(ctx, 0, 1)
    want = {"mm": (2, 2), "bmm": (3, 3), "mv": (2, 1), "dot": (1, 1), "vdot": (1, 1)}
    kind = ctx.op.split(".")[1]
    if kind in want:
        _check_ranks(ctx, {"self": (a, want[kind][0]), "other": (b, want[kind][1])})
    return _op.matmul(a, b)


@converter("aten.addmm.default", "aten.addmv.default", "aten.baddbmm.default")
def _addmm(ctx: NodeContext) -> Any:
    bias, a, b = _in_out(ctx, 0, 1, 2)
    want = {"addmm": (2, 2), "addmv": (2, 1), "baddbmm": (3, 3)}[ctx.op.split(".")[1]]
    _check_ranks(ctx, {"mat1": (a, want[0]), "mat2": (b, want[1])})
    return _affine(ctx, bias, _op.matmul(a, b))


@converter("aten.addbmm.default")
def _addbmm(ctx: NodeContext) -> Any:
    bias, a, b = _in_out(ctx, 0, 1, 2)
    _check_ranks(ctx, {"batch1": (a, 3), "batch2": (b, 3)})
    return _affine(ctx, bias, _op.sum(_op.matmul(a, b), [0], False))


@converter("aten.addr.default")
def _addr(ctx: NodeContext) -> Any:
    bias, a, b = _in_out(ctx, 0, 1, 2)
    _check_ranks(ctx, {"vec1": (a, 1), "vec2": (b, 1)})
    outer = _op.multiply(_op.expand_dims(a, 1), _op.expand_dims(b, 0))
    if ctx.out_dtype() == "bool":
        raise ctx.unsupported("addr of bool tensors")
    return _affine(ctx, bias, outer)


@converter("aten.outer.default", "aten.ger.default")
def _outer(ctx: NodeContext) -> Any:
    a, b = _in_out(ctx, 0, 1)
    _check_ranks(ctx, {"self": (a, 1), "vec2": (b, 1)})
    if ctx.dtype(a) == "bool":
        return _op.logical_and(_op.expand_dims(a, 1), _op.expand_dims(b, 0))
    return _op.multiply(_op.expand_dims(a, 1), _op.expand_dims(b, 0))


@converter("aten.linear.default")
def _linear(ctx: NodeContext) -> Any:
    """``x @ w.T + b``: one matmul (a 1-d weight is a dot product)."""
    x, w = _in_out(ctx, 0, 1)
    if ctx.ndim(w) not in (1, 2):
        raise ctx.error(f"weight must be 1-d or 2-d, got {ctx.ndim(w)}-d")
    out = _op.matmul(x, _op.permute_dims(w, [1, 0]) if ctx.ndim(w) == 2 else w)
    if ctx.has(2, "bias"):
        out = _op.add(out, as_dtype(ctx, ctx.arg(2, "bias"), ctx.out_dtype()))
    return out


@converter("aten.einsum.default")
def _einsum(ctx: NodeContext) -> Any:
    equation = ctx.arg(0, "equation")
    operands = ctx.arg(1, "tensors")
    # ``path`` (argument 2) is a contraction order: an optimisation hint only
    dtype = ctx.out_dtype()
    tensors = [as_dtype(ctx, t, dtype) for t in operands]
    return _op.einsum(tensors, equation.replace(" ", ""))
