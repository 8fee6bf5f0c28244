"""Full-integer versions of the float test models, as the TFLite converter writes them.

:func:`quantize_case` takes a float :class:`ModelBuilder` model and its inputs, runs it in
LiteRT keeping every intermediate tensor, and writes the same graph with int8 (or uint8)
tensors: activations quantized per tensor over their observed range (widened to hold 0),
convolution and dense weights symmetric per output channel (int8) or asymmetric per tensor
(uint8), biases int32 at ``input_scale * weight_scale``, the fixed output parameters LiteRT's
integer kernels require (LOGISTIC, SOFTMAX, TANH, ...) and, for the operators that only move
or select values, the input's parameters on the output.
"""

from __future__ import annotations

import copy
from typing import Any, Sequence

import numpy as np
from model_builder import ModelBuilder

#: builtin -> (position of the weight, its output-channel axis, position of the bias)
LINEAR = {"CONV_2D": (1, 0, 2), "DEPTHWISE_CONV_2D": (1, 3, 2), "FULLY_CONNECTED": (1, 0, 2),
          "TRANSPOSE_CONV": (1, 0, 3)}
#: operators whose integer kernels keep the input's scale and zero point on the output
SAME_PARAMS = {
    "MAX_POOL_2D", "AVERAGE_POOL_2D", "RESHAPE", "SQUEEZE", "EXPAND_DIMS", "TRANSPOSE",
    "STRIDED_SLICE", "SLICE", "GATHER", "GATHER_ND", "SPLIT", "SPLIT_V", "PAD", "PADV2",
    "MIRROR_PAD", "SPACE_TO_DEPTH", "DEPTH_TO_SPACE", "TILE", "PACK", "UNPACK",
    "BATCH_TO_SPACE_ND", "SPACE_TO_BATCH_ND", "RESIZE_NEAREST_NEIGHBOR", "REDUCE_MAX",
    "REDUCE_MIN", "BROADCAST_TO", "REVERSE_V2", "TOPK_V2", "ZEROS_LIKE", "RESIZE_BILINEAR",
    "EMBEDDING_LOOKUP", "SEGMENT_SUM", "REVERSE_SEQUENCE", "MATRIX_DIAG", "FILL", "NEG",
}
#: operators whose float inputs and outputs the converter gives one scale and zero point
#: (LiteRT's kernels require it, or compute on the stored integers)
SHARED_PARAMS = {"CONCATENATION", "PACK", "PADV2", "MAXIMUM", "MINIMUM", "SELECT", "SELECT_V2",
                 "SCATTER_ND", "SPARSE_TO_DENSE", "MATRIX_SET_DIAG", "ONE_HOT"}
#: operators whose integer output parameters are fixed: builtin -> {dtype: (scale, zp)}
FIXED_OUTPUT = {
    "LOGISTIC": {"int8": (1 / 256, -128), "uint8": (1 / 256, 0)},
    "SOFTMAX": {"int8": (1 / 256, -128), "uint8": (1 / 256, 0)},
    "TANH": {"int8": (1 / 128, 0), "uint8": (1 / 128, 128)},
    "LOG_SOFTMAX": {"int8": (16 / 256, 127), "uint8": (16 / 256, 255)},
    "L2_NORMALIZATION": {"int8": (1 / 128, 0), "uint8": (1 / 128, 128)},
}
_RANGE = {"int8": (-128, 127), "uint8": (0, 255)}


def tensor_values(data: bytes, inputs: Sequence[np.ndarray]) -> dict[int, np.ndarray]:
    """Every tensor's value in LiteRT's float run of model ``data`` (by tensor index)."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    interp = Interpreter(model_content=data, experimental_preserve_all_tensors=True,
                         experimental_op_resolver_type=(
                             OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES))
    interp.allocate_tensors()
    for d, x in zip(interp.get_input_details(), inputs):
        interp.set_tensor(d["index"], x)
    interp.invoke()
    out = {}
    for d in interp.get_tensor_details():
        try:
            out[d["index"]] = np.array(interp.get_tensor(d["index"]))
        except ValueError:  # a tensor without data (an omitted optional)
            continue
    return out


def _activation_params(values: np.ndarray, dtype: str) -> tuple[float, int]:
    lo_q, hi_q = _RANGE[dtype]
    lo = min(float(values.min(initial=0.0)), 0.0)
    hi = max(float(values.max(initial=0.0)), 0.0)
    scale = (hi - lo) / (hi_q - lo_q) if hi > lo else 1.0 / 128
    return float(np.float32(scale)), int(np.clip(round(lo_q - lo / scale), lo_q, hi_q))


def _quantize(values: np.ndarray, scale: Any, zp: Any, dtype: str, axis: int = -1
              ) -> np.ndarray:
    lo, hi = _RANGE.get(dtype, (-(2**31), 2**31 - 1))
    scale, zp = np.asarray(scale, np.float64), np.asarray(zp, np.float64)
    if scale.size > 1:
        shape = [1] * values.ndim
        shape[axis] = -1
        scale, zp = scale.reshape(shape), zp.reshape(shape)
    q = np.clip(np.rint(values.astype(np.float64) / scale) + zp, lo, hi)
    return q.astype(dtype)


def quantize_case(model: ModelBuilder, inputs: Sequence[np.ndarray], dtype: str = "int8",
                  float_ops: Sequence[str] = ()) -> tuple[ModelBuilder, list[np.ndarray]]:
    """The full-integer (``dtype`` activations) version of ``model`` and its inputs; the
    builtins ``float_ops`` (and in int8 the custom operators) stay float between a
    DEQUANTIZE and a QUANTIZE, as the converter writes operators without integer kernels."""
    values = tensor_values(model.build(), inputs)
    m = copy.deepcopy(model)
    codes = {i: code for i, code in enumerate(m.opcodes)}
    import tflite

    names = {v: k for k, v in vars(tflite.BuiltinOperator).items() if isinstance(v, int)}
    params: dict[int, tuple[list[float], list[int], int]] = {}
    keep_float = set(float_ops) | ({"CUSTOM"} if dtype == "int8" else set())
    inserted: list[tuple[dict, dict, bool]] = []  # (operator, new operator, before it)
    renamed: dict[int, int] = {}  # a float op's output -> its quantized copy
    # custom operators (TFLite_Detection_PostProcess) keep float outputs, as converters do
    float_outputs = {t for o in m.ops for t in o["outputs"]
                     if names[codes[o["opcode"]][0]] in keep_float | {"CUSTOM"}}

    def is_float(t: int) -> bool:
        return t >= 0 and m.tensors[t]["dtype"] == "float32"

    def set_params(t: int, scale: Any, zp: Any, axis: int = 0, tdtype: str = dtype) -> None:
        scale = [float(np.float32(s)) for s in np.atleast_1d(scale)]
        zp = [int(z) for z in np.atleast_1d(zp)]
        params[t] = (scale, zp, axis)
        info = m.tensors[t]
        info["quant"] = (scale, zp, axis)
        info["dtype"] = tdtype
        if info["buffer"] and t in values:  # a constant: its buffer holds integers now
            q = _quantize(values[t], scale, zp, tdtype, axis)
            m.buffers[info["buffer"]] = q.astype(q.dtype.newbyteorder("<")).tobytes()

    def ensure(t: int) -> None:
        if is_float(t) and t not in params and t in values:
            set_params(t, *_activation_params(values[t], dtype))

    for o in list(m.ops):
        name = names[codes[o["opcode"]][0]]
        ins, outs = o["inputs"], o["outputs"]
        ins[:] = [renamed.get(t, t) for t in ins]
        if name in LINEAR:
            wp, axis, bp = LINEAR[name]
            x = ins[2] if name == "TRANSPOSE_CONV" else ins[0]
            ensure(x)
            w = ins[wp]
            if is_float(w) and w not in params:
                wv = values[w]
                if dtype == "int8":
                    red = tuple(a for a in range(wv.ndim) if a != axis)
                    amax = np.maximum(np.abs(wv).max(axis=red), 1e-6)
                    set_params(w, amax / 127.0, np.zeros(amax.size, np.int64), axis, "int8")
                else:
                    set_params(w, *_activation_params(wv, "uint8"), tdtype="uint8")
            if bp < len(ins) and is_float(ins[bp]) and ins[bp] not in params:
                sx = params[x][0][0]
                set_params(ins[bp], [sx * s for s in params[w][0]],
                           np.zeros(len(params[w][0]), np.int64), 0, "int32")
        elif name in SHARED_PARAMS:
            group = [t for t in ins + outs if is_float(t)]
            given = next((t for t in group if t in params), None)
            if given is not None:
                shared = params[given][:2]
            else:
                seen = [values[t].ravel() for t in group if t in values]
                shared = _activation_params(np.concatenate(seen) if seen else np.zeros(1),
                                            dtype)
            for t in group:
                if t not in params:
                    set_params(t, *shared)
        elif name in keep_float:
            for p, t in enumerate(ins):
                if t < 0 or m.tensors[t]["buffer"] or m.tensors[t]["variable"]:
                    continue
                ensure(t)
                if t in params:
                    real = m.tensor(m.tensors[t]["shape"])
                    inserted.append((o, _op(m, "DEQUANTIZE", t, real), True))
                    ins[p] = real
            for t in outs:
                if t in values and t not in m.outputs:
                    q = m.tensor(m.tensors[t]["shape"])
                    set_params(q, *_activation_params(values[t], dtype))
                    inserted.append((o, _op(m, "QUANTIZE", t, q), False))
                    renamed[t] = q
            continue
        else:
            for t in ins:
                ensure(t)
        for t in outs:
            if not is_float(t) or t in params or t in float_outputs:
                continue
            first = next((i for i in ins if i in params), None)
            if name in FIXED_OUTPUT:
                set_params(t, *FIXED_OUTPUT[name][dtype])
            elif name in SAME_PARAMS and first is not None:
                set_params(t, params[first][0], params[first][1])
            else:
                ensure(t)
    for o, new, before in inserted:
        m.ops.insert(m.ops.index(o) + (0 if before else 1), new)
    for t in m.inputs + m.outputs:
        if t not in float_outputs:
            ensure(t)
    qinputs = [_quantize(x, params[t][0], params[t][1], dtype) if t in params else x
               for t, x in zip(m.inputs, inputs)]
    return m, qinputs


def _op(m: ModelBuilder, builtin: str, x: int, y: int) -> dict[str, Any]:
    """A ``builtin(x) -> y`` operator record, not yet placed (the caller inserts it)."""
    m.op(builtin, [x], [y], version=2)
    return m.ops.pop()


def assert_within_one(got: Sequence[np.ndarray], expected: Sequence[np.ndarray]) -> None:
    """Integer outputs equal within one unit (bool / non-quantized outputs exactly, float
    outputs to rtol 1e-5)."""
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert g.dtype == e.dtype and g.shape == e.shape, (g.dtype, g.shape, e.dtype, e.shape)
        if g.dtype in (np.int8, np.uint8, np.int16):
            diff = np.abs(g.astype(np.int32) - e.astype(np.int32))
            assert diff.max(initial=0) <= 1, (
                f"{int((diff > 1).sum())} of {diff.size} values differ by more than 1 "
                f"(max {int(diff.max())})")
        elif g.dtype == np.bool_ or np.issubdtype(g.dtype, np.integer):
            np.testing.assert_array_equal(g, e)
        else:
            np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-5)
