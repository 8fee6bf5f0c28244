"""More nn converters: distances, bilinear forms, embedding bags, grid sampling,
antialiased resizing, scatter-style writes, training-mode batch norm, chunked linear
cross-entropy, tensor hashing and resizing.

Everything is composed from existing Relax operators (``scatter_elements`` for writes at
computed positions, ``image.grid_sample``, ``matmul`` with interpolation tables).
"""

from __future__ import annotations

import math
from typing import Any, Optional, Sequence

import numpy as np

from ... import op as _op
from .common import NodeContext, converter
from .ops_nn import _float_input, _ints, _param, output_used


def _is_float(dtype: str) -> bool:
    return dtype.startswith(("float", "bfloat"))


def _static(ctx: NodeContext, values: Sequence[Any], what: str) -> list[int]:
    out = []
    for v in values:
        if not isinstance(v, int):
            raise ctx.unsupported(f"{what} must be static, got {v}")
        out.append(v)
    return out


# -- distances ----------------------------------------------------------------------------------
def _p_norm(ctx: NodeContext, diff: Any, p: float, axes: Optional[list[int]], dtype: str) -> Any:
    """The ``p``-norm of ``diff`` over ``axes`` (None: all), p in [0, inf]."""
    mag = _op.abs(diff)
    if p == math.inf:
        return _op.max(mag, axes, False)
    if p == -math.inf:
        return _op.min(mag, axes, False)
    if p == 0:
        return _op.sum(ctx.astype(_op.not_equal(diff, ctx.const(0, dtype)), dtype), axes, False)
    if p == 1:
        return _op.sum(mag, axes, False)
    if p == 2:
        return _op.sqrt(_op.sum(_op.multiply(diff, diff), axes, False))
    powered = _op.sum(_op.power(mag, ctx.const(p, dtype)), axes, False)
    return _op.power(powered, ctx.const(1.0 / p, dtype))


@converter("aten.dist.default")
def _dist(ctx: NodeContext) -> Any:
    """dist(input, other, p=2): the p-norm of ``input - other`` (broadcast), a 0-d tensor."""
    a, b = ctx.operands(0, 1)
    dtype = ctx.out_dtype()
    if not _is_float(dtype):
        raise ctx.unsupported(f"dist of {dtype} tensors (floating point only)")
    p = float(ctx.arg(2, "p", 2))
    if p < 0:
        raise ctx.error(f"dist: p must be non-negative, got {p}")
    diff = ctx.astype(_op.subtract(a, b), dtype)
    return _p_norm(ctx, diff, p, None, dtype)


def _pairwise(ctx: NodeContext, x1: Any, x2: Any, p: float, dtype: str) -> Any:
    """(..., P, M) and (..., R, M) -> (..., P, R) p-norm distances by broadcasting."""
    diff = _op.subtract(_op.expand_dims(x1, -2), _op.expand_dims(x2, -3))
    return _p_norm(ctx, diff, p, [-1], dtype)


def _euclid_mm(ctx: NodeContext, x1: Any, x2: Any, dtype: str) -> Any:
    """torch's matrix-multiply Euclidean distance: ``sqrt(max(|a|^2 - 2ab + |b|^2, 1e-30))``."""
    n1 = _op.sum(_op.multiply(x1, x1), [-1], True)
    n2 = _op.sum(_op.multiply(x2, x2), [-1], True)
    one1, one2 = _op.ones_like(n1), _op.ones_like(n2)
    a = _op.concat([_op.multiply(x1, ctx.const(-2.0, dtype)), n1, one1], -1)
    b = _op.concat([x2, one2, n2], -1)
    nd = ctx.ndim(x2)
    perm = list(range(nd - 2)) + [nd - 1, nd - 2]
    sq = _op.matmul(a, _op.permute_dims(b, perm))
    return _op.sqrt(_op.maximum(sq, ctx.const(1e-30, dtype)))


@converter("aten._cdist_forward.default")
def _cdist(ctx: NodeContext) -> Any:
    """_cdist_forward(x1, x2, p, compute_mode): ``compute_mode`` None/0 uses the matmul
    form for p = 2 when either side has more than 25 rows, 1 always, 2 never."""
    x1, x2 = ctx.tensor(0), ctx.tensor(1)
    dtype = ctx.out_dtype()
    if not _is_float(dtype):
        raise ctx.unsupported(f"cdist of {dtype} tensors (floating point only)")
    x1, x2 = ctx.astype(x1, dtype), ctx.astype(x2, dtype)
    if ctx.ndim(x1) < 2 or ctx.ndim(x2) < 2:
        raise ctx.error("cdist takes inputs of rank 2 or more")
    p = float(ctx.arg(2, "p", 2.0))
    if p < 0:
        raise ctx.error(f"cdist: p must be non-negative, got {p}")
    mode = ctx.arg(3, "compute_mode")
    mode = 0 if mode is None else int(mode)
    if mode not in (0, 1, 2):
        raise ctx.unsupported(f"compute_mode {mode} (0, 1 or 2)")
    out_shape = ctx.out_shape()
    lead = out_shape[:-2]
    x1 = _op.broadcast_to(x1, lead + ctx.shape(x1)[-2:])
    x2 = _op.broadcast_to(x2, lead + ctx.shape(x2)[-2:])
    rows1, rows2 = out_shape[-2], out_shape[-1]
    if p == 2 and mode != 2:
        big = (not isinstance(rows1, int) or rows1 > 25) or (not isinstance(rows2, int)
                                                              or rows2 > 25)
        if mode == 1 or big:
            if not (isinstance(rows1, int) and isinstance(rows2, int)):
                raise ctx.unsupported("cdist's matmul path on symbolic sizes")
            return _euclid_mm(ctx, x1, x2, dtype)
    return _pairwise(ctx, x1, x2, p, dtype)


@converter("aten._pdist_forward.default")
def _pdist(ctx: NodeContext) -> Any:
    """_pdist_forward(input (N, M), p): distances of rows i < j in row-major order."""
    x = _float_input(ctx)
    if ctx.ndim(x) != 2:
        raise ctx.error(f"pdist takes a 2-d input, got rank {ctx.ndim(x)}")
    p = float(ctx.arg(1, "p", 2.0))
    if p < 0:
        raise ctx.error(f"pdist: p must be non-negative, got {p}")
    n = ctx.shape(x)[0]
    if not isinstance(n, int):
        raise ctx.unsupported("pdist over a symbolic number of rows")
    rows, cols = np.triu_indices(n, 1)
    if rows.size == 0:
        return _op.zeros([0], ctx.dtype(x))
    a = _op.take(x, ctx.const(rows.astype("int64"), "int64"), axis=0)
    b = _op.take(x, ctx.const(cols.astype("int64"), "int64"), axis=0)
    return _p_norm(ctx, _op.subtract(a, b), p, [-1], ctx.dtype(x))


# -- bilinear forms -----------------------------------------------------------------------------
@converter("aten._trilinear.default")
def _trilinear(ctx: NodeContext) -> Any:
    """_trilinear(i1, i2, i3, expand1, expand2, expand3, sumdim, unroll_dim): each input
    unsqueezed at its ``expand`` dims, the three multiplied and summed over ``sumdim``."""
    dtype = ctx.out_dtype()
    terms = []
    for k in range(3):
        t = ctx.astype(ctx.tensor(k), dtype)
        for d in ctx.arg(3 + k) or []:
            t = _op.expand_dims(t, int(d))
        terms.append(t)
    prod = _op.multiply(_op.multiply(terms[0], terms[1]), terms[2])
    sumdim = sorted({int(d) for d in (ctx.arg(6, "sumdim") or [])})
    if not sumdim:
        return prod
    return _op.sum(prod, sumdim, False)


# -- grid sampling ------------------------------------------------------------------------------
_GRID_MODES = {0: "bilinear", 1: "nearest", 2: "bicubic"}
_GRID_PADDING = {0: "zeros", 1: "border", 2: "reflection"}


@converter("aten.grid_sampler_2d.default", "aten.grid_sampler_3d.default",
           "aten.grid_sampler.default")
def _grid_sampler(ctx: NodeContext) -> Any:
    """grid_sampler_{2,3}d(input, grid, interpolation_mode, padding_mode, align_corners)."""
    x = _float_input(ctx)
    dtype = ctx.out_dtype()
    grid = ctx.astype(ctx.tensor(1), dtype)
    mode = _GRID_MODES.get(int(ctx.arg(2, "interpolation_mode")))
    pad = _GRID_PADDING.get(int(ctx.arg(3, "padding_mode")))
    if mode is None or pad is None:
        raise ctx.unsupported(f"interpolation_mode {ctx.arg(2)} / padding_mode {ctx.arg(3)}")
    if mode == "bicubic" and ctx.ndim(x) != 4:
        raise ctx.unsupported("bicubic grid sampling of a 3-d (volumetric) input")
    align = bool(ctx.arg(4, "align_corners", False))
    return _op.image.grid_sample(ctx.astype(x, dtype), grid, method=mode, padding_mode=pad,
                                 align_corners=align)


# -- antialiased bilinear resize ----------------------------------------------------------------
def _aa_scale(n: int, m: int, align: bool, scale: Optional[float]) -> float:
    """torch's area_pixel_compute_scale: the input step per output pixel."""
    if align:
        return (n - 1) / (m - 1) if m > 1 else 0.0
    return 1.0 / scale if scale and scale > 0 else n / m


def _aa_weights(n: int, m: int, align: bool, scale: Optional[float]) -> np.ndarray:
    """(n, m) weights of torch's antialiased linear (triangle) filter for one axis."""
    s = _aa_scale(n, m, align, scale)
    support = s if s >= 1.0 else 1.0
    inv = 1.0 / s if s >= 1.0 else 1.0
    weights = np.zeros((n, m), dtype="float64")
    for i in range(m):
        center = s * (i + 0.5)
        lo = max(int(center - support + 0.5), 0)
        hi = min(int(center + support + 0.5), n)
        js = np.arange(lo, hi)
        w = np.maximum(0.0, 1.0 - np.abs((js - center + 0.5) * inv))
        total = w.sum()
        if total > 0:
            weights[lo:hi, i] = w / total
    return weights


def _apply_axis_weights(ctx: NodeContext, x: Any, axis: int, weights: np.ndarray) -> Any:
    """``x`` with axis ``axis`` (length n) replaced by ``weights`` (n, m) applied to it."""
    ndim = ctx.ndim(x)
    order = [a for a in range(ndim) if a != axis] + [axis]
    back = [order.index(a) for a in range(ndim)]
    moved = _op.matmul(_op.permute_dims(x, order), ctx.const(weights, ctx.dtype(x)))
    return ctx.emit(_op.permute_dims(moved, back))


@converter("aten._upsample_bilinear2d_aa.default", "aten._upsample_bilinear2d_aa.vec")
def _upsample_bilinear2d_aa(ctx: NodeContext) -> Any:
    """(input, output_size, align_corners, scales_h, scales_w) or the .vec form
    (input, output_size, align_corners, scale_factors)."""
    x = _float_input(ctx)
    if ctx.ndim(x) != 4:
        raise ctx.unsupported(f"a {ctx.ndim(x)}-d input (4-d expected)")
    align = bool(ctx.arg(2, "align_corners", False))
    if ctx.op.endswith(".vec"):
        scales = ctx.arg(3, "scale_factors")
        scales = [None, None] if scales is None else list(scales) * (2 // len(scales))
    else:
        scales = [ctx.arg(3, "scales_h"), ctx.arg(4, "scales_w")]
    in_sizes = _static(ctx, ctx.shape(x)[2:], "the input's spatial size")
    out_sizes = _static(ctx, ctx.out_shape()[2:], "the output size")
    for i, (n, m) in enumerate(zip(in_sizes, out_sizes)):
        x = _apply_axis_weights(ctx, x, 2 + i, _aa_weights(n, m, align, scales[i]))
    return x


# -- writes at computed positions ---------------------------------------------------------------
def _flat_index(ctx: NodeContext, index: Any, numel: int) -> Any:
    """A flat int64 index with negative entries counted from the end."""
    index = ctx.astype(_op.reshape(index, [-1]), "int64")
    n = ctx.const(numel, "int64")
    return _op.where(_op.less(index, ctx.const(0, "int64")), _op.add(index, n), index)


@converter("aten.put.default")
def _put(ctx: NodeContext) -> Any:
    """put(input, index, source, accumulate): ``source`` written (or added) at the flat
    positions ``index`` of ``input``."""
    x = ctx.tensor(0)
    dtype = ctx.dtype(x)
    shape = ctx.shape(x)
    numel = int(np.prod(_static(ctx, shape, "the input shape"), dtype="int64"))
    index = _flat_index(ctx, ctx.tensor(1, "index"), numel)
    src = ctx.astype(_op.reshape(ctx.tensor(2, "source"), [-1]), dtype)
    if numel == 0 or ctx.shape(index)[0] == 0:
        return x
    flat = _op.reshape(x, [numel])
    reduction = "add" if ctx.arg(3, "accumulate", False) else "update"
    return _op.reshape(_op.scatter_elements(flat, index, src, 0, reduction), shape)


@converter("aten.as_strided_scatter.default")
def _as_strided_scatter(ctx: NodeContext) -> Any:
    """as_strided_scatter(input, src, size, stride, storage_offset): ``src`` written into
    the strided view of ``input``'s (contiguous) storage."""
    x = ctx.tensor(0)
    dtype = ctx.dtype(x)
    shape = _static(ctx, ctx.shape(x), "the input shape")
    size = _static(ctx, list(ctx.arg(2, "size")), "size")
    stride = _static(ctx, list(ctx.arg(3, "stride")), "stride")
    offset = ctx.arg(4, "storage_offset")
    offset = 0 if offset is None else _static(ctx, [offset], "storage_offset")[0]
    numel = int(np.prod(shape, dtype="int64"))
    positions = np.full(size, offset, dtype="int64")
    for d, (n, s) in enumerate(zip(size, stride)):
        view = [1] * len(size)
        view[d] = n
        positions = positions + (np.arange(n, dtype="int64") * s).reshape(view)
    positions = positions.reshape(-1)
    if positions.size == 0:
        return x
    if positions.min() < 0 or positions.max() >= numel:
        raise ctx.error(f"as_strided_scatter: size {size}, stride {stride}, offset {offset} "
                        f"reach outside the input's {numel} elements")
    src = ctx.astype(_op.reshape(ctx.tensor(1, "src"), [-1]), dtype)
    flat = _op.reshape(x, [numel])
    out = _op.scatter_elements(flat, ctx.const(positions, "int64"), src, 0)
    return _op.reshape(out, shape)


@converter("aten.max_pool2d_with_indices_backward.default",
           "aten.max_pool3d_with_indices_backward.default")
def _max_pool_backward(ctx: NodeContext) -> Any:
    """(grad_output, input, kernel_size, stride, padding, dilation, ceil_mode, indices):
    each output gradient added at its window's argmax (``indices``, flat per plane)."""
    grad, x = ctx.tensor(0), ctx.tensor(1)
    nsp = 3 if "pool3d" in ctx.op else 2
    dtype = ctx.out_dtype()
    shape = ctx.shape(x)
    if len(shape) not in (nsp + 1, nsp + 2):
        raise ctx.error(f"a {len(shape)}-d input ({nsp + 1}-d or {nsp + 2}-d expected)")
    _ints(ctx, ctx.arg(2, "kernel_size"), nsp, "kernel_size")  # validated; indices decide
    plane = 1
    for d in shape[-nsp:]:
        plane = plane * d
    indices = ctx.astype(ctx.tensor(7, "indices"), "int64")
    planes_in = _op.reshape(_op.zeros(shape, dtype), [-1, plane])
    gshape = ctx.shape(grad)
    oplane = 1
    for d in gshape[-nsp:]:
        oplane = oplane * d
    g = _op.reshape(ctx.astype(grad, dtype), [-1, oplane])
    idx = _op.reshape(indices, [-1, oplane])
    out = _op.scatter_elements(planes_in, idx, g, 1, "add")
    return _op.reshape(out, shape)


# -- embedding bags -----------------------------------------------------------------------------
_BAG_MODES = {0: "sum", 1: "mean", 2: "max"}


@converter("aten._embedding_bag_forward_only.default", "aten._embedding_bag.default",
           "aten.embedding_bag.padding_idx", "aten.embedding_bag.default")
def _embedding_bag(ctx: NodeContext) -> Any:
    """(weight, indices, offsets, scale_grad_by_freq, mode, sparse, per_sample_weights,
    include_last_offset, padding_idx) -> (output, offset2bag, bag_size, max_indices).

    Bag ``b`` holds ``indices[offsets[b]:offsets[b + 1]]`` (the last bag runs to the end,
    or to the last offset with ``include_last_offset``); entries equal to ``padding_idx``
    (>= 0) are left out, and an empty bag gives zeros.
    """
    weight, indices, offsets = ctx.tensor(0), ctx.tensor(1), ctx.tensor(2)
    mode = _BAG_MODES.get(int(ctx.arg(4, "mode", 0)))
    if mode is None:
        raise ctx.unsupported(f"mode {ctx.arg(4)} (0 sum, 1 mean, 2 max)")
    if ctx.ndim(indices) != 1 or ctx.ndim(offsets) != 1:
        raise ctx.unsupported("embedding bag with indices/offsets that are not 1-d")
    for i in (1, 2, 3):
        if output_used(ctx, i):
            raise ctx.unsupported(f"output {i} (offset2bag / bag_size / max_indices) of an "
                                  "embedding bag")
    psw = ctx.arg(6, "per_sample_weights")
    if psw is not None and mode != "sum":
        raise ctx.error("per_sample_weights only work with mode='sum'")
    last = bool(ctx.arg(7, "include_last_offset", False))
    padding_idx = ctx.arg(8, "padding_idx", -1)
    padding_idx = -1 if padding_idx is None else int(padding_idx)
    dtype = ctx.out_dtype()
    if not _is_float(dtype):
        raise ctx.unsupported(f"embedding bag of a {dtype} weight (floating point only)")
    n = ctx.shape(indices)[0]
    nbags, dim = ctx.out_shape()[0], ctx.shape(weight)[1]
    if not all(isinstance(v, int) for v in (n, nbags, dim)):
        raise ctx.unsupported("embedding bag with symbolic sizes")
    indices = ctx.astype(indices, "int64")
    offsets = ctx.astype(offsets, "int64")
    if n == 0 or nbags == 0:
        return [_op.zeros([nbags, dim], dtype), None, None, None]
    starts = _op.strided_slice(offsets, [0], [0], [nbags], [1]) if last else offsets
    pos = ctx.const(np.arange(n, dtype="int64").reshape(n, 1), "int64")
    started = ctx.astype(_op.greater_equal(pos, _op.reshape(starts, [1, nbags])), "int64")
    bag = _op.subtract(_op.sum(started, [1], False), ctx.const(1, "int64"))  # (n,)
    valid = _op.greater_equal(bag, ctx.const(0, "int64"))
    if last:
        end = _op.strided_slice(offsets, [0], [nbags], [nbags + 1], [1])
        valid = _op.logical_and(valid, _op.less(ctx.const(np.arange(n, dtype="int64"), "int64"),
                                                end))
    if padding_idx >= 0:
        valid = _op.logical_and(valid, _op.not_equal(indices, ctx.const(padding_idx, "int64")))
    # entries that belong to no bag go to an extra bag ``nbags``, cut off at the end
    target = _op.where(valid, bag, ctx.const(nbags, "int64"))
    rows = ctx.astype(_op.take(weight, indices, axis=0), dtype)  # (n, dim)
    if psw is not None:
        rows = _op.multiply(rows, _op.reshape(ctx.astype(ctx.tensor(6), dtype), [n, 1]))
    spread = _op.broadcast_to(_op.reshape(target, [n, 1]), [n, dim])
    counts = _op.scatter_elements(_op.zeros([nbags + 1], dtype), target,
                                  ctx.astype(valid, dtype), 0, "add")
    counts = _op.strided_slice(counts, [0], [0], [nbags], [1])
    if mode == "max":
        base = _op.full([nbags + 1, dim], ctx.const(-np.inf, dtype), dtype)
        out = _op.scatter_elements(base, spread, rows, 0, "max")
    else:
        out = _op.scatter_elements(_op.zeros([nbags + 1, dim], dtype), spread, rows, 0, "add")
    out = _op.strided_slice(out, [0], [0], [nbags], [1])
    empty = _op.reshape(_op.equal(counts, ctx.const(0, dtype)), [nbags, 1])
    if mode == "mean":
        out = _op.divide(out, _op.reshape(_op.maximum(counts, ctx.const(1, dtype)), [nbags, 1]))
    out = _op.where(empty, ctx.const(0, dtype), out)
    return [out, None, None, None]


# -- batch norm in training mode ----------------------------------------------------------------
def batch_norm_train(ctx: NodeContext, x: Any, weight: int, bias: int, mean: Optional[int],
                     var: Optional[int], momentum: float, eps: float) -> list[Any]:
    """Batch norm with batch statistics: ``[out, save_mean, save_rstd, new_running_mean,
    new_running_var]`` (the last two None without running statistics); the running
    statistics move by ``momentum`` towards the batch mean and the unbiased batch variance.
    """
    if ctx.ndim(x) < 2:
        raise ctx.error(f"batch norm needs an (N, C, ...) input, got rank {ctx.ndim(x)}")
    dtype = ctx.dtype(x)
    shape = ctx.shape(x)
    c = shape[1]
    axes = [0] + list(range(2, len(shape)))
    count = 1
    for a in axes:
        count = count * shape[a]
    view = [1, c] + [1] * (len(shape) - 2)
    bmean = _op.mean(x, axes, True)
    bvar = _op.variance(x, axes, True)
    rstd = _op.rsqrt(_op.add(bvar, ctx.const(eps, dtype)))
    gamma = _op.reshape(_param(ctx, weight, "weight", [c], dtype, 1), view)
    beta = _op.reshape(_param(ctx, bias, "bias", [c], dtype, 0), view)
    out = _op.add(_op.multiply(_op.multiply(_op.subtract(x, bmean), rstd), gamma), beta)
    save_mean, save_rstd = _op.reshape(bmean, [c]), _op.reshape(rstd, [c])
    new_mean = new_var = None
    if mean is not None and ctx.has(mean, "running_mean") and ctx.has(var, "running_var"):
        if not isinstance(count, int):
            raise ctx.unsupported("running statistics over a symbolic batch size")
        rm = ctx.tensor(mean, "running_mean")
        rv = ctx.tensor(var, "running_var")
        sdt = ctx.dtype(rm)
        keep, mom = ctx.const(1.0 - momentum, sdt), ctx.const(momentum, sdt)
        unbiased = _op.multiply(_op.reshape(bvar, [c]),
                                ctx.const(count / max(count - 1, 1) if count > 1 else math.nan,
                                          dtype))
        new_mean = _op.add(_op.multiply(rm, keep), _op.multiply(ctx.astype(save_mean, sdt), mom))
        new_var = _op.add(_op.multiply(rv, keep), _op.multiply(ctx.astype(unbiased, sdt), mom))
    return [out, save_mean, save_rstd, new_mean, new_var]


def _stats_like(ctx: NodeContext, value: Any, index: int) -> Any:
    """A saved-statistics output as torch's meta wants it (empty when torch returns none)."""
    shape, dtype = ctx.out_shape(index), ctx.out_dtype(index)
    if shape is not None and len(shape) == 1 and shape[0] == 0:
        return _op.zeros([0], dtype)
    return ctx.astype(value, dtype)


@converter("aten._batch_norm_with_update_functional.default",
           "aten._batch_norm_with_update.default")
def _batch_norm_with_update(ctx: NodeContext) -> Any:
    """(input, weight, bias, running_mean, running_var, momentum, eps) -> (out, save_mean,
    save_rstd, reserve[, running_mean_out, running_var_out])."""
    x = _float_input(ctx)
    out, mean, rstd, rm, rv = batch_norm_train(ctx, x, 1, 2, 3, 4, float(ctx.arg(5, "momentum")),
                                               float(ctx.arg(6, "eps")))
    reserve = _op.zeros(ctx.out_shape(3) or [0], ctx.out_dtype(3) or "uint8")
    outs = [out, _stats_like(ctx, mean, 1), _stats_like(ctx, rstd, 2), reserve]
    if ctx.op.startswith("aten._batch_norm_with_update_functional"):
        outs += [rm, rv]
    return outs


def native_batch_norm_train(ctx: NodeContext, stats: bool = True) -> list[Any]:
    """The training-mode forms of native_batch_norm / _native_batch_norm_legit[_functional]
    (input, weight, bias, running_mean, running_var, training, momentum, eps), and of
    _native_batch_norm_legit.no_stats (input, weight, bias, training, momentum, eps)."""
    x = _float_input(ctx)
    if stats:
        parts = batch_norm_train(ctx, x, 1, 2, 3, 4, float(ctx.arg(6, "momentum")),
                                 float(ctx.arg(7, "eps")))
    else:
        parts = batch_norm_train(ctx, x, 1, 2, None, None, float(ctx.arg(4, "momentum")),
                                 float(ctx.arg(5, "eps")))
    outs = [parts[0], _stats_like(ctx, parts[1], 1), _stats_like(ctx, parts[2], 2)]
    if ctx.op.endswith("_functional.default"):
        outs += [parts[3], parts[4]]
    return outs


# -- linear + cross entropy ---------------------------------------------------------------------
def _linear_ce_rows(ctx: NodeContext, reduction: str, ignore_index: int, smoothing: float,
                    acc: str) -> tuple[Any, Any]:
    """Per-row losses (N,) of cross_entropy(input @ W^T + b, target) and each row's weight
    in a mean (the class weight of its target, 0 where ignored)."""
    x, w = ctx.tensor(0), ctx.tensor(1)
    target = ctx.tensor(2)
    if _is_float(ctx.dtype(target)):
        raise ctx.unsupported("linear_cross_entropy with class-probability targets")
    if ctx.ndim(x) != 2 or ctx.ndim(w) != 2 or ctx.ndim(target) != 1:
        raise ctx.unsupported("linear_cross_entropy on inputs other than (N, D), (C, D), (N,)")
    c = ctx.shape(w)[0]
    logits = _op.matmul(ctx.astype(x, acc), _op.permute_dims(ctx.astype(w, acc), [1, 0]))
    if ctx.has(3):
        logits = _op.add(logits, ctx.astype(ctx.tensor(3), acc))
    logp = ctx.emit(_op.nn.log_softmax(logits, 1))
    target = ctx.astype(target, "int64")
    valid = _op.not_equal(target, ctx.const(ignore_index, "int64"))
    safe = _op.where(valid, target, ctx.const(0, "int64"))
    picked = _op.squeeze(_op.gather_elements(logp, _op.expand_dims(safe, 1), 1), [1])
    if ctx.has(4):
        cw = ctx.astype(ctx.tensor(4), acc)
        row_w = _op.take(cw, safe, axis=0)
        smooth = _op.negative(_op.sum(_op.multiply(logp, _op.reshape(cw, [1, c])), [1], False))
    else:
        row_w = _op.ones_like(picked)
        smooth = _op.negative(_op.sum(logp, [1], False))
    zero = ctx.const(0.0, acc)
    row_w = _op.where(valid, row_w, zero)
    nll = _op.negative(_op.multiply(picked, row_w))
    if smoothing:
        smooth = _op.where(valid, smooth, zero)
        if not isinstance(c, int):
            raise ctx.unsupported("label smoothing over a symbolic number of classes")
        nll = _op.add(_op.multiply(nll, ctx.const(1.0 - smoothing, acc)),
                      _op.multiply(smooth, ctx.const(smoothing / c, acc)))
    return nll, row_w


def _acc_dtype(ctx: NodeContext, value: Any, x: Any) -> str:
    from .common import torch_dtype_to_str

    if value is None:
        return ctx.dtype(x)
    return torch_dtype_to_str(value, f"{ctx.where()}: ")


@converter("torch_nn._linear_cross_entropy_batch_chunked.default")
def _linear_ce_chunked(ctx: NodeContext) -> Any:
    """(input, linear_weight, target, linear_bias, weight, reduction, ignore_index,
    label_smoothing, batch_chunk_size, acc_policy, acc_dtype, allow_retain_graph,
    compute_input_grad, compute_linear_weight_grad, compute_linear_bias_grad) -> (loss,
    grad_input, grad_linear_weight, grad_linear_bias); chunking is a memory strategy, the
    loss is the plain one.  Precomputed gradients are not supported (their outputs are
    the empty tensors torch returns when none is asked for)."""
    if any(ctx.arg(i) for i in (12, 13, 14)):
        raise ctx.unsupported("precomputed gradients (compute_*_grad=True)")
    reduction = ctx.arg(5, "reduction")
    if reduction not in ("mean", "sum"):
        raise ctx.unsupported(f"reduction={reduction!r} (mean or sum)")
    acc = _acc_dtype(ctx, ctx.arg(10, "acc_dtype"), ctx.tensor(0))
    rows, row_w = _linear_ce_rows(ctx, reduction, int(ctx.arg(6, "ignore_index", -100)),
                                  float(ctx.arg(7, "label_smoothing", 0.0)), acc)
    loss = _op.sum(rows, None, False)
    if reduction == "mean":
        loss = _op.divide(loss, _op.sum(row_w, None, False))
    outs = [ctx.astype(loss, ctx.out_dtype(0))]
    for i in (1, 2, 3):
        outs.append(_op.zeros(ctx.out_shape(i), ctx.out_dtype(i)))
    return outs


@converter("torch_nn._linear_cross_entropy_batch_chunked_no_reduction.default")
def _linear_ce_chunked_none(ctx: NodeContext) -> Any:
    """(input, linear_weight, target, linear_bias, weight, ignore_index, batch_chunk_size,
    acc_policy, acc_dtype) -> per-row losses (N,)."""
    acc = _acc_dtype(ctx, ctx.arg(8, "acc_dtype"), ctx.tensor(0))
    rows, _ = _linear_ce_rows(ctx, "none", int(ctx.arg(5, "ignore_index", -100)), 0.0, acc)
    return ctx.astype(rows, ctx.out_dtype())


# -- hashing and resizing -----------------------------------------------------------------------
def _xor_reduce_last(ctx: NodeContext, x: Any, n: int) -> Any:
    """XOR of ``x``'s last axis (static length ``n``) by pairwise halving."""
    while n > 1:
        if n % 2:
            pad = _op.zeros(ctx.shape(x)[:-1] + [1], ctx.dtype(x))
            x = _op.concat([x, pad], -1)
            n += 1
        half = n // 2
        nd = ctx.ndim(x)
        lo = _op.strided_slice(x, [nd - 1], [0], [half], [1])
        hi = _op.strided_slice(x, [nd - 1], [half], [n], [1])
        x = ctx.emit(_op.bitwise_xor(lo, hi))
        n = half
    return _op.squeeze(x, [-1])


@converter("aten.hash_tensor.default")
def _hash_tensor(ctx: NodeContext) -> Any:
    """hash_tensor(input, dim=[], keepdim=False, mode=0): the XOR of the elements, each
    widened to its 64-bit float / integer type and read as uint64."""
    x = ctx.tensor(0)
    mode = int(ctx.kwargs.get("mode", 0) or 0)
    if mode != 0:
        raise ctx.unsupported(f"mode {mode} (only 0, the xor reduction)")
    dtype = ctx.dtype(x)
    if _is_float(dtype):
        wide = "float64"
    elif dtype == "bool" or dtype.startswith("uint"):
        wide = "uint64"
    else:
        wide = "int64"
    bits = _op.bitcast(ctx.astype(x, wide), "uint64") if wide != "uint64" else ctx.astype(x, wide)
    shape = ctx.shape(x)
    ndim = len(shape)
    dims = ctx.arg(1, "dim")
    keep = bool(ctx.kwargs.get("keepdim", False))
    axes = list(range(ndim)) if not dims else sorted({ctx.axis(int(d), ndim) for d in dims})
    if ndim == 0:
        return bits
    static = _static(ctx, [shape[a] for a in axes], "the hashed dimensions")
    rest = [a for a in range(ndim) if a not in axes]
    moved = _op.permute_dims(bits, rest + axes)
    n = int(np.prod(static, dtype="int64"))
    flat = _op.reshape(moved, [shape[a] for a in rest] + [n])
    if n == 0:
        out = _op.zeros([shape[a] for a in rest], "uint64")
    else:
        out = _xor_reduce_last(ctx, flat, n)
    if keep:
        out = _op.reshape(out, [1 if a in axes else shape[a] for a in range(ndim)])
    return out


@converter("aten.resize.default")
def _resize_tensor(ctx: NodeContext) -> Any:
    """resize(input, size): the first ``prod(size)`` elements of ``input`` in the new shape;
    elements beyond ``input``'s (uninitialized in torch) are zeros."""
    x = ctx.tensor(0)
    size = _static(ctx, list(ctx.arg(1, "size")), "size")
    have = int(np.prod(_static(ctx, ctx.shape(x), "the input shape"), dtype="int64"))
    want = int(np.prod(size, dtype="int64"))
    flat = _op.reshape(x, [have])
    if want < have:
        flat = _op.strided_slice(flat, [0], [0], [want], [1])
    elif want > have:
        flat = _op.concat([flat, _op.zeros([want - have], ctx.dtype(x))], 0)
    return _op.reshape(flat, size)


@converter("aten._local_scalar_dense.default")
def _local_scalar_dense(ctx: NodeContext) -> Any:
    """item(): the one element of a tensor, as a 0-d tensor (usable where a tensor op takes
    a scalar; a size computed from it is data-dependent, which the importer rejects)."""
    if _used_as_size(ctx.node):
        raise ctx.unsupported("a size or index computed from a tensor's value (item()) is "
                              "data-dependent, which the importer does not support")
    x = ctx.tensor(0)
    val = ctx.meta()
    kind = type(val).__name__
    dtype = {"SymFloat": "float64", "SymBool": "bool"}.get(kind, "int64")
    if ctx.dtype(x).startswith(("float", "bfloat")) and kind not in ("SymFloat", "SymBool"):
        dtype = "float64"
    return ctx.astype(_op.reshape(x, []), dtype)


def _used_as_size(node: Any) -> bool:
    """Whether an FX node's value feeds size arithmetic or an int (size) argument."""
    for user in node.users:
        schema = getattr(user.target, "_schema", None)
        if schema is None:
            if getattr(user.target, "__module__", "") in ("_operator", "operator"):
                return True
            continue
        for arg, value in zip(schema.arguments, user.args):
            used = value is node or (isinstance(value, (list, tuple)) and node in value)
            if used and "int" in str(arg.type).lower():
                return True
        for arg in schema.arguments:
            value = user.kwargs.get(arg.name)
            used = value is node or (isinstance(value, (list, tuple)) and node in value)
            if used and "int" in str(arg.type).lower():
                return True
    return False
