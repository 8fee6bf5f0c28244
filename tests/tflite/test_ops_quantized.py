"""Per-operator suite in int8 and uint8: every float case of the per-operator suite that
LiteRT has an integer kernel for, written as a full-integer model (quantize_model.py: the
float model's observed ranges, per-channel int8 / per-tensor uint8 weights, int32 biases),
imported with from_tflite (integer operators through QDQToInteger), built for llvm and
compared with LiteRT's builtin integer kernels within one unit of the last place."""

from __future__ import annotations

import cases_nn_math  # noqa: F401 - registers its cases
import cases_tensor  # noqa: F401 - registers its cases
import numpy as np
import pytest
from model_builder import ModelBuilder, run_litert, run_relax
from op_cases import CASES
from quantize_model import assert_within_one, quantize_case

from tvm.relax.frontend.tflite import from_tflite

#: builtins whose LiteRT kernels take no int8 / uint8 tensors (LiteRT refuses the model at
#: prepare or invoke; test_litert_has_no_integer_kernel keeps the list true)
NO_KERNEL = {
    "int8": {"ADD_N", "ATAN2", "BIDIRECTIONAL_SEQUENCE_LSTM", "CEIL", "CONV_3D", "COS",
             "CUMSUM", "FILL", "FLOOR", "L2_POOL_2D", "LOCAL_RESPONSE_NORMALIZATION",
             "NON_MAX_SUPPRESSION_V4", "NON_MAX_SUPPRESSION_V5", "POW", "RANGE",
             "REVERSE_SEQUENCE", "ROUND", "SEGMENT_SUM", "SIGN", "SIN", "SQUARE",
             "UNIDIRECTIONAL_SEQUENCE_LSTM", "UNIDIRECTIONAL_SEQUENCE_RNN",
             "UNSORTED_SEGMENT_MAX", "UNSORTED_SEGMENT_MIN", "UNSORTED_SEGMENT_PROD",
             "UNSORTED_SEGMENT_SUM", "ZEROS_LIKE"},
    "uint8": {"ABS", "ADD_N", "ATAN2", "BATCH_MATMUL", "BIDIRECTIONAL_SEQUENCE_LSTM", "CEIL",
              "CONV_3D", "COS", "CUMSUM", "ELU", "EXP", "FILL", "FLOOR", "FLOOR_DIV",
              "FLOOR_MOD", "L2_POOL_2D", "LOCAL_RESPONSE_NORMALIZATION", "LOG", "NEG",
              "NON_MAX_SUPPRESSION_V4", "NON_MAX_SUPPRESSION_V5", "POW", "RANGE",
              "REDUCE_PROD", "ROUND", "RSQRT", "SEGMENT_SUM", "SIGN", "SIN", "SQRT", "SQUARE",
              "SQUARED_DIFFERENCE", "UNIDIRECTIONAL_SEQUENCE_LSTM",
              "UNIDIRECTIONAL_SEQUENCE_RNN", "UNSORTED_SEGMENT_MAX", "UNSORTED_SEGMENT_MIN",
              "UNSORTED_SEGMENT_PROD", "UNSORTED_SEGMENT_SUM", "ZEROS_LIKE"},
}
#: float-only operators whose integer model LiteRT does not refuse but crashes on
FLOAT_ONLY = {"FAKE_QUANT"}


def _builtin(name: str) -> str:
    return name.split("-")[0]


def _cases(dtype: str) -> list[str]:
    return [n for n in sorted(CASES)
            if _builtin(n) not in NO_KERNEL[dtype] and _builtin(n) not in FLOAT_ONLY]


def _no_kernel_cases(dtype: str) -> list[str]:
    first: dict[str, str] = {}
    for n in sorted(CASES):
        if _builtin(n) in NO_KERNEL[dtype]:
            first.setdefault(_builtin(n), n)
    return sorted(first.values())


@pytest.mark.parametrize("name", _cases("int8"))
def test_int8_operator_matches_litert(name: str) -> None:
    model, inputs = quantize_case(*CASES[name](), "int8")
    data = model.build()
    assert_within_one(run_relax(data, inputs), run_litert(data, inputs))


@pytest.mark.parametrize("name", _cases("uint8"))
def test_uint8_operator_matches_litert(name: str) -> None:
    model, inputs = quantize_case(*CASES[name](), "uint8")
    data = model.build()
    assert_within_one(run_relax(data, inputs), run_litert(data, inputs))


@pytest.mark.parametrize("dtype,name", [(d, n) for d in ("int8", "uint8")
                                        for n in _no_kernel_cases(d)])
def test_litert_has_no_integer_kernel(dtype: str, name: str) -> None:
    model, inputs = quantize_case(*CASES[name](), dtype)
    with pytest.raises(RuntimeError):
        run_litert(model.build(), inputs)


def _ops(mod) -> list[str]:
    from tvm.relax.analysis import get_var2val

    return sorted({getattr(getattr(v, "op", None), "name", "") for v in
                   get_var2val(mod).values()} - {""})


@pytest.mark.parametrize("name,integer_op,float_op", [
    ("CONV_2D-relu6", "relax.qnn.conv2d", "relax.nn.conv2d"),
    ("DEPTHWISE_CONV_2D-same-s1", "relax.qnn.conv2d", "relax.nn.conv2d"),
    ("FULLY_CONNECTED", "relax.qnn.matmul", "relax.matmul"),
    ("FULLY_CONNECTED-keep_num_dims-relu", "relax.qnn.matmul", "relax.matmul"),
    ("BATCH_MATMUL-adj00", "relax.qnn.matmul", "relax.matmul"),
    ("ADD-broadcast-relu6", "relax.qnn.add", "relax.add"),
    ("MUL", "relax.qnn.multiply", "relax.multiply"),
    ("CONCATENATION", "relax.qnn.concat", "relax.concat"),
    ("MEAN-keep", "relax.qnn.requantize", "relax.mean"),
    ("MAX_POOL_2D-same", "relax.nn.max_pool2d", "relax.qnn.dequantize"),
    ("PAD", "relax.nn.pad", "relax.qnn.dequantize"),
    ("RESHAPE-options", "relax.reshape", "relax.qnn.dequantize"),
    ("TRANSPOSE", "relax.permute_dims", "relax.qnn.dequantize"),
    ("RELU6", "relax.qnn.requantize", "relax.clip"),
    ("LOGISTIC", "relax.take", "relax.sigmoid"),
    ("TANH", "relax.take", "relax.tanh"),
    ("HARD_SWISH", "relax.take", "relax.qnn.dequantize"),
    ("GELU", "relax.take", "relax.qnn.dequantize"),
])
def test_int8_operators_import_as_integer_operators(name: str, integer_op: str,
                                                    float_op: str) -> None:
    """What QDQToInteger makes of the imported chains: the integer operator, and no float
    op (or dequantize) left."""
    model, _ = quantize_case(*CASES[name](), "int8")
    mod = from_tflite(model.build())
    ops = _ops(mod)
    assert integer_op in ops and float_op not in ops, ops
    qdq = _ops(from_tflite(model.build(), integer=False))
    assert "relax.qnn.dequantize" in qdq and "relax.qnn.quantize" in qdq, qdq


def test_operators_without_an_integer_form_run_between_dequantize_and_quantize() -> None:
    model, inputs = quantize_case(*CASES["SOFTMAX-beta"](), "int8")
    data = model.build()
    ops = _ops(from_tflite(data))
    assert {"relax.qnn.dequantize", "relax.nn.softmax", "relax.qnn.quantize"} <= set(ops), ops
    assert_within_one(run_relax(data, inputs), run_litert(data, inputs))


def test_requantizing_quantize_matches_litert() -> None:
    """QUANTIZE from one integer scale (or type) to another: relax.qnn.requantize."""
    m = ModelBuilder()
    x = m.tensor([2, 8], "int8", name="x", quant=([0.05], [3], 0))
    m.inputs.append(x)
    y = m.tensor([2, 8], "uint8", quant=([0.031], [120], 0))
    m.op("QUANTIZE", [x], [y], version=2)
    z = m.tensor([2, 8], "int8", quant=([0.11], [-7], 0))
    m.op("QUANTIZE", [y], [z], version=2)
    m.output(y, z)
    data = m.build()
    x0 = np.arange(-128, 128, 16, dtype=np.int8).reshape(1, 16).repeat(1, 0)
    x0 = np.concatenate([x0[:, :8], x0[:, 8:]], 0)
    assert "relax.qnn.requantize" in _ops(from_tflite(data))
    assert_within_one(run_relax(data, [x0]), run_litert(data, [x0]))


def test_raw_integer_operators_keep_the_stored_integers() -> None:
    """LiteRT's MAXIMUM / NEG / CAST on int8 work on the stored integers; so do ours."""
    for name in ("MAXIMUM", "NEG", "CAST-float-int32"):
        model, inputs = quantize_case(*CASES[name](), "int8")
        data = model.build()
        assert "relax.qnn.dequantize" not in _ops(from_tflite(data)), name
        np.testing.assert_array_equal(run_relax(data, inputs)[0], run_litert(data, inputs)[0])
