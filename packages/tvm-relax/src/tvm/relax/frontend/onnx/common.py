"""Shared pieces of the ONNX importer: errors, dtypes, the converter registry, node context.

A converter is a function ``(ctx: NodeContext) -> value`` registered for an ONNX op type with
:func:`converter`.  ``value`` is a Relax expression, a numpy array (a folded constant), a
:class:`SymValue` (a small integer tensor whose entries are known symbolically, e.g. a shape)
or a list of those for multi-output nodes.  A node whose inputs are all known at import time
(constants and shape values) is folded by evaluating the Relax ops its converter emits with
their own numpy semantics (:mod:`.folding`), which is how shape subgraphs
(``Shape -> Gather -> Concat -> Reshape``) disappear from the program.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Optional, Sequence

import numpy as np

from tvm.tir.expr import IntImm, PrimExpr

from ...errors import RelaxError

__all__ = [
    "OnnxImportError",
    "OpNotImplemented",
    "SymValue",
    "Converter",
    "CONVERTERS",
    "converter",
    "onnx_dtype_to_str",
    "NodeContext",
    "R",
]


class OnnxImportError(RelaxError, ValueError):
    """An ONNX model that cannot be imported; names the op type, the node and the opset."""


class OpNotImplemented(OnnxImportError, NotImplementedError):
    """An ONNX op type, attribute value, dtype or opset the importer does not support."""


# ONNX TensorProto.DataType -> dtype string (None: not supported by the compiler).  The
# low-precision types (17..28) are stored one element per byte, as ml_dtypes arrays.
_ONNX_DTYPES: dict[int, Optional[str]] = {
    1: "float32", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32", 7: "int64",
    8: None,  # string
    9: "bool", 10: "float16", 11: "float64", 12: "uint32", 13: "uint64",
    14: None, 15: None,  # complex64, complex128
    16: "bfloat16", 17: "float8_e4m3fn", 18: "float8_e4m3fnuz", 19: "float8_e5m2",
    20: "float8_e5m2fnuz", 21: "uint4", 22: "int4", 23: "float4_e2m1fn", 24: "float8_e8m0fnu",
    25: "uint2", 26: "int2", 27: "float6_e2m3fn", 28: "float6_e3m2fn",
}
_ONNX_DTYPE_NAMES = {
    8: "string", 14: "complex64", 15: "complex128", 17: "float8e4m3fn", 18: "float8e4m3fnuz",
    19: "float8e5m2", 20: "float8e5m2fnuz", 21: "uint4", 22: "int4", 23: "float4e2m1",
    24: "float8e8m0", 25: "uint2", 26: "int2",
}


def onnx_dtype_to_str(elem_type: int, where: str = "") -> str:
    """The dtype string of ONNX element type ``elem_type`` (OpNotImplemented if unsupported)."""
    dtype = _ONNX_DTYPES.get(int(elem_type))
    if dtype is None:
        name = _ONNX_DTYPE_NAMES.get(int(elem_type), f"element type {elem_type}")
        raise OpNotImplemented(f"{where}dtype {name} is not supported")
    return dtype


def np_dtype_of(dtype: str) -> Any:
    """The numpy dtype for a dtype string (bfloat16, float8_*, int4 ... through ml_dtypes)."""
    from tvm.ffi.dtype import to_numpy_dtype

    return to_numpy_dtype(dtype)


@dataclasses.dataclass(frozen=True)
class SymValue:
    """A small integer tensor known at import time up to symbolic shape variables.

    ``values`` is a numpy object array of Python ints and int64 :class:`PrimExpr`; folding
    functions compute on it with numpy (PrimExpr overloads ``+ - *``).
    """

    values: np.ndarray
    dtype: str = "int64"

    @property
    def is_static(self) -> bool:
        return all(isinstance(v, (int, np.integer)) or isinstance(v, IntImm) for v in self.values.flat)

    def to_numpy(self) -> np.ndarray:
        flat = [int(v.value) if isinstance(v, IntImm) else int(v) for v in self.values.flat]
        return np.array(flat, dtype=self.dtype).reshape(self.values.shape)


def as_object_array(values: Sequence[Any]) -> np.ndarray:
    """A 1-D object array of ints / PrimExprs (IntImm unwrapped to int)."""
    out = np.empty(len(values), dtype=object)
    for i, v in enumerate(values):
        if isinstance(v, IntImm):
            v = int(v.value)
        elif isinstance(v, np.integer):
            v = int(v)
        out[i] = v
    return out


def simplify_object_array(arr: np.ndarray, analyzer: Any = None) -> np.ndarray:
    """Simplify PrimExpr entries (and unwrap IntImm) of an object array in place."""
    for idx, v in np.ndenumerate(arr):
        if isinstance(v, PrimExpr):
            if analyzer is not None:
                v = analyzer.simplify(v)
            if isinstance(v, IntImm):
                v = int(v.value)
            arr[idx] = v
        elif isinstance(v, np.integer):
            arr[idx] = int(v)
    return arr


@dataclasses.dataclass
class Converter:
    """A registered converter: ``impl(ctx)`` and the lowest opset it implements."""

    op_type: str
    impl: Callable[["NodeContext"], Any]
    min_opset: int = 1


CONVERTERS: dict[tuple[str, str], Converter] = {}


def converter(
    *op_types: str,
    min_opset: int = 1,
    domain: str = "",
) -> Callable[[Callable[["NodeContext"], Any]], Callable[["NodeContext"], Any]]:
    """Register the decorated function as the converter of ``op_types`` (ONNX domain ``domain``).

    ``min_opset`` is the lowest opset whose semantics the converter implements.
    """

    def wrap(fn: Callable[["NodeContext"], Any]) -> Callable[["NodeContext"], Any]:
        for op_type in op_types:
            CONVERTERS[(domain, op_type)] = Converter(op_type, fn, min_opset)
        return fn

    return wrap


class _OpTable:
    """``R.nn.conv2d(...)``: Relax operator builders looked up when used.

    Raises OpNotImplemented naming the Relax operator when it is not available, so one
    missing operator fails only the ONNX nodes that need it.
    """

    def __init__(self, prefix: str = ""):
        self._prefix = prefix

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        if name in ("nn", "image", "vision", "builtin", "linalg", "qnn"):
            return _OpTable(f"{self._prefix}{name}.")
        return _lookup_op(self._prefix + name)


_OP_CACHE: dict[str, Any] = {}


def _lookup_op(path: str) -> Any:
    fn = _OP_CACHE.get(path)
    if fn is not None:
        return fn
    import importlib

    from ... import op as relax_op

    obj: Any = relax_op
    for part in path.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            break
    if obj is None:
        try:
            from ...op.base import get_op_spec

            obj = get_op_spec("relax." + path)
        except KeyError:
            obj = None
    if obj is None:
        # family modules not yet re-exported by tvm.relax.op
        for mod in ("create", "index", "movement", "search", "sorting", "statistical",
                    "image", "nn.nn", "linear_algebra", "manipulate", "set", "mask",
                    "unary", "binary", "datatype", "qdq", "ternary"):
            try:
                m = importlib.import_module(f"tvm.relax.op.{mod}")
            except ImportError:
                continue
            leaf = path.split(".")[-1]
            cand = getattr(m, leaf, None)
            if cand is not None and (mod.startswith("nn") == path.startswith("nn.")):
                obj = cand
                break
    if obj is None:
        raise OpNotImplemented(f"Relax operator relax.{path} is not available")
    _OP_CACHE[path] = obj
    return obj


R = _OpTable()


class NodeContext:
    """What a converter sees of one ONNX node: attributes, inputs, opset and the builder."""

    def __init__(self, importer: Any, node: Any, inputs: list[Any], opset: int):
        self.importer = importer
        self.bb = importer.bb
        self.node = node
        self.op_type: str = node.op_type
        self.name: str = node.name
        self.opset = opset
        self.raw_inputs = inputs
        self.attrs = importer.parse_attributes(node)
        self.num_outputs = len(node.output)

    # -- attributes ---------------------------------------------------------------------------
    def attr(self, key: str, default: Any = None) -> Any:
        return self.attrs.get(key, default)

    def error(self, message: str) -> OnnxImportError:
        return OnnxImportError(f"{self.where()}: {message}")

    def unsupported(self, message: str) -> OpNotImplemented:
        return OpNotImplemented(f"{self.where()}: {message}")

    def where(self) -> str:
        return f"ONNX {self.op_type} (node {self.name!r}, opset {self.opset})"

    # -- inputs -------------------------------------------------------------------------------
    @property
    def num_inputs(self) -> int:
        return len(self.raw_inputs)

    def has(self, i: int) -> bool:
        return i < len(self.raw_inputs) and self.raw_inputs[i] is not None

    def input(self, i: int) -> Any:
        """Input ``i`` as a Relax expression (None when absent)."""
        if not self.has(i):
            return None
        return self.importer.to_expr(self.raw_inputs[i])

    def inputs(self) -> list[Any]:
        return [self.input(i) for i in range(self.num_inputs)]

    def const(self, i: int) -> Optional[np.ndarray]:
        """Input ``i`` as a numpy array when it is a constant (None otherwise)."""
        if not self.has(i):
            return None
        return self.importer.const_value(self.raw_inputs[i])

    def known(self, i: int) -> Optional[np.ndarray]:
        """Input ``i`` as a numpy (possibly object, symbolic) array when known at import time."""
        if not self.has(i):
            return None
        return self.importer.known_value(self.raw_inputs[i])

    def int_list(self, i: int, what: str) -> Optional[list[int]]:
        """A constant integer input as a list; an error if it is present but not constant."""
        if not self.has(i):
            return None
        value = self.const(i)
        if value is None:
            raise self.unsupported(f"input {i} ({what}) must be a constant")
        return [int(v) for v in np.asarray(value).reshape(-1)]

    def sinfo(self, i: int) -> Any:
        return self.importer.sinfo_of(self.raw_inputs[i])

    def dtype(self, i: int) -> str:
        return self.importer.dtype_of(self.raw_inputs[i])

    def ndim(self, i: int) -> int:
        n = self.importer.ndim_of(self.raw_inputs[i])
        if n < 0:
            raise self.unsupported(f"input {i} has unknown rank")
        return n

    def shape(self, i: int) -> list[Any]:
        """Input ``i``'s shape as ints / PrimExprs (an error if unknown)."""
        shape = self.importer.shape_of(self.raw_inputs[i])
        if shape is None:
            raise self.unsupported(f"input {i} has unknown shape")
        return shape

    def static_shape(self, i: int) -> Optional[list[int]]:
        shape = self.importer.shape_of(self.raw_inputs[i])
        if shape is None or not all(isinstance(d, int) for d in shape):
            return None
        return shape

    def prod(self, dims: Sequence[Any]) -> Any:
        """The product of ints / PrimExprs, simplified (an int when all are ints)."""
        out: Any = 1
        for d in dims:
            out = d if (isinstance(out, int) and out == 1) else out * d
        if isinstance(out, PrimExpr):
            out = self.bb.analyzer.simplify(out)
            if isinstance(out, IntImm):
                out = int(out.value)
        return out

    # -- emitting -----------------------------------------------------------------------------
    def emit(self, expr: Any, name: str = "") -> Any:
        return self.bb.emit(expr, name)

    def const_expr(self, value: Any, dtype: str) -> Any:
        from ...expr import const

        return const(np.asarray(value, dtype=np_dtype_of(dtype)), dtype)
