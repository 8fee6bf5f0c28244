"""Resize and Pad (edge / reflect / wrap) on inputs with symbolic dimensions: one compiled
function serves every size, each checked against onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper  # noqa: E402

import tvm.runtime  # noqa: E402
from tvm import relax  # noqa: E402
from tvm.relax.frontend.onnx import from_onnx  # noqa: E402

rng = np.random.default_rng(7)


def _model(node, inits, in_dims, opset=18):
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, in_dims)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _check(model, shapes, rtol=1e-5, atol=1e-5):
    vm = relax.VirtualMachine(relax.build(from_onnx(model), target="llvm"), tvm.runtime.cpu())
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for shape in shapes:
        x = rng.standard_normal(shape).astype(np.float32)
        (want,) = sess.run(None, {"x": x})
        got = vm["main"](x).numpy()
        assert got.shape == want.shape, (shape, got.shape, want.shape)
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


@pytest.mark.parametrize("mode,coord", [
    ("nearest", "asymmetric"), ("nearest", "half_pixel"), ("linear", "half_pixel"),
    ("linear", "align_corners"), ("cubic", "half_pixel")])
def test_resize_by_integer_scales_of_symbolic_height_and_width(mode, coord):
    scales = helper.make_tensor("s", TensorProto.FLOAT, [4], [1, 1, 2, 3])
    node = helper.make_node("Resize", ["x", "", "s"], ["y"], mode=mode,
                            coordinate_transformation_mode=coord)
    _check(_model(node, [scales], ["n", 3, "h", "w"]), [(1, 3, 4, 5), (2, 3, 7, 3)])


def test_resize_to_constant_sizes_of_symbolic_dims():
    sizes = helper.make_tensor("z", TensorProto.INT64, [2], [6, 9])
    node = helper.make_node("Resize", ["x", "", "", "z"], ["y"], mode="linear", axes=[2, 3])
    _check(_model(node, [sizes], ["n", 2, "h", "w"]), [(1, 2, 4, 5), (3, 2, 9, 2)])


def test_resize_of_a_1d_signal_with_a_symbolic_length():
    scales = helper.make_tensor("s", TensorProto.FLOAT, [3], [1, 1, 4])
    node = helper.make_node("Resize", ["x", "", "s"], ["y"], mode="nearest")
    _check(_model(node, [scales], [1, 2, "t"]), [(1, 2, 3), (1, 2, 8)])


def test_a_fractional_scale_of_a_symbolic_dim_is_refused_clearly():
    scales = helper.make_tensor("s", TensorProto.FLOAT, [4], [1, 1, 1.5, 1.5])
    node = helper.make_node("Resize", ["x", "", "s"], ["y"], mode="nearest")
    with pytest.raises(NotImplementedError, match="scale 1.5 of axis 2"):
        from_onnx(_model(node, [scales], ["n", 3, "h", "w"]))


@pytest.mark.parametrize("mode", ["edge", "reflect", "wrap"])
def test_pad_modes_on_symbolic_dims(mode):
    pads = helper.make_tensor("p", TensorProto.INT64, [8], [0, 0, 1, 2, 0, 0, 2, 1])
    node = helper.make_node("Pad", ["x", "p"], ["y"], mode=mode)
    _check(_model(node, [pads], ["n", 2, "h", "w"]), [(1, 2, 3, 4), (2, 2, 5, 3)])


def test_reflect_wider_than_a_symbolic_dim_stays_inside_the_input():
    """numpy's reflect repeats the reflection; the kernel never reads outside the input."""
    pads = helper.make_tensor("p", TensorProto.INT64, [2], [5, 4])
    node = helper.make_node("Pad", ["x", "p"], ["y"], mode="reflect")
    vm = relax.VirtualMachine(relax.build(from_onnx(_model(node, [pads], ["t"])), target="llvm"),
                              tvm.runtime.cpu())
    for n in (1, 2, 3):
        x = rng.standard_normal(n).astype(np.float32)
        np.testing.assert_array_equal(vm["main"](x).numpy(), np.pad(x, (5, 4), mode="reflect"))
    with pytest.raises(Exception, match="empty"):
        vm["main"](np.zeros(0, np.float32))
