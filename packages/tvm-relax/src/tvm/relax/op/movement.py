"""Data-movement operators: ``squeeze``, ``expand_dims``, ``flatten``, ``broadcast_to``,
``tile``, ``repeat``, ``flip``, ``concat``, ``split``.

(``reshape`` and ``permute_dims`` are in :mod:`.manipulate`.)
"""

from __future__ import annotations

from typing import Any, Optional, Sequence, Union

from tvm.ffi import register_object
from tvm.tir.expr import IntImm, Min, PrimExpr

from ..analysis.struct_info_analysis import prim_equal
from ..expr import Call, Expr, ShapeExpr, Tuple, TupleGetItem
from ..struct_info import (
    ShapeStructInfo, StructInfo, TensorStructInfo, TupleStructInfo,
)
from ._infer import dim_str, shape_str
from ._lower import te_call
from ._utils import const_dim, int_tuple, opt_int_tuple, out_tensor, unique_axes
from .base import Attrs, arg_sinfo, arg_tensor, make_call, normalize_axis, op_error, register_op

__all__ = [
    "squeeze", "expand_dims", "flatten", "broadcast_to", "tile", "repeat", "flip", "concat",
    "split", "SqueezeAttrs", "ExpandDimsAttrs", "TileAttrs", "RepeatAttrs", "FlipAttrs",
    "ConcatAttrs", "SplitAttrs",
]


def _i64(v: int) -> IntImm:
    return IntImm("int64", v)


def _lower(fn_name: str, *attr_args: Any) -> Any:
    """A legalization calling ``topi.transform.<fn_name>(arg0, *f(call))``."""

    def legalize(bb: Any, call: Call) -> Expr:
        from ..topi import transform

        extra = [a(call) for a in attr_args]
        return te_call(bb, call, getattr(transform, fn_name), call.args[0], *extra)

    return legalize


# -- squeeze / expand_dims / flatten ----------------------------------------------------------
@register_object("relax.attrs.SqueezeAttrs")
class SqueezeAttrs(Attrs):
    """``axis``: the size-1 axes removed (None: every size-1 axis)."""

    axis: Optional[tuple] = None


def _squeezed_axes(call: Call, x: TensorStructInfo) -> Optional[list[int]]:
    axis = call.attrs.axis
    values = x.shape_values
    if axis is None:
        if values is None:
            return None
        if any(const_dim(v) is None for v in values):
            return None
        return [d for d, v in enumerate(values) if const_dim(v) == 1]
    axes = unique_axes(call, axis, x.ndim)
    for d in axes:
        if values is not None and const_dim(values[d]) not in (None, 1):
            raise op_error(call, f"cannot squeeze axis {d} of size {dim_str(values[d])} (must be 1)")
    return sorted(axes)


@register_op("relax.squeeze", inputs=("x",), attrs=SqueezeAttrs, op_pattern="injective",
             legalize=_lower("squeeze", lambda call: _squeezed_axes(call, call.args[0].struct_info)))
def squeeze(x: Expr, axis: Union[None, int, Sequence[int]] = None) -> Call:
    """``x`` without the size-1 dimensions ``axis`` (None: all of them)."""
    return make_call("relax.squeeze", [x], SqueezeAttrs(axis=opt_int_tuple(axis, "squeeze: axis")))


@squeeze.infer
def _infer_squeeze(call: Call, ctx: Any) -> StructInfo:
    x = arg_tensor(call, 0)
    if x.ndim == -1:
        return out_tensor(x, None, ndim=-1)
    axes = _squeezed_axes(call, x)
    if axes is None:
        return out_tensor(x, None, ndim=-1)
    values = x.shape_values
    ndim = x.ndim - len(axes)
    if values is None:
        return out_tensor(x, None, ndim=ndim)
    return out_tensor(x, [v for d, v in enumerate(values) if d not in axes])


@register_object("relax.attrs.ExpandDimsAttrs")
class ExpandDimsAttrs(Attrs):
    """``axis``: positions of the new size-1 dimensions in the output."""

    axis: tuple = ()


def _expanded_axes(call: Call, ndim: int) -> list[int]:
    return sorted(unique_axes(call, call.attrs.axis, ndim + len(call.attrs.axis)))


@register_op("relax.expand_dims", inputs=("x",), attrs=ExpandDimsAttrs, op_pattern="injective",
             legalize=_lower("expand_dims",
                             lambda call: _expanded_axes(call, call.args[0].struct_info.ndim)))
def expand_dims(x: Expr, axis: Union[int, Sequence[int]]) -> Call:
    """``x`` with size-1 dimensions inserted at ``axis`` (positions in the output)."""
    return make_call("relax.expand_dims", [x],
                     ExpandDimsAttrs(axis=int_tuple(axis, None, "expand_dims: axis")))


@expand_dims.infer
def _infer_expand_dims(call: Call, ctx: Any) -> StructInfo:
    x = arg_tensor(call, 0)
    if x.ndim == -1:
        return out_tensor(x, None, ndim=-1)
    axes = _expanded_axes(call, x.ndim)
    ndim = x.ndim + len(axes)
    values = x.shape_values
    if values is None:
        return out_tensor(x, None, ndim=ndim)
    it = iter(values)
    return out_tensor(x, [_i64(1) if d in axes else next(it) for d in range(ndim)])


@register_op("relax.flatten", inputs=("x",), op_pattern="injective",
             legalize=_lower("reshape", lambda call: call.struct_info.shape_values))
def flatten(x: Expr) -> Call:
    """``x`` as a 1-d tensor (row-major)."""
    return make_call("relax.flatten", [x])


@flatten.infer
def _infer_flatten(call: Call, ctx: Any) -> StructInfo:
    x = arg_tensor(call, 0)
    values = x.shape_values
    if values is None:
        return out_tensor(x, None, ndim=1)
    total: PrimExpr = _i64(1)
    for v in values:
        total = total * v
    return out_tensor(x, [total], ctx=ctx)


# -- broadcast_to / tile / repeat / flip ------------------------------------------------------
@register_op("relax.broadcast_to", inputs=("x", "shape"), op_pattern="broadcast",
             legalize=_lower("broadcast_to", lambda call: call.struct_info.shape_values))
def broadcast_to(x: Expr, shape: Any) -> Call:
    """``x`` broadcast (numpy rules) to ``shape``."""
    if isinstance(shape, (list, tuple)):
        shape = ShapeExpr(shape)
    return make_call("relax.broadcast_to", [x, shape])


@broadcast_to.infer
def _infer_broadcast_to(call: Call, ctx: Any) -> StructInfo:
    x = arg_tensor(call, 0, allow_prim=True)
    target = arg_sinfo(call, 1)
    if not isinstance(target, ShapeStructInfo):
        raise op_error(call, "argument 'shape' must be a shape")
    if target.values is None:
        return out_tensor(x, None, ndim=target.ndim)
    new = target.values
    values = x.shape_values
    if x.ndim != -1 and x.ndim > len(new):
        raise op_error(call, f"cannot broadcast {x.ndim} dimension(s) to the {len(new)} of "
                             f"{shape_str(new)}")
    if values is not None:
        analyzer = getattr(ctx, "analyzer", None)
        for k in range(1, len(values) + 1):
            a, b = values[-k], new[-k]
            if const_dim(a) == 1:
                continue
            if prim_equal(a, b, analyzer) is False:
                raise op_error(call, f"cannot broadcast shape {shape_str(values)} to "
                                     f"{shape_str(new)}: dimension {len(new) - k} is "
                                     f"{dim_str(a)} vs {dim_str(b)}")
    shape = call.args[1] if isinstance(call.args[1], ShapeExpr) else ShapeExpr(new)
    return TensorStructInfo(shape, x.dtype, len(new), x.vdevice)


@register_object("relax.attrs.TileAttrs")
class TileAttrs(Attrs):
    """``repeats``: copies per dimension (numpy ``tile``)."""

    repeats: tuple = ()


@register_op("relax.tile", inputs=("x",), attrs=TileAttrs, op_pattern="injective",
             legalize=_lower("tile", lambda call: call.attrs.repeats))
def tile(x: Expr, repeats: Union[int, Sequence[int]]) -> Call:
    """``x`` repeated ``repeats`` times per dimension (numpy ``tile``)."""
    return make_call("relax.tile", [x], TileAttrs(repeats=int_tuple(repeats, None, "tile: repeats")))


@tile.infer
def _infer_tile(call: Call, ctx: Any) -> StructInfo:
    x = arg_tensor(call, 0)
    reps = call.attrs.repeats
    if any(r < 0 for r in reps):
        raise op_error(call, f"repeats must be non-negative, got {list(reps)}")
    if x.ndim == -1:
        return out_tensor(x, None, ndim=-1)
    ndim = max(x.ndim, len(reps))
    values = x.shape_values
    if values is None:
        return out_tensor(x, None, ndim=ndim)
    full_reps = [1] * (ndim - len(reps)) + list(reps)
    dims = [_i64(1)] * (ndim - x.ndim) + list(values)
    return out_tensor(x, [d * r for d, r in zip(dims, full_reps)], ctx=ctx)


@register_object("relax.attrs.RepeatAttrs")
class RepeatAttrs(Attrs):
    """``repeats`` per element along ``axis`` (None: the flattened tensor)."""

    repeats: int = 1
    axis: Optional[int] = None


def _legalize_repeat(bb: Any, call: Call) -> Expr:
    from ..topi import transform

    x = call.args[0].struct_info
    reps, axis = call.attrs.repeats, call.attrs.axis

    def fn(t: Any) -> Any:
        if axis is None:
            t = transform.reshape(t, [_flat_len(x.shape_values)])
            return transform.repeat(t, reps, 0)
        return transform.repeat(t, reps, axis % x.ndim)

    return te_call(bb, call, fn, call.args[0])


def _flat_len(values: Sequence[PrimExpr]) -> PrimExpr:
    from ..topi._util import prod

    return prod(values)


@register_op("relax.repeat", inputs=("x",), attrs=RepeatAttrs, op_pattern="injective",
             legalize=_legalize_repeat)
def repeat(x: Expr, repeats: int, axis: Optional[int] = None) -> Call:
    """Each element of ``x`` repeated ``repeats`` times along ``axis`` (numpy ``repeat``)."""
    return make_call("relax.repeat", [x], RepeatAttrs(
        repeats=int(repeats), axis=None if axis is None else int(axis)))


@repeat.infer
def _infer_repeat(call: Call, ctx: Any) -> StructInfo:
    x = arg_tensor(call, 0)
    reps, axis = call.attrs.repeats, call.attrs.axis
    if reps < 0:
        raise op_error(call, f"repeats must be non-negative, got {reps}")
    values = x.shape_values
    if axis is None:
        if values is None:
            return out_tensor(x, None, ndim=1)
        return out_tensor(x, [_flat_len(values) * reps], ctx=ctx)
    if x.ndim == -1:
        return out_tensor(x, None, ndim=-1)
    axis = normalize_axis(call, axis, x.ndim)
    if values is None:
        return out_tensor(x, None, ndim=x.ndim)
    return out_tensor(x, [v * reps if d == axis else v for d, v in enumerate(values)], ctx=ctx)


@register_object("relax.attrs.FlipAttrs")
class FlipAttrs(Attrs):
    """``axis``: the reversed axis."""

    axis: int = 0


@register_op("relax.flip", inputs=("data",), attrs=FlipAttrs, op_pattern="injective",
             legalize=_lower("flip", lambda call: call.attrs.axis % call.args[0].struct_info.ndim))
def flip(data: Expr, axis: int) -> Call:
    """``data`` reversed along ``axis``."""
    return make_call("relax.flip", [data], FlipAttrs(axis=int(axis)))


@flip.infer
def _infer_flip(call: Call, ctx: Any) -> StructInfo:
    x = arg_tensor(call, 0)
    if x.ndim != -1:
        normalize_axis(call, call.attrs.axis, x.ndim)
    return x


# -- concat / split -----------------------------------------------------------------------------
@register_object("relax.attrs.ConcatAttrs")
class ConcatAttrs(Attrs):
    """``axis``: the joined axis (None: flatten the inputs first)."""

    axis: Optional[int] = 0


@register_op("relax.concat", inputs=("tensors",), attrs=ConcatAttrs, op_pattern="injective")
def concat(tensors: Union[Expr, Sequence[Expr]], axis: Optional[int] = 0) -> Call:
    """The tensors joined along ``axis``."""
    if isinstance(tensors, (list, tuple)):
        tensors = Tuple(list(tensors))
    return make_call("relax.concat", [tensors], ConcatAttrs(axis=None if axis is None else int(axis)))


def _concat_fields(call: Call) -> list[TensorStructInfo]:
    sinfo = arg_sinfo(call, 0)
    if not isinstance(sinfo, TupleStructInfo):
        raise op_error(call, "argument 'tensors' must be a tuple of tensors")
    if not sinfo.fields:
        raise op_error(call, "needs at least one tensor")
    for i, f in enumerate(sinfo.fields):
        if not isinstance(f, TensorStructInfo):
            raise op_error(call, f"tensors[{i}] is not a tensor")
    return list(sinfo.fields)


@concat.infer
def _infer_concat(call: Call, ctx: Any) -> StructInfo:
    fields = _concat_fields(call)
    dtypes = {f.dtype for f in fields if not f.is_unknown_dtype}
    if len(dtypes) > 1:
        raise op_error(call, f"tensors must have one dtype, got {sorted(dtypes)}")
    dtype = dtypes.pop() if dtypes and all(not f.is_unknown_dtype for f in fields) else "void"
    like = TensorStructInfo(None, dtype, -1, fields[0].vdevice)
    axis = call.attrs.axis
    analyzer = getattr(ctx, "analyzer", None)
    if axis is None:
        if any(f.shape_values is None for f in fields):
            return out_tensor(like, None, ndim=1)
        total: PrimExpr = _i64(0)
        for f in fields:
            n: PrimExpr = _i64(1)
            for v in f.shape_values:
                n = n * v
            total = total + n
        return out_tensor(like, [total], ctx=ctx)
    ndims = {f.ndim for f in fields if f.ndim != -1}
    if len(ndims) > 1:
        raise op_error(call, f"tensors must have the same number of dimensions, got {sorted(ndims)}")
    if not ndims:
        return out_tensor(like, None, ndim=-1)
    ndim = ndims.pop()
    axis = normalize_axis(call, axis, ndim)
    if any(f.shape_values is None for f in fields):
        return out_tensor(like, None, ndim=ndim)
    first = fields[0].shape_values
    out = list(first)
    for i, f in enumerate(fields[1:], 1):
        for d, (a, b) in enumerate(zip(first, f.shape_values)):
            if d != axis and prim_equal(a, b, analyzer) is False:
                raise op_error(call, f"tensors[{i}] has shape {shape_str(f.shape_values)}, "
                                     f"incompatible with {shape_str(first)} outside axis {axis}")
        out[axis] = out[axis] + f.shape_values[axis]
    return out_tensor(like, out, ctx=ctx)


@concat.legalize
def _legalize_concat(bb: Any, call: Call) -> Expr:
    from ..topi import transform

    tup = call.args[0]
    fields = tup.fields if isinstance(tup, Tuple) else [
        bb.normalize_argument(TupleGetItem(tup, i)) for i in range(len(tup.struct_info.fields))]
    axis = call.attrs.axis
    ndim = fields[0].struct_info.ndim

    def fn(*ts: Any) -> Any:
        if axis is None:
            ts = [transform.reshape(t, [_flat_len(t.shape)]) for t in ts]
            return transform.concat(ts, 0)
        return transform.concat(ts, axis % ndim)

    return te_call(bb, call, fn, *fields)


@register_object("relax.attrs.SplitAttrs")
class SplitAttrs(Attrs):
    """``indices_or_sections``: a number of (near-)equal sections, or split indices."""

    indices_or_sections: Any = 1
    axis: int = 0


@register_op("relax.split", inputs=("x",), attrs=SplitAttrs, op_pattern="injective")
def split(x: Expr, indices_or_sections: Union[int, Sequence[int]], axis: int = 0) -> Call:
    """``x`` cut along ``axis``: into ``n`` sections (each ``ceil(dim / n)`` long, the last
    shorter) or at the given indices.  Returns a tuple."""
    if isinstance(indices_or_sections, (list, tuple)):
        value: Any = int_tuple(indices_or_sections, None, "split: indices")
    else:
        value = int(indices_or_sections)
        if value <= 0:
            raise ValueError(f"split: the number of sections must be positive, got {value}")
    return make_call("relax.split", [x], SplitAttrs(indices_or_sections=value, axis=int(axis)))


def _split_bounds(call: Call, dim: PrimExpr, ctx: Any) -> list[PrimExpr]:
    spec = call.attrs.indices_or_sections
    analyzer = getattr(ctx, "analyzer", None)
    simplify = analyzer.simplify if analyzer is not None else (lambda e: e)
    if isinstance(spec, int):
        size = simplify((dim + (spec - 1)) // spec)
        bounds = [simplify(Min(size * k, dim)) for k in range(spec)]
        return [*bounds, dim]
    bounds = [_i64(0)]
    for idx in spec:
        if idx < 0:
            raise op_error(call, f"split indices must be non-negative, got {list(spec)}")
        bounds.append(simplify(Min(_i64(idx), dim)))
    bounds.append(dim)
    for k in range(1, len(bounds)):
        bounds[k] = simplify(_max(bounds[k], bounds[k - 1]))
    return bounds


def _max(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    from tvm.tir.expr import Max

    return Max(a, b)


@split.infer
def _infer_split(call: Call, ctx: Any) -> StructInfo:
    x = arg_tensor(call, 0)
    spec = call.attrs.indices_or_sections
    count = spec if isinstance(spec, int) else len(spec) + 1
    if x.ndim == -1:
        return TupleStructInfo([out_tensor(x, None, ndim=-1)] * count)
    axis = normalize_axis(call, call.attrs.axis, x.ndim)
    values = x.shape_values
    if values is None:
        return TupleStructInfo([out_tensor(x, None, ndim=x.ndim)] * count)
    bounds = _split_bounds(call, values[axis], ctx)
    outs = []
    for k in range(count):
        shape = list(values)
        shape[axis] = bounds[k + 1] - bounds[k]
        outs.append(out_tensor(x, shape, ctx=ctx))
    return TupleStructInfo(outs)


@split.legalize
def _legalize_split(bb: Any, call: Call) -> Expr:
    from ..topi import transform

    x = call.args[0].struct_info
    axis = call.attrs.axis % x.ndim
    bounds = _split_bounds(call, x.shape_values[axis], bb)
    return te_call(bb, call, transform.split, call.args[0], bounds, axis)


# -- numpy semantics (these also run on object arrays of symbolic shape values) ---------------
import numpy as _np  # noqa: E402

from ._numpy import int_value as _int_value, out_shape as _out_shape  # noqa: E402


def _eval_reshape_like(call: Call, x: Any, *rest: Any) -> Any:
    return _np.reshape(x, _out_shape(call))


for _spec in (squeeze, expand_dims, flatten):
    _spec.evaluate(_eval_reshape_like, symbolic=True)


@broadcast_to.evaluate(symbolic=True)
def _eval_broadcast_to(call: Call, x: Any, shape: Any) -> Any:
    return _np.broadcast_to(x, _out_shape(call))


@tile.evaluate(symbolic=True)
def _eval_tile(call: Call, x: Any) -> Any:
    return _np.tile(x, [_int_value(r) for r in call.attrs.repeats])


@concat.evaluate(symbolic=True)
def _eval_concat(call: Call, tensors: tuple) -> Any:
    axis = call.attrs.axis
    if axis is None:
        return _np.concatenate([_np.ravel(t) for t in tensors])
    return _np.concatenate(tensors, axis=axis)


@split.evaluate(symbolic=True)
def _eval_split(call: Call, x: Any) -> tuple:
    points = call.attrs.indices_or_sections
    points = [_int_value(v) for v in points] if isinstance(points, (list, tuple)) \
        else _int_value(points)
    return tuple(_np.split(x, points, axis=call.attrs.axis))
