"""ONNX operators without a converter of their own family, each emitted as registered Relax
ops (or constant matrices): BitCast (``relax.bitcast``), DFT/STFT and the windows, Col2Im
(``relax.nn.col2im``), DeformConv (``relax.vision.deform_conv2d``), GridSample
(``relax.image.grid_sample``), RoiAlign (``relax.vision.roi_align``), MaxUnpool, Det and the
rest of this module."""

from __future__ import annotations

from typing import Any

import numpy as np


from . import ops_runtime
from .common import R, converter, onnx_dtype_to_str
from .ops_math import scalar


# -- BitCast -----------------------------------------------------------------------------------
@converter("BitCast")
def _bitcast(ctx: Any) -> Any:
    to = onnx_dtype_to_str(ctx.attr("to"), f"{ctx.where()}: to: ")
    src = ctx.dtype(0)
    if src == to:
        return ctx.input(0)
    if src == "bool" or to == "bool":  # bool is a value, not a bit pattern: 0/1 <-> 0/1
        if {src, to} - {"bool", "int8", "uint8"}:
            raise ctx.unsupported(f"bit casts between {src} and {to} (different sizes)")
        return R.astype(ctx.input(0), to) if to != "bool" else R.not_equal(
            ctx.input(0), ctx.const_expr(0, src))
    return R.bitcast(ctx.input(0), to)


# -- DFT ---------------------------------------------------------------------------------------
@converter("DFT", min_opset=17)
def _dft(ctx: Any) -> Any:
    x = ctx.input(0)
    shape = ctx.static_shape(0)
    if shape is None:
        raise ctx.unsupported("needs a static input shape")
    dt = ctx.dtype(0)
    ndim = len(shape)
    if ctx.opset >= 20:
        axis = ctx.int_list(2, "axis")[0] if ctx.has(2) else -2
    else:
        axis = ctx.attr("axis", 1)
    axis %= ndim
    if axis == ndim - 1:
        raise ctx.error("axis must not be the last (complex) axis")
    inverse, onesided = bool(ctx.attr("inverse", 0)), bool(ctx.attr("onesided", 0))
    n_in = shape[axis]
    if ctx.has(1):
        length = ctx.int_list(1, "dft_length")[0]
    else:
        length = 2 * (n_in - 1) if (inverse and onesided) else n_in
    comp = shape[-1]
    # move the transformed axis last, drop the complex axis
    perm = [i for i in range(ndim - 1) if i != axis] + [axis]
    inv_perm = list(np.argsort(perm))
    take = lambda k: R.squeeze(R.strided_slice(x, [ndim - 1], [k], [k + 1]), [ndim - 1])  # noqa: E731
    xr = R.permute_dims(take(0), perm)
    xi = R.permute_dims(take(1), perm) if comp == 2 else None
    n = np.arange(n_in).reshape(-1, 1)
    if inverse and onesided:
        k_out = np.arange(length).reshape(1, -1)
        ang = 2 * np.pi * n * k_out / length
        w = np.where((n == 0) | ((length % 2 == 0) & (n == length // 2)), 1.0, 2.0)
        w = np.where(n <= length // 2, w, 0.0) / length
        cos_m, sin_m = w * np.cos(ang), w * np.sin(ang)
        re = R.matmul(xr, ctx.const_expr(cos_m, dt))
        if xi is not None:
            re = re - R.matmul(xi, ctx.const_expr(sin_m, dt))
        out = R.expand_dims(R.permute_dims(re, inv_perm), [ndim - 1])
        return out
    k_out = np.arange(length // 2 + 1 if (onesided and not inverse) else length).reshape(1, -1)
    valid = (n < length).astype(np.float64)
    ang = 2 * np.pi * n * k_out / length
    scale = 1.0 / length if inverse else 1.0
    cos_m = valid * np.cos(ang) * scale
    sin_m = valid * np.sin(ang) * scale * (1.0 if inverse else -1.0)
    c, s = ctx.const_expr(cos_m, dt), ctx.const_expr(sin_m, dt)
    re = R.matmul(xr, c)
    im = R.matmul(xr, s)
    if xi is not None:
        re = re - R.matmul(xi, s)
        im = im + R.matmul(xi, c)
    re = R.expand_dims(R.permute_dims(re, inv_perm), [ndim - 1])
    im = R.expand_dims(R.permute_dims(im, inv_perm), [ndim - 1])
    return R.concat([re, im], axis=ndim - 1)


# -- BatchNormalization (training mode) --------------------------------------------------------
def batch_norm_training(ctx: Any) -> Any:
    """Normalise with the batch statistics; also return the updated running statistics."""
    x = ctx.input(0)
    nsp = ctx.ndim(0) - 2
    dt = ctx.dtype(0)
    eps = ctx.attr("epsilon", 1e-5)
    momentum = ctx.attr("momentum", 0.9)
    axes = [0] + list(range(2, nsp + 2))
    mean = ctx.emit(R.mean(x, axes, False))
    d = x - R.reshape(mean, [-1] + [1] * nsp)
    var = ctx.emit(R.mean(d * d, axes, False))

    def bc(v: Any) -> Any:
        return R.reshape(v, [-1] + [1] * nsp)

    y = d * R.rsqrt(bc(var) + scalar(ctx, eps, dt)) * bc(ctx.input(1)) + bc(ctx.input(2))
    m = scalar(ctx, momentum, dt)
    one_m = scalar(ctx, 1.0 - momentum, dt)
    run_mean = ctx.input(3) * m + mean * one_m
    run_var = ctx.input(4) * m + var * one_m
    return [y, run_mean, run_var]


# -- GridSample --------------------------------------------------------------------------------
@converter("GridSample")
def _grid_sample(ctx: Any) -> Any:
    """``relax.image.grid_sample`` (1 to 3 spatial axes; every mode and padding mode)."""
    mode = ctx.attr("mode", "linear" if ctx.opset >= 20 else "bilinear")
    pad_mode = ctx.attr("padding_mode", "zeros")
    if mode not in ("nearest", "linear", "bilinear", "cubic", "bicubic") or pad_mode not in (
            "zeros", "border", "reflection"):
        raise ctx.unsupported(f"mode={mode!r}, padding_mode={pad_mode!r}")
    return R.image.grid_sample(ctx.input(0), ctx.input(1), method=mode, padding_mode=pad_mode,
                               align_corners=bool(ctx.attr("align_corners", 0)))


# -- window functions and AffineGrid (constants / small matmuls) -------------------------------
def _window(kind: str) -> Any:
    def impl(ctx: Any) -> Any:
        dt = onnx_dtype_to_str(ctx.attr("output_datatype", 1), f"{ctx.where()}: ")
        if ctx.const(0) is None:
            return ops_runtime.window(ctx, kind, dt)
        size = ctx.int_list(0, "size")[0]
        periodic = bool(ctx.attr("periodic", 1))
        n = size if periodic else size - 1
        k = np.arange(size, dtype=np.float64)
        if kind == "hann":
            w = np.sin(np.pi * k / n) ** 2
        elif kind == "hamming":
            w = 25.0 / 46.0 - (21.0 / 46.0) * np.cos(2 * np.pi * k / n)
        else:
            w = 0.42 - 0.5 * np.cos(2 * np.pi * k / n) + 0.08 * np.cos(4 * np.pi * k / n)
        return w.astype(np.dtype(dt) if dt != "bfloat16" else np.float32)

    return impl


converter("HannWindow", min_opset=17)(_window("hann"))
converter("HammingWindow", min_opset=17)(_window("hamming"))
converter("BlackmanWindow", min_opset=17)(_window("blackman"))


@converter("AffineGrid", min_opset=20)
def _affine_grid(ctx: Any) -> Any:
    align = bool(ctx.attr("align_corners", 0))
    if ctx.const(1) is None:
        return ops_runtime.affine_grid(ctx, align)
    size = ctx.int_list(1, "size")
    dt = ctx.dtype(0)
    spatial = size[2:]

    def lin(n: int) -> np.ndarray:
        if align:
            return np.linspace(-1.0, 1.0, n) if n > 1 else np.zeros(1)
        return (np.arange(n) * 2.0 + 1.0) / n - 1.0

    axes = [lin(n) for n in spatial]  # (D,) H, W
    mesh = np.meshgrid(*axes, indexing="ij")
    # base grid rows (x, y[, z], 1): x runs over the last axis
    coords = [m.reshape(-1) for m in mesh[::-1]] + [np.ones(int(np.prod(spatial)))]
    base = np.stack(coords, axis=1)  # (P, nd + 1)
    theta = ctx.input(0)  # (N, nd, nd + 1)
    grid = R.matmul(ctx.const_expr(base, dt), R.permute_dims(theta, [0, 2, 1]))  # (N, P, nd)
    return R.reshape(grid, [size[0], *spatial, len(spatial)])


# -- Col2Im ------------------------------------------------------------------------------------
@converter("Col2Im", min_opset=18)
def _col2im(ctx: Any) -> Any:
    """``relax.nn.col2im`` (any number of spatial axes)."""
    image = ctx.int_list(1, "image_shape")
    nd = len(image)
    return R.nn.col2im(ctx.input(0), image, ctx.int_list(2, "block_shape"),
                       dilations=ctx.attr("dilations", [1] * nd),
                       pads=ctx.attr("pads", [0] * (2 * nd)),
                       strides=ctx.attr("strides", [1] * nd))


# -- STFT, TensorScatter, MaxUnpool ------------------------------------------------------------
@converter("STFT", min_opset=17)
def _stft(ctx: Any) -> Any:
    """Frames gathered with a constant index matrix, windowed, then a DFT as matmuls."""
    shape = ctx.static_shape(0)
    if shape is None:
        raise ctx.unsupported("needs a static signal shape")
    batch, length, comp = shape
    step = ctx.int_list(1, "frame_step")[0]
    if ctx.has(3):
        flen = ctx.int_list(3, "frame_length")[0]
    elif ctx.has(2):
        flen = ctx.shape(2)[0]
    else:
        raise ctx.error("frame_length or window is required")
    onesided = bool(ctx.attr("onesided", 1))
    dt = ctx.dtype(0)
    frames = (length - flen) // step + 1
    idx = (np.arange(frames).reshape(-1, 1) * step + np.arange(flen).reshape(1, -1))
    x = ctx.input(0)

    def part(k: int) -> Any:
        sig = R.squeeze(R.strided_slice(x, [2], [k], [k + 1]), [2])  # (B, L)
        fr = R.reshape(R.take(sig, ctx.const_expr(idx.reshape(-1), "int64"), axis=1),
                       [batch, frames, flen])
        if ctx.has(2):
            fr = fr * ctx.input(2)
        return ctx.emit(fr)

    xr = part(0)
    xi = part(1) if comp == 2 else None
    n = np.arange(flen).reshape(-1, 1)
    k = np.arange(flen // 2 + 1 if onesided else flen).reshape(1, -1)
    ang = 2 * np.pi * n * k / flen
    c, s = ctx.const_expr(np.cos(ang), dt), ctx.const_expr(-np.sin(ang), dt)
    re = R.matmul(xr, c)
    im = R.matmul(xr, s)
    if xi is not None:
        re = re - R.matmul(xi, s)
        im = im + R.matmul(xi, c)
    return R.concat([R.expand_dims(re, [3]), R.expand_dims(im, [3])], axis=3)


@converter("TensorScatter", min_opset=24)
def _tensor_scatter(ctx: Any) -> Any:
    """Write ``update`` into ``past_cache`` at per-batch positions along ``axis``."""
    pshape, ushape = ctx.static_shape(0), ctx.static_shape(1)
    if pshape is None or ushape is None:
        raise ctx.unsupported("needs static shapes")
    ndim = len(pshape)
    axis = ctx.attr("axis", -2) % ndim
    circular = ctx.attr("mode", "linear") == "circular"
    t = ushape[axis]
    rng_shape = [1] * ndim
    rng_shape[axis] = t
    pos = ctx.const_expr(np.arange(t).reshape(rng_shape), "int64")
    if ctx.has(2):
        start = R.reshape(R.astype(ctx.input(2), "int64"), [-1] + [1] * (ndim - 1))
    else:
        start = ctx.const_expr(np.zeros([1] * ndim, np.int64), "int64")
    idx = start + pos
    if circular:
        idx = R.floor_mod(idx, ctx.const_expr(pshape[axis], "int64"))
    idx = R.broadcast_to(idx, ushape)
    return R.scatter_elements(ctx.input(0), idx, ctx.input(1), axis=axis)


@converter("MaxUnpool", min_opset=9)
def _max_unpool(ctx: Any) -> Any:
    shape = ctx.static_shape(0)
    if shape is None:
        raise ctx.unsupported("needs a static input shape")
    kernel = ctx.attr("kernel_shape")
    nsp = len(kernel)
    strides = ctx.attr("strides", [1] * nsp)
    pads = ctx.attr("pads", [0] * (2 * nsp))
    inferred = shape[:2] + [(shape[2 + i] - 1) * strides[i] - pads[i] - pads[i + nsp]
                            + kernel[i] for i in range(nsp)]
    out_shape = ctx.int_list(2, "output_shape") if ctx.has(2) else inferred
    dt = ctx.dtype(0)
    total = int(np.prod(inferred))
    zeros = R.full([total], ctx.const_expr(0, dt), dt)
    idx = R.reshape(R.astype(ctx.input(1), "int64"), [-1])
    vals = R.reshape(ctx.input(0), [-1])
    y = ctx.emit(R.reshape(R.scatter_elements(zeros, idx, vals, axis=0), inferred))
    cur = list(inferred)
    for a in range(len(out_shape)):  # indices address the inferred shape; pad to output_shape
        extra = out_shape[a] - cur[a]
        if extra > 0:
            pad_shape = list(cur)
            pad_shape[a] = extra
            y = ctx.emit(R.concat([y, R.full(pad_shape, ctx.const_expr(0, dt), dt)], axis=a))
            cur[a] = out_shape[a]
    return y


# -- Det ---------------------------------------------------------------------------------------
@converter("Det", min_opset=11)
def _det(ctx: Any) -> Any:
    """Determinants of small (n <= 4) matrices by cofactor expansion."""
    shape = ctx.static_shape(0)
    if shape is None or shape[-1] != shape[-2] or shape[-1] > 4:
        raise ctx.unsupported("needs static square matrices of size at most 4")
    n = shape[-1]
    ndim = len(shape)
    x = ctx.input(0)
    entries = {}
    for i in range(n):
        for j in range(n):
            e = R.strided_slice(x, [ndim - 2, ndim - 1], [i, j], [i + 1, j + 1])
            entries[i, j] = ctx.emit(R.squeeze(e, [ndim - 2, ndim - 1]))

    def det(rows: list[int], cols: list[int]) -> Any:
        if len(rows) == 1:
            return entries[rows[0], cols[0]]
        total = None
        for k, c in enumerate(cols):
            minor = det(rows[1:], cols[:k] + cols[k + 1:])
            term = entries[rows[0], c] * minor
            total = term if total is None else (total - term if k % 2 else total + term)
        return ctx.emit(total)

    return det(list(range(n)), list(range(n)))


# -- RoiAlign ----------------------------------------------------------------------------------
@converter("RoiAlign", min_opset=10)
def _roi_align(ctx: Any) -> Any:
    """``relax.vision.roi_align``: bilinear samples per output bin, averaged or max-reduced
    (``sampling_ratio=0``: an adaptive grid per box)."""
    mode = ctx.attr("mode", "avg")
    if mode not in ("avg", "max"):
        raise ctx.unsupported(f"mode={mode!r}")
    transform = ctx.attr("coordinate_transformation_mode",
                         "half_pixel" if ctx.opset >= 16 else "output_half_pixel")
    if transform not in ("half_pixel", "output_half_pixel"):
        raise ctx.unsupported(f"coordinate_transformation_mode={transform!r}")
    return R.vision.roi_align(
        ctx.input(0), ctx.input(1), ctx.input(2),
        output_size=(ctx.attr("output_height", 1), ctx.attr("output_width", 1)),
        spatial_scale=ctx.attr("spatial_scale", 1.0), sampling_ratio=ctx.attr("sampling_ratio", 0),
        mode=mode, coordinate_transformation_mode=transform)


# -- DeformConv --------------------------------------------------------------------------------
@converter("DeformConv", min_opset=19)
def _deform_conv(ctx: Any) -> Any:
    """``relax.vision.deform_conv2d`` (2-d), then the bias."""
    if ctx.ndim(0) != 4:
        raise ctx.unsupported("only 2-d deformable convolution (4-d input)")
    y = R.vision.deform_conv2d(
        ctx.input(0), ctx.input(2), ctx.input(1), ctx.input(4) if ctx.has(4) else None,
        strides=ctx.attr("strides", [1, 1]), padding=ctx.attr("pads", [0, 0, 0, 0]),
        dilation=ctx.attr("dilations", [1, 1]), groups=ctx.attr("group", 1),
        offset_groups=ctx.attr("offset_group", 1))
    if ctx.has(3):
        y = y + R.reshape(ctx.input(3), [-1, 1, 1])
    return y
