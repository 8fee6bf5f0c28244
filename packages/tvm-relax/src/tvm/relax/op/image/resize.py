"""``relax.image.resize2d``: nearest / linear / cubic resampling of the H and W axes."""

from __future__ import annotations

from typing import Any, Optional, Sequence, Union

from tvm.ffi import register_object

from ...expr import Call, Expr, ShapeExpr
from ...struct_info import ShapeStructInfo, StructInfo, canonical_dtype
from .._lower import te_call
from .._utils import out_tensor
from ..base import Attrs, arg_sinfo, arg_tensor, make_call, op_error, register_op
from ..nn._layout import check_layout

__all__ = ["resize2d", "Resize2DAttrs"]

_METHODS = ("nearest_neighbor", "linear", "cubic")
_COORDS = ("half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel",
           "tf_half_pixel_for_nn")
_ROUNDING = ("round", "floor", "ceil", "round_prefer_floor", "round_prefer_ceil")


@register_object("relax.attrs.Resize2DAttrs")
class Resize2DAttrs(Attrs):
    layout: str = "NCHW"
    method: str = "linear"
    coordinate_transformation_mode: str = "half_pixel"
    rounding_method: str = "round"
    cubic_alpha: float = -0.5
    cubic_exclude: int = 0
    out_dtype: str = "void"


def _choice(value: str, allowed: Sequence[str], what: str) -> str:
    if value not in allowed:
        raise ValueError(f"resize2d: {what} must be one of {', '.join(allowed)}, got {value!r}")
    return value


@register_op("relax.image.resize2d", inputs=("data", "size"), attrs=Resize2DAttrs,
             op_pattern="injective")
def resize2d(
    data: Expr,
    size: Union[Expr, Sequence[Any]],
    layout: str = "NCHW",
    method: str = "linear",
    coordinate_transformation_mode: str = "half_pixel",
    rounding_method: str = "round",
    cubic_alpha: float = -0.5,
    cubic_exclude: int = 0,
    out_dtype: Optional[str] = None,
) -> Call:
    """``data`` resampled to ``size`` = (height, width).

    ``method``: nearest_neighbor (alias nearest), linear or cubic (Keys' kernel with
    ``cubic_alpha``; ``cubic_exclude`` drops taps outside the input and renormalises).
    ``coordinate_transformation_mode`` maps output to input positions: half_pixel,
    align_corners, asymmetric, pytorch_half_pixel, tf_half_pixel_for_nn.
    ``rounding_method`` (nearest only): round (half away from zero), floor, ceil,
    round_prefer_floor, round_prefer_ceil.
    """
    if method == "nearest":
        method = "nearest_neighbor"
    if isinstance(size, int):
        size = (size, size)
    if isinstance(size, (list, tuple)):
        if len(size) == 1:
            size = (size[0], size[0])
        size = ShapeExpr(size)
    return make_call("relax.image.resize2d", [data, size], Resize2DAttrs(
        layout=check_layout(layout, "NC", 2, "resize2d: layout"),
        method=_choice(method, _METHODS, "method"),
        coordinate_transformation_mode=_choice(coordinate_transformation_mode, _COORDS,
                                               "coordinate_transformation_mode"),
        rounding_method=_choice(rounding_method, _ROUNDING, "rounding_method"),
        cubic_alpha=float(cubic_alpha), cubic_exclude=int(cubic_exclude),
        out_dtype=canonical_dtype(out_dtype, "resize2d: out_dtype")))


@resize2d.infer
def _infer_resize2d(call: Call, ctx: Any) -> StructInfo:
    x = arg_tensor(call, 0)
    size = arg_sinfo(call, 1)
    if not isinstance(size, ShapeStructInfo) or size.ndim not in (-1, 2):
        raise op_error(call, "argument 'size' must be a shape of 2 values (height, width)")
    if x.ndim not in (-1, 4):
        raise op_error(call, f"data must have 4 dimensions, got {x.ndim}")
    a = call.attrs
    dtype = x.dtype if a.out_dtype == "void" else a.out_dtype
    if x.shape_values is None or size.values is None:
        return out_tensor(x, None, dtype, 4)
    dims = dict(zip(a.layout, x.shape_values))
    dims["H"], dims["W"] = size.values
    return out_tensor(x, [dims[c] for c in a.layout], dtype)


@resize2d.legalize
def _legalize_resize2d(bb: Any, call: Call) -> Expr:
    from ...topi import image

    a = call.attrs
    size = arg_sinfo(call, 1).values
    return te_call(bb, call, image.resize2d, call.args[0], size, a.layout, a.method,
                   a.coordinate_transformation_mode, a.rounding_method, a.cubic_alpha,
                   a.cubic_exclude, a.out_dtype)
