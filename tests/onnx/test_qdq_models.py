"""QDQ models made by onnxruntime.quantization.quantize_static (calibrated on numpy data)
run as integer kernels after QDQToInteger and agree with onnxruntime within one unit of the
output's last place (measured: every element equal on these nets, see docs/quantization.md)."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
quantization = pytest.importorskip("onnxruntime.quantization")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import tvm.runtime  # noqa: E402
from tvm import relax  # noqa: E402
from tvm.relax.frontend.onnx import from_onnx  # noqa: E402
from tvm.relax.transform import qdq_to_integer  # noqa: E402

SHAPE = (1, 3, 16, 16)


def _float_net(residual: bool) -> onnx.ModelProto:
    """conv-relu-conv(-add-relu)-conv or a classifier (pool, flatten, gemm)."""
    rng = np.random.default_rng(7)

    def init(name, shape, s):
        return numpy_helper.from_array((rng.standard_normal(shape) * s).astype("float32"), name)

    inits = [init("w1", [8, 3, 3, 3], 0.3), init("b1", [8], 0.1),
             init("w2", [8, 8, 3, 3], 0.2), init("b2", [8], 0.1)]
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1] * 4, name="conv1"),
             helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1] * 4, name="conv2")]
    if residual:
        inits += [init("w3", [16, 8, 3, 3], 0.2), init("b3", [16], 0.1)]
        nodes += [helper.make_node("Add", ["c2", "r1"], ["s"], name="residual"),
                  helper.make_node("Relu", ["s"], ["r2"], name="relu2"),
                  helper.make_node("MaxPool", ["r2"], ["p"], kernel_shape=[2, 2],
                                   strides=[2, 2], name="maxpool"),
                  helper.make_node("Conv", ["p", "w3", "b3"], ["y"], pads=[1] * 4,
                                   name="conv3")]
        out = [1, 16, 8, 8]
    else:
        inits += [init("w3", [10, 8], 0.3), init("b3", [10], 0.1)]
        nodes += [helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
                  helper.make_node("GlobalAveragePool", ["r2"], ["p"], name="pool"),
                  helper.make_node("Flatten", ["p"], ["f"], name="flatten"),
                  helper.make_node("Gemm", ["f", "w3", "b3"], ["y"], transB=1, name="fc")]
        out = [1, 10]
    graph = helper.make_graph(nodes, "net",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, SHAPE)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, out)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


class _Calibration(quantization.CalibrationDataReader):
    def __init__(self, n: int = 16):
        rng = np.random.default_rng(11)
        self._data = iter([{"x": rng.standard_normal(SHAPE).astype("float32")}
                           for _ in range(n)])

    def get_next(self):
        return next(self._data, None)


def _quantized(tmp_path, residual: bool, per_channel: bool, activation: str):
    src, dst = tmp_path / "f32.onnx", tmp_path / "qdq.onnx"
    onnx.save(_float_net(residual), src)
    act = quantization.QuantType.QUInt8 if activation == "uint8" else quantization.QuantType.QInt8
    quantization.quantize_static(
        str(src), str(dst), _Calibration(), quant_format=quantization.QuantFormat.QDQ,
        per_channel=per_channel, activation_type=act, weight_type=quantization.QuantType.QInt8,
        extra_options={"ActivationSymmetric": activation == "int8"})
    return onnx.load(dst)


def _output_scale(model) -> float:
    """The scale of the last QuantizeLinear (the output's last place)."""
    q = [n for n in model.graph.node if n.op_type == "QuantizeLinear"][-1]
    inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    return float(inits[q.input[1]])


def _op_names(mod):
    return [getattr(getattr(b.value, "op", None), "name", "")
            for block in mod["main"].body.blocks for b in block.bindings]


@pytest.mark.parametrize("residual,per_channel,activation", [
    (True, True, "uint8"), (False, True, "uint8"), (True, False, "int8")])
def test_quantize_static_model_runs_as_integer_kernels(tmp_path, residual, per_channel,
                                                       activation):
    model = _quantized(tmp_path, residual, per_channel, activation)
    mod, report = qdq_to_integer(from_onnx(model))
    names = _op_names(mod)
    # structure: every convolution / matmul is integer, no float one is left
    assert names.count("relax.qnn.conv2d") == 3 if residual else names.count(
        "relax.qnn.conv2d") == 2 and "relax.qnn.matmul" in names
    assert "relax.nn.conv2d" not in names and "relax.matmul" not in names
    assert not report.float, str(report)
    if residual:
        assert "relax.qnn.add" in names and "relax.nn.max_pool2d" in names

    vm = relax.VirtualMachine(relax.build(mod, target="llvm"), tvm.runtime.cpu())
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    ulp = _output_scale(model)
    rng = np.random.default_rng(13)
    diffs = []
    for _ in range(4):
        x = rng.standard_normal(SHAPE).astype("float32")
        ours, ref = vm["main"](x).numpy(), sess.run(None, {"x": x})[0]
        diffs.append(np.rint(np.abs(ours.astype(np.float64) - ref) / ulp).reshape(-1))
    d = np.concatenate(diffs)
    assert d.max() <= 1, d.max()
    assert (d == 0).mean() >= 0.99, (d == 0).mean()
