"""``relax.bitcast``, ``relax.cast_e8m0`` and ``relax.nn.max_pool_with_indices``: StructInfo
inference and its errors, and the ONNX frontend emitting them (registered ops, no private
kernels) for BitCast, Cast to float8_e8m0fnu and MaxPool with indices; pooling over 3 spatial
axes uses ``relax.nn.{max,avg}_pool3d``.  Their values are checked against the numpy
semantics in ``test_op_numpy_semantics`` and against ONNX in the node suite."""

from __future__ import annotations

import numpy as np
import pytest
from graph_pass_testing import op_names

from tvm import relax, tir
from tvm.relax import op
from tvm.relax.errors import StructInfoError


def _infer(call):
    return relax.BlockBuilder().normalize(call).struct_info


def _x(shape, dtype="float32"):
    return relax.Var("x", relax.TensorStructInfo(shape, dtype))


def _shape(sinfo):
    return [int(d.value) if isinstance(d, tir.IntImm) else d for d in sinfo.shape_values]


def test_bitcast_keeps_the_shape_and_changes_the_dtype():
    n = tir.Var("n", "int64")
    s = _infer(op.bitcast(_x([n, 4]), "int32"))
    assert s.dtype == "int32" and s.shape_values[0].same_as(n)
    assert _infer(op.bitcast(_x([2], "uint16"), "bfloat16")).dtype == "bfloat16"


@pytest.mark.parametrize("src,to,msg", [
    ("float32", "int16", "differ in width"),
    ("bool", "int8", "bool"),
    ("int8", "bool", "bool"),
])
def test_bitcast_rejects(src, to, msg):
    with pytest.raises(StructInfoError, match=msg):
        _infer(op.bitcast(_x([3], src), to))


def test_cast_e8m0_inference_and_checks():
    assert _infer(op.cast_e8m0(_x([2, 3], "float16"), "nearest")).dtype == "float8_e8m0fnu"
    with pytest.raises(StructInfoError, match="floating-point"):
        _infer(op.cast_e8m0(_x([2], "int32")))
    with pytest.raises(ValueError, match="round_mode"):
        op.cast_e8m0(_x([2]), "even")


def test_max_pool_with_indices_shapes():
    s = _infer(op.nn.max_pool_with_indices(_x([1, 2, 5, 6, 7]), [2, 3, 2], [2, 1, 2],
                                           [0, 1, 1, 1, 0, 0], ceil_mode=True))
    values, index = s.fields
    assert _shape(values) == _shape(index) == [1, 2, 3, 5, 4]
    assert values.dtype == "float32" and index.dtype == "int64"
    # four spatial axes
    s = _infer(op.nn.max_pool_with_indices(_x([1, 1, 3, 3, 3, 3]), [2, 2, 2, 2]))
    assert _shape(s.fields[0]) == [1, 1, 2, 2, 2, 2]
    with pytest.raises(StructInfoError, match="dimensions"):
        _infer(op.nn.max_pool_with_indices(_x([1, 2, 5]), [2, 2]))
    with pytest.raises(ValueError, match="storage_order"):
        op.nn.max_pool_with_indices(_x([1, 2, 5]), [2], storage_order=2)


# -- the ONNX frontend -------------------------------------------------------------------------
onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

from tvm.relax.frontend.onnx import from_onnx  # noqa: E402


def _import(node, in_shape, in_type, outs, opset=24):
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", in_type, in_shape)],
        [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None) for o in outs])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    mod = from_onnx(model)
    assert relax.analysis.well_formed(mod)
    return op_names(mod)


def _private_kernels(names):
    return [n for n in names if n == "call_tir" or n.startswith("relax.call_tir")]


def test_onnx_bitcast_is_relax_bitcast():
    names = _import(helper.make_node("BitCast", ["x"], ["y"], to=TensorProto.INT32), [2, 3],
                    TensorProto.FLOAT, ["y"], opset=26)
    assert "relax.bitcast" in names and not _private_kernels(names)


def test_onnx_cast_to_e8m0_is_relax_cast_e8m0():
    names = _import(helper.make_node("Cast", ["x"], ["y"], to=TensorProto.FLOAT8E8M0,
                                     round_mode="nearest"), [4], TensorProto.FLOAT16, ["y"])
    assert "relax.cast_e8m0" in names and not _private_kernels(names)


@pytest.mark.parametrize("op_type,expected", [
    ("MaxPool", "relax.nn.max_pool3d"), ("AveragePool", "relax.nn.avg_pool3d"),
    ("LpPool", "relax.nn.avg_pool3d"),
])
def test_onnx_3d_pooling_uses_the_pool3d_ops(op_type, expected):
    names = _import(helper.make_node(op_type, ["x"], ["y"], kernel_shape=[2, 2, 2]),
                    [1, 2, 4, 4, 4], TensorProto.FLOAT, ["y"], opset=22)
    assert expected in names and not _private_kernels(names)


def test_onnx_max_pool_indices_is_max_pool_with_indices():
    node = helper.make_node("MaxPool", ["x"], ["y", "i"], kernel_shape=[2, 2],
                            storage_order=1)
    names = _import(node, [1, 2, 4, 4], TensorProto.FLOAT, ["y", "i"], opset=22)
    assert "relax.nn.max_pool_with_indices" in names and not _private_kernels(names)


def test_numpy_max_pool_with_indices_picks_the_first_maximum():
    from tvm.relax.transform.numpy_eval import get_numpy_evaluator

    x = np.array([[[[1, 3, 3], [0, 3, 2]]]], "float32")
    call = relax.BlockBuilder().normalize(op.nn.max_pool_with_indices(
        relax.const(x), [2, 2], [1, 1]))
    values, index = get_numpy_evaluator("relax.nn.max_pool_with_indices")(call, x)
    np.testing.assert_array_equal(values, [[[[3, 3]]]])
    np.testing.assert_array_equal(index, [[[[1, 1]]]])
