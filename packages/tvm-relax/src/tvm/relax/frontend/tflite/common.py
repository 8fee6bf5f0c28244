"""Shared pieces of the TFLite importer: errors, dtypes, the converter registry, op context.

A converter is a function ``(ctx: OpContext) -> value`` registered for one or more TFLite
builtin operators with :func:`converter`, naming the highest operator version whose
semantics it implements.  ``value`` is a Relax expression (or a list of them for an
operator with several outputs).  Inputs that are constant tensors (a buffer in the model)
are :class:`~tvm.relax.Constant`; :meth:`OpContext.const` hands their numpy value to
converters that need it at import time (shapes, axes, paddings).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Optional, Sequence

import numpy as np

from tvm.tir.expr import IntImm

from ... import op as _op
from ...errors import RelaxError
from ...expr import Constant, Expr, const

__all__ = [
    "TFLiteImportError", "OpNotImplemented", "Converter", "CONVERTERS", "CUSTOM_CONVERTERS",
    "converter",
    "tflite_dtype", "OpContext", "builtin_names",
]


class TFLiteImportError(RelaxError, ValueError):
    """A TFLite model that cannot be imported (malformed, or inconsistent)."""


class OpNotImplemented(TFLiteImportError, NotImplementedError):
    """A builtin, custom op, operator version, option value or dtype the importer does not
    support; the message names the op, its operator index and the subgraph."""


# schema.fbs TensorType -> dtype string (None: not supported by the compiler)
_DTYPES: dict[int, Optional[str]] = {
    0: "float32", 1: "float16", 2: "int32", 3: "uint8", 4: "int64", 5: None, 6: "bool",
    7: "int16", 8: None, 9: "int8", 10: "float64", 11: None, 12: "uint64", 13: None,
    14: None, 15: "uint32", 16: "uint16", 17: None, 18: "bfloat16",
}
_DTYPE_NAMES = {5: "STRING", 8: "COMPLEX64", 11: "COMPLEX128", 13: "RESOURCE",
                14: "VARIANT", 17: "INT4"}


def tflite_dtype(tensor_type: int, where: str) -> str:
    """The dtype string of TFLite ``TensorType`` ``tensor_type``."""
    dtype = _DTYPES.get(int(tensor_type))
    if dtype is None:
        name = _DTYPE_NAMES.get(int(tensor_type), f"TensorType {tensor_type}")
        raise OpNotImplemented(f"{where}: dtype {name} is not supported")
    return dtype


_BUILTIN_NAMES: dict[int, str] = {}


def builtin_names() -> dict[int, str]:
    """BuiltinOperator code -> name, from the ``tflite`` bindings' enum."""
    if not _BUILTIN_NAMES:
        from tflite.BuiltinOperator import BuiltinOperator

        for name, value in vars(BuiltinOperator).items():
            if not name.startswith("_") and isinstance(value, int):
                _BUILTIN_NAMES[value] = name
    return _BUILTIN_NAMES


@dataclasses.dataclass
class Converter:
    """A registered converter: ``impl(ctx)``, the highest operator version it implements,
    the name of its options table in schema.fbs (None: it takes no options) and the input
    positions that may be variable (state) tensors, which it receives as their initial
    value (a Constant, or None for zeros)."""

    name: str
    impl: Callable[["OpContext"], Any]
    max_version: int
    options: Optional[str]
    state_inputs: tuple[int, ...] = ()


CONVERTERS: dict[str, Converter] = {}
#: converters of custom operators, by custom code (their options are a flexbuffer map)
CUSTOM_CONVERTERS: dict[str, Converter] = {}


def converter(*names: str, max_version: int = 1, options: Optional[str] = None,
              state_inputs: tuple[int, ...] = (), custom: bool = False
              ) -> Callable[[Callable[["OpContext"], Any]], Callable[["OpContext"], Any]]:
    """Register the decorated function for the builtins ``names`` (``"CONV_2D"``), or with
    ``custom`` for the custom operators of those codes."""

    def wrap(fn: Callable[["OpContext"], Any]) -> Callable[["OpContext"], Any]:
        table = CUSTOM_CONVERTERS if custom else CONVERTERS
        for name in names:
            table[name] = Converter(name, fn, max_version, options, state_inputs)
        return fn

    return wrap


_DEFAULT_OPTIONS: dict[str, Any] = {}


def default_options(name: str) -> Any:
    """An options table of type ``name`` with every field at its schema default (what an
    operator without an options table means)."""
    if name not in _DEFAULT_OPTIONS:
        import flatbuffers
        import tflite

        b = flatbuffers.Builder(16)
        getattr(tflite, f"{name}Start")(b)
        b.Finish(getattr(tflite, f"{name}End")(b))
        buf = bytes(b.Output())
        table = getattr(tflite, name)()
        table.Init(buf, flatbuffers.encode.Get(flatbuffers.packer.uoffset, buf, 0))
        _DEFAULT_OPTIONS[name] = table
    return _DEFAULT_OPTIONS[name]


class OpContext:
    """What a converter sees of one operator: inputs, outputs, options and the builder."""

    def __init__(self, importer: Any, op: Any, name: str, version: int, index: int,
                 inputs: list[Any], outputs: list[int], options: Any, custom: bool = False):
        self.importer = importer
        self.custom = custom
        self.bb = importer.bb
        self.op = op
        self.name = name
        self.version = version
        self.index = index
        self.raw_inputs = inputs
        self.output_ids = outputs
        self.options = options

    # -- errors -------------------------------------------------------------------------------
    def where(self) -> str:
        kind = "custom " if self.custom else ""
        return (f"TFLite {kind}{self.name} (operator {self.index} of subgraph "
                f"{self.importer.subgraph_desc}, version {self.version})")

    def custom_options(self) -> dict[str, Any]:
        """A custom operator's options (its flexbuffer map)."""
        data = self.op.custom_options
        if not data:
            return {}
        from flatbuffers import flexbuffers

        try:
            value = flexbuffers.Loads(data)
        except Exception as err:  # noqa: BLE001 - a corrupt flexbuffer
            raise self.error(f"custom options are not a valid flexbuffer: {err}") from err
        if not isinstance(value, dict):
            raise self.error(f"custom options are a {type(value).__name__}, not a map")
        return value

    def error(self, message: str) -> TFLiteImportError:
        return TFLiteImportError(f"{self.where()}: {message}")

    def unsupported(self, message: str) -> OpNotImplemented:
        return OpNotImplemented(f"{self.where()}: {message}")

    # -- inputs -------------------------------------------------------------------------------
    @property
    def num_inputs(self) -> int:
        return len(self.raw_inputs)

    def has(self, i: int) -> bool:
        return i < len(self.raw_inputs) and self.raw_inputs[i] is not None

    def input(self, i: int) -> Expr:
        if not self.has(i):
            raise self.error(f"input {i} is missing")
        return self.raw_inputs[i]

    def const(self, i: int) -> Optional[np.ndarray]:
        """Input ``i``'s value when it is a constant tensor (None otherwise)."""
        value = self.raw_inputs[i] if self.has(i) else None
        return value.data if isinstance(value, Constant) else None

    def int_list(self, i: int, what: str) -> list[int]:
        """A constant integer input as a list (an error if it is not constant)."""
        value = self.const(i)
        if value is None:
            raise self.unsupported(f"input {i} ({what}) must be a constant tensor")
        return [int(v) for v in np.asarray(value).reshape(-1)]

    def sinfo(self, i: int) -> Any:
        return self.input(i).struct_info

    def dtype(self, i: int) -> str:
        return self.sinfo(i).dtype

    def ndim(self, i: int) -> int:
        return self.sinfo(i).ndim

    def shape(self, i: int) -> list[Any]:
        """Input ``i``'s shape as ints and PrimExprs."""
        values = self.sinfo(i).shape_values
        if values is None:
            raise self.unsupported(f"input {i} has an unknown shape")
        return [int(d.value) if isinstance(d, IntImm) else d for d in values]

    def static_dims(self, i: int, axes: Sequence[int], what: str) -> list[int]:
        """Input ``i``'s dimensions ``axes``, which must be known numbers."""
        shape = self.shape(i)
        dims = [shape[a] for a in axes]
        if not all(isinstance(d, int) for d in dims):
            raise self.unsupported(f"{what} needs static dimensions, input {i} has shape {shape}")
        return dims

    # -- outputs ------------------------------------------------------------------------------
    @property
    def num_outputs(self) -> int:
        return len(self.output_ids)

    def output_dtype(self, k: int = 0) -> str:
        return self.importer.tensor_dtype(self.output_ids[k])

    def output_shape(self, k: int = 0) -> list[int]:
        return self.importer.tensor_shape(self.output_ids[k])

    # -- building -----------------------------------------------------------------------------
    def emit(self, expr: Any, name: str = "") -> Expr:
        return self.bb.emit(expr, name)

    def const_expr(self, value: Any, dtype: str) -> Constant:
        from tvm.ffi.dtype import to_numpy_dtype

        return const(np.asarray(value, dtype=to_numpy_dtype(dtype)), dtype)

    def scalar(self, value: float, dtype: str) -> Constant:
        return self.const_expr(value, dtype)

    def activation(self, x: Expr, fused: Optional[int] = None) -> Expr:
        """``x`` with the operator's fused activation function applied (``fused``: the
        ActivationFunctionType, default: the options' ``FusedActivationFunction``)."""
        if fused is None:
            fused = self.options.FusedActivationFunction()
        if fused == 0:  # NONE
            return x
        if fused == 1:  # RELU
            return _op.nn.relu(x)
        if fused == 2:  # RELU_N1_TO_1
            return _op.clip(x, -1.0, 1.0)
        if fused == 3:  # RELU6
            return _op.clip(x, 0.0, 6.0)
        if fused in (4, 5):  # TANH, SIGN_BIT
            # LiteRT's kernels clamp only for the RELU family and skip these silently, so
            # a model using them has no agreed meaning
            name = "TANH" if fused == 4 else "SIGN_BIT"
            raise self.unsupported(f"fused activation {name} is not supported")
        raise self.unsupported(f"unknown fused activation function {fused}")


def quant_arrays(quant: Any, ndim: int) -> tuple[np.ndarray, np.ndarray]:
    """(scale, zero point) of a tensor's quantization parameters as float32 arrays that
    broadcast against the tensor (per channel along ``quantized_dimension``)."""
    scale, zp = quant.scale.astype(np.float32), quant.zero_point.astype(np.float32)
    if scale.size > 1:
        if not 0 <= quant.quantized_dimension < ndim:
            raise TFLiteImportError(f"quantized_dimension {quant.quantized_dimension} is out "
                                    f"of range for rank {ndim}")
        shape = [1] * ndim
        shape[quant.quantized_dimension] = scale.size
        zp = np.broadcast_to(zp if zp.size == scale.size else zp.reshape(-1)[:1], scale.shape)
        return scale.reshape(shape), zp.reshape(shape)
    return scale.reshape(()), zp.reshape(-1)[:1].reshape(()) if zp.size else np.float32(0)


def qnn_params(quant: Any) -> tuple[tuple, tuple, int]:
    """(scales, zero points, axis) of a tensor's quantization parameters in the form the
    ``relax.qnn`` operators take (one zero point per scale; axis -1 when per tensor)."""
    scale = tuple(float(v) for v in quant.scale.reshape(-1))
    zp = tuple(int(v) for v in quant.zero_point.reshape(-1)) or (0,)
    zp = zp * len(scale) if len(zp) == 1 else zp[:len(scale)]
    return scale, zp, int(quant.quantized_dimension) if len(scale) > 1 else -1


def dequantize_array(value: np.ndarray, quant: Any) -> np.ndarray:
    """``(value - zero_point) * scale`` in float32."""
    scale, zp = quant_arrays(quant, value.ndim)
    return ((value.astype(np.float32) - zp) * scale).astype(np.float32)


def same_padding(size: int, kernel: int, stride: int, dilation: int) -> tuple[int, int]:
    """TFLite's SAME padding of one spatial axis: (before, after); the extra one goes after."""
    out = -(-size // stride)
    effective = (kernel - 1) * dilation + 1
    total = max((out - 1) * stride + effective - size, 0)
    return total // 2, total - total // 2


def window_padding(ctx: OpContext, padding: int, in_hw: Sequence[int], kernel: Sequence[int],
                   strides: Sequence[int], dilation: Sequence[int]) -> list[int]:
    """(top, left, bottom, right) for TFLite ``Padding`` SAME (0) or VALID (1)."""
    if padding == 1:
        return [0, 0, 0, 0]
    if padding != 0:
        raise ctx.unsupported(f"unknown padding {padding}")
    (top, bottom), (left, right) = (
        same_padding(s, k, st, d) for s, k, st, d in zip(in_hw, kernel, strides, dilation))
    return [top, left, bottom, right]
