"""ONNX sequences and optionals, resolved at import time.

A sequence whose length is known at import time is a :class:`SeqValue`: the list of its
element values (Relax expressions, constants, symbolic shape values).  The sequence operators
(``SequenceConstruct``, ``SequenceEmpty``, ``SequenceInsert``, ``SequenceErase``, ``SequenceAt``,
``SequenceLength``, ``ConcatFromSequence``, ``SplitToSequence``, ``SequenceMap``) become list
manipulation at import time plus ordinary tensor operators; a sequence that reaches a graph
output becomes a Relax ``Tuple``, and a graph input of sequence type is an ``R.Tuple``
parameter (one field per element, its length given by the caller in ``shape_dict``).

An optional holding a value is that value; an empty optional is an :class:`EmptyOptional`, so
``OptionalHasElement`` folds to a constant and ``If`` on it inlines one branch.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Optional

import numpy as np

from tvm.tir.expr import IntImm

from ...expr import Expr
from .common import R, converter, onnx_dtype_to_str

__all__ = ["SeqValue", "EmptyOptional", "is_structured", "STRUCTURED_OPS", "describe"]


@dataclasses.dataclass(frozen=True)
class SeqValue:
    """An ONNX sequence of known length: its element values, in order.

    ``dtype`` is the element dtype (None when unknown, e.g. an empty sequence of a graph
    input without element type); ``expr``, when set, is a Relax expression holding the whole
    sequence as a tuple (a graph input), reused instead of rebuilding the tuple.
    """

    elems: tuple[Any, ...]
    dtype: Optional[str] = None
    expr: Optional[Expr] = None

    def __len__(self) -> int:
        return len(self.elems)


@dataclasses.dataclass(frozen=True)
class EmptyOptional:
    """An ONNX optional without a value; ``kind`` describes its type, for messages."""

    kind: str = "optional"


def is_structured(value: Any) -> bool:
    """Whether ``value`` is a sequence or an empty optional (not a tensor)."""
    return isinstance(value, (SeqValue, EmptyOptional))


def describe(value: Any) -> str:
    if isinstance(value, SeqValue):
        return f"a sequence of {len(value)}"
    if isinstance(value, EmptyOptional):
        return "an empty optional"
    return "a tensor"


# op types whose converters accept sequences / empty optionals as inputs
STRUCTURED_OPS = frozenset({
    "SequenceConstruct", "SequenceEmpty", "SequenceInsert", "SequenceErase", "SequenceAt",
    "SequenceLength", "ConcatFromSequence", "SplitToSequence", "SequenceMap", "Optional",
    "OptionalHasElement", "OptionalGetElement", "Identity", "If", "Loop",
})


# -- helpers -------------------------------------------------------------------------------------
def _seq(ctx: Any, i: int, what: str = "input_sequence") -> SeqValue:
    value = ctx.raw_inputs[i] if i < ctx.num_inputs else None
    if not isinstance(value, SeqValue):
        raise ctx.error(f"input {i} ({what}) must be a sequence, got {describe(value)}")
    return value


def _position(ctx: Any, i: int, default: int, size: int, allow_end: bool) -> int:
    """Constant position input ``i`` (default ``default``), normalised to [0, size] or
    [0, size) (``allow_end``); an error when out of range."""
    if not ctx.has(i):
        pos = default
    else:
        value = ctx.const(i)
        if value is None:
            raise ctx.unsupported(f"input {i} (position) must be a constant: the sequence "
                                  "layout is decided at import time")
        pos = int(np.asarray(value).reshape(-1)[0])
    hi = size if allow_end else size - 1
    if not -size <= pos <= hi:
        raise ctx.error(f"position {pos} is out of range [{-size}, {hi}] for a sequence of {size}")
    return pos + size if pos < 0 else pos


def _elem_dtype(ctx: Any, value: Any) -> str:
    if is_structured(value):
        raise ctx.unsupported(f"sequence elements must be tensors, got {describe(value)}")
    return ctx.importer.dtype_of(value)


def _check_dtype(ctx: Any, seq_dtype: Optional[str], dtype: str, what: str) -> None:
    if seq_dtype is not None and dtype != seq_dtype:
        raise ctx.error(f"{what} has dtype {dtype}, but the sequence holds {seq_dtype}")


def _static(dim: Any) -> Optional[int]:
    if isinstance(dim, IntImm):
        return int(dim.value)
    return dim if isinstance(dim, int) else None


# -- sequences -----------------------------------------------------------------------------------
@converter("SequenceConstruct", min_opset=11)
def _sequence_construct(ctx: Any) -> Any:
    if ctx.num_inputs == 0:
        raise ctx.error("needs at least one input")
    dtype = None
    for i, value in enumerate(ctx.raw_inputs):
        if value is None:
            raise ctx.error(f"input {i} is missing")
        d = _elem_dtype(ctx, value)
        _check_dtype(ctx, dtype, d, f"input {i}")
        dtype = d
    return SeqValue(tuple(ctx.raw_inputs), dtype)


@converter("SequenceEmpty", min_opset=11)
def _sequence_empty(ctx: Any) -> Any:
    return SeqValue((), onnx_dtype_to_str(ctx.attr("dtype", 1), f"{ctx.where()}: "))


@converter("SequenceInsert", min_opset=11)
def _sequence_insert(ctx: Any) -> Any:
    seq = _seq(ctx, 0)
    if not ctx.has(1):
        raise ctx.error("input 1 (tensor) is missing")
    value = ctx.raw_inputs[1]
    dtype = _elem_dtype(ctx, value)
    _check_dtype(ctx, seq.dtype, dtype, "the inserted tensor")
    pos = _position(ctx, 2, len(seq), len(seq), allow_end=True)
    elems = list(seq.elems)
    elems.insert(pos, value)
    return SeqValue(tuple(elems), dtype)


@converter("SequenceErase", min_opset=11)
def _sequence_erase(ctx: Any) -> Any:
    seq = _seq(ctx, 0)
    if len(seq) == 0:
        raise ctx.error("cannot erase from an empty sequence")
    pos = _position(ctx, 1, -1, len(seq), allow_end=False)
    return SeqValue(seq.elems[:pos] + seq.elems[pos + 1:], seq.dtype)


@converter("SequenceAt", min_opset=11)
def _sequence_at(ctx: Any) -> Any:
    seq = _seq(ctx, 0)
    if len(seq) == 0:
        raise ctx.error("SequenceAt on an empty sequence")
    if not ctx.has(1):
        raise ctx.error("input 1 (position) is missing")
    if ctx.const(1) is not None:
        return seq.elems[_position(ctx, 1, 0, len(seq), allow_end=False)]
    # a runtime position: possible when every element has the same shape and dtype
    imp = ctx.importer
    shapes = [imp.shape_of(e) for e in seq.elems]
    first = shapes[0]
    same = first is not None and all(
        s is not None and len(s) == len(first)
        and all(imp.bb.analyzer.can_prove_equal(a, b) for a, b in zip(s, first))
        for s in shapes[1:])
    dtypes = {imp.dtype_of(e) for e in seq.elems}
    if not same or len(dtypes) != 1:
        raise ctx.unsupported("a runtime position into a sequence whose elements differ in "
                              f"shape ({shapes}); the position must be a constant")
    stacked = R.concat([R.expand_dims(imp.to_expr(e), [0]) for e in seq.elems], axis=0)
    pos = ctx.emit(R.reshape(ctx.input(1), []))
    return R.take(ctx.emit(stacked), pos, axis=0)


@converter("SequenceLength", min_opset=11)
def _sequence_length(ctx: Any) -> Any:
    return np.array(len(_seq(ctx, 0)), dtype=np.int64)


@converter("ConcatFromSequence", min_opset=11)
def _concat_from_sequence(ctx: Any) -> Any:
    seq = _seq(ctx, 0)
    if len(seq) == 0:
        raise ctx.error("cannot concatenate an empty sequence")
    if ctx.attr("axis") is None:
        raise ctx.error("attribute 'axis' is required")
    imp = ctx.importer
    new_axis = int(ctx.attr("new_axis", 0))
    rank = imp.ndim_of(seq.elems[0])
    if rank < 0:
        raise ctx.unsupported("elements of unknown rank")
    out_rank = rank + 1 if new_axis else rank
    axis = int(ctx.attr("axis"))
    if not -out_rank <= axis < out_rank:
        raise ctx.error(f"axis {axis} is out of range for rank {rank} (new_axis={new_axis})")
    axis %= out_rank
    elems = [imp.to_expr(e) for e in seq.elems]
    if new_axis:
        elems = [ctx.emit(R.expand_dims(e, [axis])) for e in elems]
    if len(elems) == 1:
        return elems[0]
    return R.concat(elems, axis=axis)


@converter("SplitToSequence", min_opset=11)
def _split_to_sequence(ctx: Any) -> Any:
    x = ctx.input(0)
    ndim = ctx.ndim(0)
    axis = int(ctx.attr("axis", 0))
    if not -ndim <= axis < ndim:
        raise ctx.error(f"axis {axis} is out of range for rank {ndim}")
    axis %= ndim
    dim = _static(ctx.shape(0)[axis])
    keepdims = int(ctx.attr("keepdims", 1))
    split = None
    if ctx.has(1):
        value = ctx.const(1)
        if value is None:
            length = ctx.static_shape(1)
            if length is None or len(length) != 1:
                raise ctx.unsupported("input 1 (split) given at run time must be 1-d with a "
                                      "static length: its length decides the sequence's")
            from .ops_runtime import split as runtime_split

            return SeqValue(tuple(runtime_split(ctx, axis, length[0])), ctx.dtype(0))
        split = np.asarray(value)
    if split is not None and split.ndim == 0:
        chunk = int(split)
        if chunk <= 0:
            raise ctx.error(f"split must be positive, got {chunk}")
        if dim is None:
            raise ctx.unsupported(f"a scalar split along the symbolic axis {axis}")
        sizes = [min(chunk, dim - b) for b in range(0, dim, chunk)]
    elif split is not None:
        if split.ndim != 1:
            raise ctx.error(f"split must be a scalar or 1-D, got shape {list(split.shape)}")
        sizes = [int(s) for s in split]
        if any(s < 0 for s in sizes):
            raise ctx.error(f"split sizes must be non-negative, got {sizes}")
        if dim is not None and sum(sizes) != dim:
            raise ctx.error(f"split sizes {sizes} do not add up to dimension {dim} of axis {axis}")
    else:
        if dim is None:
            raise ctx.unsupported(f"splitting along the symbolic axis {axis} without 'split'")
        sizes = [1] * dim
    elems = []
    begin = 0
    for size in sizes:
        piece = R.strided_slice(x, [axis], [begin], [begin + size])
        if split is None and not keepdims:
            piece = R.squeeze(piece, [axis])
        elems.append(ctx.emit(piece))
        begin += size
    return SeqValue(tuple(elems), ctx.dtype(0))


@converter("SequenceMap", min_opset=17)
def _sequence_map(ctx: Any) -> Any:
    body = ctx.attr("body")
    seq = _seq(ctx, 0)
    n = len(seq)
    for i, value in enumerate(ctx.raw_inputs):
        if value is None:
            raise ctx.error(f"input {i} is missing")
        if isinstance(value, EmptyOptional):
            raise ctx.error(f"input {i} is an empty optional")
        if isinstance(value, SeqValue) and len(value) != n:
            raise ctx.error(f"input sequences differ in length: input 0 has {n}, input {i} "
                            f"has {len(value)}")
    imp = ctx.importer
    outs: list[list[Any]] = [[] for _ in body.output]
    for k in range(n):
        args = [v.elems[k] if isinstance(v, SeqValue) else v for v in ctx.raw_inputs]
        for j, value in enumerate(imp.convert_subgraph(body, args)):
            if is_structured(value):
                raise ctx.unsupported(f"body output {j} is {describe(value)} (sequences of "
                                      "sequences are not supported)")
            outs[j].append(value)
    results = []
    for j, elems in enumerate(outs):
        dtype = None
        for e in elems:
            d = imp.dtype_of(e)
            _check_dtype(ctx, dtype, d, f"body output {j}")
            dtype = d
        if dtype is None:  # an empty input sequence: the element type from the body's output
            tt = body.output[j].type.tensor_type
            dtype = onnx_dtype_to_str(tt.elem_type, f"{ctx.where()}: ") if tt.elem_type else None
        results.append(SeqValue(tuple(elems), dtype))
    return results


# -- optionals -----------------------------------------------------------------------------------
@converter("Optional", min_opset=15)
def _optional(ctx: Any) -> Any:
    if ctx.has(0):
        return ctx.raw_inputs[0]
    tp = ctx.attr("type")
    if tp is None:
        raise ctx.error("without an input, attribute 'type' is required")
    return EmptyOptional(f"optional({_type_text(tp)})")


@converter("OptionalHasElement", min_opset=15)
def _optional_has_element(ctx: Any) -> Any:
    present = ctx.has(0) and not isinstance(ctx.raw_inputs[0], EmptyOptional)
    return np.array(present, dtype=bool)


@converter("OptionalGetElement", min_opset=15)
def _optional_get_element(ctx: Any) -> Any:
    if not ctx.has(0):
        raise ctx.error("input 0 is missing")
    value = ctx.raw_inputs[0]
    if isinstance(value, EmptyOptional):
        raise ctx.error(f"input 0 is {value.kind} without a value")
    return value


def _type_text(tp: Any) -> str:
    """A short text for an ONNX TypeProto: ``float32``, ``seq(int64)``, ``optional(...)``."""
    kind = tp.WhichOneof("value")
    if kind == "tensor_type":
        try:
            return onnx_dtype_to_str(tp.tensor_type.elem_type)
        except Exception:  # noqa: BLE001 - only for messages
            return f"tensor(elem_type {tp.tensor_type.elem_type})"
    if kind == "sequence_type":
        return f"seq({_type_text(tp.sequence_type.elem_type)})"
    if kind == "optional_type":
        return f"optional({_type_text(tp.optional_type.elem_type)})"
    return str(kind)
