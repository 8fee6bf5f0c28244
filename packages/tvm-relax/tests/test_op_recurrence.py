"""relax.nn.recurrence: shapes with a symbolic sequence length, argument checks."""

from __future__ import annotations

import pytest

from tvm import relax, tir
from tvm.relax import op

t = tir.Var("t", "int64")


def _t(shape, dtype="float32", name="a"):
    return relax.Var(name, relax.TensorStructInfo(shape, dtype))


def _infer(call):
    bb = relax.BlockBuilder()
    return bb.normalize(call).struct_info


def _args(gates=4, hidden=5, batch=2, lens_dtype="int64"):
    return [_t([t, batch, gates * hidden], name="xw"), _t([hidden, gates * hidden], name="rt"),
            _t([batch, hidden], name="h0"), _t([batch, hidden], name="c0"),
            _t([3 * hidden], name="p"), _t([hidden], name="rb"), _t([batch], lens_dtype, "lens")]


def test_outputs_follow_the_symbolic_length():
    y, y_h, y_c = _infer(op.nn.recurrence(*_args(), kind="LSTM")).fields
    assert y.shape_values[0] is t and [int(v) for v in y.shape_values[1:]] == [2, 5]
    assert [int(v) for v in y_h.shape_values] == [2, 5] == [int(v) for v in y_c.shape_values]
    y, _, _ = _infer(op.nn.recurrence(*_args(gates=3), kind="GRU")).fields
    assert int(y.shape_values[2]) == 5


def test_bad_arguments_are_clear_errors():
    with pytest.raises(ValueError, match="kind must be RNN, GRU or LSTM"):
        op.nn.recurrence(*_args(), kind="SRU")
    with pytest.raises(ValueError, match="LSTM takes 3 activations"):
        op.nn.recurrence(*_args(), kind="LSTM", activations=["Tanh"])
    with pytest.raises(relax.StructInfoError, match="seq_lens must be an integer tensor"):
        _infer(op.nn.recurrence(*_args(lens_dtype="float32"), kind="LSTM"))
