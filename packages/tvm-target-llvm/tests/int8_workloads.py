"""te workloads of integer kernels shaped as tvm-relax legalizes ``relax.qnn.matmul`` and
``relax.qnn.conv2d`` (an int32 accumulator of int32(x) * int32(w), the zero-point sums before
it, one correction block; a padded input read through ``if_then_else(.., zx)``), with int64
references in numpy.  This package's tests cannot import tvm-relax, so the shapes of those
legalizations are repeated here.

Each builder returns ``(func, make_args, reference)``: ``make_args(rng)`` the input arrays
(random values with runs of the dtype's extremes), ``reference(*args)`` the expected int32
output.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np
from tvm import te, tir

I32 = "int32"


def extremes(shape: tuple, dtype: str, rng: Any) -> np.ndarray:
    """Random values with runs of the dtype's extremes (u8 255 against s8 127 / -128: the
    pairs whose sums overflow ``vpmaddubsw``'s int16)."""
    lo, hi = (0, 255) if dtype == "uint8" else (-128, 127)
    x = rng.integers(lo, hi + 1, shape).astype(dtype)
    flat = x.reshape(-1)
    flat[: min(64, flat.size)] = hi if dtype == "uint8" else lo
    flat[64:96] = lo if dtype == "uint8" else hi
    return x


def _i32(e: Any) -> Any:
    return e.astype(I32)


def _zb_tensor(zb: Any, n: int) -> tuple[Optional[Any], Any]:
    if isinstance(zb, (list, tuple)):
        t = te.placeholder((n,), I32, name="zb")
        return t, np.asarray(zb, I32)
    return None, zb


def dense(m: int, n: int, k: int, adt: str = "uint8", za: int = 0, zb: Any = 0,
          wdt: str = "int8") -> tuple[Any, Callable, Callable]:
    """``sum_k (x[i, k] - za) * (w[j, k] - zb[j])``: x [m, k], w [n, k]."""
    x = te.placeholder((m, k), adt, name="x")
    w = te.placeholder((n, k), wdt, name="w")
    zbt, zbv = _zb_tensor(zb, n)
    r = te.reduce_axis((0, k), name="k")
    acc = te.compute((m, n), lambda i, j: te.sum(_i32(x[i, r]) * _i32(w[j, r]), axis=r),
                     name="qmatmul_acc")
    terms: list[Callable] = []
    if za:
        rb = te.reduce_axis((0, k), name="kb")
        bsum = te.compute((n,), lambda j: te.sum(_i32(w[j, rb]), axis=rb), name="qmatmul_bsum")
        terms.append(lambda i, j: tir.const(-za, I32) * bsum[j])
    if zbt is not None or zb:
        ra = te.reduce_axis((0, k), name="ka")
        asum = te.compute((m,), lambda i: te.sum(_i32(x[i, ra]), axis=ra), name="qmatmul_asum")

        def zb_at(j: Any) -> Any:
            return zbt[j] if zbt is not None else tir.const(int(zb), I32)

        terms.append(lambda i, j: zb_at(j) * asum[i] * tir.const(-1, I32))
        if za:
            terms.append(lambda i, j: tir.const(k * za, I32) * zb_at(j))
    out = acc if not terms else te.compute(
        (m, n), lambda i, j: _sum([t(i, j) for t in terms]) + acc[i, j], name="qmatmul")
    params = [x, w] + ([zbt] if zbt is not None else [])
    func = te.create_prim_func([*params, out])

    def make_args(rng: Any) -> list[np.ndarray]:
        args = [extremes((m, k), adt, rng), extremes((n, k), wdt, rng)]
        return args + ([zbv] if zbt is not None else [])

    def reference(xv: np.ndarray, wv: np.ndarray, *rest: Any) -> np.ndarray:
        zbn = np.asarray(zbv, np.int64).reshape(1, -1) if zbt is not None else np.int64(zb)
        return ((xv.astype(np.int64) - za) @ (wv.astype(np.int64).T - zbn)).astype(I32)

    return func, make_args, reference


def _sum(terms: list) -> Any:
    v = terms[0]
    for t in terms[1:]:
        v = v + t
    return v


def matmul(b: int, m: int, n: int, k: int, za: int = 0) -> tuple[Any, Callable, Callable]:
    """Batched ``sum_k (x[b, i, k] - za) * w[k, j]``: one weight shared by the batches."""
    x = te.placeholder((b, m, k), "uint8", name="x")
    w = te.placeholder((k, n), "int8", name="w")
    r = te.reduce_axis((0, k), name="k")
    acc = te.compute((b, m, n), lambda t, i, j: te.sum(_i32(x[t, i, r]) * _i32(w[r, j]),
                                                        axis=r), name="qmatmul_acc")
    out = acc
    if za:
        rb = te.reduce_axis((0, k), name="kb")
        bsum = te.compute((n,), lambda j: te.sum(_i32(w[rb, j]), axis=rb), name="qmatmul_bsum")
        out = te.compute((b, m, n), lambda t, i, j: tir.const(-za, I32) * bsum[j] + acc[t, i, j],
                         name="qmatmul")
    func = te.create_prim_func([x, w, out])

    def make_args(rng: Any) -> list[np.ndarray]:
        return [extremes((b, m, k), "uint8", rng), extremes((k, n), "int8", rng)]

    def reference(xv: np.ndarray, wv: np.ndarray) -> np.ndarray:
        return ((xv.astype(np.int64) - za) @ wv.astype(np.int64)).astype(I32)

    return func, make_args, reference


def conv(layout: str, c: int, o: int, h: int, ks: int, pad: int, stride: int = 1, zx: int = 0,
         adt: str = "uint8") -> tuple[Any, Callable, Callable]:
    """A quantized 2-d convolution, NHWC x HWIO or NCHW x OIHW, padding holding ``zx``."""
    oh = (h + 2 * pad - ks) // stride + 1
    if layout == "NHWC":
        xs, ws, outs = (1, h, h, c), (ks, ks, c, o), (1, oh, oh, o)
    else:
        xs, ws, outs = (1, c, h, h), (o, c, ks, ks), (1, o, oh, oh)
    x = te.placeholder(xs, adt, name="x")
    w = te.placeholder(ws, "int8", name="w")

    def split(idx: tuple) -> tuple:
        return (idx[0], idx[1], idx[2], idx[3]) if layout == "NHWC" else \
            (idx[0], idx[2], idx[3], idx[1])  # n, oh, ow, oc

    def window(n: Any, y: Any, xx: Any, rc: Any, rh: Any, rw: Any) -> Any:
        py = y * stride + rh - pad
        px = xx * stride + rw - pad
        v = _i32(x[n, py, px, rc] if layout == "NHWC" else x[n, rc, py, px])
        if pad:
            inside = te.all(py >= 0, py < h, px >= 0, px < h)
            v = te.if_then_else(inside, v, tir.const(zx, I32))
        return v

    def weight(oc: Any, rc: Any, rh: Any, rw: Any) -> Any:
        return _i32(w[rh, rw, rc, oc] if layout == "NHWC" else w[oc, rc, rh, rw])

    def axes(tag: str) -> tuple:
        return (te.reduce_axis((0, c), name=f"{tag}c"), te.reduce_axis((0, ks), name=f"{tag}h"),
                te.reduce_axis((0, ks), name=f"{tag}w"))

    def raw(*idx: Any) -> Any:
        n, y, xx, oc = split(idx)
        rc, rh, rw = axes("r")
        return te.sum(window(n, y, xx, rc, rh, rw) * weight(oc, rc, rh, rw), axis=[rc, rh, rw])

    acc = te.compute(outs, raw, name="qconv_acc")
    out = acc
    if zx:
        def fw(oc: Any) -> Any:
            rc, rh, rw = axes("w")
            return te.sum(weight(oc, rc, rh, rw), axis=[rc, rh, rw])

        wsum = te.compute((o,), fw, name="qconv_wsum")
        out = te.compute(outs, lambda *idx: tir.const(-zx, I32) * wsum[split(idx)[3]] +
                         acc[idx], name="qconv")
    func = te.create_prim_func([x, w, out])

    def make_args(rng: Any) -> list[np.ndarray]:
        return [extremes(xs, adt, rng), extremes(ws, "int8", rng)]

    def reference(xv: np.ndarray, wv: np.ndarray) -> np.ndarray:
        xn = xv.astype(np.int64) if layout == "NCHW" else xv.astype(np.int64).transpose(0, 3, 1, 2)
        wn = wv.astype(np.int64) if layout == "NCHW" else wv.astype(np.int64).transpose(3, 2, 0, 1)
        xp = np.pad(xn - zx, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
        res = np.zeros((1, o, oh, oh), np.int64)
        for rh in range(ks):
            for rw in range(ks):
                win = xp[:, :, rh:rh + stride * oh:stride, rw:rw + stride * oh:stride]
                res += np.einsum("nchw,oc->nohw", win, wn[:, :, rh, rw])
        res = res.astype(I32)
        return res if layout == "NCHW" else res.transpose(0, 2, 3, 1)

    return func, make_args, reference
