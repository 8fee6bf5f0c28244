"""Plain numpy references for the relax.nn operators (NCHW / OIHW, small shapes)."""

from __future__ import annotations

import numpy as np


def conv2d(x, w, stride=(1, 1), pad=(0, 0, 0, 0), dilation=(1, 1), groups=1):
    """pad = (top, left, bottom, right)."""
    x = np.pad(x, ((0, 0), (0, 0), (pad[0], pad[2]), (pad[1], pad[3])))
    n, c, h, wd = x.shape
    o, i, kh, kw = w.shape
    sh, sw = stride
    dh, dw = dilation
    oh = (h - dh * (kh - 1) - 1) // sh + 1
    ow = (wd - dw * (kw - 1) - 1) // sw + 1
    og = o // groups
    out = np.zeros((n, o, oh, ow), np.float64)
    for g in range(groups):
        xs = x[:, g * i:(g + 1) * i]
        ws = w[g * og:(g + 1) * og]
        for a in range(kh):
            for b in range(kw):
                patch = xs[:, :, a * dh:a * dh + sh * (oh - 1) + 1:sh, b * dw:b * dw + sw * (ow - 1) + 1:sw]
                out[:, g * og:(g + 1) * og] += np.einsum("nihw,oi->nohw", patch, ws[:, :, a, b])
    return out.astype(x.dtype)


def conv2d_transpose(x, w, stride=(1, 1), pad=(0, 0, 0, 0), output_padding=(0, 0),
                     dilation=(1, 1), groups=1):
    """w: (C_in, C_out / groups, kh, kw); pad = (top, left, bottom, right)."""
    n, c, h, wd = x.shape
    _, og, kh, kw = w.shape
    sh, sw = stride
    dh, dw = dilation
    full_h = (h - 1) * sh + dh * (kh - 1) + 1 + output_padding[0]
    full_w = (wd - 1) * sw + dw * (kw - 1) + 1 + output_padding[1]
    ig = c // groups
    full = np.zeros((n, og * groups, full_h, full_w), np.float64)
    for ic in range(c):
        g = ic // ig
        for a in range(kh):
            for b in range(kw):
                contrib = np.einsum("nhw,o->nohw", x[:, ic], w[ic, :, a, b])
                full[:, g * og:(g + 1) * og, a * dh:a * dh + sh * (h - 1) + 1:sh,
                     b * dw:b * dw + sw * (wd - 1) + 1:sw] += contrib
    out_h = full_h - pad[0] - pad[2]
    out_w = full_w - pad[1] - pad[3]
    return full[:, :, pad[0]:pad[0] + out_h, pad[1]:pad[1] + out_w].astype(x.dtype)


def _pool_len(size, k, s, d, p0, p1, ceil_mode):
    span = size + p0 + p1 - d * (k - 1) - 1
    out = (span + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (out - 1) * s >= size + p0:
        out -= 1
    return out


def pool2d(x, kind, k, stride, pad, dilation=(1, 1), ceil_mode=False, count_include_pad=False):
    n, c, h, w = x.shape
    oh = _pool_len(h, k[0], stride[0], dilation[0], pad[0], pad[2], ceil_mode)
    ow = _pool_len(w, k[1], stride[1], dilation[1], pad[1], pad[3], ceil_mode)
    out = np.zeros((n, c, oh, ow), x.dtype)
    for i in range(oh):
        for j in range(ow):
            rows = [i * stride[0] - pad[0] + a * dilation[0] for a in range(k[0])]
            cols = [j * stride[1] - pad[1] + b * dilation[1] for b in range(k[1])]
            inside_r = [r for r in rows if 0 <= r < h]
            inside_c = [q for q in cols if 0 <= q < w]
            win = x[:, :, inside_r][:, :, :, inside_c]
            if kind == "max":
                out[:, :, i, j] = win.max(axis=(2, 3))
            else:
                if count_include_pad:
                    cnt = len([r for r in rows if r < h + pad[2]]) * len([q for q in cols if q < w + pad[3]])
                else:
                    cnt = len(inside_r) * len(inside_c)
                out[:, :, i, j] = win.sum(axis=(2, 3)) / cnt
    return out


def adaptive_pool2d(x, kind, size):
    n, c, h, w = x.shape
    oh, ow = size
    out = np.zeros((n, c, oh, ow), x.dtype)
    for i in range(oh):
        r0, r1 = (i * h) // oh, -(-((i + 1) * h) // oh)
        for j in range(ow):
            c0, c1 = (j * w) // ow, -(-((j + 1) * w) // ow)
            win = x[:, :, r0:r1, c0:c1]
            out[:, :, i, j] = win.max(axis=(2, 3)) if kind == "max" else win.mean(axis=(2, 3))
    return out


def softmax(x, axis):
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


def attention(q, k, v, bias=None, scale=None, causal=None):
    """BSNH inputs; key/value heads repeated to the query heads."""
    rep = q.shape[2] // k.shape[2]
    k = np.repeat(k, rep, axis=2)
    v = np.repeat(v, rep, axis=2)
    scale = 1 / np.sqrt(q.shape[3]) if scale is None else scale
    s = np.einsum("bsnh,btnh->bnst", q, k) * scale
    if bias is not None:
        s = s + bias
    if causal:
        sq, tk = s.shape[2], s.shape[3]
        shift = 0 if causal == "TopLeft" else tk - sq
        mask = np.arange(tk)[None, :] > np.arange(sq)[:, None] + shift
        s = np.where(mask, -np.inf, s)
    return np.einsum("bnst,btnh->bsnh", softmax(s, -1), v)
