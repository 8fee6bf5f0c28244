"""Resize over 1, 2 or 3 spatial axes (nearest, linear, cubic) with ONNX/TVM coordinate
transformation modes, and ``grid_sample``."""

from __future__ import annotations

import itertools
from typing import Any, Optional, Sequence

from tvm import te, tir
from tvm.tir.expr import GE, FloorMod, IntImm, LT, Max, Min, PrimExpr, Select

from ._util import cast, int64, is_float
from .nn import Layout

__all__ = [
    "resize", "resize2d", "grid_sample", "source_coordinate", "COORDINATE_MODES",
    "ROUNDING_METHODS", "GRID_SAMPLE_METHODS", "GRID_SAMPLE_PADDING",
]

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




# -- grid_sample -------------------------------------------------------------------------------
GRID_SAMPLE_METHODS = ("bilinear", "nearest", "bicubic")
GRID_SAMPLE_PADDING = ("zeros", "border", "reflection")


def _reflect(x: PrimExpr, lo: PrimExpr, hi: PrimExpr) -> PrimExpr:
    """``x`` reflected by the near border until it lies in ``[lo, hi]`` (ONNX GridSample)."""
    ft = x.dtype
    span = hi - lo
    below = LT(x, lo)
    dx = Select(below, lo - x, x - hi)
    n = tir.floor(dx / span)
    r = dx - n * span
    even = tir.EQ(n - cast(2, ft) * tir.floor(n / cast(2, ft)), cast(0, ft))
    folded = Select(below, Select(even, lo + r, hi - r), Select(even, hi - r, lo + r))
    outside = tir.any(below, tir.GT(x, hi))
    return Select(tir.all(outside, tir.GT(span, cast(0, ft))), folded,
                  Select(outside, lo, x))


def _reflect_index(i: PrimExpr, n: PrimExpr, align_corners: bool) -> PrimExpr:
    """Integer tap ``i`` reflected into ``[0, n)``: about the pixel edges (period ``2n``)
    or, with ``align_corners``, about the corner centres (period ``2(n - 1)``)."""
    one = IntImm("int64", 1)
    if align_corners:
        period = Max((n - one) * 2, one)
        m = FloorMod(i, period)
        return Select(LT(m, n), m, period - m)
    m = FloorMod(i, n * 2)
    return Select(LT(m, n), m, n * 2 - one - m)


def grid_sample(
    data: te.Tensor, grid: te.Tensor, method: str = "bilinear", padding_mode: str = "zeros",
    align_corners: bool = False,
) -> te.Tensor:
    """Sample channel-first ``data`` (N, C, *in) at the normalised positions of ``grid``
    (N, *out, nsp), whose last axis lists coordinates fastest axis first (x, y[, z]) in
    [-1, 1]; the result is (N, C, *out).

    Follows ONNX GridSample / PyTorch ``grid_sample``: ``align_corners`` maps -1 and 1 to
    the centres (else the outer edges) of the corner pixels; a position outside the
    borders is clamped (``border``, except for bicubic, as PyTorch and onnxruntime do) or
    reflected (``reflection``) first; taps outside the input read 0 (``zeros``), the
    nearest border pixel (``border``) or their reflection.
    ``bicubic`` uses Keys' kernel with a = -0.75; ``nearest`` rounds half to even (as the
    ONNX reference and PyTorch do, in 2-d and 3-d alike).
    """
    if method not in GRID_SAMPLE_METHODS:
        raise ValueError(f"grid_sample: unknown method {method!r}")
    if padding_mode not in GRID_SAMPLE_PADDING:
        raise ValueError(f"grid_sample: unknown padding_mode {padding_mode!r}")
    nsp = len(data.shape) - 2
    in_sizes = [int64(s) for s in data.shape[2:]]
    out_shape = (data.shape[0], data.shape[1], *grid.shape[1:-1])
    ft = data.dtype if is_float(data.dtype) else "float32"
    zero, one, half = cast(0, ft), cast(1, ft), cast(0.5, ft)

    def borders(k: int) -> tuple[PrimExpr, PrimExpr]:
        size = cast(in_sizes[k], ft)
        return (zero, size - one) if align_corners else (-half, size - half)

    def coordinate(k: int) -> te.Tensor:
        """The (padded) input coordinate along spatial axis ``k`` of every output position."""

        def f(n: PrimExpr, *o: PrimExpr) -> PrimExpr:
            g = cast(grid(n, *o, IntImm("int64", nsp - 1 - k)), ft)
            size = cast(in_sizes[k], ft)
            x = (g + one) / cast(2, ft) * (size - one) if align_corners else \
                ((g + one) * size - one) / cast(2, ft)
            if method == "nearest":
                x = tir.op.nearbyint(x)
            lo, hi = borders(k)
            if padding_mode == "border" and method != "bicubic":
                x = Select(tir.any(LT(x, lo), tir.GT(x, hi)), Min(Max(x, zero), size - one), x)
            elif padding_mode == "reflection":
                x = _reflect(x, lo, hi)
            return x

        return te.compute(grid.shape[:-1], f, name=f"grid_sample_coord{k}")

    coords = [coordinate(k) for k in range(nsp)]

    def tap(i: PrimExpr, k: int) -> tuple[PrimExpr, PrimExpr]:
        """(index to read, inside) for integer tap ``i`` of axis ``k``."""
        if padding_mode == "border":
            return _clamp(i, in_sizes[k]), IntImm("bool", 1)
        if padding_mode == "reflection":
            return _reflect_index(i, in_sizes[k], align_corners), IntImm("bool", 1)
        inside = tir.all(GE(i, IntImm("int64", 0)), LT(i, in_sizes[k]))
        return _clamp(i, in_sizes[k]), inside

    if method == "nearest":
        offsets = [0]
    elif method == "bilinear":
        offsets = [0, 1]
    else:
        offsets = [-1, 0, 1, 2]

    def weight(frac: PrimExpr, t: int) -> PrimExpr:
        if method == "bilinear":
            return one - frac if t == 0 else frac
        return _cubic_weight(tir.abs(frac - cast(t, ft)), -0.75)

    def f(n: PrimExpr, c: PrimExpr, *o: PrimExpr) -> PrimExpr:
        xs = [coords[k](n, *o) for k in range(nsp)]
        if method == "nearest":
            bases, fracs = [cast(x, "int64") for x in xs], None
        else:
            floors = [tir.floor(x) for x in xs]
            bases = [cast(fl, "int64") for fl in floors]
            fracs = [x - fl for x, fl in zip(xs, floors)]
        total = None
        for taps in itertools.product(offsets, repeat=nsp):
            idx, conds, w = [], [], None
            for k, t in enumerate(taps):
                i, inside = tap(bases[k] + t, k)
                idx.append(i)
                conds.append(inside)
                if fracs is not None:
                    wk = weight(fracs[k], t)
                    w = wk if w is None else w * wk
            value = cast(data(n, c, *idx), ft)
            if padding_mode == "zeros":
                value = Select(tir.all(*conds), value, zero)
            term = value if w is None else value * w
            total = term if total is None else total + term
        if not is_float(data.dtype):
            total = tir.op.nearbyint(total)
        return cast(total, data.dtype)

    return te.compute(out_shape, f, name="grid_sample")
