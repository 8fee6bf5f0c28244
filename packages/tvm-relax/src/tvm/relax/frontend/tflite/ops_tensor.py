"""TFLite shape and data-movement builtins: pad, concat, split, reshape, squeeze,
expand_dims, transpose, strided slice, slice, gather/scatter, pack/unpack, tile, shape,
fill, space/depth/batch rearrangements, embedding lookup, top-k, one-hot, range, segment
reductions, matrix diagonals.

Shape-like operands (paddings, axes, permutations, slice bounds) must be constant tensors.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import op as _op
from ...expr import ShapeExpr
from .common import OpContext, converter, tflite_dtype

_BIG = 1 << 62  # an open slice bound


def _axis(ctx: OpContext, axis: int, ndim: int) -> int:
    if not -ndim <= axis < ndim:
        raise ctx.error(f"axis {axis} is out of range for rank {ndim}")
    return axis + ndim if axis < 0 else axis


def _paddings(ctx: OpContext) -> list[int]:
    pads = ctx.int_list(1, "paddings")
    if len(pads) != 2 * ctx.ndim(0) or any(p < 0 for p in pads):
        raise ctx.error(f"paddings {pads} do not fit rank {ctx.ndim(0)} (need "
                        f"{ctx.ndim(0)} non-negative pairs)")
    return pads


@converter("PAD", "PADV2", max_version=4)
def _pad(ctx: OpContext) -> Any:
    value = 0.0
    if ctx.name == "PADV2" and ctx.has(2):
        c = ctx.const(2)
        if c is None:
            raise ctx.unsupported("constant_values must be a constant tensor")
        value = float(c.reshape(-1)[0])
    return _op.nn.pad(ctx.input(0), _paddings(ctx), "constant", value)


@converter("MIRROR_PAD", max_version=3, options="MirrorPadOptions")
def _mirror_pad(ctx: OpContext) -> Any:
    pads = _paddings(ctx)
    x = ctx.input(0)
    if ctx.options.Mode() == 0:  # REFLECT: the edge is not repeated
        return _op.nn.pad(x, pads, "reflect")
    if ctx.options.Mode() != 1:
        raise ctx.unsupported(f"unknown mirror pad mode {ctx.options.Mode()}")
    # SYMMETRIC: the edge is repeated, built from reversed slices per axis
    shape = ctx.shape(0)
    for axis in range(ctx.ndim(0)):
        before, after = pads[2 * axis], pads[2 * axis + 1]
        if not before and not after:
            continue
        n = shape[axis]
        if not isinstance(n, int) or before > n or after > n:
            raise ctx.error(f"SYMMETRIC padding {before, after} needs a static axis {axis} "
                            f"of at least that size, got {n}")
        parts = []
        if before:
            parts.append(_op.strided_slice(x, [axis], [before - 1], [-_BIG], [-1]))
        parts.append(x)
        if after:
            parts.append(_op.strided_slice(x, [axis], [n - 1], [n - 1 - after], [-1]))
        x = _op.concat(parts, axis)
    return x


@converter("CONCATENATION", max_version=4, options="ConcatenationOptions")
def _concat(ctx: OpContext) -> Any:
    axis = _axis(ctx, ctx.options.Axis(), ctx.ndim(0))
    return ctx.activation(_op.concat([ctx.input(i) for i in range(ctx.num_inputs)], axis))


@converter("SPLIT", max_version=4, options="SplitOptions")
def _split(ctx: OpContext) -> Any:
    axis = ctx.int_list(0, "axis")[0]
    x = ctx.input(1)
    n = ctx.options.NumSplits() or ctx.num_outputs
    if n != ctx.num_outputs:
        raise ctx.error(f"num_splits {n} but {ctx.num_outputs} outputs")
    axis = _axis(ctx, axis, ctx.ndim(1))
    if n == 1:
        return [x]
    return _op.split(x, n, axis)


@converter("SPLIT_V", max_version=2, options="SplitVOptions")
def _split_v(ctx: OpContext) -> Any:
    x = ctx.input(0)
    sizes = ctx.int_list(1, "size_splits")
    axis = _axis(ctx, ctx.int_list(2, "axis")[0], ctx.ndim(0))
    if sizes.count(-1) > 1:
        raise ctx.error(f"size_splits {sizes} has more than one -1")
    if -1 in sizes:
        dim = ctx.static_dims(0, [axis], "a -1 in size_splits")[0]
        sizes[sizes.index(-1)] = dim - sum(s for s in sizes if s != -1)
    if len(sizes) == 1:
        return [x]
    bounds, acc = [], 0
    for s in sizes[:-1]:
        acc += s
        bounds.append(acc)
    return _op.split(x, bounds, axis)


@converter("RESHAPE", max_version=2, options="ReshapeOptions")
def _reshape(ctx: OpContext) -> Any:
    shape = None
    if ctx.has(1):
        if ctx.const(1) is not None:
            shape = ctx.int_list(1, "shape")
        else:
            # a shape computed at run time (SHAPE -> STRIDED_SLICE -> PACK, as converters
            # write for a dynamic batch): the output's declared shape, with at most one -1
            # from its shape_signature, says the same
            t = ctx.importer.tensor(ctx.output_ids[0])
            sig = t.shape_signature if t.shape_signature is not None else t.shape
            if len(sig) == len(t.shape) and sum(d < 0 for d in sig) <= 1 and (
                    any(d < 0 for d in sig) or ctx.importer.shapes_as_declared):
                shape = [-1 if d < 0 else d for d in sig]
    if shape is None:
        opts = ctx.options
        if opts.NewShapeLength() or not ctx.has(1):
            shape = [int(opts.NewShape(j)) for j in range(opts.NewShapeLength())]
        else:
            raise ctx.unsupported("a shape computed at run time is not supported")
    return _op.reshape(ctx.input(0), shape)


@converter("SQUEEZE", max_version=2, options="SqueezeOptions")
def _squeeze(ctx: OpContext) -> Any:
    o = ctx.options
    axes = [_axis(ctx, int(o.SqueezeDims(j)), ctx.ndim(0)) for j in range(o.SqueezeDimsLength())]
    return _op.squeeze(ctx.input(0), axes or None)


@converter("EXPAND_DIMS", max_version=3)
def _expand_dims(ctx: OpContext) -> Any:
    axis = ctx.int_list(1, "axis")[0]
    ndim = ctx.ndim(0) + 1
    return _op.expand_dims(ctx.input(0), _axis(ctx, axis, ndim))


@converter("TRANSPOSE", max_version=6)
def _transpose(ctx: OpContext) -> Any:
    perm = ctx.int_list(1, "perm")
    return _op.permute_dims(ctx.input(0), [_axis(ctx, p, ctx.ndim(0)) for p in perm])


@converter("STRIDED_SLICE", max_version=8, options="StridedSliceOptions")
def _strided_slice(ctx: OpContext) -> Any:
    """begin/end/strides with begin, end, ellipsis, new-axis and shrink-axis masks (bit i
    refers to entry i of the slice spec, as in tf.strided_slice)."""
    o = ctx.options
    begin, end = ctx.int_list(1, "begin"), ctx.int_list(2, "end")
    strides = ctx.int_list(3, "strides") if ctx.has(3) else [1] * len(begin)
    if not len(begin) == len(end) == len(strides):
        raise ctx.error(f"begin {begin}, end {end} and strides {strides} differ in length")
    if any(s == 0 for s in strides):
        raise ctx.error(f"strides {strides} contain 0")
    bmask, emask, ellipsis = o.BeginMask(), o.EndMask(), o.EllipsisMask()
    new_axis, shrink, offset = o.NewAxisMask(), o.ShrinkAxisMask(), bool(o.Offset())
    ndim, nspec = ctx.ndim(0), len(begin)
    if bin(ellipsis).count("1") > 1:
        raise ctx.error(f"ellipsis_mask {ellipsis} sets more than one bit")
    # expand the spec into one entry per output-building step: ("axis", k) slices input
    # axis k, ("new",) inserts a unit axis
    plan: list[tuple] = []
    real = sum(1 for k in range(nspec) if not (new_axis >> k) & 1 and not (ellipsis >> k) & 1)
    axis = 0
    for k in range(nspec):
        if (ellipsis >> k) & 1:
            for _ in range(ndim - real):
                plan.append(("full", axis))
                axis += 1
        elif (new_axis >> k) & 1:
            plan.append(("new", k))
        else:
            plan.append(("axis", axis, k))
            axis += 1
    if not ellipsis:
        while axis < ndim:
            plan.append(("full", axis))
            axis += 1
    if axis != ndim:
        raise ctx.error(f"the slice spec covers {axis} axes of a rank-{ndim} input")
    axes, b_list, e_list, s_list, squeeze, new_positions = [], [], [], [], [], []
    out_pos = 0  # position in the final output
    for entry in plan:
        if entry[0] == "new":
            new_positions.append(out_pos)
            out_pos += 1
            continue
        if entry[0] == "full":
            out_pos += 1
            continue
        _, ax, k = entry
        s, b = strides[k], begin[k]
        e = end[k] + b if offset else end[k]
        if (shrink >> k) & 1:
            dim = ctx.shape(0)[ax]
            if isinstance(dim, int) and not -dim <= b < dim:
                raise ctx.error(f"shrink_axis index {b} is out of range for axis {ax} ({dim})")
            e, s = (b + 1 if b != -1 else _BIG), 1
            squeeze.append(ax)
        else:
            out_pos += 1
            if (bmask >> k) & 1:
                b = 0 if s > 0 else -1
            if (emask >> k) & 1:
                e = _BIG if s > 0 else -_BIG
        axes.append(ax)
        b_list.append(b)
        e_list.append(e)
        s_list.append(s)
    y = ctx.input(0)
    if axes:
        y = _op.strided_slice(y, axes, b_list, e_list, s_list)
    if squeeze:
        y = _op.squeeze(y, squeeze)
    if new_positions:
        y = _op.expand_dims(y, new_positions)
    return y


@converter("SLICE", max_version=6)
def _slice(ctx: OpContext) -> Any:
    begin, size = ctx.int_list(1, "begin"), ctx.int_list(2, "size")
    ndim = ctx.ndim(0)
    if len(begin) != ndim or len(size) != ndim:
        raise ctx.error(f"begin {begin} and size {size} must have {ndim} values")
    end = [_BIG if s == -1 else b + s for b, s in zip(begin, size)]
    return _op.strided_slice(ctx.input(0), list(range(ndim)), begin, end)


@converter("GATHER", max_version=7, options="GatherOptions")
def _gather(ctx: OpContext) -> Any:
    o = ctx.options
    axis = _axis(ctx, o.Axis(), ctx.ndim(0))
    batch = o.BatchDims() + ctx.ndim(1) if o.BatchDims() < 0 else o.BatchDims()
    if batch == 0:
        return _op.take(ctx.input(0), ctx.input(1), axis)
    if batch != axis:
        raise ctx.unsupported(f"batch_dims={o.BatchDims()} with axis {o.Axis()} (batch_dims "
                              "must be 0 or equal the axis)")
    # params[b..., idx[b..., i...], rest...]: gather_nd over the batch axes
    return _op.gather_nd(ctx.input(0), _op.expand_dims(ctx.input(1), -1), batch)


@converter("GATHER_ND", max_version=5)
def _gather_nd(ctx: OpContext) -> Any:
    return _op.gather_nd(ctx.input(0), ctx.input(1))


@converter("EMBEDDING_LOOKUP", max_version=4)
def _embedding_lookup(ctx: OpContext) -> Any:
    """Rows ``ids`` (input 0) of the table (input 1)."""
    return _op.take(ctx.input(1), ctx.input(0), 0)


@converter("PACK", max_version=4, options="PackOptions")
def _pack(ctx: OpContext) -> Any:
    axis = _axis(ctx, ctx.options.Axis(), ctx.ndim(0) + 1)
    parts = [_op.expand_dims(ctx.input(i), axis) for i in range(ctx.num_inputs)]
    return parts[0] if len(parts) == 1 else _op.concat(parts, axis)


@converter("UNPACK", max_version=4, options="UnpackOptions")
def _unpack(ctx: OpContext) -> Any:
    axis = _axis(ctx, ctx.options.Axis(), ctx.ndim(0))
    n = ctx.static_dims(0, [axis], "UNPACK")[0]
    if n != ctx.num_outputs:
        raise ctx.error(f"axis {axis} has {n} entries but the operator has "
                        f"{ctx.num_outputs} outputs")
    x = ctx.input(0)
    return [_op.squeeze(_op.strided_slice(x, [axis], [k], [k + 1]), [axis]) for k in range(n)]


@converter("TILE", max_version=3)
def _tile(ctx: OpContext) -> Any:
    return _op.tile(ctx.input(0), ctx.int_list(1, "multiples"))


@converter("BROADCAST_TO", max_version=3)
def _broadcast_to(ctx: OpContext) -> Any:
    return _op.broadcast_to(ctx.input(0), ctx.int_list(1, "shape"))


@converter("REVERSE_V2", max_version=3)
def _reverse(ctx: OpContext) -> Any:
    x = ctx.input(0)
    for a in ctx.int_list(1, "axis"):
        x = _op.flip(x, _axis(ctx, a, ctx.ndim(0)))
    return x


@converter("SHAPE", max_version=1, options="ShapeOptions")
def _shape(ctx: OpContext) -> Any:
    out_dt = tflite_dtype(ctx.options.OutType(), ctx.where()) if ctx.options.OutType() \
        else ctx.output_dtype()
    shape = ctx.shape(0)
    if all(isinstance(d, int) for d in shape):
        return ctx.const_expr(shape, out_dt)
    return _op.astype(_op.shape_to_tensor(ShapeExpr(shape)), out_dt)


@converter("RANK", max_version=1)
def _rank(ctx: OpContext) -> Any:
    return ctx.const_expr(ctx.ndim(0), ctx.output_dtype())


@converter("FILL", max_version=4)
def _fill(ctx: OpContext) -> Any:
    dims = ctx.int_list(0, "dims")
    value = ctx.input(1)
    return _op.broadcast_to(_op.reshape(value, []), dims)


@converter("ZEROS_LIKE", max_version=1)
def _zeros_like(ctx: OpContext) -> Any:
    return _op.zeros_like(ctx.input(0))


@converter("SPACE_TO_DEPTH", max_version=2, options="SpaceToDepthOptions")
def _space_to_depth(ctx: OpContext) -> Any:
    b = int(ctx.options.BlockSize())
    n, h, w, c = ctx.shape(0)
    if not isinstance(h, int) or not isinstance(w, int) or h % b or w % b:
        raise ctx.error(f"height and width {h, w} must be static multiples of block {b}")
    x = _op.reshape(ctx.input(0), [n, h // b, b, w // b, b, c])
    x = _op.permute_dims(x, [0, 1, 3, 2, 4, 5])
    return _op.reshape(x, [n, h // b, w // b, b * b * c])


@converter("DEPTH_TO_SPACE", max_version=2, options="DepthToSpaceOptions")
def _depth_to_space(ctx: OpContext) -> Any:
    b = int(ctx.options.BlockSize())
    n, h, w, c = ctx.shape(0)
    if not isinstance(c, int) or c % (b * b):
        raise ctx.error(f"channels {c} must be a static multiple of block {b} squared")
    x = _op.reshape(ctx.input(0), [n, h, w, b, b, c // (b * b)])
    x = _op.permute_dims(x, [0, 1, 3, 2, 4, 5])
    return _op.reshape(x, [n, h * b, w * b, c // (b * b)])


@converter("SPACE_TO_BATCH_ND", max_version=4)
def _space_to_batch(ctx: OpContext) -> Any:
    block, pads = ctx.int_list(1, "block_shape"), ctx.int_list(2, "paddings")
    shape = ctx.shape(0)
    m = len(block)
    rest = shape[1 + m:]
    x = _op.nn.pad(ctx.input(0), [0, 0] + pads + [0, 0] * len(rest))
    padded = [shape[1 + i] + pads[2 * i] + pads[2 * i + 1] for i in range(m)]
    if not all(isinstance(p, int) for p in padded) or any(p % b for p, b in zip(padded, block)):
        raise ctx.error(f"padded spatial dims {padded} must be static multiples of {block}")
    split = [shape[0]]
    for p, b in zip(padded, block):
        split += [p // b, b]
    x = _op.reshape(x, split + rest)
    perm = [2 + 2 * i for i in range(m)] + [0] + [1 + 2 * i for i in range(m)] + [
        1 + 2 * m + i for i in range(len(rest))]
    x = _op.permute_dims(x, perm)
    batch = shape[0]
    for b in block:
        batch = batch * b
    return _op.reshape(x, [batch] + [p // b for p, b in zip(padded, block)] + rest)


@converter("BATCH_TO_SPACE_ND", max_version=4)
def _batch_to_space(ctx: OpContext) -> Any:
    block, crops = ctx.int_list(1, "block_shape"), ctx.int_list(2, "crops")
    shape = ctx.shape(0)
    m = len(block)
    rest = shape[1 + m:]
    prod = 1
    for b in block:
        prod *= b
    if not isinstance(shape[0], int) or shape[0] % prod:
        raise ctx.error(f"batch {shape[0]} must be a static multiple of {prod}")
    n = shape[0] // prod
    x = _op.reshape(ctx.input(0), block + [n] + shape[1:])
    perm = [m]
    for i in range(m):
        perm += [m + 1 + i, i]
    perm += [2 * m + 1 + i for i in range(len(rest))]
    x = _op.permute_dims(x, perm)
    x = _op.reshape(x, [n] + [shape[1 + i] * block[i] for i in range(m)] + rest)
    axes = list(range(1, 1 + m))
    begin = [crops[2 * i] for i in range(m)]
    end = [shape[1 + i] * block[i] - crops[2 * i + 1] for i in range(m)]
    return _op.strided_slice(x, axes, begin, end)


@converter("TOPK_V2", max_version=3)
def _topk(ctx: OpContext) -> Any:
    k = ctx.int_list(1, "k")[0]
    out_dt = ctx.output_dtype(1)
    values, indices = (ctx.emit(_op.topk(ctx.input(0), k, -1, "values")),
                       ctx.emit(_op.topk(ctx.input(0), k, -1, "indices", dtype=out_dt)))
    return [values, indices]


@converter("ONE_HOT", max_version=1, options="OneHotOptions")
def _one_hot(ctx: OpContext) -> Any:
    depth = ctx.int_list(1, "depth")[0]
    on, off = ctx.const(2), ctx.const(3)
    if on is None or off is None:
        raise ctx.unsupported("on_value and off_value must be constant tensors")
    dt = ctx.output_dtype()
    values = ctx.const_expr([off.reshape(-1)[0], on.reshape(-1)[0]], dt)
    axis = ctx.options.Axis()
    # TFLite: an index outside [0, depth) selects nothing (relax's one_hot, as ONNX's,
    # counts negative indices from the end)
    idx, idt = ctx.input(0), ctx.dtype(0)
    idx = _op.where(_op.less(idx, ctx.scalar(0, idt)), ctx.scalar(depth, idt), idx)
    return _op.one_hot(idx, depth, values, axis, dt)


@converter("RANGE", max_version=2)
def _range(ctx: OpContext) -> Any:
    parts = [ctx.const(i) for i in range(3)]
    if any(p is None for p in parts):
        raise ctx.unsupported("start, limit and delta must be constant tensors")
    start, limit, delta = (p.reshape(-1)[0] for p in parts)
    count = int(np.ceil((limit - start) / delta)) if delta else -1
    if not 0 <= count <= 1 << 24:
        raise ctx.error(f"range({start}, {limit}, {delta}) has {count} entries")
    return ctx.const_expr(np.arange(start, limit, delta), ctx.output_dtype())


@converter("SCATTER_ND", max_version=1)
def _scatter_nd(ctx: OpContext) -> Any:
    """Updates summed into zeros of ``shape`` at ``indices`` (duplicates add up)."""
    shape = ctx.int_list(2, "shape")
    zeros = _op.zeros(shape, ctx.dtype(1))
    return _op.scatter_nd(zeros, ctx.input(0), ctx.input(1), "add")


def _segment(ctx: OpContext, num: int, reduction: str) -> Any:
    """Rows of ``data`` (input 0) combined by segment id (input 1) into ``num`` segments."""
    data, ids = ctx.input(0), ctx.input(1)
    rest = ctx.shape(0)[ctx.ndim(1):]
    dt = ctx.dtype(0)
    init = {"add": 0, "mul": 1}.get(reduction)
    if init is None:  # an empty segment holds the dtype's lowest (max) / highest (min) value
        lim = np.finfo(dt) if dt.startswith("float") else np.iinfo(dt)
        init = lim.min if reduction == "max" else lim.max
    base = _op.full([num] + rest, ctx.scalar(init, dt), dt)
    return _op.scatter_nd(base, _op.expand_dims(ids, -1), data, reduction)


@converter("UNSORTED_SEGMENT_SUM", "UNSORTED_SEGMENT_PROD", "UNSORTED_SEGMENT_MAX",
           "UNSORTED_SEGMENT_MIN", max_version=1)
def _unsorted_segment(ctx: OpContext) -> Any:
    num = ctx.int_list(2, "num_segments")[0]
    reduction = {"SUM": "add", "PROD": "mul", "MAX": "max", "MIN": "min"}[ctx.name.split("_")[-1]]
    return _segment(ctx, num, reduction)


@converter("SEGMENT_SUM", max_version=1)
def _segment_sum(ctx: OpContext) -> Any:
    ids = ctx.int_list(1, "segment_ids")
    return _segment(ctx, (max(ids) + 1) if ids else 0, "add")


def _diag_mask(ctx: OpContext, m: int, n: int) -> Any:
    return ctx.const_expr(np.eye(m, n, dtype=bool), "bool")


@converter("MATRIX_DIAG", max_version=1)
def _matrix_diag(ctx: OpContext) -> Any:
    n = ctx.static_dims(0, [ctx.ndim(0) - 1], "the diagonal")[0]
    x = ctx.input(0)
    zero = ctx.scalar(0, ctx.dtype(0))
    return _op.where(_diag_mask(ctx, n, n), _op.expand_dims(x, -2), zero)


@converter("MATRIX_SET_DIAG", max_version=1)
def _matrix_set_diag(ctx: OpContext) -> Any:
    nd = ctx.ndim(0)
    m, n = ctx.static_dims(0, [nd - 2, nd - 1], "the matrix")
    diag = ctx.input(1)
    if n > m:  # the diagonal has min(m, n) entries; the mask is zero past them
        diag = _op.nn.pad(diag, [0, 0] * (nd - 2) + [0, n - m])
    return _op.where(_diag_mask(ctx, m, n), _op.expand_dims(diag, -2), ctx.input(0))


@converter("BROADCAST_ARGS", max_version=1)
def _broadcast_args(ctx: OpContext) -> Any:
    a, b = ctx.int_list(0, "s0"), ctx.int_list(1, "s1")
    shape = np.broadcast_shapes(tuple(a), tuple(b))
    return ctx.const_expr(list(shape), ctx.output_dtype())


@converter("SPARSE_TO_DENSE", max_version=3, options="SparseToDenseOptions")
def _sparse_to_dense(ctx: OpContext) -> Any:
    """A tensor of ``output_shape`` holding ``default_value`` but ``values`` at
    ``sparse_indices`` (a scalar value fills every index)."""
    shape = ctx.int_list(1, "output_shape")
    idx = ctx.input(0)
    if ctx.ndim(0) < 2:  # [N] for a 1-d output, or a single index
        idx = _op.reshape(idx, [-1, 1] if len(shape) == 1 else [1, -1])
    n = ctx.shape(0)[0] if ctx.ndim(0) == 2 or len(shape) == 1 else 1
    values, dt = ctx.input(2), ctx.dtype(2)
    if ctx.ndim(2) == 0:
        values = _op.broadcast_to(values, [n])
    base = _op.broadcast_to(_op.reshape(ctx.input(3), []), shape)
    return _op.scatter_nd(base, idx, _op.astype(values, dt), "update")


@converter("REVERSE_SEQUENCE", max_version=1, options="ReverseSequenceOptions")
def _reverse_sequence(ctx: OpContext) -> Any:
    """Along ``seq_dim``, the first ``seq_lengths[b]`` entries of batch ``b`` (along
    ``batch_dim``) reversed, the rest kept."""
    o = ctx.options
    nd = ctx.ndim(0)
    seq, batch = _axis(ctx, o.SeqDim(), nd), _axis(ctx, o.BatchDim(), nd)
    t = ctx.static_dims(0, [seq], "the sequence axis")[0]
    b = ctx.static_dims(0, [batch], "the batch axis")[0]
    lengths = _op.astype(ctx.input(1), "int32")
    pos = ctx.const_expr(np.arange(t, dtype=np.int32).reshape(1, t), "int32")
    lens = _op.reshape(lengths, [b, 1])
    src = _op.where(_op.less(pos, lens), _op.subtract(_op.subtract(lens, ctx.scalar(1, "int32")),
                                                      pos), pos)  # [b, t]
    # src indexed by (batch, seq): shape it to broadcast against x and gather along seq
    shape = [1] * nd
    shape[batch], shape[seq] = b, t
    if batch > seq:
        src = _op.permute_dims(src, [1, 0])
    src = _op.broadcast_to(_op.reshape(src, shape), ctx.shape(0))
    return _op.gather_elements(ctx.input(0), src, seq)
