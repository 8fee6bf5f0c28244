"""TIR for RNN / GRU / LSTM recurrences as a loop over a (symbolic) sequence length.

One serial kernel per direction: for every step and batch row it computes the gates from the
precomputed input projection ``xw`` (bias included) and the recurrent product with the
previous hidden state, applies the gate activations and updates the state in place.  The
sequence length is a loop bound, not an unrolled count, so one function serves every length.
``seq_lens`` ends each row's sequence early (its later outputs are zero, its state holds; a
reverse direction starts at the row's last valid step).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from tvm import tir
from tvm.tir import BufferStore, For, PrimFunc, Var
from tvm.tir.expr import GT, LT, Max, Min, PrimExpr, Select

from ._tir import FuncBuilder, fresh_shapes, i64, if_then, loop_nest, seq
from ._util import cast, int64

__all__ = ["recurrence_func", "activation", "ACTIVATIONS"]

ACTIVATIONS = ("sigmoid", "tanh", "relu", "affine", "leakyrelu", "thresholdedrelu",
               "scaledtanh", "hardsigmoid", "elu", "softsign", "softplus")


def activation(name: str, alpha: float, beta: float, dtype: str) -> Callable[[PrimExpr], PrimExpr]:
    """The ONNX recurrent activation ``name`` as a PrimExpr function (NaN for alpha/beta
    means the op's default)."""
    n = name.lower()

    def c(v: float) -> PrimExpr:
        return cast(v, dtype)

    def a(default: float) -> float:
        return default if alpha != alpha else alpha

    def b(default: float) -> float:
        return default if beta != beta else beta

    if n == "sigmoid":
        return lambda x: c(1.0) / (c(1.0) + tir.exp(-x))
    if n == "tanh":
        return tir.tanh
    if n == "relu":
        return lambda x: Max(x, c(0.0))
    if n == "affine":
        return lambda x: x * c(a(1.0)) + c(b(0.0))
    if n == "leakyrelu":
        return lambda x: Select(LT(x, c(0.0)), x * c(a(0.01)), x)
    if n == "thresholdedrelu":
        return lambda x: Select(GT(x, c(a(1.0))), x, c(0.0))
    if n == "scaledtanh":
        return lambda x: c(a(1.0)) * tir.tanh(x * c(b(1.0)))
    if n == "hardsigmoid":
        return lambda x: Min(Max(x * c(a(0.2)) + c(b(0.5)), c(0.0)), c(1.0))
    if n == "elu":
        return lambda x: Select(GT(x, c(0.0)), x, c(a(1.0)) * (tir.exp(Min(x, c(0.0))) - c(1.0)))
    if n == "softsign":
        return lambda x: x / (c(1.0) + tir.abs(x))
    if n == "softplus":  # log(1 + exp(x)) without overflow
        return lambda x: Max(x, c(0.0)) + tir.log1p(tir.exp(-tir.abs(x)))
    raise ValueError(f"recurrence: unknown activation {name!r} (one of {', '.join(ACTIVATIONS)})")


def recurrence_func(
    kind: str, xw_shape: Sequence[Any], dtype: str, seq_dtype: str,
    acts: Sequence[Callable[[PrimExpr], PrimExpr]], reverse: bool, clip: float,
    linear_before_reset: bool = False, input_forget: bool = False,
) -> PrimFunc:
    """PrimFunc ``(xw, rt, h0, c0, p, rb, seq_lens, y, y_h, y_c)`` of one direction.

    ``xw`` (S, B, G*H): the input projection plus biases (for a GRU with
    ``linear_before_reset`` without the recurrent bias of the candidate gate, which is
    ``rb`` (H,)); ``rt`` (H, G*H): the recurrent weights transposed; ``h0``/``c0`` (B, H)
    the initial state; ``p`` (3H,) the LSTM peepholes (i, o, f); ``seq_lens`` (B,).  Gate
    order is ONNX's: LSTM i o f c, GRU z r h.  ``clip`` > 0 clips pre-activations.
    """
    gates = {"RNN": 1, "GRU": 3, "LSTM": 4}[kind]
    (xw_shape,) = fresh_shapes(xw_shape)
    steps, batch, width = (int64(d) for d in xw_shape)
    hidden = tir.IntImm("int64", int(width) // gates) if isinstance(width, tir.IntImm) else \
        tir.floordiv(width, gates)
    fb = FuncBuilder()
    xw = fb.arg(xw_shape, dtype, "xw")
    rt = fb.arg((hidden, width), dtype, "rt")
    h0 = fb.arg((batch, hidden), dtype, "h0")
    c0 = fb.arg((batch, hidden), dtype, "c0")
    peep = fb.arg((3 * hidden,), dtype, "p")
    rb = fb.arg((hidden,), dtype, "rb")
    lens = fb.arg((batch,), seq_dtype, "seq_lens")
    y = fb.arg((steps, batch, hidden), dtype, "y")
    y_h = fb.arg((batch, hidden), dtype, "y_h")
    y_c = fb.arg((batch, hidden), dtype, "y_c")
    acc_dt = "float32" if dtype in ("float16", "bfloat16") else dtype
    g = fb.local((width,), acc_dt, "gates")
    tmp = fb.local((hidden,), acc_dt, "rh")
    f_act = acts[0]

    def clipped(v: PrimExpr) -> PrimExpr:
        return Min(Max(v, cast(-clip, acc_dt)), cast(clip, acc_dt)) if clip > 0 else v

    def st(buf: Any, idx: Sequence[Any], value: PrimExpr) -> Any:
        return BufferStore(buf, cast(value, buf.dtype), tuple(idx))

    def ld(buf: Any, idx: Sequence[Any]) -> PrimExpr:
        return cast(buf[tuple(idx)], acc_dt)

    hj = fb.scalar(acc_dt, "hj")

    def matvec(b: Var, t: Var, lo: PrimExpr, hi: PrimExpr, vec: Callable[[Var], PrimExpr],
               into: Callable[[Var, PrimExpr], Any]) -> Any:
        """into(k, xw[t, b, k] + sum_j vec(j) * rt[j, k]) for k in [lo, hi).

        The gates accumulate in ``g`` with ``k`` innermost: a contiguous row of ``rt`` per
        ``j``, which LLVM's loop vectorizer turns into vector multiply-adds."""
        k, j, k2, k3 = (Var(n, "int64") for n in ("k", "j", "k", "k"))
        n = hi - lo
        return seq(
            For(k, lo, n, body=BufferStore(g, ld(xw, (t, b, k)), (k,))),
            For(j, i64(0), hidden, body=seq(
                hj.set(vec(j)),
                For(k2, lo, n, body=BufferStore(g, g[k2] + hj.value * ld(rt, (j, k2)), (k2,))))),
            For(k3, lo, n, body=into(k3, g[k3])))

    def step(b: Var, t: Var) -> Any:
        j = Var("j", "int64")
        h = lambda i: ld(y_h, (b, i))  # noqa: E731
        if kind == "RNN":
            return seq(matvec(b, t, i64(0), hidden, h, lambda k, v: BufferStore(g, v, (k,))),
                       For(j, i64(0), hidden, body=seq(
                           st(y_h, (b, j), f_act(clipped(g[j]))),
                           st(y, (t, b, j), y_h[b, j]))))
        if kind == "GRU":
            g_act = acts[1]
            zr = matvec(b, t, i64(0), 2 * hidden, h,
                        lambda k, v: BufferStore(g, f_act(clipped(v)), (k,)))
            z, r = (lambda i: g[i]), (lambda i: g[hidden + i])
            if linear_before_reset:
                cand = matvec(b, t, 2 * hidden, 3 * hidden, h, lambda k, v: BufferStore(
                    g, v, (k,)))
                k2 = Var("k", "int64")
                # matvec added xw to h @ Rh: split it back out to scale only the recurrence
                fix = For(k2, i64(0), hidden, body=BufferStore(g, g_act(clipped(
                    ld(xw, (t, b, 2 * hidden + k2)) + r(k2) * (
                        g[2 * hidden + k2] - ld(xw, (t, b, 2 * hidden + k2)) + ld(rb, (k2,))))),
                    (2 * hidden + k2,)))
                cand = seq(cand, fix)
            else:
                scaled = For(j, i64(0), hidden, body=BufferStore(tmp, r(j) * h(j), (j,)))
                cand = seq(scaled, matvec(b, t, 2 * hidden, 3 * hidden, lambda i: tmp[i],
                                          lambda k, v: BufferStore(g, g_act(clipped(v)), (k,))))
            j2 = Var("j", "int64")
            new_h = (cast(1.0, acc_dt) - z(j2)) * g[2 * hidden + j2] + z(j2) * h(j2)
            update = For(j2, i64(0), hidden, body=seq(st(y_h, (b, j2), new_h),
                                                      st(y, (t, b, j2), y_h[b, j2])))
            return seq(zr, cand, update)
        g_act, h_act = acts[1], acts[2]
        gates_pre = matvec(b, t, i64(0), 4 * hidden, h, lambda k, v: BufferStore(g, v, (k,)))
        c = ld(y_c, (b, j))
        i_t = f_act(clipped(g[j] + ld(peep, (j,)) * c))
        f_t = cast(1.0, acc_dt) - i_t if input_forget else \
            f_act(clipped(g[2 * hidden + j] + ld(peep, (2 * hidden + j,)) * c))
        c_new = f_t * c + i_t * g_act(clipped(g[3 * hidden + j]))
        update = seq(
            st(y_c, (b, j), c_new),
            st(y_h, (b, j), f_act(clipped(g[hidden + j] + ld(peep, (hidden + j,)) * ld(y_c, (b, j))))
               * h_act(ld(y_c, (b, j)))),
            st(y, (t, b, j), y_h[b, j]))
        return seq(gates_pre, For(j, i64(0), hidden, body=update))

    s, b = Var("s", "int64"), Var("b", "int64")
    length = Min(Max(cast(lens[b], "int64"), i64(0)), steps)
    t = Var("t", "int64")
    row = if_then(LT(s, length), tir.LetStmt(
        t, (length - 1 - s) if reverse else s, step(b, t)))
    init = seq(
        loop_nest((steps, batch, hidden), lambda i: BufferStore(y, cast(0.0, dtype), tuple(i))),
        loop_nest((batch, hidden), lambda i: seq(BufferStore(y_h, h0[tuple(i)], tuple(i)),
                                                 BufferStore(y_c, c0[tuple(i)], tuple(i)))))
    body = seq(init, For(s, i64(0), steps, body=For(b, i64(0), batch, body=row)))
    return fb.finish(body)
