"""Per-operator cases: convolutions, dense, pooling, activations, normalisation, resize,
batch matmul, elementwise math, comparisons, casts, reductions (see op_cases.py)."""

from __future__ import annotations

from typing import Any

import numpy as np
from model_builder import ModelBuilder
from op_cases import binary, case, rand, simple

# -- convolutions -------------------------------------------------------------------------
def _conv(padding: int, stride: int, act: int, dilation: int = 1, groups: int = 1,
          bias: bool = True) -> Any:
    def build() -> Any:
        m = ModelBuilder(seed=3)
        n, h, w, c, o, k = 1, 9, 8, 4, 6, 3
        x = m.input([n, h, w, c])
        wt = m.weights([o, k, k, c // groups])
        b = [m.weights([o])] if bias else []
        eff = (k - 1) * dilation + 1
        oh = -(-h // stride) if padding == 0 else (h - eff) // stride + 1
        ow = -(-w // stride) if padding == 0 else (w - eff) // stride + 1
        y = m.tensor([n, oh, ow, o])
        m.op("CONV_2D", [x, wt, *b], [y], ("Conv2DOptions", {
            "Padding": padding, "StrideH": stride, "StrideW": stride,
            "DilationHFactor": dilation, "DilationWFactor": dilation,
            "FusedActivationFunction": act}), version=2 if groups == 1 else 6)
        m.output(y)
        return m, [rand([n, h, w, c])]
    return build


for _pad in (0, 1):
    for _stride in (1, 2):
        case(f"CONV_2D-pad{_pad}-s{_stride}")(_conv(_pad, _stride, 0))
for _act, _aname in ((1, "relu"), (2, "relu_n1_to_1"), (3, "relu6")):
    case(f"CONV_2D-{_aname}")(_conv(0, 1, _act))
case("CONV_2D-dilated")(_conv(0, 1, 1, dilation=2))
case("CONV_2D-grouped")(_conv(1, 1, 0, groups=2))


def _depthwise(padding: int, stride: int, mult: int, act: int = 0, dilation: int = 1) -> Any:
    def build() -> Any:
        m = ModelBuilder(seed=4)
        h, w, c, k = 8, 7, 3, 3
        x = m.input([1, h, w, c])
        wt, b = m.weights([1, k, k, c * mult]), m.weights([c * mult])
        eff = (k - 1) * dilation + 1
        oh = -(-h // stride) if padding == 0 else (h - eff) // stride + 1
        ow = -(-w // stride) if padding == 0 else (w - eff) // stride + 1
        y = m.tensor([1, oh, ow, c * mult])
        m.op("DEPTHWISE_CONV_2D", [x, wt, b], [y], ("DepthwiseConv2DOptions", {
            "Padding": padding, "StrideH": stride, "StrideW": stride, "DepthMultiplier": mult,
            "DilationHFactor": dilation, "DilationWFactor": dilation,
            "FusedActivationFunction": act}), version=2)
        m.output(y)
        return m, [rand([1, h, w, c])]
    return build


case("DEPTHWISE_CONV_2D-same-s1")(_depthwise(0, 1, 1))
case("DEPTHWISE_CONV_2D-valid-s2-m2")(_depthwise(1, 2, 2))
case("DEPTHWISE_CONV_2D-relu6-dilated")(_depthwise(0, 1, 1, 3, dilation=2))


def _transpose_conv(padding: int, stride: int, out_hw: tuple, bias: bool, act: int = 0) -> Any:
    def build() -> Any:
        m = ModelBuilder(seed=5)
        h, w, c, o, k = 4, 5, 3, 2, 3
        x = m.input([1, h, w, c])
        wt = m.weights([o, k, k, c])
        shape = m.const(np.array([1, *out_hw, o], np.int32))
        y = m.tensor([1, *out_hw, o])
        ins = [shape, wt, x] + ([m.weights([o])] if bias else [])
        m.op("TRANSPOSE_CONV", ins, [y], ("TransposeConvOptions", {
            "Padding": padding, "StrideH": stride, "StrideW": stride,
            "FusedActivationFunction": act}), version=3 if bias else 1)
        m.output(y)
        return m, [rand([1, h, w, c])]
    return build


case("TRANSPOSE_CONV-same-s2")(_transpose_conv(0, 2, (8, 10), False))
case("TRANSPOSE_CONV-valid-s2-bias")(_transpose_conv(1, 2, (9, 11), True))
case("TRANSPOSE_CONV-valid-s1-relu")(_transpose_conv(1, 1, (6, 7), True, act=1))


def _fc(keep: bool, act: int, bias: bool = True) -> Any:
    def build() -> Any:
        m = ModelBuilder(seed=6)
        x = m.input([2, 3, 8])
        wt = m.weights([5, 8])
        b = m.weights([5]) if bias else -1
        y = m.tensor([2, 3, 5] if keep else [6, 5])
        m.op("FULLY_CONNECTED", [x, wt, b], [y], ("FullyConnectedOptions", {
            "KeepNumDims": keep, "FusedActivationFunction": act}), version=5)
        m.output(y)
        return m, [rand([2, 3, 8])]
    return build


case("FULLY_CONNECTED")(_fc(False, 0))
case("FULLY_CONNECTED-keep_num_dims-relu")(_fc(True, 1))
case("FULLY_CONNECTED-nobias-relu6")(_fc(False, 3, bias=False))


def _pool(builtin: str, padding: int, stride: int, k: int, act: int = 0) -> Any:
    def build() -> Any:
        h, w = 7, 6
        oh = -(-h // stride) if padding == 0 else (h - k) // stride + 1
        ow = -(-w // stride) if padding == 0 else (w - k) // stride + 1
        return simple(builtin, [1, h, w, 3], [1, oh, ow, 3], ("Pool2DOptions", {
            "Padding": padding, "StrideH": stride, "StrideW": stride, "FilterHeight": k,
            "FilterWidth": k, "FusedActivationFunction": act}))
    return build


for _b in ("AVERAGE_POOL_2D", "MAX_POOL_2D", "L2_POOL_2D"):
    case(f"{_b}-same")(_pool(_b, 0, 2, 3))
    case(f"{_b}-valid")(_pool(_b, 1, 1, 2))
case("AVERAGE_POOL_2D-relu6")(_pool("AVERAGE_POOL_2D", 0, 1, 3, act=3))


# -- activations and normalisation ----------------------------------------------------------
for _b in ("RELU", "RELU6", "RELU_N1_TO_1", "RELU_0_TO_1", "LOGISTIC", "TANH", "HARD_SWISH",
           "ELU", "LOG_SOFTMAX"):
    case(_b)(lambda _b=_b: simple(_b, [2, 3, 5], x=rand([2, 3, 5], scale=4.0)))
case("LEAKY_RELU")(lambda: simple("LEAKY_RELU", [2, 6],
                                  options=("LeakyReluOptions", {"Alpha": 0.2})))
case("SOFTMAX")(lambda: simple("SOFTMAX", [3, 7], options=("SoftmaxOptions", {"Beta": 1.0})))
case("SOFTMAX-beta")(lambda: simple("SOFTMAX", [2, 2, 5],
                                    options=("SoftmaxOptions", {"Beta": 0.7})))
case("GELU")(lambda: simple("GELU", [2, 9], options=("GeluOptions", {"Approximate": False})))
case("GELU-approximate")(lambda: simple("GELU", [2, 9],
                                        options=("GeluOptions", {"Approximate": True})))
case("PRELU")(lambda: simple("PRELU", [1, 4, 4, 3], consts=(rand([1, 1, 3], 7),)))
case("L2_NORMALIZATION")(lambda: simple("L2_NORMALIZATION", [2, 3, 6], options=(
    "L2NormOptions", {"FusedActivationFunction": 0})))
case("LOCAL_RESPONSE_NORMALIZATION")(lambda: simple(
    "LOCAL_RESPONSE_NORMALIZATION", [1, 3, 3, 7], options=(
        "LocalResponseNormalizationOptions",
        {"Radius": 2, "Bias": 1.5, "Alpha": 0.3, "Beta": 0.75})))


def _resize(builtin: str, table: str, size: tuple, align: bool, half: bool) -> Any:
    def build() -> Any:
        return simple(builtin, [1, 5, 4, 2], [1, *size, 2], (table, {
            "AlignCorners": align, "HalfPixelCenters": half}),
            consts=(np.array(size, np.int32),), version=3 if half else 1)
    return build


for _size in ((8, 9), (3, 3)):
    for _align, _half in ((False, False), (True, False), (False, True)):
        _tag = f"{_size[0]}x{_size[1]}-align{int(_align)}-half{int(_half)}"
        case(f"RESIZE_BILINEAR-{_tag}")(
            _resize("RESIZE_BILINEAR", "ResizeBilinearOptions", _size, _align, _half))
        case(f"RESIZE_NEAREST_NEIGHBOR-{_tag}")(
            _resize("RESIZE_NEAREST_NEIGHBOR", "ResizeNearestNeighborOptions", _size, _align,
                    _half))


def _batch_matmul(adj_x: bool, adj_y: bool) -> Any:
    def build() -> Any:
        sa = [2, 5, 3] if adj_x else [2, 3, 5]
        sb = [1, 4, 5] if adj_y else [1, 5, 4]
        return binary("BATCH_MATMUL", sa, sb, [2, 3, 4],
                      ("BatchMatMulOptions", {"AdjX": adj_x, "AdjY": adj_y}))
    return build


for _ax in (False, True):
    for _ay in (False, True):
        case(f"BATCH_MATMUL-adj{int(_ax)}{int(_ay)}")(_batch_matmul(_ax, _ay))


# -- elementwise --------------------------------------------------------------------------
_FUSED = {"ADD": "AddOptions", "SUB": "SubOptions", "MUL": "MulOptions", "DIV": "DivOptions"}
for _b, _t in _FUSED.items():
    case(_b)(lambda _b=_b, _t=_t: binary(_b, [2, 3, 4], [2, 3, 4], [2, 3, 4],
                                         (_t, {"FusedActivationFunction": 0})))
    case(f"{_b}-broadcast-relu6")(lambda _b=_b, _t=_t: binary(
        _b, [2, 1, 4], [3, 1], [2, 3, 4], (_t, {"FusedActivationFunction": 3})))
for _b in ("MAXIMUM", "MINIMUM", "SQUARED_DIFFERENCE", "FLOOR_DIV", "FLOOR_MOD"):
    case(_b)(lambda _b=_b: binary(_b, [2, 3, 4], [1, 4], [2, 3, 4]))
case("ATAN2")(lambda: binary("ATAN2", [2, 3, 4], [2, 3, 4], [2, 3, 4]))
for _b, _t in (("ADD", "AddOptions"), ("MUL", "MulOptions"), ("DIV", "DivOptions")):
    case(f"{_b}-int32")(lambda _b=_b, _t=_t: binary(
        _b, [3, 4], [3, 4], [3, 4], (_t, {"FusedActivationFunction": 0}), out_dtype="int32",
        dtype="int32"))
for _b in ("FLOOR_DIV", "FLOOR_MOD", "MAXIMUM", "MINIMUM", "SUB"):
    case(f"{_b}-int32")(lambda _b=_b: binary(_b, [3, 4], [4], [3, 4], out_dtype="int32",
                                             dtype="int32"))
case("POW")(lambda: binary("POW", [2, 5], [2, 5], [2, 5], positive=True))
for _b in ("EQUAL", "NOT_EQUAL", "LESS", "LESS_EQUAL", "GREATER", "GREATER_EQUAL"):
    case(_b)(lambda _b=_b: binary(_b, [3, 4], [4], [3, 4], out_dtype="bool"))
for _b in ("LOGICAL_AND", "LOGICAL_OR"):
    case(_b)(lambda _b=_b: binary(_b, [3, 4], [3, 4], [3, 4], out_dtype="bool",
                                  dtype="bool"))
case("LOGICAL_NOT")(lambda: simple("LOGICAL_NOT", [3, 4], out_dtype="bool",
                                   x=rand([3, 4]) > 0))
for _b in ("ABS", "EXP", "NEG", "FLOOR", "CEIL", "SQUARE", "SIN", "COS", "SIGN"):
    case(_b)(lambda _b=_b: simple(_b, [3, 5], x=rand([3, 5], scale=2.0)))
for _b in ("LOG", "SQRT", "RSQRT"):
    case(_b)(lambda _b=_b: simple(_b, [3, 5], x=np.abs(rand([3, 5])) + 0.1))
case("ROUND")(lambda: simple("ROUND", [8], x=np.array(
    [-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.3, -0.7], np.float32)))
case("CAST-float-int32")(lambda: simple("CAST", [3, 4], out_dtype="int32",
                                        x=rand([3, 4], scale=5.0)))
case("CAST-int32-float")(lambda: simple("CAST", [3, 4], x=np.arange(12, dtype=np.int32)
                                        .reshape(3, 4) - 5))


@case("ADD_N")
def _add_n() -> Any:
    m = ModelBuilder()
    xs = [m.input([2, 3]) for _ in range(3)]
    y = m.tensor([2, 3])
    m.op("ADD_N", xs, [y])
    m.output(y)
    return m, [rand([2, 3], k) for k in range(3)]


@case("SELECT_V2")
def _select_v2() -> Any:
    m = ModelBuilder()
    c, a, b = m.input([3, 1], "bool"), m.input([3, 4]), m.input([1, 4])
    y = m.tensor([3, 4])
    m.op("SELECT_V2", [c, a, b], [y])
    m.output(y)
    return m, [rand([3, 1]) > 0, rand([3, 4], 1), rand([1, 4], 2)]


@case("SELECT")
def _select() -> Any:
    m = ModelBuilder()
    c, a, b = m.input([3], "bool"), m.input([3, 4]), m.input([3, 4])
    y = m.tensor([3, 4])
    m.op("SELECT", [c, a, b], [y])
    m.output(y)
    return m, [rand([3]) > 0, rand([3, 4], 1), rand([3, 4], 2)]


def _reduce(builtin: str, axes: list[int], keep: bool) -> Any:
    def build() -> Any:
        shape = [2, 3, 4, 5]
        out = [1 if i in [a % 4 for a in axes] else d for i, d in enumerate(shape)] if keep \
            else [d for i, d in enumerate(shape) if i not in [a % 4 for a in axes]]
        return simple(builtin, shape, out, ("ReducerOptions", {"KeepDims": keep}),
                      consts=(np.array(axes, np.int32),))
    return build


for _b in ("MEAN", "SUM", "REDUCE_MAX", "REDUCE_MIN", "REDUCE_PROD"):
    case(f"{_b}-keep")(_reduce(_b, [1, 2], True))
    case(f"{_b}-neg-axis")(_reduce(_b, [-1], False))


for _b in ("REDUCE_ANY", "REDUCE_ALL"):
    case(_b)(lambda _b=_b: simple(_b, [3, 4], [3, 1], ("ReducerOptions", {"KeepDims": True}),
                                  consts=(np.array([1], np.int32),), out_dtype="bool",
                                   x=rand([3, 4]) > -0.5))


def _arg(builtin: str, table: str, axis: int, out_type: int) -> Any:
    def build() -> Any:
        shape = [3, 4, 5]
        out = [d for i, d in enumerate(shape) if i != axis % 3]
        return simple(builtin, shape, out, (table, {"OutputType": out_type}),
                      consts=(np.array([axis], np.int32),),
                       out_dtype="int32" if out_type == 2 else "int64", version=2)
    return build


case("ARG_MAX-int64")(_arg("ARG_MAX", "ArgMaxOptions", 1, 4))
case("ARG_MAX-int32")(_arg("ARG_MAX", "ArgMaxOptions", -1, 2))
case("ARG_MIN-int32")(_arg("ARG_MIN", "ArgMinOptions", 0, 2))
case("CUMSUM")(lambda: simple("CUMSUM", [3, 4], options=("CumsumOptions", {
    "Exclusive": False, "Reverse": False}), consts=(np.array(1, np.int32),)))
case("CUMSUM-exclusive-reverse")(lambda: simple("CUMSUM", [3, 4], options=("CumsumOptions", {
    "Exclusive": True, "Reverse": True}), consts=(np.array(0, np.int32),)))
