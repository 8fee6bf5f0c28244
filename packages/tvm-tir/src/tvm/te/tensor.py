"""Tensors of the tensor-expression language and the operations that produce them.

A :class:`Tensor` is one output of an :class:`Operation`: a :class:`PlaceholderOp` (an input
given by the caller) or a :class:`ComputeOp` (one expression per output element).  Indexing a
tensor, ``A[i, j]``, builds a :class:`ProducerLoad` expression; :func:`tvm.te.create_prim_func`
later turns those into buffer loads.

Two tensors are the same tensor when they come from the same operation at the same output
index (``op.output(0) == op.output(0)``), as in TVM.
"""

from __future__ import annotations

from typing import Any, Optional

from tvm.ffi import Object, def_field, ignore_field, register_object
from tvm.ir.span import Span
from tvm.tir.expr import IterVar, PrimExpr, Var, convert, is_int_dtype
from tvm.tir.functor import StmtExprVisitor

__all__ = [
    "Tensor", "Operation", "PlaceholderOp", "ComputeOp", "ProducerLoad", "ReduceAxisVar",
    "tensor_key",
]


@register_object("te.ReduceAxisVar")
class ReduceAxisVar(Var):
    """The variable of a reduction axis made by :func:`tvm.te.reduce_axis`.

    It is an ordinary :class:`~tvm.tir.Var` everywhere; its own class lets ``te.compute``
    report a reduction axis used outside of a reduction.  It never reaches a PrimFunc:
    :func:`~tvm.te.create_prim_func` replaces it by a block iteration variable.
    """

    _is_var = True


@register_object()
class Operation(Object):
    """Base of the operations producing tensors."""

    @property
    def num_outputs(self) -> int:
        raise NotImplementedError

    def output(self, index: int) -> Tensor:
        """The ``index``-th output tensor of this operation."""
        n = self.num_outputs
        if not 0 <= index < n:
            raise IndexError(f"operation {self.name!r} has {n} output(s), asked for output {index}")
        name = self.name if n == 1 else f"{self.name}_v{index}"
        return Tensor(self._output_shape(index), self._output_dtype(index), self, index, name)

    @property
    def outputs(self) -> list[Tensor]:
        return [self.output(i) for i in range(self.num_outputs)]

    @property
    def input_tensors(self) -> list[Tensor]:
        """The tensors this operation reads, in first-use order."""
        return []

    def _output_shape(self, index: int) -> tuple:
        raise NotImplementedError

    def _output_dtype(self, index: int) -> str:
        raise NotImplementedError


@register_object("te.PlaceholderOp")
class PlaceholderOp(Operation):
    """An input tensor of the computation.

    Like a variable, a placeholder compares structurally by identity unless bound.
    """

    shape: tuple
    dtype: str
    name: str = ignore_field(default="placeholder")
    tag: str = ""
    attrs: dict = None  # type: ignore[assignment]
    _is_var = True

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.attrs is None:
            object.__setattr__(self, "attrs", {})

    @property
    def num_outputs(self) -> int:
        return 1

    def _output_shape(self, index: int) -> tuple:
        return self.shape

    def _output_dtype(self, index: int) -> str:
        return self.dtype


@register_object("te.ComputeOp")
class ComputeOp(Operation):
    """``output[k][axis] = body[k]`` for every point of ``axis`` (built by ``te.compute``).

    ``reduce_axis`` lists the reduction axes when the bodies are :class:`~tvm.tir.Reduce`
    expressions (all bodies then share one reduction).
    """

    axis: tuple = def_field()
    reduce_axis: tuple = def_field(default=())
    body: tuple = ()
    name: str = ignore_field(default="compute")
    tag: str = ""
    attrs: dict = None  # type: ignore[assignment]

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.attrs is None:
            object.__setattr__(self, "attrs", {})

    @property
    def num_outputs(self) -> int:
        return len(self.body)

    def _output_shape(self, index: int) -> tuple:
        return tuple(iv.dom.extent for iv in self.axis)

    def _output_dtype(self, index: int) -> str:
        return self.body[index].dtype

    @property
    def input_tensors(self) -> list[Tensor]:
        collector = _ProducerCollector()
        for iv in self.reduce_axis:
            collector.visit(iv.dom)
        for expr in self.body:
            collector.visit_expr(expr)
        return collector.tensors


@register_object("te.Tensor")
class Tensor(Object):
    """The ``value_index``-th output of ``op``; ``A[i, j]`` reads one element."""

    shape: tuple
    dtype: str
    op: Operation
    value_index: int = 0
    name: str = ignore_field(default="tensor")

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __getitem__(self, indices: Any) -> ProducerLoad:
        if not isinstance(indices, tuple):
            indices = (indices,)
        return ProducerLoad(self, indices)

    def __call__(self, *indices: Any) -> ProducerLoad:
        return ProducerLoad(self, indices)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Tensor):
            return NotImplemented
        return self.op is other.op and self.value_index == other.value_index

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self) -> int:
        return hash((id(self.op), self.value_index))

    def __bool__(self) -> bool:
        return True

    def __iter__(self) -> Any:
        raise TypeError(f"te.Tensor {self.name!r} is not iterable; index it with A[i, j]")

    def __repr__(self) -> str:
        shape = ", ".join(str(_brief(s)) for s in self.shape)
        return f"Tensor(name={self.name!r}, shape=({shape}), dtype={self.dtype!r})"


def tensor_key(tensor: Tensor) -> tuple[int, int]:
    """A dictionary key naming a tensor: (id of its operation, output index)."""
    return (id(tensor.op), tensor.value_index)


@register_object("te.ProducerLoad")
class ProducerLoad(PrimExpr):
    """``producer[indices]``: one element of a te tensor (only inside te expressions)."""

    producer: Tensor
    indices: tuple
    span: Optional[Span] = ignore_field(default=None, kw_only=True)

    def __init__(self, producer: Tensor, indices: Any, *, span: Optional[Span] = None):
        if not isinstance(producer, Tensor):
            raise TypeError(f"ProducerLoad needs a te.Tensor, got {type(producer).__name__}")
        converted = []
        for pos, index in enumerate(indices):
            converted.append(_index_expr(index, producer, pos))
        if len(converted) != producer.ndim:
            raise IndexError(
                f"tensor {producer.name!r} has {producer.ndim} dimension(s) "
                f"(shape {_shape_str(producer.shape)}) but is indexed with {len(converted)} "
                "index(es); index every dimension at once, e.g. A[i, j]"
            )
        object.__setattr__(self, "dtype", producer.dtype)
        object.__setattr__(self, "producer", producer)
        object.__setattr__(self, "indices", tuple(converted))
        object.__setattr__(self, "span", span)


def _index_expr(index: Any, tensor: Tensor, pos: int) -> PrimExpr:
    if isinstance(index, IterVar):
        return index.var
    if isinstance(index, slice):
        raise TypeError(
            f"tensor {tensor.name!r}: slices are not supported as indices (index {pos}); "
            "index every dimension with an expression"
        )
    try:
        expr = convert(index)
    except TypeError:
        raise TypeError(
            f"tensor {tensor.name!r}: index {pos} must be an integer expression, "
            f"got {type(index).__name__} {index!r}"
        ) from None
    if not is_int_dtype(expr.dtype):
        raise TypeError(
            f"tensor {tensor.name!r}: index {pos} must be an integer expression, "
            f"got dtype {expr.dtype} ({expr!r})"
        )
    return expr


def _brief(x: Any) -> Any:
    if hasattr(x, "value") and isinstance(getattr(x, "value"), int):
        return x.value
    if isinstance(x, Var):
        return x.name
    return x


def _shape_str(shape: tuple) -> str:
    return "(" + ", ".join(str(_brief(s)) for s in shape) + ("," if len(shape) == 1 else "") + ")"


class _ProducerCollector(StmtExprVisitor):
    """Tensors read through ProducerLoad, without walking into the producers themselves."""

    def __init__(self) -> None:
        self.tensors: list[Tensor] = []
        self._seen: set[tuple[int, int]] = set()

    def visit_producer_load_(self, op: ProducerLoad) -> None:
        key = tensor_key(op.producer)
        if key not in self._seen:
            self._seen.add(key)
            self.tensors.append(op.producer)
        for index in op.indices:
            self.visit_expr(index)
