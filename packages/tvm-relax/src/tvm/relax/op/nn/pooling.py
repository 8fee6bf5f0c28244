"""Pooling over 1, 2 or 3 spatial axes: ``relax.nn.max_pool{1,2,3}d``,
``avg_pool{1,2,3}d``, ``adaptive_avg_pool{1,2,3}d`` and ``adaptive_max_pool{1,2,3}d``; and
``relax.nn.max_pool_with_indices`` (N-d, channels first), which also returns where each
maximum is.

The spatial axes are the ``D``/``H``/``W`` letters of ``layout`` (``NCW``, ``NCHW``,
``NCDHW`` or channels-last ``NWC``, ``NHWC``, ``NDHWC``).
"""

from __future__ import annotations

from typing import Any, Optional, Sequence, Union

from tvm.ffi import register_object
from tvm.tir.expr import IntImm

from ...expr import Call, Expr
from ...struct_info import StructInfo, TensorStructInfo, TupleStructInfo
from .._lower import te_call
from .._utils import out_tensor
from ..base import Attrs, arg_tensor, make_call, op_error, register_op
from ._layout import SPATIAL, check_layout, checked_spatial, dims_of, padding_tuple, window_tuple

__all__ = [
    "max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d", "avg_pool2d", "avg_pool3d",
    "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d",
    "adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool3d",
    "max_pool_with_indices", "MaxPoolWithIndicesAttrs", "Pool1DAttrs", "Pool2DAttrs", "Pool3DAttrs",
    "AdaptivePool1DAttrs", "AdaptivePool2DAttrs", "AdaptivePool3DAttrs",
]

IntOrSeq = Union[int, Sequence[int]]


@register_object("relax.attrs.Pool1DAttrs")
class Pool1DAttrs(Attrs):
    pool_size: tuple = (1,)
    strides: tuple = (1,)
    padding: tuple = (0, 0)
    dilation: tuple = (1,)
    ceil_mode: bool = False
    count_include_pad: bool = False
    layout: str = "NCW"
    out_layout: str = "NCW"


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


@register_object("relax.attrs.Pool3DAttrs")
class Pool3DAttrs(Attrs):
    pool_size: tuple = (1, 1, 1)
    strides: tuple = (1, 1, 1)
    padding: tuple = (0, 0, 0, 0, 0, 0)
    dilation: tuple = (1, 1, 1)
    ceil_mode: bool = False
    count_include_pad: bool = False
    layout: str = "NCDHW"
    out_layout: str = "NCDHW"


_POOL_ATTRS = {1: Pool1DAttrs, 2: Pool2DAttrs, 3: Pool3DAttrs}
_DEFAULT_LAYOUT = {1: "NCW", 2: "NCHW", 3: "NCDHW"}


def _pool_input(call: Call) -> tuple[TensorStructInfo, Optional[dict]]:
    """The data of a pooling (``len(layout)`` dimensions) and its dimensions by layout
    letter (None: unknown)."""
    x = arg_tensor(call, 0)
    ndim = len(call.attrs.layout)
    if x.ndim not in (-1, ndim):
        raise op_error(call, f"data must have {ndim} dimensions, got {x.ndim}")
    return x, dims_of(call.attrs.layout, x.shape_values)


def _infer_pool(call: Call, ctx: Any) -> StructInfo:
    x, dims = _pool_input(call)
    a = call.attrs
    nsp = len(a.layout) - 2
    if dims is None:
        return out_tensor(x, None, ndim=nsp + 2)
    from ...topi.nn import pool_out_dim

    for i, c in enumerate(SPATIAL[nsp]):
        dims[c] = pool_out_dim(dims[c], a.pool_size[i], a.strides[i], a.dilation[i],
                               a.padding[i], a.padding[i + nsp], a.ceil_mode)
    dims = checked_spatial(call, ctx, dims, SPATIAL[nsp], "an output spatial size")
    return out_tensor(x, [dims[c] for c in a.out_layout], ctx=ctx)


def _legalize_pool(kind: str) -> Any:
    def legalize(bb: Any, call: Call) -> Expr:
        from ...topi import nn

        a = call.attrs
        return te_call(bb, call, nn.pool, call.args[0], kind, a.pool_size, a.strides, a.padding,
                       a.dilation, a.ceil_mode, a.count_include_pad, a.layout, a.out_layout)

    return legalize


def _pool_builder(nsp: int, kind: str) -> Any:
    name = f"{kind}_pool{nsp}d"
    op_name = f"relax.nn.{name}"
    attrs_cls = _POOL_ATTRS[nsp]
    default_layout = _DEFAULT_LAYOUT[nsp]

    def builder(
        data: Expr, pool_size: IntOrSeq = 1, strides: IntOrSeq = 1, padding: IntOrSeq = 0,
        dilation: IntOrSeq = 1, ceil_mode: bool = False, count_include_pad: bool = False,
        layout: str = default_layout, out_layout: Optional[str] = None,
    ) -> Call:
        attrs = attrs_cls(
            pool_size=window_tuple(pool_size, nsp, f"{name}: pool_size"),
            strides=window_tuple(strides, nsp, f"{name}: strides"),
            padding=padding_tuple(padding, nsp, f"{name}: padding"),
            dilation=window_tuple(dilation, nsp, f"{name}: dilation"),
            ceil_mode=bool(ceil_mode), count_include_pad=bool(count_include_pad),
            layout=check_layout(layout, "NC", nsp, f"{name}: layout"),
            out_layout=check_layout(out_layout or layout, "NC", nsp, f"{name}: out_layout"),
        )
        return make_call(op_name, [data], attrs)

    builder.__name__ = builder.__qualname__ = name
    builder.__doc__ = (
        f"{nsp}-d {'max' if kind == 'max' else 'average'} pooling over the spatial axes of "
        f"``layout``; padding (an int, {nsp} values or {2 * nsp}: all befores then all afters) "
        "never counts in a max; ``count_include_pad`` makes the average divide by the padded "
        "window size; ``ceil_mode`` keeps a last partial window that starts inside the input."
    )
    return register_op(op_name, inputs=("data",), attrs=attrs_cls, infer=_infer_pool,
                       legalize=_legalize_pool(kind), op_pattern="out_elemwise_fusable")(builder)


max_pool1d = _pool_builder(1, "max")
max_pool2d = _pool_builder(2, "max")
max_pool3d = _pool_builder(3, "max")
avg_pool1d = _pool_builder(1, "avg")
avg_pool2d = _pool_builder(2, "avg")
avg_pool3d = _pool_builder(3, "avg")


@register_object("relax.attrs.AdaptivePool1DAttrs")
class AdaptivePool1DAttrs(Attrs):
    """``output_size`` (None: the input's spatial size)."""

    output_size: Optional[tuple] = None
    layout: str = "NCW"
    out_layout: str = "NCW"


@register_object("relax.attrs.AdaptivePool2DAttrs")
class AdaptivePool2DAttrs(Attrs):
    """``output_size`` (None: the input's spatial size)."""

    output_size: Optional[tuple] = None
    layout: str = "NCHW"
    out_layout: str = "NCHW"


@register_object("relax.attrs.AdaptivePool3DAttrs")
class AdaptivePool3DAttrs(Attrs):
    """``output_size`` (None: the input's spatial size)."""

    output_size: Optional[tuple] = None
    layout: str = "NCDHW"
    out_layout: str = "NCDHW"


_ADAPTIVE_ATTRS = {1: AdaptivePool1DAttrs, 2: AdaptivePool2DAttrs, 3: AdaptivePool3DAttrs}


def _infer_adaptive(call: Call, ctx: Any) -> StructInfo:
    x, dims = _pool_input(call)
    a = call.attrs
    nsp = len(a.layout) - 2
    if dims is None:
        return out_tensor(x, None, ndim=nsp + 2)
    if a.output_size is not None:
        for c, v in zip(SPATIAL[nsp], a.output_size):
            dims[c] = IntImm("int64", v)
    return out_tensor(x, [dims[c] for c in a.out_layout], ctx=ctx)


def _legalize_adaptive(kind: str) -> Any:
    def legalize(bb: Any, call: Call) -> Expr:
        from ...topi import nn

        a = call.attrs
        x = call.args[0].struct_info
        dims = dict(zip(a.layout, x.shape_values))
        spatial = SPATIAL[len(a.layout) - 2]
        size = a.output_size if a.output_size is not None else tuple(dims[c] for c in spatial)
        return te_call(bb, call, nn.adaptive_pool, call.args[0], kind, size, a.layout,
                       a.out_layout)

    return legalize


def _adaptive_builder(nsp: int, kind: str) -> Any:
    name = f"adaptive_{kind}_pool{nsp}d"
    op_name = f"relax.nn.{name}"
    attrs_cls = _ADAPTIVE_ATTRS[nsp]
    default_layout = _DEFAULT_LAYOUT[nsp]

    def builder(
        data: Expr, output_size: Optional[IntOrSeq] = None, layout: str = default_layout,
        out_layout: Optional[str] = None,
    ) -> Call:
        size = None if output_size is None else window_tuple(
            output_size, nsp, f"{name}: output_size")
        return make_call(op_name, [data], attrs_cls(
            output_size=size, layout=check_layout(layout, "NC", nsp, f"{name}: layout"),
            out_layout=check_layout(out_layout or layout, "NC", nsp, f"{name}: out_layout")))

    builder.__name__ = builder.__qualname__ = name
    builder.__doc__ = (
        f"Adaptive {nsp}-d {'max' if kind == 'max' else 'average'} pooling to ``output_size``: "
        "output cell i of a size-n axis pools [floor(i*n/out), ceil((i+1)*n/out))."
    )
    return register_op(op_name, inputs=("data",), attrs=attrs_cls, infer=_infer_adaptive,
                       legalize=_legalize_adaptive(kind),
                       op_pattern="out_elemwise_fusable")(builder)


adaptive_avg_pool1d = _adaptive_builder(1, "avg")
adaptive_avg_pool2d = _adaptive_builder(2, "avg")
adaptive_avg_pool3d = _adaptive_builder(3, "avg")
adaptive_max_pool1d = _adaptive_builder(1, "max")
adaptive_max_pool2d = _adaptive_builder(2, "max")
adaptive_max_pool3d = _adaptive_builder(3, "max")


# -- numpy semantics (2-d pooling) ------------------------------------------------------------
import numpy as _np  # noqa: E402


def _eval_pool2d(kind: str) -> Any:
    def evaluate(call: Call, data: Any) -> Any:
        from .._numpy import NumpyEvalError, to_layout

        a = call.attrs
        if a.ceil_mode:
            raise NumpyEvalError(f"{call.op.name}: ceil_mode is not evaluated with numpy")
        x = to_layout(data, a.layout, "NCHW").astype(_np.float64)
        top, left, bottom, right = (int(p) for p in a.padding)
        fill = -_np.inf if kind == "max" else 0.0
        xp = _np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)), constant_values=fill)
        ones = _np.pad(_np.ones(x.shape[2:]), ((top, bottom), (left, right)))
        (kh, kw), (sh, sw), (dh, dw) = a.pool_size, a.strides, a.dilation
        oh = (xp.shape[2] - dh * (kh - 1) - 1) // sh + 1
        ow = (xp.shape[3] - dw * (kw - 1) - 1) // sw + 1

        def window(v: Any, i: int, j: int) -> Any:
            return v[..., i * dh: i * dh + sh * (oh - 1) + 1: sh,
                     j * dw: j * dw + sw * (ow - 1) + 1: sw]

        windows = [window(xp, i, j) for i in range(kh) for j in range(kw)]
        if kind == "max":
            out = _np.max(windows, axis=0)
        elif a.count_include_pad:
            out = _np.sum(windows, axis=0) / (kh * kw)
        else:
            counts = sum(window(ones, i, j) for i in range(kh) for j in range(kw))
            out = _np.sum(windows, axis=0) / counts
        return to_layout(out, "NCHW", a.out_layout)

    return evaluate


max_pool2d.evaluate(_eval_pool2d("max"))
avg_pool2d.evaluate(_eval_pool2d("avg"))


# -- max pooling with the indices of the maxima (N-d) ---------------------------------------
@register_object("relax.attrs.MaxPoolWithIndicesAttrs")
class MaxPoolWithIndicesAttrs(Attrs):
    """Window attributes (one value per spatial axis; ``padding``: all befores then all
    afters) and ``storage_order`` (0: the index is row-major, 1: column-major)."""

    pool_size: tuple = (1,)
    strides: tuple = (1,)
    padding: tuple = (0, 0)
    dilation: tuple = (1,)
    ceil_mode: bool = False
    storage_order: int = 0


@register_op("relax.nn.max_pool_with_indices", inputs=("data",),
             attrs=MaxPoolWithIndicesAttrs, op_pattern="opaque")
def max_pool_with_indices(
    data: Expr, pool_size: Sequence[int], strides: Optional[Sequence[int]] = None,
    padding: Optional[Sequence[int]] = None, dilation: Optional[Sequence[int]] = None,
    ceil_mode: bool = False, storage_order: int = 0,
) -> Call:
    """Max pooling over every spatial axis of an ``(N, C, ...)`` tensor (any number of
    them), returning ``(values, indices)``: the int64 flat index, within the whole unpadded
    input, of the first maximum of each window (ONNX MaxPool's second output).  Padding
    never wins; ``ceil_mode`` keeps a last partial window that starts inside the input or
    the leading padding."""
    nsp = len(pool_size)
    name = "max_pool_with_indices"
    if int(storage_order) not in (0, 1):
        raise ValueError(f"{name}: storage_order must be 0 or 1, got {storage_order}")
    return make_call("relax.nn.max_pool_with_indices", [data], MaxPoolWithIndicesAttrs(
        pool_size=window_tuple(tuple(pool_size), nsp, f"{name}: pool_size"),
        strides=window_tuple(1 if strides is None else strides, nsp, f"{name}: strides"),
        padding=padding_tuple(0 if padding is None else padding, nsp, f"{name}: padding"),
        dilation=window_tuple(1 if dilation is None else dilation, nsp, f"{name}: dilation"),
        ceil_mode=bool(ceil_mode), storage_order=int(storage_order)))


def _indices_out_sizes(a: Any, sizes: Sequence[Any]) -> list[Any]:
    from ...topi.nn import pool_out_dim

    nsp = len(a.pool_size)
    return [pool_out_dim(sizes[i], a.pool_size[i], a.strides[i], a.dilation[i], a.padding[i],
                         a.padding[i + nsp], a.ceil_mode) for i in range(nsp)]


@max_pool_with_indices.infer
def _infer_max_pool_with_indices(call: Call, ctx: Any) -> StructInfo:
    x = arg_tensor(call, 0)
    a = call.attrs
    nsp = len(a.pool_size)
    if x.ndim not in (-1, nsp + 2):
        raise op_error(call, f"data must have {nsp + 2} dimensions, got {x.ndim}")
    if x.shape_values is None:
        outs = [out_tensor(x, None, ndim=nsp + 2), out_tensor(x, None, "int64", nsp + 2)]
    else:
        shape = [*x.shape_values[:2], *_indices_out_sizes(a, x.shape_values[2:])]
        outs = [out_tensor(x, shape, ctx=ctx), out_tensor(x, shape, "int64", ctx=ctx)]
    return TupleStructInfo(outs)


@max_pool_with_indices.legalize
def _legalize_max_pool_with_indices(bb: Any, call: Call) -> Expr:
    from tvm import te, tir

    x = call.args[0].struct_info
    a = call.attrs
    sizes = [] if x.shape_values is None else list(x.shape_values[2:])
    if x.shape_values is None or not all(isinstance(d, IntImm) for d in sizes):
        return call  # the flat index needs static spatial sizes
    sizes = [int(d.value) for d in sizes]
    nsp = len(sizes)
    kernel, strides, pads, dilations = a.pool_size, a.strides, a.padding, a.dilation
    order = list(range(nsp)) if a.storage_order == 0 else list(range(nsp))[::-1]
    dt = x.dtype

    def fn(data: Any) -> Any:
        shape = data.shape
        raxes = [te.reduce_axis((0, k), name=f"k{i}") for i, k in enumerate(kernel)]
        out_shape = [*shape[:2], *_indices_out_sizes(a, sizes)]

        def positions(idx: Any) -> list[Any]:
            return [idx[2 + i] * strides[i] - pads[i] + raxes[i] * dilations[i]
                    for i in range(nsp)]

        def inside(pos: list[Any]) -> Any:
            return tir.all(*[tir.all(p >= 0, p < sizes[i]) for i, p in enumerate(pos)])

        def load(idx: Any, pos: list[Any]) -> Any:
            clamped = [tir.max(tir.min(p, sizes[i] - 1), 0) for i, p in enumerate(pos)]
            return data[(idx[0], idx[1], *clamped)]

        def body(*idx: Any) -> Any:
            pos = positions(idx)
            v = tir.if_then_else(inside(pos), load(idx, pos), tir.min_value(dt))
            return te.max(v, axis=raxes)

        pooled = te.compute(out_shape, body, name="max_pool")

        def flat(idx: Any, pos: list[Any]) -> Any:
            lin = idx[0] * shape[1] + idx[1]
            for i in order:
                lin = lin * sizes[i] + pos[i]
            return lin

        def arg_body(*idx: Any) -> Any:
            pos = positions(idx)
            hit = tir.all(inside(pos), load(idx, pos) == pooled[idx])
            big = tir.const(2**62, "int64")
            return te.min(tir.if_then_else(hit, tir.Cast("int64", flat(idx, pos)), big),
                          axis=raxes)

        return [pooled, te.compute(out_shape, arg_body, name="max_pool_index")]

    return te_call(bb, call, fn, call.args[0])


@max_pool_with_indices.evaluate
def _eval_max_pool_with_indices(call: Call, data: Any) -> Any:
    import itertools

    a = call.attrs
    x = _np.asarray(data)
    n, c, *sizes = x.shape
    nsp = len(sizes)
    outs = [int(d) for d in _indices_out_sizes(a, sizes)]
    order = list(range(nsp)) if a.storage_order == 0 else list(range(nsp))[::-1]
    low = _np.finfo(x.dtype).min if x.dtype.kind == "f" else _np.iinfo(x.dtype).min
    values = _np.full((n, c, *outs), low, x.dtype)
    index = _np.full((n, c, *outs), 2**62, _np.int64)
    lead = _np.arange(n)[:, None] * c + _np.arange(c)[None, :]
    for o in itertools.product(*[range(d) for d in outs]):
        for k in itertools.product(*[range(d) for d in a.pool_size]):
            pos = [o[i] * a.strides[i] - a.padding[i] + k[i] * a.dilation[i]
                   for i in range(nsp)]
            if not all(0 <= p < s for p, s in zip(pos, sizes)):
                continue
            v = x[(slice(None), slice(None), *pos)]
            lin = lead
            for i in order:
                lin = lin * sizes[i] + pos[i]
            cell = (slice(None), slice(None), *o)
            better = v > values[cell]
            tie = (v == values[cell]) & (lin < index[cell])
            values[cell] = _np.where(better, v, values[cell])
            index[cell] = _np.where(better | tie, lin, index[cell])
    return values, index
