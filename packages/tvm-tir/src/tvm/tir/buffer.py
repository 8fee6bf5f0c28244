"""Buffers: multi-dimensional views of memory that TIR loads from and stores to."""

from __future__ import annotations

from typing import Any, Optional, Sequence

from tvm.ffi import Object, ignore_field, register_object
from tvm.ir.span import Span

from . import expr as _expr_module
from .expr import BufferLoad, PrimExpr, Var, _canonical_dtype, convert

__all__ = ["Buffer", "decl_buffer"]


@register_object("tir.Buffer")
class Buffer(Object):
    """A typed, shaped view of the memory behind ``data`` (a handle variable).

    ``strides`` is empty for a compact row-major buffer.  ``scope`` is the storage scope
    (``global``, ``shared``, ``local``, ``global.texture`` ...).  Indexing a buffer with
    ``A[i, j]`` builds a :class:`BufferLoad`.
    """

    data: Var
    dtype: str
    shape: tuple
    strides: tuple = ()
    elem_offset: Optional[PrimExpr] = None
    scope: str = "global"
    data_alignment: int = 64
    offset_factor: int = 1
    axis_separators: tuple = ()
    name: str = ignore_field(default="buffer")
    span: Optional[Span] = ignore_field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "dtype", _canonical_dtype(self.dtype))
        object.__setattr__(self, "shape", tuple(convert(s) for s in self.shape))
        object.__setattr__(self, "strides", tuple(convert(s) for s in self.strides))

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __iter__(self) -> Any:
        # without this, iter() would call __getitem__(0), (1), ... and never end
        raise TypeError(f"a tir.Buffer is not iterable (buffer {self.name}); index it with "
                        "buffer[i, j] to load an element")

    def __getitem__(self, indices: Any) -> BufferLoad:
        if not isinstance(indices, tuple):
            indices = (indices,)
        if len(indices) != len(self.shape):
            raise IndexError(
                f"buffer {self.name} has {len(self.shape)} dimensions, indexed with {len(indices)}"
            )
        return BufferLoad(self, indices)

    def vload(self, indices: Sequence[Any], dtype: Optional[str] = None) -> BufferLoad:
        return BufferLoad(self, tuple(indices))

    def access_ptr(self, mask: str = "rw", offset: Any = 0) -> PrimExpr:
        from .op import call_intrin

        return call_intrin("handle", "tir.address_of", BufferLoad(self, (convert(offset),)))

    def with_name(self, name: str) -> Buffer:
        return self.with_fields(name=name)


# BufferLoad (expr.py, which this module imports) annotates its field ``buffer: Buffer``;
# the name is resolved in expr's namespace when from_json checks field types
_expr_module.Buffer = Buffer


def decl_buffer(
    shape: Sequence[Any],
    dtype: str = "float32",
    name: str = "buffer",
    data: Optional[Var] = None,
    strides: Sequence[Any] = (),
    elem_offset: Optional[Any] = None,
    scope: str = "global",
    data_alignment: int = 64,
    offset_factor: int = 1,
    axis_separators: Sequence[int] = (),
    span: Optional[Span] = None,
) -> Buffer:
    """Declare a buffer; a fresh ``data`` handle variable is made when none is given."""
    if data is None:
        data = Var(name, "handle")
    shape = tuple(convert(s) if not isinstance(s, PrimExpr) else s for s in shape)
    return Buffer(
        data,
        dtype,
        shape,
        tuple(strides),
        convert(elem_offset) if elem_offset is not None else None,
        scope,
        data_alignment,
        offset_factor,
        tuple(axis_separators),
        name,
        span=span,
    )
