"""QDQToInteger: dequantize -> float op -> quantize chains become relax.qnn integer ops
(before/after structural equality), the rest stays float with a reason in the report, and
the integer program computes what the QDQ program computes."""

import numpy as np
import pytest
from graph_pass_testing import op_names, run

from tvm import relax
from tvm.ffi import assert_structural_equal
from tvm.relax import TensorStructInfo, op
from tvm.relax.transform import QDQReport, QDQToInteger, qdq_to_integer

qnn = op.qnn
rng = np.random.default_rng(3)
W = rng.integers(-127, 128, (4, 3, 3, 3)).astype("int8")
W_SCALE = [0.01, 0.02, 0.015, 0.005]
BIAS = np.array([0.1, -0.2, 0.05, 0.3], "float32")
SX, ZX, SY, ZY = 0.05, 128, 0.1, 3


def _func(params, body):
    bb = relax.BlockBuilder()
    with bb.function("main", params):
        with bb.dataflow():
            out = bb.emit_output(body(bb, *params))
        bb.emit_func_output(out)
    return bb.get()


def _x(dtype="uint8", shape=(1, 3, 6, 6)):
    return relax.Var("x", TensorStructInfo(list(shape), dtype))


def _qdq_conv(bb, x, relu=True, bias=True, weight=None):
    xd = bb.emit(qnn.dequantize(x, SX, ZX))
    wd = bb.emit(qnn.dequantize(weight if weight is not None else relax.const(W), W_SCALE, 0,
                                axis=0))
    y = bb.emit(op.nn.conv2d(xd, wd, padding=1))
    if bias:
        b = bb.emit(op.reshape(relax.const(BIAS), [-1, 1, 1]))
        y = bb.emit(op.add(y, b))
    if relu:
        y = bb.emit(op.nn.relu(y))
    return qnn.quantize(y, SY, ZY, out_dtype="uint8")


def test_conv_bias_relu_chain_becomes_qconv_with_requantize_epilogue():
    before = _func([_x()], lambda bb, x: _qdq_conv(bb, x))
    after, report = qdq_to_integer(before)

    acc_scale = tuple(float(np.float32(SX) * np.float32(s)) for s in W_SCALE)
    bias_q = np.rint(BIAS.astype(np.float64) / np.array(acc_scale)).astype("int32")

    def expected(bb, x):
        acc = bb.emit(qnn.conv2d(x, relax.const(W), ZX, 0, padding=1))
        acc = bb.emit(op.add(acc, relax.const(bias_q.reshape(1, 4, 1, 1))))
        return qnn.requantize(acc, acc_scale, 0, SY, ZY, axis=1, out_dtype="uint8", out_min=ZY)

    assert_structural_equal(after, _func([_x()], expected))
    assert [(e.op, e.integer) for e in report.entries] == [("nn.conv2d", True)]


def test_integer_program_computes_the_qdq_program():
    before = _func([_x()], lambda bb, x: _qdq_conv(bb, x))
    after = QDQToInteger()(before)
    x = rng.integers(0, 256, (1, 3, 6, 6)).astype("uint8")
    a, b = run(before, x), run(after, x)
    diff = np.abs(a.astype(np.int64) - b.astype(np.int64))
    assert diff.max() <= 1 and (diff == 0).mean() > 0.97


def test_gemm_weight_transpose_becomes_transpose_b():
    w = rng.integers(-127, 128, (5, 8)).astype("int8")

    def body(bb, x):
        xd = bb.emit(qnn.dequantize(x, 0.1, 0))
        wd = bb.emit(qnn.dequantize(relax.const(w), 0.02, 0))
        y = bb.emit(op.matmul(xd, bb.emit(op.permute_dims(wd, [1, 0]))))
        return qnn.quantize(y, 0.2, 0)

    after = QDQToInteger()(_func([_x("int8", (2, 8))], body))
    assert op_names(after) == ["relax.qnn.matmul", "relax.qnn.requantize"]
    mm = after["main"].body.blocks[0].bindings[0].value
    assert mm.attrs.transpose_b


def test_elementwise_concat_pool_and_movement_chains():
    def body(bb, x):
        xd = bb.emit(qnn.dequantize(x, 0.1, 3))
        s = bb.emit(qnn.quantize(bb.emit(op.add(xd, xd)), 0.2, 0))
        sd = bb.emit(qnn.dequantize(s, 0.2, 0))
        cat = bb.emit(qnn.quantize(bb.emit(op.concat([sd, xd], axis=1)), 0.2, 0))
        cd = bb.emit(qnn.dequantize(cat, 0.2, 0))
        m = bb.emit(qnn.quantize(bb.emit(op.mean(cd, axis=[2, 3], keepdims=True)), 0.05, 1))
        md = bb.emit(qnn.dequantize(m, 0.05, 1))
        return qnn.quantize(bb.emit(op.reshape(md, [1, 6])), 0.05, 1)

    before = _func([_x("int8", (1, 3, 4, 4))], body)
    after, report = qdq_to_integer(before)
    assert [e.op for e in report.integer] == ["add", "concat", "mean", "reshape"]
    names = op_names(after)
    assert "relax.qnn.add" in names and "relax.qnn.concat" in names
    assert not any(n in names for n in ("relax.qnn.dequantize", "relax.qnn.quantize"))
    x = rng.integers(-128, 128, (1, 3, 4, 4)).astype("int8")
    assert np.abs(run(before, x).astype(int) - run(after, x).astype(int)).max() <= 1


@pytest.mark.parametrize("make,reason", [
    (lambda bb, x: qnn.quantize(bb.emit(op.nn.softmax(bb.emit(qnn.dequantize(x, SX, ZX)))),
                                SY, ZY, out_dtype="uint8"), "nn.softmax has no integer form"),
    (lambda bb, x: _qdq_conv(bb, x, weight=bb.emit(op.astype(x, "int8"))),
     "the weight is not a constant"),
    (lambda bb, x: qnn.quantize(bb.emit(op.nn.conv2d(bb.emit(qnn.dequantize(
        x, [0.1, 0.2, 0.3], ZX, axis=1)), bb.emit(qnn.dequantize(relax.const(W), 0.1, 0)))),
        SY, ZY, out_dtype="uint8"), "the input is quantized per channel"),
])
def test_chains_that_stay_float_are_reported_with_the_reason(make, reason):
    x = _x() if "weight" not in reason else _x("uint8", (4, 3, 3, 3))
    before = _func([x], make)
    after, report = qdq_to_integer(before)
    assert len(report.float) == 1 and reason in report.float[0].reason, str(report)
    assert "relax.qnn.quantize" in op_names(after)  # the chain is kept as it was
    assert reason in str(report)


def test_float_result_of_a_dequantized_conv_is_reported():
    def body(bb, x):
        xd = bb.emit(qnn.dequantize(x, SX, ZX))
        return op.nn.conv2d(xd, bb.emit(qnn.dequantize(relax.const(W), W_SCALE, 0, axis=0)))

    report = QDQReport()
    QDQToInteger(report)(_func([_x()], body))
    assert [e.reason for e in report.float] == ["its result is not quantized again"]


def test_shared_intermediate_values_are_not_duplicated():
    def body(bb, x):
        xd = bb.emit(qnn.dequantize(x, SX, ZX))
        y = bb.emit(op.nn.conv2d(xd, bb.emit(qnn.dequantize(relax.const(W), 0.1, 0))))
        q = bb.emit(qnn.quantize(y, SY, ZY, out_dtype="uint8"))
        return relax.Tuple([q, y])

    after, report = qdq_to_integer(_func([_x()], body))
    assert "also used elsewhere" in report.float[0].reason
    assert "relax.nn.conv2d" in op_names(after)


def test_the_pass_is_declared_by_name():
    """tvm-relax's pyproject declares the pass under ``tvm.passes`` (found by name once the
    distribution is installed) and the declaration loads this pass."""
    import importlib
    import pathlib
    import tomllib

    meta = tomllib.loads((pathlib.Path(__file__).parents[1] / "pyproject.toml").read_text())
    target = meta["project"]["entry-points"]["tvm.passes"]["relax.QDQToInteger"]
    module, attr = target.split(":")
    assert getattr(importlib.import_module(module), attr)().info.name == "QDQToInteger"


def test_relu6_as_onnx_maximum_minimum_becomes_saturation_bounds():
    def body(bb, x):
        xd = bb.emit(qnn.dequantize(x, SX, ZX))
        wd = bb.emit(qnn.dequantize(relax.const(W), W_SCALE, 0, axis=0))
        y = bb.emit(op.nn.conv2d(xd, wd, padding=1))
        y = bb.emit(op.maximum(y, relax.const(np.float32(0.0))))
        y = bb.emit(op.minimum(y, relax.const(np.float32(6.0))))
        q = bb.emit(qnn.quantize(y, 0.03, 0, out_dtype="uint8"))
        qd = bb.emit(qnn.dequantize(q, 0.03, 0))
        return qnn.quantize(bb.emit(op.clip(qd, 0.5, 3.0)), 0.03, 0, out_dtype="uint8")

    before = _func([_x()], body)
    after, report = qdq_to_integer(before)
    assert [e.integer for e in report.entries] == [True, True], str(report)
    req = [b.value for b in after["main"].body.blocks[0].bindings
           if getattr(b.value.op, "name", "") == "relax.qnn.requantize"]
    assert [(r.attrs.out_min, r.attrs.out_max) for r in req] == [(0, 200), (17, 100)]
    x = rng.integers(0, 256, (1, 3, 6, 6)).astype("uint8")
    assert np.abs(run(before, x).astype(int) - run(after, x).astype(int)).max() <= 1


def test_a_chain_through_several_float_ops_is_reported():
    """An unfused batch-norm (x * s + b per channel) between dequantize and quantize."""
    def body(bb, x):
        xd = bb.emit(qnn.dequantize(x, SX, ZX))
        y = bb.emit(op.multiply(xd, relax.const(np.full((3, 1, 1), 0.5, "float32"))))
        y = bb.emit(op.add(y, relax.const(np.full((3, 1, 1), 0.1, "float32"))))
        return qnn.quantize(bb.emit(op.nn.relu(y)), SY, ZY, out_dtype="uint8")

    _, report = qdq_to_integer(_func([_x()], body))
    assert len(report.float) == 1 and report.float[0].op == "add", str(report)
    assert "not dequantized" in report.float[0].reason


def test_relu_after_a_quantized_add_is_an_integer_clamp():
    def body(bb, x):
        xd = bb.emit(qnn.dequantize(x, 0.1, 3))
        y = bb.emit(op.nn.relu(bb.emit(op.add(xd, xd))))
        return qnn.quantize(y, 0.2, 10, out_dtype="int8")

    before = _func([_x("int8", (2, 8))], body)
    after, report = qdq_to_integer(before)
    assert op_names(after) == ["relax.qnn.add", "relax.maximum"] and not report.float
    x = rng.integers(-128, 128, (2, 8)).astype("int8")
    assert np.abs(run(before, x).astype(int) - run(after, x).astype(int)).max() <= 1


def test_matmul_of_two_activations_through_reshape_and_transpose_becomes_qmatmul():
    """Both operands computed (an attention score, a batch matmul): qnn.matmul with the
    reshape and the transpose applied to the integer tensors."""
    a, b = relax.Var("a", TensorStructInfo([2, 3, 4], "int8")), \
        relax.Var("b", TensorStructInfo([2, 5, 4], "int8"))

    def body(bb, a, b):
        ad = bb.emit(op.reshape(bb.emit(qnn.dequantize(a, 0.05, -3)), [2, 3, 4]))
        bd = bb.emit(op.permute_dims(bb.emit(qnn.dequantize(b, 0.02, 5)), [0, 2, 1]))
        return qnn.quantize(bb.emit(op.matmul(ad, bd)), 0.07, 2)

    before = _func([a, b], body)
    after, report = qdq_to_integer(before)
    assert [e.op for e in report.integer] == ["matmul"], str(report)
    names = op_names(after)
    assert "relax.qnn.matmul" in names and "relax.matmul" not in names
    assert "relax.qnn.dequantize" not in names
    xa = rng.integers(-128, 128, (2, 3, 4)).astype("int8")
    xb = rng.integers(-128, 128, (2, 5, 4)).astype("int8")
    assert np.abs(run(before, xa, xb).astype(int) - run(after, xa, xb).astype(int)).max() <= 1


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
def test_elementwise_graph_of_one_quantized_input_becomes_a_lookup_table(dtype):
    """hard swish (x * clip(x + 3, 0, 6) / 6: x used twice) and sigmoid of a dequantized
    8-bit tensor: a 256-entry table indexed by the integers."""
    def body(bb, x):
        xd = bb.emit(qnn.dequantize(x, 0.04, 3))
        r6 = bb.emit(op.clip(bb.emit(op.add(xd, relax.const(3.0))), 0.0, 6.0))
        hs = bb.emit(op.divide(bb.emit(op.multiply(xd, r6)), relax.const(6.0)))
        return qnn.quantize(bb.emit(op.sigmoid(hs)), 1 / 256, -128 if dtype == "int8" else 0,
                            out_dtype=dtype)

    x = _x(dtype, (2, 40))
    before = _func([x], body)
    after, report = qdq_to_integer(before)
    assert [e.op for e in report.integer] == ["sigmoid (table)"], str(report)
    names = op_names(after)
    assert "relax.take" in names
    assert not any(n in names for n in ("relax.qnn.dequantize", "relax.sigmoid",
                                        "relax.multiply"))
    lo = -128 if dtype == "int8" else 0
    xs = np.arange(lo, lo + 256).astype(dtype).reshape(2, 128)[:, :40].copy()
    xs[1] = np.arange(lo + 216, lo + 256).astype(dtype)
    assert np.abs(run(before, xs).astype(int) - run(after, xs).astype(int)).max() <= 1


def test_elementwise_graph_with_an_outside_use_stays_float():
    def body(bb, x):
        xd = bb.emit(qnn.dequantize(x, 0.04, 3))
        s = bb.emit(op.sigmoid(xd))
        q = bb.emit(qnn.quantize(bb.emit(op.tanh(s)), 1 / 128, 0, out_dtype="int8"))
        return relax.Tuple([q, s])

    after, report = qdq_to_integer(_func([_x("int8", (4,))], body))
    assert "relax.take" not in op_names(after) and report.float, str(report)
