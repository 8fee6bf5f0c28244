"""ONNX importer, structure only (no compilation): inputs, symbolic dims, initializers,
folding of shape subgraphs, errors.  Skipped without the ``onnx`` package."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

from tvm import relax, tir  # noqa: E402
from tvm.relax.frontend import detach_params  # noqa: E402
from tvm.relax.frontend.onnx import OnnxImportError, OpNotImplemented, from_onnx  # noqa: E402


def _model(nodes, inputs, outputs, inits=(), opset=17):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _vi(name, shape, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, shape)


def _i64(name, values):
    arr = np.asarray(values, dtype=np.int64)
    return helper.make_tensor(name, TensorProto.INT64, arr.shape, arr.reshape(-1).tolist())


def _shape(sinfo):
    return [int(d.value) if isinstance(d, tir.IntImm) else d for d in sinfo.shape_values]


def test_symbolic_dims_named_after_dim_param():
    m = _model([helper.make_node("Relu", ["x"], ["y"])], [_vi("x", ["batch", 3, None])],
               [_vi("y", None)])
    mod = from_onnx(m)
    main = mod["main"]
    assert relax.analysis.well_formed(mod)
    dims = _shape(main.params[0].struct_info)
    assert isinstance(dims[0], tir.Var) and dims[0].name == "batch" and dims[0].dtype == "int64"
    assert dims[1] == 3
    assert isinstance(dims[2], tir.Var) and dims[2] is not dims[0]
    assert _shape(main.ret_struct_info)[0] is dims[0]


def test_same_dim_param_is_one_variable():
    m = _model([helper.make_node("Add", ["a", "b"], ["y"])],
               [_vi("a", ["n", 4]), _vi("b", ["n", 4])], [_vi("y", None)])
    main = from_onnx(m)["main"]
    assert _shape(main.params[0].struct_info)[0] is _shape(main.params[1].struct_info)[0]


def test_shape_dict_and_dtype_dict_override():
    m = _model([helper.make_node("Relu", ["x"], ["y"])], [_vi("x", ["batch", 3])],
               [_vi("y", None)])
    main = from_onnx(m, shape_dict={"x": [2, "k"]}, dtype_dict={"x": "float16"})["main"]
    sinfo = main.params[0].struct_info
    assert sinfo.dtype == "float16"
    dims = _shape(sinfo)
    assert dims[0] == 2 and dims[1].name == "k"


def test_initializers_become_constants_or_params():
    w = helper.make_tensor("w", TensorProto.FLOAT, [3, 3], np.eye(3, dtype=np.float32).reshape(-1))
    m = _model([helper.make_node("MatMul", ["x", "w"], ["y"])], [_vi("x", [2, 3])],
               [_vi("y", None)], [w])
    main = from_onnx(m)["main"]
    assert len(main.params) == 1
    mod = from_onnx(m, keep_params_in_input=True)
    main = mod["main"]
    assert len(main.params) == 2 and main.attrs["num_input"] == 1
    mod2, params = detach_params(mod)
    assert "params" not in (mod2["main"].attrs or {})
    np.testing.assert_array_equal(params["main"][0], np.eye(3, dtype=np.float32))


def test_shape_subgraph_folds_to_symbolic_reshape():
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "zero"], ["b"], axis=0),
        helper.make_node("Unsqueeze", ["b", "ax0"], ["b1"]),
        helper.make_node("Concat", ["b1", "minus1"], ["target"], axis=0),
        helper.make_node("Reshape", ["x", "target"], ["y"]),
    ]
    inits = [_i64("zero", 0), _i64("ax0", [0]), _i64("minus1", [-1])]
    m = _model(nodes, [_vi("x", ["batch", 4, 5])], [_vi("y", None)], inits)
    mod = from_onnx(m)
    main = mod["main"]
    batch = _shape(main.params[0].struct_info)[0]
    out = _shape(main.ret_struct_info)
    assert out[0] is batch and out[1] == 20
    # nothing but the reshape survives
    calls = [b.value for blk in main.body.blocks for b in blk.bindings
             if isinstance(b.value, relax.Call)]
    assert [c.op.name for c in calls] == ["relax.reshape"]


def test_constant_subgraph_is_folded():
    nodes = [helper.make_node("Add", ["c1", "c2"], ["c3"]),
             helper.make_node("Mul", ["x", "c3"], ["y"])]
    inits = [helper.make_tensor("c1", TensorProto.FLOAT, [2], [1.0, 2.0]),
             helper.make_tensor("c2", TensorProto.FLOAT, [2], [3.0, 4.0])]
    m = _model(nodes, [_vi("x", [2])], [_vi("y", None)], inits)
    main = from_onnx(m)["main"]
    calls = [b.value for blk in main.body.blocks for b in blk.bindings
             if isinstance(b.value, relax.Call)]
    assert len(calls) == 1
    const = calls[0].args[1]
    np.testing.assert_array_equal(const.data, np.array([4.0, 6.0], np.float32))


def test_multiple_outputs_make_a_tuple():
    m = _model([helper.make_node("Split", ["x"], ["a", "b"], axis=0, num_outputs=2)],
               [_vi("x", [4, 2])], [_vi("a", None), _vi("b", None)], opset=18)
    ret = from_onnx(m)["main"].ret_struct_info
    assert isinstance(ret, relax.TupleStructInfo) and len(ret.fields) == 2
    assert _shape(ret.fields[0]) == [2, 2]


def test_unsupported_op_names_op_node_and_opset():
    m = _model([helper.make_node("NoSuchOp", ["x"], ["y"], name="mystery")],
               [_vi("x", [2])], [_vi("y", None)])
    with pytest.raises(OpNotImplemented) as info:
        from_onnx(m)
    text = str(info.value)
    assert "NoSuchOp" in text and "mystery" in text and "opset 17" in text


def test_unsupported_attribute_value_is_reported():
    m = _model([helper.make_node("Gelu", ["x"], ["y"], name="g0", approximate="cubic")],
               [_vi("x", [2])], [_vi("y", None)], opset=20)
    with pytest.raises(OpNotImplemented, match=r"Gelu \(node 'g0', opset 20\).*approximate"):
        from_onnx(m)


def test_op_not_defined_at_opset_is_reported():
    m = _model([helper.make_node("Gelu", ["x"], ["y"], name="early")],
               [_vi("x", [2])], [_vi("y", None)], opset=13)
    with pytest.raises(OpNotImplemented, match="not defined at opset 13"):
        from_onnx(m)


def test_unsupported_dtype_is_reported():
    m = _model([helper.make_node("Identity", ["x"], ["y"])],
               [_vi("x", [2], TensorProto.STRING)], [_vi("y", None)])
    with pytest.raises(OpNotImplemented, match="string"):
        from_onnx(m)


def test_bad_graph_reports_node():
    m = _model([helper.make_node("Add", ["x", "missing"], ["y"], name="adder")],
               [_vi("x", [2])], [_vi("y", None)])
    with pytest.raises(OnnxImportError, match="adder.*missing"):
        from_onnx(m)


def test_opset_override_selects_semantics():
    # Squeeze takes axes as an attribute before opset 13
    node = helper.make_node("Squeeze", ["x"], ["y"], axes=[0])
    m = _model([node], [_vi("x", [1, 3])], [_vi("y", None)], opset=11)
    assert _shape(from_onnx(m)["main"].ret_struct_info) == [3]


def test_from_onnx_rejects_other_types():
    with pytest.raises(TypeError, match="ModelProto"):
        from_onnx(42)


def _calls(main):
    return [b.value.op.name for blk in main.body.blocks for b in blk.bindings
            if isinstance(b.value, relax.Call)]


def test_symbolic_shape_arithmetic_folds_through_the_relax_ops():
    """Shape -> Slice/Gather -> Div/Mul/Cast/Squeeze -> Concat -> Reshape: every node is
    evaluated at import time by the Relax ops' own numpy semantics, symbolic dims included."""
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Cast", ["s"], ["s32"], to=TensorProto.INT32),
        helper.make_node("Cast", ["s32"], ["s64"], to=TensorProto.INT64),
        helper.make_node("Slice", ["s64", "zero1", "one1"], ["b1"]),
        helper.make_node("Gather", ["s64", "two"], ["w"], axis=0),
        helper.make_node("Div", ["w", "two"], ["half"]),
        helper.make_node("Unsqueeze", ["half", "zero1"], ["half1"]),
        helper.make_node("Mul", ["half1", "four1"], ["hx4"]),
        helper.make_node("Squeeze", ["hx4", "zero1"], ["hx4s"]),
        helper.make_node("Unsqueeze", ["hx4s", "zero1"], ["hx4u"]),
        helper.make_node("Concat", ["b1", "hx4u", "minus1"], ["target"], axis=0),
        helper.make_node("Identity", ["target"], ["target2"]),
        helper.make_node("Reshape", ["x", "target2"], ["y"]),
    ]
    inits = [_i64("zero1", [0]), _i64("one1", [1]), _i64("two", 2), _i64("four1", [4]),
             _i64("minus1", [-1])]
    m = _model(nodes, [_vi("x", ["batch", 3, 8])], [_vi("y", None)], inits)
    main = from_onnx(m)["main"]
    batch = _shape(main.params[0].struct_info)[0]
    out = _shape(main.ret_struct_info)
    assert out[0] is batch and out[1] == 16
    assert _calls(main) == ["relax.reshape"]


def test_a_shape_value_that_does_not_fold_is_computed_at_run_time():
    """Equal on a symbolic dimension has no static value: the node is converted normally,
    with the shape values materialised as a tensor."""
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Equal", ["s", "ones"], ["eq"]),
    ]
    inits = [_i64("ones", [1, 1])]
    m = _model(nodes, [_vi("x", ["batch", 1])], [_vi("eq", None)], inits)
    main = from_onnx(m)["main"]
    assert "relax.equal" in _calls(main)
    assert main.ret_struct_info.dtype == "bool"


def test_constant_nodes_fold_through_the_relax_ops_whatever_their_size():
    big = np.arange(1 << 17, dtype=np.float32)  # above onnx.reference's folding limit
    nodes = [helper.make_node("Mul", ["c", "c"], ["c2"]),
             helper.make_node("Add", ["x", "c2"], ["y"])]
    inits = [helper.make_tensor("c", TensorProto.FLOAT, big.shape, big.tolist())]
    m = _model(nodes, [_vi("x", [1 << 17])], [_vi("y", None)], inits)
    main = from_onnx(m)["main"]
    assert _calls(main) == ["relax.add"]


def test_tile_of_a_constant_folds_through_relax_tile():
    c = np.arange(1 << 15, dtype=np.float32).reshape(2, -1)
    nodes = [helper.make_node("Tile", ["c", "reps"], ["t"]),
             helper.make_node("Add", ["x", "t"], ["y"])]
    inits = [helper.make_tensor("c", TensorProto.FLOAT, c.shape, c.reshape(-1).tolist()),
             _i64("reps", [3, 1])]
    m = _model(nodes, [_vi("x", [6, 1 << 14])], [_vi("y", None)], inits)
    main = from_onnx(m)["main"]
    assert _calls(main) == ["relax.add"]
    np.testing.assert_array_equal(main.body.blocks[0].bindings[0].value.args[1].data,
                                  np.tile(c, [3, 1]))


def _ops(mod):
    return [b.value.op.name for block in mod["main"].body.blocks for b in block.bindings
            if hasattr(b.value, "op") and hasattr(b.value.op, "name")]


def test_layer_normalization_is_one_relax_layer_norm():
    """LayerNormalization over the last axis with gamma and beta of that shape is one
    relax.nn.layer_norm (one kernel, statistics per row); with its mean/inv-std outputs
    asked for it stays decomposed."""
    g = helper.make_tensor("g", TensorProto.FLOAT, [8], np.ones(8, np.float32).tolist())
    b = helper.make_tensor("b", TensorProto.FLOAT, [8], np.zeros(8, np.float32).tolist())
    node = helper.make_node("LayerNormalization", ["x", "g", "b"], ["y"], axis=-1,
                            epsilon=1e-5)
    m = _model([node], [_vi("x", ["n", "s", 8])], [_vi("y", None)], [g, b])
    assert "relax.nn.layer_norm" in _ops(from_onnx(m))
    node = helper.make_node("LayerNormalization", ["x", "g", "b"], ["y", "mean", "inv"],
                            axis=-1)
    m = _model([node], [_vi("x", ["n", "s", 8])],
               [_vi("y", None), _vi("mean", None), _vi("inv", None)], [g, b])
    assert "relax.nn.layer_norm" not in _ops(from_onnx(m))
