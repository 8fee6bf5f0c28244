"""Converters for convolution, pooling, normalization, attention and resizing."""

from __future__ import annotations

from typing import Any

from ... import op as _op
from .common import NodeContext, converter


@converter("aten.convolution.default")
def _convolution(ctx: NodeContext) -> Any:
    x, w = ctx.tensor(0), ctx.tensor(1)
    stride, padding, dilation = ctx.arg(3), ctx.arg(4), ctx.arg(5)
    transposed, output_padding, groups = ctx.arg(6), ctx.arg(7), ctx.arg(8)
    nd = ctx.ndim(x) - 2
    if nd not in (1, 2, 3):
        raise ctx.unsupported(f"a {nd}-d convolution (input of rank {ctx.ndim(x)})")
    layouts = {1: ("NCW", "OIW", "IOW"), 2: ("NCHW", "OIHW", "IOHW"),
               3: ("NCDHW", "OIDHW", "IODHW")}[nd]
    if transposed:
        fn = {1: _op.nn.conv1d_transpose, 2: _op.nn.conv2d_transpose,
              3: _op.nn.conv3d_transpose}[nd]
        out = fn(x, w, strides=stride, padding=padding, output_padding=output_padding,
                 dilation=dilation, groups=groups, data_layout=layouts[0],
                 kernel_layout=layouts[2])
    else:
        fn = {1: _op.nn.conv1d, 2: _op.nn.conv2d, 3: _op.nn.conv3d}[nd]
        out = fn(x, w, strides=stride, padding=padding, dilation=dilation, groups=groups,
                 data_layout=layouts[0], kernel_layout=layouts[1])
    if ctx.has(2):
        bias = _op.reshape(ctx.tensor(2), [1, -1] + [1] * nd)
        out = _op.add(out, bias)
    return out


@converter("aten._native_batch_norm_legit_no_training.default")
def _batch_norm_eval(ctx: NodeContext) -> Any:
    x = ctx.tensor(0)
    c = ctx.shape(x)[1]
    dtype = ctx.dtype(x)
    gamma = ctx.tensor(1) if ctx.has(1) else _op.ones([c], dtype)
    beta = ctx.tensor(2) if ctx.has(2) else _op.zeros([c], dtype)
    eps = ctx.arg(6, "eps", 1e-5)
    out = _op.nn.batch_norm(x, gamma, beta, ctx.tensor(3), ctx.tensor(4), axis=1, epsilon=eps)
    y = ctx.emit(out)
    from ...expr import TupleGetItem

    empty = _op.zeros([0], dtype)
    return [ctx.emit(TupleGetItem(y, 0)), empty, empty]
