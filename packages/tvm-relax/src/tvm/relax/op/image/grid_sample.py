"""``relax.image.grid_sample``: sample an image at normalised grid positions (ONNX
GridSample, PyTorch ``grid_sample``) over 1, 2 or 3 spatial axes."""

from __future__ import annotations

from typing import Any

from tvm.ffi import register_object

from ...analysis.struct_info_analysis import prim_equal
from ...expr import Call, Expr
from ...struct_info import StructInfo
from .._infer import dim_str
from .._lower import te_call
from .._utils import check_float, const_dim, out_tensor
from ..base import Attrs, arg_tensor, make_call, op_error, register_op

__all__ = ["grid_sample", "GridSampleAttrs"]

_METHODS = {"bilinear": "bilinear", "linear": "bilinear", "nearest": "nearest",
            "bicubic": "bicubic", "cubic": "bicubic"}
_PADDING = ("zeros", "border", "reflection")


@register_object("relax.attrs.GridSampleAttrs")
class GridSampleAttrs(Attrs):
    """``method``: bilinear, nearest or bicubic; ``padding_mode``: zeros, border or
    reflection; ``align_corners``: -1 and 1 are the centres of the corner pixels."""

    method: str = "bilinear"
    padding_mode: str = "zeros"
    align_corners: bool = False


@register_op("relax.image.grid_sample", inputs=("data", "grid"), attrs=GridSampleAttrs,
             op_pattern="injective")
def grid_sample(
    data: Expr, grid: Expr, method: str = "bilinear", padding_mode: str = "zeros",
    align_corners: bool = False,
) -> Call:
    """``data`` (N, C, *in) sampled at ``grid`` (N, *out, k) -> (N, C, *out), k = 1..3.

    ``grid[..., :]`` holds normalised coordinates in [-1, 1], fastest axis first ((x, y) for
    NCHW data, (x, y, z) for NCDHW).  ``method``: bilinear (alias linear), nearest or
    bicubic (alias cubic, Keys' kernel a = -0.75); ``padding_mode``: zeros, border or
    reflection; ``align_corners`` maps -1 / 1 to the centres of the corner pixels instead
    of their outer edges.  Semantics of ONNX GridSample.
    """
    if method not in _METHODS:
        raise ValueError(f"grid_sample: method must be one of {', '.join(_METHODS)}, got "
                         f"{method!r}")
    if padding_mode not in _PADDING:
        raise ValueError(f"grid_sample: padding_mode must be one of {', '.join(_PADDING)}, got "
                         f"{padding_mode!r}")
    return make_call("relax.image.grid_sample", [data, grid], GridSampleAttrs(
        method=_METHODS[method], padding_mode=padding_mode, align_corners=bool(align_corners)))


@grid_sample.infer
def _infer_grid_sample(call: Call, ctx: Any) -> StructInfo:
    data, grid = arg_tensor(call, 0), arg_tensor(call, 1)
    check_float(call, grid, "grid")
    ndim = data.ndim if data.ndim != -1 else grid.ndim
    if ndim != -1 and not 3 <= ndim <= 5:
        raise op_error(call, f"data must have 3 to 5 dimensions (N, C, 1 to 3 spatial axes), "
                             f"got {ndim}")
    if data.ndim != -1 and grid.ndim != -1 and data.ndim != grid.ndim:
        raise op_error(call, f"grid must have as many dimensions as data ({data.ndim}), got "
                             f"{grid.ndim}")
    if data.shape_values is None or grid.shape_values is None:
        return out_tensor(data, None, ndim=ndim)
    dv, gv = data.shape_values, grid.shape_values
    nsp = ndim - 2
    if const_dim(gv[-1]) is not None and const_dim(gv[-1]) != nsp:
        raise op_error(call, f"the last axis of grid must have {nsp} coordinates for "
                             f"{nsp}-d data, got {dim_str(gv[-1])}")
    if prim_equal(dv[0], gv[0], getattr(ctx, "analyzer", None)) is False:
        raise op_error(call, f"data and grid batch sizes differ: {dim_str(dv[0])} vs "
                             f"{dim_str(gv[0])}")
    return out_tensor(data, [dv[0], dv[1], *gv[1:-1]], ctx=ctx)


@grid_sample.legalize
def _legalize_grid_sample(bb: Any, call: Call) -> Expr:
    from ...topi import image

    a = call.attrs
    return te_call(bb, call, image.grid_sample, call.args[0], call.args[1], a.method,
                   a.padding_mode, a.align_corners)
