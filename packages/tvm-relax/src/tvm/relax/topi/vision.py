"""``roi_align`` as a hand-written TIR PrimFunc (ONNX RoiAlign semantics) and
``deform_conv2d`` as a te compute (ONNX DeformConv).

For ``roi_align`` the number of sampling points per bin may depend on the box (``sampling_ratio = 0``:
``ceil(roi_size / output_size)``), so the sample loops have data-dependent extents, which a
te reduction cannot express.
"""

from __future__ import annotations

from typing import Any, Sequence

from tvm import te, tir
from tvm.tir import BufferStore, For, LetStmt, PrimFunc, Var
from tvm.tir.expr import GE, GT, LT, Max, PrimExpr, Select

from ._tir import FuncBuilder, fresh_shapes, i64, loop_nest, seq
from ._util import cast, int64, is_float

__all__ = ["roi_align_func", "deform_conv2d"]


def roi_align_func(
    data_shape: Sequence[Any], dtype: str, rois_shape: Sequence[Any], rois_dtype: str,
    index_dtype: str, output_size: Sequence[int], spatial_scale: float, sampling_ratio: int,
    mode: str, half_pixel: bool, layout: str = "NCHW",
) -> PrimFunc:
    """``out[r, c, ph, pw]``: the average (or ONNX's max of weighted corners) of bilinear
    samples of image ``batch_indices[r]`` on a regular grid inside bin (ph, pw) of box
    ``rois[r] = (x1, y1, x2, y2) * spatial_scale`` (shifted by -0.5 with ``half_pixel``)."""
    data_shape, rois_shape = fresh_shapes(data_shape, rois_shape)
    dims = dict(zip(layout, data_shape))
    height, width, channels = int64(dims["H"]), int64(dims["W"]), dims["C"]
    num_rois = rois_shape[0]
    ph_n, pw_n = output_size
    ft = dtype if is_float(dtype) else "float32"
    fb = FuncBuilder()
    data = fb.arg(data_shape, dtype, "data")
    rois = fb.arg(rois_shape, rois_dtype, "rois")
    batch = fb.arg((num_rois,), index_dtype, "batch_indices")
    out_shape = (num_rois, channels, i64(ph_n), i64(pw_n)) if layout == "NCHW" else \
        (num_rois, i64(ph_n), i64(pw_n), channels)
    out = fb.arg(out_shape, dtype, "out")
    acc = fb.scalar(ft, "acc")

    def f(v: Any) -> PrimExpr:
        return cast(v, ft)

    def load(n: PrimExpr, c: PrimExpr, y: PrimExpr, x: PrimExpr) -> PrimExpr:
        idx = {"N": n, "C": c, "H": y, "W": x}
        return f(data[tuple(idx[k] for k in layout)])

    def body(idx: list) -> Any:
        r, c, ph, pw = idx
        offset = f(0.5 if half_pixel else 0.0)
        scale = f(spatial_scale)
        coords = [Var(name, ft) for name in ("x1", "y1", "x2", "y2")]
        start_w, start_h, end_w, end_h = coords
        roi_w, roi_h = Var("roi_w", ft), Var("roi_h", ft)
        grid_h, grid_w = Var("grid_h", "int64"), Var("grid_w", "int64")
        n = Var("n", "int64")
        iy, ix = Var("iy", "int64"), Var("ix", "int64")
        bin_h, bin_w = roi_h / f(ph_n), roi_w / f(pw_n)

        def extent(size: PrimExpr, pooled: int) -> PrimExpr:
            if sampling_ratio > 0:
                return i64(sampling_ratio)
            return cast(tir.ceil(size / f(pooled)), "int64")

        y = start_h + f(ph) * bin_h + (f(iy) + f(0.5)) * bin_h / f(grid_h)
        x = start_w + f(pw) * bin_w + (f(ix) + f(0.5)) * bin_w / f(grid_w)
        yv, xv = Var("y", ft), Var("x", ft)
        outside = tir.any(LT(yv, f(-1.0)), GT(yv, f(height)), LT(xv, f(-1.0)), GT(xv, f(width)))
        yc, xc = Max(yv, f(0)), Max(xv, f(0))
        y_low0, x_low0 = cast(yc, "int64"), cast(xc, "int64")
        y_edge, x_edge = GE(y_low0, height - 1), GE(x_low0, width - 1)
        y_low = Select(y_edge, height - 1, y_low0)
        x_low = Select(x_edge, width - 1, x_low0)
        y_high = Select(y_edge, height - 1, y_low0 + 1)
        x_high = Select(x_edge, width - 1, x_low0 + 1)
        ly = Select(y_edge, f(0), yc - f(y_low0))
        lx = Select(x_edge, f(0), xc - f(x_low0))
        hy, hx = f(1) - ly, f(1) - lx
        terms = [hy * hx * load(n, c, y_low, x_low), hy * lx * load(n, c, y_low, x_high),
                 ly * hx * load(n, c, y_high, x_low), ly * lx * load(n, c, y_high, x_high)]
        if mode == "avg":
            sample = Select(outside, f(0), terms[0] + terms[1] + terms[2] + terms[3])
            update = acc.set(acc.value + sample)
        else:
            sample = Select(outside, f(0), Max(Max(terms[0], terms[1]), Max(terms[2], terms[3])))
            update = acc.set(Max(acc.value, sample))
        samples = For(iy, i64(0), grid_h, body=For(ix, i64(0), grid_w, body=LetStmt(
            yv, y, LetStmt(xv, x, update))))
        if mode == "avg":
            init = acc.set(f(0))
            result = acc.value / f(Max(grid_h * grid_w, i64(1)))
        else:
            low = tir.neg_infinity(ft) if is_float(ft) else tir.min_value(ft)
            init = acc.set(low)
            result = Select(tir.all(GT(grid_h, i64(0)), GT(grid_w, i64(0))), acc.value, f(0))
        out_idx = (r, c, ph, pw) if layout == "NCHW" else (r, ph, pw, c)
        stmt = seq(init, samples, BufferStore(out, cast(result, dtype), out_idx))
        raw_w, raw_h = end_w - start_w, end_h - start_h
        if not half_pixel:  # malformed boxes become 1 x 1
            raw_w, raw_h = Max(raw_w, f(1)), Max(raw_h, f(1))
        stmt = LetStmt(roi_w, raw_w, LetStmt(roi_h, raw_h, LetStmt(
            grid_h, extent(roi_h, ph_n), LetStmt(grid_w, extent(roi_w, pw_n), stmt))))
        for k in reversed(range(4)):
            stmt = LetStmt(coords[k], f(rois[r, i64(k)]) * scale - offset, stmt)
        return LetStmt(n, int64(batch[r]), stmt)

    return fb.finish(loop_nest(out_shape[:1] + (channels, i64(ph_n), i64(pw_n)), body))


def deform_conv2d(
    x: te.Tensor, offset: te.Tensor, weight: te.Tensor, mask: Any, strides: Sequence[int],
    padding: Sequence[int], dilation: Sequence[int], groups: int, offset_groups: int,
) -> te.Tensor:
    """2-d deformable convolution (NCHW data, OIHW weight; ONNX DeformConv): each kernel tap
    reads ``x`` bilinearly (zero outside the image) at its position moved by ``offset``
    ((dy, dx) per offset group and tap), scaled by ``mask`` when given (None: no mask)."""
    n, c, h, w = x.shape
    oc, cg, kh, kw = weight.shape
    oh, ow = offset.shape[2], offset.shape[3]
    st, dil, pads = strides, dilation, padding
    dt = x.dtype
    ric = te.reduce_axis((0, cg), name="ic")
    ri = te.reduce_axis((0, kh), name="i")
    rj = te.reduce_axis((0, kw), name="j")

    def body(ni: Any, o: Any, y: Any, xo: Any) -> Any:
        ic = (o // (oc // groups)) * cg + ric
        og = ic // (c // offset_groups)
        k = ri * kw + rj
        py = (y * st[0] - pads[0] + ri * dil[0]) + offset[ni, og * 2 * kh * kw + 2 * k, y, xo]
        px = (xo * st[1] - pads[1] + rj * dil[1]) + offset[ni, og * 2 * kh * kw + 2 * k + 1,
                                                            y, xo]
        py, px = tir.Cast(dt, py), tir.Cast(dt, px)
        y0f, x0f = tir.floor(py), tir.floor(px)
        y0, x0 = tir.Cast("int64", y0f), tir.Cast("int64", x0f)
        ly, lx = py - y0f, px - x0f
        val = None
        for dy, wy in ((0, 1.0 - ly), (1, ly)):
            for dx, wx in ((0, 1.0 - lx), (1, lx)):
                yy, xx = y0 + dy, x0 + dx
                ok = tir.all(yy >= 0, yy < h, xx >= 0, xx < w)
                v = x[ni, ic, tir.max(tir.min(yy, h - 1), 0), tir.max(tir.min(xx, w - 1), 0)]
                term = tir.if_then_else(ok, v, tir.const(0.0, dt)) * wy * wx
                val = term if val is None else val + term
        if mask is not None:
            val = val * mask[ni, og * kh * kw + k, y, xo]
        return te.sum(weight[o, ric, ri, rj] * val, axis=[ric, ri, rj])

    return te.compute([n, oc, oh, ow], body, name="deform_conv2d")
