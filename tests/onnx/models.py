"""Real model graphs built directly with ``onnx.helper`` (seeded random weights).

``resnet18``, ``mobilenet_v2``, ``densenet121``, ``bert_encoder`` and ``elementwise_chain``
return an ``onnx.ModelProto``; ``width``
(and the BERT sizes) shrink them for tests, the defaults are the full-size networks used by
``benchmarks/models.py``.  No torch or torchvision needed.
"""

from __future__ import annotations

import math
from typing import Any, Optional, Sequence

import numpy as np

OPSET = 17


class GraphBuilder:
    """A tiny helper that names values, stores initializers and appends nodes."""

    def __init__(self, seed: int = 0):
        from onnx import helper

        self.helper = helper
        self.rng = np.random.default_rng(seed)
        self.nodes: list[Any] = []
        self.inits: list[Any] = []
        self._count = 0

    def fresh(self, prefix: str) -> str:
        self._count += 1
        return f"{prefix}_{self._count}"

    def const(self, array: np.ndarray, prefix: str = "w") -> str:
        from onnx import numpy_helper

        name = self.fresh(prefix)
        self.inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def weight(self, shape: Sequence[int], fan_in: int, prefix: str = "w") -> str:
        std = math.sqrt(2.0 / max(fan_in, 1))
        return self.const(self.rng.normal(0.0, std, size=shape).astype(np.float32), prefix)

    def op(self, op_type: str, inputs: Sequence[str], n_out: int = 1, **attrs: Any) -> Any:
        outs = [self.fresh(op_type.lower()) for _ in range(n_out)]
        self.nodes.append(self.helper.make_node(op_type, list(inputs), outs, **attrs))
        return outs[0] if n_out == 1 else outs

    def model(self, inputs: list[Any], outputs: list[Any], name: str) -> Any:
        graph = self.helper.make_graph(self.nodes, name, inputs, outputs, self.inits)
        model = self.helper.make_model(
            graph, opset_imports=[self.helper.make_opsetid("", OPSET)], producer_name="tvm-tests")
        model.ir_version = 8
        return model


# -- CNN pieces --------------------------------------------------------------------------------
def _conv_bn(g: GraphBuilder, x: str, cin: int, cout: int, k: int, stride: int = 1,
             groups: int = 1, act: Optional[str] = "relu") -> str:
    w = g.weight([cout, cin // groups, k, k], cin // groups * k * k)
    y = g.op("Conv", [x, w], kernel_shape=[k, k], strides=[stride, stride],
             pads=[k // 2] * 4, group=groups)
    scale = g.const(g.rng.uniform(0.5, 1.5, cout).astype(np.float32), "bn_scale")
    bias = g.const(g.rng.normal(0, 0.1, cout).astype(np.float32), "bn_bias")
    mean = g.const(g.rng.normal(0, 0.1, cout).astype(np.float32), "bn_mean")
    var = g.const(g.rng.uniform(0.5, 1.5, cout).astype(np.float32), "bn_var")
    y = g.op("BatchNormalization", [y, scale, bias, mean, var], epsilon=1e-5)
    if act == "relu":
        y = g.op("Relu", [y])
    elif act == "relu6":
        lo = g.const(np.array(0.0, np.float32), "zero")
        hi = g.const(np.array(6.0, np.float32), "six")
        y = g.op("Clip", [y, lo, hi])
    return y


def _classifier(g: GraphBuilder, x: str, cin: int, classes: int) -> str:
    y = g.op("GlobalAveragePool", [x])
    y = g.op("Flatten", [y], axis=1)
    w = g.weight([classes, cin], cin, "fc_w")
    b = g.const(np.zeros(classes, np.float32), "fc_b")
    return g.op("Gemm", [y, w, b], transB=1)


def _image_io(g: GraphBuilder, batch: Any, size: int, classes: int) -> tuple[Any, Any]:
    from onnx import TensorProto

    h = g.helper
    return (h.make_tensor_value_info("input", TensorProto.FLOAT, [batch, 3, size, size]),
            h.make_tensor_value_info("logits", TensorProto.FLOAT, [batch, classes]))


def resnet18(width: int = 64, image_size: int = 224, classes: int = 1000, batch: Any = 1,
             seed: int = 0) -> Any:
    """ResNet-18 (BasicBlock x [2, 2, 2, 2]) with ``width`` channels in the first stage."""
    g = GraphBuilder(seed)
    inp, out = _image_io(g, batch, image_size, classes)
    x = _conv_bn(g, "input", 3, width, 7, 2)
    x = g.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin = width
    for stage, blocks in enumerate([2, 2, 2, 2]):
        cout = width * 2**stage
        for b in range(blocks):
            stride = 2 if (stage > 0 and b == 0) else 1
            y = _conv_bn(g, x, cin, cout, 3, stride)
            y = _conv_bn(g, y, cout, cout, 3, 1, act=None)
            short = x if (stride == 1 and cin == cout) else _conv_bn(g, x, cin, cout, 1, stride,
                                                                       act=None)
            x = g.op("Relu", [g.op("Add", [y, short])])
            cin = cout
    _classifier(g, x, cin, classes)
    g.nodes[-1].output[0] = "logits"
    return g.model([inp], [out], "resnet18")


def _bn_relu(g: GraphBuilder, x: str, c: int) -> str:
    scale = g.const(g.rng.uniform(0.5, 1.5, c).astype(np.float32), "bn_scale")
    bias = g.const(g.rng.normal(0, 0.1, c).astype(np.float32), "bn_bias")
    mean = g.const(g.rng.normal(0, 0.1, c).astype(np.float32), "bn_mean")
    var = g.const(g.rng.uniform(0.5, 1.5, c).astype(np.float32), "bn_var")
    return g.op("Relu", [g.op("BatchNormalization", [x, scale, bias, mean, var], epsilon=1e-5)])


def densenet121(growth: int = 32, blocks: Sequence[int] = (6, 12, 24, 16), init: int = 64,
                image_size: int = 224, classes: int = 1000, batch: Any = 1, seed: int = 0) -> Any:
    """DenseNet-121 (Huang et al. 2017): dense blocks of BN-ReLU-Conv1x1(4k)-BN-ReLU-Conv3x3(k)
    layers whose outputs are concatenated, transitions halving channels and size."""
    g = GraphBuilder(seed)
    inp, out = _image_io(g, batch, image_size, classes)
    x = _conv_bn(g, "input", 3, init, 7, 2)
    x = g.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    c = init
    for i, layers in enumerate(blocks):
        for _ in range(layers):
            y = _bn_relu(g, x, c)
            w1 = g.weight([4 * growth, c, 1, 1], c)
            y = g.op("Conv", [y, w1], kernel_shape=[1, 1])
            y = _bn_relu(g, y, 4 * growth)
            w3 = g.weight([growth, 4 * growth, 3, 3], 4 * growth * 9)
            y = g.op("Conv", [y, w3], kernel_shape=[3, 3], pads=[1, 1, 1, 1])
            x = g.op("Concat", [x, y], axis=1)
            c += growth
        if i + 1 < len(blocks):
            y = _bn_relu(g, x, c)
            w = g.weight([c // 2, c, 1, 1], c)
            y = g.op("Conv", [y, w], kernel_shape=[1, 1])
            x = g.op("AveragePool", [y], kernel_shape=[2, 2], strides=[2, 2])
            c //= 2
    x = _bn_relu(g, x, c)
    _classifier(g, x, c, classes)
    g.nodes[-1].output[0] = "logits"
    return g.model([inp], [out], "densenet121")


_MBV2 = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
         (6, 160, 3, 2), (6, 320, 1, 1)]


def mobilenet_v2(width_mult: float = 1.0, image_size: int = 224, classes: int = 1000,
                 batch: Any = 1, seed: int = 0) -> Any:
    """MobileNetV2 (inverted residuals, ReLU6 as Clip) scaled by ``width_mult``."""

    def ch(c: int) -> int:
        return max(8, int(c * width_mult + 4) // 8 * 8)

    g = GraphBuilder(seed)
    inp, out = _image_io(g, batch, image_size, classes)
    cin = ch(32)
    x = _conv_bn(g, "input", 3, cin, 3, 2, act="relu6")
    for t, c, n, s in _MBV2:
        cout = ch(c)
        for i in range(n):
            stride = s if i == 0 else 1
            hidden = cin * t
            y = x if t == 1 else _conv_bn(g, x, cin, hidden, 1, act="relu6")
            y = _conv_bn(g, y, hidden, hidden, 3, stride, groups=hidden, act="relu6")
            y = _conv_bn(g, y, hidden, cout, 1, act=None)
            x = g.op("Add", [x, y]) if (stride == 1 and cin == cout) else y
            cin = cout
    last = max(1280, ch(1280)) if width_mult > 1.0 else ch(1280)
    x = _conv_bn(g, x, cin, last, 1, act="relu6")
    _classifier(g, x, last, classes)
    g.nodes[-1].output[0] = "logits"
    return g.model([inp], [out], "mobilenet_v2")


# -- BERT-style encoder ------------------------------------------------------------------------
def bert_encoder(layers: int = 4, hidden: int = 512, heads: int = 8, ffn: int = 2048,
                 vocab: int = 8192, max_pos: int = 512, decomposed_layernorm: bool = False,
                 seed: int = 0) -> Any:
    """A BERT-style encoder with symbolic ``batch`` and ``seq`` dimensions.

    Inputs ``input_ids`` (int64 [batch, seq]) and ``attention_mask`` (float [batch, seq],
    1 = attend); output ``hidden`` [batch, seq, hidden].  Attention reshapes use the
    ``Shape -> Gather -> Unsqueeze -> Concat -> Reshape`` pattern of exported models; GELU
    is the Erf form; LayerNormalization or (``decomposed_layernorm``) its ReduceMean / Sub /
    Pow / Sqrt / Div decomposition.
    """
    from onnx import TensorProto

    g = GraphBuilder(seed)
    h = g.helper
    dh = hidden // heads
    i64 = lambda v, p="c": g.const(np.array(v, dtype=np.int64), p)  # noqa: E731
    f32 = lambda v, p="c": g.const(np.array(v, dtype=np.float32), p)  # noqa: E731

    def dense(x: str, cin: int, cout: int) -> str:
        w = g.const((g.rng.normal(0, 0.02, (cin, cout))).astype(np.float32), "dense_w")
        b = g.const((g.rng.normal(0, 0.02, cout)).astype(np.float32), "dense_b")
        return g.op("Add", [g.op("MatMul", [x, w]), b])

    def layer_norm(x: str) -> str:
        gamma = g.const(g.rng.uniform(0.8, 1.2, hidden).astype(np.float32), "ln_g")
        beta = g.const(g.rng.normal(0, 0.02, hidden).astype(np.float32), "ln_b")
        if not decomposed_layernorm:
            return g.op("LayerNormalization", [x, gamma, beta], axis=-1, epsilon=1e-12)
        mean = g.op("ReduceMean", [x], axes=[-1])
        d = g.op("Sub", [x, mean])
        var = g.op("ReduceMean", [g.op("Pow", [d, f32(2.0)])], axes=[-1])
        std = g.op("Sqrt", [g.op("Add", [var, f32(1e-12)])])
        return g.op("Add", [g.op("Mul", [g.op("Div", [d, std]), gamma]), beta])

    def gelu(x: str) -> str:
        e = g.op("Erf", [g.op("Div", [x, f32(math.sqrt(2.0))])])
        return g.op("Mul", [g.op("Mul", [x, g.op("Add", [e, f32(1.0)])]), f32(0.5)])

    ids = "input_ids"
    shape = g.op("Shape", [ids])
    batch = g.op("Unsqueeze", [g.op("Gather", [shape, i64(0)], axis=0), i64([0])])
    seq_s = g.op("Gather", [shape, i64(1)], axis=0)
    seq = g.op("Unsqueeze", [seq_s, i64([0])])
    word = g.const(g.rng.normal(0, 0.02, (vocab, hidden)).astype(np.float32), "word_emb")
    pos = g.const(g.rng.normal(0, 0.02, (max_pos, hidden)).astype(np.float32), "pos_emb")
    positions = g.op("Range", [i64(0), seq_s, i64(1)])
    x = g.op("Add", [g.op("Gather", [word, ids], axis=0), g.op("Gather", [pos, positions], axis=0)])
    x = layer_norm(x)
    # additive mask [batch, 1, 1, seq]
    m = g.op("Unsqueeze", ["attention_mask", i64([1, 2])])
    m = g.op("Mul", [g.op("Sub", [f32(1.0), m]), f32(-10000.0)])
    heads_shape = g.op("Concat", [batch, seq, i64([heads]), i64([dh])], axis=0)
    merged_shape = g.op("Concat", [batch, seq, i64([hidden])], axis=0)
    for _ in range(layers):
        def split_heads(t: str) -> str:
            return g.op("Transpose", [g.op("Reshape", [t, heads_shape])], perm=[0, 2, 1, 3])

        q = split_heads(dense(x, hidden, hidden))
        k = g.op("Transpose", [g.op("Reshape", [dense(x, hidden, hidden), heads_shape])],
                 perm=[0, 2, 3, 1])
        v = split_heads(dense(x, hidden, hidden))
        scores = g.op("Div", [g.op("MatMul", [q, k]), f32(math.sqrt(dh))])
        probs = g.op("Softmax", [g.op("Add", [scores, m])], axis=-1)
        ctxv = g.op("Transpose", [g.op("MatMul", [probs, v])], perm=[0, 2, 1, 3])
        attn = dense(g.op("Reshape", [ctxv, merged_shape]), hidden, hidden)
        x = layer_norm(g.op("Add", [x, attn]))
        ff = dense(gelu(dense(x, hidden, ffn)), ffn, hidden)
        x = layer_norm(g.op("Add", [x, ff]))
    g.nodes[-1].output[0] = "hidden"
    inputs = [h.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"]),
              h.make_tensor_value_info("attention_mask", TensorProto.FLOAT, ["batch", "seq"])]
    outputs = [h.make_tensor_value_info("hidden", TensorProto.FLOAT, ["batch", "seq", hidden])]
    return g.model(inputs, outputs, "bert_encoder")


def elementwise_chain(length: int = 20000, shape: Sequence[int] = (4, 8), seed: int = 0) -> Any:
    """``length`` elementwise operators applied one after another (Relu, Add, Mul, Sigmoid,
    Neg, Abs, Tanh, Sub in turn, the binary ones with a scalar initializer): the graph that
    measures whether compile time grows linearly with a model's depth."""
    from onnx import TensorProto

    g = GraphBuilder(seed)
    h = g.helper
    inp = h.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))
    half = g.const(np.array([0.5], np.float32), "c")
    x = "x"
    for i in range(length):
        op = _CHAIN_OPS[i % len(_CHAIN_OPS)]
        x = g.op(op, [x, half] if op in ("Add", "Mul", "Sub") else [x])
    g.nodes[-1].output[0] = "y"
    out = h.make_tensor_value_info("y", TensorProto.FLOAT, list(shape))
    return g.model([inp], [out], f"chain{length}")


_CHAIN_OPS = ("Relu", "Add", "Mul", "Sigmoid", "Neg", "Abs", "Tanh", "Sub")


def bert_inputs(batch: int, seq: int, vocab: int, seed: int = 0) -> dict[str, np.ndarray]:
    """Random token ids and a mask with the last quarter of each row padded."""
    rng = np.random.default_rng(seed)
    mask = np.ones((batch, seq), np.float32)
    mask[:, seq - seq // 4:] = 0.0
    return {"input_ids": rng.integers(0, vocab, (batch, seq)).astype(np.int64),
            "attention_mask": mask}


def image_input(batch: int = 1, size: int = 224, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"input": rng.normal(0, 1, (batch, 3, size, size)).astype(np.float32)}
