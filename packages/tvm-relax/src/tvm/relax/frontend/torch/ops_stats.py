"""Converters for ATen order statistics, running extremes, binning and segment reductions.

``median`` / ``nanmedian`` / ``kthvalue`` / ``mode`` sort along the axis with the stable
Relax ``argsort`` in torch's order (NaN after every number: a first stable sort on the value
with NaN as +inf, a second on the NaN flag).  ``median`` is NaN, at the first NaN's index,
where a slice holds one; ``nanmedian`` takes the lower median of the numbers.  torch picks
among tied values with ``std::nth_element`` (an unspecified one); here it is the one first
in the stable order.  ``mode`` returns the most frequent value (the smallest on a tie) at
its last position.  ``cummax`` / ``cummin`` follow eager: a tie moves the index to the later
element, and a NaN sticks (its index moves to each later NaN).

``searchsorted`` / ``bucketize`` count, per value, the sorted entries before it with torch's
binary-search predicate (``!(s >= v)`` left, ``!(s > v)`` right), so a NaN value lands at
the end as in eager.  The histograms compute each element's bin the way ATen does (linear
interpolation for ``histc``; plus a local search among the neighbouring edges for
``histogram`` with a bin count; a search of the edges for given edges) and add counts or
weights with ``scatter_elements(reduction="add")``; elements outside the range and NaNs are
dropped.  ``segment_reduce`` masks each segment's span and reduces with ``initial`` (or the
reduction's identity) folded in.

The sorts are O(n log n) per slice; ``mode``, ``cummax``/``cummin``, ``searchsorted`` and
the segment masks are broadcast comparisons, O(n * m) in memory for the two sizes compared.
"""

from __future__ import annotations

import math
from typing import Any, Optional, Sequence

from ... import op as _op
from .common import NodeContext, converter
from .ops_math import bound, is_float

__all__: list[str] = []


# -- helpers --------------------------------------------------------------------------------
def _lowest(ctx: NodeContext, dtype: str) -> Any:
    import numpy as np

    from tvm.ffi.dtype import to_numpy_dtype

    if is_float(dtype):
        return ctx.const(-math.inf, dtype)
    if dtype == "bool":
        return ctx.const(False, dtype)
    return ctx.const(np.iinfo(to_numpy_dtype(dtype)).min, dtype)


def _highest(ctx: NodeContext, dtype: str) -> Any:
    import numpy as np

    from tvm.ffi.dtype import to_numpy_dtype

    if is_float(dtype):
        return ctx.const(math.inf, dtype)
    if dtype == "bool":
        return ctx.const(True, dtype)
    return ctx.const(np.iinfo(to_numpy_dtype(dtype)).max, dtype)


def _nan(ctx: NodeContext, dtype: str) -> Any:
    return ctx.const(math.nan, dtype)


def _isnan(ctx: NodeContext, x: Any) -> Optional[Any]:
    """The NaN mask of a float tensor (None for other dtypes: nothing is NaN)."""
    return bound(ctx, _op.isnan(x)) if is_float(ctx.dtype(x)) else None


def _sortable(ctx: NodeContext, x: Any) -> Any:
    return ctx.astype(x, "uint8") if ctx.dtype(x) == "bool" else x


def _order(ctx: NodeContext, x: Any, axis: int) -> Any:
    """Stable int64 argsort along ``axis`` with NaN after every number (torch's order)."""
    x = _sortable(ctx, x)
    nan = _isnan(ctx, x)
    if nan is None:
        return ctx.emit(_op.argsort(x, axis, False, "int64"))
    key = _op.where(nan, _highest(ctx, ctx.dtype(x)), x)
    order = ctx.emit(_op.argsort(key, axis, False, "int64"))
    flags = ctx.emit(_op.gather_elements(ctx.astype(nan, "uint8"), order, axis))
    second = ctx.emit(_op.argsort(flags, axis, False, "int64"))
    return ctx.emit(_op.gather_elements(order, second, axis))


def _pick(ctx: NodeContext, x: Any, order: Any, pos: Any, axis: int) -> tuple[Any, Any]:
    """(value, index) at sorted position ``pos`` (an int, or an int64 tensor shaped like
    ``x`` with ``axis`` of size 1), keeping ``axis``."""
    if isinstance(pos, int):
        idx = ctx.emit(_op.strided_slice(order, [axis], [pos], [pos + 1]))
    else:
        idx = ctx.emit(_op.gather_elements(order, pos, axis))
    return ctx.emit(_op.gather_elements(x, idx, axis)), idx


def _finish(ctx: NodeContext, outs: Sequence[Any], axis: int, keep: bool) -> list[Any]:
    return [o if keep else ctx.emit(_op.squeeze(o, [axis])) for o in outs]


def _dim_keep(ctx: NodeContext, dim_i: int, keep_i: int, dim_default: Any = None) -> tuple:
    return ctx.arg(dim_i, "dim", dim_default), bool(ctx.arg(keep_i, "keepdim", False))


def _iota(ctx: NodeContext, n: Any, shape: Sequence[Any]) -> Any:
    """``arange(n)`` (int64) reshaped to ``shape`` (one entry of which is ``n``)."""
    return _op.reshape(_op.arange(n, dtype="int64"), list(shape))


# -- median / nanmedian / kthvalue ----------------------------------------------------------
def _median_along(ctx: NodeContext, x: Any, axis: int, ignore_nan: bool) -> tuple[Any, Any]:
    """(values, indices) of the lower median along ``axis``, keeping the axis."""
    n = ctx.shape(x)[axis]
    order = _order(ctx, x, axis)
    nan = _isnan(ctx, x)
    if nan is None or not ignore_nan:
        if isinstance(n, int):
            value, idx = _pick(ctx, x, order, (n - 1) // 2, axis)
        else:
            keep_shape = list(ctx.shape(x))
            keep_shape[axis] = 1
            pos = _op.full(keep_shape, _op.floor_divide(
                _op.subtract(ctx.importer.to_expr(n, "int64"), ctx.const(1, "int64")),
                ctx.const(2, "int64")), "int64")
            value, idx = _pick(ctx, x, order, ctx.emit(pos), axis)
        if nan is None:
            return value, idx
        flags = ctx.astype(nan, "uint8")
        anynan = ctx.emit(ctx.astype(_op.max(flags, [axis], True), "bool"))
        first = ctx.emit(_op.argmax(flags, axis, True))
        return (ctx.emit(_op.where(anynan, _nan(ctx, ctx.dtype(x)), value)),
                ctx.emit(_op.where(anynan, first, idx)))
    numbers = _op.sum(ctx.astype(_op.logical_not(nan), "int64"), [axis], True)
    pos = _op.floor_divide(_op.maximum(_op.subtract(numbers, ctx.const(1, "int64")),
                                       ctx.const(0, "int64")), ctx.const(2, "int64"))
    return _pick(ctx, x, order, ctx.emit(pos), axis)


@converter("aten.median.default", "aten.nanmedian.default")
def _median_all(ctx: NodeContext) -> Any:
    x = ctx.tensor(0)
    shape = ctx.shape(x)
    total: Any = 1
    for d in shape:
        total = total * d
    if isinstance(total, int) and total == 0:
        if not is_float(ctx.dtype(x)):
            raise ctx.error("median of an empty integer tensor")
        return _nan(ctx, ctx.dtype(x))
    flat = bound(ctx, _op.reshape(x, [total]))
    value, _ = _median_along(ctx, flat, 0, ctx.op.startswith("aten.nanmedian"))
    return ctx.emit(_op.reshape(value, []))


@converter("aten.median.dim", "aten.nanmedian.dim")
def _median_dim(ctx: NodeContext) -> Any:
    x = ctx.tensor(0)
    dim, keep = _dim_keep(ctx, 1, 2)
    ndim = ctx.ndim(x)
    axis = ctx.axis(dim, ndim)
    if ndim == 0:
        return [x, _op.zeros([], "int64")]
    if ctx.shape(x)[axis] == 0:
        raise ctx.error("median of an empty dimension")
    outs = _median_along(ctx, x, axis, ctx.op.startswith("aten.nanmedian"))
    return _finish(ctx, outs, axis, keep)


@converter("aten.kthvalue.default")
def _kthvalue(ctx: NodeContext) -> Any:
    x = ctx.tensor(0)
    k = ctx.arg(1, "k")
    if not isinstance(k, int):
        raise ctx.unsupported("kthvalue with a symbolic k")
    dim, keep = _dim_keep(ctx, 2, 3, -1)
    ndim = ctx.ndim(x)
    axis = ctx.axis(dim, ndim)
    n = 1 if ndim == 0 else ctx.shape(x)[axis]
    if isinstance(n, int) and not 1 <= k <= n:
        raise ctx.error(f"k={k} is out of range for a dimension of size {n}")
    if ndim == 0:
        return [x, _op.zeros([], "int64")]
    outs = _pick(ctx, x, _order(ctx, x, axis), k - 1, axis)
    return _finish(ctx, outs, axis, keep)


# -- mode -----------------------------------------------------------------------------------
def _same(ctx: NodeContext, a: Any, b: Any) -> Any:
    """``a == b`` with NaN equal to NaN."""
    eq = _op.equal(a, b)
    if is_float(ctx.dtype(a)):
        eq = _op.logical_or(eq, _op.logical_and(_op.isnan(a), _op.isnan(b)))
    return eq


def _to_last(ctx: NodeContext, x: Any, axis: int) -> Any:
    ndim = ctx.ndim(x)
    if axis == ndim - 1:
        return x
    perm = [d for d in range(ndim) if d != axis] + [axis]
    return bound(ctx, _op.permute_dims(x, perm))


def _from_last(ctx: NodeContext, x: Any, axis: int, ndim: int) -> Any:
    if axis == ndim - 1:
        return x
    perm = list(range(ndim - 1))
    perm.insert(axis, ndim - 1)
    return ctx.emit(_op.permute_dims(x, perm))


@converter("aten.mode.default")
def _mode(ctx: NodeContext) -> Any:
    x = _sortable(ctx, ctx.tensor(0))
    out_dtype = ctx.out_dtype()
    dim, keep = ctx.arg(1, "dim", -1), bool(ctx.arg(2, "keepdim", False))
    ndim = ctx.ndim(x)
    axis = ctx.axis(dim, ndim)
    if ndim == 0:
        return [ctx.astype(x, out_dtype), _op.zeros([], "int64")]
    n = ctx.shape(x)[axis]
    v = _to_last(ctx, x, axis)
    dtype = ctx.dtype(v)
    counts = bound(ctx, _op.sum(ctx.astype(
        _same(ctx, _op.expand_dims(v, -1), _op.expand_dims(v, -2)), "int64"), [ndim], False))
    best = _op.equal(counts, _op.max(counts, [ndim - 1], True))
    nan = _isnan(ctx, v)
    numbers = best if nan is None else _op.logical_and(best, _op.logical_not(nan))
    numbers = bound(ctx, numbers)
    value = _op.min(_op.where(numbers, v, _highest(ctx, dtype)), [ndim - 1], True)
    if nan is not None:  # only NaNs are the most frequent
        anynum = ctx.astype(_op.max(ctx.astype(numbers, "uint8"), [ndim - 1], True), "bool")
        value = _op.where(anynum, value, _nan(ctx, dtype))
    value = bound(ctx, value)
    shape = [1] * (ndim - 1) + [n]
    hits = _op.logical_and(best, _same(ctx, v, value))
    index = _op.max(_op.where(hits, _iota(ctx, n, shape), ctx.const(-1, "int64")),
                    [ndim - 1], True)
    outs = [_from_last(ctx, ctx.emit(t), axis, ndim) for t in (value, index)]
    outs[0] = ctx.astype(outs[0], out_dtype)
    return _finish(ctx, outs, axis, keep)


# -- cummax / cummin --------------------------------------------------------------------------
@converter("aten.cummax.default", "aten.cummin.default")
def _cum_extreme(ctx: NodeContext) -> Any:
    x = ctx.tensor(0)
    largest = ctx.op.startswith("aten.cummax")
    ndim = ctx.ndim(x)
    axis = ctx.axis(ctx.arg(1, "dim"), ndim)
    if ndim == 0:
        return [x, _op.zeros([], "int64")]
    out_dtype = ctx.dtype(x)
    v = _to_last(ctx, _sortable(ctx, x), axis)
    dtype = ctx.dtype(v)
    n = ctx.shape(v)[-1]
    # earlier[..., i, j]: j <= i
    earlier = bound(ctx, _op.less_equal(_iota(ctx, n, [1, n]), _iota(ctx, n, [n, 1])))
    nan = _isnan(ctx, v)
    fill = _lowest(ctx, dtype) if largest else _highest(ctx, dtype)
    clean = v if nan is None else bound(ctx, _op.where(nan, fill, v))
    rows = _op.expand_dims(clean, -2)  # [..., 1, j]
    reduce = _op.max if largest else _op.min
    best = bound(ctx, reduce(_op.where(earlier, rows, fill), [ndim], False))
    cols = _iota(ctx, n, [n] if ndim == 1 else [1] * (ndim - 1) + [n])
    cols = _op.reshape(cols, [1] * ndim + [n])
    hit = _op.logical_and(earlier, _op.equal(rows, _op.expand_dims(best, -1)))
    minus = ctx.const(-1, "int64")
    index = bound(ctx, _op.max(_op.where(hit, cols, minus), [ndim], False))
    if nan is not None:
        seen = _op.logical_and(earlier, _op.expand_dims(nan, -2))
        last_nan = bound(ctx, _op.max(_op.where(seen, cols, minus), [ndim], False))
        has_nan = bound(ctx, _op.greater_equal(last_nan, ctx.const(0, "int64")))
        best = _op.where(has_nan, _nan(ctx, dtype), best)
        index = _op.where(has_nan, last_nan, index)
    outs = [_from_last(ctx, ctx.emit(t), axis, ndim) for t in (best, index)]
    outs[0] = ctx.astype(outs[0], out_dtype)
    return outs


# -- searchsorted / bucketize -----------------------------------------------------------------
def _search(ctx: NodeContext, seq: Any, values: Any, right: bool, out_dtype: str) -> Any:
    """Per value, the number of ``seq`` entries (along its last axis) before it: ``seq``
    1-d, or with the leading dimensions of ``values``."""
    dtype = ctx.dtype(seq)
    if ctx.dtype(values) != dtype:
        import torch

        from .common import torch_dtype_to_str

        common = torch_dtype_to_str(torch.promote_types(
            ctx.arg_meta(0).dtype, ctx.arg_meta(1).dtype)) if ctx.arg_meta(1) is not None else dtype
        seq, values = ctx.astype(seq, common), ctx.astype(values, common)
    vnd = ctx.ndim(values)
    if ctx.ndim(seq) == 1:
        s = _op.reshape(seq, [1] * vnd + [ctx.shape(seq)[0]])
        v = _op.expand_dims(values, -1) if vnd else _op.reshape(values, [1])
        axis = vnd
    else:
        s = _op.expand_dims(seq, -2)  # [..., 1, n]
        v = _op.expand_dims(values, -1)  # [..., m, 1]
        axis = vnd
    before = _op.logical_not(_op.greater(s, v) if right else _op.greater_equal(s, v))
    count = _op.sum(ctx.astype(before, "int64"), [axis], False)
    return ctx.astype(bound(ctx, count), out_dtype)


@converter("aten.searchsorted.Tensor", "aten.searchsorted.Scalar")
def _searchsorted(ctx: NodeContext) -> Any:
    seq = ctx.tensor(0)
    raw = ctx.arg(1, "self")
    values = ctx.importer.to_expr(raw, ctx.dtype(seq))
    right = bool(ctx.kwargs.get("right", ctx.arg(3, default=False)))
    side = ctx.kwargs.get("side", ctx.arg(4))
    if side is not None:
        if side not in ("left", "right"):
            raise ctx.error(f"side must be 'left' or 'right', got {side!r}")
        if right and side == "left":
            raise ctx.error("side='left' contradicts right=True")
        right = side == "right"
    sorter = ctx.kwargs.get("sorter", ctx.arg(5))
    if ctx.ndim(seq) == 0:
        raise ctx.error("the sorted sequence must have at least one dimension")
    if ctx.ndim(seq) > 1 and ctx.ndim(values) != ctx.ndim(seq):
        raise ctx.error("an N-d sorted sequence needs values of the same rank")
    if sorter is not None:
        seq = bound(ctx, _op.gather_elements(seq, sorter, ctx.ndim(seq) - 1))
    return _search(ctx, seq, values, right, ctx.out_dtype())


@converter("aten.bucketize.Tensor", "aten.bucketize.Scalar")
def _bucketize(ctx: NodeContext) -> Any:
    boundaries = ctx.tensor(1, "boundaries")
    values = ctx.importer.to_expr(ctx.arg(0, "self"), ctx.dtype(boundaries))
    if ctx.ndim(boundaries) != 1:
        raise ctx.error("boundaries must be 1-d")
    right = bool(ctx.kwargs.get("right", ctx.arg(3, default=False)))
    return _search(ctx, boundaries, values, right, ctx.out_dtype())


# -- histograms -----------------------------------------------------------------------------
def _linspace(ctx: NodeContext, lo: Any, hi: Any, steps: int, dtype: str) -> Any:
    """torch's ``linspace(lo, hi, steps)`` (0-d tensor bounds): the first half stepping up
    from ``lo``, the rest down from ``hi``."""
    if steps == 1:
        return _op.reshape(lo, [1])
    step = _op.divide(_op.subtract(hi, lo), ctx.const(steps - 1, dtype))
    i = ctx.astype(_op.arange(steps, dtype="int64"), dtype)
    up = _op.add(lo, _op.multiply(step, i))
    down = _op.subtract(hi, _op.multiply(step, _op.subtract(ctx.const(steps - 1, dtype), i)))
    half = _op.less(_op.arange(steps, dtype="int64"), ctx.const(steps // 2, "int64"))
    return bound(ctx, _op.where(half, up, down))


def _outer_edges(ctx: NodeContext, col: Any, rng: Optional[Sequence[float]], widen: float,
                 dtype: str) -> tuple[Any, Any]:
    """The histogram range of one column: ``rng`` or the data's min/max, widened by
    ``widen`` on each side when empty."""
    if rng is not None:
        lo, hi = float(rng[0]), float(rng[1])
        if lo > hi:
            raise ctx.error(f"the range's min {lo} exceeds its max {hi}")
        if lo == hi:
            lo, hi = lo - widen, hi + widen
        return ctx.const(lo, dtype), ctx.const(hi, dtype)
    lo = bound(ctx, _op.min(col, None, False))
    hi = bound(ctx, _op.max(col, None, False))
    same = bound(ctx, _op.equal(lo, hi))
    w = ctx.const(widen, dtype)
    return (bound(ctx, _op.where(same, _op.subtract(lo, w), lo)),
            bound(ctx, _op.where(same, _op.add(hi, w), hi)))


def _bin_of(ctx: NodeContext, col: Any, lo: Any, hi: Any, edges: Any, bins: Optional[int],
            method: str) -> tuple[Any, Any]:
    """(bin int64, in-range bool) of each element of the 1-d ``col``.

    ``method``: "linear" (``histc``), "local" (linear then a search among the edges next to
    it) or "search" (``edges`` given; ``bins`` may be None)."""
    dtype = ctx.dtype(col)
    inside = bound(ctx, _op.logical_and(_op.greater_equal(col, lo), _op.less_equal(col, hi)))
    if method == "search":
        n_edges = ctx.shape(edges)[0]
        le = _op.less_equal(_op.expand_dims(edges, 0), _op.expand_dims(col, -1))
        pos = _op.subtract(_op.sum(ctx.astype(le, "int64"), [1], False), ctx.const(1, "int64"))
        last = n_edges - 1
    else:
        scaled = _op.divide(_op.multiply(_op.subtract(col, lo), ctx.const(bins, dtype)),
                            _op.subtract(hi, lo))
        safe = _op.where(inside, scaled, ctx.const(0, dtype))
        pos = bound(ctx, ctx.astype(_op.trunc(safe), "int64"))
        last = bins
        if method == "local":  # upper_bound among edges[pos-1 : pos+2], minus one
            lo_i = _op.maximum(_op.subtract(pos, ctx.const(1, "int64")), ctx.const(0, "int64"))
            hi_i = _op.minimum(_op.add(pos, ctx.const(2, "int64")), ctx.const(bins + 1, "int64"))
            # the edges are sorted: the window's upper_bound is the global one clamped to it
            le = _op.less_equal(_op.expand_dims(edges, 0), _op.expand_dims(col, -1))
            upper = _op.sum(ctx.astype(le, "int64"), [1], False)
            pos = _op.subtract(_op.minimum(_op.maximum(upper, lo_i), hi_i),
                               ctx.const(1, "int64"))
    pos = bound(ctx, pos)
    pos = _op.where(_op.equal(pos, ctx.const(last, "int64")), _op.subtract(
        pos, ctx.const(1, "int64")), pos)
    return bound(ctx, pos), inside


def _scatter_hist(ctx: NodeContext, flat_bin: Any, inside: Any, total: int, weight: Any,
                  dtype: str) -> Any:
    """Counts (or summed ``weight``) per flat bin, elements not ``inside`` dropped."""
    index = _op.where(inside, flat_bin, ctx.const(total, "int64"))
    if weight is None:
        n = ctx.shape(flat_bin)[0]
        updates = _op.ones([n], dtype)
    else:
        updates = ctx.astype(weight, dtype)
    zeros = _op.zeros([total + 1], dtype)
    hist = _op.scatter_elements(zeros, index, updates, 0, "add")
    return bound(ctx, _op.strided_slice(hist, [0], [0], [total]))


def _flatten(ctx: NodeContext, x: Any) -> Any:
    total: Any = 1
    for d in ctx.shape(x):
        total = total * d
    return bound(ctx, _op.reshape(x, [total]))


@converter("aten.histc.default")
def _histc(ctx: NodeContext) -> Any:
    x = ctx.tensor(0)
    dtype = ctx.dtype(x)
    if not is_float(dtype):
        raise ctx.unsupported(f"histc of a {dtype} tensor (floating point only)")
    bins = int(ctx.arg(1, "bins", 100))
    lo_v, hi_v = float(ctx.arg(2, "min", 0)), float(ctx.arg(3, "max", 0))
    if bins <= 0:
        raise ctx.error(f"bins must be positive, got {bins}")
    if lo_v > hi_v:
        raise ctx.error(f"min {lo_v} exceeds max {hi_v}")
    col = _flatten(ctx, x)
    lo, hi = _outer_edges(ctx, col, None if lo_v == hi_v else (lo_v, hi_v), 1.0, dtype)
    pos, inside = _bin_of(ctx, col, lo, hi, None, bins, "linear")
    return _scatter_hist(ctx, pos, inside, bins, None, dtype)


def _histogramdd(ctx: NodeContext, x: Any, bins: Any, rng: Any, weight: Any, density: bool,
                 one_d: bool) -> tuple[Any, list[Any]]:
    """(hist, bin edges per dimension) of the points ``x`` (``[..., D]``; 1-d data when
    ``one_d``): ``bins`` an int, a list of ints or a list of edge tensors."""
    dtype = ctx.dtype(x)
    if not is_float(dtype):
        raise ctx.unsupported(f"histogram of a {dtype} tensor (floating point only)")
    if one_d:
        points = bound(ctx, _op.reshape(_flatten(ctx, x), [-1, 1]))
    else:
        shape = ctx.shape(x)
        points = bound(ctx, _op.reshape(x, [-1, shape[-1]]))
    d = ctx.shape(points)[1]
    if not isinstance(d, int):
        raise ctx.unsupported("histogramdd with a symbolic number of dimensions")
    if isinstance(bins, (int,)) or not isinstance(bins, (list, tuple)):
        bins = [bins] * d
    if len(bins) != d:
        raise ctx.error(f"{len(bins)} bin specs for {d}-d points")
    if rng is not None and len(rng) != 2 * d:
        raise ctx.error(f"range needs {2 * d} numbers, got {len(rng)}")
    flat = None
    inside_all = None
    sizes: list[int] = []
    all_edges = []
    for k in range(d):
        col = bound(ctx, _op.reshape(_op.strided_slice(points, [1], [k], [k + 1]), [-1]))
        spec = bins[k]
        if isinstance(spec, int):
            if spec <= 0:
                raise ctx.error(f"bins must be positive, got {spec}")
            r = None if rng is None else rng[2 * k: 2 * k + 2]
            lo, hi = _outer_edges(ctx, col, r, 0.5, dtype)
            edges = _linspace(ctx, lo, hi, spec + 1, dtype)
            pos, inside = _bin_of(ctx, col, lo, hi, edges, spec, "local")
            size = spec
        else:
            edges = ctx.astype(spec, dtype)
            n_edges = ctx.shape(edges)[0]
            if not isinstance(n_edges, int) or n_edges < 1:
                raise ctx.unsupported("bin edges of a symbolic (or zero) length")
            lo = bound(ctx, _op.reshape(_op.strided_slice(edges, [0], [0], [1]), []))
            hi = bound(ctx, _op.reshape(_op.strided_slice(edges, [0], [n_edges - 1],
                                                          [n_edges]), []))
            pos, inside = _bin_of(ctx, col, lo, hi, edges, None, "search")
            size = n_edges - 1
        all_edges.append(edges)
        sizes.append(size)
        flat = pos if flat is None else _op.add(_op.multiply(
            flat, ctx.const(size, "int64")), pos)
        inside_all = inside if inside_all is None else _op.logical_and(inside_all, inside)
    total = 1
    for s in sizes:
        total *= s
    if weight is not None:
        weight = _flatten(ctx, weight)
    if total == 0:
        hist = _op.zeros(sizes, dtype)
    else:
        hist = _op.reshape(_scatter_hist(ctx, bound(ctx, flat), bound(ctx, inside_all),
                                         total, weight, dtype), sizes)
    if density:
        hist = bound(ctx, hist)
        hist = _op.divide(hist, _op.sum(hist, None, False))
        for k, edges in enumerate(all_edges):
            n = ctx.shape(edges)[0]
            width = _op.subtract(_op.strided_slice(edges, [0], [1], [n]),
                                 _op.strided_slice(edges, [0], [0], [n - 1]))
            view = [1] * d
            view[k] = n - 1
            hist = _op.divide(hist, _op.reshape(width, view))
    return ctx.emit(hist), all_edges


def _hist_kwargs(ctx: NodeContext, first: int) -> tuple[Any, Any, bool]:
    rng = ctx.kwargs.get("range", ctx.arg(first))
    weight = ctx.kwargs.get("weight", ctx.arg(first + 1))
    density = bool(ctx.kwargs.get("density", ctx.arg(first + 2, default=False)))
    return rng, weight, density


@converter("aten.histogram.bin_ct", "aten.histogram.bins_tensor")
def _histogram(ctx: NodeContext) -> Any:
    x = ctx.tensor(0)
    bins = ctx.arg(1, "bins", 100)
    if ctx.op.endswith("bins_tensor"):
        rng = None
        weight = ctx.kwargs.get("weight", ctx.arg(2))
        density = bool(ctx.kwargs.get("density", ctx.arg(3, default=False)))
        if ctx.ndim(bins) != 1:
            raise ctx.error("bins must be a 1-d tensor of edges")
        bins = [bins]
    else:
        rng, weight, density = _hist_kwargs(ctx, 2)
        bins = [int(bins)]
    hist, edges = _histogramdd(ctx, x, bins, rng, weight, density, True)
    return [hist, edges[0]]


@converter("aten._histogramdd_bin_edges.default")
def _histogramdd_bin_edges(ctx: NodeContext) -> Any:
    x = ctx.tensor(0)
    bins = [int(b) for b in ctx.arg(1, "bins")]
    rng = ctx.kwargs.get("range", ctx.arg(2))
    dtype = ctx.dtype(x)
    points = bound(ctx, _op.reshape(x, [-1, ctx.shape(x)[-1]]))
    out = []
    for k, spec in enumerate(bins):
        col = bound(ctx, _op.reshape(_op.strided_slice(points, [1], [k], [k + 1]), [-1]))
        r = None if rng is None else rng[2 * k: 2 * k + 2]
        lo, hi = _outer_edges(ctx, col, r, 0.5, dtype)
        out.append(_linspace(ctx, lo, hi, spec + 1, dtype))
    return out


@converter("aten._histogramdd_from_bin_cts.default", "aten._histogramdd_from_bin_tensors.default")
def _histogramdd_from(ctx: NodeContext) -> Any:
    x = ctx.tensor(0)
    bins = ctx.arg(1, "bins")
    if ctx.op.startswith("aten._histogramdd_from_bin_cts"):
        rng, weight, density = _hist_kwargs(ctx, 2)
        bins = [int(b) for b in bins]
    else:
        rng = None
        weight = ctx.kwargs.get("weight", ctx.arg(2))
        density = bool(ctx.kwargs.get("density", ctx.arg(3, default=False)))
        bins = list(bins)
    hist, _ = _histogramdd(ctx, x, bins, rng, weight, density, False)
    return hist


# -- segment_reduce -------------------------------------------------------------------------
@converter("aten.segment_reduce.default")
def _segment_reduce(ctx: NodeContext) -> Any:
    data = ctx.tensor(0)
    reduce = ctx.arg(1, "reduce")
    lengths = ctx.kwargs.get("lengths", ctx.arg(2))
    indices = ctx.kwargs.get("indices", ctx.arg(3))
    offsets = ctx.kwargs.get("offsets", ctx.arg(4))
    axis_arg = ctx.kwargs.get("axis", ctx.arg(5, default=0))
    initial = ctx.kwargs.get("initial", ctx.arg(7))
    # unsafe only skips eager's checks of the lengths
    if indices is not None:
        raise ctx.unsupported("segment_reduce with indices (torch does not support it either)")
    if reduce not in ("sum", "mean", "max", "min", "prod"):
        raise ctx.unsupported(f"segment_reduce reduction {reduce!r}")
    ndim = ctx.ndim(data)
    axis = ctx.axis(axis_arg, ndim)
    dtype = ctx.dtype(data)
    if offsets is not None:
        offsets = ctx.astype(offsets, "int64")
        m = ctx.shape(offsets)[-1]
        last = ctx.ndim(offsets) - 1
        starts = bound(ctx, _op.strided_slice(offsets, [last], [0], [m - 1]))
        ends = bound(ctx, _op.strided_slice(offsets, [last], [1], [m]))
        counts = bound(ctx, _op.subtract(ends, starts))
    elif lengths is not None:
        counts = bound(ctx, ctx.astype(lengths, "int64"))
        last = ctx.ndim(counts) - 1
        ends = bound(ctx, _op.cumsum(counts, last))
        starts = bound(ctx, _op.subtract(ends, counts))
    else:
        raise ctx.error("segment_reduce needs lengths or offsets")
    if last != axis:
        raise ctx.error(f"axis {axis} must be the last dimension of lengths/offsets ({last})")
    n = ctx.shape(data)[axis]
    rest = ndim - axis - 1
    # inside[..., s, j]: element j of data's axis belongs to segment s
    j = _iota(ctx, n, [1] * axis + [1, n])
    inside = _op.logical_and(_op.less_equal(_op.expand_dims(starts, -1), j),
                             _op.less(j, _op.expand_dims(ends, -1)))
    inside = bound(ctx, _op.reshape(inside, list(ctx.shape(counts)) + [n] + [1] * rest))
    values = _op.expand_dims(data, axis)  # [..., 1, n, rest]
    init = None if initial is None else ctx.const(initial, dtype)
    red_axis = axis + 1
    if reduce in ("max", "min"):
        fill = init if init is not None else (
            _lowest(ctx, dtype) if reduce == "max" else _highest(ctx, dtype))
        fn = _op.max if reduce == "max" else _op.min
        return fn(_op.where(inside, values, fill), [red_axis], False)
    if reduce == "prod":
        out = _op.prod(_op.where(inside, values, ctx.const(1, dtype)), [red_axis], False)
        return out if init is None else _op.multiply(out, init)
    out = _op.sum(_op.where(inside, values, ctx.const(0, dtype)), [red_axis], False)
    if init is not None:
        out = _op.add(out, init)
    if reduce == "sum":
        return out
    count = _op.reshape(ctx.astype(counts, dtype), list(ctx.shape(counts)) + [1] * rest)
    count = bound(ctx, count)
    empty = _op.equal(count, ctx.const(0, dtype))
    mean = _op.divide(out, _op.where(empty, ctx.const(1, dtype), count))
    return _op.where(empty, init if init is not None else _nan(ctx, dtype), mean)
