"""Converters for ``aten.lstm.input``, ``aten.gru.input``, ``aten.rnn_tanh.input`` and
``aten.rnn_relu.input``: multi-layer, optionally bidirectional recurrences.

Kept whole (torch.export would decompose them into an unrolled loop of primitive ATen ops),
each layer and direction imports as one input projection (a single matmul over every time
step) and one ``relax.nn.recurrence`` call: a serial TIR kernel looping over the steps, with
the gate rows reordered from torch's (LSTM i f g o, GRU r z n) to the op's (ONNX's: i o f c,
z r h) at import.  A GRU is ONNX's ``linear_before_reset`` form (torch applies the reset gate
after the recurrent bias).  An LSTM with projections (``proj_size``) has no kernel form and
is unrolled over the (static) sequence length: per step the recurrent matmul, the gate
arithmetic and the projection.  The batch size may be symbolic; torch.export itself
specializes the sequence length of an ``nn.LSTM``/``nn.GRU``, so a ``Dim`` on it fails at
export, before the importer runs.
"""

from __future__ import annotations

from typing import Any, Optional

from ... import op as _op
from ...expr import TupleGetItem
from .common import NodeContext, converter

_GATES = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}
#: torch's gate blocks in the recurrence op's order (LSTM i f g o -> i o f g, GRU r z n -> z r n)
_ORDER = {"lstm": (0, 3, 1, 2), "gru": (1, 0, 2), "rnn_tanh": (0,), "rnn_relu": (0,)}
_KIND = {"lstm": "LSTM", "gru": "GRU", "rnn_tanh": "RNN", "rnn_relu": "RNN"}
_ACTS = {"lstm": ("sigmoid", "tanh", "tanh"), "gru": ("sigmoid", "tanh"),
         "rnn_tanh": ("tanh",), "rnn_relu": ("relu",)}


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


def _blocks(x: Any, hidden: int, order: tuple[int, ...]) -> list[Any]:
    return [_op.strided_slice(x, [0], [k * hidden], [(k + 1) * hidden]) for k in order]


def _reordered(x: Any, hidden: int, kind: str) -> Any:
    """Rows (axis 0) of torch's gate blocks in the recurrence op's order."""
    order = _ORDER[kind]
    return x if len(order) == 1 else _op.concat(_blocks(x, hidden, order), 0)


def _kernel_direction(ctx: NodeContext, kind: str, x: Any, h: Any, c: Optional[Any],
                      w: list[Any], has_biases: bool, reverse: bool) -> tuple[Any, Any, Any]:
    """One layer and direction as ``relax.nn.recurrence``: ``(y, h_n, c_n)``."""
    w_ih, w_hh = w[0], w[1]
    hidden = ctx.shape(w_hh)[1]
    dtype = ctx.dtype(x)
    batch = ctx.shape(x)[1]
    proj = _op.matmul(x, _t(_reordered(w_ih, hidden, kind)))  # (L, B, G*H): every step
    rb = _op.full([hidden], ctx.const(0.0, dtype), dtype)
    if has_biases:
        b_ih, b_hh = _reordered(w[2], hidden, kind), _reordered(w[3], hidden, kind)
        if kind == "gru":  # the candidate's recurrent bias sits inside the reset gate
            rb = _op.strided_slice(b_hh, [0], [2 * hidden], [3 * hidden])
            b_hh = _op.concat([_op.strided_slice(b_hh, [0], [0], [2 * hidden]),
                               _op.full([hidden], ctx.const(0.0, dtype), dtype)], 0)
        proj = _op.add(proj, _op.add(b_ih, b_hh))
    if c is None:
        c = _op.full([batch, hidden], ctx.const(0.0, dtype), dtype)
    lens = _op.full([batch], ctx.const(2 ** 62, "int64"), "int64")
    call = _op.nn.recurrence(
        ctx.emit(proj), ctx.emit(_t(_reordered(w_hh, hidden, kind))), ctx.emit(h),
        ctx.emit(c), ctx.emit(_op.full([3 * hidden], ctx.const(0.0, dtype), dtype)),
        ctx.emit(rb), ctx.emit(lens), kind=_KIND[kind], activations=_ACTS[kind],
        reverse=reverse, linear_before_reset=kind == "gru")
    out = ctx.emit(call)
    return tuple(ctx.emit(TupleGetItem(out, i)) for i in range(3))


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
        if not isinstance(seq, int) and per > base:
            raise ctx.unsupported("a symbolic sequence length with proj_size (an LSTM with "
                                  "projections is unrolled)")
        h_out, c_out = [], []
        for layer in range(layers):
            outs = []
            for d in range(dirs):
                w = params[(layer * dirs + d) * per:(layer * dirs + d + 1) * per]
                w_ih, w_hh = w[0], w[1]
                b_ih, b_hh = (w[2], w[3]) if has_biases else (None, None)
                w_hr = w[base] if per > base else None
                idx = layer * dirs + d
                h = ctx.emit(_op.squeeze(_op.strided_slice(h0, [0], [idx], [idx + 1]), [0]))
                c = None if c0 is None else ctx.emit(
                    _op.squeeze(_op.strided_slice(c0, [0], [idx], [idx + 1]), [0]))
                if w_hr is None:
                    y, h, c_n = _kernel_direction(ctx, kind, x, h, c, w, has_biases, d == 1)
                    outs.append(y)
                    h_out.append(_op.expand_dims(h, 0))
                    if c is not None:
                        c_out.append(_op.expand_dims(c_n, 0))
                    continue
                proj = _op.matmul(x, _t(w_ih))  # (L, B, G*H): every step at once
                if b_ih is not None:
                    proj = _op.add(proj, b_ih)
                proj = ctx.emit(proj)
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
