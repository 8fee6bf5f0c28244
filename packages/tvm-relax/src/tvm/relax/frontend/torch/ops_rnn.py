"""Converters for ``aten.lstm.input``, ``aten.gru.input``, ``aten.rnn_tanh.input`` and
``aten.rnn_relu.input``: multi-layer, optionally bidirectional recurrences unrolled over the
(static) sequence length.

Kept whole (torch.export would decompose them into the same unrolled loop of primitive
ATen ops), they import as one input projection per layer and direction (a single matmul over
every time step) plus the recurrent matmul and gate arithmetic per step.  The batch size may be
symbolic; torch.export itself specializes the sequence length of an ``nn.LSTM``/``nn.GRU``,
so a ``Dim`` on it fails at export, before the importer runs.
"""

from __future__ import annotations

from typing import Any, Optional

from ... import op as _op
from ...expr import TupleGetItem
from .common import NodeContext, converter

_GATES = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}


def _t(w: Any) -> Any:
    return _op.permute_dims(w, [1, 0])


def _split(ctx: NodeContext, x: Any, n: int) -> list[Any]:
    parts = ctx.emit(_op.split(x, n, axis=-1))
    return [ctx.emit(TupleGetItem(parts, i)) for i in range(n)]


def _step(ctx: NodeContext, kind: str, xw: Any, h: Any, c: Optional[Any], w_hh: Any,
          b_hh: Optional[Any], w_hr: Optional[Any]) -> tuple[Any, Optional[Any]]:
    """One time step: ``xw`` is the input projection (bias included) of this step."""
    hw = _op.matmul(h, _t(w_hh))
    if b_hh is not None:
        hw = _op.add(hw, b_hh)
    hw = ctx.emit(hw)
    if kind == "lstm":
        i, f, g, o = _split(ctx, ctx.emit(_op.add(xw, hw)), 4)
        c = ctx.emit(_op.add(_op.multiply(_op.sigmoid(f), c),
                             _op.multiply(_op.sigmoid(i), _op.tanh(g))))
        h = _op.multiply(_op.sigmoid(o), _op.tanh(c))
        if w_hr is not None:
            h = _op.matmul(h, _t(w_hr))
        return ctx.emit(h), c
    if kind == "gru":
        xr, xz, xn = _split(ctx, xw, 3)
        hr, hz, hn = _split(ctx, hw, 3)
        r = _op.sigmoid(_op.add(xr, hr))
        z = ctx.emit(_op.sigmoid(_op.add(xz, hz)))
        n = ctx.emit(_op.tanh(_op.add(xn, _op.multiply(r, hn))))
        return ctx.emit(_op.add(n, _op.multiply(z, _op.subtract(h, n)))), None
    act = _op.tanh if kind == "rnn_tanh" else _op.nn.relu
    return ctx.emit(act(_op.add(xw, hw))), None


def _recurrent(kind: str) -> Any:
    def convert(ctx: NodeContext) -> Any:
        """lstm(input, [h0, c0], params, has_biases, num_layers, dropout, train,
        bidirectional, batch_first); gru/rnn_*(input, h0, params, ...same)."""
        x = ctx.tensor(0)
        hx = ctx.arg(1, "hx")
        params = list(ctx.arg(2, "params"))
        has_biases = bool(ctx.arg(3, "has_biases"))
        layers = int(ctx.arg(4, "num_layers"))
        dropout, train = float(ctx.arg(5, "dropout")), bool(ctx.arg(6, "train"))
        dirs = 2 if ctx.arg(7, "bidirectional") else 1
        batch_first = bool(ctx.arg(8, "batch_first"))
        if train and dropout > 0 and layers > 1:
            raise ctx.unsupported("dropout between layers with train=True (inference only)")
        per = len(params) // (layers * dirs) if layers * dirs else 0
        base = 2 + 2 * has_biases
        if per * layers * dirs != len(params) or per not in (base, base + (kind == "lstm")):
            raise ctx.error(f"{len(params)} weights do not fit {layers} layer(s) x {dirs} "
                            f"direction(s) (has_biases={has_biases})")
        if kind == "lstm":
            if not isinstance(hx, (list, tuple)) or len(hx) != 2:
                raise ctx.error("hx must be [h0, c0]")
            h0, c0 = hx
        else:
            h0, c0 = hx, None
        unbatched = ctx.ndim(x) == 2
        if unbatched:
            x = _op.expand_dims(x, 1)
            h0 = _op.expand_dims(h0, 1)
            c0 = None if c0 is None else _op.expand_dims(c0, 1)
        elif batch_first:
            x = _op.permute_dims(x, [1, 0, 2])
        x = ctx.emit(x)
        seq = ctx.shape(x)[0]
        if not isinstance(seq, int):
            raise ctx.unsupported("a symbolic sequence length (the recurrence is unrolled)")
        h_out, c_out = [], []
        for layer in range(layers):
            outs = []
            for d in range(dirs):
                w = params[(layer * dirs + d) * per:(layer * dirs + d + 1) * per]
                w_ih, w_hh = w[0], w[1]
                b_ih, b_hh = (w[2], w[3]) if has_biases else (None, None)
                w_hr = w[base] if per > base else None
                proj = _op.matmul(x, _t(w_ih))  # (L, B, G*H): every step at once
                if b_ih is not None:
                    proj = _op.add(proj, b_ih)
                proj = ctx.emit(proj)
                idx = layer * dirs + d
                h = ctx.emit(_op.squeeze(_op.strided_slice(h0, [0], [idx], [idx + 1]), [0]))
                c = None if c0 is None else ctx.emit(
                    _op.squeeze(_op.strided_slice(c0, [0], [idx], [idx + 1]), [0]))
                steps: list[Any] = [None] * seq
                order = range(seq) if d == 0 else range(seq - 1, -1, -1)
                for t in order:
                    xw = ctx.emit(_op.squeeze(_op.strided_slice(proj, [0], [t], [t + 1]), [0]))
                    h, c = _step(ctx, kind, xw, h, c, w_hh, b_hh, w_hr)
                    steps[t] = _op.expand_dims(h, 0)
                outs.append(ctx.emit(_op.concat(steps, 0)))
                h_out.append(_op.expand_dims(h, 0))
                if c is not None:
                    c_out.append(_op.expand_dims(c, 0))
            x = outs[0] if dirs == 1 else ctx.emit(_op.concat(outs, -1))
        out = x
        if unbatched:
            out = _op.squeeze(out, [1])
        elif batch_first:
            out = _op.permute_dims(out, [1, 0, 2])
        h_n = _op.concat(h_out, 0)
        if unbatched:
            h_n = _op.squeeze(h_n, [1])
        results = [out, h_n]
        if kind == "lstm":
            c_n = _op.concat(c_out, 0)
            results.append(_op.squeeze(c_n, [1]) if unbatched else c_n)
        return results

    return convert


for _kind in _GATES:
    converter(f"aten.{_kind}.input")(_recurrent(_kind))
