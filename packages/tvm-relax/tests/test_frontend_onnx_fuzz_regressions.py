"""Malformed ONNX models the fuzzer (fuzz/onnx_models.py) found: each is refused with an
``OnnxImportError`` naming what is wrong (before, a bare ValueError or TypeError escaped, or
a shape expression divided by zero at run time)."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from tvm.relax.frontend.onnx import from_onnx  # noqa: E402
from tvm.relax.frontend.onnx.common import OnnxImportError  # noqa: E402


def _model(nodes, inputs, outputs, inits=(), opset=13, name="g"):
    graph = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def test_an_initializer_whose_dims_disagree_with_its_data_is_named():
    w = numpy_helper.from_array(np.ones((2, 3), "float32"), "w")
    del w.dims[:]  # 6 values, dims say a scalar
    model = _model([helper.make_node("Add", ["x", "w"], ["y"])],
                   [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])], [w])
    with pytest.raises(OnnxImportError, match=r"initializer 'w' \(dims \[\]"):
        from_onnx(model)


def test_a_string_field_that_is_not_utf8_is_refused():
    model = _model([helper.make_node("Relu", ["x"], ["y"])],
                   [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])], name="conv")
    data = model.SerializeToString()
    at = data.index(b"conv")
    broken = onnx.ModelProto.FromString(data[:at] + b"\xe3" + data[at + 1:])
    with pytest.raises(OnnxImportError, match=r"model\.graph\.name is not valid UTF-8"):
        from_onnx(broken)


def test_softmax_before_opset_13_on_an_empty_batch_imports():
    model = _model([helper.make_node("Softmax", ["x"], ["y"], axis=1)],
                   [helper.make_tensor_value_info("x", TensorProto.FLOAT, [0, 4])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, [0, 4])], opset=11)
    mod = from_onnx(model)
    assert "//" not in mod.script()  # the flattened shape is computed, not a 0 // 0


def test_reshape_refuses_to_infer_minus_one_from_zero_elements():
    from tvm import relax
    from tvm.relax import op
    from tvm.relax.errors import StructInfoError

    x = relax.Var("x", relax.TensorStructInfo([0, 3], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with pytest.raises(StructInfoError, match="cannot infer the -1"):
            bb.emit(op.reshape(x, [0, -1]))
        bb.emit_func_output(x)
