"""Small kernels and helpers shared by the CPU design-space, mutator and postproc tests."""

from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np
from tvm import te, tir

TARGET = "llvm -num-cores=2"


def matmul_relu(n: int = 64) -> Any:
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    D = te.compute((n, n), lambda i, j: te.max(C[i, j], 0.0), name="T_relu")
    return te.create_prim_func([A, B, D])


def conv2d(c: int = 8, hw: int = 10, co: int = 16) -> Any:
    """NCHW 3x3 convolution with zero padding 1 (a padding stage to inline)."""
    X = te.placeholder((1, c, hw, hw), name="X")
    W = te.placeholder((co, c, 3, 3), name="W")
    P = te.compute((1, c, hw + 2, hw + 2), lambda n, ci, h, w: te.if_then_else(
        te.all(h >= 1, h <= hw, w >= 1, w <= hw), X[n, ci, h - 1, w - 1], 0.0), name="pad")
    rc = te.reduce_axis((0, c), name="rc")
    ry = te.reduce_axis((0, 3), name="ry")
    rx = te.reduce_axis((0, 3), name="rx")
    Y = te.compute((1, co, hw, hw), lambda n, f, h, w: te.sum(
        P[n, rc, h + ry, w + rx] * W[f, rc, ry, rx], axis=[rc, ry, rx]), name="conv")
    return te.create_prim_func([X, W, Y])


def dense(n: int = 32, k: int = 64, m: int = 64) -> Any:
    """``X @ W.T``: the weight read along the output's columns in its first dimension."""
    X = te.placeholder((n, k), name="X")
    Wt = te.placeholder((m, k), name="W")
    r = te.reduce_axis((0, k), name="r")
    Y = te.compute((n, m), lambda i, j: te.sum(X[i, r] * Wt[j, r], axis=r), name="dense")
    return te.create_prim_func([X, Wt, Y])


def batch_matmul(b: int = 2, n: int = 16, k: int = 64, m: int = 64) -> Any:
    A = te.placeholder((b, n, k), name="A")
    B = te.placeholder((b, k, m), name="B")
    r = te.reduce_axis((0, k), name="r")
    C = te.compute((b, n, m), lambda z, i, j: te.sum(A[z, i, r] * B[z, r, j], axis=r),
                   name="bmm")
    return te.create_prim_func([A, B, C])


def row_sum(rows: int = 4, cols: int = 1024) -> Any:
    A = te.placeholder((rows, cols), name="A")
    k = te.reduce_axis((0, cols), name="k")
    B = te.compute((rows,), lambda i: te.sum(A[i, k], axis=k), name="B")
    return te.create_prim_func([A, B])


def centered(rows: int = 16, cols: int = 32) -> Any:
    """``C = A - sum(A, axis=1)``: a reduction producer (no reuse, not tiled) feeding an
    elementwise consumer: a block for RandomComputeLocation."""
    A = te.placeholder((rows, cols), name="A")
    k = te.reduce_axis((0, cols), name="k")
    S = te.compute((rows,), lambda i: te.sum(A[i, k], axis=k), name="S")
    C = te.compute((rows, cols), lambda i, j: A[i, j] - S[i], name="C")
    return te.create_prim_func([A, C])


def inputs(func: Any, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for p in func.params:
        buf = func.buffer_map[p]
        shape = tuple(int(s) for s in buf.shape)
        out.append(rng.standard_normal(shape).astype(buf.dtype))
    return out


def reference(name: str, args: list[np.ndarray]) -> np.ndarray:
    if name == "matmul_relu":
        return np.maximum(args[0] @ args[1], 0)
    if name == "conv2d":
        x, w = args[0], args[1]
        xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
        hw = x.shape[2]
        out = np.zeros((1, w.shape[0], hw, hw), "float32")
        for ry in range(3):
            for rx in range(3):
                out += np.einsum("nchw,fc->nfhw", xp[:, :, ry:ry + hw, rx:rx + hw],
                                 w[:, :, ry, rx])
        return out
    if name == "dense":
        return args[0] @ args[1].T
    if name == "batch_matmul":
        return args[0] @ args[1]
    if name == "row_sum":
        return args[0].sum(axis=1)
    if name == "centered":
        return args[0] - args[0].sum(axis=1, keepdims=True)
    raise KeyError(name)


WORKLOADS: dict[str, Callable[[], Any]] = {
    "matmul_relu": matmul_relu, "conv2d": conv2d, "row_sum": row_sum, "centered": centered,
    "dense": dense, "batch_matmul": batch_matmul,
}


def run(name: str, mod_or_func: Any, target: str = TARGET) -> tuple[np.ndarray, np.ndarray]:
    """Build the scheduled ``main`` and run it on random inputs: (result, numpy's)."""
    func = mod_or_func["main"] if not isinstance(mod_or_func, tir.PrimFunc) else mod_or_func
    args = inputs(func)
    out = np.zeros_like(args[-1])
    built = tir.build(func.with_attr("tir.is_scheduled", True), target=target)
    built["main"](*args[:-1], out)
    return out, reference(name, args[:-1])


def replay(space: Any, mod: Any, seed: Optional[int], decisions: bool = False) -> Any:
    """A candidate: ``space``'s trace on a fresh Schedule of ``mod``, with its own decisions
    (``decisions``) or fresh ones drawn with ``seed``."""
    sch = tir.Schedule(mod, seed=seed)
    provider = None if decisions else (lambda inst, inputs, attrs, d: None)
    space.trace.apply_to_schedule(sch, decision_provider=provider)
    return sch


def decisions(trace: Any) -> list[Any]:
    return [trace.decisions[i] for i in trace.insts if i in trace.decisions]
