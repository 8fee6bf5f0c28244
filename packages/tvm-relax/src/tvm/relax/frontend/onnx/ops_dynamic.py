"""Converters of ONNX operators whose output shapes depend on the data: NonZero, Unique,
NonMaxSuppression and Compress with a condition computed at run time.

Each emits the Relax operator (``relax.nonzero``, ``relax.unique``,
``relax.vision.non_max_suppression``; Compress is ``nonzero`` then ``take``), whose result
has a known rank but an unknown shape, and binds that shape to fresh symbolic variables
with ``match_cast`` right away, so that the converters after it see ``(2, num_nonzero)``
like any symbolic shape (and ``Shape`` of it works).  At run time the operators' lowering
computes the number of results with a TIR kernel, the VM turns it into a shape value and a
second kernel writes the result at that size (see :mod:`tvm.relax.op.dynamic`).
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np
from tvm import tir

from ...expr import TupleGetItem
from ...op.dynamic import nonzero, unique
from ...op.vision import non_max_suppression
from ...struct_info import TensorStructInfo
from .common import R, converter


def bind_shape(ctx: Any, value: Any, shape: Sequence[Any], dtype: str) -> Any:
    """``value`` (emitted) cast to ``shape``; its new symbolic dimensions are recorded as
    bound by the result (for ``Shape`` and shape arithmetic on them)."""
    out = ctx.bb.match_cast(ctx.emit(value), TensorStructInfo(list(shape), dtype))
    for d in shape:
        if isinstance(d, tir.Var):
            ctx.importer.sym_owner.setdefault(id(d), out)
    return out


def _fresh(name: str) -> tir.Var:
    return tir.Var(name, "int64")


def _nonzero(ctx: Any, x: Any, ndim: int) -> Any:
    """``relax.nonzero(x)`` as a (ndim, num_nonzero) tensor."""
    return bind_shape(ctx, nonzero(x), [ndim, _fresh("num_nonzero")], "int64")


@converter("NonZero")
def _nonzero_op(ctx: Any) -> Any:
    return _nonzero(ctx, ctx.input(0), ctx.ndim(0))


@converter("Compress")
def _compress(ctx: Any) -> Any:
    axis: Optional[int] = ctx.attr("axis", None)
    x = ctx.input(0)
    ndim = ctx.ndim(0)
    if axis is None:
        x = ctx.emit(R.reshape(x, [-1]))
        axis, dim = 0, ctx.prod(ctx.shape(0))
    else:
        if not -ndim <= axis < ndim:
            raise ctx.error(f"axis {axis} is out of range for rank {ndim}")
        axis %= ndim
        dim = ctx.shape(0)[axis]
    if ctx.ndim(1) != 1:
        raise ctx.error(f"the condition must be 1-d, got rank {ctx.ndim(1)}")
    cond = ctx.const(1)
    if cond is not None:  # known at import time: a constant gather
        idx = np.nonzero(np.asarray(cond).reshape(-1))[0].astype("int64")
        if isinstance(dim, int) and idx.size and idx[-1] >= dim:
            raise ctx.error(f"the condition selects index {int(idx[-1])} of an axis of "
                            f"length {dim}")
        return R.take(x, ctx.const_expr(idx, "int64"), axis=axis)
    cond = ctx.input(1)
    length = ctx.shape(1)[0]
    if isinstance(length, int) and isinstance(dim, int) and length > dim:
        cond = ctx.emit(R.strided_slice(cond, [0], [0], [dim]))  # entries past the axis
    picked = _nonzero(ctx, cond, 1)
    count = picked.struct_info.shape_values[1]
    return R.take(x, ctx.emit(R.reshape(picked, [count])), axis=axis)


@converter("Unique", min_opset=11)
def _unique(ctx: Any) -> Any:
    axis: Optional[int] = ctx.attr("axis", None)
    is_sorted = bool(ctx.attr("sorted", 1))
    shape = ctx.shape(0)
    dtype = ctx.dtype(0)
    if axis is not None:
        ndim = len(shape)
        if not -ndim <= axis < ndim:
            raise ctx.error(f"axis {axis} is out of range for rank {ndim}")
        axis %= ndim
    wanted = [k < len(ctx.node.output) and bool(ctx.node.output[k]) for k in range(4)]
    parts = ctx.emit(unique(ctx.input(0), is_sorted, True, True, True, axis))
    count = _fresh("num_unique")
    values_shape = [count] if axis is None else [count if d == axis else s
                                                 for d, s in enumerate(shape)]
    n_rows = ctx.prod(shape) if axis is None else shape[axis]
    outputs: list[Any] = []
    for k, (part_shape, part_dtype) in enumerate([
            (values_shape, dtype), ([count], "int64"), ([n_rows], "int64"), ([count], "int64")]):
        if not wanted[k]:
            outputs.append(None)
            continue
        item = ctx.emit(TupleGetItem(parts, k))
        outputs.append(bind_shape(ctx, item, part_shape, part_dtype))
    return outputs


@converter("NonMaxSuppression", min_opset=10)
def _non_max_suppression(ctx: Any) -> Any:
    center = int(ctx.attr("center_point_box", 0))
    if center not in (0, 1):
        raise ctx.error(f"center_point_box must be 0 or 1, got {center}")
    for i, name in ((0, "boxes"), (1, "scores")):
        if ctx.ndim(i) != 3:
            raise ctx.error(f"{name} must have rank 3, got {ctx.ndim(i)}")

    def limit(i: int, default: Any, dtype: str) -> Any:
        if not ctx.has(i) or (ctx.static_shape(i) is not None and
                              int(np.prod(ctx.static_shape(i))) == 0):
            return ctx.const_expr(default, dtype)  # absent (or empty): the ONNX default
        return ctx.input(i)

    limits = [limit(2, 0, "int64"), limit(3, 0.0, "float32"),
              limit(4, float("-inf"), "float32")]  # no score threshold: every box
    out = non_max_suppression(ctx.input(0), ctx.input(1), *limits, center_point_box=center)
    return bind_shape(ctx, out, [_fresh("num_selected"), 3], "int64")
