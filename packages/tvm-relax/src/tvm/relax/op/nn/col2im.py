"""``relax.nn.col2im``: sum column blocks back into images (ONNX Col2Im, the adjoint of
im2col) over any number of spatial axes."""

from __future__ import annotations

from typing import Any, Sequence, Union

import numpy as np
from tvm.ffi import register_object

from ...analysis.struct_info_analysis import prim_equal
from ...expr import Call, Expr
from ...struct_info import StructInfo
from .._infer import dim_str
from .._lower import te_call
from .._utils import const_dim, int_tuple, out_tensor
from ..base import Attrs, arg_tensor, make_call, op_error, register_op
from ._layout import padding_tuple, window_tuple

__all__ = ["col2im", "Col2ImAttrs"]


@register_object("relax.attrs.Col2ImAttrs")
class Col2ImAttrs(Attrs):
    """``image_shape`` and ``block_shape``: one size per spatial axis; ``pads``:
    (before..., after...)."""

    image_shape: tuple = ()
    block_shape: tuple = ()
    dilations: tuple = ()
    pads: tuple = ()
    strides: tuple = ()


@register_op("relax.nn.col2im", inputs=("data",), attrs=Col2ImAttrs, op_pattern="opaque")
def col2im(
    data: Expr, image_shape: Sequence[int], block_shape: Sequence[int],
    dilations: Union[int, Sequence[int]] = 1, pads: Union[int, Sequence[int]] = 0,
    strides: Union[int, Sequence[int]] = 1,
) -> Call:
    """``data`` (N, C * prod(block_shape), L) -> (N, C, *image_shape): column ``l`` of block
    entry ``b`` is added at image position ``q_l * strides - pads + b * dilations``, where
    ``q_l`` is ``l`` unravelled over the grid of block positions (L of them); positions in
    the padding are dropped.  Semantics of ONNX Col2Im."""
    image = int_tuple(image_shape, None, "col2im: image_shape")
    nd = len(image)
    if nd == 0 or any(v <= 0 for v in image):
        raise ValueError(f"col2im: image_shape must be positive sizes, got {image_shape!r}")
    block = window_tuple(block_shape, nd, "col2im: block_shape")
    attrs = Col2ImAttrs(
        image_shape=image, block_shape=block,
        dilations=window_tuple(dilations, nd, "col2im: dilations"),
        pads=padding_tuple(pads, nd, "col2im: pads"),
        strides=window_tuple(strides, nd, "col2im: strides"))
    for i, g in enumerate(_grid(attrs)):
        if g <= 0:
            raise ValueError(f"col2im: block_shape {block} does not fit image axis {i} "
                             f"(size {image[i]} with pads)")
    return make_call("relax.nn.col2im", [data], attrs)


def _grid(a: Any) -> list[int]:
    """The number of block positions along each spatial axis."""
    nd = len(a.image_shape)
    return [(a.image_shape[i] + a.pads[i] + a.pads[i + nd] - a.dilations[i]
             * (a.block_shape[i] - 1) - 1) // a.strides[i] + 1 for i in range(nd)]


@col2im.infer
def _infer_col2im(call: Call, ctx: Any) -> StructInfo:
    data = arg_tensor(call, 0)
    a = call.attrs
    nd = len(a.image_shape)
    if data.ndim not in (-1, 3):
        raise op_error(call, f"data must have 3 dimensions (N, C * block size, L), got "
                             f"{data.ndim}")
    if data.shape_values is None:
        return out_tensor(data, None, ndim=nd + 2)
    n, cb, length = data.shape_values
    bsize = int(np.prod(a.block_shape))
    blocks = int(np.prod(_grid(a)))
    if const_dim(cb) is not None and const_dim(cb) % bsize:
        raise op_error(call, f"data has {dim_str(cb)} rows, not a multiple of the block size "
                             f"{bsize}")
    if prim_equal(length, blocks, getattr(ctx, "analyzer", None)) is False:
        raise op_error(call, f"data has {dim_str(length)} columns, but image_shape, "
                             f"block_shape, dilations, pads and strides give {blocks} blocks")
    return out_tensor(data, [n, cb // bsize, *a.image_shape], ctx=ctx)


@col2im.legalize
def _legalize_col2im(bb: Any, call: Call) -> Expr:
    from ...topi import nn

    a = call.attrs
    return te_call(bb, call, nn.col2im, call.args[0], list(a.image_shape),
                   list(a.block_shape), list(a.dilations), list(a.pads), list(a.strides))


@col2im.evaluate
def _eval_col2im(call: Call, data: Any) -> Any:
    a = call.attrs
    nd = len(a.image_shape)
    grid = _grid(a)
    n, cb, _ = data.shape
    bsize = int(np.prod(a.block_shape))
    lo, hi = a.pads[:nd], a.pads[nd:]
    padded = np.zeros((n, cb // bsize, *(a.image_shape[i] + lo[i] + hi[i] for i in range(nd))),
                      data.dtype)
    blocks = data.reshape(n, cb // bsize, *a.block_shape, *grid)
    for b in np.ndindex(*a.block_shape):
        window = tuple(slice(b[i] * a.dilations[i],
                             b[i] * a.dilations[i] + a.strides[i] * (grid[i] - 1) + 1,
                             a.strides[i]) for i in range(nd))
        padded[(slice(None), slice(None), *window)] += blocks[(slice(None), slice(None), *b)]
    crop = tuple(slice(lo[i], lo[i] + a.image_shape[i]) for i in range(nd))
    return padded[(slice(None), slice(None), *crop)]
