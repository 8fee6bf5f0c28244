"""Real models end to end against onnxruntime (small widths to keep CI time modest).

Tolerances: float32 networks, compared elementwise with rtol=1e-4 plus an absolute
tolerance of 1e-4 times the output's largest magnitude (ResNet-18, MobileNetV2, BERT).
The BERT-style encoder has symbolic batch and sequence dimensions and runs at two
sequence lengths with ONE compiled artifact.
"""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

import models  # noqa: E402

import tvm.runtime  # noqa: E402
from tvm import relax  # noqa: E402
from tvm.relax.frontend.onnx import from_onnx  # noqa: E402

RTOL = 1e-4


def _close(got: np.ndarray, expected: np.ndarray) -> None:
    atol = 1e-4 * max(1.0, float(np.abs(expected).max()))
    np.testing.assert_allclose(got, expected, rtol=RTOL, atol=atol)


def _compile(model):
    onnx.checker.check_model(model)
    mod = from_onnx(model)
    assert relax.analysis.well_formed(mod)
    ex = relax.build(mod, target="llvm")
    return mod, relax.VirtualMachine(ex, tvm.runtime.cpu())


def _ort(model):
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), opts,
                                providers=["CPUExecutionProvider"])


def test_resnet18_small():
    model = models.resnet18(width=8, image_size=32, classes=10)
    _, vm = _compile(model)
    feeds = models.image_input(1, 32)
    got = vm["main"](feeds["input"]).numpy()
    _close(got, _ort(model).run(None, feeds)[0])


def test_mobilenet_v2_small():
    model = models.mobilenet_v2(width_mult=0.25, image_size=32, classes=10)
    _, vm = _compile(model)
    feeds = models.image_input(1, 32)
    got = vm["main"](feeds["input"]).numpy()
    _close(got, _ort(model).run(None, feeds)[0])


@pytest.mark.parametrize("decomposed", [False, True], ids=["layernorm_op", "decomposed_ln"])
def test_bert_two_sequence_lengths(decomposed):
    vocab = 50
    model = models.bert_encoder(layers=2, hidden=32, heads=4, ffn=64, vocab=vocab, max_pos=64,
                                decomposed_layernorm=decomposed)
    mod, vm = _compile(model)
    # batch and sequence stay symbolic in the compiled program
    x = mod["main"].params[0].struct_info.shape_values
    assert [str(d) for d in x] == ["batch", "seq"]
    sess = _ort(model)
    for batch, seq in [(2, 8), (1, 13)]:
        feeds = models.bert_inputs(batch, seq, vocab)
        got = vm["main"](feeds["input_ids"], feeds["attention_mask"]).numpy()
        assert got.shape == (batch, seq, 32)
        _close(got, sess.run(None, feeds)[0])
