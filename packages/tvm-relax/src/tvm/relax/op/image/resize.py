"""``relax.image.resize1d``/``resize2d``/``resize3d``: nearest / linear / cubic resampling
of the spatial axes (``W``; ``H, W``; ``D, H, W``) of ``layout``."""

from __future__ import annotations

from typing import Any, Optional, Sequence, Union

from tvm.ffi import register_object

from ...expr import Call, Expr, ShapeExpr
from ...struct_info import ShapeStructInfo, StructInfo, canonical_dtype
from .._lower import te_call
from .._utils import out_tensor
from ..base import Attrs, OpSpec, arg_sinfo, arg_tensor, make_call, op_error, register_op
from ..nn._layout import SPATIAL, check_layout

__all__ = ["resize1d", "resize2d", "resize3d", "Resize1DAttrs", "Resize2DAttrs", "Resize3DAttrs"]

_METHODS = ("nearest_neighbor", "linear", "cubic")
_COORDS = ("half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel",
           "tf_half_pixel_for_nn")
_ROUNDING = ("round", "floor", "ceil", "round_prefer_floor", "round_prefer_ceil")


@register_object("relax.attrs.Resize1DAttrs")
class Resize1DAttrs(Attrs):
    layout: str = "NCW"
    method: str = "linear"
    coordinate_transformation_mode: str = "half_pixel"
    rounding_method: str = "round"
    cubic_alpha: float = -0.5
    cubic_exclude: int = 0
    out_dtype: str = "void"


@register_object("relax.attrs.Resize2DAttrs")
class Resize2DAttrs(Attrs):
    layout: str = "NCHW"
    method: str = "linear"
    coordinate_transformation_mode: str = "half_pixel"
    rounding_method: str = "round"
    cubic_alpha: float = -0.5
    cubic_exclude: int = 0
    out_dtype: str = "void"


@register_object("relax.attrs.Resize3DAttrs")
class Resize3DAttrs(Attrs):
    layout: str = "NCDHW"
    method: str = "linear"
    coordinate_transformation_mode: str = "half_pixel"
    rounding_method: str = "round"
    cubic_alpha: float = -0.5
    cubic_exclude: int = 0
    out_dtype: str = "void"


_ATTRS = {1: Resize1DAttrs, 2: Resize2DAttrs, 3: Resize3DAttrs}
_SIZE_NAMES = {1: "(width,)", 2: "(height, width)", 3: "(depth, height, width)"}


def _choice(name: str, value: str, allowed: Sequence[str], what: str) -> str:
    if value not in allowed:
        raise ValueError(f"{name}: {what} must be one of {', '.join(allowed)}, got {value!r}")
    return value


def _infer_resize(call: Call, ctx: Any) -> StructInfo:
    x = arg_tensor(call, 0)
    size = arg_sinfo(call, 1)
    a = call.attrs
    nsp = len(a.layout) - 2
    if not isinstance(size, ShapeStructInfo) or size.ndim not in (-1, nsp):
        raise op_error(call, f"argument 'size' must be a shape of {nsp} value(s) "
                             f"{_SIZE_NAMES[nsp]}")
    if x.ndim not in (-1, nsp + 2):
        raise op_error(call, f"data must have {nsp + 2} dimensions, got {x.ndim}")
    dtype = x.dtype if a.out_dtype == "void" else a.out_dtype
    if x.shape_values is None or size.values is None:
        return out_tensor(x, None, dtype, nsp + 2)
    dims = dict(zip(a.layout, x.shape_values))
    dims.update(zip(SPATIAL[nsp], size.values))
    return out_tensor(x, [dims[c] for c in a.layout], dtype)


def _legalize_resize(bb: Any, call: Call) -> Expr:
    from ...topi import image

    a = call.attrs
    size = arg_sinfo(call, 1).values
    return te_call(bb, call, image.resize, call.args[0], size, a.layout, a.method,
                   a.coordinate_transformation_mode, a.rounding_method, a.cubic_alpha,
                   a.cubic_exclude, a.out_dtype)


def _declare(nsp: int) -> OpSpec:
    name = f"resize{nsp}d"
    op_name = f"relax.image.{name}"
    attrs_cls = _ATTRS[nsp]
    default_layout = attrs_cls().layout

    def builder(
        data: Expr,
        size: Union[Expr, int, Sequence[Any]],
        layout: str = default_layout,
        method: str = "linear",
        coordinate_transformation_mode: str = "half_pixel",
        rounding_method: str = "round",
        cubic_alpha: float = -0.5,
        cubic_exclude: int = 0,
        out_dtype: Optional[str] = None,
    ) -> Call:
        if method == "nearest":
            method = "nearest_neighbor"
        if isinstance(size, int):
            size = (size,) * nsp
        if isinstance(size, (list, tuple)):
            if len(size) == 1:
                size = (size[0],) * nsp
            size = ShapeExpr(size)
        return make_call(op_name, [data, size], attrs_cls(
            layout=check_layout(layout, "NC", nsp, f"{name}: layout"),
            method=_choice(name, method, _METHODS, "method"),
            coordinate_transformation_mode=_choice(name, coordinate_transformation_mode, _COORDS,
                                                   "coordinate_transformation_mode"),
            rounding_method=_choice(name, rounding_method, _ROUNDING, "rounding_method"),
            cubic_alpha=float(cubic_alpha), cubic_exclude=int(cubic_exclude),
            out_dtype=canonical_dtype(out_dtype, f"{name}: out_dtype")))

    builder.__name__ = builder.__qualname__ = name
    builder.__doc__ = f"""``data`` resampled to ``size`` = {_SIZE_NAMES[nsp]}.

    ``method``: nearest_neighbor (alias nearest), linear or cubic (Keys' kernel with
    ``cubic_alpha``; ``cubic_exclude`` drops taps outside the input and renormalises).
    ``coordinate_transformation_mode`` maps output to input positions: half_pixel,
    align_corners, asymmetric, pytorch_half_pixel, tf_half_pixel_for_nn.
    ``rounding_method`` (nearest only): round (half away from zero), floor, ceil,
    round_prefer_floor, round_prefer_ceil.
    """
    return register_op(op_name, inputs=("data", "size"), attrs=attrs_cls, infer=_infer_resize,
                       legalize=_legalize_resize, op_pattern="injective")(builder)


resize1d = _declare(1)
resize2d = _declare(2)
resize3d = _declare(3)
