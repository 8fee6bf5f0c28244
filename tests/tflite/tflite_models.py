"""Small whole models written with :class:`ModelBuilder` (seeded random weights), shared by
the end-to-end tests and benchmarks/tflite_models.py."""

from __future__ import annotations

from typing import Optional

import numpy as np
from model_builder import ModelBuilder

RELU6 = 3


def _same(size: int, stride: int) -> int:
    return -(-size // stride)


def mobilenet_block_model(size: int = 32, width: int = 16, blocks: int = 2, classes: int = 10,
                          seed: int = 0, batch: Optional[int] = 1) -> tuple[bytes, list[int]]:
    """A MobileNetV2-like stack on a ``size`` x ``size`` x 3 NHWC image: a strided 3x3 stem
    (relu6), then ``blocks`` inverted residual blocks (1x1 expand x4 relu6, 3x3 depthwise
    relu6, 1x1 project, residual add), a global MEAN, FULLY_CONNECTED and SOFTMAX.
    ``batch=None`` declares the batch axis -1 in shape_signature.  Returns (model bytes,
    input shape for batch 1)."""
    m = ModelBuilder(seed=seed, name="mobilenet_block")
    n = 1 if batch is None else batch
    sig = None if batch is not None else [-1, size, size, 3]
    x = m.input([n, size, size, 3], name="image", signature=sig)

    def act_sig(shape: list[int]) -> Optional[list[int]]:
        return None if batch is not None else [-1] + shape[1:]

    def conv(inp: int, cin: int, cout: int, k: int, stride: int, act: int) -> tuple[int, int]:
        h = _same(m.tensors[inp]["shape"][1], stride)
        shape = [n, h, h, cout]
        y = m.tensor(shape, signature=act_sig(shape))
        w = m.weights([cout, k, k, cin], scale=(2.0 / (k * k * cin)) ** 0.5)
        m.op("CONV_2D", [inp, w, m.weights([cout], 0.1)], [y], ("Conv2DOptions", {
            "Padding": 0, "StrideH": stride, "StrideW": stride,
            "FusedActivationFunction": act}), version=1)
        return y, h

    def depthwise(inp: int, c: int, stride: int) -> int:
        h = _same(m.tensors[inp]["shape"][1], stride)
        shape = [n, h, h, c]
        y = m.tensor(shape, signature=act_sig(shape))
        w = m.weights([1, 3, 3, c], scale=(2.0 / 9) ** 0.5)
        m.op("DEPTHWISE_CONV_2D", [inp, w, m.weights([c], 0.1)], [y], (
            "DepthwiseConv2DOptions", {"Padding": 0, "StrideH": stride, "StrideW": stride,
                                       "DepthMultiplier": 1,
                                       "FusedActivationFunction": RELU6}), version=1)
        return y

    y, h = conv(x, 3, width, 3, 2, RELU6)
    for _ in range(blocks):
        e, _h = conv(y, width, 4 * width, 1, 1, RELU6)
        d = depthwise(e, 4 * width, 1)
        p, _h = conv(d, 4 * width, width, 1, 1, 0)
        shape = [n, h, h, width]
        s = m.tensor(shape, signature=act_sig(shape))
        m.op("ADD", [y, p], [s], ("AddOptions", {"FusedActivationFunction": 0}))
        y = s
    pooled = m.tensor([n, width], signature=None if batch is not None else [-1, width])
    m.op("MEAN", [y, m.const(np.array([1, 2], np.int32))], [pooled],
         ("ReducerOptions", {"KeepDims": False}))
    logits = m.tensor([n, classes], signature=None if batch is not None else [-1, classes])
    m.op("FULLY_CONNECTED", [pooled, m.weights([classes, width], 0.3), m.weights([classes])],
         [logits], ("FullyConnectedOptions", {"FusedActivationFunction": 0}))
    probs = m.tensor([n, classes], name="probs",
                     signature=None if batch is not None else [-1, classes])
    m.op("SOFTMAX", [logits], [probs], ("SoftmaxOptions", {"Beta": 1.0}))
    m.output(probs)
    return m.build(), [1, size, size, 3]
