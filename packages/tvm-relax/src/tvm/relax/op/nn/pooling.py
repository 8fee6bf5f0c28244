"""Pooling: ``relax.nn.max_pool2d``, ``avg_pool2d``, ``adaptive_avg_pool2d``,
``adaptive_max_pool2d``."""

from __future__ import annotations

from typing import Any, Optional, Sequence, Union

from tvm.ffi import register_object
from tvm.tir.expr import IntImm

from ...expr import Call, Expr
from ...struct_info import StructInfo
from .._lower import te_call
from .._utils import out_tensor
from ..base import Attrs, arg_tensor, make_call, op_error, register_op
from ._layout import check_layout, checked_spatial, dims_of, padding_tuple, window_tuple

__all__ = ["max_pool2d", "avg_pool2d", "adaptive_avg_pool2d", "adaptive_max_pool2d",
           "Pool2DAttrs", "AdaptivePool2DAttrs"]

IntOrSeq = Union[int, Sequence[int]]


@register_object("relax.attrs.Pool2DAttrs")
class Pool2DAttrs(Attrs):
    pool_size: tuple = (1, 1)
    strides: tuple = (1, 1)
    padding: tuple = (0, 0, 0, 0)
    dilation: tuple = (1, 1)
    ceil_mode: bool = False
    count_include_pad: bool = False
    layout: str = "NCHW"
    out_layout: str = "NCHW"


def _infer_pool(call: Call, ctx: Any) -> StructInfo:
    x = arg_tensor(call, 0)
    a = call.attrs
    if x.ndim not in (-1, 4):
        raise op_error(call, f"data must have 4 dimensions, got {x.ndim}")
    dims = dims_of(a.layout, x.shape_values)
    if dims is None:
        return out_tensor(x, None, ndim=4)
    from ...topi.nn import pool_out_dim

    for i, c in enumerate("HW"):
        dims[c] = pool_out_dim(dims[c], a.pool_size[i], a.strides[i], a.dilation[i],
                               a.padding[i], a.padding[i + 2], a.ceil_mode)
    dims = checked_spatial(call, ctx, dims, "HW", "an output spatial size")
    return out_tensor(x, [dims[c] for c in a.out_layout], ctx=ctx)


def _pool_builder(name: str, kind: str) -> Any:
    op_name = f"relax.nn.{name}"

    def builder(
        data: Expr, pool_size: IntOrSeq = (1, 1), strides: IntOrSeq = (1, 1),
        padding: IntOrSeq = (0, 0), dilation: IntOrSeq = (1, 1), ceil_mode: bool = False,
        count_include_pad: bool = False, layout: str = "NCHW", out_layout: Optional[str] = None,
    ) -> Call:
        attrs = Pool2DAttrs(
            pool_size=window_tuple(pool_size, 2, f"{name}: pool_size"),
            strides=window_tuple(strides, 2, f"{name}: strides"),
            padding=padding_tuple(padding, 2, f"{name}: padding"),
            dilation=window_tuple(dilation, 2, f"{name}: dilation"),
            ceil_mode=bool(ceil_mode), count_include_pad=bool(count_include_pad),
            layout=check_layout(layout, "NC", 2, f"{name}: layout"),
            out_layout=check_layout(out_layout or layout, "NC", 2, f"{name}: out_layout"),
        )
        return make_call(op_name, [data], attrs)

    builder.__name__ = builder.__qualname__ = name
    builder.__doc__ = (
        f"2-d {'max' if kind == 'max' else 'average'} pooling over the H and W axes of "
        "``layout``; padding (int, (h, w) or (top, left, bottom, right)) never counts in a max; "
        "``count_include_pad`` makes the average divide by the padded window size; "
        "``ceil_mode`` keeps a last partial window that starts inside the input."
    )

    def legalize(bb: Any, call: Call) -> Expr:
        from ...topi import nn

        a = call.attrs
        return te_call(bb, call, nn.pool, call.args[0], kind, a.pool_size, a.strides, a.padding,
                       a.dilation, a.ceil_mode, a.count_include_pad, a.layout, a.out_layout)

    return register_op(op_name, inputs=("data",), attrs=Pool2DAttrs, infer=_infer_pool,
                       legalize=legalize, op_pattern="out_elemwise_fusable")(builder)


max_pool2d = _pool_builder("max_pool2d", "max")
avg_pool2d = _pool_builder("avg_pool2d", "avg")


@register_object("relax.attrs.AdaptivePool2DAttrs")
class AdaptivePool2DAttrs(Attrs):
    """``output_size`` (None: the input's spatial size)."""

    output_size: Optional[tuple] = None
    layout: str = "NCHW"
    out_layout: str = "NCHW"


def _infer_adaptive(call: Call, ctx: Any) -> StructInfo:
    x = arg_tensor(call, 0)
    a = call.attrs
    if x.ndim not in (-1, 4):
        raise op_error(call, f"data must have 4 dimensions, got {x.ndim}")
    dims = dims_of(a.layout, x.shape_values)
    if dims is None:
        return out_tensor(x, None, ndim=4)
    if a.output_size is not None:
        dims["H"], dims["W"] = (IntImm("int64", v) for v in a.output_size)
    return out_tensor(x, [dims[c] for c in a.out_layout], ctx=ctx)


def _adaptive_builder(name: str, kind: str) -> Any:
    op_name = f"relax.nn.{name}"

    def builder(
        data: Expr, output_size: Optional[IntOrSeq] = None, layout: str = "NCHW",
        out_layout: Optional[str] = None,
    ) -> Call:
        size = None if output_size is None else window_tuple(output_size, 2, f"{name}: output_size")
        return make_call(op_name, [data], AdaptivePool2DAttrs(
            output_size=size, layout=check_layout(layout, "NC", 2, f"{name}: layout"),
            out_layout=check_layout(out_layout or layout, "NC", 2, f"{name}: out_layout")))

    builder.__name__ = builder.__qualname__ = name
    builder.__doc__ = (
        f"Adaptive 2-d {'max' if kind == 'max' else 'average'} pooling to ``output_size``: "
        "output cell i of a size-n axis pools [floor(i*n/out), ceil((i+1)*n/out))."
    )

    def legalize(bb: Any, call: Call) -> Expr:
        from ...topi import nn

        a = call.attrs
        x = call.args[0].struct_info
        dims = dict(zip(a.layout, x.shape_values))
        size = a.output_size if a.output_size is not None else (dims["H"], dims["W"])
        return te_call(bb, call, nn.adaptive_pool, call.args[0], kind, size, a.layout,
                       a.out_layout)

    return register_op(op_name, inputs=("data",), attrs=AdaptivePool2DAttrs,
                       infer=_infer_adaptive, legalize=legalize,
                       op_pattern="out_elemwise_fusable")(builder)


adaptive_avg_pool2d = _adaptive_builder("adaptive_avg_pool2d", "avg")
adaptive_max_pool2d = _adaptive_builder("adaptive_max_pool2d", "max")
