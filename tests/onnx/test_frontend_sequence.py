"""ONNX sequences and optionals end to end (import -> relax.build -> VM), compared with
onnx's reference evaluator: sequence operators, sequence graph inputs (length from
shape_dict), optionals present and empty, If/Loop carrying sequences, and the errors."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

import tvm.runtime  # noqa: E402
from tvm import relax  # noqa: E402
from tvm.relax.frontend.onnx import OnnxImportError, OpNotImplemented, from_onnx  # noqa: E402

F = TensorProto.FLOAT


def _np(value):
    if isinstance(value, (list, tuple)):
        return [_np(v) for v in value]
    return value.numpy()


def _run(mod, *args, n_outputs=1):
    vm = relax.VirtualMachine(relax.build(mod, target="llvm"), tvm.runtime.cpu())
    out = vm["main"](*[tuple(a) if isinstance(a, list) else a for a in args])
    return [_np(out)] if n_outputs == 1 else [_np(o) for o in out]


def _model(nodes, inputs, outputs, inits=(), opset=18):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _seq_info(name, elem=F, shape=None):
    return helper.make_tensor_sequence_value_info(name, elem, shape)


def _check(model, feeds, shape_dict=None, args=None):
    """Run ``model`` on our VM and on onnx.reference; the outputs must agree exactly."""
    expected = ReferenceEvaluator(model).run(None, feeds)
    mod = from_onnx(model, shape_dict=shape_dict)
    got = _run(mod, *(args if args is not None else feeds.values()),
               n_outputs=len(model.graph.output))
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        if isinstance(e, list):
            assert isinstance(g, list) and len(g) == len(e)
            for gi, ei in zip(g, e):
                assert gi.shape == ei.shape and gi.dtype == ei.dtype
                np.testing.assert_allclose(gi, ei, rtol=1e-6)
        else:
            assert g.shape == np.shape(e)
            np.testing.assert_allclose(g, e, rtol=1e-6)
    return mod


def test_sequence_ops_on_constructed_sequence():
    nodes = [
        helper.make_node("SequenceConstruct", ["a", "b"], ["s0"]),
        helper.make_node("SequenceInsert", ["s0", "c", "p0"], ["s1"]),      # at the front
        helper.make_node("SequenceInsert", ["s1", "a"], ["s2"]),            # at the back
        helper.make_node("SequenceErase", ["s2", "pm2"], ["s3"]),           # erase b
        helper.make_node("SequenceAt", ["s3", "pm1"], ["last"]),
        helper.make_node("SequenceLength", ["s3"], ["n"]),
        helper.make_node("ConcatFromSequence", ["s3"], ["cat"], axis=1),
        helper.make_node("ConcatFromSequence", ["s3"], ["stk"], axis=-1, new_axis=1),
    ]
    inits = [helper.make_tensor("p0", TensorProto.INT64, [], [0]),
             helper.make_tensor("pm1", TensorProto.INT64, [], [-1]),
             helper.make_tensor("pm2", TensorProto.INT32, [], [-2])]
    m = _model(nodes, [helper.make_tensor_value_info(n, F, [2, 3]) for n in "abc"],
               [helper.make_tensor_value_info("last", F, None),
                helper.make_tensor_value_info("n", TensorProto.INT64, []),
                helper.make_tensor_value_info("cat", F, None),
                helper.make_tensor_value_info("stk", F, None),
                _seq_info("s3")], inits)
    rng = np.random.default_rng(0)
    feeds = {n: rng.standard_normal((2, 3)).astype(np.float32) for n in "abc"}
    _check(m, feeds)


def test_sequence_input_with_element_shapes_and_identity_output():
    m = _model([helper.make_node("Identity", ["s"], ["t"]),
                helper.make_node("SequenceAt", ["s", "one"], ["x1"])],
               [_seq_info("s")], [_seq_info("t"), helper.make_tensor_value_info("x1", F, None)],
               [helper.make_tensor("one", TensorProto.INT64, [], [1])])
    seq = [np.arange(6, dtype=np.float32).reshape(2, 3), np.ones((4,), np.float32)]
    mod = _check(m, {"s": seq}, shape_dict={"s": [[2, 3], [4]]})
    param = mod["main"].params[0].struct_info
    assert isinstance(param, relax.TupleStructInfo) and len(param.fields) == 2


def test_sequence_input_as_a_length_keeps_symbolic_element_dims():
    body = helper.make_graph([helper.make_node("Mul", ["e", "w"], ["o"])], "body",
                             [helper.make_tensor_value_info("e", F, ["n"]),
                              helper.make_tensor_value_info("w", F, ["n"])],
                             [helper.make_tensor_value_info("o", F, ["n"])])
    m = _model([helper.make_node("SequenceMap", ["s", "w"], ["t"], body=body)],
               [_seq_info("s", shape=["n"]), helper.make_tensor_value_info("w", F, ["n"])],
               [_seq_info("t", shape=["n"])])
    mod = from_onnx(m, shape_dict={"s": 3})
    vm = relax.VirtualMachine(relax.build(mod, target="llvm"), tvm.runtime.cpu())
    for n in (2, 5):
        seq = [np.full((n,), k, np.float32) for k in range(3)]
        w = np.arange(n, dtype=np.float32)
        got = _np(vm["main"](tuple(seq), w))
        for k in range(3):
            np.testing.assert_allclose(got[k], seq[k] * w)


def test_sequence_input_without_length_is_rejected_naming_the_input():
    m = _model([helper.make_node("SequenceLength", ["seq_in"], ["n"])], [_seq_info("seq_in")],
               [helper.make_tensor_value_info("n", TensorProto.INT64, [])])
    with pytest.raises(OpNotImplemented, match=r"'seq_in'.*shape_dict"):
        from_onnx(m)
    with pytest.raises(OnnxImportError, match="not valid for a sequence"):
        from_onnx(m, shape_dict={"seq_in": "three"})


@pytest.mark.parametrize("split,attrs", [
    (np.array(4, np.int64), {"axis": 1}),                 # chunks of 4, the last of 2
    (np.array([1, 2], np.int64), {"axis": 0}),
    (None, {"axis": 1, "keepdims": 0}),
    (None, {"axis": -2}),
])
def test_split_to_sequence(split, attrs):
    inputs = ["x"] if split is None else ["x", "split"]
    inits = [] if split is None else [helper.make_tensor(
        "split", TensorProto.INT64, list(split.shape), split.reshape(-1))]
    m = _model([helper.make_node("SplitToSequence", inputs, ["s"], **attrs)],
               [helper.make_tensor_value_info("x", F, [3, 10])], [_seq_info("s")], inits)
    _check(m, {"x": np.arange(30, dtype=np.float32).reshape(3, 10)})


def test_sequence_map_with_a_sequence_and_a_tensor():
    body = helper.make_graph(
        [helper.make_node("Mul", ["e", "w"], ["o"]), helper.make_node("Shape", ["e"], ["sh"])],
        "body", [helper.make_tensor_value_info("e", F, None),
                 helper.make_tensor_value_info("w", F, None)],
        [helper.make_tensor_value_info("o", F, None),
         helper.make_tensor_value_info("sh", TensorProto.INT64, None)])
    m = _model([helper.make_node("SequenceMap", ["s", "w"], ["t", "shapes"], body=body)],
               [_seq_info("s"), helper.make_tensor_value_info("w", F, [3])],
               [_seq_info("t"), _seq_info("shapes", TensorProto.INT64)])
    seq = [np.ones((2, 3), np.float32), np.full((3,), 2.0, np.float32)]
    w = np.array([1.0, 2.0, 3.0], np.float32)
    _check(m, {"s": seq, "w": w}, shape_dict={"s": [[2, 3], [3]]})


def test_sequence_at_runtime_position_over_equal_shapes():
    m = _model([helper.make_node("SplitToSequence", ["x"], ["s"], axis=0),
                helper.make_node("SequenceAt", ["s", "i"], ["y"])],
               [helper.make_tensor_value_info("x", F, [4, 2]),
                helper.make_tensor_value_info("i", TensorProto.INT64, [])],
               [helper.make_tensor_value_info("y", F, None)])
    x = np.arange(8, dtype=np.float32).reshape(4, 2)
    vm = relax.VirtualMachine(relax.build(from_onnx(m), target="llvm"), tvm.runtime.cpu())
    for i in (0, 3, -1, -4):
        np.testing.assert_array_equal(vm["main"](x, np.array(i, np.int64)).numpy(), x[[i]])


def test_optional_tensor_input_present_and_declared_empty():
    def model(get: bool):
        nodes = [helper.make_node("OptionalHasElement", ["o"], ["has"])]
        outs = [helper.make_tensor_value_info("has", TensorProto.BOOL, [])]
        if get:
            nodes.append(helper.make_node("OptionalGetElement", ["o"], ["v"]))
            outs.append(helper.make_tensor_value_info("v", F, [2]))
        opt = helper.make_value_info(
            "o", helper.make_optional_type_proto(helper.make_tensor_type_proto(F, [2])))
        return _model(nodes, [opt], outs)

    x = np.array([1.0, 2.0], np.float32)
    has, v = _run(from_onnx(model(True)), x, n_outputs=2)
    assert bool(has) is True
    np.testing.assert_array_equal(v, x)
    empty = from_onnx(model(False), shape_dict={"o": None})
    assert len(empty["main"].params) == 0
    assert bool(_run(empty)[0]) is False
    with pytest.raises(OnnxImportError, match=r"OptionalGetElement.*without a value"):
        from_onnx(model(True), shape_dict={"o": None})


def test_empty_optional_as_graph_output_is_rejected():
    tp = helper.make_optional_type_proto(helper.make_tensor_type_proto(F, [2]))
    m = _model([helper.make_node("Optional", [], ["o"], type=helper.make_tensor_type_proto(F, [2]))],
               [], [helper.make_value_info("o", tp)])
    with pytest.raises(OpNotImplemented, match="'o' is an empty optional"):
        from_onnx(m)


def test_none_shape_for_a_plain_tensor_input_is_an_error():
    m = _model([helper.make_node("Identity", ["x"], ["y"])],
               [helper.make_tensor_value_info("x", F, [2])],
               [helper.make_tensor_value_info("y", F, [2])])
    with pytest.raises(OnnxImportError, match="declares an empty optional"):
        from_onnx(m, shape_dict={"x": None})


def _branch(name, values):
    consts = [helper.make_node("Constant", [], [f"{name}{k}"],
                               value=helper.make_tensor(f"{name}{k}_t", F, [2], v))
              for k, v in enumerate(values)]
    seq = helper.make_node("SequenceConstruct", [f"{name}{k}" for k in range(len(values))],
                           [f"{name}_out"])
    return helper.make_graph(consts + [seq], name, [], [_seq_info(f"{name}_out")])


def test_if_with_runtime_condition_selects_sequences_elementwise():
    m = _model([helper.make_node("If", ["c"], ["s"], then_branch=_branch("t", [[1, 2], [3, 4]]),
                                 else_branch=_branch("e", [[5, 6], [7, 8]]))],
               [helper.make_tensor_value_info("c", TensorProto.BOOL, [])], [_seq_info("s")])
    mod = from_onnx(m)
    for c in (True, False):
        expected = ReferenceEvaluator(m).run(None, {"c": np.array(c)})[0]
        got = _run(mod, np.array(c))[0]
        for g, e in zip(got, expected):
            np.testing.assert_array_equal(g, e)


def test_if_with_runtime_condition_and_sequences_of_different_lengths_is_rejected():
    m = _model([helper.make_node("If", ["c"], ["s"], then_branch=_branch("t", [[1, 2]]),
                                 else_branch=_branch("e", [[5, 6], [7, 8]]))],
               [helper.make_tensor_value_info("c", TensorProto.BOOL, [])], [_seq_info("s")])
    with pytest.raises(OpNotImplemented, match=r"ONNX If .*a sequence of 1 and a sequence of 2"):
        from_onnx(m)


def _loop_model(carried_type, opt_input: bool):
    """Loop appending x[:i+1] to a carried sequence (an optional one when ``opt_input``:
    started from [0.0] when empty), as in the ONNX node suite's loop13_seq/loop16_seq_none."""
    nodes = [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
             helper.make_node("Add", ["it", "one"], ["end"]),
             helper.make_node("Unsqueeze", ["end", "zero"], ["end1"]),
             helper.make_node("Slice", ["x", "zero1", "end1"], ["piece"])]
    seq_in = "seq_in"
    if opt_input:
        then_g = helper.make_graph(
            [helper.make_node("Constant", [], ["c0"], value=helper.make_tensor("c", F, [], [0.0])),
             helper.make_node("SequenceConstruct", ["c0"], ["init"])], "then", [],
            [_seq_info("init")])
        else_g = helper.make_graph([helper.make_node("OptionalGetElement", ["opt_in"], ["got"])],
                                   "else", [], [_seq_info("got")])
        nodes += [helper.make_node("OptionalHasElement", ["opt_in"], ["has"]),
                  helper.make_node("Not", ["has"], ["none"]),
                  helper.make_node("If", ["none"], ["seq_in"], then_branch=then_g,
                                   else_branch=else_g)]
    nodes.append(helper.make_node("SequenceInsert", [seq_in, "piece"], ["seq_out"]))
    body = helper.make_graph(
        nodes, "body",
        [helper.make_tensor_value_info("it", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_value_info("opt_in" if opt_input else "seq_in", carried_type)],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []), _seq_info("seq_out")],
        [helper.make_tensor("one", TensorProto.INT64, [], [1]),
         helper.make_tensor("zero", TensorProto.INT64, [1], [0]),
         helper.make_tensor("zero1", TensorProto.INT64, [1], [0])])
    return _model([helper.make_node("Loop", ["M", "go", "s0"], ["s"], body=body)],
                  [helper.make_value_info("s0", carried_type)], [_seq_info("s")],
                  [helper.make_tensor("M", TensorProto.INT64, [], [3]),
                   helper.make_tensor("go", TensorProto.BOOL, [], [True]),
                   helper.make_tensor("x", F, [5], [1, 2, 3, 4, 5])], opset=16)


def test_loop_carrying_a_sequence_from_an_input():
    seq_t = helper.make_sequence_type_proto(helper.make_tensor_type_proto(F, None))
    m = _loop_model(seq_t, opt_input=False)
    _check(m, {"s0": [np.zeros((2,), np.float32)]}, shape_dict={"s0": [[2]]})


@pytest.mark.parametrize("present", [True, False])
def test_loop_carrying_an_optional_sequence(present):
    opt_t = helper.make_optional_type_proto(
        helper.make_sequence_type_proto(helper.make_tensor_type_proto(F, None)))
    m = _loop_model(opt_t, opt_input=True)
    if present:
        _check(m, {"s0": [np.array(7.0, np.float32)]}, shape_dict={"s0": [[]]})
    else:
        expected = ReferenceEvaluator(m).run(None, {"s0": None})[0]
        got = _run(from_onnx(m, shape_dict={"s0": None}))[0]
        assert [g.tolist() for g in got] == [e.tolist() for e in expected]


def test_errors_name_the_node():
    m = _model([helper.make_node("SequenceConstruct", ["a"], ["s"]),
                helper.make_node("SequenceAt", ["s", "five"], ["y"], name="at5")],
               [helper.make_tensor_value_info("a", F, [2])],
               [helper.make_tensor_value_info("y", F, None)],
               [helper.make_tensor("five", TensorProto.INT64, [], [5])])
    with pytest.raises(OnnxImportError, match=r"SequenceAt \(node 'at5'.*out of range"):
        from_onnx(m)
    m = _model([helper.make_node("SequenceConstruct", ["a"], ["s"]),
                helper.make_node("Add", ["s", "a"], ["y"], name="bad_add")],
               [helper.make_tensor_value_info("a", F, [2])],
               [helper.make_tensor_value_info("y", F, None)])
    with pytest.raises(OpNotImplemented, match=r"Add \(node 'bad_add'.*input 0 .*a sequence"):
        from_onnx(m)
    m = _model([helper.make_node("SequenceConstruct", ["a", "b"], ["s"], name="mixed")],
               [helper.make_tensor_value_info("a", F, [2]),
                helper.make_tensor_value_info("b", TensorProto.INT64, [2])], [_seq_info("s")])
    with pytest.raises(OnnxImportError, match=r"mixed.*dtype int64.*float32"):
        from_onnx(m)
