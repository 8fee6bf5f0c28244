"""Reading a ``.tflite`` flatbuffer into plain Python records.

Everything the importer needs from the file is read here, at once, under one ``try``: the
generated ``tflite`` bindings index into the buffer without checking it, so a truncated or
corrupt file surfaces as an ``IndexError``/``struct.error`` somewhere inside them, which
:func:`read_model` turns into one :class:`TFLiteImportError` saying the file is not a valid
model.  Converters then work on these records and never touch the flatbuffer.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any, Optional

import numpy as np

from .common import TFLiteImportError, builtin_names

__all__ = ["ModelInfo", "SubgraphInfo", "TensorInfo", "OperatorInfo", "OpCodeInfo",
           "read_model", "model_bytes"]

_CUSTOM = 32  # BuiltinOperator.CUSTOM
_PLACEHOLDER_FOR_GREATER_OP_CODES = 127


@dataclasses.dataclass
class QuantInfo:
    scale: np.ndarray
    zero_point: np.ndarray
    quantized_dimension: int


@dataclasses.dataclass
class TensorInfo:
    name: str
    type: int
    shape: list[int]
    shape_signature: Optional[list[int]]
    buffer: int
    quant: Optional[QuantInfo]
    is_variable: bool
    sparse: bool


@dataclasses.dataclass
class OpCodeInfo:
    builtin: int
    name: str  # the builtin's name, or "CUSTOM"
    custom_code: str
    version: int


@dataclasses.dataclass
class OperatorInfo:
    opcode: int
    inputs: list[int]
    outputs: list[int]
    options_type: int
    options: Any  # a flatbuffers Table, or None
    intermediates: int
    custom_options: bytes = b""


@dataclasses.dataclass
class SubgraphInfo:
    name: str
    tensors: list[TensorInfo]
    inputs: list[int]
    outputs: list[int]
    operators: list[OperatorInfo]


@dataclasses.dataclass
class ModelInfo:
    version: int
    opcodes: list[OpCodeInfo]
    subgraphs: list[SubgraphInfo]
    buffers: list[Optional[bytes]]  # raw little-endian bytes, None when empty


def model_bytes(model: Any) -> tuple[bytes, Any]:
    """``(file bytes, parsed tflite.Model)`` for a path, bytes or a parsed model."""
    import tflite

    if isinstance(model, tflite.Model):
        return bytes(model._tab.Bytes), model
    if isinstance(model, (str, os.PathLike)):
        try:
            with open(model, "rb") as f:
                data = f.read()
        except OSError as err:
            raise TFLiteImportError(f"cannot read TFLite model {str(model)!r}: {err}") from err
    elif isinstance(model, (bytes, bytearray, memoryview)):
        data = bytes(model)
    else:
        raise TypeError(f"from_tflite: expected a path, bytes or a tflite.Model, got "
                        f"{type(model).__name__}")
    if len(data) < 8 or not tflite.Model.ModelBufferHasIdentifier(data, 0):
        head = data[4:8] if len(data) >= 8 else data
        raise TFLiteImportError(
            f"not a TFLite model: {len(data)} bytes without the 'TFL3' file identifier "
            f"(bytes 4..8 are {head!r})")
    try:
        return data, tflite.Model.GetRootAs(data, 0)
    except Exception as err:  # noqa: BLE001 - a corrupt root offset
        raise TFLiteImportError(f"not a valid TFLite model: {type(err).__name__}: {err}") from err


def read_model(model: Any) -> ModelInfo:
    """The records of ``model`` (a path, bytes or a ``tflite.Model``)."""
    data, root = model_bytes(model)
    try:
        return _read(data, root)
    except TFLiteImportError:
        raise
    except Exception as err:  # noqa: BLE001 - the bindings read past a corrupt buffer
        raise TFLiteImportError(
            f"not a valid TFLite model (corrupt or truncated flatbuffer): "
            f"{type(err).__name__}: {err}") from err


def _read(data: bytes, root: Any) -> ModelInfo:
    names = builtin_names()
    limit = len(data)  # no vector can hold more entries than the file has bytes

    def _count(length: int, what: str) -> int:
        if not 0 <= length <= limit:
            raise TFLiteImportError(f"{length} {what} in a {limit}-byte file")
        return length

    def _ints(length: int, get: Any) -> list[int]:
        return [int(get(j)) for j in range(_count(length, "vector entries"))]

    opcodes = []
    for k in range(_count(root.OperatorCodesLength(), "operator codes")):
        oc = root.OperatorCodes(k)
        # schema.fbs: the builtin is the larger of the two fields (old files set only the
        # deprecated int8 one; newer ones set 127 there and the real code in builtin_code)
        code = max(int(oc.BuiltinCode()), int(oc.DeprecatedBuiltinCode()))
        if code == _PLACEHOLDER_FOR_GREATER_OP_CODES and int(oc.BuiltinCode()) == 0:
            code = -1
        custom = oc.CustomCode()
        opcodes.append(OpCodeInfo(
            code, "CUSTOM" if code == _CUSTOM else names.get(code, f"<builtin {code}>"),
            custom.decode("utf-8", "replace") if custom else "", int(oc.Version()) or 1))
    buffers: list[Optional[bytes]] = []
    for k in range(_count(root.BuffersLength(), "buffers")):
        buf = root.Buffers(k)
        offset, size = int(buf.Offset()), int(buf.Size())
        if offset > 1:  # data stored after the flatbuffer (models over 2 GB)
            if offset + size > len(data):
                raise TFLiteImportError(
                    f"buffer {k} lies outside the file (offset {offset}, size {size}, file "
                    f"{len(data)} bytes)")
            buffers.append(data[offset:offset + size] if size else None)
        else:
            n = buf.DataLength()
            buffers.append(buf.DataAsNumpy().tobytes() if n else None)
    subgraphs = []
    for s in range(_count(root.SubgraphsLength(), "subgraphs")):
        sg = root.Subgraphs(s)
        tensors = []
        for t in range(_count(sg.TensorsLength(), "tensors")):
            ten = sg.Tensors(t)
            sig = (None if ten.ShapeSignatureIsNone() or ten.ShapeSignatureLength() == 0
                   else _ints(ten.ShapeSignatureLength(), ten.ShapeSignature))
            q = ten.Quantization()
            quant = None
            if q is not None and q.ScaleLength() > 0:
                quant = QuantInfo(np.asarray(q.ScaleAsNumpy(), np.float32).copy(),
                                  np.asarray(q.ZeroPointAsNumpy(), np.int64).copy()
                                  if q.ZeroPointLength() else np.zeros(q.ScaleLength(), np.int64),
                                  int(q.QuantizedDimension()))
            name = ten.Name()
            tensors.append(TensorInfo(
                name.decode("utf-8", "replace") if name else f"tensor_{t}", int(ten.Type()),
                _ints(ten.ShapeLength(), ten.Shape), sig, int(ten.Buffer()), quant,
                bool(ten.IsVariable()), ten.Sparsity() is not None))
        ops = []
        for o in range(_count(sg.OperatorsLength(), "operators")):
            op = sg.Operators(o)
            ops.append(OperatorInfo(
                int(op.OpcodeIndex()), _ints(op.InputsLength(), op.Inputs),
                _ints(op.OutputsLength(), op.Outputs), int(op.BuiltinOptionsType()),
                op.BuiltinOptions(), op.IntermediatesLength(),
                op.CustomOptionsAsNumpy().tobytes() if op.CustomOptionsLength() else b""))
        name = sg.Name()
        subgraphs.append(SubgraphInfo(
            name.decode("utf-8", "replace") if name else "", tensors,
            _ints(sg.InputsLength(), sg.Inputs), _ints(sg.OutputsLength(), sg.Outputs), ops))
    return ModelInfo(int(root.Version()), opcodes, subgraphs, buffers)
