"""A MobileNet-like model end to end: from_tflite -> relax.build(llvm) -> VirtualMachine,
against LiteRT (its reference kernels, and its default XNNPACK path)."""

from __future__ import annotations

import numpy as np
import pytest
from model_builder import run_litert, run_relax
from tflite_models import (
    keyword_spotting_model, mobilenet_block_model, resnet_model, ssd_detector_model,
    text_classifier_model,
)

from tvm import relax, tir
from tvm.relax.frontend.tflite import from_tflite


@pytest.mark.parametrize("reference", [True, False], ids=["builtin", "xnnpack"])
def test_mobilenet_block_matches_litert(reference: bool) -> None:
    data, shape = mobilenet_block_model(size=32, width=16, blocks=2)
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    expected = run_litert(data, [x], reference=reference)
    got = run_relax(data, [x])
    assert got[0].shape == (1, 10)
    np.testing.assert_allclose(got[0], expected[0], rtol=1e-5 if reference else 1e-4,
                               atol=1e-6)
    np.testing.assert_allclose(got[0].sum(), 1.0, rtol=1e-5)


def test_mobilenet_block_with_symbolic_batch_runs_any_batch() -> None:
    data, shape = mobilenet_block_model(size=16, width=8, blocks=1, batch=None)
    mod = from_tflite(data)
    (param,) = mod["main"].params
    batch = param.struct_info.shape_values[0]
    assert isinstance(batch, tir.Var) and batch.name == "batch"
    import tvm.runtime

    vm = relax.VirtualMachine(relax.build(mod, target="llvm"), tvm.runtime.cpu())
    for n in (1, 3):
        x = np.random.default_rng(n).standard_normal([n] + shape[1:]).astype(np.float32)
        got = vm["main"](x).numpy()
        expected = run_litert(data, [x])[0]
        assert got.shape == (n, 10)
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_text_classifier_matches_litert() -> None:
    """Embedding (GATHER) -> LSTM -> last step -> FULLY_CONNECTED -> SOFTMAX."""
    data, shape = text_classifier_model()
    ids = np.random.default_rng(3).integers(0, 200, size=shape).astype(np.int32)
    expected = run_litert(data, [ids])
    got = run_relax(data, [ids])
    np.testing.assert_allclose(got[0], expected[0], rtol=1e-5, atol=1e-6)


def test_keyword_spotting_cnn_matches_litert() -> None:
    data, shape = keyword_spotting_model()
    x = np.random.default_rng(4).standard_normal(shape).astype(np.float32)
    for reference in (True, False):
        expected = run_litert(data, [x], reference=reference)
        got = run_relax(data, [x])
        np.testing.assert_allclose(got[0], expected[0], rtol=1e-5 if reference else 1e-4,
                                   atol=1e-6)


@pytest.mark.parametrize("regular_nms", [False, True], ids=["fast-nms", "regular-nms"])
def test_ssd_detector_with_postprocess_matches_litert(regular_nms: bool) -> None:
    data, shape = ssd_detector_model(regular_nms=regular_nms)
    x = np.random.default_rng(5).standard_normal(shape).astype(np.float32)
    expected = run_litert(data, [x])
    got = run_relax(data, [x])
    assert 0 < expected[3][0] <= 10
    for g, e in zip(got, expected):
        assert g.shape == e.shape
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-5)


def test_resnet_matches_litert() -> None:
    data, shape = resnet_model()
    x = np.random.default_rng(6).standard_normal(shape).astype(np.float32)
    for reference in (True, False):
        expected = run_litert(data, [x], reference=reference)
        got = run_relax(data, [x])
        np.testing.assert_allclose(got[0], expected[0], rtol=1e-5 if reference else 1e-4,
                                   atol=1e-6)


# -- full-integer models (quantize_model.py: the float models above with int8 / uint8 tensors)
def _quantized(make, dtype: str, seed: int, float_ops=(), **kw):
    from quantize_model import quantize_case

    model, shape = make(as_builder=True, **kw)
    if model.tensors[model.inputs[0]]["dtype"] == "int32":  # token ids
        x = np.random.default_rng(seed).integers(0, 200, size=shape).astype(np.int32)
    else:
        x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    qmodel, inputs = quantize_case(model, [x], dtype, float_ops)
    return qmodel.build(), inputs


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
@pytest.mark.parametrize("make,float_ops", [
    (mobilenet_block_model, ()), (resnet_model, ()), (keyword_spotting_model, ()),
    (text_classifier_model, ("UNIDIRECTIONAL_SEQUENCE_LSTM",)),
], ids=["mobilenet_block", "resnet", "keyword_spotting", "text_classifier"])
def test_quantized_model_matches_litert_within_one_unit(make, float_ops, dtype: str) -> None:
    """Full-integer models run as integer kernels (convolutions and dense layers as
    relax.qnn operators) and agree with LiteRT's integer kernels to one unit."""
    from quantize_model import assert_within_one

    from tvm.relax.analysis import get_var2val

    data, inputs = _quantized(make, dtype, 0, float_ops)
    ops = {getattr(getattr(v, "op", None), "name", "") for v in
           get_var2val(from_tflite(data)).values()}
    assert "relax.qnn.matmul" in ops, sorted(ops)
    if make is not text_classifier_model:  # (its LSTM stays float, as in the model)
        assert "relax.matmul" not in ops, sorted(ops)
        assert "relax.qnn.conv2d" in ops and "relax.nn.conv2d" not in ops, sorted(ops)
    assert_within_one(run_relax(data, inputs), run_litert(data, inputs))


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
@pytest.mark.parametrize("regular_nms", [False, True], ids=["fast-nms", "regular-nms"])
def test_quantized_ssd_detector_matches_litert(dtype: str, regular_nms: bool) -> None:
    """The integer detector (uint8: the post-processing takes the quantized boxes, scores
    and anchors; int8: they are dequantized first, as the converter writes it).  A score one
    unit apart can reorder detections of equal score, so detections are matched as a set:
    same class, score within one unit (1/256), box within the box encodings' unit."""
    data, inputs = _quantized(ssd_detector_model, dtype, 5, regular_nms=regular_nms)
    got, expected = run_relax(data, inputs), run_litert(data, inputs)
    assert got[3][0] == expected[3][0] > 0
    count = int(expected[3][0])
    unmatched = list(range(count))
    for i in range(count):
        match = [j for j in unmatched if got[1][0, i] == expected[1][0, j]
                 and abs(got[2][0, i] - expected[2][0, j]) <= 1 / 256 + 1e-6
                 and np.abs(got[0][0, i] - expected[0][0, j]).max() <= 5e-3]
        assert match, f"detection {i} ({got[1][0, i]}, {got[2][0, i]}, {got[0][0, i]}) has " \
                      "no counterpart in LiteRT's"
        unmatched.remove(match[0])


def test_quantized_model_with_symbolic_batch_is_integer_and_runs_any_batch() -> None:
    """int8 with the batch axis declared -1: the global mean's count is its reduced axes
    (static), so it stays integer too."""
    from quantize_model import assert_within_one, quantize_case

    from tvm.relax.transform import qdq_to_integer

    model, shape = mobilenet_block_model(size=16, width=8, blocks=1, batch=None,
                                         as_builder=True)
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    qmodel, (xq,) = quantize_case(model, [x], "int8")
    data = qmodel.build()
    _, report = qdq_to_integer(from_tflite(data, integer=False))
    assert [e.op for e in report.float] == ["nn.softmax"], str(report)
    for n in (1, 3):
        xs = [np.concatenate([xq] * n)]
        assert_within_one(run_relax(data, xs), run_litert(data, xs))
