"""Per-operator suite: one small float32 model per builtin (and per option / fused
activation), imported with from_tflite, built for llvm, run on the VM and compared with
LiteRT's builtin kernels (rtol 1e-5)."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
from model_builder import ModelBuilder, run_litert, run_relax

from tvm.relax.frontend.tflite import supported_ops

CASES: dict[str, Callable[[], tuple[ModelBuilder, list[np.ndarray]]]] = {}
#: builtins whose case lives in another test module
COVERED_ELSEWHERE = {"QUANTIZE", "DEQUANTIZE", "IF"}  # test_import.py


def case(name: str) -> Callable:
    def wrap(fn: Callable) -> Callable:
        CASES[name] = fn
        return fn
    return wrap


def _rand(shape: Any, seed: int = 0, scale: float = 1.0) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)


def _simple(builtin: str, shape: list[int], out_shape: Any = None, options: Any = None,
            consts: tuple = (), out_dtype: str = "float32", version: int = 1,
            x: Any = None) -> tuple[ModelBuilder, list[np.ndarray]]:
    """``builtin(input, *consts)`` on one float input of ``shape``."""
    m = ModelBuilder(seed=1)
    a = m.input(shape, "float32" if x is None else str(x.dtype))
    ins = [a] + [m.const(c) if not isinstance(c, int) else c for c in consts]
    y = m.tensor(shape if out_shape is None else out_shape, out_dtype)
    m.op(builtin, ins, [y], options, version=version)
    m.output(y)
    return m, [_rand(shape) if x is None else x]


def _binary(builtin: str, sa: list[int], sb: list[int], out: list[int], options: Any = None,
            out_dtype: str = "float32", positive: bool = False, dtype: str = "float32"
            ) -> tuple[ModelBuilder, list[np.ndarray]]:
    m = ModelBuilder()
    a, b = m.input(sa, dtype), m.input(sb, dtype)
    y = m.tensor(out, out_dtype)
    m.op(builtin, [a, b], [y], options)
    m.output(y)
    xa, xb = _rand(sa, 1), _rand(sb, 2)
    if positive:
        xa, xb = np.abs(xa) + 0.5, np.abs(xb) + 0.5
    if dtype == "bool":
        xa, xb = xa > 0, xb > 0
    if dtype == "int32":  # no zero divisors
        xa = np.round(xa * 20).astype(np.int32)
        xb = np.round(xb * 5).astype(np.int32)
        xb[xb == 0] = 3
    return m, [xa, xb]


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
        return m, [_rand([n, h, w, c])]
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
        return m, [_rand([1, h, w, c])]
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
        return m, [_rand([1, h, w, c])]
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
        return m, [_rand([2, 3, 8])]
    return build


case("FULLY_CONNECTED")(_fc(False, 0))
case("FULLY_CONNECTED-keep_num_dims-relu")(_fc(True, 1))
case("FULLY_CONNECTED-nobias-relu6")(_fc(False, 3, bias=False))


def _pool(builtin: str, padding: int, stride: int, k: int, act: int = 0) -> Any:
    def build() -> Any:
        h, w = 7, 6
        oh = -(-h // stride) if padding == 0 else (h - k) // stride + 1
        ow = -(-w // stride) if padding == 0 else (w - k) // stride + 1
        return _simple(builtin, [1, h, w, 3], [1, oh, ow, 3], ("Pool2DOptions", {
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
    case(_b)(lambda _b=_b: _simple(_b, [2, 3, 5], x=_rand([2, 3, 5], scale=4.0)))
case("LEAKY_RELU")(lambda: _simple("LEAKY_RELU", [2, 6],
                                   options=("LeakyReluOptions", {"Alpha": 0.2})))
case("SOFTMAX")(lambda: _simple("SOFTMAX", [3, 7], options=("SoftmaxOptions", {"Beta": 1.0})))
case("SOFTMAX-beta")(lambda: _simple("SOFTMAX", [2, 2, 5],
                                     options=("SoftmaxOptions", {"Beta": 0.7})))
case("GELU")(lambda: _simple("GELU", [2, 9], options=("GeluOptions", {"Approximate": False})))
case("GELU-approximate")(lambda: _simple("GELU", [2, 9],
                                         options=("GeluOptions", {"Approximate": True})))
case("PRELU")(lambda: _simple("PRELU", [1, 4, 4, 3], consts=(_rand([1, 1, 3], 7),)))
case("L2_NORMALIZATION")(lambda: _simple("L2_NORMALIZATION", [2, 3, 6], options=(
    "L2NormOptions", {"FusedActivationFunction": 0})))
case("LOCAL_RESPONSE_NORMALIZATION")(lambda: _simple(
    "LOCAL_RESPONSE_NORMALIZATION", [1, 3, 3, 7], options=(
        "LocalResponseNormalizationOptions",
        {"Radius": 2, "Bias": 1.5, "Alpha": 0.3, "Beta": 0.75})))


def _resize(builtin: str, table: str, size: tuple, align: bool, half: bool) -> Any:
    def build() -> Any:
        return _simple(builtin, [1, 5, 4, 2], [1, *size, 2], (table, {
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
        return _binary("BATCH_MATMUL", sa, sb, [2, 3, 4],
                       ("BatchMatMulOptions", {"AdjX": adj_x, "AdjY": adj_y}))
    return build


for _ax in (False, True):
    for _ay in (False, True):
        case(f"BATCH_MATMUL-adj{int(_ax)}{int(_ay)}")(_batch_matmul(_ax, _ay))


# -- elementwise --------------------------------------------------------------------------
_FUSED = {"ADD": "AddOptions", "SUB": "SubOptions", "MUL": "MulOptions", "DIV": "DivOptions"}
for _b, _t in _FUSED.items():
    case(_b)(lambda _b=_b, _t=_t: _binary(_b, [2, 3, 4], [2, 3, 4], [2, 3, 4],
                                          (_t, {"FusedActivationFunction": 0})))
    case(f"{_b}-broadcast-relu6")(lambda _b=_b, _t=_t: _binary(
        _b, [2, 1, 4], [3, 1], [2, 3, 4], (_t, {"FusedActivationFunction": 3})))
for _b in ("MAXIMUM", "MINIMUM", "SQUARED_DIFFERENCE", "FLOOR_DIV", "FLOOR_MOD"):
    case(_b)(lambda _b=_b: _binary(_b, [2, 3, 4], [1, 4], [2, 3, 4]))
case("ATAN2")(lambda: _binary("ATAN2", [2, 3, 4], [2, 3, 4], [2, 3, 4]))
for _b, _t in (("ADD", "AddOptions"), ("MUL", "MulOptions"), ("DIV", "DivOptions")):
    case(f"{_b}-int32")(lambda _b=_b, _t=_t: _binary(
        _b, [3, 4], [3, 4], [3, 4], (_t, {"FusedActivationFunction": 0}), out_dtype="int32",
        dtype="int32"))
for _b in ("FLOOR_DIV", "FLOOR_MOD", "MAXIMUM", "MINIMUM", "SUB"):
    case(f"{_b}-int32")(lambda _b=_b: _binary(_b, [3, 4], [4], [3, 4], out_dtype="int32",
                                              dtype="int32"))
case("POW")(lambda: _binary("POW", [2, 5], [2, 5], [2, 5], positive=True))
for _b in ("EQUAL", "NOT_EQUAL", "LESS", "LESS_EQUAL", "GREATER", "GREATER_EQUAL"):
    case(_b)(lambda _b=_b: _binary(_b, [3, 4], [4], [3, 4], out_dtype="bool"))
for _b in ("LOGICAL_AND", "LOGICAL_OR"):
    case(_b)(lambda _b=_b: _binary(_b, [3, 4], [3, 4], [3, 4], out_dtype="bool",
                                   dtype="bool"))
case("LOGICAL_NOT")(lambda: _simple("LOGICAL_NOT", [3, 4], out_dtype="bool",
                                    x=_rand([3, 4]) > 0))
for _b in ("ABS", "EXP", "NEG", "FLOOR", "CEIL", "SQUARE", "SIN", "COS", "SIGN"):
    case(_b)(lambda _b=_b: _simple(_b, [3, 5], x=_rand([3, 5], scale=2.0)))
for _b in ("LOG", "SQRT", "RSQRT"):
    case(_b)(lambda _b=_b: _simple(_b, [3, 5], x=np.abs(_rand([3, 5])) + 0.1))
case("ROUND")(lambda: _simple("ROUND", [8], x=np.array(
    [-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.3, -0.7], np.float32)))
case("CAST-float-int32")(lambda: _simple("CAST", [3, 4], out_dtype="int32",
                                         x=_rand([3, 4], scale=5.0)))
case("CAST-int32-float")(lambda: _simple("CAST", [3, 4], x=np.arange(12, dtype=np.int32)
                                         .reshape(3, 4) - 5))


@case("ADD_N")
def _add_n() -> Any:
    m = ModelBuilder()
    xs = [m.input([2, 3]) for _ in range(3)]
    y = m.tensor([2, 3])
    m.op("ADD_N", xs, [y])
    m.output(y)
    return m, [_rand([2, 3], k) for k in range(3)]


@case("SELECT_V2")
def _select_v2() -> Any:
    m = ModelBuilder()
    c, a, b = m.input([3, 1], "bool"), m.input([3, 4]), m.input([1, 4])
    y = m.tensor([3, 4])
    m.op("SELECT_V2", [c, a, b], [y])
    m.output(y)
    return m, [_rand([3, 1]) > 0, _rand([3, 4], 1), _rand([1, 4], 2)]


@case("SELECT")
def _select() -> Any:
    m = ModelBuilder()
    c, a, b = m.input([3], "bool"), m.input([3, 4]), m.input([3, 4])
    y = m.tensor([3, 4])
    m.op("SELECT", [c, a, b], [y])
    m.output(y)
    return m, [_rand([3]) > 0, _rand([3, 4], 1), _rand([3, 4], 2)]


def _reduce(builtin: str, axes: list[int], keep: bool) -> Any:
    def build() -> Any:
        shape = [2, 3, 4, 5]
        out = [1 if i in [a % 4 for a in axes] else d for i, d in enumerate(shape)] if keep \
            else [d for i, d in enumerate(shape) if i not in [a % 4 for a in axes]]
        return _simple(builtin, shape, out, ("ReducerOptions", {"KeepDims": keep}),
                       consts=(np.array(axes, np.int32),))
    return build


for _b in ("MEAN", "SUM", "REDUCE_MAX", "REDUCE_MIN", "REDUCE_PROD"):
    case(f"{_b}-keep")(_reduce(_b, [1, 2], True))
    case(f"{_b}-neg-axis")(_reduce(_b, [-1], False))


for _b in ("REDUCE_ANY", "REDUCE_ALL"):
    case(_b)(lambda _b=_b: _simple(_b, [3, 4], [3, 1], ("ReducerOptions", {"KeepDims": True}),
                                   consts=(np.array([1], np.int32),), out_dtype="bool",
                                   x=_rand([3, 4]) > -0.5))


def _arg(builtin: str, table: str, axis: int, out_type: int) -> Any:
    def build() -> Any:
        shape = [3, 4, 5]
        out = [d for i, d in enumerate(shape) if i != axis % 3]
        return _simple(builtin, shape, out, (table, {"OutputType": out_type}),
                       consts=(np.array([axis], np.int32),),
                       out_dtype="int32" if out_type == 2 else "int64", version=2)
    return build


case("ARG_MAX-int64")(_arg("ARG_MAX", "ArgMaxOptions", 1, 4))
case("ARG_MAX-int32")(_arg("ARG_MAX", "ArgMaxOptions", -1, 2))
case("ARG_MIN-int32")(_arg("ARG_MIN", "ArgMinOptions", 0, 2))
case("CUMSUM")(lambda: _simple("CUMSUM", [3, 4], options=("CumsumOptions", {
    "Exclusive": False, "Reverse": False}), consts=(np.array(1, np.int32),)))
case("CUMSUM-exclusive-reverse")(lambda: _simple("CUMSUM", [3, 4], options=("CumsumOptions", {
    "Exclusive": True, "Reverse": True}), consts=(np.array(0, np.int32),)))


# -- shapes and data movement ---------------------------------------------------------------
case("PAD")(lambda: _simple("PAD", [1, 3, 4, 2], [1, 6, 5, 2],
                            consts=(np.array([[0, 0], [1, 2], [0, 1], [0, 0]], np.int32),)))
case("PADV2")(lambda: _simple("PADV2", [2, 3], [3, 7], consts=(
    np.array([[1, 0], [2, 2]], np.int32), np.array([-1.5], np.float32))))
for _mode, _mname in ((0, "reflect"), (1, "symmetric")):
    case(f"MIRROR_PAD-{_mname}")(lambda _mode=_mode: _simple(
        "MIRROR_PAD", [1, 4, 5, 2], [1, 7, 7, 2], ("MirrorPadOptions", {"Mode": _mode}),
        consts=(np.array([[0, 0], [2, 1], [1, 1], [0, 0]], np.int32),)))


@case("CONCATENATION")
def _concat() -> Any:
    m = ModelBuilder()
    a, b = m.input([2, 3, 4]), m.input([2, 1, 4])
    y = m.tensor([2, 4, 4])
    m.op("CONCATENATION", [a, b], [y],
         ("ConcatenationOptions", {"Axis": -2, "FusedActivationFunction": 0}))
    m.output(y)
    return m, [_rand([2, 3, 4]), _rand([2, 1, 4], 1)]


@case("SPLIT")
def _split() -> Any:
    m = ModelBuilder()
    x = m.input([2, 6, 3])
    axis = m.const(np.array(1, np.int32))
    ys = [m.tensor([2, 2, 3]) for _ in range(3)]
    m.op("SPLIT", [axis, x], ys, ("SplitOptions", {"NumSplits": 3}))
    m.output(*ys)
    return m, [_rand([2, 6, 3])]


@case("SPLIT_V")
def _split_v() -> Any:
    m = ModelBuilder()
    x = m.input([2, 7])
    sizes, axis = m.const(np.array([2, -1, 1], np.int32)), m.const(np.array(-1, np.int32))
    ys = [m.tensor([2, 2]), m.tensor([2, 4]), m.tensor([2, 1])]
    m.op("SPLIT_V", [x, sizes, axis], ys, ("SplitVOptions", {"NumSplits": 3}))
    m.output(*ys)
    return m, [_rand([2, 7])]


case("RESHAPE-tensor")(lambda: _simple("RESHAPE", [2, 3, 4], [4, 6],
                                       consts=(np.array([4, -1], np.int32),)))
case("RESHAPE-options")(lambda: _simple("RESHAPE", [2, 3, 4], [6, 2, 2], options=(
    "ReshapeOptions", {"NewShape": [6, 2, 2]})))
case("SQUEEZE-axes")(lambda: _simple("SQUEEZE", [1, 3, 1, 2], [3, 1, 2], options=(
    "SqueezeOptions", {"SqueezeDims": [0]})))
case("SQUEEZE-all")(lambda: _simple("SQUEEZE", [1, 3, 1, 2], [3, 2], options=(
    "SqueezeOptions", {"SqueezeDims": []})))
case("EXPAND_DIMS")(lambda: _simple("EXPAND_DIMS", [3, 2], [3, 2, 1],
                                    consts=(np.array([-1], np.int32),)))
case("TRANSPOSE")(lambda: _simple("TRANSPOSE", [2, 3, 4], [4, 2, 3],
                                  consts=(np.array([2, 0, 1], np.int32),)))


def _strided(shape: list[int], out: list[int], begin: list[int], end: list[int],
             strides: list[int], **masks: int) -> Any:
    def build() -> Any:
        opts = {"BeginMask": 0, "EndMask": 0, "EllipsisMask": 0, "NewAxisMask": 0,
                "ShrinkAxisMask": 0}
        opts.update(masks)
        return _simple("STRIDED_SLICE", shape, out, ("StridedSliceOptions", opts),
                       consts=tuple(np.array(v, np.int32) for v in (begin, end, strides)),
                       version=4)
    return build


case("STRIDED_SLICE-basic")(_strided([5, 6], [2, 2], [1, 0], [5, 6], [2, 3]))
case("STRIDED_SLICE-negative-stride")(_strided([5, 6], [5, 3], [-1, 4], [-6, 1], [-1, -1]))
case("STRIDED_SLICE-begin-end-mask")(_strided([5, 6, 3], [3, 6, 2], [2, 3, 0], [0, 1, 2],
                                              [1, 1, 1], BeginMask=2, EndMask=3))
case("STRIDED_SLICE-shrink")(_strided([4, 5, 3], [5], [1, 0, -1], [2, 5, 0], [1, 1, 1],
                                      ShrinkAxisMask=5))
case("STRIDED_SLICE-ellipsis")(_strided([2, 3, 4, 5], [2, 3, 4, 2], [0, 1], [0, 5], [1, 2],
                                        EllipsisMask=1))
case("STRIDED_SLICE-new-axis")(_strided([4, 5], [1, 2, 5], [0, 1], [0, 3], [1, 1],
                                        NewAxisMask=1))
case("STRIDED_SLICE-ellipsis-new-shrink")(_strided(
    [3, 4, 5], [3, 4, 1], [0, 2, 0], [0, 3, 0], [1, 1, 1], EllipsisMask=1, NewAxisMask=4,
    ShrinkAxisMask=2))
case("STRIDED_SLICE-offset")(_strided([6, 4], [3, 4], [1, 0], [3, 4], [1, 1], Offset=True))
case("SLICE")(lambda: _simple("SLICE", [4, 5, 3], [2, 4, 3], consts=(
    np.array([1, 1, 0], np.int32), np.array([2, -1, 3], np.int32))))


@case("GATHER")
def _gather() -> Any:
    m = ModelBuilder()
    x = m.input([4, 5, 3])
    idx = m.const(np.array([[3, 0], [1, 1]], np.int32))
    y = m.tensor([4, 2, 2, 3])
    m.op("GATHER", [x, idx], [y], ("GatherOptions", {"Axis": 1}))
    m.output(y)
    return m, [_rand([4, 5, 3])]


@case("GATHER_ND")
def _gather_nd() -> Any:
    m = ModelBuilder()
    x = m.input([4, 5, 3])
    idx = m.const(np.array([[3, 0], [1, 4]], np.int32))
    y = m.tensor([2, 3])
    m.op("GATHER_ND", [x, idx], [y])
    m.output(y)
    return m, [_rand([4, 5, 3])]


@case("EMBEDDING_LOOKUP")
def _embedding_lookup() -> Any:
    m = ModelBuilder()
    ids = m.input([5], "int32")
    table = m.weights([10, 4])
    y = m.tensor([5, 4])
    m.op("EMBEDDING_LOOKUP", [ids, table], [y])
    m.output(y)
    return m, [np.array([3, 0, 9, 3, 5], np.int32)]


@case("PACK")
def _pack() -> Any:
    m = ModelBuilder()
    a, b = m.input([3, 4]), m.input([3, 4])
    y = m.tensor([3, 2, 4])
    m.op("PACK", [a, b], [y], ("PackOptions", {"ValuesCount": 2, "Axis": 1}))
    m.output(y)
    return m, [_rand([3, 4]), _rand([3, 4], 1)]


@case("UNPACK")
def _unpack() -> Any:
    m = ModelBuilder()
    x = m.input([3, 2, 4])
    ys = [m.tensor([3, 4]) for _ in range(2)]
    m.op("UNPACK", [x], ys, ("UnpackOptions", {"Num": 2, "Axis": -2}))
    m.output(*ys)
    return m, [_rand([3, 2, 4])]


case("TILE")(lambda: _simple("TILE", [2, 3], [4, 9], consts=(np.array([2, 3], np.int32),)))
case("BROADCAST_TO")(lambda: _simple("BROADCAST_TO", [3, 1], [2, 3, 4],
                                     consts=(np.array([2, 3, 4], np.int32),), version=2))
case("REVERSE_V2")(lambda: _simple("REVERSE_V2", [3, 4, 2],
                                   consts=(np.array([1, 2], np.int32),)))
case("SHAPE")(lambda: _simple("SHAPE", [2, 3, 4], [3], ("ShapeOptions", {"OutType": 2}),
                              out_dtype="int32"))
case("RANK")(lambda: _simple("RANK", [2, 3, 4], [], out_dtype="int32"))
case("ZEROS_LIKE")(lambda: _simple("ZEROS_LIKE", [2, 3]))


@case("FILL")
def _fill() -> Any:
    m = ModelBuilder()
    v = m.input([], "float32")
    dims = m.const(np.array([2, 3], np.int32))
    y = m.tensor([2, 3])
    m.op("FILL", [dims, v], [y])
    m.output(y)
    return m, [np.array(1.25, np.float32)]


case("SPACE_TO_DEPTH")(lambda: _simple("SPACE_TO_DEPTH", [1, 4, 6, 3], [1, 2, 3, 12], (
    "SpaceToDepthOptions", {"BlockSize": 2})))
case("DEPTH_TO_SPACE")(lambda: _simple("DEPTH_TO_SPACE", [1, 2, 3, 8], [1, 4, 6, 2], (
    "DepthToSpaceOptions", {"BlockSize": 2})))
case("SPACE_TO_BATCH_ND")(lambda: _simple("SPACE_TO_BATCH_ND", [1, 4, 5, 2], [4, 2, 3, 2],
                                          consts=(np.array([2, 2], np.int32),
                                                  np.array([[0, 0], [0, 1]], np.int32))))
case("BATCH_TO_SPACE_ND")(lambda: _simple("BATCH_TO_SPACE_ND", [4, 2, 3, 2], [1, 4, 5, 2],
                                          consts=(np.array([2, 2], np.int32),
                                                  np.array([[0, 0], [0, 1]], np.int32))))


@case("TOPK_V2")
def _topk() -> Any:
    m = ModelBuilder()
    x = m.input([3, 7])
    v, i = m.tensor([3, 3]), m.tensor([3, 3], "int32")
    m.op("TOPK_V2", [x, m.const(np.array(3, np.int32))], [v, i])
    m.output(v, i)
    return m, [_rand([3, 7])]


@case("ONE_HOT")
def _one_hot() -> Any:
    m = ModelBuilder()
    idx = m.input([2, 3], "int32")
    y = m.tensor([2, 5, 3])
    m.op("ONE_HOT", [idx, m.const(np.array(5, np.int32)), m.const(np.array(2.5, np.float32)),
                     m.const(np.array(-1.0, np.float32))], [y], ("OneHotOptions", {"Axis": 1}))
    m.output(y)
    return m, [np.array([[0, 4, 2], [1, 7, -1]], np.int32)]


@case("RANGE")
def _range() -> Any:
    m = ModelBuilder()
    x = m.input([4])
    r = m.tensor([4])
    m.op("RANGE", [m.const(np.array(1.0, np.float32)), m.const(np.array(3.0, np.float32)),
                   m.const(np.array(0.5, np.float32))], [r])
    y = m.tensor([4])
    m.op("ADD", [x, r], [y], ("AddOptions", {"FusedActivationFunction": 0}))
    m.output(y)
    return m, [_rand([4])]


@case("SCATTER_ND")
def _scatter_nd() -> Any:
    m = ModelBuilder()
    upd = m.input([3, 4])
    idx = m.const(np.array([[1], [3], [1]], np.int32))
    y = m.tensor([5, 4])
    m.op("SCATTER_ND", [idx, upd, m.const(np.array([5, 4], np.int32))], [y])
    m.output(y)
    return m, [_rand([3, 4])]


def _conv3d(padding: int, stride: int, act: int) -> Any:
    def build() -> Any:
        m = ModelBuilder(seed=8)
        d, h, w, c, o, k = 5, 6, 5, 2, 3, 3
        x = m.input([1, d, h, w, c])
        wt, b = m.weights([k, k, k, c, o]), m.weights([o])
        out = [(-(-s // stride) if padding == 0 else (s - k) // stride + 1) for s in (d, h, w)]
        y = m.tensor([1, *out, o])
        m.op("CONV_3D", [x, wt, b], [y], ("Conv3DOptions", {
            "Padding": padding, "StrideD": stride, "StrideH": stride, "StrideW": stride,
            "FusedActivationFunction": act}))
        m.output(y)
        return m, [_rand([1, d, h, w, c])]
    return build


case("CONV_3D-same-s2-relu")(_conv3d(0, 2, 1))
case("CONV_3D-valid-s1")(_conv3d(1, 1, 0))


def _lstm_weights(m: ModelBuilder, n_in: int, n_cell: int, n_out: int, cifg: bool,
                  peephole: bool, projection: bool) -> list[int]:
    """Inputs 1-17 of an LSTM direction (weights, peepholes, biases, projection)."""
    ins = [-1 if (cifg and g == 0) else m.weights([n_cell, n_in]) for g in range(4)]
    ins += [-1 if (cifg and g == 0) else m.weights([n_cell, n_out]) for g in range(4)]
    ins += [(m.weights([n_cell]) if peephole and not (cifg and g == 0) else -1)
            for g in range(3)]
    ins += [-1 if (cifg and g == 0) else m.weights([n_cell]) for g in range(4)]
    ins += [m.weights([n_out, n_cell]), m.weights([n_out])] if projection else [-1, -1]
    return ins


def _lstm(time_major: bool, cifg: bool, peephole: bool, projection: bool,
          cell_clip: float = 0.0) -> Any:
    def build() -> Any:
        m = ModelBuilder(seed=9)
        steps, batch, n_in, n_cell = 4, 2, 3, 5
        n_out = 4 if projection else n_cell
        x = m.input([steps, batch, n_in] if time_major else [batch, steps, n_in])
        ins = [x] + _lstm_weights(m, n_in, n_cell, n_out, cifg, peephole, projection)
        ins += [m.tensor([batch, n_out], variable=True),
                m.tensor([batch, n_cell], variable=True)]
        ins += [-1] * 4
        y = m.tensor([steps, batch, n_out] if time_major else [batch, steps, n_out])
        m.op("UNIDIRECTIONAL_SEQUENCE_LSTM", ins, [y], ("UnidirectionalSequenceLSTMOptions", {
            "FusedActivationFunction": 4, "CellClip": cell_clip, "ProjClip": 0.0,
            "TimeMajor": time_major}))
        m.output(y)
        return m, [_rand(m.tensors[x]["shape"], scale=2.0)]
    return build


case("UNIDIRECTIONAL_SEQUENCE_LSTM")(_lstm(True, False, False, False))
case("UNIDIRECTIONAL_SEQUENCE_LSTM-batch-major-cifg")(_lstm(False, True, False, False))
case("UNIDIRECTIONAL_SEQUENCE_LSTM-peephole-projection-clip")(
    _lstm(True, False, True, True, cell_clip=1.5))


def _bilstm(time_major: bool, merge: bool, peephole: bool, batch: int = 2) -> Any:
    def build() -> Any:
        m = ModelBuilder(seed=11)
        steps, n_in, n_cell = 4, 3, 5
        x = m.input([steps, batch, n_in] if time_major else [batch, steps, n_in])
        ins = [x] + _lstm_weights(m, n_in, n_cell, n_cell, False, peephole, False)
        ins += _lstm_weights(m, n_in, n_cell, n_cell, True, peephole, False)
        ins += [m.tensor([batch, n_cell], variable=True) for _ in range(4)] + [-1] * 9
        lead = [steps, batch] if time_major else [batch, steps]
        outs = [m.tensor(lead + [2 * n_cell])] if merge else [m.tensor(lead + [n_cell]),
                                                              m.tensor(lead + [n_cell])]
        m.op("BIDIRECTIONAL_SEQUENCE_LSTM", ins, outs, ("BidirectionalSequenceLSTMOptions", {
            "FusedActivationFunction": 4, "CellClip": 0.0, "ProjClip": 0.0,
            "MergeOutputs": merge, "TimeMajor": time_major}))
        m.output(*outs)
        return m, [_rand(m.tensors[x]["shape"], scale=2.0)]
    return build


case("BIDIRECTIONAL_SEQUENCE_LSTM")(_bilstm(True, False, False))
case("BIDIRECTIONAL_SEQUENCE_LSTM-merged-peephole")(_bilstm(True, True, True))
# batch 1: LiteRT's batch-major kernel reads unset memory for the rows past the first (its
# output for them changes from run to run)
case("BIDIRECTIONAL_SEQUENCE_LSTM-batch-major")(_bilstm(False, False, False, batch=1))


def _rnn(time_major: bool, act: int) -> Any:
    def build() -> Any:
        m = ModelBuilder(seed=10)
        steps, batch, n_in, units = 5, 2, 3, 4
        x = m.input([steps, batch, n_in] if time_major else [batch, steps, n_in])
        h = m.tensor([batch, units], variable=True)
        y = m.tensor([steps, batch, units] if time_major else [batch, steps, units])
        m.op("UNIDIRECTIONAL_SEQUENCE_RNN", [x, m.weights([units, n_in]),
                                             m.weights([units, units]), m.weights([units]), h],
             [y], ("SequenceRNNOptions", {"TimeMajor": time_major,
                                          "FusedActivationFunction": act}))
        m.output(y)
        return m, [_rand(m.tensors[x]["shape"])]
    return build


case("UNIDIRECTIONAL_SEQUENCE_RNN-tanh")(_rnn(True, 4))
case("UNIDIRECTIONAL_SEQUENCE_RNN-batch-major-relu")(_rnn(False, 1))


@case("GATHER-batch_dims")
def _gather_batch() -> Any:
    m = ModelBuilder()
    x = m.input([2, 5, 3])
    idx = m.const(np.array([[4, 0, 2], [1, 1, 3]], np.int32))
    y = m.tensor([2, 3, 3])
    m.op("GATHER", [x, idx], [y], ("GatherOptions", {"Axis": 1, "BatchDims": 1}), version=5)
    m.output(y)
    return m, [_rand([2, 5, 3])]


def _segment(builtin: str, ids: list[int], num: Any = None) -> Any:
    def build() -> Any:
        m = ModelBuilder()
        x = m.input([len(ids), 3])
        ins = [x, m.const(np.array(ids, np.int32))]
        n = max(ids) + 1 if num is None else num
        if num is not None:
            ins.append(m.const(np.array([num], np.int32)))
        y = m.tensor([n, 3])
        m.op(builtin, ins, [y])
        m.output(y)
        return m, [_rand([len(ids), 3])]
    return build


case("SEGMENT_SUM")(_segment("SEGMENT_SUM", [0, 0, 1, 2, 2]))
for _b in ("SUM", "PROD", "MAX", "MIN"):
    case(f"UNSORTED_SEGMENT_{_b}")(_segment(f"UNSORTED_SEGMENT_{_b}", [2, 0, 2, 3, 0], 5))
case("MATRIX_DIAG")(lambda: _simple("MATRIX_DIAG", [2, 4], [2, 4, 4]))


@case("MATRIX_SET_DIAG")
def _matrix_set_diag() -> Any:
    m = ModelBuilder()
    x, d = m.input([2, 3, 5]), m.input([2, 3])
    y = m.tensor([2, 3, 5])
    m.op("MATRIX_SET_DIAG", [x, d], [y])
    m.output(y)
    return m, [_rand([2, 3, 5]), _rand([2, 3], 1)]


@case("BROADCAST_ARGS")
def _broadcast_args() -> Any:
    m = ModelBuilder()
    x = m.input([3, 1])
    shape = m.tensor([3], "int32")
    m.op("BROADCAST_ARGS", [m.const(np.array([2, 1, 4], np.int32)),
                            m.const(np.array([3, 1], np.int32))], [shape])
    y = m.tensor([2, 3, 4])
    m.op("BROADCAST_TO", [x, shape], [y], version=2)
    m.output(y)
    return m, [_rand([3, 1])]


case("BITWISE_XOR")(lambda: _binary("BITWISE_XOR", [3, 4], [3, 4], [3, 4], out_dtype="int32",
                                    dtype="int32"))


@case("RIGHT_SHIFT")
def _right_shift() -> Any:
    m, (a, _) = _binary("RIGHT_SHIFT", [3, 4], [3, 4], [3, 4], out_dtype="int32",
                        dtype="int32")
    shifts = np.random.default_rng(3).integers(0, 6, size=(3, 4)).astype(np.int32)
    return m, [a * 1000, shifts]


for _lo, _hi, _bits, _narrow in ((-1.0, 1.0, 8, False), (-0.3, 2.7, 4, False),
                                 (0.1, 3.0, 8, False)):
    case(f"FAKE_QUANT-{_lo}-{_hi}-{_bits}-{int(_narrow)}")(
        lambda _lo=_lo, _hi=_hi, _bits=_bits, _narrow=_narrow: _simple(
            "FAKE_QUANT", [4, 16], options=("FakeQuantOptions", {
                "Min": _lo, "Max": _hi, "NumBits": _bits, "NarrowRange": _narrow}),
            x=_rand([4, 16], scale=2.0)))


def _nms(builtin: str, max_out: int, threshold: float) -> Any:
    def build() -> Any:
        rng = np.random.default_rng(12)
        n = 30
        m = ModelBuilder()
        boxes, scores = m.input([n, 4]), m.input([n])
        ins = [boxes, scores, m.const(np.array(max_out, np.int32)),
               m.const(np.array(0.4, np.float32)), m.const(np.array(threshold, np.float32))]
        outs = [m.tensor([max_out], "int32")]
        if builtin.endswith("V5"):
            ins.append(m.const(np.array(0.0, np.float32)))
            outs.append(m.tensor([max_out]))
        outs.append(m.tensor([], "int32"))
        m.op(builtin, ins, outs)
        m.output(*outs)
        corner = rng.random((n, 2)).astype(np.float32)
        size = (rng.random((n, 2)) * 0.4 + 0.05).astype(np.float32)
        sc = rng.random(n).astype(np.float32)
        sc[3] = np.float32(threshold)  # a score at the threshold is dropped
        return m, [np.concatenate([corner, corner + size], 1), sc]
    return build


for _b in ("NON_MAX_SUPPRESSION_V4", "NON_MAX_SUPPRESSION_V5"):
    case(f"{_b}-full")(_nms(_b, 8, 0.2))
    case(f"{_b}-padded")(_nms(_b, 12, 0.75))


@case("SPARSE_TO_DENSE")
def _sparse_to_dense() -> Any:
    m = ModelBuilder()
    v = m.input([3])
    y = m.tensor([4, 5])
    m.op("SPARSE_TO_DENSE", [m.const(np.array([[0, 1], [2, 4], [3, 0]], np.int32)),
                             m.const(np.array([4, 5], np.int32)), v,
                             m.const(np.array(-1.0, np.float32))], [y])
    m.output(y)
    return m, [_rand([3])]


def _reverse_sequence(seq_dim: int, batch_dim: int, shape: list[int], lengths: list[int]) -> Any:
    def build() -> Any:
        m = ModelBuilder()
        x = m.input(shape)
        y = m.tensor(shape)
        m.op("REVERSE_SEQUENCE", [x, m.const(np.array(lengths, np.int32))], [y],
             ("ReverseSequenceOptions", {"SeqDim": seq_dim, "BatchDim": batch_dim}))
        m.output(y)
        return m, [_rand(shape)]
    return build


case("REVERSE_SEQUENCE")(_reverse_sequence(1, 0, [3, 5, 2], [5, 2, 0]))
case("REVERSE_SEQUENCE-batch-after-seq")(_reverse_sequence(0, 2, [4, 3, 2], [3, 1]))


@pytest.mark.parametrize("name", sorted(CASES))
def test_operator_matches_litert(name: str) -> None:
    model, inputs = CASES[name]()
    data = model.build()
    expected = run_litert(data, inputs)
    got = run_relax(data, inputs)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert g.dtype == e.dtype and g.shape == e.shape, (g.dtype, g.shape, e.dtype, e.shape)
        if g.dtype == np.bool_ or np.issubdtype(g.dtype, np.integer):
            np.testing.assert_array_equal(g, e)
        else:
            np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-5)


def test_every_supported_builtin_has_a_case() -> None:
    covered = {name.split("-")[0] for name in CASES} | COVERED_ELSEWHERE
    assert sorted(set(supported_ops()) - covered) == []


#: cases whose inputs all lead with a batch axis: rerun with it declared -1 and fed batch 3
SYMBOLIC_BATCH = [
    "CONV_2D-pad0-s2", "CONV_2D-pad1-s1", "CONV_2D-grouped", "DEPTHWISE_CONV_2D-valid-s2-m2",
    "FULLY_CONNECTED-keep_num_dims-relu", "AVERAGE_POOL_2D-same", "MAX_POOL_2D-valid",
    "L2_POOL_2D-same", "SOFTMAX-beta", "LOG_SOFTMAX", "HARD_SWISH", "PRELU",
    "L2_NORMALIZATION", "LOCAL_RESPONSE_NORMALIZATION", "RESIZE_BILINEAR-8x9-align0-half1",
    "RESIZE_NEAREST_NEIGHBOR-3x3-align1-half0", "MEAN-keep", "SUM-neg-axis",
    "ARG_MAX-int32", "PAD", "MIRROR_PAD-symmetric", "CONCATENATION", "SPLIT",
    "STRIDED_SLICE-ellipsis", "STRIDED_SLICE-new-axis", "GATHER", "TILE", "SHAPE",
    "SPACE_TO_DEPTH", "DEPTH_TO_SPACE", "CAST-float-int32", "ADD", "LOGISTIC", "TRANSPOSE",
    "EXPAND_DIMS", "PACK", "UNPACK", "CUMSUM", "TOPK_V2", "CONV_3D-same-s2-relu",
]


@pytest.mark.parametrize("name", SYMBOLIC_BATCH)
def test_operator_with_symbolic_batch_matches_litert(name: str) -> None:
    model, inputs = CASES[name]()
    for t in model.inputs:
        shape = model.tensors[t]["shape"]
        model.tensors[t]["signature"] = [-1] + shape[1:]
    data = model.build()
    inputs = [np.concatenate([x] * 3, axis=0) for x in inputs]
    expected = run_litert(data, inputs)
    got = run_relax(data, inputs)
    for g, e in zip(got, expected):
        assert g.dtype == e.dtype and g.shape == e.shape, (g.dtype, g.shape, e.dtype, e.shape)
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-5)
