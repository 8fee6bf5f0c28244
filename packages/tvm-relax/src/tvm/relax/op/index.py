"""Indexing operators: ``take``, ``strided_slice``, ``gather_elements``, ``gather_nd``,
``scatter_elements``, ``scatter_nd``, ``one_hot``.

Indices are integer tensors; negative indices count from the end of the axis.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

from tvm.ffi import register_object
from tvm.tir.expr import IntImm, Max, Min, PrimExpr

from ..expr import Call, Expr, PrimValue, const as relax_const
from ..struct_info import PrimStructInfo, StructInfo, TensorStructInfo
from ._elementwise import is_int_or_bool
from ._infer import dim_str, shape_str
from ._lower import prim_func_call, te_call
from ._utils import const_dim, int_tuple, out_tensor, unique_axes
from .base import Attrs, arg_sinfo, arg_tensor, make_call, normalize_axis, op_error, register_op

__all__ = [
    "take", "strided_slice", "gather_elements", "gather_nd", "scatter_elements",
    "TakeAttrs", "StridedSliceAttrs", "GatherElementsAttrs", "GatherNDAttrs",
    "ScatterElementsAttrs", "slice_bounds", "scatter_nd", "ScatterNDAttrs", "one_hot",
    "OneHotAttrs",
]

_BIG = 2**31 - 1


def _i64(v: int) -> IntImm:
    return IntImm("int64", v)


def _check_indices(call: Call, index: int) -> TensorStructInfo:
    t = arg_tensor(call, index)
    if not t.is_unknown_dtype and (not is_int_or_bool(t.dtype) or t.dtype == "bool"):
        raise op_error(call, f"indices must be an integer tensor, got dtype {t.dtype}")
    return t


# -- take -----------------------------------------------------------------------------------------
@register_object("relax.attrs.TakeAttrs")
class TakeAttrs(Attrs):
    """``axis`` (None: the flattened input); ``mode``: fast, clip or wrap."""

    axis: Optional[int] = None
    mode: str = "fast"


@register_op("relax.take", inputs=("x", "indices"), attrs=TakeAttrs, op_pattern="injective")
def take(x: Expr, indices: Expr, axis: Optional[int] = None, mode: str = "fast") -> Call:
    """Elements of ``x`` along ``axis`` at ``indices`` (numpy ``take``).

    ``mode``: ``fast`` (indices in range, negative ones count from the end), ``clip``
    (clamped) or ``wrap`` (modulo the axis length).
    """
    if mode not in ("fast", "clip", "wrap"):
        raise ValueError(f"take: mode must be 'fast', 'clip' or 'wrap', got {mode!r}")
    return make_call("relax.take", [x, indices],
                     TakeAttrs(axis=None if axis is None else int(axis), mode=mode))


@take.infer
def _infer_take(call: Call, ctx: Any) -> StructInfo:
    x = arg_tensor(call, 0)
    idx = _check_indices(call, 1)
    axis = call.attrs.axis
    if axis is None:
        if idx.shape_values is None:
            return out_tensor(x, None, ndim=idx.ndim)
        return out_tensor(x, list(idx.shape_values))
    if x.ndim == -1 or idx.ndim == -1:
        return out_tensor(x, None, ndim=-1)
    axis = normalize_axis(call, axis, x.ndim)
    ndim = x.ndim - 1 + idx.ndim
    if x.shape_values is None or idx.shape_values is None:
        return out_tensor(x, None, ndim=ndim)
    xs = x.shape_values
    return out_tensor(x, [*xs[:axis], *idx.shape_values, *xs[axis + 1:]])


@take.legalize
def _legalize_take(bb: Any, call: Call) -> Expr:
    from ..topi import transform
    from ..topi._util import prod

    x = call.args[0].struct_info
    axis, mode = call.attrs.axis, call.attrs.mode

    def fn(t: Any, i: Any) -> Any:
        if axis is None:
            return transform.take(transform.reshape(t, [prod(t.shape)]), i, 0, mode)
        return transform.take(t, i, axis % x.ndim, mode)

    return te_call(bb, call, fn, call.args[0], call.args[1])


# -- strided_slice ---------------------------------------------------------------------------------
@register_object("relax.attrs.StridedSliceAttrs")
class StridedSliceAttrs(Attrs):
    """Per listed axis: ``begin``, ``end`` (exclusive) and ``strides`` (default 1)."""

    axes: tuple = ()
    begin: tuple = ()
    end: tuple = ()
    strides: Optional[tuple] = None
    assume_inbound: bool = False


@register_op("relax.strided_slice", inputs=("x",), attrs=StridedSliceAttrs,
             op_pattern="injective")
def strided_slice(
    x: Expr,
    axes: Sequence[int],
    begin: Sequence[int],
    end: Sequence[int],
    strides: Optional[Sequence[int]] = None,
    assume_inbound: bool = False,
) -> Call:
    """numpy-style ``x[begin:end:stride]`` along each of ``axes`` (negative values count from
    the end; out-of-range bounds are clamped unless ``assume_inbound``)."""
    axes = int_tuple(axes, None, "strided_slice: axes")
    begin = int_tuple(begin, None, "strided_slice: begin")
    end = int_tuple(end, None, "strided_slice: end")
    strides = None if strides is None else int_tuple(strides, None, "strided_slice: strides")
    lengths = {len(axes), len(begin), len(end)} | ({len(strides)} if strides else set())
    if len(lengths) != 1:
        raise ValueError(
            f"strided_slice: axes, begin, end (and strides) must have one length, got "
            f"{len(axes)}, {len(begin)}, {len(end)}" + (f", {len(strides)}" if strides else "")
        )
    return make_call("relax.strided_slice", [x], StridedSliceAttrs(
        axes=axes, begin=begin, end=end, strides=strides, assume_inbound=bool(assume_inbound)))


def slice_bounds(
    begin: int, end: int, stride: int, dim: PrimExpr, inbound: bool = False, simplify: Any = None
) -> tuple[PrimExpr, PrimExpr]:
    """(start, length) of ``range(dim)[begin:end:stride]`` (numpy rules).

    ``inbound`` trusts the bounds (no clamping): shapes stay simple for symbolic ``dim``.
    """
    simplify = simplify or (lambda e: e)
    dim = dim if isinstance(dim, PrimExpr) else _i64(dim)

    def resolve(v: int, lo: PrimExpr, hi: PrimExpr) -> PrimExpr:
        if stride > 0 and v >= _BIG:
            return dim
        if stride < 0 and v <= -_BIG:
            return _i64(-1)
        e = dim + v if v < 0 else _i64(v)
        return e if inbound else Min(Max(e, lo), hi)

    if stride > 0:
        start = resolve(begin, _i64(0), dim)
        stop = resolve(end, _i64(0), dim)
        length = (stop - start + (stride - 1)) // stride
    else:
        start = resolve(begin, _i64(-1), dim - 1)
        stop = resolve(end, _i64(-1), dim - 1)
        length = (start - stop + (-stride - 1)) // (-stride)
    return simplify(start), simplify(length if inbound else Max(length, _i64(0)))


def _slice_plan(call: Call, x: TensorStructInfo, ctx: Any) -> tuple[list, list, list]:
    """Per dimension: starts, strides, output shape."""
    attrs = call.attrs
    strides = attrs.strides or (1,) * len(attrs.axes)
    axes = unique_axes(call, attrs.axes, x.ndim, "axes")
    if any(s == 0 for s in strides):
        raise op_error(call, f"strides must not be zero, got {list(strides)}")
    values = list(x.shape_values)
    starts: list = [_i64(0)] * x.ndim
    steps = [1] * x.ndim
    analyzer = getattr(ctx, "analyzer", None)
    simplify = analyzer.simplify if analyzer is not None else None
    for a, b, e, s in zip(axes, attrs.begin, attrs.end, strides):
        starts[a], values[a] = slice_bounds(b, e, s, values[a], attrs.assume_inbound, simplify)
        steps[a] = s
    return starts, steps, values


@strided_slice.infer
def _infer_strided_slice(call: Call, ctx: Any) -> StructInfo:
    x = arg_tensor(call, 0)
    if x.ndim == -1:
        return out_tensor(x, None, ndim=-1)
    if x.shape_values is None:
        unique_axes(call, call.attrs.axes, x.ndim, "axes")
        return out_tensor(x, None, ndim=x.ndim)
    return out_tensor(x, _slice_plan(call, x, ctx)[2], ctx=ctx)


@strided_slice.legalize
def _legalize_strided_slice(bb: Any, call: Call) -> Expr:
    from ..topi import transform

    starts, steps, _ = _slice_plan(call, call.args[0].struct_info, bb)
    shape = call.struct_info.shape_values
    return te_call(bb, call, transform.strided_slice, call.args[0], starts, steps, shape)


# -- gather ---------------------------------------------------------------------------------------------
@register_object("relax.attrs.GatherElementsAttrs")
class GatherElementsAttrs(Attrs):
    axis: int = 0


@register_op("relax.gather_elements", inputs=("data", "indices"), attrs=GatherElementsAttrs,
             op_pattern="injective")
def gather_elements(data: Expr, indices: Expr, axis: int = 0) -> Call:
    """``out[i] = data[i with i[axis] = indices[i]]`` (ONNX GatherElements)."""
    return make_call("relax.gather_elements", [data, indices], GatherElementsAttrs(axis=int(axis)))


@gather_elements.infer
def _infer_gather_elements(call: Call, ctx: Any) -> StructInfo:
    data = arg_tensor(call, 0)
    idx = _check_indices(call, 1)
    if data.ndim != -1 and idx.ndim != -1:
        if data.ndim != idx.ndim:
            raise op_error(call, f"data and indices must have the same number of dimensions, got "
                                 f"{data.ndim} and {idx.ndim}")
        normalize_axis(call, call.attrs.axis, data.ndim)
    return TensorStructInfo(idx.shape, data.dtype, idx.ndim, data.vdevice)


@gather_elements.legalize
def _legalize_gather_elements(bb: Any, call: Call) -> Expr:
    from ..topi import transform

    axis = call.attrs.axis % call.args[0].struct_info.ndim
    return te_call(bb, call, transform.gather_elements, call.args[0], call.args[1], axis)


@register_object("relax.attrs.GatherNDAttrs")
class GatherNDAttrs(Attrs):
    batch_dims: int = 0


@register_op("relax.gather_nd", inputs=("data", "indices"), attrs=GatherNDAttrs,
             op_pattern="injective")
def gather_nd(data: Expr, indices: Expr, batch_dims: int = 0) -> Call:
    """ONNX GatherND: ``indices[..., :]`` (last axis of length M) addresses ``data``'s
    dimensions ``batch_dims .. batch_dims + M``."""
    return make_call("relax.gather_nd", [data, indices], GatherNDAttrs(batch_dims=int(batch_dims)))


@gather_nd.infer
def _infer_gather_nd(call: Call, ctx: Any) -> StructInfo:
    data = arg_tensor(call, 0)
    idx = _check_indices(call, 1)
    b = call.attrs.batch_dims
    if data.shape_values is None or idx.shape_values is None:
        return out_tensor(data, None, ndim=-1)
    dv, iv = data.shape_values, idx.shape_values
    if idx.ndim < 1:
        raise op_error(call, "indices must have at least one dimension")
    m = const_dim(iv[-1])
    if m is None:
        raise op_error(call, "the last dimension of indices must be a constant")
    if b < 0 or b >= idx.ndim or b + m > data.ndim:
        raise op_error(call, f"batch_dims={b} with index depth {m} does not fit data of shape "
                             f"{shape_str(dv)} and indices of shape {shape_str(iv)}")
    analyzer = getattr(ctx, "analyzer", None)
    from ..analysis.struct_info_analysis import prim_equal

    for d in range(b):
        if prim_equal(dv[d], iv[d], analyzer) is False:
            raise op_error(call, f"batch dimension {d} differs: {dim_str(dv[d])} vs {dim_str(iv[d])}")
    return out_tensor(data, [*iv[:-1], *dv[b + m:]])


@gather_nd.legalize
def _legalize_gather_nd(bb: Any, call: Call) -> Expr:
    from ..topi import transform

    return te_call(bb, call, transform.gather_nd, call.args[0], call.args[1],
                   call.attrs.batch_dims)


# -- scatter_elements -----------------------------------------------------------------------------------
_REDUCTIONS = ("update", "add", "mul", "min", "max")


@register_object("relax.attrs.ScatterElementsAttrs")
class ScatterElementsAttrs(Attrs):
    """``axis``; ``reduction``: update (later updates win), add, mul, min or max."""

    axis: int = 0
    reduction: str = "update"


@register_op("relax.scatter_elements", inputs=("data", "indices", "updates"),
             attrs=ScatterElementsAttrs, op_pattern="opaque")
def scatter_elements(
    data: Expr, indices: Expr, updates: Expr, axis: int = 0, reduction: str = "update"
) -> Call:
    """``data`` with ``updates[p]`` written at ``p with p[axis] = indices[p]`` (ONNX
    ScatterElements); ``reduction`` "none" is "update"."""
    reduction = "update" if reduction == "none" else reduction
    if reduction not in _REDUCTIONS:
        raise ValueError(f"scatter_elements: reduction must be one of none, {', '.join(_REDUCTIONS)};"
                         f" got {reduction!r}")
    return make_call("relax.scatter_elements", [data, indices, updates],
                     ScatterElementsAttrs(axis=int(axis), reduction=reduction))


@scatter_elements.infer
def _infer_scatter_elements(call: Call, ctx: Any) -> StructInfo:
    data = arg_tensor(call, 0)
    idx = _check_indices(call, 1)
    upd = arg_tensor(call, 2)
    if not data.is_unknown_dtype and not upd.is_unknown_dtype and data.dtype != upd.dtype:
        raise op_error(call, f"updates must have data's dtype {data.dtype}, got {upd.dtype}")
    ndims = {t.ndim for t in (data, idx, upd) if t.ndim != -1}
    if len(ndims) > 1:
        raise op_error(call, "data, indices and updates must have the same number of dimensions")
    if data.ndim != -1:
        normalize_axis(call, call.attrs.axis, data.ndim)
    from ..analysis.struct_info_analysis import prim_equal

    if idx.shape_values is not None and upd.shape_values is not None:
        for a, b in zip(idx.shape_values, upd.shape_values):
            if prim_equal(a, b, getattr(ctx, "analyzer", None)) is False:
                raise op_error(call, f"indices shape {shape_str(idx.shape_values)} and updates "
                                     f"shape {shape_str(upd.shape_values)} differ")
    return data


@scatter_elements.legalize
def _legalize_scatter_elements(bb: Any, call: Call) -> Expr:
    from ..topi.scatter import scatter_elements_func

    data, idx = call.args[0].struct_info, call.args[1].struct_info
    func = scatter_elements_func(data.shape_values, data.dtype, idx.shape_values, idx.dtype,
                                 call.attrs.axis % data.ndim, call.attrs.reduction)
    return prim_func_call(bb, call, func, list(call.args), call.struct_info)


# -- scatter_nd ----------------------------------------------------------------------------------------
@register_object("relax.attrs.ScatterNDAttrs")
class ScatterNDAttrs(Attrs):
    """``reduction``: update (later updates win), add, mul, min or max."""

    reduction: str = "update"


@register_op("relax.scatter_nd", inputs=("data", "indices", "updates"), attrs=ScatterNDAttrs,
             op_pattern="opaque")
def scatter_nd(data: Expr, indices: Expr, updates: Expr, reduction: str = "update") -> Call:
    """ONNX ScatterND: ``data`` with ``updates[p, ...]`` written at ``data[indices[p], ...]``
    for every position ``p`` of ``indices[..., :]`` (its last axis, of length k, addresses
    the first k dimensions of ``data``; negative indices count from the end); ``reduction``
    none (= update), add, mul, min or max combines with the current value."""
    reduction = "update" if reduction == "none" else reduction
    if reduction not in _REDUCTIONS:
        raise ValueError(f"scatter_nd: reduction must be one of none, {', '.join(_REDUCTIONS)}; "
                         f"got {reduction!r}")
    return make_call("relax.scatter_nd", [data, indices, updates],
                     ScatterNDAttrs(reduction=reduction))


@scatter_nd.infer
def _infer_scatter_nd(call: Call, ctx: Any) -> StructInfo:
    data = arg_tensor(call, 0)
    idx = _check_indices(call, 1)
    upd = arg_tensor(call, 2)
    if not data.is_unknown_dtype and not upd.is_unknown_dtype and data.dtype != upd.dtype:
        raise op_error(call, f"updates must have data's dtype {data.dtype}, got {upd.dtype}")
    if idx.ndim == 0:
        raise op_error(call, "indices must have at least one dimension")
    if data.shape_values is None or idx.shape_values is None:
        return data
    dv, iv = data.shape_values, idx.shape_values
    k = const_dim(iv[-1])
    if k is None:
        raise op_error(call, "the last dimension of indices must be a constant")
    if not 1 <= k <= data.ndim:
        raise op_error(call, f"indices address {k} dimension(s) of data with "
                             f"{data.ndim} dimension(s) (shape {shape_str(dv)})")
    expected = [*iv[:-1], *dv[k:]]
    if upd.shape_values is not None:
        from ..analysis.struct_info_analysis import prim_equal

        uv = upd.shape_values
        if len(uv) != len(expected) or any(
            prim_equal(a, b, getattr(ctx, "analyzer", None)) is False
            for a, b in zip(uv, expected)
        ):
            raise op_error(call, f"updates must have shape indices.shape[:-1] + data.shape[{k}:] "
                                 f"= {shape_str(expected)}, got {shape_str(uv)}")
    return data


@scatter_nd.legalize
def _legalize_scatter_nd(bb: Any, call: Call) -> Expr:
    from ..topi.scatter import scatter_nd_func

    data, idx = call.args[0].struct_info, call.args[1].struct_info
    func = scatter_nd_func(data.shape_values, data.dtype, idx.shape_values, idx.dtype,
                           call.attrs.reduction)
    return prim_func_call(bb, call, func, list(call.args), call.struct_info)


# -- one_hot -----------------------------------------------------------------------------------------
@register_object("relax.attrs.OneHotAttrs")
class OneHotAttrs(Attrs):
    """``axis``: where the new axis of length ``depth`` goes in the result."""

    axis: int = -1


@register_op("relax.one_hot", inputs=("indices", "depth", "values"), attrs=OneHotAttrs,
             op_pattern="injective")
def one_hot(
    indices: Expr, depth: Any, values: Any = (0.0, 1.0), axis: int = -1,
    dtype: str = "float32",
) -> Call:
    """ONNX OneHot: a new axis ``axis`` of length ``depth`` holding ``values[1]`` (on) where
    its position equals the index and ``values[0]`` (off) elsewhere.

    ``depth``: an int, a PrimExpr or a PrimValue expression (int); ``values``: a tensor
    ``[off, on]`` (2 elements, its dtype is the result's) or a Python pair (off, on) made a
    constant of ``dtype``.  Indices in ``[-depth, depth)`` are valid (negative ones count
    from the end); others give an all-off slice.
    """
    if isinstance(values, (list, tuple)):
        if len(values) != 2:
            raise ValueError(f"one_hot: values must be (off, on), got {values!r}")
        import numpy as np

        from tvm.ffi.dtype import to_numpy_dtype

        values = relax_const(np.array(values, dtype=to_numpy_dtype(dtype)))
    if isinstance(depth, bool):
        raise TypeError("one_hot: depth must be an integer, got a bool")
    if isinstance(depth, (int, PrimExpr)):
        depth = PrimValue(IntImm("int64", depth) if isinstance(depth, int) else depth)
    return make_call("relax.one_hot", [indices, depth, values], OneHotAttrs(axis=int(axis)))


@one_hot.infer
def _infer_one_hot(call: Call, ctx: Any) -> StructInfo:
    idx = _check_indices(call, 0)
    depth = arg_sinfo(call, 1)
    values = arg_tensor(call, 2)
    if not isinstance(depth, PrimStructInfo) or (
            depth.dtype != "void" and not depth.dtype.startswith(("int", "uint"))):
        raise op_error(call, "argument 'depth' must be an integer scalar (PrimValue)")
    if values.ndim not in (-1, 1) or (values.shape_values is not None and
                                      const_dim(values.shape_values[0]) not in (None, 2)):
        raise op_error(call, "values must be a tensor of 2 elements [off, on]")
    if idx.ndim == -1:
        return TensorStructInfo(None, values.dtype, -1, values.vdevice)
    ndim = idx.ndim + 1
    axis = normalize_axis(call, call.attrs.axis, ndim)
    depth_value = depth.value
    if isinstance(depth_value, IntImm) and depth_value.value < 0:
        raise op_error(call, f"depth must not be negative, got {depth_value.value}")
    if idx.shape_values is None or depth_value is None:
        return TensorStructInfo(None, values.dtype, ndim, values.vdevice)
    shape = list(idx.shape_values)
    shape.insert(axis, depth_value)
    return out_tensor(values, shape, ctx=ctx)


@one_hot.legalize
def _legalize_one_hot(bb: Any, call: Call) -> Expr:
    from ..topi import transform

    ndim = call.args[0].struct_info.ndim + 1
    depth = call.struct_info.shape_values[call.attrs.axis % ndim]
    return te_call(bb, call, transform.one_hot, call.args[0], call.args[2], depth,
                   call.attrs.axis % ndim)


# -- numpy semantics (these also run on object arrays of symbolic shape values) ---------------
import numpy as _np  # noqa: E402

from ._numpy import CheckFailed as _CheckFailed, check_index as _check_index  # noqa: E402
from ._numpy import int_value as _int_value  # noqa: E402


@strided_slice.evaluate(symbolic=True)
def _eval_strided_slice(call: Call, x: Any, *rest: Any) -> Any:
    a = call.attrs
    index = [slice(None)] * x.ndim
    strides = a.strides or [1] * len(a.axes)
    for axis, begin, end, stride in zip(a.axes, a.begin, a.end, strides):
        index[int(axis)] = slice(_int_value(begin), _int_value(end), _int_value(stride))
    return x[tuple(index)]


@take.evaluate(symbolic=True)
def _eval_take(call: Call, x: Any, indices: Any) -> Any:
    axis, mode = call.attrs.axis, call.attrs.mode
    idx = _np.asarray(indices).astype(_np.int64)
    if axis is None:
        x, axis = _np.ravel(x), 0
    if mode == "fast":  # negative indices count from the end; others out of range fail
        return _np.take(x, _check_index(idx, x.shape[axis], "take", axis), axis=axis)
    if x.shape[axis] == 0 and idx.size:
        raise _CheckFailed(f"take: index {int(idx.flat[0])} into axis {axis} of size 0")
    return _np.take(x, idx, axis=axis, mode="wrap" if mode == "wrap" else "clip")
