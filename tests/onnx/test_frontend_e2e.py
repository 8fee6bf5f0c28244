"""Importer features end to end (import -> relax.build -> VM): symbolic shape values as
runtime tensors, parameters kept as inputs, If with a runtime condition, Loop unrolling."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

import tvm.runtime  # noqa: E402
from tvm import relax  # noqa: E402
from tvm.relax.frontend import detach_params  # noqa: E402
from tvm.relax.frontend.onnx import from_onnx  # noqa: E402


def _run(mod, *args):
    vm = relax.VirtualMachine(relax.build(mod, target="llvm"), tvm.runtime.cpu())
    out = vm["main"](*args)
    if isinstance(out, (list, tuple)):
        return [o.numpy() for o in out]
    return out.numpy()


def _model(nodes, inputs, outputs, inits=(), opset=17):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def test_symbolic_shape_value_becomes_a_tensor():
    m = _model([helper.make_node("Shape", ["x"], ["s"]),
                helper.make_node("Mul", ["s", "two"], ["y"])],
               [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3])],
               [helper.make_tensor_value_info("y", TensorProto.INT64, [2])],
               [helper.make_tensor("two", TensorProto.INT64, [], [2])])
    mod = from_onnx(m)
    for n in (1, 5):
        np.testing.assert_array_equal(_run(mod, np.zeros((n, 3), np.float32)), [2 * n, 6])


def test_keep_params_in_input_runs_with_detached_params():
    w = np.arange(6, dtype=np.float32).reshape(3, 2)
    m = _model([helper.make_node("MatMul", ["x", "w"], ["y"])],
               [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3])],
               [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
               [helper.make_tensor("w", TensorProto.FLOAT, [3, 2], w.reshape(-1))])
    mod, params = detach_params(from_onnx(m, keep_params_in_input=True))
    x = np.ones((1, 3), np.float32)
    np.testing.assert_allclose(_run(mod, x, *params["main"]), x @ w)


def test_if_with_runtime_condition_selects_a_branch():
    then_g = helper.make_graph([helper.make_node("Add", ["x", "x"], ["t"])], "then", [],
                               [helper.make_tensor_value_info("t", TensorProto.FLOAT, [2])])
    else_g = helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "else", [],
                               [helper.make_tensor_value_info("e", TensorProto.FLOAT, [2])])
    m = _model([helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g)],
               [helper.make_tensor_value_info("c", TensorProto.BOOL, []),
                helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
               [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    mod = from_onnx(m)
    x = np.array([1.0, -2.0], np.float32)
    np.testing.assert_allclose(_run(mod, np.array(True), x), 2 * x)
    np.testing.assert_allclose(_run(mod, np.array(False), x), -x)


def _if_model(then_nodes, else_nodes, then_out, else_out, inputs, out_shape=None, inits=()):
    then_g = helper.make_graph(then_nodes, "then", [], [then_out])
    else_g = helper.make_graph(else_nodes, "else", [], [else_out])
    return _model([helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g)],
                  [helper.make_tensor_value_info("c", TensorProto.BOOL, []), *inputs],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)], inits)


def test_if_with_runtime_condition_is_a_relax_if_outside_dataflow_blocks():
    m = _if_model([helper.make_node("Concat", ["x", "x"], ["t"], axis=0)],
                  [helper.make_node("Neg", ["x"], ["e"])],
                  helper.make_tensor_value_info("t", TensorProto.FLOAT, [4]),
                  helper.make_tensor_value_info("e", TensorProto.FLOAT, [2]),
                  [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])])
    mod = from_onnx(m)
    relax.analysis.verify_well_formed(mod)
    blocks = mod["main"].body.blocks
    ifs = [b for blk in blocks for b in blk.bindings if isinstance(b.value, relax.If)]
    assert len(ifs) == 1
    assert not any(isinstance(blk, relax.DataflowBlock) and ifs[0] in blk.bindings
                   for blk in blocks)
    x = np.array([1.0, -2.0], np.float32)
    # the branches differ in shape: each call returns its own branch's
    np.testing.assert_allclose(_run(mod, np.array(True), x), np.concatenate([x, x]))
    np.testing.assert_allclose(_run(mod, np.array(False), x), -x)


def test_if_runs_only_the_branch_taken():
    """The then-branch gathers index 5 of a 2-element tensor, an error at run time; with a
    false condition it must not run at all."""
    idx = helper.make_tensor("i", TensorProto.INT64, [1], [5])
    m = _if_model([helper.make_node("Gather", ["x", "i"], ["t"])],
                  [helper.make_node("Neg", ["x"], ["e"])],
                  helper.make_tensor_value_info("t", TensorProto.FLOAT, [1]),
                  helper.make_tensor_value_info("e", TensorProto.FLOAT, [2]),
                  [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])], inits=[idx])
    mod = from_onnx(m)
    x = np.array([1.0, -2.0], np.float32)
    np.testing.assert_allclose(_run(mod, np.array(False), x), -x)
    with pytest.raises(Exception, match="index"):
        _run(mod, np.array(True), x)


def test_nested_ifs_on_runtime_conditions():
    inner = _if_model([helper.make_node("Add", ["x", "x"], ["a"])],
                      [helper.make_node("Mul", ["x", "x"], ["b"])],
                      helper.make_tensor_value_info("a", TensorProto.FLOAT, [2]),
                      helper.make_tensor_value_info("b", TensorProto.FLOAT, [2]), [])
    branches = {a.name: a.g for a in inner.graph.node[0].attribute}
    inner_if = helper.make_node("If", ["d"], ["t"], **branches)
    m = _if_model([helper.make_node("Neg", ["x"], ["nx"]), inner_if],
                  [helper.make_node("Sub", ["x", "x"], ["e"])],
                  helper.make_tensor_value_info("t", TensorProto.FLOAT, [2]),
                  helper.make_tensor_value_info("e", TensorProto.FLOAT, [2]),
                  [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2]),
                   helper.make_tensor_value_info("d", TensorProto.BOOL, [])], out_shape=[2])
    mod = from_onnx(m)
    relax.analysis.verify_well_formed(mod)
    x = np.array([1.5, -2.0], np.float32)
    for c, d, want in [(True, True, 2 * x), (True, False, x * x), (False, True, 0 * x)]:
        np.testing.assert_allclose(_run(mod, np.array(c), x, np.array(d)), want)


def test_loop_with_constant_trip_count_is_unrolled():
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Add", ["acc_in", "x"], ["acc_out"])],
        "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc_in", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc_out", TensorProto.FLOAT, [2])])
    m = _model([helper.make_node("Loop", ["M", "", "acc0"], ["acc"], body=body)],
               [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2]),
                helper.make_tensor_value_info("acc0", TensorProto.FLOAT, [2])],
               [helper.make_tensor_value_info("acc", TensorProto.FLOAT, [2])],
               [helper.make_tensor("M", TensorProto.INT64, [], [3])])
    x = np.array([1.0, 2.0], np.float32)
    np.testing.assert_allclose(_run(from_onnx(m), x, np.zeros(2, np.float32)), 3 * x)


def test_prelu_before_opset_7_has_a_per_channel_slope():
    """Opset 6 PRelu: a 1-d slope of C values applies per channel (axis 1); from opset 7 the
    same slope broadcasts numpy-style against the last axis."""
    x = np.random.default_rng(0).standard_normal((2, 3, 4, 3)).astype(np.float32)
    slope = np.array([0.1, 0.2, 0.3], np.float32)
    for opset, expected_slope in ((6, slope.reshape(3, 1, 1)), (9, slope)):
        m = _model([helper.make_node("PRelu", ["x", "s"], ["y"])],
                   [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4, 3])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                   [helper.make_tensor("s", TensorProto.FLOAT, [3], slope)], opset=opset)
        np.testing.assert_allclose(_run(from_onnx(m), x),
                                   np.where(x < 0, x * expected_slope, x), rtol=1e-6)
    bad = _model([helper.make_node("PRelu", ["x", "s"], ["y"], name="act")],
                 [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4, 3])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                 [helper.make_tensor("s", TensorProto.FLOAT, [2], [0.1, 0.2])], opset=6)
    with pytest.raises(Exception, match="PRelu.*'act'.*slope has 2 values for 3 channels"):
        from_onnx(bad)


@pytest.mark.parametrize("transpose", [False, True])
def test_3d_convolution_matches_onnxruntime(transpose):
    """Conv and ConvTranspose over (N, C, D, H, W) with strides, pads, dilation, groups and
    a bias, against onnxruntime."""
    ort = pytest.importorskip("onnxruntime")
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, 4, 5, 6, 7)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 2, 3) if transpose else (6, 2, 3, 2, 3)
                            ).astype(np.float32)
    b = rng.standard_normal((6,)).astype(np.float32)
    attrs = dict(strides=[2, 1, 2], pads=[1, 0, 1, 0, 1, 1], dilations=[1, 2, 1], group=2)
    if transpose:
        attrs["output_padding"] = [1, 0, 0]
    node = helper.make_node("ConvTranspose" if transpose else "Conv", ["x", "w", "b"], ["y"],
                            **attrs)
    m = _model([node], [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
               [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
               [helper.make_tensor("w", TensorProto.FLOAT, list(w.shape), w.reshape(-1)),
                helper.make_tensor("b", TensorProto.FLOAT, [6], b)])
    expected = ort.InferenceSession(m.SerializeToString()).run(None, {"x": x})[0]
    np.testing.assert_allclose(_run(from_onnx(m), x), expected, rtol=1e-4, atol=1e-4)


def test_lstm_inside_an_if_on_a_runtime_condition():
    """An If whose condition is a graph input, with an LSTM (two outputs) in one branch."""
    ort = pytest.importorskip("onnxruntime")
    from onnx import numpy_helper

    rng = np.random.default_rng(2)
    t, b, i, h = 3, 1, 4, 5
    w = numpy_helper.from_array(rng.standard_normal((1, 4 * h, i)).astype(np.float32), "W")
    r = numpy_helper.from_array(rng.standard_normal((1, 4 * h, h)).astype(np.float32), "R")
    then_g = helper.make_graph(
        [helper.make_node("LSTM", ["x", "W", "R"], ["y", "yh"], hidden_size=h)], "then", [],
        [helper.make_tensor_value_info("yh", TensorProto.FLOAT, [1, b, h]),
         helper.make_tensor_value_info("y", TensorProto.FLOAT, [t, 1, b, h])], [w, r])
    consts = {"shape_h": [1, b, h], "shape_y": [t, 1, b, h]}
    else_g = helper.make_graph(
        [helper.make_node("ReduceMean", ["x"], ["m"], keepdims=1),
         helper.make_node("Expand", ["m", "shape_h"], ["e"]),
         helper.make_node("Expand", ["m", "shape_y"], ["e4"])], "else", [],
        [helper.make_tensor_value_info("e", TensorProto.FLOAT, [1, b, h]),
         helper.make_tensor_value_info("e4", TensorProto.FLOAT, [t, 1, b, h])],
        [numpy_helper.from_array(np.array(v, np.int64), k) for k, v in consts.items()])
    m = _model([helper.make_node("If", ["c"], ["out", "out2"], then_branch=then_g,
                                 else_branch=else_g)],
               [helper.make_tensor_value_info("c", TensorProto.BOOL, []),
                helper.make_tensor_value_info("x", TensorProto.FLOAT, [t, b, i])],
               [helper.make_tensor_value_info("out", TensorProto.FLOAT, None),
                helper.make_tensor_value_info("out2", TensorProto.FLOAT, None)])
    mod = from_onnx(m)
    sess = ort.InferenceSession(m.SerializeToString())
    x = rng.standard_normal((t, b, i)).astype(np.float32)
    for c in (True, False):
        ours = _run(mod, np.array(c), x)
        for a, e in zip(ours, sess.run(None, {"c": np.array(c), "x": x})):
            np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-5)
