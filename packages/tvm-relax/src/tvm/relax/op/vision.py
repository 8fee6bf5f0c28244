"""Vision operators (``relax.vision.*``): ``roi_align``."""

from __future__ import annotations

from typing import Any, Sequence, Union

from tvm.ffi import register_object

from ..analysis.struct_info_analysis import prim_equal
from ..expr import Call, Expr
from ..struct_info import StructInfo
from ._elementwise import is_int_or_bool
from ._infer import dim_str
from ._lower import prim_func_call
from ._utils import check_float, const_dim, out_tensor
from .base import Attrs, arg_tensor, make_call, op_error, register_op
from .nn._layout import window_tuple

__all__ = ["roi_align", "ROIAlignAttrs"]


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
