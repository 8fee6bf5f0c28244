"""Converters for shape manipulation, indexing, creation and copies."""

from __future__ import annotations

from typing import Any

from ... import op as _op
from .common import NodeContext, converter


@converter("aten.view.default", "aten.reshape.default", "aten._unsafe_view.default")
def _view(ctx: NodeContext) -> Any:
    x = ctx.tensor(0)
    shape = ctx.out_shape()
    return _op.reshape(x, shape)


@converter("aten.permute.default")
def _permute(ctx: NodeContext) -> Any:
    x = ctx.tensor(0)
    return _op.permute_dims(x, [ctx.axis(d, ctx.ndim(x)) for d in ctx.arg(1, "dims")])


@converter("operator.getitem")
def _getitem(ctx: NodeContext) -> Any:
    seq, index = ctx.arg(0), ctx.arg(1)
    if not isinstance(seq, (list, tuple)):
        raise ctx.unsupported(f"getitem on a {type(seq).__name__}")
    return seq[index]
