"""Resize over 1, 2 or 3 spatial axes (nearest, linear, cubic) with ONNX/TVM coordinate
transformation modes, and ``grid_sample``."""

from __future__ import annotations

import itertools
from typing import Any, Optional, Sequence

from tvm import te, tir
from tvm.tir.expr import GE, IntImm, LT, Max, Min, PrimExpr, Select

from ._util import cast, int64, is_float
from .nn import Layout

__all__ = ["resize", "resize2d", "source_coordinate", "COORDINATE_MODES", "ROUNDING_METHODS"]

COORDINATE_MODES = (
    "half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel", "tf_half_pixel_for_nn",
)
ROUNDING_METHODS = ("round", "floor", "ceil", "round_prefer_floor", "round_prefer_ceil")


def source_coordinate(x: PrimExpr, in_size: PrimExpr, out_size: PrimExpr, mode: str,
                      ftype: str) -> PrimExpr:
    """The input coordinate (float) that output position ``x`` samples."""
    xf, n, m = cast(x, ftype), cast(in_size, ftype), cast(out_size, ftype)
    half = cast(0.5, ftype)
    if mode == "half_pixel":
        return (xf + half) * n / m - half
    if mode == "pytorch_half_pixel":
        return Select(tir.GT(int64(out_size), IntImm("int64", 1)), (xf + half) * n / m - half,
                      cast(0, ftype))
    if mode == "align_corners":
        one = cast(1, ftype)
        return Select(tir.GT(int64(out_size), IntImm("int64", 1)), xf * (n - one) / (m - one),
                      cast(0, ftype))
    if mode == "asymmetric":
        return xf * n / m
    if mode == "tf_half_pixel_for_nn":
        return (xf + half) * n / m
    raise ValueError(f"unknown coordinate_transformation_mode {mode!r}")


def _round(x: PrimExpr, method: str) -> PrimExpr:
    half = cast(0.5, x.dtype)
    if method == "round":  # half away from zero
        return Select(GE(x, cast(0, x.dtype)), tir.floor(x + half), tir.ceil(x - half))
    if method == "floor":
        return tir.floor(x)
    if method == "ceil":
        return tir.ceil(x)
    if method == "round_prefer_floor":
        return tir.ceil(x - half)
    if method == "round_prefer_ceil":
        return tir.floor(x + half)
    raise ValueError(f"unknown rounding_method {method!r}")


def _clamp(i: PrimExpr, n: PrimExpr) -> PrimExpr:
    return Min(Max(i, IntImm("int64", 0)), int64(n) - 1)


def _cubic_weight(d: PrimExpr, a: float) -> PrimExpr:
    """Keys' cubic kernel at distance ``d`` (>= 0) with parameter ``a``."""
    ft = d.dtype
    a_ = cast(a, ft)
    one, two = cast(1, ft), cast(2, ft)
    near = ((a_ + two) * d - (a_ + cast(3, ft))) * d * d + one
    far = ((a_ * d - cast(5, ft) * a_) * d + cast(8, ft) * a_) * d - cast(4, ft) * a_
    return Select(tir.LE(d, one), near, Select(LT(d, two), far, cast(0, ft)))


def resize(
    data: te.Tensor, size: Sequence[Any], layout: str = "NCHW", method: str = "linear",
    coordinate_transformation_mode: str = "half_pixel", rounding_method: str = "round",
    cubic_alpha: float = -0.5, cubic_exclude: int = 0, out_dtype: Optional[str] = None,
) -> te.Tensor:
    """``data`` resampled to ``size`` (one output length per spatial letter of ``layout``,
    in layout order: (w,), (h, w) or (d, h, w))."""
    dl = Layout(layout)
    dims = dl.dims(data.shape)
    spatial = dl.spatial
    if len(size) != len(spatial):
        raise ValueError(f"resize: size {list(size)} must have one value per spatial axis of "
                         f"{layout!r}")
    n_in = [dims[c] for c in spatial]
    n_out = [int64(s) for s in size]
    out_dtype = out_dtype if out_dtype and out_dtype != "void" else data.dtype
    ft = data.dtype if is_float(data.dtype) else "float32"
    shape = tuple(dl.index({**dims, **dict(zip(spatial, n_out))}))
    mode = coordinate_transformation_mode

    def finish(value: PrimExpr) -> PrimExpr:
        if not is_float(out_dtype):
            value = tir.op.nearbyint(value)
        return cast(value, out_dtype)

    if method == "nearest_neighbor":
        def f(*idx: Any) -> PrimExpr:
            o = dl.split(idx)
            pos = {c: _clamp(cast(_round(source_coordinate(o[c], n_in[k], n_out[k], mode, ft),
                                         rounding_method), "int64"), n_in[k])
                   for k, c in enumerate(spatial)}
            return cast(data(*dl.index({**o, **pos})), out_dtype)

        return te.compute(shape, f, name="resize")

    if method not in ("linear", "cubic"):
        raise ValueError(f"unknown resize method {method!r}")
    # Per-axis tap tables (position and weight of each tap of each output position), then a
    # weighted sum over the 2 (linear) or 4 (cubic) taps of every spatial axis.
    ntaps = 2 if method == "linear" else 4
    tables = [
        _tap_tables(c, n_in[k], n_out[k], mode, ft, method, cubic_alpha, cubic_exclude)
        for k, c in enumerate(spatial)
    ]

    def f(*idx: Any) -> PrimExpr:
        o = dl.split(idx)
        total = None
        for taps in itertools.product(range(ntaps), repeat=len(spatial)):
            pos, weight = {}, None
            for (tpos, twt), c, t in zip(tables, spatial, taps):
                ti = IntImm("int64", t)
                pos[c] = tpos(o[c], ti)
                weight = twt(o[c], ti) if weight is None else weight * twt(o[c], ti)
            term = cast(data(*dl.index({**o, **pos})), ft) * weight
            total = term if total is None else total + term
        return finish(total)

    return te.compute(shape, f, name="resize")


#: the 2-d case (``size`` = (out_h, out_w)), under its historical name
resize2d = resize


def _tap_tables(axis: str, n_in: PrimExpr, n_out: PrimExpr, mode: str, ft: str, method: str,
                alpha: float, exclude: int) -> tuple[te.Tensor, te.Tensor]:
    """(positions, weights) of shape (n_out, taps) for one axis."""
    ntaps = 2 if method == "linear" else 4
    first = 0 if method == "linear" else -1

    def frac_and_base(o: PrimExpr) -> tuple[PrimExpr, PrimExpr]:
        c = source_coordinate(o, n_in, n_out, mode, ft)
        base = tir.floor(c)
        return c - base, cast(base, "int64")

    def position(o: PrimExpr, t: PrimExpr) -> PrimExpr:
        return _clamp(frac_and_base(o)[1] + t + first, n_in)

    def raw_weight(o: PrimExpr, t: PrimExpr) -> PrimExpr:
        frac, base = frac_and_base(o)
        if method == "linear":
            return Select(tir.EQ(t, IntImm("int64", 0)), cast(1, ft) - frac, frac)
        w = _cubic_weight(tir.abs(frac - cast(t + first, ft)), alpha)
        if exclude:
            pos = base + t + first
            w = Select(tir.all(GE(pos, IntImm("int64", 0)), LT(pos, int64(n_in))), w, cast(0, ft))
        return w

    key = axis.lower()
    pos = te.compute((n_out, ntaps), position, name=f"resize_{key}_index")
    raw = te.compute((n_out, ntaps), raw_weight, name=f"resize_{key}_weight")
    if not (method == "cubic" and exclude):
        return pos, raw
    r = te.reduce_axis((0, ntaps), name=f"t{key}")
    total = te.compute((n_out,), lambda o: te.sum(raw(o, r), axis=r), name=f"resize_{key}_total")
    norm = te.compute((n_out, ntaps), lambda o, t: raw(o, t) / total(o),
                      name=f"resize_{key}_weight_norm")
    return pos, norm


