"""Vision operators (``relax.vision.*``): ``roi_align``, ``non_max_suppression``,
``deform_conv2d``."""

from __future__ import annotations

from typing import Any, Optional, Sequence, Union

from tvm.ffi import register_object

from ..analysis.struct_info_analysis import prim_equal
from ..expr import Call, Expr, TupleGetItem
from ..struct_info import StructInfo, TensorStructInfo
from ._elementwise import is_int_or_bool
from ._infer import dim_str
from ._lower import prim_func_call, te_call
from ._utils import check_float, const_dim, out_tensor, simplify_dims
from .base import Attrs, arg_tensor, make_call, op_error, register_op
from .nn._layout import padding_tuple, window_tuple

__all__ = ["roi_align", "ROIAlignAttrs", "non_max_suppression", "NonMaxSuppressionAttrs",
           "deform_conv2d", "DeformConv2DAttrs"]


@register_object("relax.attrs.ROIAlignAttrs")
class ROIAlignAttrs(Attrs):
    """``output_size`` (height, width); ``mode``: avg or max;
    ``coordinate_transformation_mode``: half_pixel or output_half_pixel."""

    output_size: tuple = (1, 1)
    spatial_scale: float = 1.0
    sampling_ratio: int = 0
    mode: str = "avg"
    coordinate_transformation_mode: str = "half_pixel"
    layout: str = "NCHW"


@register_op("relax.vision.roi_align", inputs=("data", "rois", "batch_indices"),
             attrs=ROIAlignAttrs, op_pattern="opaque")
def roi_align(
    data: Expr, rois: Expr, batch_indices: Expr, output_size: Union[int, Sequence[int]] = 1,
    spatial_scale: float = 1.0, sampling_ratio: int = 0, mode: str = "avg",
    coordinate_transformation_mode: str = "half_pixel", layout: str = "NCHW",
) -> Call:
    """ONNX RoiAlign: for each box ``rois[r] = (x1, y1, x2, y2)`` (input coordinates before
    ``spatial_scale``) of image ``batch_indices[r]``, an ``output_size`` grid of bins, each
    the average (``mode="avg"``) of bilinear samples on a ``sampling_ratio`` x
    ``sampling_ratio`` grid (0: ``ceil(box size / output size)`` per axis).  ``mode="max"``
    is ONNX's: the max over samples of the largest weighted corner.  With
    ``coordinate_transformation_mode="half_pixel"`` box corners shift by -0.5 pixel;
    ``output_half_pixel`` (the legacy behaviour) does not shift and makes boxes at least
    1 x 1.  ``data`` is NCHW (or NHWC); the result is (num_rois, C, out_h, out_w)
    (NHWC: (num_rois, out_h, out_w, C)).
    """
    if mode not in ("avg", "max"):
        raise ValueError(f"roi_align: mode must be 'avg' or 'max', got {mode!r}")
    if coordinate_transformation_mode not in ("half_pixel", "output_half_pixel"):
        raise ValueError("roi_align: coordinate_transformation_mode must be 'half_pixel' or "
                         f"'output_half_pixel', got {coordinate_transformation_mode!r}")
    if layout not in ("NCHW", "NHWC"):
        raise ValueError(f"roi_align: layout must be 'NCHW' or 'NHWC', got {layout!r}")
    if int(sampling_ratio) < 0:
        raise ValueError(f"roi_align: sampling_ratio must be >= 0, got {sampling_ratio}")
    return make_call("relax.vision.roi_align", [data, rois, batch_indices], ROIAlignAttrs(
        output_size=window_tuple(output_size, 2, "roi_align: output_size"),
        spatial_scale=float(spatial_scale), sampling_ratio=int(sampling_ratio), mode=mode,
        coordinate_transformation_mode=coordinate_transformation_mode, layout=layout))


@roi_align.infer
def _infer_roi_align(call: Call, ctx: Any) -> StructInfo:
    data, rois, idx = arg_tensor(call, 0), arg_tensor(call, 1), arg_tensor(call, 2)
    check_float(call, data, "data")
    check_float(call, rois, "rois")
    if not idx.is_unknown_dtype and (not is_int_or_bool(idx.dtype) or idx.dtype == "bool"):
        raise op_error(call, f"batch_indices must be an integer tensor, got dtype {idx.dtype}")
    for name, t, nd in (("data", data, 4), ("rois", rois, 2), ("batch_indices", idx, 1)):
        if t.ndim not in (-1, nd):
            raise op_error(call, f"{name} must have {nd} dimension(s), got {t.ndim}")
    a = call.attrs
    if data.shape_values is None or rois.shape_values is None:
        return out_tensor(data, None, ndim=4)
    rv = rois.shape_values
    if const_dim(rv[1]) not in (None, 4):
        raise op_error(call, f"rois must be (num_rois, 4) boxes (x1, y1, x2, y2), got "
                             f"{dim_str(rv[1])} columns")
    if idx.shape_values is not None and prim_equal(
            idx.shape_values[0], rv[0], getattr(ctx, "analyzer", None)) is False:
        raise op_error(call, f"batch_indices has {dim_str(idx.shape_values[0])} entries for "
                             f"{dim_str(rv[0])} boxes")
    channels = dict(zip(a.layout, data.shape_values))["C"]
    oh, ow = a.output_size
    shape = [rv[0], channels, oh, ow] if a.layout == "NCHW" else [rv[0], oh, ow, channels]
    return out_tensor(data, shape, ctx=ctx)


@roi_align.legalize
def _legalize_roi_align(bb: Any, call: Call) -> Expr:
    from ..topi.vision import roi_align_func

    a = call.attrs
    data, rois, idx = (arg.struct_info for arg in call.args)
    func = roi_align_func(data.shape_values, data.dtype, rois.shape_values, rois.dtype,
                          idx.dtype, a.output_size, a.spatial_scale, a.sampling_ratio, a.mode,
                          a.coordinate_transformation_mode == "half_pixel", a.layout)
    return prim_func_call(bb, call, func, list(call.args), call.struct_info)


# -- non_max_suppression -----------------------------------------------------------------------
@register_object("relax.attrs.NonMaxSuppressionAttrs")
class NonMaxSuppressionAttrs(Attrs):
    """``center_point_box``: 0 for ``[y1, x1, y2, x2]`` corner boxes (either corner first),
    1 for ``[x_center, y_center, width, height]``."""

    center_point_box: int = 0


@register_op("relax.vision.non_max_suppression",
             inputs=("boxes", "scores", "max_output_boxes_per_class", "iou_threshold",
                     "score_threshold"),
             attrs=NonMaxSuppressionAttrs, op_pattern="opaque", RequiresArgumentShapes=False)
def non_max_suppression(
    boxes: Expr, scores: Expr, max_output_boxes_per_class: Union[Expr, int] = 0,
    iou_threshold: Union[Expr, float] = 0.0, score_threshold: Union[Expr, float, None] = None,
    center_point_box: int = 0,
) -> Call:
    """ONNX NonMaxSuppression: for each batch and class, the boxes kept by greedy
    non-maximum suppression, as int64 rows ``(batch, class, box)`` (their number is known
    at run time).

    ``boxes`` (B, N, 4), ``scores`` (B, C, N).  Per class, boxes scoring above
    ``score_threshold`` (None or -inf: every box) are visited by descending score (equal
    scores by box index) and selected unless their IoU with an already selected box
    exceeds ``iou_threshold``, up to ``max_output_boxes_per_class`` (ONNX's default 0
    selects nothing).  The three limits are numbers or one-element tensors computed at run
    time.
    """
    if int(center_point_box) not in (0, 1):
        raise ValueError(f"non_max_suppression: center_point_box must be 0 or 1, got "
                         f"{center_point_box}")
    limits = [_limit(max_output_boxes_per_class, "int64"), _limit(iou_threshold, "float32"),
              _limit(float("-inf") if score_threshold is None else score_threshold, "float32")]
    return make_call("relax.vision.non_max_suppression", [boxes, scores, *limits],
                     NonMaxSuppressionAttrs(center_point_box=int(center_point_box)))


def _limit(value: Any, dtype: str) -> Expr:
    if isinstance(value, Expr):
        return value
    import numpy as np

    from ..expr import const

    return const(np.array(value, dtype=dtype), dtype)


@non_max_suppression.infer
def _infer_non_max_suppression(call: Call, ctx: Any) -> StructInfo:
    boxes, scores = arg_tensor(call, 0), arg_tensor(call, 1)
    check_float(call, boxes, "boxes")
    check_float(call, scores, "scores")
    for name, t in (("boxes", boxes), ("scores", scores)):
        if t.ndim not in (-1, 3):
            raise op_error(call, f"{name} must have 3 dimension(s), got {t.ndim}")
    if boxes.shape_values is not None:
        if const_dim(boxes.shape_values[2]) not in (None, 4):
            raise op_error(call, f"boxes must be (batch, boxes, 4), got "
                                 f"{dim_str(boxes.shape_values[2])} coordinates")
        if scores.shape_values is not None:
            analyzer = getattr(ctx, "analyzer", None)
            for what, b, s in (("batches", 0, 0), ("boxes", 1, 2)):
                bd, sd = boxes.shape_values[b], scores.shape_values[s]
                if prim_equal(bd, sd, analyzer) is False:
                    raise op_error(call, f"boxes has {dim_str(bd)} {what} but scores has "
                                         f"{dim_str(sd)}")
    for k, name in ((2, "max_output_boxes_per_class"), (3, "iou_threshold"),
                    (4, "score_threshold")):
        t = arg_tensor(call, k)
        if not t.is_unknown_dtype:
            integer = is_int_or_bool(t.dtype) and t.dtype != "bool"
            if (k == 2) != integer:
                kind = "an integer" if k == 2 else "a floating-point"
                raise op_error(call, f"{name} must be {kind} tensor, got dtype {t.dtype}")
        if t.shape_values is not None and any(const_dim(d) not in (None, 1)
                                              for d in t.shape_values):
            raise op_error(call, f"{name} must hold one value, got shape "
                                 f"({', '.join(dim_str(d) for d in t.shape_values)})")
    return TensorStructInfo(None, "int64", 2, boxes.vdevice)


@non_max_suppression.legalize
def _legalize_non_max_suppression(bb: Any, call: Call) -> Expr:
    from ..topi import data_dependent
    from ..topi.nms import nms_func
    from .dynamic import bind_count

    sinfos = [a.struct_info for a in call.args]
    if not all(isinstance(s, TensorStructInfo) and s.shape_values is not None
               and not s.is_unknown_dtype for s in sinfos):
        return call
    boxes, scores, *limits = sinfos
    func = nms_func(boxes.shape_values, boxes.dtype, scores.shape_values, scores.dtype,
                    [t.shape_values for t in limits], [t.dtype for t in limits],
                    call.attrs.center_point_box)
    b, n = boxes.shape_values[0], boxes.shape_values[1]
    rows = b * scores.shape_values[1] * n
    out = bb.emit(prim_func_call(bb, call, func, list(call.args), [
        TensorStructInfo([rows, 3], "int64", vdevice=boxes.vdevice),
        TensorStructInfo([1], "int64", vdevice=boxes.vdevice)]))
    k = bind_count(bb, bb.emit(TupleGetItem(out, 1)), "num_selected")
    return te_call(bb, call, data_dependent.crop, bb.emit(TupleGetItem(out, 0)), 0, k,
                   primfunc_name_hint="non_max_suppression_crop")


# -- deform_conv2d -----------------------------------------------------------------------------
@register_object("relax.attrs.DeformConv2DAttrs")
class DeformConv2DAttrs(Attrs):
    """``padding``: (top, left, bottom, right); ``offset_groups``: input channel groups that
    share one set of offsets (and mask)."""

    strides: tuple = (1, 1)
    padding: tuple = (0, 0, 0, 0)
    dilation: tuple = (1, 1)
    groups: int = 1
    offset_groups: int = 1


@register_op("relax.vision.deform_conv2d", inputs=None, attrs=DeformConv2DAttrs,
             op_pattern="opaque")
def deform_conv2d(
    data: Expr, offset: Expr, weight: Expr, mask: Optional[Expr] = None,
    strides: Union[int, Sequence[int]] = 1, padding: Union[int, Sequence[int]] = 0,
    dilation: Union[int, Sequence[int]] = 1, groups: int = 1, offset_groups: int = 1,
) -> Call:
    """Deformable 2-d convolution (ONNX DeformConv without bias; torchvision
    ``deform_conv2d``): ``data`` (N, C, H, W), ``weight`` (OC, C / groups, kh, kw),
    ``offset`` (N, offset_groups * 2 * kh * kw, OH, OW) holding (dy, dx) per offset group
    and kernel tap, optional ``mask`` (N, offset_groups * kh * kw, OH, OW) scaling each
    sample.  Tap ``(i, j)`` of output ``(y, x)`` reads ``data`` bilinearly (zero outside the
    image) at ``(y * sh - top + i * dh + dy, x * sw - left + j * dw + dx)``.
    """
    for name, v in (("groups", groups), ("offset_groups", offset_groups)):
        if int(v) < 1:
            raise ValueError(f"deform_conv2d: {name} must be positive, got {v}")
    args = [data, offset, weight] + ([] if mask is None else [mask])
    return make_call("relax.vision.deform_conv2d", args, DeformConv2DAttrs(
        strides=window_tuple(strides, 2, "deform_conv2d: strides"),
        padding=padding_tuple(padding, 2, "deform_conv2d: padding"),
        dilation=window_tuple(dilation, 2, "deform_conv2d: dilation"),
        groups=int(groups), offset_groups=int(offset_groups)))


def _deform_out(a: Any, h: Any, w: Any, kh: Any, kw: Any) -> list:
    return [(h + a.padding[0] + a.padding[2] - a.dilation[0] * (kh - 1) - 1) // a.strides[0] + 1,
            (w + a.padding[1] + a.padding[3] - a.dilation[1] * (kw - 1) - 1) // a.strides[1] + 1]


@deform_conv2d.infer
def _infer_deform_conv2d(call: Call, ctx: Any) -> StructInfo:
    if len(call.args) not in (3, 4):
        raise op_error(call, f"expects 3 or 4 arguments (data, offset, weight[, mask]), got "
                             f"{len(call.args)}")
    names = ("data", "offset", "weight", "mask")
    ts = [arg_tensor(call, k) for k in range(len(call.args))]
    for name, t in zip(names, ts):
        check_float(call, t, name)
        if t.ndim not in (-1, 4):
            raise op_error(call, f"{name} must have 4 dimensions, got {t.ndim}")
        if not t.is_unknown_dtype and not ts[0].is_unknown_dtype and t.dtype != ts[0].dtype:
            raise op_error(call, f"{name} ({t.dtype}) and data ({ts[0].dtype}) dtypes differ")
    data, offset, weight = ts[:3]
    if data.shape_values is None or weight.shape_values is None:
        return out_tensor(data, None, ndim=4)
    a = call.attrs
    analyzer = getattr(ctx, "analyzer", None)
    n, c, h, w = data.shape_values
    oc, cg, kh, kw = weight.shape_values
    taps = kh * kw
    checks = [(c, cg * a.groups, "data channels", "groups * weight input channels")]
    expected = {1: a.offset_groups * 2 * taps, 3: a.offset_groups * taps}
    oh, ow = _deform_out(a, h, w, kh, kw)
    for k in range(1, len(ts), 2):
        t = ts[k]
        if t.shape_values is None:
            continue
        tv = t.shape_values
        checks += [(tv[0], n, f"{names[k]} batch", "data batch"),
                   (tv[1], expected[k], f"{names[k]} channels",
                    "offset_groups * 2 * kernel taps" if k == 1 else
                    "offset_groups * kernel taps"),
                   (tv[2], oh, f"{names[k]} height", "the output height"),
                   (tv[3], ow, f"{names[k]} width", "the output width")]
    for got, want, what, of in checks:
        if prim_equal(got, want, analyzer) is False:
            (want,) = simplify_dims(ctx, [want])
            raise op_error(call, f"{what} is {dim_str(got)}, expected {dim_str(want)} "
                                 f"({of})")
    for what, total, parts in (("weight output channels", oc, a.groups),
                               ("data channels", c, a.offset_groups)):
        if const_dim(total) is not None and const_dim(total) % parts:
            raise op_error(call, f"{what} ({dim_str(total)}) are not divisible by {parts}")
    return out_tensor(data, [n, oc, oh, ow], ctx=ctx)


@deform_conv2d.legalize
def _legalize_deform_conv2d(bb: Any, call: Call) -> Expr:
    from ..topi.vision import deform_conv2d as compute

    a = call.attrs
    mask = call.args[3] if len(call.args) == 4 else None
    return te_call(bb, call, compute, call.args[0], call.args[1], call.args[2], mask,
                   list(a.strides), list(a.padding), list(a.dilation), a.groups, a.offset_groups)


@deform_conv2d.evaluate
def _eval_deform_conv2d(call: Call, data: Any, offset: Any, weight: Any,
                        mask: Any = None) -> Any:
    import numpy as np

    a = call.attrs
    dt = data.dtype
    n, c, h, w = data.shape
    oc, cg, kh, kw = weight.shape
    oh, ow = offset.shape[2:]
    ys = (np.arange(oh) * a.strides[0] - a.padding[0]).reshape(1, -1, 1)
    xs = (np.arange(ow) * a.strides[1] - a.padding[1]).reshape(1, 1, -1)
    cpg = c // a.offset_groups
    cols = np.zeros((n, c, kh, kw, oh, ow), dt)
    nidx = np.arange(n).reshape(-1, 1, 1, 1)
    for g in range(a.offset_groups):
        chans = np.arange(g * cpg, (g + 1) * cpg).reshape(1, -1, 1, 1)
        for i in range(kh):
            for j in range(kw):
                k = i * kw + j
                py = (ys + i * a.dilation[0] + offset[:, g * 2 * kh * kw + 2 * k]).astype(dt)
                px = (xs + j * a.dilation[1] + offset[:, g * 2 * kh * kw + 2 * k + 1]).astype(dt)
                y0f, x0f = np.floor(py), np.floor(px)
                ly, lx = py - y0f, px - x0f
                y0, x0 = y0f.astype(np.int64), x0f.astype(np.int64)
                val = np.zeros((n, cpg, oh, ow), dt)
                for dy, wy in ((0, 1 - ly), (1, ly)):
                    for dx, wx in ((0, 1 - lx), (1, lx)):
                        yy, xx = y0 + dy, x0 + dx
                        ok = (yy >= 0) & (yy < h) & (xx >= 0) & (xx < w)
                        v = data[nidx, chans, np.clip(yy, 0, h - 1)[:, None],
                                 np.clip(xx, 0, w - 1)[:, None]]
                        val += np.where(ok[:, None], v, 0).astype(dt) * (wy * wx)[:, None]
                if mask is not None:
                    val *= mask[:, g * kh * kw + k][:, None]
                cols[:, g * cpg:(g + 1) * cpg, i, j] = val
    out = np.zeros((n, oc, oh, ow), dt)
    opg = oc // a.groups
    for g in range(a.groups):
        out[:, g * opg:(g + 1) * opg] = np.einsum(
            "ncijyx,ocij->noyx", cols[:, g * cg:(g + 1) * cg], weight[g * opg:(g + 1) * opg])
    return out
