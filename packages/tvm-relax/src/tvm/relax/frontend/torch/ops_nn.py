"""Converters for convolution, pooling, normalization, attention and resizing.

Operators torch.export would decompose (``layer_norm``, ``group_norm``, ``max_pool2d``,
``adaptive_avg_pool2d``, ``scaled_dot_product_attention``, ``upsample_*`` ...) are registered
by their exact overload so :func:`~.importer.decomposition_table` keeps them whole: each
becomes one Relax operator instead of a dozen primitive ones.  A training-mode batch norm is
computed with batch statistics (:mod:`.ops_nn_extra`); dropout, and attention with
dropout_p > 0, are in :mod:`.ops_random`.
"""

from __future__ import annotations

import math
from typing import Any, Optional, Sequence

from ... import op as _op
from ...expr import TupleGetItem
from .common import NodeContext, converter


# -- helpers ----------------------------------------------------------------------------------
def output_used(ctx: NodeContext, index: int) -> bool:
    """Whether output ``index`` of a multi-output node is read (``getitem(node, index)``)."""
    for user in ctx.node.users:
        if getattr(user.target, "__name__", "") != "getitem":
            return True  # the tuple is used whole
        if user.args[1] == index:
            return True
    return False


def _ints(ctx: NodeContext, value: Any, n: int, what: str, default: Optional[Sequence] = None
          ) -> list[int]:
    """An int or a list of 1 or ``n`` ints as ``n`` ints (``[]``/None: ``default``)."""
    if value is None or (isinstance(value, (list, tuple)) and len(value) == 0):
        if default is None:
            raise ctx.error(f"{what} is missing")
        value = default
    if isinstance(value, int):
        return [value] * n
    values = [int(v) for v in value]
    if len(values) == 1:
        return values * n
    if len(values) != n:
        raise ctx.unsupported(f"{what} must have 1 or {n} values, got {list(values)}")
    return values


def _batched(ctx: NodeContext, x: Any, nsp: int, what: str) -> tuple[Any, bool]:
    """``x`` with a batch axis (torch accepts unbatched (C, *spatial) inputs): the tensor and
    whether an axis was added."""
    ndim = ctx.ndim(x)
    if ndim == nsp + 2:
        return x, False
    if ndim == nsp + 1:
        return ctx.emit(_op.expand_dims(x, 0)), True
    raise ctx.unsupported(f"{what} takes a {nsp + 1}-d or {nsp + 2}-d input, got {ndim}-d")


def _unbatch(out: Any, added: bool) -> Any:
    return _op.squeeze(out, [0]) if added else out


def _tuple_items(ctx: NodeContext, expr: Any, n: int) -> list[Any]:
    tup = ctx.emit(expr)
    return [ctx.emit(TupleGetItem(tup, i)) for i in range(n)]


def _float_input(ctx: NodeContext, index: int = 0) -> Any:
    x = ctx.tensor(index)
    if not ctx.dtype(x).startswith(("float", "bfloat")):
        raise ctx.unsupported(f"input dtype {ctx.dtype(x)} (a floating-point tensor is needed)")
    return x


# -- convolution --------------------------------------------------------------------------------
@converter("aten.convolution.default")
def _convolution(ctx: NodeContext) -> Any:
    """aten.convolution(input, weight, bias, stride, padding, dilation, transposed,
    output_padding, groups): 1/2/3-d, plain or transposed."""
    x, w = ctx.tensor(0), ctx.tensor(1)
    nd = ctx.ndim(x) - 2
    if nd not in (1, 2, 3):
        raise ctx.unsupported(f"a {nd}-d convolution (input of rank {ctx.ndim(x)})")
    if ctx.ndim(w) != nd + 2:
        raise ctx.error(f"weight has rank {ctx.ndim(w)}, expected {nd + 2}")
    stride = _ints(ctx, ctx.arg(3, "stride"), nd, "stride", [1])
    padding = _ints(ctx, ctx.arg(4, "padding"), nd, "padding", [0])
    dilation = _ints(ctx, ctx.arg(5, "dilation"), nd, "dilation", [1])
    transposed = bool(ctx.arg(6, "transposed", False))
    output_padding = _ints(ctx, ctx.arg(7, "output_padding"), nd, "output_padding", [0])
    groups = int(ctx.arg(8, "groups", 1))
    dtype = ctx.out_dtype()
    x, w = ctx.astype(x, dtype), ctx.astype(w, dtype)
    spatial = "DHW"[3 - nd:]
    if transposed:
        fn = {1: _op.nn.conv1d_transpose, 2: _op.nn.conv2d_transpose,
              3: _op.nn.conv3d_transpose}[nd]
        out = fn(x, w, strides=stride, padding=padding, output_padding=output_padding,
                 dilation=dilation, groups=groups, data_layout="NC" + spatial,
                 kernel_layout="IO" + spatial)
    else:
        if any(output_padding):
            raise ctx.unsupported(f"output_padding {output_padding} on a non-transposed "
                                  "convolution")
        fn = {1: _op.nn.conv1d, 2: _op.nn.conv2d, 3: _op.nn.conv3d}[nd]
        out = fn(x, w, strides=stride, padding=padding, dilation=dilation, groups=groups,
                 data_layout="NC" + spatial, kernel_layout="OI" + spatial)
    if ctx.has(2, "bias"):
        bias = ctx.astype(ctx.tensor(2, "bias"), dtype)
        out = _op.add(out, _op.reshape(bias, [1, -1] + [1] * nd))
    return out


# -- pooling --------------------------------------------------------------------------------
def _pool_window(ctx: NodeContext, nsp: int, with_dilation: bool) -> tuple:
    kernel = _ints(ctx, ctx.arg(1, "kernel_size"), nsp, "kernel_size")
    stride = _ints(ctx, ctx.arg(2, "stride"), nsp, "stride", kernel)
    padding = _ints(ctx, ctx.arg(3, "padding"), nsp, "padding", [0])
    if with_dilation:
        dilation = _ints(ctx, ctx.arg(4, "dilation"), nsp, "dilation", [1])
        ceil = bool(ctx.arg(5, "ceil_mode", False))
    else:
        dilation, ceil = [1] * nsp, bool(ctx.arg(4, "ceil_mode", False))
    for k, p in zip(kernel, padding):
        if p * 2 > k:
            raise ctx.error(f"padding {padding} exceeds half the kernel size {kernel}")
    return kernel, stride, padding, dilation, ceil


def _max_pool(nsp: int, with_indices: bool) -> Any:
    def convert(ctx: NodeContext) -> Any:
        x, added = _batched(ctx, ctx.tensor(0), nsp, ctx.op)
        kernel, stride, padding, dilation, ceil = _pool_window(ctx, nsp, True)
        if not with_indices or not output_used(ctx, 1):
            fn = {1: _op.nn.max_pool1d, 2: _op.nn.max_pool2d, 3: _op.nn.max_pool3d}[nsp]
            out = _unbatch(fn(x, kernel, stride, padding, dilation, ceil), added)
            return [out, None] if with_indices else out
        sizes = ctx.shape(x)[2:]
        if not all(isinstance(s, int) for s in sizes):
            raise ctx.unsupported("the indices of a max pooling over symbolic spatial sizes")
        values, flat = _tuple_items(ctx, _op.nn.max_pool_with_indices(
            x, kernel, stride, padding, dilation, ceil), 2)
        # relax counts the index over the whole input; torch within each (n, c) plane
        local = _op.floor_mod(flat, ctx.const(math.prod(sizes), "int64"))
        return [_unbatch(values, added), _unbatch(local, added)]
    return convert


for _n in (1, 2, 3):
    converter(f"aten.max_pool{_n}d.default")(_max_pool(_n, False))
    converter(f"aten.max_pool{_n}d_with_indices.default")(_max_pool(_n, True))


def _avg_pool(nsp: int) -> Any:
    def convert(ctx: NodeContext) -> Any:
        x, added = _batched(ctx, _float_input(ctx), nsp, ctx.op)
        kernel, stride, padding, _, ceil = _pool_window(ctx, nsp, False)
        include_pad = bool(ctx.arg(5, "count_include_pad", True))
        divisor = ctx.arg(6, "divisor_override") if nsp > 1 else None
        fn = {1: _op.nn.avg_pool1d, 2: _op.nn.avg_pool2d, 3: _op.nn.avg_pool3d}[nsp]
        if divisor is None:
            out = fn(x, kernel, stride, padding, 1, ceil, include_pad)
            return _unbatch(out, added)
        if int(divisor) == 0:
            raise ctx.error("divisor_override must not be zero")
        # sum of each window / divisor: zero-pad so every window (ceil_mode's partial last
        # one too) is whole, then a padding-counting average times kernel / divisor
        sizes = ctx.shape(x)[2:]
        out_sizes = ctx.out_shape()[-nsp:]
        pads = [(0, 0), (0, 0)]
        for i in range(nsp):
            extra = (out_sizes[i] - 1) * stride[i] + kernel[i] - (sizes[i] + 2 * padding[i])
            if not isinstance(extra, int):
                raise ctx.unsupported("divisor_override with symbolic spatial sizes")
            pads.append((padding[i], padding[i] + max(extra, 0)))
        flat = [p for pair in pads for p in pair]
        padded = _op.nn.pad(x, flat)
        out = fn(padded, kernel, stride, 0, 1, False, True)
        factor = ctx.const(math.prod(kernel) / int(divisor), ctx.dtype(x))
        return _unbatch(_op.multiply(out, factor), added)
    return convert


for _n in (1, 2, 3):
    converter(f"aten.avg_pool{_n}d.default")(_avg_pool(_n))


def _adaptive(nsp: int, kind: str) -> Any:
    def convert(ctx: NodeContext) -> Any:
        x = _float_input(ctx) if kind == "avg" else ctx.tensor(0)
        x, added = _batched(ctx, x, nsp, ctx.op)
        size = _ints(ctx, ctx.arg(1, "output_size"), nsp, "output_size")
        name = f"adaptive_{kind}_pool{nsp}d"
        out = getattr(_op.nn, name)(x, size)
        if kind == "avg":
            return _unbatch(out, added)
        if not output_used(ctx, 1):
            return [_unbatch(out, added), None]
        sizes = ctx.shape(x)[2:]
        if not all(isinstance(s, int) for s in sizes):
            raise ctx.unsupported("the indices of an adaptive max pooling over symbolic "
                                  "spatial sizes")
        if not all(s % o == 0 for s, o in zip(sizes, size)):
            values, local = _adaptive_max_gather(ctx, x, sizes, size)
            return [_unbatch(values, added), _unbatch(local, added)]
        # every size divides evenly: the adaptive windows are those of a plain max pooling
        kernel = [s // o for s, o in zip(sizes, size)]
        values, flat = _tuple_items(ctx, _op.nn.max_pool_with_indices(x, kernel, kernel), 2)
        local = _op.floor_mod(flat, ctx.const(math.prod(sizes), "int64"))
        return [_unbatch(values, added), _unbatch(local, added)]
    return convert


def _adaptive_max_gather(ctx: NodeContext, x: Any, sizes: list[int], size: list[int]
                         ) -> tuple[Any, Any]:
    """Adaptive max pooling with indices for windows of uneven sizes: gather every window
    (padded to the largest by repeating its first element, which moves neither the maximum
    nor its first position) from the flattened planes, then max / argmax over it."""
    import itertools

    import numpy as np

    axes = []
    for n, o in zip(sizes, size):
        axes.append([range((i * n) // o, -(-((i + 1) * n) // o)) for i in range(o)])
    strides = [math.prod(sizes[i + 1:]) for i in range(len(sizes))]
    windows = []
    for cell in itertools.product(*axes):
        windows.append([sum(p * st for p, st in zip(pos, strides))
                        for pos in itertools.product(*cell)])
    k = max(len(w) for w in windows)
    table = np.array([w + [w[0]] * (k - len(w)) for w in windows], dtype="int64")
    lead = ctx.shape(x)[:2]
    planes = _op.reshape(x, [*lead, math.prod(sizes)])
    gathered = ctx.emit(_op.reshape(_op.take(planes, ctx.const(table.reshape(-1), "int64"),
                                             axis=2), [*lead, len(windows), k]))
    values = _op.reshape(_op.max(gathered, [3]), [*lead, *size])
    best = _op.add(_op.argmax(gathered, 3),
                   ctx.const(np.arange(len(windows), dtype="int64") * k, "int64"))
    index = _op.take(ctx.const(table.reshape(-1), "int64"), best, axis=0)
    return values, _op.reshape(index, [*lead, *size])


for _n in (1, 2, 3):
    converter(f"aten.adaptive_avg_pool{_n}d.default")(_adaptive(_n, "avg"))
    converter(f"aten.adaptive_max_pool{_n}d.default")(_adaptive(_n, "max"))
converter("aten._adaptive_avg_pool2d.default")(_adaptive(2, "avg"))
converter("aten._adaptive_avg_pool3d.default")(_adaptive(3, "avg"))


# -- normalization --------------------------------------------------------------------------
def _param(ctx: NodeContext, index: int, name: str, shape: list, dtype: str, fill: int) -> Any:
    if ctx.has(index, name):
        return ctx.astype(ctx.tensor(index, name), dtype)
    return (_op.ones if fill else _op.zeros)(shape, dtype)


def _batch_norm_eval(ctx: NodeContext, x: Any, weight: int, bias: int, mean: int, var: int,
                     eps: float) -> list[Any]:
    if ctx.ndim(x) < 2:
        raise ctx.error(f"batch norm needs an (N, C, ...) input, got rank {ctx.ndim(x)}")
    dtype = ctx.dtype(x)
    c = ctx.shape(x)[1]
    if not ctx.has(mean, "running_mean") or not ctx.has(var, "running_var"):
        raise ctx.unsupported("batch norm without running statistics in inference")
    gamma = _param(ctx, weight, "weight", [c], dtype, 1)
    beta = _param(ctx, bias, "bias", [c], dtype, 0)
    moving_mean = ctx.astype(ctx.tensor(mean, "running_mean"), dtype)
    moving_var = ctx.astype(ctx.tensor(var, "running_var"), dtype)
    out = _op.nn.batch_norm(x, gamma, beta, moving_mean, moving_var, axis=1, epsilon=eps)
    return _tuple_items(ctx, out, 3)


def _stat_outputs(ctx: NodeContext, x_stats: list[Any], first: int = 1) -> list[Any]:
    """The saved statistics outputs of an inference batch norm: torch returns empty tensors
    (or the running ones) - whatever its meta says."""
    outs = []
    for i, value in enumerate(x_stats, first):
        shape = ctx.out_shape(i)
        dtype = ctx.out_dtype(i)
        if shape is not None and shape[0] == 0:
            outs.append(_op.zeros([0], dtype))
        else:
            outs.append(ctx.astype(value, dtype))
    return outs


@converter("aten._native_batch_norm_legit_no_training.default")
def _batch_norm_no_training(ctx: NodeContext) -> Any:
    """(input, weight, bias, running_mean, running_var, momentum, eps) -> (out, mean, rstd)."""
    x = _float_input(ctx)
    out, mean, var = _batch_norm_eval(ctx, x, 1, 2, 3, 4, float(ctx.arg(6, "eps", 1e-5)))
    rstd = _op.rsqrt(_op.add(var, ctx.const(float(ctx.arg(6, "eps", 1e-5)), ctx.dtype(x))))
    return [out, *_stat_outputs(ctx, [mean, rstd])]


@converter("aten.native_batch_norm.default", "aten._native_batch_norm_legit.default",
           "aten._native_batch_norm_legit_functional.default")
def _native_batch_norm(ctx: NodeContext) -> Any:
    """(input, weight, bias, running_mean, running_var, training, momentum, eps); the
    functional form also returns the (unchanged, at inference) running statistics."""
    if ctx.arg(5, "training"):
        from .ops_nn_extra import native_batch_norm_train

        return native_batch_norm_train(ctx)
    x = _float_input(ctx)
    eps = float(ctx.arg(7, "eps", 1e-5))
    out, mean, var = _batch_norm_eval(ctx, x, 1, 2, 3, 4, eps)
    rstd = _op.rsqrt(_op.add(var, ctx.const(eps, ctx.dtype(x))))
    outs = [out, *_stat_outputs(ctx, [mean, rstd])]
    if ctx.op.endswith("_functional.default"):
        outs += [ctx.tensor(3, "running_mean"), ctx.tensor(4, "running_var")]
    return outs


@converter("aten._native_batch_norm_legit.no_stats")
def _batch_norm_no_stats(ctx: NodeContext) -> Any:
    """(input, weight, bias, training, momentum, eps): batch statistics only."""
    if ctx.arg(3, "training"):
        from .ops_nn_extra import native_batch_norm_train

        return native_batch_norm_train(ctx, stats=False)
    raise ctx.unsupported("batch norm with neither running statistics nor training")


@converter("aten.batch_norm.default")
def _batch_norm(ctx: NodeContext) -> Any:
    """(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn)."""
    x = _float_input(ctx)
    if ctx.arg(5, "training"):
        from .ops_nn_extra import batch_norm_train

        return batch_norm_train(ctx, x, 1, 2, None, None, float(ctx.arg(6, "momentum", 0.1)),
                                float(ctx.arg(7, "eps", 1e-5)))[0]
    return _batch_norm_eval(ctx, x, 1, 2, 3, 4, float(ctx.arg(7, "eps", 1e-5)))[0]


def _normalized_axes(ctx: NodeContext, x: Any, shape: Sequence[Any]) -> list[int]:
    ndim, k = ctx.ndim(x), len(shape)
    if k == 0 or k > ndim:
        raise ctx.error(f"normalized_shape {list(shape)} does not fit a {ndim}-d input")
    return list(range(ndim - k, ndim))


def _moments(ctx: NodeContext, x: Any, axes: list[int], eps: float) -> tuple[Any, Any]:
    """Mean and 1 / sqrt(var + eps) over ``axes`` (kept)."""
    mean = _op.mean(x, axes, True)
    var = _op.variance(x, axes, True)
    return mean, _op.rsqrt(_op.add(var, ctx.const(eps, ctx.dtype(x))))


@converter("aten.layer_norm.default", "aten.native_layer_norm.default")
def _layer_norm(ctx: NodeContext) -> Any:
    """layer_norm(input, normalized_shape, weight, bias, eps, cudnn_enable); native_layer_norm
    (input, normalized_shape, weight, bias, eps) -> (out, mean, rstd)."""
    x = _float_input(ctx)
    dtype = ctx.dtype(x)
    shape = list(ctx.arg(1, "normalized_shape"))
    axes = _normalized_axes(ctx, x, shape)
    eps = float(ctx.arg(4, "eps", 1e-5))
    gamma = _param(ctx, 2, "weight", shape, dtype, 1)
    beta = _param(ctx, 3, "bias", shape, dtype, 0)
    out = _op.nn.layer_norm(x, gamma, beta, axes, eps)
    if ctx.op == "aten.layer_norm.default":
        return out
    if not (output_used(ctx, 1) or output_used(ctx, 2)):
        return [out, None, None]
    mean, rstd = _moments(ctx, x, axes, eps)
    return [out, ctx.astype(mean, ctx.out_dtype(1)), ctx.astype(rstd, ctx.out_dtype(2))]


def _group_norm_stats(ctx: NodeContext, x: Any, groups: int, eps: float) -> tuple[Any, Any]:
    """Per-(sample, group) mean and rstd, shaped (N, G) as native_group_norm returns them."""
    n = ctx.shape(x)[0]
    grouped = _op.reshape(x, [n, groups, -1])
    mean, rstd = _moments(ctx, grouped, [2], eps)
    return _op.reshape(mean, [n, groups]), _op.reshape(rstd, [n, groups])


def _group_norm_core(ctx: NodeContext, x: Any, groups: int, weight: int, bias: int,
                     eps: float) -> Any:
    if ctx.ndim(x) < 2:
        raise ctx.error(f"group norm needs an (N, C, ...) input, got rank {ctx.ndim(x)}")
    c = ctx.shape(x)[1]
    if isinstance(c, int) and c % groups:
        raise ctx.error(f"{c} channels do not split into {groups} groups")
    dtype = ctx.dtype(x)
    gamma = _param(ctx, weight, "weight", [c], dtype, 1)
    beta = _param(ctx, bias, "bias", [c], dtype, 0)
    if ctx.ndim(x) == 2:  # no spatial axes: normalise (N, C, 1)
        out = _op.nn.group_norm(_op.expand_dims(x, 2), gamma, beta, groups, 1, [2], eps)
        return _op.squeeze(out, [2])
    return _op.nn.group_norm(x, gamma, beta, groups, 1, list(range(2, ctx.ndim(x))), eps)


@converter("aten.group_norm.default")
def _group_norm(ctx: NodeContext) -> Any:
    """(input, num_groups, weight, bias, eps, cudnn_enabled)."""
    x = _float_input(ctx)
    return _group_norm_core(ctx, x, int(ctx.arg(1, "num_groups")), 2, 3,
                            float(ctx.arg(4, "eps", 1e-5)))


@converter("aten.native_group_norm.default")
def _native_group_norm(ctx: NodeContext) -> Any:
    """(input, weight, bias, N, C, HxW, group, eps) -> (out, mean, rstd)."""
    x = _float_input(ctx)
    groups, eps = int(ctx.arg(6, "group")), float(ctx.arg(7, "eps"))
    out = _group_norm_core(ctx, x, groups, 1, 2, eps)
    if not (output_used(ctx, 1) or output_used(ctx, 2)):
        return [out, None, None]
    mean, rstd = _group_norm_stats(ctx, x, groups, eps)
    return [out, ctx.astype(mean, ctx.out_dtype(1)), ctx.astype(rstd, ctx.out_dtype(2))]


@converter("aten.instance_norm.default")
def _instance_norm(ctx: NodeContext) -> Any:
    """(input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps,
    cudnn_enabled): per-sample, per-channel statistics (a group norm with one channel per
    group), or the running ones."""
    x = _float_input(ctx)
    eps = float(ctx.arg(7, "eps", 1e-5))
    if not ctx.arg(5, "use_input_stats", True):
        return _batch_norm_eval(ctx, x, 1, 2, 3, 4, eps)[0]
    c = ctx.shape(x)[1]
    if not isinstance(c, int):
        raise ctx.unsupported("instance norm over a symbolic number of channels")
    return _group_norm_core(ctx, x, c, 1, 2, eps)


@converter("aten.rms_norm.default")
def _rms_norm(ctx: NodeContext) -> Any:
    """(input, normalized_shape, weight, eps): eps None is the dtype's machine epsilon."""
    import numpy as np

    x = _float_input(ctx)
    dtype = ctx.dtype(x)
    shape = list(ctx.arg(1, "normalized_shape"))
    axes = _normalized_axes(ctx, x, shape)
    eps = ctx.arg(3, "eps")
    if eps is None:
        from tvm.ffi.dtype import to_numpy_dtype

        eps = float(np.finfo(to_numpy_dtype(dtype)).eps)
    weight = _param(ctx, 2, "weight", shape, dtype, 1)
    return _op.nn.rms_norm(x, weight, axes, float(eps))


# -- attention --------------------------------------------------------------------------------
@converter("aten.scaled_dot_product_attention.default")
def _sdpa(ctx: NodeContext) -> Any:
    """(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa) on (..., L, E)
    tensors, usually (B, H, L, E); relax.nn.attention works in (B, L, H, E)."""
    q, k, v = (_float_input(ctx, i) for i in range(3))
    dtype = ctx.out_dtype()
    q, k, v = (ctx.astype(t, dtype) for t in (q, k, v))
    mask = ctx.arg(3, "attn_mask")
    dropout = float(ctx.arg(4, "dropout_p", 0.0) or 0.0)
    causal = bool(ctx.arg(5, "is_causal", False))
    scale = ctx.arg(6, "scale")
    gqa = bool(ctx.arg(7, "enable_gqa", False))
    if dropout != 0.0:
        from .ops_random import sdpa_dropout

        return sdpa_dropout(ctx, q, k, v, dropout)
    if causal and mask is not None:
        raise ctx.error("attn_mask and is_causal=True together")
    ndim = ctx.ndim(q)
    if ndim < 2 or ctx.ndim(k) != ndim or ctx.ndim(v) != ndim:
        raise ctx.unsupported(f"query/key/value of ranks {ndim}, {ctx.ndim(k)}, {ctx.ndim(v)} "
                              "(one rank >= 2 is needed)")
    qs, ks, vs = ctx.shape(q), ctx.shape(k), ctx.shape(v)
    if ndim == 4:
        hq, hk = qs[1], ks[1]
        if isinstance(hq, int) and isinstance(hk, int) and hq != hk:
            if not gqa:
                raise ctx.error(f"query has {hq} heads and key {hk}; pass enable_gqa=True for "
                                "grouped-query attention")
            if hq % hk:
                raise ctx.error(f"query heads {hq} are not a multiple of key heads {hk}")
        bsnh = [_op.permute_dims(t, [0, 2, 1, 3]) for t in (q, k, v)]
        lead = None
    else:  # flatten the leading axes into a batch with one head
        lead = qs[:-2]
        bsnh = [_op.expand_dims(_op.reshape(t, [-1, *s[-2:]]), 2)
                for t, s in zip((q, k, v), (qs, ks, vs))]
    bias = None
    any_row = None
    if mask is not None:
        mask = ctx.tensor(3, "attn_mask")
        target = [*qs[:-2], qs[-2], ks[-2]]
        if ctx.dtype(mask) == "bool":
            low = ctx.const(_lowest(dtype), dtype)
            bias = _op.where(mask, ctx.const(0.0, dtype), low)
            # torch gives 0 where a query sees no key at all (its safe softmax)
            any_row = _op.max(_op.astype(mask, "int32"), [-1], True)
        else:
            bias = ctx.astype(mask, dtype)
        if ndim != 4:
            bias = _op.reshape(_op.broadcast_to(bias, target), [-1, 1, target[-2], target[-1]])
            if any_row is not None:
                any_row = _op.broadcast_to(any_row, [*target[:-1], 1])
    out = _op.nn.attention(bsnh[0], bsnh[1], bsnh[2], bias,
                           None if scale is None else float(scale),
                           "TopLeft" if causal else None)
    if ndim == 4:
        out = _op.permute_dims(out, [0, 2, 1, 3])
    else:
        out = _op.reshape(out, [*lead, qs[-2], vs[-1]])
    if any_row is not None:
        out = _op.where(_op.astype(any_row, "bool"), out, ctx.const(0.0, dtype))
    return out


def _lowest(dtype: str) -> float:
    import numpy as np

    from tvm.ffi.dtype import to_numpy_dtype

    return float(np.finfo(to_numpy_dtype(dtype)).min)


# -- resizing -----------------------------------------------------------------------------------
_RESIZE = {  # op -> (spatial axes, method, has align_corners)
    "upsample_nearest1d": (1, "nearest_neighbor", False),
    "upsample_nearest2d": (2, "nearest_neighbor", False),
    "upsample_nearest3d": (3, "nearest_neighbor", False),
    "upsample_linear1d": (1, "linear", True),
    "upsample_bilinear2d": (2, "linear", True),
    "upsample_trilinear3d": (3, "linear", True),
    "upsample_bicubic2d": (2, "cubic", True),
}


def _resize(name: str, vec: bool) -> Any:
    nsp, method, has_align = _RESIZE[name]

    def convert(ctx: NodeContext) -> Any:
        x = _float_input(ctx)
        if ctx.ndim(x) != nsp + 2:
            raise ctx.unsupported(f"a {ctx.ndim(x)}-d input ({nsp + 2}-d expected)")
        align = bool(ctx.arg(2, "align_corners", False)) if has_align else False
        if vec:
            scales = ctx.arg(3 if has_align else 2, "scale_factors")
        else:
            first = 3 if has_align else 2
            scales = [ctx.arg(first + i) for i in range(nsp)]
        scales = [None] * nsp if scales is None else list(scales)
        if len(scales) == 1:
            scales = scales * nsp
        in_sizes = ctx.shape(x)[2:]
        out_sizes = ctx.out_shape()[2:]
        if not align and not _scales_match(ctx, in_sizes, out_sizes, scales):
            return _resize_by_tables(ctx, x, method, in_sizes, out_sizes, scales)
        if method == "nearest_neighbor":
            mode, rounding = "asymmetric", "floor"
        else:
            mode, rounding = ("align_corners" if align else "half_pixel"), "round"
        fn = {1: _op.image.resize1d, 2: _op.image.resize2d, 3: _op.image.resize3d}[nsp]
        return fn(x, out_sizes, method=method, coordinate_transformation_mode=mode,
                  rounding_method=rounding, cubic_alpha=-0.75)
    return convert


def _scales_match(ctx: NodeContext, in_sizes: list, out_sizes: list, scales: list) -> bool:
    """Whether every given scale factor is exactly ``out / in``: torch samples at
    ``dst / scale`` when a scale factor is given, Relax's resize by ``in / out``."""
    for i, s in enumerate(scales):
        if s is None or s <= 0:
            continue
        n, m = in_sizes[i], out_sizes[i]
        if not (isinstance(n, int) and isinstance(m, int)):
            raise ctx.unsupported(f"scale factor {s} on a symbolic size (pass the output size "
                                  "instead)")
        if abs(1.0 / s - n / m) > 1e-9 * max(1.0, n / m):
            return False
    return True


def _source_positions(n: int, m: int, scale: Optional[float], cubic: bool) -> Any:
    """torch's half-pixel source coordinate of each of ``m`` outputs (float32, as its CPU
    kernels compute it); ``scale``: the given scale factor (None: ``m / n``)."""
    import numpy as np

    ratio = np.float32(1.0 / scale if scale else n / m)
    src = ratio * (np.arange(m, dtype=np.float32) + np.float32(0.5)) - np.float32(0.5)
    return src if cubic else np.maximum(src, np.float32(0))


def _cubic_weights(t: Any) -> list[Any]:
    a = -0.75

    def near(v: Any) -> Any:  # |v| <= 1
        return ((a + 2) * v - (a + 3)) * v * v + 1

    def far(v: Any) -> Any:  # 1 < |v| < 2
        return ((a * v - 5 * a) * v + 8 * a) * v - 4 * a

    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _resize_by_tables(ctx: NodeContext, x: Any, method: str, in_sizes: list, out_sizes: list,
                      scales: list) -> Any:
    """Resize for a scale factor that is not ``out / in``: per spatial axis, a gather
    (nearest) or a matmul with torch's interpolation weights (linear, cubic)."""
    import numpy as np

    ndim = ctx.ndim(x)
    for i, (n, m) in enumerate(zip(in_sizes, out_sizes)):
        if not (isinstance(n, int) and isinstance(m, int)):
            raise ctx.unsupported("a scale factor other than out / in on a symbolic size")
        axis = 2 + i
        scale = scales[i] if scales[i] and scales[i] > 0 else None
        if method == "nearest_neighbor":
            ratio = np.float32(1.0 / scale if scale else n / m)
            idx = np.minimum(np.floor(np.arange(m, dtype=np.float32) * ratio), n - 1)
            x = _op.take(x, ctx.const(idx.astype("int64"), "int64"), axis=axis)
            continue
        weights = np.zeros((n, m), dtype="float64")
        cols = np.arange(m)
        if method == "linear":
            src = _source_positions(n, m, scale, False).astype("float64")
            i0 = np.minimum(np.floor(src), n - 1).astype("int64")
            lam = np.clip(src - i0, 0, 1)
            i1 = np.where(i0 < n - 1, i0 + 1, i0)
            np.add.at(weights, (i0, cols), 1 - lam)
            np.add.at(weights, (i1, cols), lam)
        else:
            src = _source_positions(n, m, scale, True).astype("float64")
            base = np.floor(src).astype("int64")
            for k, w in enumerate(_cubic_weights(src - base)):
                np.add.at(weights, (np.clip(base - 1 + k, 0, n - 1), cols), w)
        order = [a for a in range(ndim) if a != axis] + [axis]
        back = [order.index(a) for a in range(ndim)]
        moved = _op.matmul(_op.permute_dims(x, order), ctx.const(weights, ctx.dtype(x)))
        x = ctx.emit(_op.permute_dims(moved, back))
    return x


for _name in _RESIZE:
    converter(f"aten.{_name}.vec")(_resize(_name, True))
    converter(f"aten.{_name}.default")(_resize(_name, False))


# -- channel rearrangement ------------------------------------------------------------------
@converter("aten.pixel_shuffle.default")
def _pixel_shuffle(ctx: NodeContext) -> Any:
    """(*, C r^2, H, W) -> (*, C, H r, W r)."""
    x = ctx.tensor(0)
    r = int(ctx.arg(1, "upscale_factor"))
    shape = ctx.shape(x)
    if len(shape) < 3:
        raise ctx.error(f"pixel_shuffle needs at least 3 dimensions, got {len(shape)}")
    *lead, c, h, w = shape
    if isinstance(c, int) and c % (r * r):
        raise ctx.error(f"{c} channels are not divisible by upscale_factor^2 = {r * r}")
    k = len(lead)
    y = _op.reshape(x, [*lead, -1, r, r, h, w])
    y = _op.permute_dims(y, [*range(k), k, k + 3, k + 1, k + 4, k + 2])
    return _op.reshape(y, ctx.out_shape())


@converter("aten.pixel_unshuffle.default")
def _pixel_unshuffle(ctx: NodeContext) -> Any:
    """(*, C, H r, W r) -> (*, C r^2, H, W)."""
    x = ctx.tensor(0)
    r = int(ctx.arg(1, "downscale_factor"))
    shape = ctx.shape(x)
    if len(shape) < 3:
        raise ctx.error(f"pixel_unshuffle needs at least 3 dimensions, got {len(shape)}")
    *lead, c, h, w = shape
    for what, d in (("height", h), ("width", w)):
        if isinstance(d, int) and d % r:
            raise ctx.error(f"{what} {d} is not divisible by downscale_factor {r}")
    k = len(lead)
    oh, ow = ctx.out_shape()[-2:]
    y = _op.reshape(x, [*lead, c, oh, r, ow, r])
    y = _op.permute_dims(y, [*range(k), k, k + 2, k + 4, k + 1, k + 3])
    return _op.reshape(y, ctx.out_shape())


@converter("aten.channel_shuffle.default", "aten.native_channel_shuffle.default")
def _channel_shuffle(ctx: NodeContext) -> Any:
    """(N, C, *) with C = g k -> channels reordered as (k, g)."""
    x = ctx.tensor(0)
    g = int(ctx.arg(1, "groups"))
    shape = ctx.shape(x)
    if len(shape) < 2:
        raise ctx.error(f"channel_shuffle needs at least 2 dimensions, got {len(shape)}")
    n, c, *rest = shape
    if isinstance(c, int) and c % g:
        raise ctx.error(f"{c} channels do not split into {g} groups")
    y = _op.reshape(x, [n, g, -1, *rest])
    y = _op.permute_dims(y, [0, 2, 1, *range(3, len(shape) + 1)])
    return _op.reshape(y, shape)


# -- dropout: in ops_random (identity when not training) ------------------------------------
