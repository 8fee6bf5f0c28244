"""Sorting: ``sort``, ``argsort``, ``topk`` (stable; legalized to a TIR merge sort)."""

from __future__ import annotations

from typing import Any

from tvm.ffi import register_object
from tvm.tir.expr import IntImm

from ..expr import Call, Expr
from ..struct_info import StructInfo, TensorStructInfo, TupleStructInfo, canonical_dtype
from ._elementwise import is_int_or_bool
from ._lower import prim_func_call
from ._utils import const_dim, out_tensor
from .base import Attrs, arg_tensor, make_call, normalize_axis, op_error, register_op

__all__ = ["sort", "argsort", "topk", "SortAttrs", "ArgsortAttrs", "TopKAttrs"]


def _check_index_dtype(call: Call, dtype: str) -> None:
    if not is_int_or_bool(dtype) or dtype == "bool":
        raise op_error(call, f"the index dtype must be an integer type, got {dtype}")


def _axis(call: Call, x: TensorStructInfo) -> int:
    return normalize_axis(call, call.attrs.axis, x.ndim) if x.ndim != -1 else call.attrs.axis


def _legalize(call: Call, bb: Any, outputs: str, descending: bool, k: Any = None,
              index_dtype: str = "int64") -> Expr:
    from ..topi.sort import sort_func

    x = call.args[0].struct_info
    func = sort_func(x.shape_values, x.dtype, call.attrs.axis % x.ndim, descending, outputs, k,
                     index_dtype)
    return prim_func_call(bb, call, func, [call.args[0]], call.struct_info)


@register_object("relax.attrs.SortAttrs")
class SortAttrs(Attrs):
    axis: int = -1
    descending: bool = False


@register_op("relax.sort", inputs=("x",), attrs=SortAttrs, op_pattern="opaque")
def sort(x: Expr, axis: int = -1, descending: bool = False) -> Call:
    """``x`` sorted along ``axis`` (stable)."""
    return make_call("relax.sort", [x], SortAttrs(axis=int(axis), descending=bool(descending)))


@sort.infer
def _infer_sort(call: Call, ctx: Any) -> StructInfo:
    x = arg_tensor(call, 0)
    _axis(call, x)
    return x


@sort.legalize
def _legalize_sort(bb: Any, call: Call) -> Expr:
    return _legalize(call, bb, "values", call.attrs.descending)


@register_object("relax.attrs.ArgsortAttrs")
class ArgsortAttrs(Attrs):
    axis: int = -1
    descending: bool = False
    dtype: str = "int32"


@register_op("relax.argsort", inputs=("data",), attrs=ArgsortAttrs,
             op_pattern="opaque")
def argsort(data: Expr, axis: int = -1, descending: bool = False, dtype: str = "int32") -> Call:
    """Positions that sort ``data`` along ``axis`` (stable), as ``dtype``."""
    return make_call("relax.argsort", [data], ArgsortAttrs(
        axis=int(axis), descending=bool(descending), dtype=canonical_dtype(dtype)))


@argsort.infer
def _infer_argsort(call: Call, ctx: Any) -> StructInfo:
    x = arg_tensor(call, 0)
    _check_index_dtype(call, call.attrs.dtype)
    _axis(call, x)
    return TensorStructInfo(x.shape, call.attrs.dtype, x.ndim, x.vdevice)


@argsort.legalize
def _legalize_argsort(bb: Any, call: Call) -> Expr:
    return _legalize(call, bb, "indices", call.attrs.descending, index_dtype=call.attrs.dtype)


@register_object("relax.attrs.TopKAttrs")
class TopKAttrs(Attrs):
    """``k`` entries along ``axis``; ``ret_type``: both, values or indices; ``largest``."""

    k: int = 1
    axis: int = -1
    ret_type: str = "both"
    largest: bool = True
    dtype: str = "int32"


@register_op("relax.topk", inputs=("data",), attrs=TopKAttrs, op_pattern="opaque")
def topk(
    data: Expr, k: int = 1, axis: int = -1, ret_type: str = "both", largest: bool = True,
    dtype: str = "int32",
) -> Call:
    """The ``k`` largest (or smallest) entries along ``axis``, best first: a tuple
    (values, indices) for ``ret_type="both"``, else one of them."""
    if ret_type not in ("both", "values", "indices"):
        raise ValueError(f"topk: ret_type must be 'both', 'values' or 'indices', got {ret_type!r}")
    return make_call("relax.topk", [data], TopKAttrs(
        k=int(k), axis=int(axis), ret_type=ret_type, largest=bool(largest),
        dtype=canonical_dtype(dtype)))


@topk.infer
def _infer_topk(call: Call, ctx: Any) -> StructInfo:
    x = arg_tensor(call, 0)
    attrs = call.attrs
    _check_index_dtype(call, attrs.dtype)
    if attrs.k < 1:
        raise op_error(call, f"k must be at least 1, got {attrs.k}")
    if x.ndim == 0:
        raise op_error(call, "needs a tensor with at least one dimension")
    axis = _axis(call, x)
    values = x.shape_values
    if values is None:
        outs = [out_tensor(x, None, ndim=x.ndim), out_tensor(x, None, attrs.dtype, x.ndim)]
    else:
        size = const_dim(values[axis])
        if size is not None and attrs.k > size:
            raise op_error(call, f"k={attrs.k} exceeds the size {size} of axis {axis}")
        shape = list(values)
        shape[axis] = IntImm("int64", attrs.k)
        outs = [out_tensor(x, shape), out_tensor(x, shape, attrs.dtype)]
    if attrs.ret_type == "both":
        return TupleStructInfo(outs)
    return outs[0] if attrs.ret_type == "values" else outs[1]


@topk.legalize
def _legalize_topk(bb: Any, call: Call) -> Expr:
    a = call.attrs
    return _legalize(call, bb, a.ret_type, a.largest, a.k, a.dtype)
