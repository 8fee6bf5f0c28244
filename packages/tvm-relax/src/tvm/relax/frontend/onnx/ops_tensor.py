"""ONNX shape and data-movement operators: Shape, Reshape, Transpose, Concat, Split,
(Un)Squeeze, Flatten, Expand, Tile, Slice, Gather*, Scatter*, Constant*, Range, Pad, OneHot,
Trilu, EyeLike, DepthToSpace/SpaceToDepth, Dropout, TopK, ReverseSequence (Compress is in
:mod:`.ops_dynamic`).

Shape subgraphs fold at import time: ``Shape`` gives a :class:`SymValue` (entries are ints
or symbolic dims), and the Relax ops the converters emit for it are evaluated by their own
numpy semantics (see :mod:`.folding`).
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from tvm.tir.expr import IntImm, PrimExpr
from tvm.tir.expr_util import same_expr

from ...expr import PrimValue, ShapeExpr
from . import ops_runtime as rt
from .common import (
    R,
    SymValue,
    as_object_array,
    converter,
    np_dtype_of,
    onnx_dtype_to_str,
)

INT_MAX = 2**63 - 1


def known_list(ctx: Any, i: int, what: str) -> list[Any]:
    """A 1-D input known at import time as ints / PrimExprs; an error otherwise."""
    value = ctx.known(i)
    if value is None:
        raise ctx.unsupported(f"input {i} ({what}) must be known at import time "
                              "(a constant or computed from shapes)")
    out = []
    for v in np.asarray(value).reshape(-1):
        if isinstance(v, IntImm):
            v = int(v.value)
        out.append(int(v) if isinstance(v, (int, np.integer)) else v)
    return out


def _axes_input(ctx: Any, attr_until: int, idx: int = 1) -> Optional[list[int]]:
    """Axes from the ``axes`` attribute (opset < attr_until) or input ``idx``."""
    if ctx.opset < attr_until:
        axes = ctx.attr("axes", None)
        return None if axes is None else list(axes)
    return ctx.int_list(idx, "axes")


def _norm(axis: int, ndim: int, ctx: Any) -> int:
    if not -ndim <= axis < max(ndim, 1):
        raise ctx.error(f"axis {axis} is out of range for rank {ndim}")
    return axis % ndim if ndim else 0


# -- Shape / Size ----------------------------------------------------------------------------
@converter("Shape")
def _shape(ctx: Any) -> Any:
    shape = ctx.shape(0)
    n = len(shape)
    start, end = ctx.attr("start", 0), ctx.attr("end", n)
    start = max(0, min(n, start + n if start < 0 else start))
    end = max(0, min(n, end + n if end < 0 else end))
    return SymValue(as_object_array(shape[start:end]))


@converter("Size")
def _size(ctx: Any) -> Any:
    arr = np.empty((), dtype=object)
    arr[()] = ctx.prod(ctx.shape(0))
    return SymValue(arr)


# -- Constant / ConstantOfShape / Range ------------------------------------------------------
@converter("Constant")
def _constant(ctx: Any) -> Any:
    for key in ("value", "value_float", "value_floats", "value_int", "value_ints"):
        if key in ctx.attrs:
            value = ctx.attrs[key]
            if key == "value":
                onnx_dtype_to_str(ctx.attrs["value@dtype"], f"{ctx.where()}: value: ")
                return np.asarray(value)
            dtype = np.float32 if key.startswith("value_float") else np.int64
            return np.asarray(value, dtype=dtype)
    raise ctx.unsupported(f"attribute(s) {sorted(k for k in ctx.attrs if '@' not in k)} "
                          "(sparse and string constants are not supported)")


def _cos_value(ctx: Any) -> tuple[Any, str]:
    value = ctx.attr("value", None)
    if value is None:
        return 0.0, "float32"
    dtype = onnx_dtype_to_str(ctx.attrs["value@dtype"], f"{ctx.where()}: value: ")
    return np.asarray(value).reshape(-1)[0].item(), dtype


@converter("ConstantOfShape")
def _constant_of_shape(ctx: Any) -> Any:
    value, dtype = _cos_value(ctx)
    if ctx.known(0) is None:
        return rt.constant_of_shape(ctx, value, dtype)
    shape = known_list(ctx, 0, "shape")
    if all(isinstance(d, int) for d in shape) and int(np.prod(shape)) <= 1 << 16:
        return np.full(shape, value, dtype=np_dtype_of(dtype))
    return R.full(ShapeExpr(shape), ctx.const_expr(value, dtype), dtype)


@converter("Range")
def _range(ctx: Any) -> Any:
    dt = ctx.dtype(0)
    if any(ctx.known(i) is None for i in range(3)):
        return rt.range_(ctx)
    vals = []
    for i in range(3):
        k = ctx.known(i)
        v = np.asarray(k).reshape(-1)[0]
        vals.append(v if isinstance(v, PrimExpr) else v.item() if hasattr(v, "item") else v)
    return R.arange(PrimValue(vals[0]) if isinstance(vals[0], PrimExpr) else vals[0],
                    PrimValue(vals[1]) if isinstance(vals[1], PrimExpr) else vals[1],
                    vals[2], dt)


# -- Reshape / Flatten / Transpose -----------------------------------------------------------
def _reshape_target(ctx: Any, in_shape: Optional[list[Any]], target: list[Any]) -> list[Any]:
    allowzero = ctx.attr("allowzero", 0)
    out = []
    for i, d in enumerate(target):
        if isinstance(d, int) and d == 0 and not allowzero:
            if in_shape is None:
                raise ctx.unsupported("shape entry 0 (copy) needs a known input shape")
            d = in_shape[i]
        out.append(d)
    if -1 in [d for d in out if isinstance(d, int)] and in_shape is not None:
        # cancel symbolic factors common to the input shape and the known output dims
        num = [d for d in in_shape if not isinstance(d, int)]
        den = [d for d in out if not isinstance(d, int)]
        for d in list(den):
            match = next((n for n in num if same_expr(n, d)), None)
            if match is not None:
                num.remove(match)
                den.remove(d)
        ints_in = int(np.prod([d for d in in_shape if isinstance(d, int)]))
        ints_out = int(np.prod([d for d in out if isinstance(d, int) and d != -1]))
        if not den and ints_out != 0 and ints_in % ints_out == 0:
            inferred: Any = ints_in // ints_out
            for n in num:
                inferred = n * inferred if inferred != 1 else n
            out = [inferred if isinstance(d, int) and d == -1 else d for d in out]
    return out


@converter("Reshape")
def _reshape(ctx: Any) -> Any:
    if ctx.known(1) is None:
        return rt.reshape(ctx)
    target = known_list(ctx, 1, "shape")
    shape = ctx.importer.shape_of(ctx.raw_inputs[0])
    return R.reshape(ctx.input(0), _reshape_target(ctx, shape, target))


def _flatten_shape(ctx: Any, shape: list[Any]) -> list[Any]:
    axis = ctx.attr("axis", 1)
    axis = axis + len(shape) if axis < 0 else axis
    if not 0 <= axis <= len(shape):
        raise ctx.error(f"axis {ctx.attr('axis', 1)} is out of range for rank {len(shape)}")
    return [ctx.prod(shape[:axis]), ctx.prod(shape[axis:])]


@converter("Flatten")
def _flatten(ctx: Any) -> Any:
    return R.reshape(ctx.input(0), _flatten_shape(ctx, ctx.shape(0)))


def _perm(ctx: Any, ndim: int) -> list[int]:
    perm = ctx.attr("perm", None)
    return list(range(ndim))[::-1] if perm is None else [int(p) % ndim for p in perm]


@converter("Transpose")
def _transpose(ctx: Any) -> Any:
    return R.permute_dims(ctx.input(0), _perm(ctx, ctx.ndim(0)))


# -- Concat / Split / Squeeze / Unsqueeze ----------------------------------------------------
@converter("Concat")
def _concat(ctx: Any) -> Any:
    xs = [ctx.input(i) for i in range(ctx.num_inputs) if ctx.has(i)]
    axis = ctx.attr("axis")
    if axis is None:
        raise ctx.error("attribute 'axis' is required")
    # drop empty 1-D pieces (ONNX allows concatenating shape-[0] tensors)
    keep = [x for i, x in enumerate(xs) if ctx.static_shape(i) != [0]] or xs[:1]
    return keep[0] if len(keep) == 1 else R.concat(keep, axis=axis)


def _split_sizes(ctx: Any, dim: Any) -> Optional[list[int]]:
    n_out = ctx.num_outputs
    if ctx.opset < 13:
        split = ctx.attr("split", None)
    else:
        split = ctx.int_list(1, "split")
    if split is not None:
        return [int(s) for s in split]
    if ctx.opset >= 18 and ctx.attr("num_outputs", None) is not None:
        n_out = ctx.attr("num_outputs")
    if not isinstance(dim, int):
        return None
    size = -(-dim // n_out)
    sizes = [min(size, max(dim - size * k, 0)) for k in range(n_out)]
    return sizes


@converter("Split")
def _split(ctx: Any) -> Any:
    ndim = ctx.ndim(0)
    axis = _norm(ctx.attr("axis", 0), ndim, ctx)
    dim = ctx.shape(0)[axis]
    if ctx.opset >= 13 and ctx.has(1) and ctx.const(1) is None:
        return rt.split(ctx, axis)
    sizes = _split_sizes(ctx, dim)
    if sizes is None:
        n = ctx.attr("num_outputs", ctx.num_outputs) if ctx.opset >= 18 else ctx.num_outputs
        if n == 1:
            return [ctx.input(0)]
        return R.split(ctx.input(0), n, axis)
    if len(sizes) == 1:
        return [ctx.input(0)]
    indices = list(np.cumsum(sizes)[:-1])
    return R.split(ctx.input(0), [int(i) for i in indices], axis)


def _squeeze_axes(ctx: Any, shape: list[Any]) -> list[int]:
    axes = _axes_input(ctx, 13)
    if axes is None:
        return [i for i, d in enumerate(shape) if isinstance(d, int) and d == 1]
    return sorted(_norm(a, len(shape), ctx) for a in axes)


@converter("Squeeze")
def _squeeze(ctx: Any) -> Any:
    shape = ctx.shape(0)
    if ctx.opset >= 13 and ctx.has(1) and ctx.const(1) is None and \
            ctx.static_shape(1) != [0]:
        return rt.squeeze(ctx)
    axes = _squeeze_axes(ctx, shape)
    if not axes:
        return ctx.input(0)
    return R.squeeze(ctx.input(0), axes)


def _unsqueeze_axes(ctx: Any, ndim: int) -> list[int]:
    axes = _axes_input(ctx, 13)
    if axes is None:
        raise ctx.error("axes are required")
    out_ndim = ndim + len(axes)
    return sorted(_norm(a, out_ndim, ctx) for a in axes)


@converter("Unsqueeze")
def _unsqueeze(ctx: Any) -> Any:
    if ctx.opset >= 13 and ctx.has(1) and ctx.const(1) is None:
        return rt.unsqueeze(ctx)
    axes = _unsqueeze_axes(ctx, ctx.ndim(0))
    shape = ctx.importer.shape_of(ctx.raw_inputs[0])
    if shape is not None:
        for a in axes:
            shape.insert(a, 1)
        return R.reshape(ctx.input(0), shape)
    return R.expand_dims(ctx.input(0), axes)


# -- Expand / Tile ---------------------------------------------------------------------------
def _broadcast_shape(a: list[Any], b: list[Any]) -> list[Any]:
    n = max(len(a), len(b))
    a = [1] * (n - len(a)) + list(a)
    b = [1] * (n - len(b)) + list(b)
    out = []
    for x, y in zip(a, b):
        if isinstance(x, int) and x == 1:
            out.append(y)
        elif isinstance(y, int) and y == 1:
            out.append(x)
        else:
            out.append(y if isinstance(x, PrimExpr) and isinstance(y, int) else x)
    return out


@converter("Expand")
def _expand(ctx: Any) -> Any:
    if ctx.known(1) is None:
        return rt.expand(ctx)
    target = known_list(ctx, 1, "shape")
    shape = _broadcast_shape(ctx.shape(0), target)
    if shape == ctx.shape(0):
        return ctx.input(0)
    return R.broadcast_to(ctx.input(0), shape)


@converter("Tile")
def _tile(ctx: Any) -> Any:
    if ctx.const(1) is None:
        return rt.tile(ctx)
    repeats = ctx.int_list(1, "repeats")
    return R.tile(ctx.input(0), repeats)


# -- Slice -----------------------------------------------------------------------------------
def _slice_params(ctx: Any, ndim: int) -> tuple[list[int], list[Any], list[Any], list[int]]:
    if ctx.opset < 10:
        starts, ends = ctx.attr("starts"), ctx.attr("ends")
        axes = ctx.attr("axes", list(range(len(starts))))
        steps = [1] * len(starts)
    else:
        starts = known_list(ctx, 1, "starts")
        ends = known_list(ctx, 2, "ends")
        axes = ctx.int_list(3, "axes") or list(range(len(starts)))
        steps = ctx.int_list(4, "steps") or [1] * len(starts)
    axes = [_norm(a, ndim, ctx) for a in axes]
    return axes, starts, ends, steps


def _clamp(v: int) -> int:
    return max(-INT_MAX, min(INT_MAX, v))


@converter("Slice")
def _slice(ctx: Any) -> Any:
    if ctx.opset >= 10 and (any(ctx.known(i) is None for i in (1, 2) if ctx.has(i)) or
                            any(ctx.const(i) is None for i in (3, 4) if ctx.has(i))):
        return rt.slice_(ctx)
    axes, starts, ends, steps = _slice_params(ctx, ctx.ndim(0))
    if not all(isinstance(v, int) for v in starts + ends):
        raise ctx.unsupported("starts/ends with symbolic values are not supported")
    return R.strided_slice(ctx.input(0), axes, [_clamp(s) for s in starts],
                           [_clamp(e) for e in ends], steps)


# -- Gather / Scatter ------------------------------------------------------------------------
@converter("Gather")
def _gather(ctx: Any) -> Any:
    axis = _norm(ctx.attr("axis", 0), ctx.ndim(0), ctx)
    return R.take(ctx.input(0), ctx.input(1), axis=axis)  # negatives wrapped, range checked


@converter("GatherElements")
def _gather_elements(ctx: Any) -> Any:
    axis = _norm(ctx.attr("axis", 0), ctx.ndim(0), ctx)
    return R.gather_elements(ctx.input(0), ctx.input(1), axis=axis)


@converter("GatherND")
def _gather_nd(ctx: Any) -> Any:
    return R.gather_nd(ctx.input(0), ctx.input(1), batch_dims=ctx.attr("batch_dims", 0))


@converter("ScatterElements", "Scatter")
def _scatter_elements(ctx: Any) -> Any:
    axis = _norm(ctx.attr("axis", 0), ctx.ndim(0), ctx)
    reduction = ctx.attr("reduction", "none")
    return R.scatter_elements(ctx.input(0), ctx.input(1), ctx.input(2), axis=axis,
                              reduction=reduction)


@converter("ScatterND")
def _scatter_nd(ctx: Any) -> Any:
    """Each index tuple checked per dimension (negatives wrapped) by the kernel."""
    return R.scatter_nd(ctx.input(0), ctx.input(1), ctx.input(2),
                        reduction=ctx.attr("reduction", "none"))


@converter("CenterCropPad")
def _center_crop_pad(ctx: Any) -> Any:
    if ctx.const(1) is None:
        ndim = ctx.ndim(0)
        axes = ctx.attr("axes", None) or list(range(ndim))
        return rt.center_crop_pad(ctx, [_norm(a, ndim, ctx) for a in axes])
    shape = ctx.static_shape(0)
    target = ctx.int_list(1, "shape")
    if shape is None:
        raise ctx.unsupported("needs a static input shape")
    axes = ctx.attr("axes", None) or list(range(len(shape)))
    axes = [_norm(a, len(shape), ctx) for a in axes]
    x = ctx.input(0)
    dt = ctx.dtype(0)
    for a, t in zip(axes, target):
        d = shape[a]
        if d > t:
            start = (d - t) // 2
            x = R.strided_slice(x, [a], [start], [start + t])
        elif d < t:
            before = (t - d) // 2
            after = t - d - before
            parts = []
            for n in (before, after):
                s = list(shape)
                s[a] = n
                parts.append(R.full(s, ctx.const_expr(0, dt), dt) if n else None)
            x = R.concat([p for p in (parts[0], x, parts[1]) if p is not None], axis=a)
        shape[a] = t
        x = ctx.emit(x)
    return x


# -- Pad -------------------------------------------------------------------------------------
@converter("Pad")
def _pad(ctx: Any) -> Any:
    ndim = ctx.ndim(0)
    mode = ctx.attr("mode", "constant")
    dt = ctx.dtype(0)
    if ctx.opset < 11:
        pads = ctx.attr("pads")
        value = ctx.attr("value", 0.0)
        axes = list(range(ndim))
    elif ctx.const(1) is None or (ctx.has(2) and ctx.const(2) is None):
        return rt.pad(ctx)
    else:
        pads = ctx.int_list(1, "pads")
        cv = ctx.const(2)
        if ctx.has(2) and cv is None:
            raise ctx.unsupported("constant_value must be a constant")
        value = 0 if cv is None else np.asarray(cv).reshape(-1)[0].item()
        axes = ctx.int_list(3, "axes") or list(range(ndim))
    axes = [_norm(a, ndim, ctx) for a in axes]
    k = len(axes)
    before = {a: pads[i] for i, a in enumerate(axes)}
    after = {a: pads[i + k] for i, a in enumerate(axes)}
    x = ctx.input(0)
    shape = ctx.shape(0)
    # negative pads crop
    if any(v < 0 for v in list(before.values()) + list(after.values())):
        sl_axes, begin, end = [], [], []
        for a in axes:
            if before[a] < 0 or after[a] < 0:
                sl_axes.append(a)
                begin.append(max(0, -before[a]))
                end.append(INT_MAX if after[a] >= 0 else after[a])
                before[a], after[a] = max(0, before[a]), max(0, after[a])
        x = ctx.emit(R.strided_slice(x, sl_axes, begin, end))
        shape = ctx.importer.shape_of(x)
    for a in axes:
        b, e = before[a], after[a]
        if b == 0 and e == 0:
            continue
        dim = shape[a]
        if mode == "constant":
            parts = []
            for n in (b, e):
                if n:
                    s = list(shape)
                    s[a] = n
                    parts.append(R.full(s, ctx.const_expr(value, dt), dt))
                else:
                    parts.append(None)
            seq = [p for p in (parts[0], x, parts[1]) if p is not None]
            x = ctx.emit(R.concat(seq, axis=a))
        elif mode in ("reflect", "edge", "wrap"):
            if isinstance(dim, int):
                idx = np.pad(np.arange(dim), (b, e), mode=mode)
                x = ctx.emit(R.take(x, ctx.const_expr(idx, "int64"), axis=a))
            else:  # a symbolic dimension: the kernel computes the source index
                width = [0] * (2 * len(shape))
                width[2 * a], width[2 * a + 1] = b, e
                x = ctx.emit(R.nn.pad(x, width, mode))
        else:
            raise ctx.unsupported(f"mode {mode!r}")
        shape = ctx.importer.shape_of(x)
    return x


# -- OneHot / Trilu / EyeLike ----------------------------------------------------------------
@converter("OneHot")
def _one_hot(ctx: Any) -> Any:
    depth_v = ctx.const(1)
    if depth_v is None:
        return rt.one_hot(ctx)
    depth = int(np.asarray(depth_v).reshape(-1)[0])
    values = ctx.input(2)
    ndim = ctx.ndim(0)
    axis = ctx.attr("axis", -1)
    axis = axis % (ndim + 1)
    idx = ctx.input(0)
    idt = ctx.dtype(0)
    idx = R.where(R.less(idx, ctx.const_expr(0, idt)), idx + ctx.const_expr(depth, idt), idx)
    idx = R.expand_dims(idx, [axis])
    rng_shape = [1] * (ndim + 1)
    rng_shape[axis] = depth
    rng = ctx.const_expr(np.arange(depth).reshape(rng_shape), idt)
    hot = R.equal(idx, rng)
    off = R.take(values, ctx.const_expr(0, "int64"), axis=0)
    on = R.take(values, ctx.const_expr(1, "int64"), axis=0)
    return R.where(hot, on, off)


@converter("Trilu")
def _trilu(ctx: Any) -> Any:
    k = 0
    if ctx.has(1):
        kv = ctx.const(1)
        if kv is None:
            return rt.trilu(ctx)
        k = int(np.asarray(kv).reshape(-1)[0])
    return R.triu(ctx.input(0), k) if ctx.attr("upper", 1) else R.tril(ctx.input(0), k)


@converter("EyeLike")
def _eye_like(ctx: Any) -> Any:
    shape = ctx.static_shape(0)
    if shape is None:
        raise ctx.unsupported("needs a static input shape")
    dt = ctx.dtype(0)
    if "dtype" in ctx.attrs:
        dt = onnx_dtype_to_str(ctx.attr("dtype"), f"{ctx.where()}: dtype: ")
    return np.eye(shape[0], shape[1], k=ctx.attr("k", 0), dtype=np_dtype_of(dt))


# -- DepthToSpace / SpaceToDepth -------------------------------------------------------------
@converter("DepthToSpace")
def _depth_to_space(ctx: Any) -> Any:
    b = ctx.attr("blocksize")
    n, c, h, w = ctx.shape(0)
    x = ctx.input(0)
    if ctx.attr("mode", "DCR") == "DCR":
        x = R.reshape(x, [n, b, b, c // (b * b), h, w])
        x = R.permute_dims(x, [0, 3, 4, 1, 5, 2])
    else:
        x = R.reshape(x, [n, c // (b * b), b, b, h, w])
        x = R.permute_dims(x, [0, 1, 4, 2, 5, 3])
    return R.reshape(x, [n, c // (b * b), h * b, w * b])


@converter("SpaceToDepth")
def _space_to_depth(ctx: Any) -> Any:
    b = ctx.attr("blocksize")
    n, c, h, w = ctx.shape(0)
    x = R.reshape(ctx.input(0), [n, c, h // b, b, w // b, b])
    if ctx.attr("mode", "DCR") == "CRD":
        x = R.permute_dims(x, [0, 1, 3, 5, 2, 4])
    else:
        x = R.permute_dims(x, [0, 3, 5, 1, 2, 4])
    return R.reshape(x, [n, c * b * b, h // b, w // b])


# -- Dropout / TopK / ReverseSequence --------------------------------------------
@converter("Dropout")
def _dropout(ctx: Any) -> Any:
    if ctx.has(2):
        train = ctx.const(2)
        if train is None or bool(np.asarray(train).reshape(-1)[0]):
            ratio = ctx.const(1)
            if train is None or ratio is None or float(np.asarray(ratio).reshape(-1)[0]) != 0.0:
                raise ctx.unsupported("training_mode=True (random dropout) is not supported")
    x = ctx.input(0)
    if ctx.num_outputs > 1 and ctx.node.output[1]:
        shape = ctx.shape(0)
        return [x, R.full(shape, ctx.const_expr(True, "bool"), "bool")]
    return [x]


@converter("TopK")
def _topk(ctx: Any) -> Any:
    if ctx.opset < 10:
        k = ctx.attr("k")
    elif ctx.const(1) is None:
        return rt.topk(ctx, ctx.attr("axis", -1), bool(ctx.attr("largest", 1)))
    else:
        k = ctx.int_list(1, "K")[0]
    axis = ctx.attr("axis", -1)
    largest = bool(ctx.attr("largest", 1))
    # sorted=0 allows any order: the sorted result is valid
    return R.topk(ctx.input(0), k, axis, "both", largest, "int64")


@converter("ReverseSequence")
def _reverse_sequence(ctx: Any) -> Any:
    shape = ctx.static_shape(0)
    if shape is None:
        raise ctx.unsupported("needs a static input shape")
    t_axis, b_axis = ctx.attr("time_axis", 0), ctx.attr("batch_axis", 1)
    steps, batch = shape[t_axis], shape[b_axis]
    lens = R.astype(ctx.input(1), "int64")  # [batch]
    t_shape = [1] * len(shape)
    t_shape[t_axis] = steps
    b_shape = [1] * len(shape)
    b_shape[b_axis] = batch
    t = ctx.const_expr(np.arange(steps).reshape(t_shape), "int64")
    ln = R.reshape(lens, b_shape)
    rev = ln - ctx.const_expr(1, "int64") - t
    idx = R.where(R.less(t, ln), rev, R.broadcast_to(t, _broadcast_shape(t_shape, b_shape)))
    idx = R.broadcast_to(idx, shape)
    return R.gather_elements(ctx.input(0), idx, axis=t_axis)
