"""FlattenBuffer: multi-dimensional buffer accesses become one-dimensional.

Every ``BufferLoad``/``BufferStore`` on an N-d buffer is rewritten to an access of a 1-D
buffer over the same ``data`` variable, at the row-major offset (or the buffer's own
``strides``) plus ``elem_offset``.  A buffer with ``axis_separators`` flattens each group
of axes separately (giving one dimension per group).  ``Allocate`` extents collapse to the
flattened shape; ``DeclBuffer`` declares the flattened buffer.

The PrimFunc's ``buffer_map`` keeps the original N-d buffers (MakePackedAPI checks their
shapes); the body declares the flattened views of the parameter buffers it uses with
``DeclBuffer`` at its top.  One flattened buffer is made per original buffer.  Vector
indices stay vectors: ``A[i, ramp(j, 1, 4)]`` becomes ``A_flat[ramp(i * n + j, 1, 4)]``.

Blocks must be lowered first (:mod:`.lower_opaque_block`).
"""

from __future__ import annotations

from typing import Any

from tvm.ir.transform import FunctionPass

from tvm.arith import const_fold as F

from ..buffer import Buffer
from ..expr import BufferLoad, IntImm, PrimExpr
from ..function import PrimFunc
from ..functor import StmtExprMutator
from ..stmt import Allocate, Block, BlockRealize, BufferStore, DeclBuffer
from ..expr_util import is_const_int
from ._common import prim_func_pass

__all__ = ["FlattenBuffer", "flatten_buffer", "flatten_indices", "flattened_buffer"]


def _groups(buffer: Buffer) -> list[tuple[int, int]]:
    """``[(start, stop), ...]`` axis ranges flattened together."""
    bounds = [0, *sorted(int(s) for s in buffer.axis_separators), len(buffer.shape)]
    for a, b in zip(bounds, bounds[1:]):
        if a > b or b > len(buffer.shape):
            raise ValueError(
                f"FlattenBuffer: buffer {buffer.name!r} has axis_separators "
                f"{tuple(buffer.axis_separators)} outside its {len(buffer.shape)} dimensions"
            )
    return list(zip(bounds, bounds[1:]))


def _index_dtype(buffer: Buffer) -> str:
    dtypes = [s.dtype for s in buffer.shape] or ["int32"]
    return "int64" if "int64" in dtypes else dtypes[0]


def _strides(buffer: Buffer) -> list[PrimExpr]:
    """Per-axis element strides: the buffer's own, else row-major within each axis group."""
    if buffer.strides:
        if len(buffer.strides) != len(buffer.shape):
            raise ValueError(
                f"FlattenBuffer: buffer {buffer.name!r} has {len(buffer.strides)} strides for "
                f"{len(buffer.shape)} dimensions"
            )
        return list(buffer.strides)
    strides: list[PrimExpr] = [IntImm(_index_dtype(buffer), 1)] * len(buffer.shape)
    for start, stop in _groups(buffer):
        acc: PrimExpr = IntImm(_index_dtype(buffer), 1)
        for d in range(stop - 1, start - 1, -1):
            strides[d] = acc
            acc = F.mul(acc, buffer.shape[d])
    return strides


def _is_flat(buffer: Buffer) -> bool:
    if len(buffer.shape) != 1 or buffer.axis_separators:
        return False
    if buffer.strides and not is_const_int(buffer.strides[0], 1):
        return False
    return buffer.elem_offset is None or is_const_int(buffer.elem_offset, 0)


def _has_offset(buffer: Buffer) -> bool:
    return buffer.elem_offset is not None and not is_const_int(buffer.elem_offset, 0)


def flattened_buffer(buffer: Buffer) -> Buffer:
    """The flat view of ``buffer`` (itself when it is already one-dimensional and compact)."""
    if _is_flat(buffer):
        return buffer
    groups = _groups(buffer)
    dtype = _index_dtype(buffer)
    shape: list[PrimExpr] = []
    strides = _strides(buffer)
    for start, stop in groups:
        if start == stop:
            shape.append(IntImm(dtype, 1))
        elif buffer.strides:
            shape.append(F.mul(buffer.shape[start], strides[start]))
        else:
            extent: PrimExpr = IntImm(dtype, 1)
            for d in range(start, stop):
                extent = F.mul(extent, buffer.shape[d])
            shape.append(extent)
    if _has_offset(buffer):
        shape[-1] = F.add(shape[-1], buffer.elem_offset)
    return buffer.with_fields(
        shape=tuple(shape),
        strides=(),
        elem_offset=None,
        axis_separators=tuple(range(1, len(groups))),
    )


def flatten_indices(buffer: Buffer, indices: tuple) -> tuple:
    """The indices into :func:`flattened_buffer` equivalent to ``buffer[indices]``."""
    if len(indices) != len(buffer.shape):
        raise ValueError(
            f"FlattenBuffer: buffer {buffer.name!r} has {len(buffer.shape)} dimensions but is "
            f"accessed with {len(indices)} indices"
        )
    if _is_flat(buffer):
        return tuple(indices)
    strides = _strides(buffer)
    out: list[PrimExpr] = []
    for start, stop in _groups(buffer):
        acc: PrimExpr = IntImm(_index_dtype(buffer), 0)
        for d in range(start, stop):
            acc = F.add(acc, F.mul(indices[d], strides[d]))
        out.append(acc)
    if _has_offset(buffer):
        out[-1] = F.add(out[-1], buffer.elem_offset)
    return tuple(out)


class _Flattener(StmtExprMutator):
    def __init__(self) -> None:
        self.flat: dict[Buffer, Buffer] = {}

    def flatten(self, buffer: Buffer) -> Buffer:
        cached = self.flat.get(buffer)
        if cached is None:
            cached = self.flat[buffer] = flattened_buffer(buffer)
        return cached

    def visit_buffer_load_(self, op: BufferLoad) -> Any:
        indices = tuple(self.visit_expr(i) for i in op.indices)
        flat = self.flatten(op.buffer)
        if flat is op.buffer and all(a is b for a, b in zip(indices, op.indices)):
            return op
        return BufferLoad(flat, flatten_indices(op.buffer, indices), span=op.span)

    def visit_buffer_store_(self, op: BufferStore) -> Any:
        value = self.visit_expr(op.value)
        indices = tuple(self.visit_expr(i) for i in op.indices)
        flat = self.flatten(op.buffer)
        if flat is op.buffer and value is op.value and all(
            a is b for a, b in zip(indices, op.indices)
        ):
            return op
        return BufferStore(flat, value, flatten_indices(op.buffer, indices), span=op.span)

    def visit_decl_buffer_(self, op: DeclBuffer) -> Any:
        buffer = self.flatten(op.buffer)
        body = self.visit_stmt(op.body)
        return op.with_fields(buffer=buffer, body=body)

    def visit_allocate_(self, op: Allocate) -> Any:
        extents = tuple(self.visit_expr(e) for e in op.extents)
        body = self.visit_stmt(op.body)
        if isinstance(body, DeclBuffer) and body.buffer.data is op.buffer_var:
            new_extents = tuple(body.buffer.shape)
        elif len(extents) == 1:
            new_extents = extents
        else:
            size: PrimExpr = IntImm(extents[0].dtype if extents else "int32", 1)
            for e in extents:
                size = F.mul(size, e)
            new_extents = (size,)
        if len(new_extents) == len(op.extents) and all(
            a is b for a, b in zip(new_extents, op.extents)
        ):
            new_extents = op.extents
        return op.with_fields(extents=new_extents, body=body)

    def visit_block_(self, op: Block) -> Any:
        raise ValueError(
            f"FlattenBuffer: block {op.name_hint!r} is still present; run LowerOpaqueBlock "
            "(tvm.tir.transform.LowerOpaqueBlock) before flattening buffers"
        )

    def visit_block_realize_(self, op: BlockRealize) -> Any:
        return self.visit_block_(op.block)


def flatten_buffer(func: PrimFunc) -> PrimFunc:
    """``func`` with every buffer access one-dimensional (see the module docstring)."""
    flattener = _Flattener()
    body = flattener.visit_stmt(func.body)
    for param in reversed(func.params):
        buffer = func.buffer_map.get(param)
        if buffer is None:
            continue
        flat = flattener.flat.get(buffer)
        if flat is not None and flat is not buffer:
            body = DeclBuffer(flat, body)
    return func if body is func.body else func.with_body(body)


def FlattenBuffer() -> FunctionPass:  # noqa: N802
    """The pass form of :func:`flatten_buffer`."""
    return prim_func_pass(flatten_buffer, "tir.FlattenBuffer")
