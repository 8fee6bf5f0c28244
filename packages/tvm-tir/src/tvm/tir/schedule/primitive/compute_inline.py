"""compute_inline / reverse_compute_inline: fold one elementwise block into its neighbour.

``compute_inline(B)``: ``B`` is ``B[v0, v1, ...] = f(...)`` (one BufferStore whose indices
are its distinct data-parallel iteration variables) writing an intermediate buffer.  Every
load ``B[i0, i1, ...]`` in its consumers becomes ``f`` with ``v_k := i_k``; ``B`` and its
buffer disappear.

``reverse_compute_inline(C)``: ``C`` is ``C[g(v)] = h(B[v0, v1, ...], ...)`` reading the
intermediate buffer ``B`` of its single producer ``P: B[p(w)] = e(w)`` at one index tuple
of its distinct iteration variables.  ``P`` becomes ``C[g(p(w))] = h(e(w), ...)`` (the
variables of ``C`` replaced through ``v_k := p(w)_k``); ``C`` and ``B`` disappear.

Consumers' (the producer's) read/write regions are recomputed.
"""

from __future__ import annotations

from typing import Any, Optional

from tvm.ffi import structural_equal

from ...buffer import Buffer
from ...expr import BufferLoad, IterVarType, PrimExpr, Var
from ...functor import StmtExprMutator, StmtExprVisitor
from ...stmt import Block, BufferStore
from ...stmt_functor import free_vars, substitute
from .. import analysis as A
from ..error import ScheduleError
from ..handles import BlockRV
from ..instruction import instruction
from ..state import ScheduleState, StmtSRef
from ._util import ScopeRewriter, find_region, refresh_regions, removal_stmt, rewrite_scope

__all__ = ["compute_inline", "reverse_compute_inline", "ComputeInlineMixin"]


def _single_store(prim: str, block: Block, what: str) -> BufferStore:
    if not isinstance(block.body, BufferStore):
        raise ScheduleError(prim, f"the {what} block's body is not a single BufferStore "
                            f"(it is a {type(block.body).__name__})", block)
    return block.body


def _alloc_owner(block_sref: StmtSRef, buffer: Buffer) -> Optional[StmtSRef]:
    for anc in block_sref.ancestors():
        if anc.is_block and any(b is buffer for b in anc.block.alloc_buffers):
            return anc
    return None


def _readers(root: StmtSRef, buffer: Buffer, exclude: StmtSRef) -> list[StmtSRef]:
    return [s for s in A.blocks_under(root) if s is not exclude
            and find_region(s.block.reads, buffer) is not None]


def _drop_alloc(buffer: Buffer, then: Any = None) -> Any:
    def fn(b: Block) -> Block:
        if then is not None:
            b = then(b)
        allocs = tuple(x for x in b.alloc_buffers if x is not buffer)
        return b.with_fields(alloc_buffers=allocs)

    return fn


class _Inliner(StmtExprMutator):
    """Replaces loads of ``buffer`` by the producer's value; refreshes rebuilt blocks."""

    def __init__(self, buffer: Buffer, index_vars: list[Var], value: PrimExpr):
        self.buffer = buffer
        self.index_vars = index_vars
        self.value = value

    def visit_buffer_load_(self, op: BufferLoad) -> PrimExpr:
        indices = tuple(self.visit_expr(i) for i in op.indices)
        if op.buffer is not self.buffer:
            if all(a is b for a, b in zip(indices, op.indices)):
                return op
            return op.with_fields(indices=indices)
        return substitute(self.value, dict(zip(self.index_vars, indices)))

    def visit_block_(self, op: Block) -> Any:
        new = self.generic_mutate(op)
        return refresh_regions(new) if new is not op else op


def compute_inline(state: ScheduleState, block_sref: StmtSRef) -> None:
    """Inline an injective producer block into its consumers (see the module doc)."""
    prim = "compute_inline"
    block = block_sref.block
    scope = block_sref.scope_block()
    if scope is None:
        raise ScheduleError(prim, "the root block cannot be inlined", block)
    if block.init is not None or any(iv.iter_type != IterVarType.DATA_PAR
                                     for iv in block.iter_vars):
        raise ScheduleError(prim, "the block is a reduction block (it has an init or "
                            "non-data-parallel iteration variables); only injective blocks "
                            "can be inlined", block, hint="compute_at it instead")
    store = _single_store(prim, block, "inlined")
    buffer = store.buffer
    if id(buffer) in A.output_buffers(state, block_sref.func_name):
        raise ScheduleError(prim, f"the block writes {buffer.name!r}, an output buffer of the "
                            "function; only intermediate buffers can be inlined away", block)
    iter_vars = {id(iv.var) for iv in block.iter_vars}
    idx = list(store.indices)
    if not all(isinstance(i, Var) and id(i) in iter_vars for i in idx) or \
            len({id(i) for i in idx}) != len(idx):
        raise ScheduleError(prim, "the store's indices must be distinct iteration variables "
                            "of the block (B[v0, v1, ...] = ...)", block)
    used = {id(v) for v in free_vars(store.value)}
    missing = [iv.var.name for iv in block.iter_vars
               if id(iv.var) in used and not any(iv.var is i for i in idx)]
    if missing:
        raise ScheduleError(prim, f"the stored value uses iteration variable(s) {missing} "
                            "that are not store indices", block)
    if _reads_buffer(store.value, buffer):
        raise ScheduleError(prim, f"the block reads {buffer.name!r}, the buffer it writes",
                            block)
    for other in A.get_child_blocks(scope):
        if other is not block_sref and find_region(other.block.writes, buffer) is not None:
            raise ScheduleError(prim, f"block {other.block.name_hint!r} also writes "
                                f"{buffer.name!r}", block)
    owner = _alloc_owner(block_sref, buffer) or scope
    inliner = _Inliner(buffer, idx, store.value)
    fns: dict[int, Any] = {}
    for reader in _readers(owner, buffer, block_sref):
        fns[id(reader.block)] = inliner.visit_stmt
    if scope.parent is not None:
        fns[id(scope.block)] = _compose(fns.get(id(scope.block)), _refresh_non_root(scope))
    fns[id(owner.block)] = _drop_alloc(buffer, fns.get(id(owner.block)))
    target = state.removal_target(block_sref)
    rewrite_scope(state, owner, ScopeRewriter(removals=[removal_stmt(target)], block_fns=fns))


def _compose(first: Any, second: Any) -> Any:
    if first is None:
        return second
    return lambda b: second(first(b))


def _refresh_non_root(scope: StmtSRef) -> Any:
    def fn(b: Block) -> Block:
        return b if scope.parent is None else refresh_regions(b)

    return fn


class _LoadCollector(StmtExprVisitor):
    def __init__(self, buffer: Buffer):
        self.buffer = buffer
        self.loads: list[BufferLoad] = []

    def visit_buffer_load_(self, op: BufferLoad) -> None:
        if op.buffer is self.buffer:
            self.loads.append(op)
        for i in op.indices:
            self.visit_expr(i)


def _reads_buffer(expr: PrimExpr, buffer: Buffer) -> bool:
    collector = _LoadCollector(buffer)
    collector.visit_expr(expr)
    return bool(collector.loads)


def reverse_compute_inline(state: ScheduleState, block_sref: StmtSRef) -> None:
    """Inline a consumer block into its single producer (see the module doc)."""
    prim = "reverse_compute_inline"
    block = block_sref.block
    scope = block_sref.scope_block()
    if scope is None:
        raise ScheduleError(prim, "the root block cannot be inlined", block)
    if not A.is_complete_block(block_sref):
        raise ScheduleError(prim, "the block is not complete (a reduction, or not the only "
                            "writer of its output); only such consumers can be inlined",
                            block)
    store = _single_store(prim, block, "inlined")
    written = {}
    for child in A.get_child_blocks(scope):
        if child is not block_sref:
            for w in child.block.writes:
                written.setdefault(id(w.buffer), []).append(child)
    produced = [r.buffer for r in block.reads if id(r.buffer) in written]
    if len(produced) != 1:
        names = ", ".join(repr(b.name) for b in produced) or "none"
        raise ScheduleError(prim, f"the block must read exactly one buffer produced in its "
                            f"scope, it reads {len(produced)} ({names})", block)
    buffer = produced[0]
    writers = written[id(buffer)]
    if len(writers) != 1:
        raise ScheduleError(prim, f"buffer {buffer.name!r} has {len(writers)} writers; "
                            "the block needs a single producer", block)
    producer = writers[0]
    pblock = producer.block
    if pblock.init is not None or any(iv.iter_type != IterVarType.DATA_PAR
                                      for iv in pblock.iter_vars):
        raise ScheduleError(prim, f"the producer {pblock.name_hint!r} is a reduction block; "
                            "a consumer can only be inlined into an injective producer", block)
    pstore = _single_store(prim, pblock, "producer")
    if pstore.buffer is not buffer:
        raise ScheduleError(prim, f"the producer {pblock.name_hint!r} does not store to "
                            f"{buffer.name!r}", block)
    if id(buffer) in A.output_buffers(state, block_sref.func_name):
        raise ScheduleError(prim, f"{buffer.name!r} is an output buffer of the function", block)
    owner = _alloc_owner(block_sref, buffer) or scope
    others = [r for r in _readers(owner, buffer, block_sref) if r is not producer]
    if others:
        raise ScheduleError(prim, f"{buffer.name!r} is also read by block "
                            f"{others[0].block.name_hint!r}; the consumer must be its only "
                            "reader", block)
    collector = _LoadCollector(buffer)
    collector.visit_expr(store.value)
    loads = collector.loads
    if not loads:
        raise ScheduleError(prim, f"the stored value does not read {buffer.name!r}", block)
    idx = loads[0].indices
    if any(not structural_equal(ld.indices, idx) for ld in loads[1:]):
        raise ScheduleError(prim, f"the block reads {buffer.name!r} at different indices",
                            block)
    ivars = {id(iv.var): iv for iv in block.iter_vars}
    if not all(isinstance(i, Var) and id(i) in ivars for i in idx) or \
            len({id(i) for i in idx}) != len(idx) or len(idx) != len(block.iter_vars):
        raise ScheduleError(
            prim, f"the block must read {buffer.name!r} at its iteration variables, each once "
            f"and all of them ({buffer.name}[v0, v1, ...])", block,
        )
    from tvm.arith import Analyzer

    ana = Analyzer()
    for dim, var in enumerate(idx):
        dom = ivars[id(var)].dom
        if not (ana.can_prove(dom.min == 0) and ana.can_prove(dom.extent == buffer.shape[dim])):
            raise ScheduleError(
                prim, f"iteration variable {var.name!r} does not cover dimension {dim} of "
                f"{buffer.name!r}; the consumer must read the whole producer output", block,
            )
    vmap = dict(zip(idx, pstore.indices))

    value = _ReplaceLoads(buffer, pstore.value).visit_expr(store.value)
    new_store = BufferStore(
        store.buffer, substitute(value, vmap),
        tuple(substitute(i, vmap) for i in store.indices),
    )

    def rewrite_producer(b: Block) -> Block:
        return refresh_regions(b.with_fields(body=new_store))

    fns: dict[int, Any] = {id(pblock): rewrite_producer}
    if scope.parent is not None:
        fns[id(scope.block)] = _refresh_non_root(scope)
    fns[id(owner.block)] = _drop_alloc(buffer, fns.get(id(owner.block)))
    target = state.removal_target(block_sref)
    rewrite_scope(state, owner, ScopeRewriter(removals=[removal_stmt(target)], block_fns=fns))


class _ReplaceLoads(StmtExprMutator):
    def __init__(self, buffer: Buffer, value: PrimExpr):
        self.buffer = buffer
        self.value = value

    def visit_buffer_load_(self, op: BufferLoad) -> PrimExpr:
        if op.buffer is self.buffer:
            return self.value
        return self.generic_mutate(op)


class ComputeInlineMixin:
    """compute_inline / reverse_compute_inline methods of :class:`Schedule`."""

    @instruction("ComputeInline", inputs=("block",))
    def compute_inline(self, block: BlockRV) -> None:
        """Inline the injective producer ``block`` into its consumers."""
        compute_inline(self._state, self._block_sref(block, "compute_inline"))

    @instruction("ReverseComputeInline", inputs=("block",))
    def reverse_compute_inline(self, block: BlockRV) -> None:
        """Inline the consumer ``block`` into its single injective producer."""
        reverse_compute_inline(self._state, self._block_sref(block, "reverse_compute_inline"))
