"""Plain numpy references for N-d convolution/pooling, grid_sample, roi_align, scatter_nd,
one_hot and dynamic slicing (loops over small shapes; channel-first layouts)."""

from __future__ import annotations

import itertools
import math

import numpy as np


def conv_nd(x, w, stride, pad, dilation, groups=1):
    """x (N, C, *S), w (O, C / groups, *K); pad = (befores..., afters...)."""
    nsp = x.ndim - 2
    x = np.pad(x, [(0, 0), (0, 0)] + [(pad[i], pad[i + nsp]) for i in range(nsp)])
    o, cin_g = w.shape[:2]
    ks = w.shape[2:]
    outs = [(x.shape[2 + i] - dilation[i] * (ks[i] - 1) - 1) // stride[i] + 1 for i in range(nsp)]
    out = np.zeros((x.shape[0], o, *outs), np.float64)
    og = o // groups
    for g in range(groups):
        xs = x[:, g * cin_g:(g + 1) * cin_g]
        for k in itertools.product(*[range(s) for s in ks]):
            sl = tuple(slice(k[i] * dilation[i], k[i] * dilation[i] + stride[i] * (outs[i] - 1) + 1,
                             stride[i]) for i in range(nsp))
            patch = xs[(slice(None), slice(None), *sl)]
            wk = w[(slice(g * og, (g + 1) * og), slice(None), *k)]
            out[:, g * og:(g + 1) * og] += np.einsum("ni...,oi->no...", patch, wk)
    return out.astype(x.dtype)


def conv_transpose_nd(x, w, stride, pad, output_padding, dilation, groups=1):
    """x (N, C, *S), w (C, O / groups, *K)."""
    nsp = x.ndim - 2
    n, c = x.shape[:2]
    og = w.shape[1]
    ks = w.shape[2:]
    sizes = x.shape[2:]
    full = [(sizes[i] - 1) * stride[i] + dilation[i] * (ks[i] - 1) + 1 + output_padding[i]
            for i in range(nsp)]
    out = np.zeros((n, og * groups, *full), np.float64)
    ig = c // groups
    for ic in range(c):
        g = ic // ig
        for k in itertools.product(*[range(s) for s in ks]):
            sl = tuple(slice(k[i] * dilation[i], k[i] * dilation[i] + stride[i] * (sizes[i] - 1) + 1,
                             stride[i]) for i in range(nsp))
            contrib = np.einsum("n...,o->no...", x[:, ic], w[(ic, slice(None), *k)])
            out[(slice(None), slice(g * og, (g + 1) * og), *sl)] += contrib
    crop = tuple(slice(pad[i], full[i] - pad[i + nsp]) for i in range(nsp))
    return out[(slice(None), slice(None), *crop)].astype(x.dtype)


def pool_nd(x, kind, k, stride, pad, count_include_pad=False):
    nsp = x.ndim - 2
    sizes = x.shape[2:]
    outs = [(sizes[i] + pad[i] + pad[i + nsp] - k[i]) // stride[i] + 1 for i in range(nsp)]
    out = np.zeros(x.shape[:2] + tuple(outs), x.dtype)
    for o in itertools.product(*[range(s) for s in outs]):
        ranges = [range(o[i] * stride[i] - pad[i], o[i] * stride[i] - pad[i] + k[i])
                  for i in range(nsp)]
        inside = [[p for p in r if 0 <= p < sizes[i]] for i, r in enumerate(ranges)]
        win = x[(slice(None), slice(None), *np.ix_(*inside))]
        if kind == "max":
            out[(slice(None), slice(None), *o)] = win.max(axis=tuple(range(2, 2 + nsp)))
        else:
            cnt = math.prod(k) if count_include_pad else math.prod(len(s) for s in inside)
            out[(slice(None), slice(None), *o)] = win.sum(axis=tuple(range(2, 2 + nsp))) / cnt
    return out


def adaptive_pool_nd(x, kind, size):
    nsp = x.ndim - 2
    sizes = x.shape[2:]
    out = np.zeros(x.shape[:2] + tuple(size), x.dtype)
    for o in itertools.product(*[range(s) for s in size]):
        sl = tuple(slice(o[i] * sizes[i] // size[i], -(-(o[i] + 1) * sizes[i] // size[i]))
                   for i in range(nsp))
        win = x[(slice(None), slice(None), *sl)]
        axes = tuple(range(2, 2 + nsp))
        out[(slice(None), slice(None), *o)] = win.max(axis=axes) if kind == "max" else \
            win.mean(axis=axes)
    return out


# -- grid_sample (ONNX GridSample) --------------------------------------------------------------
def _reflect(x, lo, hi):
    span = hi - lo
    if x < lo or x > hi:
        if span <= 0:
            return lo
        below = x < lo
        dx = lo - x if below else x - hi
        n = int(dx / span)
        r = dx - n * span
        if below:
            return lo + r if n % 2 == 0 else hi - r
        return hi - r if n % 2 == 0 else lo + r
    return x


def _keys(d, a=-0.75):
    d = abs(d)
    if d <= 1:
        return ((a + 2) * d - (a + 3)) * d * d + 1
    if d < 2:
        return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a
    return 0.0


def grid_sample(x, grid, method="bilinear", padding_mode="zeros", align_corners=False):
    nsp = x.ndim - 2
    sizes = x.shape[2:]
    out = np.zeros(x.shape[:2] + grid.shape[1:-1], np.float64)
    bounds = [(0.0, s - 1.0) if align_corners else (-0.5, s - 0.5) for s in sizes]

    def pixel(img, idx):
        fixed = []
        for i, (p, s) in enumerate(zip(idx, sizes)):
            if padding_mode == "zeros":
                if not 0 <= p < s:
                    return 0.0
            elif padding_mode == "border":
                p = min(max(p, 0), s - 1)
            else:
                p = int(_reflect(float(p), *bounds[i]))
            fixed.append(p)
        return img[tuple(fixed)]

    for n in range(x.shape[0]):
        for o in itertools.product(*[range(s) for s in grid.shape[1:-1]]):
            g = grid[(n, *o)][::-1].astype(np.float64)
            xs = []
            for k in range(nsp):
                s = sizes[k]
                v = (g[k] + 1) / 2 * (s - 1) if align_corners else ((g[k] + 1) * s - 1) / 2
                if method == "nearest":
                    v = float(np.rint(v))
                lo, hi = bounds[k]
                if v < lo or v > hi:
                    if padding_mode == "border" and method != "bicubic":
                        v = min(max(v, 0.0), s - 1.0)  # bicubic clamps each tap instead
                    elif padding_mode == "reflection":
                        v = _reflect(v, lo, hi)
                xs.append(v)
            for c in range(x.shape[1]):
                img = x[n, c]
                if method == "nearest":
                    out[(n, c, *o)] = pixel(img, [int(v) for v in xs])
                    continue
                offs = [0, 1] if method == "bilinear" else [-1, 0, 1, 2]
                total = 0.0
                for taps in itertools.product(offs, repeat=nsp):
                    w = 1.0
                    idx = []
                    for k, t in enumerate(taps):
                        base = math.floor(xs[k])
                        frac = xs[k] - base
                        if method == "bilinear":
                            w *= (1 - frac) if t == 0 else frac
                        else:
                            w *= _keys(frac - t)
                        idx.append(base + t)
                    total += w * pixel(img, idx)
                out[(n, c, *o)] = total
    return out.astype(x.dtype)


# -- roi_align (ONNX RoiAlign) --------------------------------------------------------------------
def roi_align(x, rois, batch_indices, out_size, scale, ratio, mode, half_pixel):
    r_n, (ph_n, pw_n) = rois.shape[0], out_size
    _, c_n, height, width = x.shape
    out = np.zeros((r_n, c_n, ph_n, pw_n), np.float64)
    off = 0.5 if half_pixel else 0.0
    for r in range(r_n):
        x1, y1, x2, y2 = (float(v) * scale - off for v in rois[r])
        rw, rh = x2 - x1, y2 - y1
        if not half_pixel:
            rw, rh = max(rw, 1.0), max(rh, 1.0)
        bh, bw = rh / ph_n, rw / pw_n
        gh = ratio if ratio > 0 else int(np.ceil(rh / ph_n))
        gw = ratio if ratio > 0 else int(np.ceil(rw / pw_n))
        count = max(gh * gw, 1)
        img = x[batch_indices[r]]
        for ph in range(ph_n):
            for pw in range(pw_n):
                vals = []
                for iy in range(gh):
                    y = y1 + ph * bh + (iy + 0.5) * bh / gh
                    for ix in range(gw):
                        xx = x1 + pw * bw + (ix + 0.5) * bw / gw
                        if y < -1 or y > height or xx < -1 or xx > width:
                            vals.append(np.zeros(c_n))
                            continue
                        yy, xq = max(y, 0.0), max(xx, 0.0)
                        yl, xl = int(yy), int(xq)
                        if yl >= height - 1:
                            yl = yh = height - 1
                            yy = float(yl)
                        else:
                            yh = yl + 1
                        if xl >= width - 1:
                            xl = xh = width - 1
                            xq = float(xl)
                        else:
                            xh = xl + 1
                        ly, lx = yy - yl, xq - xl
                        hy, hx = 1 - ly, 1 - lx
                        corners = [hy * hx * img[:, yl, xl], hy * lx * img[:, yl, xh],
                                   ly * hx * img[:, yh, xl], ly * lx * img[:, yh, xh]]
                        vals.append(sum(corners) if mode == "avg" else np.max(corners, axis=0))
                if mode == "avg":
                    out[r, :, ph, pw] = sum(vals, np.zeros(c_n)) / count
                else:
                    out[r, :, ph, pw] = np.max(vals, axis=0) if vals else 0.0
    return out.astype(x.dtype)
