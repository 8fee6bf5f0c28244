"""ONNX RNN, GRU and LSTM: unrolled over a static sequence length, a loop over a symbolic
one.

The input projection of all steps is one MatMul.  With a static length each step then adds
the recurrent MatMul and applies the gate activations (``sequence_lens`` masks finished
sequences of forward directions: their state holds, their outputs are zero).  With a
symbolic length the steps are ``relax.nn.recurrence``, one serial kernel per direction
whose loop bound is the length (``sequence_lens`` in every direction).
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np

from ...expr import TupleGetItem
from .common import R, converter
from .ops_math import scalar, softplus

_GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}
_DEFAULT_ACTS = {"RNN": ["Tanh"], "GRU": ["Sigmoid", "Tanh"], "LSTM": ["Sigmoid", "Tanh", "Tanh"]}


def _activation(ctx: Any, name: str, alpha: Optional[float], beta: Optional[float],
                dt: str) -> Callable[[Any], Any]:
    n = name.lower()
    s = lambda v: scalar(ctx, v, dt)  # noqa: E731
    if n == "sigmoid":
        return R.sigmoid
    if n == "tanh":
        return R.tanh
    if n == "relu":
        return lambda x: R.maximum(x, s(0.0))
    if n == "affine":
        return lambda x: x * s(alpha if alpha is not None else 1.0) + s(beta or 0.0)
    if n == "leakyrelu":
        a = 0.01 if alpha is None else alpha
        return lambda x: R.where(R.greater_equal(x, s(0.0)), x, x * s(a))
    if n == "thresholdedrelu":
        a = 1.0 if alpha is None else alpha
        return lambda x: R.where(R.greater(x, s(a)), x, s(0.0))
    if n == "scaledtanh":
        return lambda x: R.tanh(x * s(beta if beta is not None else 1.0)) * s(
            alpha if alpha is not None else 1.0)
    if n == "hardsigmoid":
        a, b = (0.2 if alpha is None else alpha), (0.5 if beta is None else beta)
        return lambda x: R.minimum(R.maximum(x * s(a) + s(b), s(0.0)), s(1.0))
    if n == "elu":
        a = 1.0 if alpha is None else alpha
        return lambda x: R.where(R.greater(x, s(0.0)), x,
                                 s(a) * (R.exp(R.minimum(x, s(0.0))) - s(1.0)))
    if n == "softsign":
        return lambda x: x / (s(1.0) + R.abs(x))
    if n == "softplus":
        return lambda x: softplus(ctx, x, dt)
    raise ctx.unsupported(f"activation {name!r}")


def _slice(x: Any, axis: int, begin: int, end: int) -> Any:
    return R.strided_slice(x, [axis], [begin], [end])


def _recurrent(ctx: Any) -> Any:
    op = ctx.op_type
    gates = _GATES[op]
    dt = ctx.dtype(0)
    layout = ctx.attr("layout", 0)
    x = ctx.input(0)
    if layout:
        x = R.permute_dims(x, [1, 0, 2])
    x = ctx.emit(x)
    seq, batch, _ = ctx.importer.shape_of(x)
    if not isinstance(seq, int):
        return _recurrent_loop(ctx, x, batch)
    hidden = ctx.attr("hidden_size", None) or ctx.shape(2)[2]
    direction = ctx.attr("direction", "forward")
    num_dir = 2 if direction == "bidirectional" else 1
    acts = ctx.attr("activations", None)
    per_dir = len(_DEFAULT_ACTS[op])
    if acts is None:
        acts = _DEFAULT_ACTS[op] * num_dir
    alphas = ctx.attr("activation_alpha", [])
    betas = ctx.attr("activation_beta", [])
    clip = ctx.attr("clip", None)
    seq_lens = ctx.input(4) if ctx.has(4) else None
    if seq_lens is not None:
        const = ctx.const(4)
        if const is not None and np.all(np.asarray(const) == seq):
            seq_lens = None
        elif direction != "forward":
            raise ctx.unsupported("sequence_lens with reverse or bidirectional direction")
    if op == "LSTM" and ctx.attr("input_forget", 0):
        raise ctx.unsupported("input_forget=1")
    h_outs, h_last, c_last = [], [], []
    for d in range(num_dir):
        reverse = direction == "reverse" or d == 1
        fns = [_activation(ctx, acts[d * per_dir + k],
                           alphas[d * per_dir + k] if len(alphas) > d * per_dir + k else None,
                           betas[d * per_dir + k] if len(betas) > d * per_dir + k else None, dt)
               for k in range(per_dir)]
        w = R.squeeze(_slice(ctx.input(1), 0, d, d + 1), [0])  # (G*H, I)
        r = ctx.emit(R.permute_dims(R.squeeze(_slice(ctx.input(2), 0, d, d + 1), [0]), [1, 0]))
        xw = R.matmul(x, R.permute_dims(w, [1, 0]))  # (S, B, G*H)
        if ctx.has(3):
            b = R.squeeze(_slice(ctx.input(3), 0, d, d + 1), [0])
            wb, rb = _slice(b, 0, 0, gates * hidden), _slice(b, 0, gates * hidden, 2 * gates * hidden)
            if op == "GRU" and ctx.attr("linear_before_reset", 0):
                xw = xw + wb
                rb_h = ctx.emit(_slice(rb, 0, 2 * hidden, 3 * hidden))
                xw = xw + R.concat([_slice(rb, 0, 0, 2 * hidden),
                                    R.full([hidden], scalar(ctx, 0.0, dt), dt)], axis=0)
            else:
                xw = xw + wb + rb
                rb_h = None
        else:
            rb_h = None
        xw = ctx.emit(xw)
        h = (R.squeeze(_slice(ctx.input(5), 0, d, d + 1), [0]) if ctx.has(5)
             else R.full([batch, hidden], scalar(ctx, 0.0, dt), dt))
        h = ctx.emit(h)
        c = None
        p = None
        if op == "LSTM":
            c = ctx.emit(R.squeeze(_slice(ctx.input(6), 0, d, d + 1), [0]) if ctx.has(6)
                         else R.full([batch, hidden], scalar(ctx, 0.0, dt), dt))
            if ctx.has(7):
                p = R.squeeze(_slice(ctx.input(7), 0, d, d + 1), [0])
                p = [ctx.emit(_slice(p, 0, k * hidden, (k + 1) * hidden)) for k in range(3)]
        steps = range(seq - 1, -1, -1) if reverse else range(seq)
        outs: list[Any] = [None] * seq
        for t in steps:
            gx = R.squeeze(_slice(xw, 0, t, t + 1), [0])  # (B, G*H)
            mask = None
            if seq_lens is not None:
                mask = ctx.emit(R.reshape(R.less(ctx.const_expr(t, ctx.dtype(4)), seq_lens),
                                          [-1, 1]))

            def part(v: Any, k: int) -> Any:
                return _slice(v, 1, k * hidden, (k + 1) * hidden)

            def clipped(v: Any) -> Any:
                if clip is None:
                    return v
                return R.minimum(R.maximum(v, scalar(ctx, -clip, dt)), scalar(ctx, clip, dt))

            if op == "RNN":
                new_h = fns[0](clipped(gx + R.matmul(h, r)))
                new_c = None
            elif op == "GRU":
                gx = ctx.emit(gx)
                rz = ctx.emit(R.matmul(h, _slice(r, 1, 0, 2 * hidden)))
                z = ctx.emit(fns[0](clipped(part(gx, 0) + part(rz, 0))))
                rr = fns[0](clipped(part(gx, 1) + part(rz, 1)))
                rh = _slice(r, 1, 2 * hidden, 3 * hidden)
                if ctx.attr("linear_before_reset", 0):
                    hr = R.matmul(h, rh)
                    if rb_h is not None:
                        hr = hr + rb_h
                    hh = fns[1](clipped(part(gx, 2) + rr * hr))
                else:
                    hh = fns[1](clipped(part(gx, 2) + R.matmul(rr * h, rh)))
                new_h = (scalar(ctx, 1.0, dt) - z) * hh + z * h
                new_c = None
            else:
                g = ctx.emit(gx + R.matmul(h, r))
                gi, go, gf, gc = (part(g, k) for k in range(4))
                if p is not None:
                    gi, gf = gi + p[0] * c, gf + p[2] * c
                i_t = fns[0](clipped(gi))
                f_t = fns[0](clipped(gf))
                c_t = fns[1](clipped(gc))
                new_c = ctx.emit(f_t * c + i_t * c_t)
                if p is not None:
                    go = go + p[1] * new_c
                o_t = fns[0](clipped(go))
                new_h = o_t * fns[2](new_c)
            new_h = ctx.emit(new_h)
            if mask is not None:
                outs[t] = ctx.emit(R.where(mask, new_h, scalar(ctx, 0.0, dt)))
                h = ctx.emit(R.where(mask, new_h, h))
                if new_c is not None:
                    c = ctx.emit(R.where(mask, new_c, c))
            else:
                outs[t] = new_h
                h = new_h
                if new_c is not None:
                    c = new_c
        h_outs.append(R.concat([R.expand_dims(o, [0]) for o in outs], axis=0))  # (S, B, H)
        h_last.append(h)
        c_last.append(c)
    y = R.concat([R.expand_dims(o, [1]) for o in h_outs], axis=1)  # (S, D, B, H)
    y_h = R.concat([R.expand_dims(v, [0]) for v in h_last], axis=0)  # (D, B, H)
    if layout:
        y = R.permute_dims(y, [2, 0, 1, 3])
        y_h = R.permute_dims(y_h, [1, 0, 2])
    results = [y, y_h]
    if op == "LSTM":
        y_c = R.concat([R.expand_dims(v, [0]) for v in c_last], axis=0)
        if layout:
            y_c = R.permute_dims(y_c, [1, 0, 2])
        results.append(y_c)
    return results[:max(1, ctx.num_outputs)]


def _recurrent_loop(ctx: Any, x: Any, batch: Any) -> list[Any]:
    """The recurrence over a symbolic sequence length: ``relax.nn.recurrence`` per
    direction after one input-projection MatMul."""
    op = ctx.op_type
    gates = _GATES[op]
    dt = ctx.dtype(0)
    hidden = ctx.attr("hidden_size", None) or ctx.shape(2)[2]
    direction = ctx.attr("direction", "forward")
    num_dir = 2 if direction == "bidirectional" else 1
    per_dir = len(_DEFAULT_ACTS[op])
    acts = ctx.attr("activations", None) or _DEFAULT_ACTS[op] * num_dir
    alphas, betas = ctx.attr("activation_alpha", []), ctx.attr("activation_beta", [])
    lbr = bool(op == "GRU" and ctx.attr("linear_before_reset", 0))

    def zeros(shape: list[Any]) -> Any:
        return R.full(shape, scalar(ctx, 0.0, dt), dt)

    lens = (ctx.input(4) if ctx.has(4)
            else R.full([batch], ctx.const_expr(2 ** 62, "int64"), "int64"))
    ys, hs, cs = [], [], []
    for d in range(num_dir):
        k0 = d * per_dir
        names = [a.lower() for a in acts[k0:k0 + per_dir]]
        w = R.squeeze(_slice(ctx.input(1), 0, d, d + 1), [0])  # (G*H, I)
        r = R.squeeze(_slice(ctx.input(2), 0, d, d + 1), [0])  # (G*H, H)
        xw = R.matmul(x, R.permute_dims(w, [1, 0]))
        rb_h = zeros([hidden])
        if ctx.has(3):
            b = R.squeeze(_slice(ctx.input(3), 0, d, d + 1), [0])
            wb, rb = _slice(b, 0, 0, gates * hidden), _slice(b, 0, gates * hidden, 2 * gates * hidden)
            if lbr:
                rb_h = _slice(rb, 0, 2 * hidden, 3 * hidden)
                rb = R.concat([_slice(rb, 0, 0, 2 * hidden), zeros([hidden])], axis=0)
            xw = xw + wb + rb
        h0 = (R.squeeze(_slice(ctx.input(5), 0, d, d + 1), [0]) if ctx.has(5)
              else zeros([batch, hidden]))
        c0 = (R.squeeze(_slice(ctx.input(6), 0, d, d + 1), [0]) if op == "LSTM" and ctx.has(6)
              else zeros([batch, hidden]))
        p = (R.squeeze(_slice(ctx.input(7), 0, d, d + 1), [0]) if op == "LSTM" and ctx.has(7)
             else zeros([3 * hidden]))
        try:
            call = R.nn.recurrence(
                ctx.emit(xw), ctx.emit(R.permute_dims(r, [1, 0])), ctx.emit(h0), ctx.emit(c0),
                ctx.emit(p), ctx.emit(rb_h), lens, kind=op, activations=names,
                activation_alpha=alphas[k0:k0 + per_dir], activation_beta=betas[k0:k0 + per_dir],
                clip=ctx.attr("clip", None), reverse=direction == "reverse" or d == 1,
                linear_before_reset=lbr, input_forget=bool(ctx.attr("input_forget", 0)))
        except ValueError as err:
            raise ctx.unsupported(str(err)) from None
        out = ctx.emit(call)
        ys.append(ctx.emit(TupleGetItem(out, 0)))
        hs.append(ctx.emit(TupleGetItem(out, 1)))
        cs.append(ctx.emit(TupleGetItem(out, 2)))
    y = R.concat([R.expand_dims(v, [1]) for v in ys], axis=1)  # (S, D, B, H)
    y_h = R.concat([R.expand_dims(v, [0]) for v in hs], axis=0)
    y_c = R.concat([R.expand_dims(v, [0]) for v in cs], axis=0)
    if ctx.attr("layout", 0):
        y = R.permute_dims(y, [2, 0, 1, 3])
        y_h, y_c = R.permute_dims(y_h, [1, 0, 2]), R.permute_dims(y_c, [1, 0, 2])
    results = [y, y_h] + ([y_c] if op == "LSTM" else [])
    return results[:max(1, ctx.num_outputs)]


converter("RNN")(_recurrent)
converter("GRU")(_recurrent)
converter("LSTM")(_recurrent)
