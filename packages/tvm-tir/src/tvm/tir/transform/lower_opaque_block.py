"""LowerOpaqueBlock: remove blocks, leaving plain loops and statements.

For each ``BlockRealize``:

* the block's iteration variables are replaced by their bound values (``iter_values``);
* a block ``init`` still present is lowered as by :mod:`.lower_init_block`;
* ``match_buffers`` are resolved: accesses to a matched buffer become accesses to the source
  buffer at the region's offset, and its symbolic shape/stride/offset variables are replaced;
* ``alloc_buffers`` become ``Allocate(data) { DeclBuffer(buffer) { body } }``;
* block annotations are dropped, except ``pragma_*`` ones which become
  ``AttrStmt(StringImm(block name), key, value, body)``;
* a predicate other than ``True`` becomes ``if predicate: body``.

Loops are kept as they are (``THREAD_BINDING`` loops included; GPU lowering comes later).
The resulting function carries ``"tir.blocks_lowered": True``, which the well-formedness
verifier uses to reject blocks appearing again.
"""

from __future__ import annotations

from typing import Any

from tvm.ir.transform import FunctionPass

from tvm.arith import const_fold as F

from ..analysis.verify import BLOCKS_LOWERED_ATTR
from ..buffer import Buffer
from ..expr import BufferLoad, IntImm, PrimExpr, StringImm, Var, convert
from ..function import PrimFunc
from ..functor import StmtExprMutator
from ..stmt import (
    Allocate, AttrStmt, Block, BlockRealize, BufferStore, DeclBuffer, IfThenElse,
    MatchBufferRegion, Stmt,
)
from ..stmt_functor import substitute
from ._common import prim_func_pass
from .lower_init_block import lower_block_init

__all__ = ["LowerOpaqueBlock", "lower_opaque_block", "BLOCKS_LOWERED_ATTR"]



def _annotation_value(block: Block, key: str, value: Any) -> PrimExpr:
    if isinstance(value, PrimExpr):
        return value
    if isinstance(value, str):
        return StringImm(value)
    if isinstance(value, (bool, int, float)):
        return convert(value)
    raise TypeError(
        f"LowerOpaqueBlock: block {block.name_hint!r} has annotation {key!r} = {value!r} "
        f"({type(value).__name__}); a pragma annotation must be a number, string or PrimExpr"
    )


def _compact_strides(buffer: Buffer) -> list[PrimExpr]:
    """Element strides of ``buffer``: its own, or row-major ones."""
    if buffer.strides:
        return list(buffer.strides)
    strides: list[PrimExpr] = []
    acc: PrimExpr = IntImm(buffer.shape[-1].dtype if buffer.shape else "int32", 1)
    for extent in reversed(buffer.shape):
        strides.append(acc)
        acc = F.mul(acc, extent)
    return strides[::-1]


class _MatchBuffers(StmtExprMutator):
    """Rewrites accesses to matched buffers into accesses to their source buffers."""

    def __init__(self, block: Block, matches: tuple[MatchBufferRegion, ...]) -> None:
        self.block = block
        self.table: dict[Buffer, tuple[Buffer, list[PrimExpr], int]] = {}
        self.vmap: dict[Var, PrimExpr] = {}
        for m in matches:
            self._add(m)

    def _add(self, match: MatchBufferRegion) -> None:
        buf, src = match.buffer, match.source
        region = list(src.region)
        lead = len(region) - len(buf.shape)
        if lead < 0:
            raise ValueError(
                f"LowerOpaqueBlock: block {self.block.name_hint!r} matches buffer {buf.name!r} "
                f"({len(buf.shape)}-d) to a {len(region)}-d region of {src.buffer.name!r}; the "
                "region must have at least as many dimensions"
            )
        for k, extent in enumerate(buf.shape):
            rng = region[lead + k]
            if isinstance(extent, Var):
                self.vmap.setdefault(extent, rng.extent)
            elif isinstance(extent, IntImm) and isinstance(rng.extent, IntImm) and (
                extent.value != rng.extent.value
            ):
                raise ValueError(
                    f"LowerOpaqueBlock: block {self.block.name_hint!r} matches buffer "
                    f"{buf.name!r} with shape[{k}] = {extent.value} to a region of extent "
                    f"{rng.extent.value} of {src.buffer.name!r}"
                )
        src_strides = _compact_strides(src.buffer)
        for k, stride in enumerate(buf.strides):
            if isinstance(stride, Var):
                self.vmap.setdefault(stride, src_strides[lead + k])
        if isinstance(buf.elem_offset, Var):
            offset = src.buffer.elem_offset if src.buffer.elem_offset is not None else 0
            for rng, stride in zip(region, src_strides):
                offset = F.add(offset, F.mul(rng.min, stride))
            self.vmap.setdefault(buf.elem_offset, offset)
        self.vmap.setdefault(buf.data, src.buffer.data)
        self.table[buf] = (src.buffer, [r.min for r in region], lead)

    def _map(self, buffer: Buffer, indices: tuple) -> tuple[Buffer, tuple] | None:
        entry = self.table.get(buffer)
        if entry is None:
            return None
        src, mins, lead = entry
        new = list(mins[:lead])
        new.extend(F.add(m, i) for m, i in zip(mins[lead:], indices))
        return src, tuple(new)

    def visit_buffer_load_(self, op: BufferLoad) -> Any:
        indices = tuple(self.visit_expr(i) for i in op.indices)
        mapped = self._map(op.buffer, indices)
        if mapped is not None:
            return BufferLoad(mapped[0], mapped[1], span=op.span)
        if all(a is b for a, b in zip(indices, op.indices)):
            return op
        return BufferLoad(op.buffer, indices, span=op.span)

    def visit_buffer_store_(self, op: BufferStore) -> Any:
        value = self.visit_expr(op.value)
        indices = tuple(self.visit_expr(i) for i in op.indices)
        mapped = self._map(op.buffer, indices)
        if mapped is not None:
            return BufferStore(mapped[0], value, mapped[1], span=op.span)
        return op.with_fields(value=value, indices=indices) if (
            value is not op.value or any(a is not b for a, b in zip(indices, op.indices))
        ) else op

    def visit_var_(self, v: Var) -> Any:
        return self.vmap.get(v, v)


class _BlockLowerer(StmtExprMutator):
    def visit_block_realize_(self, realize: BlockRealize) -> Any:
        block = realize.block
        values = tuple(self.visit_expr(v) for v in realize.iter_values)
        predicate = self.visit_expr(realize.predicate)
        body = self._lower_block(block)
        vmap = {iv.var: value for iv, value in zip(block.iter_vars, values)}
        body = substitute(body, vmap)
        if not (isinstance(predicate, IntImm) and predicate.value == 1):
            body = IfThenElse(substitute(predicate, vmap), body, span=realize.span)
        return body

    def visit_block_(self, block: Block) -> Any:
        if block.iter_vars:
            raise ValueError(
                f"LowerOpaqueBlock: block {block.name_hint!r} has iteration variables but no "
                "BlockRealize binding them"
            )
        return self._lower_block(block)

    def _lower_block(self, block: Block) -> Stmt:
        block = lower_block_init(block)
        body = self.visit_stmt(block.body)
        if block.match_buffers:
            body = _MatchBuffers(block, block.match_buffers).visit_stmt(body)
        for key in sorted(block.annotations, reverse=True):
            if key.startswith("pragma_"):
                value = _annotation_value(block, key, block.annotations[key])
                body = AttrStmt(StringImm(block.name_hint), key, value, body)
        for buf in reversed(block.alloc_buffers):
            body = Allocate(buf.data, buf.dtype, buf.shape, convert(True),
                            DeclBuffer(buf, body), buf.scope, span=block.span)
        return body


def lower_opaque_block(func: PrimFunc) -> PrimFunc:
    """``func`` without blocks (see the module docstring)."""
    body = _BlockLowerer().visit_stmt(func.body)
    if body is func.body and func.attrs.get(BLOCKS_LOWERED_ATTR):
        return func
    return func.with_body(body).with_attr(BLOCKS_LOWERED_ATTR, True)


def LowerOpaqueBlock() -> FunctionPass:  # noqa: N802
    """The pass form of :func:`lower_opaque_block`."""
    return prim_func_pass(lower_opaque_block, "tir.LowerOpaqueBlock")
