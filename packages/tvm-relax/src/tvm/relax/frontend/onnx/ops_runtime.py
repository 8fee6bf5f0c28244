"""Converters for ONNX operators whose shape-deciding input is known only at run time
(Reshape/Expand/Tile/ConstantOfShape shapes, Range bounds, Slice bounds, TopK's K, OneHot's
depth, Squeeze/Unsqueeze axes, Trilu's k, Split sizes, Pad pads, CenterCropPad's shape,
window lengths, AffineGrid's size, Resize sizes and scales).

:mod:`.ops_tensor`, :mod:`.ops_misc` and :mod:`.ops_nn` call them when that input is not
known at import time.  Each computes
the output shape as an int64 tensor and turns it into symbolic dimensions with
:func:`.runtime_shape.to_dims`, which also fails, naming the node, when the values are
invalid; the operator itself is then the usual one on a symbolic shape.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tvm import tir
from tvm.tir.expr import PrimExpr

from ...expr import PrimValue, ShapeExpr, TupleGetItem
from ...op.dynamic import dynamic_strided_slice
from . import runtime_shape as rs
from .common import R
from .ops_dynamic import bind_shape

INT_MAX = 2**63 - 1


def _prim(dim: Any) -> Any:
    return PrimValue(dim) if isinstance(dim, PrimExpr) else dim


def _arange(dim: Any) -> Any:
    """``arange(dim)`` as int64 for an int or a symbolic dimension."""
    return R.arange(_prim(dim), dtype="int64")


def checked(ctx: Any, x: Any, valid: Any, what: str) -> Any:
    """``x`` passed through a run-time check: it fails, naming the node, unless ``valid``."""
    shape = ctx.importer.shape_of(x)
    vec = rs.dims_vector(ctx, shape)
    return ctx.emit(R.reshape(x, rs.to_dims(ctx, vec, len(shape), what, valid)))


# -- Reshape / Squeeze / Unsqueeze -------------------------------------------------------------
def reshape(ctx: Any) -> Any:
    """Reshape to a shape given at run time: its 0 entries (unless ``allowzero``) copy the
    input's dimension, a -1 takes what is left; the element count is checked."""
    shape = ctx.shape(0)
    target, n = rs.int_vector(ctx, 1, "shape")
    zero, one, neg = rs.i64(ctx, 0), rs.i64(ctx, 1), rs.i64(ctx, -1)
    if not ctx.attr("allowzero", 0):
        src = rs.dims_vector(ctx, [shape[i] if i < len(shape) else 0 for i in range(n)])
        target = ctx.emit(R.where(R.equal(target, zero), src, target))
    infer = R.equal(target, neg)
    count = R.sum(R.astype(infer, "int64"), None, False)
    known = R.prod(R.where(infer, one, target), None, False)
    total = rs.scalar_dim(ctx, ctx.prod(shape))
    inferred = R.floor_divide(total, R.maximum(known, one))
    target = ctx.emit(R.where(infer, inferred, target))
    return rs.checked_reshape(ctx, ctx.input(0), target, n,
                              "shape (another element count, or several -1)",
                              ctx.emit(R.less_equal(count, one)))


def _axes(ctx: Any, ndim: int) -> tuple[Any, Any, int]:
    """Run-time axes of a rank-``ndim`` tensor: (per-dimension count of the axes naming it,
    whether they are in range and distinct, how many axes)."""
    axes, n = rs.int_vector(ctx, 1, "axes")
    axes, in_range = rs.normalized_axes(ctx, axes, ndim)
    mask = rs.axis_mask(ctx, axes, ndim)
    once = R.less_equal(R.max(mask, None, False), rs.i64(ctx, 1)) if ndim else in_range
    return mask, ctx.emit(R.logical_and(in_range, once)), n


def squeeze(ctx: Any) -> Any:
    """Squeeze with axes given at run time (they must name dimensions of size 1)."""
    shape = ctx.shape(0)
    mask, valid, n = _axes(ctx, len(shape))
    dims = rs.dims_vector(ctx, shape)
    zero, one = rs.i64(ctx, 0), rs.i64(ctx, 1)
    named_not_one = R.logical_and(R.equal(mask, one), R.not_equal(dims, one))
    squeezable = R.equal(R.sum(R.where(named_not_one, one, zero), None, False), zero)
    valid = ctx.emit(R.logical_and(valid, squeezable))
    out = rs.compact(ctx, dims, ctx.emit(one - mask), len(shape), len(shape) - n)
    return R.reshape(ctx.input(0), rs.to_dims(
        ctx, out, len(shape) - n, "axes (out of range, repeated or not of size 1)", valid))


def unsqueeze(ctx: Any) -> Any:
    """Unsqueeze with axes given at run time (the output rank is the input's plus their
    number)."""
    shape = ctx.shape(0)
    out_ndim = len(shape) + rs.int_vector(ctx, 1, "axes")[1]
    mask, valid, _ = _axes(ctx, out_ndim)
    out = rs.expand(ctx, rs.dims_vector(ctx, shape), mask, out_ndim, 1)
    return R.reshape(ctx.input(0), rs.to_dims(ctx, out, out_ndim,
                                              "axes (out of range or repeated)", valid))


# -- Trilu / ConstantOfShape / Range / OneHot --------------------------------------------------
def trilu(ctx: Any) -> Any:
    """Trilu with the diagonal ``k`` given at run time: a mask of ``col - row`` against it
    (the shape does not depend on ``k``)."""
    shape = ctx.shape(0)
    if len(shape) < 2:
        raise ctx.error(f"input must have rank >= 2, got {len(shape)}")
    rows, cols = shape[-2:]
    k = ctx.emit(R.reshape(rs.int_vector(ctx, 1, "k")[0], []))
    diag = ctx.emit(_arange(cols) - R.reshape(_arange(rows), [rows, 1]))
    keep = R.greater_equal(diag, k) if ctx.attr("upper", 1) else R.less_equal(diag, k)
    return R.where(keep, ctx.input(0), ctx.const_expr(0, ctx.dtype(0)))


def constant_of_shape(ctx: Any, value: Any, dtype: str) -> Any:
    """ConstantOfShape of a shape given at run time."""
    vec, n = rs.int_vector(ctx, 0, "shape")
    dims = rs.to_dims(ctx, vec, n, "shape (a negative dimension)")
    return R.full(ShapeExpr(dims), ctx.const_expr(value, dtype), dtype)


def _scalar(ctx: Any, i: int, what: str) -> Any:
    if ctx.static_shape(i) not in ([], [1]):
        raise ctx.error(f"input {i} ({what}) must be a scalar, got shape {ctx.shape(i)}")
    return ctx.emit(R.reshape(ctx.input(i), []))


def range_(ctx: Any) -> Any:
    """Range with start, limit or delta given at run time: ``max(ceil((limit - start) /
    delta), 0)`` elements ``start + i * delta`` (delta 0 fails at run time)."""
    dt = ctx.dtype(0)
    start, limit, delta = (_scalar(ctx, i, w) for i, w in enumerate(("start", "limit", "delta")))
    nonzero = ctx.emit(R.not_equal(delta, ctx.const_expr(0, dt)))
    safe = R.where(nonzero, delta, ctx.const_expr(1, dt))
    if dt.startswith(("int", "uint")):
        span, step = R.astype(limit - start, "int64"), R.astype(safe, "int64")
        count = R.negative(R.floor_divide(R.negative(span), step))
    else:
        count = R.astype(R.ceil(R.astype(limit - start, "float64") /
                                R.astype(safe, "float64")), "int64")
    count = R.reshape(R.maximum(count, rs.i64(ctx, 0)), [1])
    (length,) = rs.to_dims(ctx, ctx.emit(count), 1, "delta (zero)",
                           ctx.emit(R.reshape(nonzero, [1])), "length")
    return R.astype(_arange(length), dt) * delta + start


def one_hot(ctx: Any) -> Any:
    """OneHot with the depth given at run time."""
    if ctx.static_shape(1) not in ([], [1]):
        raise ctx.error(f"depth must be a scalar, got shape {ctx.shape(1)}")
    depth = ctx.emit(R.reshape(R.astype(ctx.input(1), "int64"), [1]))
    (dim,) = rs.to_dims(ctx, depth, 1, "depth (negative)", name="depth")
    ndim = ctx.ndim(0)
    axis = ctx.attr("axis", -1)
    if not -ndim - 1 <= axis <= ndim:
        raise ctx.error(f"axis {axis} is out of range for an output of rank {ndim + 1}")
    axis %= ndim + 1
    idt = ctx.dtype(0)
    idx = ctx.input(0)
    size = ctx.emit(R.astype(R.reshape(depth, []), idt))
    idx = R.where(R.less(idx, ctx.const_expr(0, idt)), idx + size, idx)
    rng_shape = [1] * (ndim + 1)
    rng_shape[axis] = dim
    rng = R.reshape(R.astype(_arange(dim), idt), rng_shape)
    hot = R.equal(R.expand_dims(idx, [axis]), rng)
    values = ctx.input(2)
    off = R.take(values, ctx.const_expr(0, "int64"), axis=0)
    on = R.take(values, ctx.const_expr(1, "int64"), axis=0)
    return R.where(hot, on, off)


# -- Expand / Tile -----------------------------------------------------------------------------
def expand(ctx: Any) -> Any:
    """Expand to a shape given at run time (numpy broadcasting; only dimensions of static
    size 1 grow)."""
    shape = ctx.shape(0)
    target, n = rs.int_vector(ctx, 1, "shape")
    m = max(n, len(shape))
    in_dims = [1] * (m - len(shape)) + list(shape)
    if n < m:
        target = ctx.emit(R.concat([rs.i64(ctx, np.ones(m - n, "int64")), target], axis=0))
    grows = [isinstance(d, int) and d == 1 for d in in_dims]
    dims = rs.dims_vector(ctx, in_dims)
    one = rs.i64(ctx, 1)
    may_grow = ctx.const_expr(np.asarray(grows, bool), "bool")
    ok = R.logical_or(may_grow, R.logical_or(R.equal(target, one), R.equal(target, dims)))
    valid = ctx.emit(R.equal(R.sum(R.astype(ok, "int64"), None, False), rs.i64(ctx, m)))
    out = ctx.emit(R.where(may_grow, target, dims))
    fresh = rs.to_dims(ctx, out, m, "shape (not broadcastable from the input's)", valid)
    return R.broadcast_to(ctx.input(0), [v if g else d for v, d, g in zip(fresh, in_dims, grows)])


def tile(ctx: Any) -> Any:
    """Tile with repeats given at run time: ``x`` viewed as (1, d0, 1, d1, ...), broadcast to
    (r0, d0, r1, d1, ...) and reshaped to (r0 * d0, ...)."""
    shape = ctx.shape(0)
    reps, n = rs.int_vector(ctx, 1, "repeats")
    if n != len(shape):
        raise ctx.error(f"repeats has {n} entries for an input of rank {len(shape)}")
    counts = rs.to_dims(ctx, reps, n, "repeats (negative)", name="repeat")
    x = ctx.emit(R.reshape(ctx.input(0), [v for d in shape for v in (1, d)]))
    x = ctx.emit(R.broadcast_to(x, [v for r, d in zip(counts, shape) for v in (r, d)]))
    return R.reshape(x, [r * d for r, d in zip(counts, shape)])


# -- Slice / TopK ------------------------------------------------------------------------------
def _vector_or(ctx: Any, i: int, what: str, n: int, default: int) -> Any:
    if not ctx.has(i):
        return rs.i64(ctx, np.full(n, default, "int64"))
    vec, m = rs.int_vector(ctx, i, what)
    if m != n:
        raise ctx.error(f"{what} has {m} entries, starts has {n}")
    return vec


def slice_(ctx: Any) -> Any:
    """Slice with starts/ends/axes/steps given at run time (``relax.dynamic_strided_slice``:
    the output extent is computed and the bounds clamped at run time)."""
    ndim = ctx.ndim(0)
    starts, n = rs.int_vector(ctx, 1, "starts")
    ends = _vector_or(ctx, 2, "ends", n, 0)
    steps = _vector_or(ctx, 4, "steps", n, 1)
    x = ctx.input(0)
    axes_c = ctx.const(3) if ctx.has(3) else np.arange(n)
    if axes_c is not None:
        axes = [int(a) for a in np.asarray(axes_c).reshape(-1)]
        if len(axes) != n or not all(-ndim <= a < ndim for a in axes) or \
                len({a % ndim for a in axes}) != n:
            raise ctx.error(f"axes {axes} must be {n} distinct axes of a rank-{ndim} input")
        return _sliced(ctx, dynamic_strided_slice(x, starts, ends, steps,
                                                  [a % ndim for a in axes]), ndim)
    # axes at run time: bounds for every dimension (the unnamed ones whole)
    axes = rs.int_vector(ctx, 3, "axes")[0]
    axes, in_range = rs.normalized_axes(ctx, axes, ndim)
    mask = rs.axis_mask(ctx, axes, ndim)
    once = R.less_equal(R.max(mask, None, False), rs.i64(ctx, 1))
    x = checked(ctx, x, ctx.emit(R.logical_and(in_range, once)), "axes (out of range or repeated)")
    hit = ctx.emit(R.equal(R.reshape(axes, [n, 1]),
                           rs.i64(ctx, np.arange(ndim, dtype="int64").reshape(1, ndim))))
    named = ctx.emit(R.equal(mask, rs.i64(ctx, 1)))

    def spread(vec: Any, default: int) -> Any:
        picked = R.sum(R.where(hit, R.reshape(vec, [n, 1]), rs.i64(ctx, 0)), [0], False)
        return ctx.emit(R.where(named, picked, rs.i64(ctx, default)))

    return _sliced(ctx, dynamic_strided_slice(x, spread(starts, 0), spread(ends, INT_MAX),
                                              spread(steps, 1)), ndim)


def _sliced(ctx: Any, value: Any, ndim: int) -> Any:
    """A slice's result with its run-time shape bound to fresh dimensions right away."""
    dims = [tir.Var(f"slice_dim{d}", "int64") for d in range(ndim)]
    return bind_shape(ctx, value, dims, ctx.dtype(0))


def topk(ctx: Any, axis: int, largest: bool) -> list[Any]:
    """TopK with K given at run time: the whole axis sorted, then its first K entries."""
    shape = ctx.shape(0)
    axis = axis % len(shape)
    dim = shape[axis]
    if not isinstance(dim, int):
        raise ctx.unsupported("K given at run time needs a static length of the axis")
    k, n = rs.int_vector(ctx, 1, "K")
    if n != 1:
        raise ctx.error(f"K must hold one value, got {n}")
    (count,) = rs.to_dims(ctx, k, 1, "K (negative or larger than the axis)",
                          ctx.emit(R.less_equal(k, rs.i64(ctx, dim))), "k")
    both = ctx.emit(R.topk(ctx.input(0), dim, axis, "both", largest, "int64"))
    first = ctx.emit(_arange(count))
    return [R.take(ctx.emit(TupleGetItem(both, j)), first, axis=axis) for j in (0, 1)]


# -- Split / windows / AffineGrid --------------------------------------------------------------
def split(ctx: Any, axis: int, pieces: Any = None) -> list[Any]:
    """Split with sizes given at run time (non-negative, summing to the axis length) into
    ``pieces`` (default: the node's outputs; SplitToSequence: the length of ``split``);
    piece ``j`` gathers its own index range."""
    dim = ctx.shape(0)[axis]
    sizes, n = rs.int_vector(ctx, 1, "split")
    pieces = ctx.num_outputs if pieces is None else pieces
    if n != pieces:
        raise ctx.error(f"split has {n} entries for {pieces} outputs")
    total = R.equal(R.sum(sizes, None, False), rs.scalar_dim(ctx, dim))
    counts = rs.to_dims(ctx, sizes, n, "split (negative, or not summing to the axis length)",
                        ctx.emit(total), "size")
    starts = ctx.emit(R.cumsum(sizes, 0, None, True))
    out = []
    for j, c in enumerate(counts):
        idx = ctx.emit(_arange(c) + R.take(starts, rs.i64(ctx, j), axis=0))
        out.append(ctx.emit(R.take(ctx.input(0), idx, axis=axis)))
    return out


def window(ctx: Any, kind: str, dt: str) -> Any:
    """Hann/Hamming/Blackman window of a length given at run time."""
    if ctx.static_shape(0) not in ([], [1]):
        raise ctx.error(f"size must be a scalar, got shape {ctx.shape(0)}")
    size = ctx.emit(R.reshape(R.astype(ctx.input(0), "int64"), [1]))
    (length,) = rs.to_dims(ctx, size, 1, "size (negative)", name="size")
    f64 = "float64"
    n = R.astype(R.reshape(size, []), f64)
    if not ctx.attr("periodic", 1):
        n = n - ctx.const_expr(1.0, f64)
    k = R.astype(_arange(length), f64)
    phase = ctx.emit(ctx.const_expr(2 * np.pi, f64) * k / n)
    if kind == "hann":
        w = R.sin(phase * ctx.const_expr(0.5, f64))
        w = w * w
    elif kind == "hamming":
        w = ctx.const_expr(25.0 / 46.0, f64) - ctx.const_expr(21.0 / 46.0, f64) * R.cos(phase)
    else:
        w = (ctx.const_expr(0.42, f64) - ctx.const_expr(0.5, f64) * R.cos(phase)
             + ctx.const_expr(0.08, f64) * R.cos(phase * ctx.const_expr(2.0, f64)))
    return R.astype(w, dt)


def affine_grid(ctx: Any, align: bool) -> Any:
    """AffineGrid with the output size (N, C, [D,] H, W) given at run time."""
    theta = ctx.shape(0)  # (N, nd, nd + 1)
    size, n = rs.int_vector(ctx, 1, "size")
    if n not in (4, 5) or theta[1:] != [n - 2, n - 1]:
        raise ctx.error(f"size has {n} entries for theta of shape {theta}")
    batch = R.equal(R.take(size, rs.i64(ctx, 0), axis=0), rs.scalar_dim(ctx, theta[0]))
    dims = rs.to_dims(ctx, size, n, "size (negative, or a batch other than theta's)",
                      ctx.emit(batch), "size")
    spatial = dims[2:]
    dt = ctx.dtype(0)
    f = "float64"

    def lin(m: Any) -> Any:
        i = R.astype(_arange(m), f)
        length = ctx.emit(R.astype(R.reshape(rs.dims_vector(ctx, [m]), []), f))
        one = ctx.const_expr(1.0, f)
        if align:  # -1 .. 1 (0 for a single point)
            step = ctx.const_expr(2.0, f) / R.maximum(length - one, one)
            return R.where(R.greater(length, one), i * step - one, ctx.const_expr(0.0, f))
        return (i * ctx.const_expr(2.0, f) + one) / length - one

    count = 1
    for m in spatial:
        count = m if isinstance(count, int) else count * m
    coords = []
    for j, m in enumerate(spatial[::-1]):  # x runs over the last axis
        axis = len(spatial) - 1 - j
        view = [1] * len(spatial)
        view[axis] = m
        full = R.broadcast_to(R.reshape(lin(m), view), list(spatial))
        coords.append(R.reshape(full, [count, 1]))
    coords.append(R.full([count, 1], ctx.const_expr(1.0, f), f))
    base = R.astype(R.concat(coords, axis=1), dt)  # (P, nd + 1)
    grid = R.matmul(base, R.permute_dims(ctx.input(0), [0, 2, 1]))  # (N, P, nd)
    return R.reshape(grid, [dims[0], *spatial, len(spatial)])


# -- Pad / CenterCropPad -----------------------------------------------------------------------
def _gather_axis(ctx: Any, x: Any, axis: int, ndim: int, length: Any, src: Any, size: Any,
                 mode: str, fill: Any) -> Any:
    """``x`` re-indexed along ``axis``: output position ``i < length`` reads source index
    ``src[i]`` of an axis of ``size`` (a 0-d int64 tensor), mapped into range by ``mode``
    (constant: ``fill`` outside; edge: clamped; reflect; wrap)."""
    zero, one = rs.i64(ctx, 0), rs.i64(ctx, 1)
    last = R.maximum(size - one, zero)
    if mode in ("constant", "edge"):
        idx = R.minimum(R.maximum(src, zero), last)
    elif mode == "wrap":
        idx = R.floor_mod(src, R.maximum(size, one))
    else:  # reflect: period 2 (n - 1)
        period = ctx.emit(R.maximum(last * rs.i64(ctx, 2), one))
        t = ctx.emit(R.floor_mod(src, period))
        idx = R.where(R.less(t, size), t, period - t)
    y = ctx.emit(R.take(x, ctx.emit(idx), axis=axis))
    if mode != "constant":
        return y
    inside = R.logical_and(R.greater_equal(src, zero), R.less(src, size))
    view = [1] * ndim
    view[axis] = length
    return ctx.emit(R.where(R.reshape(inside, view), y, fill))


def pad(ctx: Any) -> Any:
    """Pad with pads (or the constant value) given at run time; negative pads crop."""
    shape = ctx.shape(0)
    ndim = len(shape)
    mode = ctx.attr("mode", "constant")
    if mode not in ("constant", "edge", "reflect", "wrap"):
        raise ctx.unsupported(f"mode {mode!r}")
    dt = ctx.dtype(0)
    x = ctx.input(0)
    runtime_axes = ctx.has(3) and ctx.const(3) is None
    if runtime_axes:
        k = rs.int_vector(ctx, 3, "axes")[1]
    elif ctx.has(3):
        axes = [int(a) for a in np.asarray(ctx.const(3)).reshape(-1)]
        if not all(-ndim <= a < ndim for a in axes) or len({a % ndim for a in axes}) != len(axes):
            raise ctx.error(f"axes {axes} must be distinct axes of a rank-{ndim} input")
        axes = [a % ndim for a in axes]
        k = len(axes)
    else:
        axes = list(range(ndim))
        k = ndim
    pads, m = rs.int_vector(ctx, 1, "pads")
    if m != 2 * k:
        raise ctx.error(f"pads has {m} entries for {k} axes")
    if ctx.has(2):
        fill = ctx.emit(R.astype(R.reshape(ctx.input(2), []), dt))
    else:
        fill = ctx.const_expr(0, dt)
    before = ctx.emit(R.strided_slice(pads, [0], [0], [k]))
    after = ctx.emit(R.strided_slice(pads, [0], [k], [2 * k]))
    if runtime_axes:  # pads for every dimension, 0 for the unnamed ones
        named = rs.int_vector(ctx, 3, "axes")[0]
        named, in_range = rs.normalized_axes(ctx, named, ndim)
        once = R.less_equal(R.max(rs.axis_mask(ctx, named, ndim), None, False), rs.i64(ctx, 1))
        x = checked(ctx, x, ctx.emit(R.logical_and(in_range, once)),
                    "axes (out of range or repeated)")
        shape = ctx.importer.shape_of(x)
        hit = ctx.emit(R.equal(R.reshape(named, [k, 1]),
                               rs.i64(ctx, np.arange(ndim, dtype="int64").reshape(1, ndim))))
        before, after = (ctx.emit(R.sum(R.where(hit, R.reshape(v, [k, 1]), rs.i64(ctx, 0)),
                                        [0], False)) for v in (before, after))
        axes, k = list(range(ndim)), ndim
    sizes = ctx.emit(R.take(rs.dims_vector(ctx, shape),
                            rs.i64(ctx, np.asarray(axes, "int64")), axis=0))
    out = ctx.emit(sizes + before + after)
    lengths = rs.to_dims(ctx, out, k, "pads (a negative output size)", name="padded")
    for j, (a, length) in enumerate(zip(axes, lengths)):
        src = _arange(length) - R.take(before, rs.i64(ctx, j), axis=0)
        x = _gather_axis(ctx, x, a, ndim, length, ctx.emit(src), rs.scalar_dim(ctx, shape[a]),
                         mode, fill)
    return x


def center_crop_pad(ctx: Any, axes: list[int]) -> Any:
    """CenterCropPad to a target shape given at run time: each axis cropped or zero-padded
    around its centre."""
    shape = ctx.shape(0)
    ndim = len(shape)
    target, m = rs.int_vector(ctx, 1, "shape")
    if m != len(axes):
        raise ctx.error(f"shape has {m} entries for {len(axes)} axes")
    lengths = rs.to_dims(ctx, target, m, "shape (a negative size)", name="crop")
    x = ctx.input(0)
    two = rs.i64(ctx, 2)
    for j, (a, length) in enumerate(zip(axes, lengths)):
        size = rs.scalar_dim(ctx, shape[a])
        want = ctx.emit(R.take(target, rs.i64(ctx, j), axis=0))
        offset = R.where(R.greater_equal(size, want), R.floor_divide(size - want, two),
                         R.negative(R.floor_divide(want - size, two)))
        src = ctx.emit(_arange(length) + offset)
        x = _gather_axis(ctx, x, a, ndim, length, src, size, "constant",
                         ctx.const_expr(0, ctx.dtype(0)))
    return x


# -- Resize ------------------------------------------------------------------------------------
def resize_sizes(ctx: Any, p: dict[str, Any], resize: Any) -> Any:
    """Resize to sizes given at run time (the coordinate mapping's scale is then output /
    input length): the spatial sizes become symbolic dimensions and ``resize`` (the
    converter's ``relax.image.resize{1,2,3}d`` path) resamples to them; batch and channel
    sizes must stay the input's."""
    shape = ctx.shape(0)
    ndim = len(shape)
    axes = [a % ndim for a in p["axes"]] if p["axes"] else list(range(ndim))
    sizes, n = rs.int_vector(ctx, 3, "sizes")
    if n != len(axes):
        raise ctx.error(f"sizes has {n} entries for {len(axes)} axes")
    fixed = [i for i, a in enumerate(axes) if a < 2]
    valid = None
    if fixed:
        kept = R.take(sizes, rs.i64(ctx, np.asarray(fixed, "int64")), axis=0)
        same = R.equal(kept, rs.dims_vector(ctx, [shape[axes[i]] for i in fixed]))
        valid = ctx.emit(R.equal(R.sum(R.astype(same, "int64"), None, False),
                                 rs.i64(ctx, len(fixed))))
    dims = rs.to_dims(ctx, sizes, n, "sizes (negative, or resizing the batch or channel axis)",
                      valid, "size")
    spatial = [(a, d) for a, d in zip(axes, dims) if a >= 2]
    if not spatial:
        x = ctx.input(0)
        return x if valid is None else checked(ctx, x, valid, "sizes (resizing the batch or "
                                                              "channel axis)")
    return resize(ctx, shape, dict(p, sizes=[d for _, d in spatial],
                                   axes=[a for a, _ in spatial]))


def _source(ctx: Any, coord: str, o: Any, scale: Any, n_in: Any, n_out: Any) -> Any:
    """ONNX Resize's input coordinate of output positions ``o`` (float64) for a run-time
    ``scale`` (the output length ``n_out`` is ``floor(n_in * scale)``)."""
    f = "float64"
    half, one = ctx.const_expr(0.5, f), ctx.const_expr(1.0, f)
    wide = n_in * scale  # the output length before rounding down
    if coord == "asymmetric":
        return o / scale
    if coord == "tf_half_pixel_for_nn":
        return (o + half) / scale
    if coord == "align_corners":
        return R.where(R.equal(wide, one), ctx.const_expr(0.0, f),
                       o * (n_in - one) / R.where(R.equal(wide, one), one, wide - one))
    centred = (o + half) / scale - half
    if coord == "half_pixel":
        return centred
    if coord == "pytorch_half_pixel":
        return R.where(R.equal(wide, one), ctx.const_expr(-0.5, f), centred)
    # half_pixel_symmetric
    return n_in * half * (one - n_out / wide) + centred


def _taps(ctx: Any, mode: str, attrs: dict[str, Any], src: Any, n_in: Any) -> list[tuple]:
    """(index, weight) pairs of an axis's interpolation at source coordinates ``src``; the
    indices clamped into the axis (ONNX pads with edge values)."""
    f = "float64"
    base = ctx.emit(R.floor(src))
    frac = ctx.emit(src - base)
    start = ctx.emit(R.astype(base, "int64"))
    if mode == "nearest":
        rounding = attrs.get("nearest_mode", "round_prefer_floor")
        half = ctx.const_expr(0.5, f)
        pick = {"floor": R.floor(src), "ceil": R.ceil(src),
                "round_prefer_ceil": R.floor(src + half)}.get(rounding, R.ceil(src - half))
        return [(ctx.emit(R.astype(pick, "int64")), None)]
    if mode == "linear":
        one = ctx.const_expr(1.0, f)
        return [(start, ctx.emit(one - frac)), (ctx.emit(start + rs.i64(ctx, 1)), frac)]
    a = float(attrs.get("cubic_coeff_a", -0.75))
    taps = []
    for t in (-1, 0, 1, 2):
        d = ctx.emit(R.abs(frac - ctx.const_expr(float(t), f)))
        a_, one, two = (ctx.const_expr(v, f) for v in (a, 1.0, 2.0))
        near = ((a_ + two) * d - (a_ + ctx.const_expr(3.0, f))) * d * d + one
        far = ((a_ * d - ctx.const_expr(5.0, f) * a_) * d + ctx.const_expr(8.0, f) * a_) * d \
            - ctx.const_expr(4.0, f) * a_
        w = R.where(R.less_equal(d, one), near, R.where(R.less(d, two), far,
                                                        ctx.const_expr(0.0, f)))
        taps.append((ctx.emit(start + rs.i64(ctx, t)), ctx.emit(w)))
    if attrs.get("exclude_outside", 0):  # taps outside the axis get no weight
        last = R.astype(n_in, "int64") - rs.i64(ctx, 1)
        taps = [(i, ctx.emit(R.where(R.logical_and(R.greater_equal(i, rs.i64(ctx, 0)),
                                                   R.less_equal(i, last)),
                                     w, ctx.const_expr(0.0, f)))) for i, w in taps]
        total = ctx.emit(taps[0][1] + taps[1][1] + taps[2][1] + taps[3][1])
        taps = [(i, ctx.emit(w / total)) for i, w in taps]
    return taps


def resize_scales(ctx: Any, p: dict[str, Any], slot: int) -> Any:
    """Resize with scales given at run time (input ``slot``): output lengths
    ``floor(n * scale)``, and each resized axis interpolated in turn (the interpolation is
    separable) by gathers of the source taps, whose coordinates use the scale itself."""
    attrs = p["attrs"]
    mode = attrs.get("mode", "nearest")
    coord = attrs.get("coordinate_transformation_mode", "half_pixel")
    if mode not in ("nearest", "linear", "cubic") or attrs.get("antialias", 0) or \
            coord == "tf_crop_and_resize":
        raise ctx.unsupported("scales given at run time need mode nearest/linear/cubic "
                              "without antialias or tf_crop_and_resize")
    shape = ctx.shape(0)
    ndim = len(shape)
    axes = [a % ndim for a in p["axes"]] if p["axes"] else list(range(ndim))
    sshape = ctx.static_shape(slot)
    if sshape is None or sshape != [len(axes)]:
        raise ctx.error(f"scales must have {len(axes)} entries, got shape {ctx.shape(slot)}")
    f = "float64"
    scales = ctx.emit(R.astype(ctx.input(slot), f))
    sizes = rs.dims_vector(ctx, [shape[a] for a in axes])
    lengths = ctx.emit(R.astype(R.floor(R.astype(sizes, f) * scales), "int64"))
    positive = ctx.emit(R.greater(scales, ctx.const_expr(0.0, f)))
    dims = rs.to_dims(ctx, lengths, len(axes), "scales (not positive)", positive, "size")
    dt = ctx.dtype(0)
    cdt = dt if dt in ("float32", "float64", "float16") else "float32"
    x = ctx.input(0)
    if cdt != dt:
        x = ctx.emit(R.astype(x, cdt))
    for j, (a, length) in enumerate(zip(axes, dims)):
        pick = rs.i64(ctx, j)
        scale = ctx.emit(R.take(scales, pick, axis=0))
        n_in = ctx.emit(R.astype(R.take(sizes, pick, axis=0), f))
        n_out = ctx.emit(R.astype(rs.scalar_dim(ctx, length), f))
        src = ctx.emit(_source(ctx, coord, R.astype(_arange(length), f), scale, n_in, n_out))
        last = ctx.emit(R.maximum(R.astype(n_in, "int64") - rs.i64(ctx, 1), rs.i64(ctx, 0)))
        view = [1] * ndim
        view[a] = length
        total = None
        for idx, w in _taps(ctx, mode, attrs, src, n_in):
            idx = ctx.emit(R.minimum(R.maximum(idx, rs.i64(ctx, 0)), last))
            term = ctx.emit(R.take(x, idx, axis=a))
            if w is not None:
                term = term * R.reshape(R.astype(w, cdt), view)
            total = term if total is None else total + term
        x = ctx.emit(total)
    if cdt != dt:
        if dt.startswith(("int", "uint")):
            x = R.round(x)
        x = R.astype(x, dt)
    return x
