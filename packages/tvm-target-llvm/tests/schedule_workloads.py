"""te workloads (as the graph level legalizes them) and numpy references for the default
schedule tests.  Builders take sizes (ints or te.var for symbolic dimensions) and return a
PrimFunc; ``reference(name, *arrays)`` computes the expected output."""

from __future__ import annotations

from typing import Any

import numpy as np
from tvm import te


def matmul(m: Any, n: Any, k: Any, *, bias: bool = False, relu: bool = False,
           name: str = "C") -> Any:
    A = te.placeholder((m, k), name="A")
    B = te.placeholder((k, n), name="B")
    r = te.reduce_axis((0, k), name="k")
    out = te.compute((m, n), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name=name)
    args = [A, B]
    if bias:
        b = te.placeholder((n,), name="bias")
        args.append(b)
        prev = out
        out = te.compute((m, n), lambda i, j: prev[i, j] + b[j], name="T_add")
    if relu:
        prev2 = out
        out = te.compute((m, n), lambda i, j: te.max(prev2[i, j], 0.0), name="T_relu")
    return te.create_prim_func([*args, out])


def dense(m: Any, n: Any, k: Any) -> Any:
    """``Y = X @ W.T`` with ``W`` of shape (n, k), as nn.dense / linear."""
    X = te.placeholder((m, k), name="X")
    W = te.placeholder((n, k), name="W")
    r = te.reduce_axis((0, k), name="k")
    Y = te.compute((m, n), lambda i, j: te.sum(X[i, r] * W[j, r], axis=r), name="T_dense")
    return te.create_prim_func([X, W, Y])


def batch_matmul(b: Any, m: Any, n: Any, k: Any) -> Any:
    A = te.placeholder((b, m, k), name="A")
    B = te.placeholder((b, k, n), name="B")
    r = te.reduce_axis((0, k), name="k")
    C = te.compute((b, m, n), lambda t, i, j: te.sum(A[t, i, r] * B[t, r, j], axis=r),
                   name="T_batch_matmul")
    return te.create_prim_func([A, B, C])


def _pad_nchw(X: Any, pad: int) -> Any:
    n, c, h, w = X.shape
    return te.compute(
        (n, c, h + 2 * pad, w + 2 * pad),
        lambda a, b, y, x: te.if_then_else(
            te.all(y >= pad, y < h + pad, x >= pad, x < w + pad), X[a, b, y - pad, x - pad],
            0.0),
        name="pad_temp")


def conv2d_nchw(n: Any, c: int, h: int, w: int, k: int, r: int = 3, pad: int = 1,
                groups: int = 1, stride: int = 1) -> Any:
    """conv2d NCHW / OIHW; ``groups == c == k`` is depthwise."""
    X = te.placeholder((n, c, h, w), name="X")
    cpg, kpg = c // groups, k // groups
    W = te.placeholder((k, cpg, r, r), name="W")
    P = _pad_nchw(X, pad)
    rc = te.reduce_axis((0, cpg), name="rc")
    ry = te.reduce_axis((0, r), name="ry")
    rx = te.reduce_axis((0, r), name="rx")
    oh, ow = (h + 2 * pad - r) // stride + 1, (w + 2 * pad - r) // stride + 1
    s = stride
    if groups == 1:
        def body(a: Any, o: Any, y: Any, x: Any) -> Any:
            return te.sum(P[a, rc, y * s + ry, x * s + rx] * W[o, rc, ry, rx],
                          axis=[rc, ry, rx])
    elif cpg == 1 and kpg == 1:
        def body(a: Any, o: Any, y: Any, x: Any) -> Any:
            return te.sum(P[a, o, y * s + ry, x * s + rx] * W[o, 0, ry, rx], axis=[ry, rx])
    else:
        def body(a: Any, o: Any, y: Any, x: Any) -> Any:
            return te.sum(P[a, o // kpg * cpg + rc, y * s + ry, x * s + rx] * W[o, rc, ry, rx],
                          axis=[rc, ry, rx])
    Y = te.compute((n, k, oh, ow), body, name="conv2d_nchw")
    return te.create_prim_func([X, W, Y])


def conv2d_nhwc(n: Any, h: int, w: int, c: int, k: int, r: int = 3, pad: int = 1) -> Any:
    """conv2d NHWC / HWIO, stride 1."""
    X = te.placeholder((n, h, w, c), name="X")
    W = te.placeholder((r, r, c, k), name="W")
    P = te.compute(
        (n, h + 2 * pad, w + 2 * pad, c),
        lambda a, y, x, b: te.if_then_else(
            te.all(y >= pad, y < h + pad, x >= pad, x < w + pad), X[a, y - pad, x - pad, b],
            0.0),
        name="pad_temp")
    ry = te.reduce_axis((0, r), name="ry")
    rx = te.reduce_axis((0, r), name="rx")
    rc = te.reduce_axis((0, c), name="rc")
    oh, ow = h + 2 * pad - r + 1, w + 2 * pad - r + 1
    Y = te.compute((n, oh, ow, k), lambda a, y, x, o: te.sum(
        P[a, y + ry, x + rx, rc] * W[ry, rx, rc, o], axis=[ry, rx, rc]), name="conv2d_nhwc")
    return te.create_prim_func([X, W, Y])


def add_broadcast(shape: tuple, bshape: tuple) -> Any:
    """``C = relu(A + B)`` with ``B`` broadcast (numpy rules, right-aligned)."""
    A = te.placeholder(shape, name="A")
    B = te.placeholder(bshape, name="B")
    off = len(shape) - len(bshape)

    def bidx(idx: tuple) -> tuple:
        return tuple(0 if (isinstance(d, int) and d == 1) else idx[off + i]
                     for i, d in enumerate(bshape))

    C = te.compute(shape, lambda *i: te.max(A[i] + B[bidx(i)], 0.0), name="T_add_relu")
    return te.create_prim_func([A, B, C])


def reduce_sum(shape: tuple, axis: int) -> Any:
    A = te.placeholder(shape, name="A")
    r = te.reduce_axis((0, shape[axis]), name="r")
    out_shape = tuple(d for i, d in enumerate(shape) if i != axis)

    def body(*i: Any) -> Any:
        idx = list(i)
        idx.insert(axis, r)
        return te.sum(A[tuple(idx)], axis=r)

    B = te.compute(out_shape, body, name="T_sum")
    return te.create_prim_func([A, B])


def reduce_max_last(m: Any, n: Any) -> Any:
    A = te.placeholder((m, n), name="A")
    r = te.reduce_axis((0, n), name="r")
    B = te.compute((m,), lambda i: te.max(A[i, r], axis=r), name="T_max")
    return te.create_prim_func([A, B])


def softmax(m: Any, n: Any) -> Any:
    """Softmax over the last axis in topi's four stages."""
    X = te.placeholder((m, n), name="X")
    k = te.reduce_axis((0, n), name="k")
    mx = te.compute((m,), lambda i: te.max(X[i, k], axis=k), name="T_softmax_maxelem")
    ex = te.compute((m, n), lambda i, j: te.exp(X[i, j] - mx[i]), name="T_softmax_exp")
    k2 = te.reduce_axis((0, n), name="k")
    sm = te.compute((m,), lambda i: te.sum(ex[i, k2], axis=k2), name="T_softmax_expsum")
    out = te.compute((m, n), lambda i, j: ex[i, j] / sm[i], name="T_softmax_norm")
    return te.create_prim_func([X, out])


def softmax_keepdims(m: Any, n: Any) -> Any:
    """Softmax as the graph level legalizes it: reductions keep the reduced axis (``[m, 1]``)
    and later stages read them at index 0."""
    X = te.placeholder((m, n), name="X")
    k = te.reduce_axis((0, n), name="k1")
    mx = te.compute((m, 1), lambda i, o: te.max(X[i, k], axis=k), name="T_softmax_maxelem")
    ex = te.compute((m, n), lambda i, j: te.exp(X[i, j] - mx[i, 0]), name="T_softmax_exp")
    k2 = te.reduce_axis((0, n), name="k1")
    sm = te.compute((m, 1), lambda i, o: te.sum(ex[i, k2], axis=k2), name="T_softmax_expsum")
    out = te.compute((m, n), lambda i, j: ex[i, j] / sm[i, 0], name="T_softmax_norm")
    return te.create_prim_func([X, out], index_dtype_override="int64")


def layer_norm(m: Any, n: Any, eps: float = 1e-5) -> Any:
    """Layer norm over the last axis with gamma/beta: mean and mean of squares, then
    normalize."""
    X = te.placeholder((m, n), name="X")
    g = te.placeholder((n,), name="gamma")
    b = te.placeholder((n,), name="beta")
    k = te.reduce_axis((0, n), name="k")
    s = te.compute((m,), lambda i: te.sum(X[i, k], axis=k), name="T_sum")
    k2 = te.reduce_axis((0, n), name="k")
    sq = te.compute((m,), lambda i: te.sum(X[i, k2] * X[i, k2], axis=k2), name="T_sqsum")
    scale = 1.0 / n if isinstance(n, int) else 1.0 / _as_float(n)

    def norm(i: Any, j: Any) -> Any:
        mean = s[i] * scale
        var = sq[i] * scale - mean * mean
        return (X[i, j] - mean) * te.rsqrt(var + eps) * g[j] + b[j]

    out = te.compute((m, n), norm, name="T_layer_norm")
    return te.create_prim_func([X, g, b, out])


def _as_float(n: Any) -> Any:
    from tvm.tir.expr import Cast

    return Cast("float32", n)


def attention(b: Any, s: int, d: int) -> Any:
    """``softmax(Q @ K^T) @ V`` in one function (a fused attention block)."""
    Q = te.placeholder((b, s, d), name="Q")
    K = te.placeholder((b, s, d), name="K")
    V = te.placeholder((b, s, d), name="V")
    r = te.reduce_axis((0, d), name="d")
    sc = te.compute((b, s, s), lambda t, i, j: te.sum(Q[t, i, r] * K[t, j, r], axis=r),
                    name="scores")
    k = te.reduce_axis((0, s), name="k")
    mx = te.compute((b, s), lambda t, i: te.max(sc[t, i, k], axis=k), name="mx")
    ex = te.compute((b, s, s), lambda t, i, j: te.exp(sc[t, i, j] - mx[t, i]), name="ex")
    k2 = te.reduce_axis((0, s), name="k")
    sm = te.compute((b, s), lambda t, i: te.sum(ex[t, i, k2], axis=k2), name="sm")
    p = te.compute((b, s, s), lambda t, i, j: ex[t, i, j] / sm[t, i], name="probs")
    j = te.reduce_axis((0, s), name="j")
    out = te.compute((b, s, d), lambda t, i, e: te.sum(p[t, i, j] * V[t, j, e], axis=j),
                     name="out")
    return te.create_prim_func([Q, K, V, out])


# -- numpy references ----------------------------------------------------------------------
def conv2d_nchw_ref(x: np.ndarray, w: np.ndarray, pad: int = 1, groups: int = 1,
                    stride: int = 1) -> np.ndarray:
    n, c, h, wd = x.shape
    k, cpg, r, _ = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = (h + 2 * pad - r) // stride + 1, (wd + 2 * pad - r) // stride + 1
    out = np.zeros((n, k, oh, ow), np.float64)
    kpg = k // groups
    s = stride
    for o in range(k):
        g = o // kpg
        for dy in range(r):
            for dx in range(r):
                patch = xp[:, g * cpg:(g + 1) * cpg, dy:dy + s * (oh - 1) + 1:s,
                           dx:dx + s * (ow - 1) + 1:s]
                out[:, o] += np.einsum("nchw,c->nhw", patch, w[o, :, dy, dx])
    return out.astype(np.float32)


def conv2d_nhwc_ref(x: np.ndarray, w: np.ndarray, pad: int = 1) -> np.ndarray:
    xt = x.transpose(0, 3, 1, 2)
    wt = w.transpose(3, 2, 0, 1)
    return conv2d_nchw_ref(xt, wt, pad).transpose(0, 2, 3, 1)


def softmax_ref(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def layer_norm_ref(x: np.ndarray, g: np.ndarray, b: np.ndarray, eps: float = 1e-5
                   ) -> np.ndarray:
    x64 = x.astype(np.float64)
    mean = x64.mean(axis=-1, keepdims=True)
    var = (x64 * x64).mean(axis=-1, keepdims=True) - mean * mean
    return ((x64 - mean) / np.sqrt(var + eps) * g + b).astype(np.float32)
