"""ONNX quantized operators with constant quantization parameters import as relax.qnn
integer operators and match onnxruntime: exactly for the int32 results and QuantizeLinear /
DequantizeLinear, within one unit of the last place for requantized 8-bit results."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import tvm.runtime  # noqa: E402
from tvm import relax  # noqa: E402
from tvm.relax.frontend.onnx import from_onnx  # noqa: E402

rng = np.random.default_rng(1515)
_T = {np.dtype("uint8"): TensorProto.UINT8, np.dtype("int8"): TensorProto.INT8,
      np.dtype("int32"): TensorProto.INT32, np.dtype("float32"): TensorProto.FLOAT}


def _model(node, feeds, inits, out_type, opset=19, ms=False):
    inputs = [helper.make_tensor_value_info(k, _T[v.dtype], v.shape) for k, v in feeds.items()]
    graph = helper.make_graph([node], "g", inputs,
                              [helper.make_tensor_value_info("y", out_type, None)],
                              [numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()])
    opsets = [helper.make_opsetid("", opset)]
    if ms:
        opsets.append(helper.make_opsetid("com.microsoft", 1))
    return helper.make_model(graph, opset_imports=opsets)


def _ours_and_ort(model, feeds):
    mod = from_onnx(model)
    vm = relax.VirtualMachine(relax.build(mod, target="llvm"), tvm.runtime.cpu())
    ours = vm["main"](*feeds.values()).numpy()
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    ref = sess.run(None, feeds)[0]
    return mod, ours, ref


def _qnn_ops(mod):
    names = []
    for block in mod["main"].body.blocks:
        for b in block.bindings:
            op = getattr(b.value, "op", None)
            names.append(getattr(op, "name", ""))
    return [n for n in names if n.startswith("relax.qnn.")]


def _within_one_ulp(ours, ref, exact_fraction=0.99):
    assert ours.dtype == ref.dtype and ours.shape == ref.shape
    diff = np.abs(ours.astype(np.int64) - ref.astype(np.int64))
    assert diff.max() <= 1, diff.max()
    assert (diff == 0).mean() >= exact_fraction, (diff == 0).mean()


@pytest.mark.parametrize("per_axis", [False, True])
def test_quantize_dequantize_linear_exact(per_axis):
    x = (rng.standard_normal((2, 3, 5)) * 3).astype("float32")
    x.flat[:4] = [0.5, 1.5, 2.5, -2.5]  # ties round half to even
    scale = np.array([0.02, 0.05, 0.03] if per_axis else 0.04, "float32")
    zp = np.array([3, 128, 0] if per_axis else 120, "uint8")
    q = helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"], axis=1)
    mod, ours, ref = _ours_and_ort(_model(q, {"x": x}, {"s": scale, "z": zp}, TensorProto.UINT8),
                                   {"x": x})
    assert _qnn_ops(mod) == ["relax.qnn.quantize"]
    np.testing.assert_array_equal(ours, ref)
    xq = rng.integers(-128, 128, (2, 3, 5)).astype("int8")
    d = helper.make_node("DequantizeLinear", ["x", "s", "z"], ["y"], axis=1)
    mod, ours, ref = _ours_and_ort(_model(d, {"x": xq}, {"s": scale, "z": zp.astype("int8")},
                                          TensorProto.FLOAT), {"x": xq})
    assert _qnn_ops(mod) == ["relax.qnn.dequantize"]
    np.testing.assert_array_equal(ours, ref)


@pytest.mark.parametrize("x_dt,w_dt,per_channel,group,bias", [
    ("uint8", "int8", True, 1, True), ("uint8", "uint8", False, 1, False),
    ("int8", "int8", True, 2, True), ("uint8", "int8", False, 1, True)])
def test_qlinearconv(x_dt, w_dt, per_channel, group, bias):
    cin, cout = 4, 6
    x = rng.integers(0 if x_dt == "uint8" else -128, 256 if x_dt == "uint8" else 128,
                     (1, cin, 9, 8)).astype(x_dt)
    lo, hi = (0, 256) if w_dt == "uint8" else (-127, 128)
    w = rng.integers(lo, hi, (cout, cin // group, 3, 3)).astype(w_dt)
    w_scale = (rng.uniform(0.002, 0.01, cout) if per_channel else np.array(0.006)).astype("float32")
    w_zp = np.full(w_scale.shape, 128 if w_dt == "uint8" else 0, w_dt)
    inits = {"xs": np.array(0.02, "float32"), "xz": np.array(128 if x_dt == "uint8" else 1, x_dt),
             "w": w, "ws": w_scale, "wz": w_zp, "ys": np.array(0.15, "float32"),
             "yz": np.array(100 if x_dt == "uint8" else -5, x_dt)}  # y has x's type
    names = ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"]
    if bias:
        inits["b"] = rng.integers(-2000, 2000, cout).astype("int32")
        names.append("b")
    node = helper.make_node("QLinearConv", names, ["y"], pads=[1, 0, 1, 1], strides=[2, 1],
                            group=group)
    mod, ours, ref = _ours_and_ort(_model(node, {"x": x}, inits, _T[np.dtype(x_dt)]), {"x": x})
    assert _qnn_ops(mod) == ["relax.qnn.conv2d", "relax.qnn.requantize"]
    _within_one_ulp(ours, ref)


@pytest.mark.parametrize("a_dt,b_dt,a_shape,b_shape,per_column", [
    ("uint8", "int8", (3, 16), (16, 5), True), ("int8", "int8", (2, 3, 16), (16, 5), False),
    ("uint8", "uint8", (2, 3, 16), (2, 16, 5), False)])
def test_qlinearmatmul(a_dt, b_dt, a_shape, b_shape, per_column):
    def draw(dt, shape):
        return rng.integers(0, 256, shape).astype(dt) if dt == "uint8" else \
            rng.integers(-128, 128, shape).astype(dt)

    a, b = draw(a_dt, a_shape), draw(b_dt, b_shape)
    bs = (rng.uniform(0.002, 0.01, 5) if per_column else np.array(0.004)).astype("float32")
    inits = {"as": np.array(0.03, "float32"), "az": np.array(110 if a_dt == "uint8" else -3, a_dt),
             "b": b, "bs": bs, "bz": np.full(bs.shape, 128 if b_dt == "uint8" else 0, b_dt),
             "ys": np.array(0.05, "float32"),
             "yz": np.array(125 if a_dt == "uint8" else -2, a_dt)}  # y has a's type
    node = helper.make_node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"],
                            ["y"])
    mod, ours, ref = _ours_and_ort(_model(node, {"a": a}, inits, _T[np.dtype(a_dt)]), {"a": a})
    assert _qnn_ops(mod) == ["relax.qnn.matmul", "relax.qnn.requantize"]
    _within_one_ulp(ours, ref)


def test_convinteger_and_matmulinteger_are_exact():
    x = rng.integers(0, 256, (1, 3, 7, 7)).astype("uint8")
    w = rng.integers(0, 256, (4, 3, 3, 3)).astype("uint8")
    node = helper.make_node("ConvInteger", ["x", "w", "xz", "wz"], ["y"], pads=[1, 1, 1, 1])
    m = _model(node, {"x": x}, {"w": w, "xz": np.array(120, "uint8"),
                                "wz": np.array(128, "uint8")}, TensorProto.INT32, opset=10)
    mod, ours, ref = _ours_and_ort(m, {"x": x})
    assert _qnn_ops(mod) == ["relax.qnn.conv2d"]
    np.testing.assert_array_equal(ours, ref)
    a = rng.integers(0, 256, (2, 4, 9)).astype("uint8")
    b = rng.integers(-128, 128, (9, 3)).astype("int8")
    node = helper.make_node("MatMulInteger", ["a", "b", "az", "bz"], ["y"])
    m = _model(node, {"a": a}, {"b": b, "az": np.array(7, "uint8"),
                                "bz": np.array([1, -2, 0], "int8")}, TensorProto.INT32, opset=10)
    mod, ours, ref = _ours_and_ort(m, {"a": a})
    assert _qnn_ops(mod) == ["relax.qnn.matmul"]
    np.testing.assert_array_equal(ours, ref)


@pytest.mark.parametrize("op_type", ["QLinearAdd", "QLinearMul"])
def test_com_microsoft_qlinear_add_mul(op_type):
    a = rng.integers(0, 256, (2, 3, 8)).astype("uint8")
    b = rng.integers(0, 256, (3, 8)).astype("uint8")
    node = helper.make_node(op_type, ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"],
                            domain="com.microsoft")
    inits = {"as": np.array(0.02, "float32"), "az": np.array(120, "uint8"),
             "bs": np.array(0.03, "float32"), "bz": np.array(130, "uint8"),
             "ys": np.array(0.04 if op_type == "QLinearAdd" else 0.01, "float32"),
             "yz": np.array(128, "uint8")}
    feeds = {"a": a, "b": b}
    inputs = [helper.make_tensor_value_info(k, TensorProto.UINT8, v.shape)
              for k, v in feeds.items()]
    graph = helper.make_graph([node], "g", inputs,
                              [helper.make_tensor_value_info("y", TensorProto.UINT8, None)],
                              [numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("com.microsoft", 1)])
    mod, ours, ref = _ours_and_ort(model, feeds)
    assert _qnn_ops(mod) == ["relax.qnn." + ("add" if op_type == "QLinearAdd" else "multiply")]
    _within_one_ulp(ours, ref, exact_fraction=0.95)


def test_runtime_scales_fall_back_to_float():
    x = rng.standard_normal((2, 4)).astype("float32")
    s = np.array(0.05, "float32")
    node = helper.make_node("QuantizeLinear", ["x", "s"], ["y"])
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape),
              helper.make_tensor_value_info("s", TensorProto.FLOAT, [])]
    graph = helper.make_graph([node], "g", inputs,
                              [helper.make_tensor_value_info("y", TensorProto.UINT8, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    mod, ours, ref = _ours_and_ort(model, {"x": x, "s": s})
    assert _qnn_ops(mod) == []
    np.testing.assert_array_equal(ours, ref)
