"""Converters for indexing: advanced indexing (``index.Tensor``, ``index_put``), gather,
the scatter family, ``masked_fill``, ``embedding``, ``slice_scatter``, sorting and ``topk``.

Index tensors may be negative (counted from the end of their dimension, as torch does);
they are normalised before the Relax op so that flattened or stacked indices stay exact.
A boolean mask whose selection has a data-dependent size (``x[mask]``) is rejected, except
where the result has a static shape (``x[mask] = value``).
"""

from __future__ import annotations

from typing import Any, Sequence

from ... import op as _op
from .common import NodeContext, converter
from .ops_tensor import diagonal_plan, int_arg, is_static, with_torch_shape

def _size(ctx: NodeContext, value: Any) -> Any:
    """A size (int or PrimExpr) as a 0-d int64 tensor."""
    return ctx.importer.to_expr(value, "int64")


def _normalize_index(ctx: NodeContext, index: Any, dim: Any) -> Any:
    """``index`` as int64 with negative entries counted from the end of ``dim``."""
    index = ctx.astype(index, "int64")
    zero = ctx.const(0, "int64")
    return _op.where(_op.less(index, zero), _op.add(index, _size(ctx, dim)), index)


def _broadcast(shapes: Sequence[Sequence[Any]]) -> list[Any]:
    """The broadcast of shapes (ints / PrimExprs); a non-1 size wins over 1."""
    rank = max((len(s) for s in shapes), default=0)
    out: list[Any] = []
    for k in range(rank, 0, -1):
        size: Any = 1
        for s in shapes:
            if len(s) >= k and not (is_static(s[-k]) and s[-k] == 1):
                size = s[-k]
        out.append(size)
    return out


def _product(values: Sequence[Any]) -> Any:
    out: Any = 1
    for v in values:
        out = out * v
    return out


def _is_mask(ctx: NodeContext, index: Any) -> bool:
    return ctx.dtype(index) in ("bool", "uint8")


def _index_plan(ctx: NodeContext, x: Any, indices: Sequence[Any]) -> tuple:
    """positions of the index tensors, their normalised values, their broadcast shape and
    whether torch keeps the indexed block in place (adjacent positions)."""
    shape = ctx.shape(x)
    if len(indices) > len(shape):
        raise ctx.error(f"{len(indices)} indices for a {len(shape)}-d tensor")
    positions = [i for i, t in enumerate(indices) if t is not None]
    if not positions:
        raise ctx.error("indexing needs at least one index tensor")
    values = [_normalize_index(ctx, indices[p], shape[p]) for p in positions]
    batch = _broadcast([ctx.shape(indices[p]) for p in positions])
    adjacent = positions == list(range(positions[0], positions[-1] + 1))
    return positions, values, batch, adjacent


@converter("aten.index.Tensor", "aten._unsafe_index.Tensor")
def _index(ctx: NodeContext) -> Any:
    x = ctx.tensor(0)
    indices = list(ctx.arg(1, "indices"))
    for i, t in enumerate(indices):
        if t is not None and _is_mask(ctx, t):
            raise ctx.unsupported(
                f"index {i} is a boolean mask: x[mask] has a data-dependent number of "
                "elements; use torch.where(mask, x, other) to keep the shape static")
    shape = ctx.shape(x)
    positions, values, batch, adjacent = _index_plan(ctx, x, indices)
    if len(positions) == 1:
        return with_torch_shape(ctx, _op.take(x, values[0], positions[0]))
    ndim = len(shape)
    rest = [d for d in range(ndim) if d not in positions]
    order = positions + rest
    moved = x if order == list(range(ndim)) else _op.permute_dims(x, order)
    sizes = [shape[p] for p in positions]
    flat_index = None
    for k, value in enumerate(values):
        stride = _product(sizes[k + 1:])
        term = value if is_static(stride) and stride == 1 else _op.multiply(value,
                                                                            _size(ctx, stride))
        flat_index = term if flat_index is None else _op.add(flat_index, term)
    flat = _op.reshape(moved, [_product(sizes)] + [shape[d] for d in rest])
    out = _op.take(flat, flat_index, 0)  # batch dims, then the other dims in order
    b = len(batch)
    first = positions[0]
    if adjacent and first > 0:
        axes = list(range(b, b + first)) + list(range(b)) + list(range(b + first, b + len(rest)))
        out = _op.permute_dims(out, axes)
    return with_torch_shape(ctx, out)


@converter("aten.index_put.default", "aten._unsafe_index_put.default")
def _index_put(ctx: NodeContext) -> Any:
    x = ctx.tensor(0)
    indices = list(ctx.arg(1, "indices"))
    dtype = ctx.dtype(x)
    values = ctx.astype(ctx.tensor(2, "values"), dtype)
    accumulate = bool(ctx.arg(3, "accumulate", False))
    masks = [i for i, t in enumerate(indices) if t is not None and _is_mask(ctx, t)]
    if masks:
        return _masked_put(ctx, x, indices, masks, values, accumulate)
    shape = ctx.shape(x)
    ndim = len(shape)
    positions, idx, batch, adjacent = _index_plan(ctx, x, indices)
    rest = [d for d in range(ndim) if d not in positions]
    order = positions + rest
    moved = x if order == list(range(ndim)) else _op.permute_dims(x, order)
    stacked = _op.concat([_op.expand_dims(_op.broadcast_to(i, batch), -1) for i in idx], -1)
    first = positions[0]
    b = len(batch)
    if adjacent:
        torch_shape = shape[:first] + batch + shape[positions[-1] + 1:]
    else:
        torch_shape = batch + [shape[d] for d in rest]
    updates = _op.broadcast_to(values, torch_shape)
    if adjacent and first > 0:
        axes = list(range(first, first + b)) + list(range(first)) + \
            list(range(first + b, len(torch_shape)))
        updates = _op.permute_dims(updates, axes)
    out = _op.scatter_nd(moved, stacked, updates, "add" if accumulate else "update")
    if order != list(range(ndim)):
        inverse = [order.index(d) for d in range(ndim)]
        out = _op.permute_dims(out, inverse)
    return out


def _masked_put(ctx: NodeContext, x: Any, indices: Sequence[Any], masks: Sequence[int],
                values: Any, accumulate: bool) -> Any:
    """``x[..., mask, ...] = values`` for one mask and values that do not depend on how many
    elements the mask selects (one value, or one per position of the trailing dims)."""
    if len(masks) != 1 or any(t is not None for i, t in enumerate(indices) if i != masks[0]):
        raise ctx.unsupported("index_put with a boolean mask combined with other index tensors")
    mask = indices[masks[0]]
    if ctx.dtype(mask) != "bool":
        mask = _op.not_equal(mask, ctx.const(0, ctx.dtype(mask)))
    shape = ctx.shape(x)
    start = masks[0]
    trailing = shape[start + ctx.ndim(mask):]
    vshape = ctx.shape(values)
    while vshape and is_static(vshape[0]) and vshape[0] == 1:
        vshape = vshape[1:]
    if len(vshape) > len(trailing) or any(
        not (is_static(v) and v == 1) and not _same(ctx, v, t)
        for v, t in zip(reversed(vshape), reversed(trailing))
    ):
        raise ctx.unsupported(
            f"x[mask] = values with values of shape {ctx.shape(values)}: the number of selected "
            "elements is data-dependent; only values broadcastable to the unmasked trailing "
            "dimensions are supported")
    values = _op.reshape(values, vshape) if len(vshape) != ctx.ndim(values) else values
    cond = _op.reshape(mask, ctx.shape(mask) + [1] * len(trailing))
    if accumulate:
        zero = _op.zeros([], ctx.dtype(x))
        return _op.add(x, _op.where(cond, values, zero))
    return _op.broadcast_to(_op.where(cond, values, x), shape)


def _same(ctx: NodeContext, a: Any, b: Any) -> bool:
    from ...analysis.struct_info_analysis import prim_equal
    from .ops_tensor import _prim

    return prim_equal(_prim(a), _prim(b), ctx.bb.analyzer) is True


# -- gather and scatter --------------------------------------------------------------------
def _rank1(ctx: NodeContext, *tensors: Any) -> list[Any]:
    return [_op.reshape(t, [1]) if ctx.ndim(t) == 0 else t for t in tensors]


@converter("aten.gather.default")
def _gather(ctx: NodeContext) -> Any:
    x, index = ctx.tensor(0), ctx.tensor(2, "index")
    if any(is_static(d) and d == 0 for d in ctx.shape(index)):
        return _op.zeros(ctx.out_shape(), ctx.out_dtype())  # torch allows any rank then
    scalar = ctx.ndim(index) == 0
    x, index = _rank1(ctx, x, index)
    axis = ctx.axis(ctx.arg(1, "dim"), ctx.ndim(x))
    out = _op.gather_elements(x, _normalize_index(ctx, index, ctx.shape(x)[axis]), axis)
    return _op.reshape(out, []) if scalar else out


def _scatter(ctx: NodeContext, src: Any, reduction: str) -> Any:
    x, index = ctx.tensor(0), ctx.tensor(2, "index")
    scalar = ctx.ndim(x) == 0
    x, index, src = _rank1(ctx, x, index, src)
    axis = ctx.axis(ctx.arg(1, "dim"), ctx.ndim(x))
    src = _fit_src(ctx, ctx.astype(src, ctx.dtype(x)), index)
    index = _normalize_index(ctx, index, ctx.shape(x)[axis])
    out = _op.scatter_elements(x, index, src, axis, reduction)
    return _op.reshape(out, []) if scalar else out


def _fit_src(ctx: NodeContext, src: Any, index: Any) -> Any:
    """``src`` cut to ``index``'s shape (torch reads only that corner of it)."""
    have, want = ctx.shape(src), ctx.shape(index)
    if len(have) != len(want):
        raise ctx.error(f"index of rank {len(want)} and src of rank {len(have)} differ")
    for d, (h, w) in enumerate(zip(have, want)):
        if _same(ctx, h, w):
            continue
        stop = int_arg(ctx, w, f"the size of index dimension {d}")
        src = _op.strided_slice(src, [d], [0], [stop], [1])
    return src


def _scatter_mean(ctx: NodeContext, x: Any, index: Any, src: Any, axis: int,
                  include_self: bool) -> Any:
    dtype = ctx.dtype(x)
    base = x if include_self else _op.scatter_elements(x, index, _op.zeros_like(src), axis)
    sums = _op.scatter_elements(base, index, src, axis, "add")
    start = _op.ones_like(x) if include_self else _op.zeros_like(x)
    counts = _op.scatter_elements(start, index, _op.ones_like(src), axis, "add")
    safe = _op.maximum(counts, _op.ones_like(counts))
    if dtype.startswith(("float", "bfloat")):
        mean = _op.divide(sums, safe)
    else:
        mean = _op.floor_divide(sums, safe)
    return _op.where(_op.equal(counts, _op.zeros_like(counts)), x, mean)


@converter("aten.scatter.src", "aten.scatter.value", "aten.scatter.reduce",
           "aten.scatter.value_reduce")
def _scatter_ops(ctx: NodeContext) -> Any:
    reduce = ctx.arg(4, "reduce")
    reduction = {None: "update", "add": "add", "multiply": "mul"}.get(reduce)
    if reduction is None:
        raise ctx.unsupported(f"reduce={reduce!r} (one of 'add', 'multiply')")
    if ctx.op.startswith("aten.scatter.value"):
        value = ctx.arg(3, "value")
        index = ctx.tensor(2, "index")
        src = _op.full(ctx.shape(index), ctx.importer.to_expr(value, ctx.out_dtype()),
                       ctx.out_dtype())
    else:
        src = ctx.tensor(3, "src")
    return _scatter(ctx, src, reduction)


@converter("aten.scatter_add.default")
def _scatter_add(ctx: NodeContext) -> Any:
    return _scatter(ctx, ctx.tensor(3, "src"), "add")


_REDUCE = {"sum": "add", "prod": "mul", "amax": "max", "amin": "min", "mean": "mean"}


@converter("aten.scatter_reduce.two")
def _scatter_reduce(ctx: NodeContext) -> Any:
    x, index, src = ctx.tensor(0), ctx.tensor(2, "index"), ctx.tensor(3, "src")
    return _reduce_into(ctx, x, ctx.arg(1, "dim"), index, src, ctx.arg(4, "reduce"),
                        bool(ctx.arg(5, "include_self", True)))


@converter("aten.index_reduce.default")
def _index_reduce(ctx: NodeContext) -> Any:
    x, index, src = ctx.tensor(0), ctx.tensor(2, "index"), ctx.tensor(3, "source")
    reduce = ctx.arg(4, "reduce")
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise ctx.unsupported(f"reduce={reduce!r} (one of prod, mean, amax, amin)")
    x, src = _rank1(ctx, x, src)
    axis = ctx.axis(ctx.arg(1, "dim"), ctx.ndim(x))
    index = _spread(ctx, _rank1(ctx, index)[0], axis, ctx.shape(src))
    out = _reduce_into(ctx, x, axis, index, src, reduce, bool(ctx.arg(5, "include_self", True)))
    return _op.reshape(out, []) if ctx.ndim(ctx.tensor(0)) == 0 else out


def _spread(ctx: NodeContext, index: Any, axis: int, shape: Sequence[Any]) -> Any:
    """A 1-d ``index`` along ``axis`` broadcast to ``shape`` (index_* ops as scatters)."""
    view = [1] * len(shape)
    view[axis] = ctx.shape(index)[0]
    return _op.broadcast_to(_op.reshape(index, view), shape)


def _reduce_into(ctx: NodeContext, x: Any, dim: int, index: Any, src: Any, reduce: str,
                 include_self: bool) -> Any:
    """torch's scatter_reduce: ``src`` combined into ``x`` at ``index`` along ``dim``."""
    reduction = _REDUCE.get(reduce)
    if reduction is None:
        raise ctx.unsupported(f"reduce={reduce!r} (one of sum, prod, mean, amax, amin)")
    dtype = ctx.dtype(x)
    scalar = ctx.ndim(x) == 0
    x, index, src = _rank1(ctx, x, index, src)
    axis = ctx.axis(dim, ctx.ndim(x))
    src = _fit_src(ctx, ctx.astype(src, dtype), index)
    index = _normalize_index(ctx, index, ctx.shape(x)[axis])
    if reduction == "mean":
        out = _scatter_mean(ctx, x, index, src, axis, include_self)
    else:
        base = x
        if not include_self:  # receiving positions start from the reduction's identity
            fill = _op.full(ctx.shape(index), ctx.const(_identity(reduce, dtype), dtype), dtype)
            base = _op.scatter_elements(x, index, fill, axis)
        out = _op.scatter_elements(base, index, src, axis, reduction)
    return _op.reshape(out, []) if scalar else out


def _identity(reduce: str, dtype: str) -> Any:
    import numpy as np

    from tvm.ffi.dtype import to_numpy_dtype

    if reduce in ("sum", "prod"):
        return 0 if reduce == "sum" else 1
    if dtype.startswith(("float", "bfloat")):
        return -np.inf if reduce == "amax" else np.inf
    if dtype == "bool":
        return reduce == "amin"
    info = np.iinfo(to_numpy_dtype(dtype))
    return int(info.min if reduce == "amax" else info.max)


@converter("aten.slice_scatter.default")
def _slice_scatter(ctx: NodeContext) -> Any:
    x, src = ctx.tensor(0), ctx.astype(ctx.tensor(1), ctx.out_dtype())
    axis = ctx.axis(ctx.arg(2, "dim", 0), ctx.ndim(x))
    step = int_arg(ctx, ctx.arg(5, "step", 1), "step")
    start = ctx.arg(3, "start")
    dim = ctx.shape(x)[axis]
    start = 0 if start is None else start
    if is_static(start) and start < 0:
        start = start + dim
    if is_static(start, dim):
        start = min(max(start, 0), dim)
    length = ctx.shape(src)[axis]
    if is_static(length) and length == 0:
        return x
    positions = _op.add(_op.multiply(_op.arange(0, length, 1, "int64"), ctx.const(step, "int64")),
                        _size(ctx, start))
    view = [1] * ctx.ndim(x)
    view[axis] = length
    index = _op.broadcast_to(_op.reshape(positions, view), ctx.shape(src))
    return _op.scatter_elements(x, index, src, axis)


@converter("aten.diagonal_scatter.default")
def _diagonal_scatter(ctx: NodeContext) -> Any:
    x, src = ctx.tensor(0), ctx.astype(ctx.tensor(1, "src"), ctx.out_dtype())
    order, flat_shape, index = diagonal_plan(
        ctx, x, ctx.arg(2, "offset", 0), ctx.arg(3, "dim1", 0), ctx.arg(4, "dim2", 1),
        ctx.shape(src)[-1])
    moved = _op.permute_dims(x, order)
    flat = _op.reshape(moved, flat_shape)
    positions = _op.broadcast_to(index, ctx.shape(src))
    out = _op.reshape(_op.scatter_elements(flat, positions, src, len(flat_shape) - 1),
                      ctx.shape(moved))
    return _op.permute_dims(out, [order.index(d) for d in range(len(order))])


@converter("aten.masked_fill.Scalar", "aten.masked_fill.Tensor")
def _masked_fill(ctx: NodeContext) -> Any:
    x, mask = ctx.tensor(0), ctx.tensor(1, "mask")
    dtype = ctx.out_dtype()
    if ctx.dtype(mask) != "bool":
        raise ctx.error(f"mask must be a bool tensor, got {ctx.dtype(mask)}")
    value = ctx.astype(ctx.importer.to_expr(ctx.arg(2, "value"), dtype), dtype)
    if ctx.ndim(value) != 0:
        raise ctx.error(f"value must be a 0-d tensor, got {ctx.ndim(value)} dimension(s)")
    return _op.broadcast_to(_op.where(mask, value, ctx.astype(x, dtype)), ctx.out_shape())


@converter("aten.masked_scatter.default")
def _masked_scatter(ctx: NodeContext) -> Any:
    # the k-th selected position takes source's k-th element: k = trues before it
    x, mask, source = ctx.tensor(0), ctx.tensor(1, "mask"), ctx.tensor(2, "source")
    if ctx.dtype(mask) != "bool":
        raise ctx.error(f"mask must be a bool tensor, got {ctx.dtype(mask)}")
    dtype = ctx.out_dtype()
    shape = ctx.out_shape()
    x = _op.broadcast_to(ctx.astype(x, dtype), shape)
    flat_mask = _op.reshape(_op.broadcast_to(mask, shape), [-1])
    count = _product(ctx.shape(source))
    if is_static(count) and count == 0:
        return x
    rank = _op.cumsum(_op.astype(flat_mask, "int64"), 0, "int64", exclusive=True)
    taken = _op.take(_op.reshape(ctx.astype(source, dtype), [-1]), rank, 0, mode="clip")
    return _op.reshape(_op.where(flat_mask, taken, _op.reshape(x, [-1])), shape)


@converter("aten.take_along_dim.default")
def _take_along_dim(ctx: NodeContext) -> Any:
    x, index = ctx.tensor(0), ctx.tensor(1, "indices")
    dim = ctx.arg(2, "dim")
    if dim is None:
        flat = _op.reshape(x, [-1])
        return _op.take(flat, _normalize_index(ctx, _op.reshape(index, [-1]),
                                               _product(ctx.shape(x))), 0)
    if ctx.ndim(x) != ctx.ndim(index):
        raise ctx.error(f"input and indices must have the same rank, got {ctx.ndim(x)} and "
                        f"{ctx.ndim(index)}")
    x, index = _rank1(ctx, x, index)
    axis = ctx.axis(dim, ctx.ndim(x))
    shape = _broadcast([ctx.shape(x), ctx.shape(index)])
    x_shape, i_shape = list(shape), list(shape)
    x_shape[axis], i_shape[axis] = ctx.shape(x)[axis], ctx.shape(index)[axis]
    index = _normalize_index(ctx, _op.broadcast_to(index, i_shape), x_shape[axis])
    out = _op.gather_elements(_op.broadcast_to(x, x_shape), index, axis)
    return _op.reshape(out, ctx.out_shape()) if ctx.ndim(ctx.tensor(0)) == 0 else out


@converter("aten.take.default")
def _take(ctx: NodeContext) -> Any:
    x, index = ctx.tensor(0), ctx.tensor(1, "index")
    flat = _op.reshape(x, [-1])
    return _op.take(flat, _normalize_index(ctx, index, _product(ctx.shape(x))), 0)


@converter("aten.repeat_interleave.Tensor")  # nonzero, unique ...: ops_dynamic
def _data_dependent(ctx: NodeContext) -> Any:
    raise ctx.unsupported(
        "the output size depends on the tensor's values (data-dependent shape), which the "
        "importer does not support; keep shapes static (torch.where, a fixed-size mask, "
        "nonzero_static) or pass a custom_convert_map entry")


@converter("aten.embedding.default")
def _embedding(ctx: NodeContext) -> Any:
    # padding_idx, scale_grad_by_freq and sparse only change gradients
    weight, indices = ctx.tensor(0), ctx.tensor(1, "indices")
    if ctx.ndim(weight) != 2:
        raise ctx.error(f"weight must be 2-d, got {ctx.ndim(weight)}-d")
    return _op.take(weight, _normalize_index(ctx, indices, ctx.shape(weight)[0]), 0)


# -- sorting -------------------------------------------------------------------------------
@converter("aten.sort.default", "aten.sort.stable")
def _sort(ctx: NodeContext) -> Any:
    x = ctx.tensor(0)
    if ctx.op == "aten.sort.stable":
        dim, descending = ctx.kwargs.get("dim", -1), ctx.kwargs.get("descending", False)
    else:
        dim, descending = ctx.arg(1, "dim", -1), ctx.arg(2, "descending", False)
    if ctx.ndim(x) == 0:
        return [x, _op.zeros([], "int64")]
    axis = ctx.axis(dim, ctx.ndim(x))
    order = ctx.emit(_op.argsort(x, axis, bool(descending), "int64"))
    return [ctx.emit(_op.gather_elements(x, order, axis)), order]


@converter("aten.topk.default")
def _topk(ctx: NodeContext) -> Any:
    # sorted=False allows any order; the sorted one is a valid answer
    x = ctx.tensor(0)
    k = int_arg(ctx, ctx.arg(1, "k"), "k")
    largest = bool(ctx.arg(3, "largest", True))
    if ctx.ndim(x) == 0:
        if k > 1:
            raise ctx.error(f"k={k} is out of range for a 0-d tensor")
        return [x, _op.zeros([], "int64")] if k else [
            _op.zeros([0], ctx.dtype(x)), _op.zeros([0], "int64")]
    axis = ctx.axis(ctx.arg(2, "dim", -1), ctx.ndim(x))
    if k == 0:
        shape = ctx.out_shape()
        return [_op.zeros(shape, ctx.dtype(x)), _op.zeros(shape, "int64")]
    out = ctx.emit(_op.topk(x, k, axis, "both", largest, "int64"))
    from ...expr import TupleGetItem

    return [ctx.emit(TupleGetItem(out, 0)), ctx.emit(TupleGetItem(out, 1))]

