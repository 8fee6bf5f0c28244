"""RNN / GRU / LSTM over a symbolic sequence length: one compiled function (a loop whose
bound is the length, relax.nn.recurrence) serves every length, checked against
onnxruntime, in every direction and with the attributes that change the cell."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import tvm.runtime  # noqa: E402
from tvm import relax  # noqa: E402
from tvm.relax.frontend.onnx import from_onnx  # noqa: E402

rng = np.random.default_rng(11)
GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}


def _model(op, hidden, inp, directions, attrs, with_lens=False, with_init=False, peep=False):
    g = GATES[op]
    inits = [numpy_helper.from_array(rng.standard_normal((directions, g * hidden, inp))
                                     .astype(np.float32) * 0.5, "W"),
             numpy_helper.from_array(rng.standard_normal((directions, g * hidden, hidden))
                                     .astype(np.float32) * 0.5, "R"),
             numpy_helper.from_array(rng.standard_normal((directions, 2 * g * hidden))
                                     .astype(np.float32) * 0.5, "B")]
    names = ["x", "W", "R", "B", "lens" if with_lens else ""]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["t", "b", inp])]
    if with_lens:
        inputs.append(helper.make_tensor_value_info("lens", TensorProto.INT32, ["b"]))
    if with_init:
        names.append("h0")
        inputs.append(helper.make_tensor_value_info("h0", TensorProto.FLOAT,
                                                    [directions, "b", hidden]))
    if peep:
        names += ["", "P"] if with_init else ["", "", "P"]
        inits.append(numpy_helper.from_array(rng.standard_normal((directions, 3 * hidden))
                                             .astype(np.float32), "P"))
    outs = ["y", "yh"] + (["yc"] if op == "LSTM" else [])
    node = helper.make_node(op, names, outs, hidden_size=hidden, **attrs)
    graph = helper.make_graph([node], "g", inputs,
                              [helper.make_tensor_value_info(o, TensorProto.FLOAT, None)
                               for o in outs], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])


def _check(model, cases):
    mod = from_onnx(model)
    called = {b.value.op.name for blk in mod["main"].body.blocks for b in blk.bindings
              if isinstance(b.value, relax.Call)}
    assert "relax.nn.recurrence" in called
    vm = relax.VirtualMachine(relax.build(mod, target="llvm"), tvm.runtime.cpu())
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for feeds in cases:
        want = sess.run(None, feeds)
        got = vm["main"](*feeds.values())
        got = [g.numpy() for g in got] if isinstance(got, (list, tuple)) else [got.numpy()]
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


def _x(t, b, i):
    return rng.standard_normal((t, b, i)).astype(np.float32)


@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
def test_every_length_from_one_function(op, direction):
    d = 2 if direction == "bidirectional" else 1
    model = _model(op, 5, 3, d, {"direction": direction})
    _check(model, [{"x": _x(t, 2, 3)} for t in (1, 4, 7)])


@pytest.mark.parametrize("op", ["GRU", "LSTM"])
def test_sequence_lens_and_initial_state(op):
    for direction in ("forward", "reverse"):
        model = _model(op, 4, 3, 1, {"direction": direction}, with_lens=True, with_init=True)
        cases = [{"x": _x(5, 3, 3), "lens": np.array([5, 2, 3], np.int32),
                  "h0": rng.standard_normal((1, 3, 4)).astype(np.float32)}]
        _check(model, cases)


def test_cell_attributes():
    cases = [{"x": _x(4, 2, 3)}, {"x": _x(6, 2, 3)}]
    _check(_model("GRU", 4, 3, 1, {"linear_before_reset": 1}), cases)
    _check(_model("LSTM", 4, 3, 1, {"clip": 0.5}, peep=True), cases)
    _check(_model("LSTM", 4, 3, 1, {"input_forget": 1}), cases)
    _check(_model("RNN", 4, 3, 1, {"activations": ["LeakyRelu"], "activation_alpha": [0.2]}),
           cases)
