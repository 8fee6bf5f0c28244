"""Operators whose output shapes depend on the data: ``dynamic_strided_slice``, ``nonzero``,
``unique``.

Their StructInfo knows the rank and dtype but not the shape.  LegalizeOps lowers them even
so (the op attribute ``RequiresArgumentShapes`` is False): the output shape is computed at
run time and bound to fresh symbolic variables with ``match_cast``, so the operators after
them see a symbolic shape and legalize as usual.  The shape comes from a first TIR kernel
(``dynamic_strided_slice``'s plan; ``nonzero``'s count; ``unique``'s kernel, which
computes its results padded to the input size and their number): the VM reads that small
int64 tensor into a shape value (``vm.builtin.tensor_to_shape``, the one step on the host)
and a second kernel writes the result at its size.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np
from tvm.ffi import register_object
from tvm.tir import Var as TirVar

from ..expr import Call, Expr, Tuple, TupleGetItem, const
from ..struct_info import ShapeStructInfo, StructInfo, TensorStructInfo, TupleStructInfo
from ._elementwise import is_int_or_bool
from ._lower import prim_func_call, te_call
from ._utils import const_dim, int_tuple, unique_axes
from .base import Attrs, arg_tensor, make_call, normalize_axis, op_error, register_op
from .call import call_pure_packed, call_tir

__all__ = ["dynamic_strided_slice", "nonzero", "unique", "DynamicStridedSliceAttrs",
           "UniqueAttrs"]

_DATA_DEPENDENT = {"RequiresArgumentShapes": False}


def _fresh(name: str) -> TirVar:
    return TirVar(name, "int64")


def _known_shape(sinfo: Any) -> bool:
    return isinstance(sinfo, TensorStructInfo) and sinfo.shape_values is not None and \
        not sinfo.is_unknown_dtype


# -- dynamic_strided_slice ---------------------------------------------------------------------
@register_object("relax.attrs.DynamicStridedSliceAttrs")
class DynamicStridedSliceAttrs(Attrs):
    """``axes``: the dimensions ``begin``/``end``/``strides`` address (None: all, in order)."""

    axes: Optional[tuple] = None


@register_op("relax.dynamic_strided_slice", inputs=("x", "begin", "end", "strides"),
             attrs=DynamicStridedSliceAttrs, op_pattern="opaque", **_DATA_DEPENDENT)
def dynamic_strided_slice(
    x: Expr, begin: Expr, end: Expr, strides: Optional[Expr] = None,
    axes: Optional[Sequence[int]] = None,
) -> Call:
    """numpy ``x[begin:end:strides]`` with ``begin``, ``end``, ``strides`` given as 1-d
    integer tensors computed at run time (ONNX Slice with non-constant starts/ends), one
    entry per axis of ``axes`` (default: every axis of ``x``).  Negative values count from
    the end; bounds are clamped; ``strides`` None means 1; a zero stride fails at run time.
    The result's shape is known only at run time (its rank is ``x``'s)."""
    axes = None if axes is None else int_tuple(axes, None, "dynamic_strided_slice: axes")
    if strides is None:
        count = len(axes) if axes is not None else getattr(
            getattr(x, "struct_info_", None), "ndim", -1)
        if count < 0:
            raise ValueError("dynamic_strided_slice: give strides (or axes) when x's rank is "
                             "not known")
        strides = const(np.ones(count, "int64"))
    return make_call("relax.dynamic_strided_slice", [x, begin, end, strides],
                     DynamicStridedSliceAttrs(axes=axes))


def _slice_axes(call: Call, x: TensorStructInfo) -> Optional[list[int]]:
    axes = call.attrs.axes
    if x.ndim == -1:
        return None
    return list(range(x.ndim)) if axes is None else unique_axes(call, axes, x.ndim, "axes")


@dynamic_strided_slice.infer
def _infer_dynamic_strided_slice(call: Call, ctx: Any) -> StructInfo:
    x = arg_tensor(call, 0)
    axes = _slice_axes(call, x)
    for k, name in ((1, "begin"), (2, "end"), (3, "strides")):
        t = arg_tensor(call, k)
        if not t.is_unknown_dtype and (not is_int_or_bool(t.dtype) or t.dtype == "bool"):
            raise op_error(call, f"{name} must be an integer tensor, got dtype {t.dtype}")
        if t.ndim not in (-1, 1):
            raise op_error(call, f"{name} must be 1-d, got {t.ndim} dimension(s)")
        n = const_dim(t.shape_values[0]) if t.shape_values is not None else None
        if axes is not None and n is not None and n != len(axes):
            raise op_error(call, f"{name} has {n} entries for {len(axes)} sliced axes")
    return TensorStructInfo(None, x.dtype, x.ndim, x.vdevice)


@dynamic_strided_slice.legalize
def _legalize_dynamic_strided_slice(bb: Any, call: Call) -> Expr:
    from ..topi import dynamic

    x = call.args[0].struct_info
    bounds = [a.struct_info for a in call.args[1:]]
    if not _known_shape(x) or not all(_known_shape(b) for b in bounds):
        return call
    axes = _slice_axes(call, x)
    vec = TensorStructInfo([x.ndim], "int64", vdevice=x.vdevice)
    plan = dynamic.slice_plan_func(x.shape_values, x.dtype, axes, [b.dtype for b in bounds])
    gv = bb.add_func(plan, "dynamic_strided_slice_plan")
    planned = bb.emit(call_tir(gv, list(call.args), [vec, vec, vec]))
    shape = bb.emit(call_pure_packed("vm.builtin.tensor_to_shape", TupleGetItem(planned, 0),
                                     sinfo_args=ShapeStructInfo(ndim=x.ndim)))
    dims = [_fresh(f"slice_dim{d}") for d in range(x.ndim)]
    bb.match_cast(shape, ShapeStructInfo(dims))
    return te_call(bb, call, dynamic.dynamic_strided_slice, call.args[0],
                   TupleGetItem(planned, 1), TupleGetItem(planned, 2), dims)


# -- nonzero ---------------------------------------------------------------------------------------
@register_op("relax.nonzero", inputs=("x",), op_pattern="opaque", **_DATA_DEPENDENT)
def nonzero(x: Expr) -> Call:
    """ONNX NonZero: the int64 (ndim, count) coordinates of ``x``'s non-zero elements in
    row-major order (count known at run time)."""
    return make_call("relax.nonzero", [x])


@nonzero.infer
def _infer_nonzero(call: Call, ctx: Any) -> StructInfo:
    x = arg_tensor(call, 0)
    return TensorStructInfo(None, "int64", 2, x.vdevice)


@nonzero.legalize
def _legalize_nonzero(bb: Any, call: Call) -> Expr:
    from ..topi import data_dependent

    x = call.args[0].struct_info
    if not _known_shape(x):
        return call
    count = bb.emit(te_call(bb, call, data_dependent.nonzero_count, call.args[0],
                            primfunc_name_hint="nonzero_count"))
    k = bind_count(bb, count, "num_nonzero")
    func = data_dependent.nonzero_func(x.shape_values, x.dtype)
    return prim_func_call(bb, call, func, [call.args[0]],
                          TensorStructInfo([x.ndim, k], "int64", vdevice=x.vdevice))


def bind_count(bb: Any, count: Expr, name: str) -> TirVar:
    """A fresh symbolic variable bound (``match_cast``) to the value of ``count``, an int64
    tensor of shape (1,) computed at run time."""
    shape = bb.emit(call_pure_packed("vm.builtin.tensor_to_shape", count,
                                     sinfo_args=ShapeStructInfo(ndim=1)))
    k = _fresh(name)
    bb.match_cast(shape, ShapeStructInfo([k]))
    return k


# -- unique ------------------------------------------------------------------------------------------
@register_object("relax.attrs.UniqueAttrs")
class UniqueAttrs(Attrs):
    """``sorted``: ascending unique values (else in order of first occurrence); ``axis``:
    unique slices along it (None: unique elements of the flattened input); the
    ``return_*`` flags add outputs; ``equal_nan``: NaNs form one group (numpy, ONNX), else
    each NaN is unique (torch)."""

    sorted: bool = True
    return_index: bool = False
    return_inverse: bool = False
    return_counts: bool = False
    axis: Optional[int] = None
    equal_nan: bool = True


@register_op("relax.unique", inputs=("x",), attrs=UniqueAttrs, op_pattern="opaque",
             **_DATA_DEPENDENT)
def unique(
    x: Expr, sorted: bool = True, return_index: bool = False,  # noqa: A002 - numpy's name
    return_inverse: bool = False, return_counts: bool = False, axis: Optional[int] = None,
    equal_nan: bool = True,
) -> Call:
    """ONNX Unique / numpy ``unique``: the unique elements of ``x`` (flattened, or the
    unique slices along ``axis``), ascending if ``sorted`` else in order of first
    occurrence.  With any ``return_*`` flag the result is a tuple: (values[, first indices]
    [, inverse indices][, counts]), indices int64.  ONNX's four outputs are
    ``unique(x, sorted, True, True, True, axis)``.  NaNs are equal to each other unless
    ``equal_nan`` is False (torch ``unique``: every NaN is a value of its own)."""
    return make_call("relax.unique", [x], UniqueAttrs(
        sorted=bool(sorted), return_index=bool(return_index),
        return_inverse=bool(return_inverse), return_counts=bool(return_counts),
        axis=None if axis is None else int(axis), equal_nan=bool(equal_nan)))


def _unique_parts(call: Call, x: TensorStructInfo, count: Any) -> list[StructInfo]:
    """The four outputs (values, index, inverse, counts); ``count`` is the number of unique
    entries (None: unknown)."""
    a = call.attrs
    values = x.shape_values
    if a.axis is None:
        vshape = None if count is None else [count]
        vsinfo = TensorStructInfo(vshape, x.dtype, 1, x.vdevice)
        n_inv = None
        if values is not None:
            from ..topi._util import prod

            n_inv = [prod(values)]
    else:
        axis = normalize_axis(call, a.axis, x.ndim) if x.ndim != -1 else None
        shape = None
        n_inv = None
        if values is not None and axis is not None:
            n_inv = [values[axis]]
            if count is not None:
                shape = list(values)
                shape[axis] = count
        vsinfo = TensorStructInfo(shape, x.dtype, x.ndim, x.vdevice)
    vec = TensorStructInfo(None if count is None else [count], "int64", 1, x.vdevice)
    inverse = TensorStructInfo(n_inv, "int64", 1, x.vdevice)
    return [vsinfo, vec, inverse, vec]


def _unique_result(call: Call, parts: list[Any], make_tuple: Any) -> Any:
    a = call.attrs
    keep = [0] + [k for k, flag in ((1, a.return_index), (2, a.return_inverse),
                                    (3, a.return_counts)) if flag]
    return parts[0] if len(keep) == 1 else make_tuple([parts[k] for k in keep])


@unique.infer
def _infer_unique(call: Call, ctx: Any) -> StructInfo:
    x = arg_tensor(call, 0)
    if call.attrs.axis is not None and x.ndim == 0:
        raise op_error(call, "axis is given but x is a scalar")
    return _unique_result(call, _unique_parts(call, x, None), TupleStructInfo)


@unique.legalize
def _legalize_unique(bb: Any, call: Call) -> Expr:
    from ..topi import data_dependent
    from ..topi._util import prod

    x = call.args[0].struct_info
    if not _known_shape(x):
        return call
    a = call.attrs
    axis = None if a.axis is None else normalize_axis(call, a.axis, x.ndim)
    values = x.shape_values
    m = prod(values) if axis is None else values[axis]
    vec = TensorStructInfo([m], "int64", vdevice=x.vdevice)
    padded = TensorStructInfo([m] if axis is None else values, x.dtype, vdevice=x.vdevice)
    func = data_dependent.unique_func(values, x.dtype, axis, a.sorted, a.equal_nan)
    raw = bb.emit(prim_func_call(bb, call, func, [call.args[0]], [
        padded, vec, vec, vec, TensorStructInfo([1], "int64", vdevice=x.vdevice)]))
    k = bind_count(bb, bb.emit(TupleGetItem(raw, 4)), "num_unique")
    wanted = (True, a.return_index, a.return_inverse, a.return_counts)
    items: list[Any] = []
    for j, flag in enumerate(wanted):
        if not flag:
            items.append(None)
        elif j == 2:  # one inverse index per input row: no cropping
            items.append(bb.emit(TupleGetItem(raw, 2)))
        else:
            items.append(bb.emit(te_call(
                bb, call, data_dependent.crop, bb.emit(TupleGetItem(raw, j)),
                0 if j or axis is None else axis, k, primfunc_name_hint="unique_crop")))
    return _unique_result(call, items, Tuple)
