"""Per-operator cases: shapes and data movement, gather/scatter, recurrent, NMS, segment
and matrix ops (see op_cases.py)."""

from __future__ import annotations

from typing import Any

import numpy as np
from model_builder import ModelBuilder
from op_cases import binary, case, rand, simple

# -- shapes and data movement ---------------------------------------------------------------
case("PAD")(lambda: simple("PAD", [1, 3, 4, 2], [1, 6, 5, 2],
                           consts=(np.array([[0, 0], [1, 2], [0, 1], [0, 0]], np.int32),)))
case("PADV2")(lambda: simple("PADV2", [2, 3], [3, 7], consts=(
    np.array([[1, 0], [2, 2]], np.int32), np.array([-1.5], np.float32))))
for _mode, _mname in ((0, "reflect"), (1, "symmetric")):
    case(f"MIRROR_PAD-{_mname}")(lambda _mode=_mode: simple(
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
    return m, [rand([2, 3, 4]), rand([2, 1, 4], 1)]


@case("SPLIT")
def _split() -> Any:
    m = ModelBuilder()
    x = m.input([2, 6, 3])
    axis = m.const(np.array(1, np.int32))
    ys = [m.tensor([2, 2, 3]) for _ in range(3)]
    m.op("SPLIT", [axis, x], ys, ("SplitOptions", {"NumSplits": 3}))
    m.output(*ys)
    return m, [rand([2, 6, 3])]


@case("SPLIT_V")
def _split_v() -> Any:
    m = ModelBuilder()
    x = m.input([2, 7])
    sizes, axis = m.const(np.array([2, -1, 1], np.int32)), m.const(np.array(-1, np.int32))
    ys = [m.tensor([2, 2]), m.tensor([2, 4]), m.tensor([2, 1])]
    m.op("SPLIT_V", [x, sizes, axis], ys, ("SplitVOptions", {"NumSplits": 3}))
    m.output(*ys)
    return m, [rand([2, 7])]


case("RESHAPE-tensor")(lambda: simple("RESHAPE", [2, 3, 4], [4, 6],
                                      consts=(np.array([4, -1], np.int32),)))
case("RESHAPE-options")(lambda: simple("RESHAPE", [2, 3, 4], [6, 2, 2], options=(
    "ReshapeOptions", {"NewShape": [6, 2, 2]})))
case("SQUEEZE-axes")(lambda: simple("SQUEEZE", [1, 3, 1, 2], [3, 1, 2], options=(
    "SqueezeOptions", {"SqueezeDims": [0]})))
case("SQUEEZE-all")(lambda: simple("SQUEEZE", [1, 3, 1, 2], [3, 2], options=(
    "SqueezeOptions", {"SqueezeDims": []})))
case("EXPAND_DIMS")(lambda: simple("EXPAND_DIMS", [3, 2], [3, 2, 1],
                                   consts=(np.array([-1], np.int32),)))
case("TRANSPOSE")(lambda: simple("TRANSPOSE", [2, 3, 4], [4, 2, 3],
                                 consts=(np.array([2, 0, 1], np.int32),)))


def _strided(shape: list[int], out: list[int], begin: list[int], end: list[int],
             strides: list[int], **masks: int) -> Any:
    def build() -> Any:
        opts = {"BeginMask": 0, "EndMask": 0, "EllipsisMask": 0, "NewAxisMask": 0,
                "ShrinkAxisMask": 0}
        opts.update(masks)
        return simple("STRIDED_SLICE", shape, out, ("StridedSliceOptions", opts),
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
case("SLICE")(lambda: simple("SLICE", [4, 5, 3], [2, 4, 3], consts=(
    np.array([1, 1, 0], np.int32), np.array([2, -1, 3], np.int32))))


@case("GATHER")
def _gather() -> Any:
    m = ModelBuilder()
    x = m.input([4, 5, 3])
    idx = m.const(np.array([[3, 0], [1, 1]], np.int32))
    y = m.tensor([4, 2, 2, 3])
    m.op("GATHER", [x, idx], [y], ("GatherOptions", {"Axis": 1}))
    m.output(y)
    return m, [rand([4, 5, 3])]


@case("GATHER_ND")
def _gather_nd() -> Any:
    m = ModelBuilder()
    x = m.input([4, 5, 3])
    idx = m.const(np.array([[3, 0], [1, 4]], np.int32))
    y = m.tensor([2, 3])
    m.op("GATHER_ND", [x, idx], [y])
    m.output(y)
    return m, [rand([4, 5, 3])]


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
    return m, [rand([3, 4]), rand([3, 4], 1)]


@case("UNPACK")
def _unpack() -> Any:
    m = ModelBuilder()
    x = m.input([3, 2, 4])
    ys = [m.tensor([3, 4]) for _ in range(2)]
    m.op("UNPACK", [x], ys, ("UnpackOptions", {"Num": 2, "Axis": -2}))
    m.output(*ys)
    return m, [rand([3, 2, 4])]


case("TILE")(lambda: simple("TILE", [2, 3], [4, 9], consts=(np.array([2, 3], np.int32),)))
case("BROADCAST_TO")(lambda: simple("BROADCAST_TO", [3, 1], [2, 3, 4],
                                    consts=(np.array([2, 3, 4], np.int32),), version=2))
case("REVERSE_V2")(lambda: simple("REVERSE_V2", [3, 4, 2],
                                  consts=(np.array([1, 2], np.int32),)))
case("SHAPE")(lambda: simple("SHAPE", [2, 3, 4], [3], ("ShapeOptions", {"OutType": 2}),
                             out_dtype="int32"))
case("RANK")(lambda: simple("RANK", [2, 3, 4], [], out_dtype="int32"))
case("ZEROS_LIKE")(lambda: simple("ZEROS_LIKE", [2, 3]))


@case("FILL")
def _fill() -> Any:
    m = ModelBuilder()
    v = m.input([], "float32")
    dims = m.const(np.array([2, 3], np.int32))
    y = m.tensor([2, 3])
    m.op("FILL", [dims, v], [y])
    m.output(y)
    return m, [np.array(1.25, np.float32)]


case("SPACE_TO_DEPTH")(lambda: simple("SPACE_TO_DEPTH", [1, 4, 6, 3], [1, 2, 3, 12], (
    "SpaceToDepthOptions", {"BlockSize": 2})))
case("DEPTH_TO_SPACE")(lambda: simple("DEPTH_TO_SPACE", [1, 2, 3, 8], [1, 4, 6, 2], (
    "DepthToSpaceOptions", {"BlockSize": 2})))
case("SPACE_TO_BATCH_ND")(lambda: simple("SPACE_TO_BATCH_ND", [1, 4, 5, 2], [4, 2, 3, 2],
                                         consts=(np.array([2, 2], np.int32),
                                                 np.array([[0, 0], [0, 1]], np.int32))))
case("BATCH_TO_SPACE_ND")(lambda: simple("BATCH_TO_SPACE_ND", [4, 2, 3, 2], [1, 4, 5, 2],
                                         consts=(np.array([2, 2], np.int32),
                                                 np.array([[0, 0], [0, 1]], np.int32))))


@case("TOPK_V2")
def _topk() -> Any:
    m = ModelBuilder()
    x = m.input([3, 7])
    v, i = m.tensor([3, 3]), m.tensor([3, 3], "int32")
    m.op("TOPK_V2", [x, m.const(np.array(3, np.int32))], [v, i])
    m.output(v, i)
    return m, [rand([3, 7])]


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
    return m, [rand([4])]


@case("SCATTER_ND")
def _scatter_nd() -> Any:
    m = ModelBuilder()
    upd = m.input([3, 4])
    idx = m.const(np.array([[1], [3], [1]], np.int32))
    y = m.tensor([5, 4])
    m.op("SCATTER_ND", [idx, upd, m.const(np.array([5, 4], np.int32))], [y])
    m.output(y)
    return m, [rand([3, 4])]


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
        return m, [rand([1, d, h, w, c])]
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
        return m, [rand(m.tensors[x]["shape"], scale=2.0)]
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
        return m, [rand(m.tensors[x]["shape"], scale=2.0)]
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
        return m, [rand(m.tensors[x]["shape"])]
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
    return m, [rand([2, 5, 3])]


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
        return m, [rand([len(ids), 3])]
    return build


case("SEGMENT_SUM")(_segment("SEGMENT_SUM", [0, 0, 1, 2, 2]))
for _b in ("SUM", "PROD", "MAX", "MIN"):
    case(f"UNSORTED_SEGMENT_{_b}")(_segment(f"UNSORTED_SEGMENT_{_b}", [2, 0, 2, 3, 0], 5))
case("MATRIX_DIAG")(lambda: simple("MATRIX_DIAG", [2, 4], [2, 4, 4]))


@case("MATRIX_SET_DIAG")
def _matrix_set_diag() -> Any:
    m = ModelBuilder()
    x, d = m.input([2, 3, 5]), m.input([2, 3])
    y = m.tensor([2, 3, 5])
    m.op("MATRIX_SET_DIAG", [x, d], [y])
    m.output(y)
    return m, [rand([2, 3, 5]), rand([2, 3], 1)]


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
    return m, [rand([3, 1])]


case("BITWISE_XOR")(lambda: binary("BITWISE_XOR", [3, 4], [3, 4], [3, 4], out_dtype="int32",
                                   dtype="int32"))


@case("RIGHT_SHIFT")
def _right_shift() -> Any:
    m, (a, _) = binary("RIGHT_SHIFT", [3, 4], [3, 4], [3, 4], out_dtype="int32",
                       dtype="int32")
    shifts = np.random.default_rng(3).integers(0, 6, size=(3, 4)).astype(np.int32)
    return m, [a * 1000, shifts]


for _lo, _hi, _bits, _narrow in ((-1.0, 1.0, 8, False), (-0.3, 2.7, 4, False),
                                 (0.1, 3.0, 8, False)):
    case(f"FAKE_QUANT-{_lo}-{_hi}-{_bits}-{int(_narrow)}")(
        lambda _lo=_lo, _hi=_hi, _bits=_bits, _narrow=_narrow: simple(
            "FAKE_QUANT", [4, 16], options=("FakeQuantOptions", {
                "Min": _lo, "Max": _hi, "NumBits": _bits, "NarrowRange": _narrow}),
            x=rand([4, 16], scale=2.0)))


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
    return m, [rand([3])]


def _reverse_sequence(seq_dim: int, batch_dim: int, shape: list[int], lengths: list[int]) -> Any:
    def build() -> Any:
        m = ModelBuilder()
        x = m.input(shape)
        y = m.tensor(shape)
        m.op("REVERSE_SEQUENCE", [x, m.const(np.array(lengths, np.int32))], [y],
             ("ReverseSequenceOptions", {"SeqDim": seq_dim, "BatchDim": batch_dim}))
        m.output(y)
        return m, [rand(shape)]
    return build


case("REVERSE_SEQUENCE")(_reverse_sequence(1, 0, [3, 5, 2], [5, 2, 0]))
case("REVERSE_SEQUENCE-batch-after-seq")(_reverse_sequence(0, 2, [4, 3, 2], [3, 1]))
