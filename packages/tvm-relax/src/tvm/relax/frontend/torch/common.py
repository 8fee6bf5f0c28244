"""Shared pieces of the PyTorch importer: errors, dtypes, the converter registry, node context.

A converter is a function ``(ctx: NodeContext) -> value`` registered for one or more ATen
operators with :func:`converter`.  Operators are named as torch prints them:
``"aten.add.Tensor"`` names one overload, ``"aten.add"`` every overload without a converter
of its own; Python callables that appear in exported graphs (``operator.getitem``,
``operator.mul`` on sizes) are named ``"operator.getitem"`` and so on.

``value`` is a Relax expression, a Python scalar, an int64 :class:`~tvm.tir.PrimExpr` (a
symbolic size), or a list/tuple of those for operators with several outputs.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Optional, Sequence

import numpy as np

from tvm.tir.expr import IntImm, PrimExpr

from ...errors import RelaxError

__all__ = [
    "TorchImportError",
    "OpNotSupported",
    "CONVERTERS",
    "converter",
    "op_name",
    "torch_dtype_to_str",
    "NodeContext",
]


class TorchImportError(RelaxError, ValueError):
    """A PyTorch program that cannot be imported; names the ATen op, the node and its layer."""


class OpNotSupported(TorchImportError, NotImplementedError):
    """An ATen operator, overload, argument value or dtype the importer does not support."""


_DTYPES = {
    "float32": "float32", "float": "float32", "float64": "float64", "double": "float64",
    "float16": "float16", "half": "float16", "bfloat16": "bfloat16",
    "int8": "int8", "int16": "int16", "short": "int16", "int32": "int32", "int": "int32",
    "int64": "int64", "long": "int64", "uint8": "uint8", "uint16": "uint16",
    "uint32": "uint32", "uint64": "uint64", "bool": "bool",
    "float8_e4m3fn": "float8_e4m3fn", "float8_e5m2": "float8_e5m2",
    "complex64": "complex64", "cfloat": "complex64", "complex128": "complex128",
    "cdouble": "complex128",
}


def torch_dtype_to_str(dtype: Any, where: str = "") -> str:
    """The dtype string of a ``torch.dtype`` (OpNotSupported for complex32, quantized ...)."""
    name = str(dtype).replace("torch.", "")
    out = _DTYPES.get(name)
    if out is None:
        raise OpNotSupported(f"{where}dtype {name} is not supported")
    return out


def op_name(target: Any) -> str:
    """The registry name of an FX call target: ``"aten.add.Tensor"``, ``"operator.mul"``."""
    name = getattr(target, "name", None)
    if callable(name) and getattr(target, "namespace", None) is not None:  # OpOverload
        text = str(target)  # "aten.add.Tensor"
        return text if text.count(".") >= 2 else f"{text}.default"
    module = getattr(target, "__module__", None) or ""
    qual = getattr(target, "__qualname__", None) or getattr(target, "__name__", repr(target))
    if module in ("_operator", "operator"):
        return f"operator.{qual}"
    if module == "builtins":
        return f"builtins.{qual}"
    return f"{module}.{qual}" if module else str(qual)


def packet_name(name: str) -> str:
    """``"aten.add.Tensor"`` -> ``"aten.add"`` (the name of every overload)."""
    parts = name.split(".")
    return ".".join(parts[:2]) if parts[0] == "aten" and len(parts) >= 3 else name


@dataclasses.dataclass
class Converter:
    """A registered converter: ``impl(ctx)`` for the operator ``name``."""

    name: str
    impl: Callable[["NodeContext"], Any]


CONVERTERS: dict[str, Converter] = {}


def converter(*names: str) -> Callable[[Callable[["NodeContext"], Any]], Callable[["NodeContext"], Any]]:
    """Register the decorated function as the converter of the operators ``names``."""

    def wrap(fn: Callable[["NodeContext"], Any]) -> Callable[["NodeContext"], Any]:
        for name in names:
            if name in CONVERTERS:
                raise ValueError(f"two converters registered for {name}")
            CONVERTERS[name] = Converter(name, fn)
        return fn

    return wrap


def lookup(name: str, custom: dict[str, Callable[["NodeContext"], Any]]) -> Optional[Callable]:
    """The converter for ``name``: the user's map first, then this overload, then any."""
    for key in (name, packet_name(name)):
        if key in custom:
            return custom[key]
    for key in (name, packet_name(name)):
        conv = CONVERTERS.get(key)
        if conv is not None:
            return conv.impl
    return None


class NodeContext:
    """What a converter sees of one FX node: its arguments as Relax values and its meta.

    ``args`` / ``kwargs`` are the node's arguments with every FX node replaced by its
    imported value (a Relax expression for a tensor, a PrimExpr or int for a size) and
    everything else (ints, floats, lists, dtypes, ``None``) as torch wrote it.
    """

    def __init__(self, importer: Any, node: Any, name: str, args: tuple, kwargs: dict):
        self.importer = importer
        self.bb = importer.bb
        self.node = node
        self.op = name
        self.args = args
        self.kwargs = kwargs

    # -- where ----------------------------------------------------------------------------
    @property
    def layer(self) -> str:
        """The module path of the layer the node came from (``""`` at the top level)."""
        return self.importer.layer_of(self.node)

    def where(self) -> str:
        layer = self.layer
        return f"{self.op} (node {self.node.name!r}" + (f", layer {layer!r})" if layer else ")")

    def error(self, message: str) -> TorchImportError:
        return TorchImportError(f"{self.where()}: {message}")

    def unsupported(self, message: str) -> OpNotSupported:
        return OpNotSupported(f"{self.where()}: {message}")

    # -- arguments ------------------------------------------------------------------------
    def arg(self, i: int, name: str = "", default: Any = None) -> Any:
        """Positional argument ``i``, or keyword ``name``, or ``default``."""
        if i < len(self.args):
            return self.args[i]
        if name and name in self.kwargs:
            return self.kwargs[name]
        return default

    def has(self, i: int, name: str = "") -> bool:
        return self.arg(i, name) is not None

    def tensor(self, i: int, name: str = "") -> Any:
        """Argument ``i`` as a Relax tensor expression (a scalar becomes a constant of the
        output's dtype)."""
        value = self.arg(i, name)
        if value is None:
            raise self.error(f"argument {name or i} is missing")
        return self.importer.to_expr(value, self.out_dtype(default="float32"))

    def meta(self, value: Any = None) -> Any:
        """The ``meta["val"]`` (a FakeTensor, SymInt or tuple) of the node, or of an argument
        node given as ``value``."""
        node = self.node if value is None else value
        return node.meta.get("val") if hasattr(node, "meta") else None

    def arg_meta(self, i: int) -> Any:
        """The fake value torch recorded for argument ``i`` (None for a literal)."""
        raw = self.node.args[i] if i < len(self.node.args) else None
        return raw.meta.get("val") if hasattr(raw, "meta") else None

    def out_meta(self, index: int = 0) -> Any:
        """The fake value of the node's (``index``-th) output (None if torch recorded none)."""
        val = self.meta()
        if isinstance(val, (tuple, list)):
            val = val[index] if index < len(val) else None
        return val

    def out_dtype(self, index: int = 0, default: Optional[str] = None) -> Optional[str]:
        """The dtype of the node's (``index``-th) tensor output, as torch computed it."""
        dtype = getattr(self.out_meta(index), "dtype", None)
        if dtype is None:
            return default
        return torch_dtype_to_str(dtype, f"{self.where()}: ")

    def out_shape(self, index: int = 0) -> Optional[list[Any]]:
        """The node's (``index``-th) output shape as ints / PrimExprs."""
        shape = getattr(self.out_meta(index), "shape", None)
        if shape is None:
            return None
        return [self.importer.sym_expr(d) for d in shape]

    # -- inspection of imported values ----------------------------------------------------
    def sinfo(self, expr: Any) -> Any:
        return self.bb.normalize(expr).struct_info

    def dtype(self, expr: Any) -> str:
        return self.sinfo(expr).dtype

    def ndim(self, expr: Any) -> int:
        return self.sinfo(expr).ndim

    def shape(self, expr: Any) -> list[Any]:
        """The shape of a tensor expression as ints / PrimExprs."""
        sinfo = self.sinfo(expr)
        if sinfo.shape is None:
            raise self.unsupported("an input has an unknown shape")
        values = getattr(sinfo.shape, "values", None)
        if values is None:
            raise self.unsupported("an input has an unknown shape")
        return [int(v.value) if isinstance(v, IntImm) else v for v in values]

    def axis(self, axis: int, ndim: int) -> int:
        """``axis`` normalised to ``[0, ndim)`` (torch treats a 0-d tensor as rank 1)."""
        rank = max(ndim, 1)
        if not -rank <= axis < rank:
            raise self.error(f"dimension {axis} is out of range for a {ndim}-d tensor")
        return axis % rank

    # -- emitting -------------------------------------------------------------------------
    def emit(self, expr: Any, name: str = "") -> Any:
        return self.bb.emit(expr, name)

    def const(self, value: Any, dtype: str) -> Any:
        from ...expr import const

        from tvm.ffi.dtype import to_numpy_dtype

        return const(np.asarray(value, dtype=to_numpy_dtype(dtype)), dtype)

    def promoted_dtype(self, *indices: int) -> str:
        """The dtype torch computes in for arguments ``indices`` (its type promotion: a
        Python scalar does not widen a tensor of the same kind)."""
        import torch

        operands = []
        for i in indices:
            meta = self.arg_meta(i)
            if hasattr(meta, "dtype"):  # a stand-in of the same dtype and 0-d-ness
                meta = torch.empty((1,) * min(meta.dim(), 1), dtype=meta.dtype)
            elif meta is None:
                meta = self.arg(i)
                if isinstance(meta, PrimExpr):
                    meta = 1
            operands.append(meta)
        if len(operands) == 1:
            first = operands[0]
            dtype = first.dtype if hasattr(first, "dtype") else torch.tensor(first).dtype
        else:
            dtype = torch.result_type(operands[0], operands[1])
            for other in operands[2:]:
                dtype = torch.promote_types(dtype, torch.result_type(operands[0], other))
        return torch_dtype_to_str(dtype, f"{self.where()}: ")

    def operands(self, *indices: int) -> list[Any]:
        """Arguments ``indices`` as Relax tensors in their promoted dtype."""
        dtype = self.promoted_dtype(*indices)
        return [self.astype(self.importer.to_expr(self.arg(i), dtype), dtype) for i in indices]

    def astype(self, expr: Any, dtype: str) -> Any:
        """``expr`` converted to ``dtype`` (unchanged when it already is)."""
        from ... import op as _op

        if self.dtype(expr) == dtype:
            return expr
        return _op.astype(expr, dtype)


def simplify_int(value: Any, analyzer: Any) -> Any:
    """An int / PrimExpr simplified, as an int when it is constant."""
    if isinstance(value, (bool, np.bool_)):
        return int(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, PrimExpr):
        value = analyzer.simplify(value)
        if isinstance(value, IntImm):
            return int(value.value)
    return value


def int_list(values: Sequence[Any], analyzer: Any) -> list[Any]:
    return [simplify_int(v, analyzer) for v in values]
