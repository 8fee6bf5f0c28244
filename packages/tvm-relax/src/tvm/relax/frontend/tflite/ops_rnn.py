"""TFLite recurrent builtins: UNIDIRECTIONAL_SEQUENCE_LSTM, BIDIRECTIONAL_SEQUENCE_LSTM and
UNIDIRECTIONAL_SEQUENCE_RNN, unrolled over the (static) time axis.

The state inputs are variable tensors; each call starts from their initial value (zeros,
or the tensor's buffer), as a freshly allocated LiteRT interpreter does.  The input
projections of all time steps are one matmul; each step adds the recurrent one.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ... import op as _op
from .common import OpContext, converter


def _weight_t(ctx: OpContext, i: int) -> Optional[np.ndarray]:
    """Constant weight input ``i`` ([out, in]) transposed to [in, out] (None if absent)."""
    if not ctx.has(i):
        return None
    w = ctx.const(i)
    if w is None:
        raise ctx.unsupported(f"input {i} (a weight) must be a constant tensor")
    return np.ascontiguousarray(np.asarray(w, np.float32).T)


def _vector(ctx: OpContext, i: int, n: int) -> Optional[np.ndarray]:
    if not ctx.has(i):
        return None
    v = ctx.const(i)
    if v is None:
        raise ctx.unsupported(f"input {i} must be a constant tensor")
    return np.asarray(v, np.float32).reshape(n)


def _act(ctx: OpContext, x: Any, fused: int) -> Any:
    if fused == 0:
        return x
    if fused == 4:  # TANH: the usual cell activation
        return _op.tanh(x)
    return ctx.activation(x, fused)


def _time_steps(ctx: OpContext, time_major: bool) -> tuple[Any, int, Any]:
    """(input as [time, batch, features], time steps, batch)."""
    if ctx.ndim(0) != 3:
        raise ctx.error(f"expects a 3-d input, got {ctx.shape(0)}")
    x = ctx.input(0)
    if not time_major:
        x = _op.permute_dims(x, [1, 0, 2])
    shape = ctx.shape(0)
    steps = shape[0] if time_major else shape[1]
    batch = shape[1] if time_major else shape[0]
    if not isinstance(steps, int):
        raise ctx.unsupported(f"the time axis must be static, got {shape}")
    return x, steps, batch


def _initial_state(ctx: OpContext, i: int, batch: Any, n: int) -> Any:
    value = ctx.const(i)
    if value is not None:
        return ctx.const_expr(np.asarray(value, np.float32).reshape(-1, n), "float32")
    return _op.zeros([batch, n], "float32")


def _stack_outputs(outs: list[Any], time_major: bool) -> Any:
    y = _op.concat([_op.expand_dims(h, 0) for h in outs], 0)
    return y if time_major else _op.permute_dims(y, [1, 0, 2])


def _lstm_direction(ctx: OpContext, x: Any, steps: int, batch: Any, base: int,
                    states: tuple[int, int], reverse: bool = False) -> list[Any]:
    """One LSTM pass over time-major ``x``: its weights are inputs ``base`` + 0..16 in the
    UNIDIRECTIONAL_SEQUENCE_LSTM order (input weights i, f, c, o; recurrent weights; peephole
    i, f, o; biases; projection weights and bias), its states inputs ``states``.  Returns the
    output of every step in time order (``reverse`` runs from the last step)."""
    o = ctx.options
    n_in = ctx.static_dims(0, [2], "the feature axis")[0]
    n_cell = ctx.static_dims(base + 1, [0], "the forget weights")[0]
    cifg = not ctx.has(base)  # no input gate: i = 1 - f
    gates = ["f", "g", "o"] if cifg else ["i", "f", "g", "o"]
    slot = {"i": 0, "f": 1, "g": 2, "o": 3}
    w = np.concatenate([_weight_t(ctx, base + slot[g]) for g in gates], axis=1)
    r = np.concatenate([_weight_t(ctx, base + 4 + slot[g]) for g in gates], axis=1)
    b = np.concatenate([_vector(ctx, base + 11 + slot[g], n_cell) for g in gates])
    n_out = r.shape[0]
    peep = {g: _vector(ctx, base + 8 + k, n_cell) for k, g in enumerate(("i", "f", "o"))}
    proj = _weight_t(ctx, base + 15)
    proj_b = _vector(ctx, base + 16, n_out) if proj is not None else None
    act = int(o.FusedActivationFunction())
    cell_clip, proj_clip = float(o.CellClip()), float(o.ProjClip())
    dt = "float32"
    xw = _op.reshape(_op.add(_op.matmul(_op.reshape(x, [-1, n_in]), ctx.const_expr(w, dt)),
                             ctx.const_expr(b, dt)), [steps, -1, len(gates) * n_cell])
    xw = ctx.emit(xw)
    h = _initial_state(ctx, states[0], batch, n_out)
    c = _initial_state(ctx, states[1], batch, n_cell)
    r_c = ctx.const_expr(r, dt)
    one = ctx.scalar(1.0, dt)
    outs: dict[int, Any] = {}
    for t in (reversed(range(steps)) if reverse else range(steps)):
        z = _op.add(_op.squeeze(_op.strided_slice(xw, [0], [t], [t + 1]), [0]),
                    _op.matmul(h, r_c))
        z = ctx.emit(z)
        part = {g: _op.strided_slice(z, [1], [k * n_cell], [(k + 1) * n_cell])
                for k, g in enumerate(gates)}
        for g in ("i", "f"):
            if g in part and peep[g] is not None:
                part[g] = _op.add(part[g], _op.multiply(c, ctx.const_expr(peep[g], dt)))
        f = _op.sigmoid(part["f"])
        i = _op.subtract(one, f) if cifg else _op.sigmoid(part["i"])
        g_ = _act(ctx, part["g"], act)
        c = _op.add(_op.multiply(f, c), _op.multiply(i, g_))
        if cell_clip > 0:
            c = _op.clip(c, -cell_clip, cell_clip)
        c = ctx.emit(c)
        og = part["o"]
        if peep["o"] is not None:
            og = _op.add(og, _op.multiply(c, ctx.const_expr(peep["o"], dt)))
        h = _op.multiply(_op.sigmoid(og), _act(ctx, c, act))
        if proj is not None:
            h = _op.matmul(h, ctx.const_expr(proj, dt))
            if proj_b is not None:
                h = _op.add(h, ctx.const_expr(proj_b, dt))
            if proj_clip > 0:
                h = _op.clip(h, -proj_clip, proj_clip)
        h = ctx.emit(h)
        outs[t] = h
    return [outs[t] for t in range(steps)]


def _check_lstm(ctx: OpContext, extra: range, what: str) -> None:
    if any(ctx.has(i) for i in extra):
        raise ctx.unsupported(f"{what} is not supported")
    if ctx.dtype(0) != "float32":
        raise ctx.unsupported(f"dtype {ctx.dtype(0)} (float32 only)")


@converter("UNIDIRECTIONAL_SEQUENCE_LSTM", max_version=4,
           options="UnidirectionalSequenceLSTMOptions", state_inputs=(18, 19))
def _lstm(ctx: OpContext) -> Any:
    o = ctx.options
    _check_lstm(ctx, range(20, ctx.num_inputs), "layer-normalised LSTM (inputs 20-23)")
    if o.DiagonalRecurrentTensors():
        raise ctx.unsupported("diagonal_recurrent_tensors is not supported")
    time_major = bool(o.TimeMajor())
    x, steps, batch = _time_steps(ctx, time_major)
    outs = _lstm_direction(ctx, x, steps, batch, 1, (18, 19))
    return _stack_outputs(outs, time_major)


@converter("BIDIRECTIONAL_SEQUENCE_LSTM", max_version=3,
           options="BidirectionalSequenceLSTMOptions", state_inputs=(35, 36, 37, 38))
def _bidirectional_lstm(ctx: OpContext) -> Any:
    """A forward LSTM (inputs 1-17, states 35/36) and a backward one over the reversed
    sequence (inputs 18-34, states 37/38); outputs both, or their concatenation on the
    feature axis with ``merge_outputs``."""
    o = ctx.options
    _check_lstm(ctx, range(39, ctx.num_inputs), "an auxiliary input (inputs 39-47)")
    time_major = bool(o.TimeMajor())
    x, steps, batch = _time_steps(ctx, time_major)
    fw = _lstm_direction(ctx, x, steps, batch, 1, (35, 36))
    bw = _lstm_direction(ctx, x, steps, batch, 18, (37, 38), reverse=True)
    if o.MergeOutputs():
        return _stack_outputs([_op.concat([f, b], 1) for f, b in zip(fw, bw)], time_major)
    return [_stack_outputs(fw, time_major), _stack_outputs(bw, time_major)]


@converter("UNIDIRECTIONAL_SEQUENCE_RNN", max_version=3, options="SequenceRNNOptions",
           state_inputs=(4,))
def _rnn(ctx: OpContext) -> Any:
    """h = act(W x + R h + b) per step."""
    o = ctx.options
    time_major = bool(o.TimeMajor())
    x, steps, batch = _time_steps(ctx, time_major)
    n_in = ctx.static_dims(0, [2], "the feature axis")[0]
    w, r = _weight_t(ctx, 1), _weight_t(ctx, 2)
    units = w.shape[1]
    b = _vector(ctx, 3, units)
    dt = "float32"
    xw = ctx.emit(_op.reshape(_op.add(_op.matmul(_op.reshape(x, [-1, n_in]),
                                                 ctx.const_expr(w, dt)),
                                      ctx.const_expr(b, dt)), [steps, -1, units]))
    h = _initial_state(ctx, 4, batch, units)
    r_c = ctx.const_expr(r, dt)
    outs = []
    for t in range(steps):
        z = _op.add(_op.squeeze(_op.strided_slice(xw, [0], [t], [t + 1]), [0]),
                    _op.matmul(h, r_c))
        h = ctx.emit(_act(ctx, z, int(o.FusedActivationFunction())))
        outs.append(h)
    return _stack_outputs(outs, time_major)
