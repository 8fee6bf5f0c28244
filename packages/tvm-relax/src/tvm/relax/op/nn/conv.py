"""Convolutions: ``relax.nn.conv1d``/``conv2d``/``conv3d`` and
``conv1d_transpose``/``conv2d_transpose``/``conv3d_transpose``.

Layouts are strings (data ``NCW``/``NCHW``/``NCDHW`` or channels-last ``NWC``/``NHWC``/
``NDHWC``, kernel ``OIHW``/``HWIO``/``OHWI``..., transposed kernel ``IOW``/``IOHW``/
``IODHW``); padding is an int, one value per spatial axis or (before..., after...)
(for 2-d: top, left, bottom, right).  ``out_dtype`` sets the accumulation/result dtype.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence, Union

from tvm.ffi import register_object

from ...analysis.struct_info_analysis import prim_equal
from ...expr import Call, Expr
from ...struct_info import StructInfo, canonical_dtype
from .._infer import dim_str
from .._lower import te_call
from .._utils import const_dim, out_tensor
from ..base import Attrs, arg_tensor, make_call, op_error, register_op
from ._layout import SPATIAL, check_layout, checked_spatial, dims_of, padding_tuple, window_tuple

__all__ = ["conv1d", "conv2d", "conv3d", "conv1d_transpose", "conv2d_transpose",
           "conv3d_transpose", "Conv1DAttrs", "Conv2DAttrs", "Conv3DAttrs",
           "Conv1DTransposeAttrs", "Conv2DTransposeAttrs", "Conv3DTransposeAttrs"]

IntOrSeq = Union[int, Sequence[int]]


@register_object("relax.attrs.Conv1DAttrs")
class Conv1DAttrs(Attrs):
    strides: tuple = (1,)
    padding: tuple = (0, 0)
    dilation: tuple = (1,)
    groups: int = 1
    data_layout: str = "NCW"
    kernel_layout: str = "OIW"
    out_layout: str = "NCW"
    out_dtype: str = "void"


@register_object("relax.attrs.Conv2DAttrs")
class Conv2DAttrs(Attrs):
    strides: tuple = (1, 1)
    padding: tuple = (0, 0, 0, 0)
    dilation: tuple = (1, 1)
    groups: int = 1
    data_layout: str = "NCHW"
    kernel_layout: str = "OIHW"
    out_layout: str = "NCHW"
    out_dtype: str = "void"


@register_object("relax.attrs.Conv3DAttrs")
class Conv3DAttrs(Attrs):
    strides: tuple = (1, 1, 1)
    padding: tuple = (0, 0, 0, 0, 0, 0)
    dilation: tuple = (1, 1, 1)
    groups: int = 1
    data_layout: str = "NCDHW"
    kernel_layout: str = "OIDHW"
    out_layout: str = "NCDHW"
    out_dtype: str = "void"


@register_object("relax.attrs.Conv1DTransposeAttrs")
class Conv1DTransposeAttrs(Attrs):
    strides: tuple = (1,)
    padding: tuple = (0, 0)
    output_padding: tuple = (0,)
    dilation: tuple = (1,)
    groups: int = 1
    data_layout: str = "NCW"
    kernel_layout: str = "IOW"
    out_layout: str = "NCW"
    out_dtype: str = "void"


@register_object("relax.attrs.Conv3DTransposeAttrs")
class Conv3DTransposeAttrs(Attrs):
    strides: tuple = (1, 1, 1)
    padding: tuple = (0, 0, 0, 0, 0, 0)
    output_padding: tuple = (0, 0, 0)
    dilation: tuple = (1, 1, 1)
    groups: int = 1
    data_layout: str = "NCDHW"
    kernel_layout: str = "IODHW"
    out_layout: str = "NCDHW"
    out_dtype: str = "void"


@register_object("relax.attrs.Conv2DTransposeAttrs")
class Conv2DTransposeAttrs(Attrs):
    strides: tuple = (1, 1)
    padding: tuple = (0, 0, 0, 0)
    output_padding: tuple = (0, 0)
    dilation: tuple = (1, 1)
    groups: int = 1
    data_layout: str = "NCHW"
    kernel_layout: str = "IOHW"
    out_layout: str = "NCHW"
    out_dtype: str = "void"


def _attrs(cls: type, nsp: int, strides: Any, padding: Any, dilation: Any, groups: int,
           data_layout: str, kernel_layout: str, out_layout: Optional[str], out_dtype: Any,
           kernel_fixed: str, **extra: Any) -> Attrs:
    name = cls.__name__.replace("Attrs", "").replace("Transpose", "_transpose").lower()
    if groups < 1:
        raise ValueError(f"{name}: groups must be positive, got {groups}")
    return cls(
        strides=window_tuple(strides, nsp, f"{name}: strides"),
        padding=padding_tuple(padding, nsp, f"{name}: padding"),
        dilation=window_tuple(dilation, nsp, f"{name}: dilation"),
        groups=int(groups),
        data_layout=check_layout(data_layout, "NC", nsp, f"{name}: data_layout"),
        kernel_layout=check_layout(kernel_layout, kernel_fixed, nsp, f"{name}: kernel_layout"),
        out_layout=check_layout(out_layout or data_layout, "NC", nsp, f"{name}: out_layout"),
        out_dtype=canonical_dtype(out_dtype, f"{name}: out_dtype"), **extra,
    )


def _infer_conv(call: Call, ctx: Any, nsp: int, transpose: bool) -> StructInfo:
    data, weight = arg_tensor(call, 0), arg_tensor(call, 1)
    a = call.attrs
    dtype = a.out_dtype
    if dtype == "void":
        if not data.is_unknown_dtype and not weight.is_unknown_dtype and data.dtype != weight.dtype:
            raise op_error(call, f"data ({data.dtype}) and weight ({weight.dtype}) dtypes differ; "
                                 "give out_dtype")
        dtype = data.dtype
    for name, t in (("data", data), ("weight", weight)):
        if t.ndim not in (-1, nsp + 2):
            raise op_error(call, f"{name} must have {nsp + 2} dimensions, got {t.ndim}")
    dd = dims_of(a.data_layout, data.shape_values)
    kd = dims_of(a.kernel_layout, weight.shape_values)
    if dd is None or kd is None:
        return out_tensor(data, None, dtype, nsp + 2)
    analyzer = getattr(ctx, "analyzer", None)
    groups = a.groups
    in_c = kd["I"] * groups if not transpose else kd["I"]
    if prim_equal(dd["C"], in_c, analyzer) is False:
        what = "kernel I * groups" if not transpose else "kernel I"
        raise op_error(call, f"data has {dim_str(dd['C'])} channels but {what} is "
                             f"{dim_str(analyzer.simplify(in_c) if analyzer else in_c)}")
    if transpose:
        if const_dim(dd["C"]) is not None and const_dim(dd["C"]) % groups:
            raise op_error(call, f"data channels {dim_str(dd['C'])} are not divisible by "
                                 f"groups={groups}")
        out_c = kd["O"] * groups
    else:
        if const_dim(kd["O"]) is not None and const_dim(kd["O"]) % groups:
            raise op_error(call, f"kernel output channels {dim_str(kd['O'])} are not divisible "
                                 f"by groups={groups}")
        out_c = kd["O"]
    out = {"N": dd["N"], "C": out_c}
    for i, c in enumerate(SPATIAL[nsp]):
        size, k = dd[c], kd[c]
        before, after = a.padding[i], a.padding[i + nsp]
        s, d = a.strides[i], a.dilation[i]
        if transpose:
            op = a.output_padding[i]
            if op >= s and op >= d:
                raise op_error(call, f"output_padding {op} must be smaller than the stride or "
                                     "the dilation")
            out[c] = (size - 1) * s - before - after + d * (k - 1) + op + 1
        else:
            out[c] = (size + before + after - d * (k - 1) - 1) // s + 1
    out = checked_spatial(call, ctx, out, SPATIAL[nsp], "an output spatial size")
    return out_tensor(data, [out[c] for c in a.out_layout], dtype, ctx=ctx)


def _legalize_conv(bb: Any, call: Call) -> Expr:
    from ...topi import nn

    a = call.attrs
    return te_call(bb, call, nn.conv, call.args[0], call.args[1], a.strides, a.padding,
                   a.dilation, a.groups, a.data_layout, a.kernel_layout, a.out_layout, a.out_dtype)


@register_op("relax.nn.conv1d", inputs=("data", "weight"), attrs=Conv1DAttrs,
             infer=lambda call, ctx: _infer_conv(call, ctx, 1, False), legalize=_legalize_conv,
             op_pattern="out_elemwise_fusable")
def conv1d(
    data: Expr, weight: Expr, strides: IntOrSeq = 1, padding: IntOrSeq = 0,
    dilation: IntOrSeq = 1, groups: int = 1, data_layout: str = "NCW",
    kernel_layout: str = "OIW", out_layout: Optional[str] = None,
    out_dtype: Optional[str] = None,
) -> Call:
    """1-d convolution (cross-correlation) of ``data`` with ``weight``."""
    return make_call("relax.nn.conv1d", [data, weight], _attrs(
        Conv1DAttrs, 1, strides, padding, dilation, groups, data_layout, kernel_layout,
        out_layout, out_dtype, "OI"))


@register_op("relax.nn.conv2d", inputs=("data", "weight"), attrs=Conv2DAttrs,
             infer=lambda call, ctx: _infer_conv(call, ctx, 2, False), legalize=_legalize_conv,
             op_pattern="out_elemwise_fusable")
def conv2d(
    data: Expr, weight: Expr, strides: IntOrSeq = (1, 1), padding: IntOrSeq = (0, 0),
    dilation: IntOrSeq = (1, 1), groups: int = 1, data_layout: str = "NCHW",
    kernel_layout: str = "OIHW", out_layout: Optional[str] = None,
    out_dtype: Optional[str] = None,
) -> Call:
    """2-d convolution (cross-correlation) of ``data`` with ``weight``; ``groups`` splits
    the channels (depthwise: ``groups = channels``)."""
    return make_call("relax.nn.conv2d", [data, weight], _attrs(
        Conv2DAttrs, 2, strides, padding, dilation, groups, data_layout, kernel_layout,
        out_layout, out_dtype, "OI"))


@register_op("relax.nn.conv3d", inputs=("data", "weight"), attrs=Conv3DAttrs,
             infer=lambda call, ctx: _infer_conv(call, ctx, 3, False), legalize=_legalize_conv,
             op_pattern="out_elemwise_fusable")
def conv3d(
    data: Expr, weight: Expr, strides: IntOrSeq = (1, 1, 1), padding: IntOrSeq = (0, 0, 0),
    dilation: IntOrSeq = (1, 1, 1), groups: int = 1, data_layout: str = "NCDHW",
    kernel_layout: str = "OIDHW", out_layout: Optional[str] = None,
    out_dtype: Optional[str] = None,
) -> Call:
    """3-d convolution (cross-correlation) of ``data`` with ``weight``; padding is an int,
    (d, h, w) or (front, top, left, back, bottom, right)."""
    return make_call("relax.nn.conv3d", [data, weight], _attrs(
        Conv3DAttrs, 3, strides, padding, dilation, groups, data_layout, kernel_layout,
        out_layout, out_dtype, "OI"))


def _output_padding(value: IntOrSeq, nsp: int, name: str) -> tuple:
    if not isinstance(value, int) and len(tuple(value)) not in (1, nsp):
        raise ValueError(f"{name}: output_padding must have 1 or {nsp} values, got {value!r}")
    return padding_tuple(value, nsp, f"{name}: output_padding")[:nsp]


def _legalize_conv_transpose(bb: Any, call: Call) -> Expr:
    from ...topi import nn

    a = call.attrs
    return te_call(bb, call, nn.conv_transpose, call.args[0], call.args[1], a.strides, a.padding,
                   a.output_padding, a.dilation, a.groups, a.data_layout, a.kernel_layout,
                   a.out_layout, a.out_dtype)


@register_op("relax.nn.conv1d_transpose", inputs=("data", "weight"),
             attrs=Conv1DTransposeAttrs, infer=lambda call, ctx: _infer_conv(call, ctx, 1, True),
             legalize=_legalize_conv_transpose, op_pattern="out_elemwise_fusable")
def conv1d_transpose(
    data: Expr, weight: Expr, strides: IntOrSeq = 1, padding: IntOrSeq = 0,
    output_padding: IntOrSeq = 0, dilation: IntOrSeq = 1, groups: int = 1,
    data_layout: str = "NCW", kernel_layout: str = "IOW", out_layout: Optional[str] = None,
    out_dtype: Optional[str] = None,
) -> Call:
    """1-d transposed convolution; the kernel is (in channels, out channels / groups, kw)
    in ``IOW``."""
    return make_call("relax.nn.conv1d_transpose", [data, weight], _attrs(
        Conv1DTransposeAttrs, 1, strides, padding, dilation, groups, data_layout, kernel_layout,
        out_layout, out_dtype, "IO",
        output_padding=_output_padding(output_padding, 1, "conv1d_transpose")))


@register_op("relax.nn.conv3d_transpose", inputs=("data", "weight"),
             attrs=Conv3DTransposeAttrs, infer=lambda call, ctx: _infer_conv(call, ctx, 3, True),
             legalize=_legalize_conv_transpose, op_pattern="out_elemwise_fusable")
def conv3d_transpose(
    data: Expr, weight: Expr, strides: IntOrSeq = (1, 1, 1), padding: IntOrSeq = (0, 0, 0),
    output_padding: IntOrSeq = (0, 0, 0), dilation: IntOrSeq = (1, 1, 1), groups: int = 1,
    data_layout: str = "NCDHW", kernel_layout: str = "IODHW", out_layout: Optional[str] = None,
    out_dtype: Optional[str] = None,
) -> Call:
    """3-d transposed convolution; the kernel is (in channels, out channels / groups, kd,
    kh, kw) in ``IODHW``."""
    return make_call("relax.nn.conv3d_transpose", [data, weight], _attrs(
        Conv3DTransposeAttrs, 3, strides, padding, dilation, groups, data_layout, kernel_layout,
        out_layout, out_dtype, "IO",
        output_padding=_output_padding(output_padding, 3, "conv3d_transpose")))


@register_op("relax.nn.conv2d_transpose", inputs=("data", "weight"), attrs=Conv2DTransposeAttrs,
             infer=lambda call, ctx: _infer_conv(call, ctx, 2, True),
             legalize=_legalize_conv_transpose, op_pattern="out_elemwise_fusable")
def conv2d_transpose(
    data: Expr, weight: Expr, strides: IntOrSeq = (1, 1), padding: IntOrSeq = (0, 0),
    output_padding: IntOrSeq = (0, 0), dilation: IntOrSeq = (1, 1), groups: int = 1,
    data_layout: str = "NCHW", kernel_layout: str = "IOHW", out_layout: Optional[str] = None,
    out_dtype: Optional[str] = None,
) -> Call:
    """2-d transposed convolution (the gradient of conv2d w.r.t. its input); the kernel is
    (in channels, out channels / groups, kh, kw) in ``IOHW``."""
    return make_call("relax.nn.conv2d_transpose", [data, weight], _attrs(
        Conv2DTransposeAttrs, 2, strides, padding, dilation, groups, data_layout, kernel_layout,
        out_layout, out_dtype, "IO",
        output_padding=_output_padding(output_padding, 2, "conv2d_transpose")))


# -- numpy semantics --------------------------------------------------------------------------
import numpy as _np  # noqa: E402

from tvm.ffi.dtype import to_numpy_dtype as _to_numpy_dtype  # noqa: E402

from .._numpy import to_layout as _to_layout  # noqa: E402


@conv2d.evaluate
def _eval_conv2d(call: Call, data: Any, weight: Any) -> Any:
    a = call.attrs
    x = _to_layout(data, a.data_layout, "NCHW")
    w = _to_layout(weight, a.kernel_layout, "OIHW")
    out = conv2d_nchw(x, w, a.strides, a.padding, a.dilation, a.groups,
                      _to_numpy_dtype(call.struct_info.dtype))
    return _to_layout(out, "NCHW", a.out_layout)


def conv2d_nchw(x: Any, w: Any, strides: Any, padding: Any, dilation: Any,
                groups: int, dtype: Any) -> Any:
    """Reference 2-d convolution (NCHW data, OIHW weight) computed in ``dtype``."""
    sh, sw = (list(strides) * 2)[:2]
    dh, dw = (list(dilation) * 2)[:2]
    pad = list(padding)
    pad = pad * 4 if len(pad) == 1 else pad + pad if len(pad) == 2 else pad
    top, left, bottom, right = (int(p) for p in pad)
    x = _np.pad(x.astype(dtype), ((0, 0), (0, 0), (top, bottom), (left, right)))
    w = w.astype(dtype)
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    oh = (h - dh * (kh - 1) - 1) // sh + 1
    ow = (wd - dw * (kw - 1) - 1) // sw + 1
    out = _np.zeros((n, o, oh, ow), dtype)
    og = o // groups
    for g in range(groups):
        xs = x[:, g * cg:(g + 1) * cg]
        ws = w[g * og:(g + 1) * og]
        for i in range(kh):
            for j in range(kw):
                patch = xs[:, :, i * dh: i * dh + sh * (oh - 1) + 1: sh,
                           j * dw: j * dw + sw * (ow - 1) + 1: sw]
                out[:, g * og:(g + 1) * og] += _np.einsum("nchw,oc->nohw", patch, ws[:, :, i, j])
    return out
