"""Small whole models written with :class:`ModelBuilder` (seeded random weights), shared by
the end-to-end tests and benchmarks/tflite_models.py."""

from __future__ import annotations

from typing import Any, Optional

import numpy as np
from model_builder import ModelBuilder

RELU6 = 3


def _result(m: ModelBuilder, shape: list[int], as_builder: bool) -> tuple[Any, list[int]]:
    """(model bytes, input shape), or with ``as_builder`` the ModelBuilder itself (for
    quantize_model.quantize_case)."""
    return (m if as_builder else m.build()), shape


def _same(size: int, stride: int) -> int:
    return -(-size // stride)


def mobilenet_block_model(size: int = 32, width: int = 16, blocks: int = 2, classes: int = 10,
                          seed: int = 0, batch: Optional[int] = 1,
                          as_builder: bool = False) -> tuple[Any, list[int]]:
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
    return _result(m, [1, size, size, 3], as_builder)


def text_classifier_model(vocab: int = 200, dim: int = 16, steps: int = 12, hidden: int = 24,
                          classes: int = 4, seed: int = 1,
                          as_builder: bool = False) -> tuple[Any, list[int]]:
    """Token ids [1, steps] (int32) -> GATHER from an embedding table -> an LSTM (batch
    major) -> its last step (STRIDED_SLICE with shrink_axis) -> FULLY_CONNECTED -> SOFTMAX.
    Returns (model bytes, input shape)."""
    m = ModelBuilder(seed=seed, name="text_classifier")
    ids = m.input([1, steps], "int32", name="tokens")
    emb = m.tensor([1, steps, dim])
    m.op("GATHER", [m.weights([vocab, dim], 0.5), ids], [emb], ("GatherOptions", {"Axis": 0}))
    ins = [emb] + [m.weights([hidden, dim], 0.3) for _ in range(4)]
    ins += [m.weights([hidden, hidden], 0.3) for _ in range(4)] + [-1] * 3
    ins += [m.weights([hidden], 0.1) for _ in range(4)] + [-1, -1]
    ins += [m.tensor([1, hidden], variable=True), m.tensor([1, hidden], variable=True)]
    seq = m.tensor([1, steps, hidden])
    m.op("UNIDIRECTIONAL_SEQUENCE_LSTM", ins + [-1] * 4, [seq], (
        "UnidirectionalSequenceLSTMOptions", {"FusedActivationFunction": 4, "TimeMajor": False}))
    last = m.tensor([1, hidden])
    m.op("STRIDED_SLICE", [seq, m.const(np.array([0, -1, 0], np.int32)),
                           m.const(np.array([1, 0, hidden], np.int32)),
                           m.const(np.array([1, 1, 1], np.int32))], [last],
         ("StridedSliceOptions", {"ShrinkAxisMask": 2}), version=4)
    logits = m.tensor([1, classes])
    m.op("FULLY_CONNECTED", [last, m.weights([classes, hidden], 0.3), m.weights([classes])],
         [logits], ("FullyConnectedOptions", {"FusedActivationFunction": 0}))
    probs = m.tensor([1, classes], name="probs")
    m.op("SOFTMAX", [logits], [probs], ("SoftmaxOptions", {"Beta": 1.0}))
    m.output(probs)
    return _result(m, [1, steps], as_builder)


def keyword_spotting_model(frames: int = 49, coeffs: int = 10, width: int = 32,
                           classes: int = 12, seed: int = 2,
                           as_builder: bool = False) -> tuple[Any, list[int]]:
    """A DS-CNN-style keyword spotter on MFCC features [1, frames, coeffs, 1]: a 10x4/2
    CONV_2D (relu), two depthwise-separable blocks (3x3 depthwise relu, 1x1 conv relu), an
    AVERAGE_POOL_2D over the whole map, RESHAPE, FULLY_CONNECTED, SOFTMAX."""
    m = ModelBuilder(seed=seed, name="keyword_spotting")
    x = m.input([1, frames, coeffs, 1], name="mfcc")
    h, w = _same(frames, 2), _same(coeffs, 2)
    y = m.tensor([1, h, w, width])
    m.op("CONV_2D", [x, m.weights([width, 10, 4, 1], 0.3), m.weights([width], 0.1)], [y],
         ("Conv2DOptions", {"Padding": 0, "StrideH": 2, "StrideW": 2,
                            "FusedActivationFunction": 1}))
    for _ in range(2):
        d = m.tensor([1, h, w, width])
        m.op("DEPTHWISE_CONV_2D", [y, m.weights([1, 3, 3, width], 0.4), m.weights([width], 0.1)],
             [d], ("DepthwiseConv2DOptions", {"Padding": 0, "StrideH": 1, "StrideW": 1,
                                              "DepthMultiplier": 1,
                                              "FusedActivationFunction": 1}))
        p = m.tensor([1, h, w, width])
        m.op("CONV_2D", [d, m.weights([width, 1, 1, width], (2.0 / width) ** 0.5),
                         m.weights([width], 0.1)], [p],
             ("Conv2DOptions", {"Padding": 0, "StrideH": 1, "StrideW": 1,
                                "FusedActivationFunction": 1}))
        y = p
    pooled = m.tensor([1, 1, 1, width])
    m.op("AVERAGE_POOL_2D", [y], [pooled], ("Pool2DOptions", {
        "Padding": 1, "StrideH": 1, "StrideW": 1, "FilterHeight": h, "FilterWidth": w}))
    flat = m.tensor([1, width])
    m.op("RESHAPE", [pooled, m.const(np.array([-1, width], np.int32))], [flat])
    logits = m.tensor([1, classes])
    m.op("FULLY_CONNECTED", [flat, m.weights([classes, width], 0.3), m.weights([classes])],
         [logits], ("FullyConnectedOptions", {"FusedActivationFunction": 0}))
    probs = m.tensor([1, classes], name="probs")
    m.op("SOFTMAX", [logits], [probs], ("SoftmaxOptions", {"Beta": 1.0}))
    m.output(probs)
    return _result(m, [1, frames, coeffs, 1], as_builder)


def ssd_detector_model(size: int = 32, width: int = 16, anchors_per_cell: int = 3,
                       classes: int = 4, max_detections: int = 10, regular_nms: bool = False,
                       seed: int = 3, as_builder: bool = False) -> tuple[Any, list[int]]:
    """An SSD-style detector: two strided 3x3 convs (relu6) to a size/4 grid, a box head
    (3x3 conv -> RESHAPE [1, anchors, 4]) and a class head (3x3 conv -> RESHAPE
    [1, anchors, classes + 1] -> LOGISTIC), then the ``TFLite_Detection_PostProcess``
    custom op against a grid of constant anchors.  Outputs boxes, classes, scores and the
    number of detections."""
    m = ModelBuilder(seed=seed, name="ssd_detector")
    x = m.input([1, size, size, 3], name="image")
    y, cin, h = x, 3, size
    for _ in range(2):
        h = _same(h, 2)
        out = m.tensor([1, h, h, width])
        m.op("CONV_2D", [y, m.weights([width, 3, 3, cin], (2.0 / (9 * cin)) ** 0.5),
                         m.weights([width], 0.1)], [out],
             ("Conv2DOptions", {"Padding": 0, "StrideH": 2, "StrideW": 2,
                                "FusedActivationFunction": RELU6}))
        y, cin = out, width
    n = h * h * anchors_per_cell

    def head(depth: int) -> int:
        t = m.tensor([1, h, h, anchors_per_cell * depth])
        m.op("CONV_2D", [y, m.weights([anchors_per_cell * depth, 3, 3, width], 0.1),
                         m.weights([anchors_per_cell * depth], 0.1)], [t],
             ("Conv2DOptions", {"Padding": 0, "StrideH": 1, "StrideW": 1}))
        r = m.tensor([1, n, depth])
        m.op("RESHAPE", [t, m.const(np.array([1, n, depth], np.int32))], [r])
        return r

    boxes = head(4)
    logits = head(classes + 1)
    scores = m.tensor([1, n, classes + 1])
    m.op("LOGISTIC", [logits], [scores])
    centers = (np.arange(h, dtype=np.float32) + 0.5) / h
    cy, cx = np.meshgrid(centers, centers, indexing="ij")
    sizes = np.array([0.1, 0.2, 0.35], np.float32)[:anchors_per_cell]
    anchors = np.stack([np.repeat(cy.reshape(-1), anchors_per_cell),
                        np.repeat(cx.reshape(-1), anchors_per_cell),
                        np.tile(sizes, h * h), np.tile(sizes, h * h)], axis=1)
    outs = [m.tensor([1, max_detections, 4], name="boxes"),
            m.tensor([1, max_detections], name="classes"),
            m.tensor([1, max_detections], name="scores"), m.tensor([1], name="count")]
    m.op("CUSTOM", [boxes, scores, m.const(anchors)], outs,
         custom_code="TFLite_Detection_PostProcess", custom_options={
             "max_detections": max_detections, "max_classes_per_detection": 1,
             "detections_per_class": 5, "use_regular_nms": regular_nms,
             "nms_score_threshold": 0.55, "nms_iou_threshold": 0.5, "num_classes": classes,
             "y_scale": 10.0, "x_scale": 10.0, "h_scale": 5.0, "w_scale": 5.0})
    m.output(*outs)
    return _result(m, [1, size, size, 3], as_builder)


def resnet_model(size: int = 32, width: int = 16, stages: int = 2, classes: int = 10,
                 seed: int = 4, as_builder: bool = False) -> tuple[Any, list[int]]:
    """A ResNet-style network: a 7x7/2 stem conv (relu) and a 3x3/2 MAX_POOL_2D, then per
    stage a basic block (3x3 conv relu, 3x3 conv, add the shortcut, relu; the first block
    of a later stage strides 2 and projects its shortcut with a 1x1/2 conv), a global
    MEAN, FULLY_CONNECTED and SOFTMAX."""
    m = ModelBuilder(seed=seed, name="resnet")
    x = m.input([1, size, size, 3], name="image")

    def conv(inp: int, cin: int, cout: int, k: int, stride: int, act: int) -> int:
        h = _same(m.tensors[inp]["shape"][1], stride)
        y = m.tensor([1, h, h, cout])
        m.op("CONV_2D", [inp, m.weights([cout, k, k, cin], (2.0 / (k * k * cin)) ** 0.5),
                         m.weights([cout], 0.1)], [y],
             ("Conv2DOptions", {"Padding": 0, "StrideH": stride, "StrideW": stride,
                                "FusedActivationFunction": act}))
        return y

    y = conv(x, 3, width, 7, 2, 1)
    h = _same(m.tensors[y]["shape"][1], 2)
    pooled = m.tensor([1, h, h, width])
    m.op("MAX_POOL_2D", [y], [pooled], ("Pool2DOptions", {
        "Padding": 0, "StrideH": 2, "StrideW": 2, "FilterHeight": 3, "FilterWidth": 3}))
    y, cin = pooled, width
    for s in range(stages):
        cout, stride = width * 2 ** s, 1 if s == 0 else 2
        a = conv(y, cin, cout, 3, stride, 1)
        b = conv(a, cout, cout, 3, 1, 0)
        short = y if stride == 1 and cin == cout else conv(y, cin, cout, 1, stride, 0)
        out = m.tensor(m.tensors[b]["shape"])
        m.op("ADD", [b, short], [out], ("AddOptions", {"FusedActivationFunction": 1}))
        y, cin = out, cout
    feat = m.tensor([1, cin])
    m.op("MEAN", [y, m.const(np.array([1, 2], np.int32))], [feat],
         ("ReducerOptions", {"KeepDims": False}))
    logits = m.tensor([1, classes])
    m.op("FULLY_CONNECTED", [feat, m.weights([classes, cin], 0.3), m.weights([classes])],
         [logits], ("FullyConnectedOptions", {"FusedActivationFunction": 0}))
    probs = m.tensor([1, classes], name="probs")
    m.op("SOFTMAX", [logits], [probs], ("SoftmaxOptions", {"Beta": 1.0}))
    m.output(probs)
    return _result(m, [1, size, size, 3], as_builder)
