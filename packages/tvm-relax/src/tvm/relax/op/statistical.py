"""Reductions (``sum``, ``mean``, ``max``, ``min``, ``prod``, ``variance``, ``std``) and
scans (``cumsum``, ``cumprod``, ``logcumsumexp``).

Reductions take ``axis`` (an int, a list, or None for all axes) and ``keepdims``; the
result keeps the input dtype.  Scans run along one axis (None: over the flattened input).
"""

from __future__ import annotations

from typing import Any, Optional, Sequence, Union

from tvm.ffi import register_object
from tvm.tir.expr import IntImm

from ..expr import Call, Expr
from ..struct_info import StructInfo, TensorStructInfo, canonical_dtype
from ._lower import prim_func_call, te_call
from ._utils import axes_of, opt_int_tuple, out_tensor
from .base import Attrs, arg_tensor, make_call, normalize_axis, op_error, register_op

__all__ = [
    "sum", "mean", "max", "min", "prod", "variance", "std", "cumsum", "cumprod", "logcumsumexp",
    "StatisticalAttrs", "ScanopAttrs", "infer_reduce",
]

AxisLike = Union[None, int, Sequence[int]]


@register_object("relax.attrs.StatisticalAttrs")
class StatisticalAttrs(Attrs):
    """``axis``: reduced axes (None: all); ``keepdims``: keep them with size 1."""

    axis: Optional[tuple] = None
    keepdims: bool = False


def infer_reduce(
    call: Call, ctx: Any, axis: Optional[Sequence[int]], keepdims: bool,
    dtype: Optional[str] = None,
) -> StructInfo:
    """StructInfo of a reduction of argument 0 over ``axis``."""
    x = arg_tensor(call, 0)
    dtype = x.dtype if dtype is None else dtype
    if x.ndim == -1:
        if axis is None and not keepdims:
            return out_tensor(x, [], dtype)
        return out_tensor(x, None, dtype, -1)
    axes = axes_of(call, axis, x.ndim)
    ndim = x.ndim if keepdims else x.ndim - len(axes)
    values = x.shape_values
    if values is None:
        return out_tensor(x, None, dtype, ndim)
    shape = [
        IntImm("int64", 1) if d in axes else v
        for d, v in enumerate(values) if keepdims or d not in axes
    ]
    return out_tensor(x, shape, dtype, ctx=ctx)


def _reduced_axes(call: Call) -> list[int]:
    return axes_of(call, call.attrs.axis, call.args[0].struct_info.ndim)


def _declare(name: str, doc: str, require_float: bool = False) -> Any:
    op_name = f"relax.{name}"

    def builder(x: Expr, axis: AxisLike = None, keepdims: bool = False) -> Call:
        attrs = StatisticalAttrs(axis=opt_int_tuple(axis, f"{name}: axis"), keepdims=bool(keepdims))
        return make_call(op_name, [x], attrs)

    builder.__name__ = builder.__qualname__ = name
    builder.__doc__ = f"{doc} of ``x`` over ``axis`` (None: all axes)."

    def infer(call: Call, ctx: Any) -> StructInfo:
        x = arg_tensor(call, 0)
        if require_float and not x.is_unknown_dtype:
            from ._elementwise import is_float

            if not is_float(x.dtype):
                raise op_error(call, f"requires a floating-point input, got dtype {x.dtype}")
        return infer_reduce(call, ctx, call.attrs.axis, call.attrs.keepdims)

    def legalize(bb: Any, call: Call) -> Expr:
        from ..topi import reduction

        axes, keep = _reduced_axes(call), call.attrs.keepdims
        if name in reduction.REDUCERS:
            return te_call(bb, call, reduction.reduce, call.args[0], name, axes, keep)
        fn = getattr(reduction, name)
        return te_call(bb, call, fn, call.args[0], axes, keep)

    def evaluate(call: Call, x: Any) -> Any:
        import numpy as np

        fn = {"variance": np.var}.get(name) or getattr(np, name)
        axis = call.attrs.axis
        axis = None if axis is None else tuple(int(a) for a in axis)
        return fn(x, axis=axis, keepdims=bool(call.attrs.keepdims))

    return register_op(op_name, inputs=("x",), attrs=StatisticalAttrs, infer=infer,
                       legalize=legalize, evaluate=evaluate, op_pattern="reduce")(builder)


sum = _declare("sum", "Sum")  # noqa: A001
mean = _declare("mean", "Mean")
max = _declare("max", "Maximum")  # noqa: A001
min = _declare("min", "Minimum")  # noqa: A001
prod = _declare("prod", "Product")
variance = _declare("variance", "Population variance (ddof=0)", require_float=True)
std = _declare("std", "Population standard deviation (ddof=0)", require_float=True)


# -- scans ---------------------------------------------------------------------------------------
@register_object("relax.attrs.ScanopAttrs")
class ScanopAttrs(Attrs):
    """``axis`` (None: the flattened input), result ``dtype`` ("void": the input's),
    ``exclusive`` (the first output is the identity)."""

    axis: Optional[int] = None
    dtype: str = "void"
    exclusive: bool = False


def _scan_builder(name: str) -> Any:
    op_name = f"relax.{name}"

    def builder(
        data: Expr, axis: Optional[int] = None, dtype: Optional[str] = None,
        exclusive: bool = False,
    ) -> Call:
        attrs = ScanopAttrs(
            axis=None if axis is None else int(axis),
            dtype=canonical_dtype(dtype, f"{name}: dtype"), exclusive=bool(exclusive),
        )
        return make_call(op_name, [data], attrs)

    builder.__name__ = builder.__qualname__ = name
    what = {"cumsum": "sum", "cumprod": "product",
            "logcumsumexp": "log-sum-exp (``log(cumsum(exp(x)))`` without overflow)"}[name]
    builder.__doc__ = f"Cumulative {what} of ``data`` along ``axis`` (None: flattened)."

    def infer(call: Call, ctx: Any) -> StructInfo:
        x = arg_tensor(call, 0)
        dtype = x.dtype if call.attrs.dtype == "void" else call.attrs.dtype
        if name == "logcumsumexp" and dtype != "void":
            from ._elementwise import is_float

            if not is_float(dtype):
                raise op_error(call, f"requires a floating-point result dtype, got {dtype}")
        if call.attrs.axis is None:
            values = x.shape_values
            if values is None:
                return out_tensor(x, None, dtype, 1)
            total: Any = IntImm("int64", 1)
            for v in values:
                total = total * v
            return out_tensor(x, [total], dtype, ctx=ctx)
        if x.ndim != -1:
            normalize_axis(call, call.attrs.axis, x.ndim)
        return TensorStructInfo(x.shape, dtype, x.ndim, x.vdevice)

    def legalize(bb: Any, call: Call) -> Expr:
        from ..topi.scan import scan_func

        x = call.args[0].struct_info
        axis = call.attrs.axis
        axis = None if axis is None else axis % x.ndim
        func = scan_func(x.shape_values, x.dtype, call.struct_info.dtype, axis,
                         _SCAN_KINDS[name], call.attrs.exclusive)
        return prim_func_call(bb, call, func, [call.args[0]], call.struct_info)

    return register_op(op_name, inputs=("data",), attrs=ScanopAttrs, infer=infer,
                       legalize=legalize, op_pattern="opaque")(builder)


_SCAN_KINDS = {"cumsum": "sum", "cumprod": "prod", "logcumsumexp": "logaddexp"}
cumsum = _scan_builder("cumsum")
cumprod = _scan_builder("cumprod")
logcumsumexp = _scan_builder("logcumsumexp")
