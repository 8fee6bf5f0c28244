"""Access regions of a block: which parts of which buffers its body reads and writes.

:func:`infer_block_access_regions` is what fills ``T.reads``/``T.writes`` when a block does
not spell them out (TVMScript) or was generated (``te.create_prim_func``).  The rules:

* every ``BufferLoad`` is a read and every ``BufferStore`` a write, of the accessed point;
* the block's own iteration variables stay symbolic; loop variables of loops *inside* the
  block are relaxed to their ranges (``A[vi, k]`` under ``for k in range(16)`` reads
  ``A[vi, 0:16]``); let-bound variables are replaced by their values;
* a nested block contributes its own regions (computed if it has none), with its iteration
  variables replaced by their bindings;
* buffers the block (or a nested block) allocates are not listed, nor are the given
  ``alloc_buffers``; a block with an ``init`` does not list the buffers it writes as reads
  (``C[vi, vj] = C[vi, vj] + ...`` only writes ``C``);
* several accesses to one buffer are merged per dimension into the smallest interval
  containing them (:func:`tvm.arith.union`: ``min``/``max`` ends where the bounds are not
  comparable); an index that cannot be bounded (a relaxed variable under a non-linear
  operation) covers the whole dimension.

The bounds are those of :mod:`tvm.arith` (:func:`~tvm.arith.eval_set` over the loop ranges,
each loop's own range relaxed over the loops around it), in its canonical form.  Regions list
buffers in the order of their first access; a point access keeps its original index expression.
"""

from __future__ import annotations

from typing import Any, Sequence

from ..buffer import Buffer
from ..expr import IntImm, PrimExpr, Ramp, Range, Var, const
from ..expr_util import same_expr
from ..functor import StmtExprVisitor
from ..stmt import Block, BlockRealize, BufferRegion, BufferStore, DeclBuffer, For, LetStmt
from ..stmt_functor import substitute, uses_var

__all__ = ["infer_block_access_regions"]


def infer_block_access_regions(
    block: Block, alloc_buffers: Sequence[Buffer] = ()
) -> tuple[tuple[BufferRegion, ...], tuple[BufferRegion, ...]]:
    """``(reads, writes)`` of ``block`` as tuples of :class:`BufferRegion`.

    ``alloc_buffers`` are further buffers to leave out (besides ``block.alloc_buffers``).
    """
    excluded = {id(b) for b in (*block.alloc_buffers, *alloc_buffers)}
    for match in block.match_buffers:
        excluded.add(id(match.buffer))
    collector = _Collector(excluded)
    if block.init is not None:
        collector.visit_stmt(block.init)
    collector.visit_stmt(block.body)
    writes = collector.regions(collector.writes)
    skip_reads = {id(r.buffer) for r in writes} if block.init is not None else set()
    reads = collector.regions(collector.reads, skip_reads)
    return reads, writes


class _Exact:
    """An access range with no relaxed variable: kept as written."""

    __slots__ = ("min", "extent")

    def __init__(self, min_value: PrimExpr, extent: PrimExpr):
        self.min = min_value
        self.extent = extent


_FULL = object()  # the access may touch the whole dimension


class _Collector(StmtExprVisitor):
    def __init__(self, excluded: set[int]):
        from tvm.arith import Analyzer

        self.excluded = excluded
        self.analyzer = Analyzer()
        self.dom: dict[int, tuple[Var, Range]] = {}
        self._dom_cache: Any = None
        self.lets: dict[int, tuple[Var, PrimExpr]] = {}
        self.reads: dict[int, tuple[Buffer, list[list[Any]]]] = {}
        self.writes: dict[int, tuple[Buffer, list[list[Any]]]] = {}

    # -- traversal -----------------------------------------------------------------------
    def visit_for_(self, op: For) -> None:
        self.visit_expr(op.min)
        self.visit_expr(op.extent)
        self.dom[id(op.loop_var)] = (op.loop_var, Range(op.min, op.extent))
        self.visit_stmt(op.body)
        del self.dom[id(op.loop_var)]

    def visit_let_stmt_(self, op: LetStmt) -> None:
        self.visit_expr(op.value)
        self.lets[id(op.var)] = (op.var, op.value)
        self.visit_stmt(op.body)
        del self.lets[id(op.var)]

    def visit_let_(self, op: Any) -> None:
        self.visit_expr(op.value)
        self.lets[id(op.var)] = (op.var, op.value)
        self.visit_expr(op.body)
        del self.lets[id(op.var)]

    def visit_decl_buffer_(self, op: DeclBuffer) -> None:
        self.excluded.add(id(op.buffer))
        self.visit_stmt(op.body)

    def visit_buffer_load_(self, op: Any) -> None:
        self._record(self.reads, op.buffer, [_index_range(i) for i in op.indices])
        for index in op.indices:
            self.visit_expr(index)

    def visit_buffer_store_(self, op: BufferStore) -> None:
        self._record(self.writes, op.buffer, [_index_range(i) for i in op.indices])
        self.visit_expr(op.value)
        for index in op.indices:
            self.visit_expr(index)

    def visit_block_realize_(self, op: BlockRealize) -> None:
        for value in op.iter_values:
            self.visit_expr(value)
        self.visit_expr(op.predicate)
        inner = op.block
        reads, writes = inner.reads, inner.writes
        if not reads and not writes:
            reads, writes = infer_block_access_regions(inner)
        vmap = {iv.var: value for iv, value in zip(inner.iter_vars, op.iter_values)}
        for target, regions in ((self.reads, reads), (self.writes, writes)):
            for region in regions:
                ranges = [
                    (substitute(r.min, vmap), substitute(r.extent, vmap)) for r in region.region
                ]
                self._record(target, region.buffer, ranges)

    # -- recording -----------------------------------------------------------------------
    def _record(self, target: dict, buffer: Buffer, ranges: list) -> None:
        if id(buffer) in self.excluded:
            return
        dims = [self._dim(rng) for rng in ranges]
        entry = target.get(id(buffer))
        if entry is None:
            target[id(buffer)] = (buffer, [dims])
        else:
            entry[1].append(dims)

    def _dim(self, rng: Any) -> Any:
        if rng is _FULL:
            return _FULL
        min_value, extent = rng
        if self.lets:
            min_value, extent = self._unlet(min_value), self._unlet(extent)
        if not self.dom or not (self._relaxed(min_value) or self._relaxed(extent)):
            return _Exact(min_value, extent)
        from tvm.arith import IntervalSet, eval_set

        dom = self._relaxed_dom()
        last = min_value + extent - 1
        lo = eval_set(min_value, dom, self.analyzer)
        hi = eval_set(last, dom, self.analyzer)
        if not (lo.has_lower_bound() and hi.has_upper_bound()):
            return _FULL
        return IntervalSet(lo.min_value, hi.max_value)

    def _relaxed_dom(self) -> dict:
        """The loop variables' sets, each loop's range itself relaxed over the outer loops
        (``for k2 in range(k1 + 1)`` under ``for k1 in range(4)`` gives ``k2`` in ``[0, 3]``)."""
        from tvm.arith import IntervalSet, eval_set

        key = tuple(self.dom)
        if self._dom_cache is not None and self._dom_cache[0] == key:
            return self._dom_cache[1]
        dom: dict = {}
        for var, rng in self.dom.values():
            lo = eval_set(rng.min, dom, self.analyzer)
            hi = eval_set(rng.min + rng.extent - 1, dom, self.analyzer)
            dom[var] = IntervalSet(lo.min_value, hi.max_value)
        self._dom_cache = (key, dom)
        return dom

    def _relaxed(self, expr: PrimExpr) -> bool:
        return uses_var(expr, lambda v: id(v) in self.dom)

    def _unlet(self, expr: PrimExpr) -> PrimExpr:
        for _ in range(len(self.lets) + 1):
            if not uses_var(expr, lambda v: id(v) in self.lets):
                break
            expr = substitute(expr, {var: value for var, value in self.lets.values()})
        return expr

    # -- merging -------------------------------------------------------------------------
    def regions(self, accesses: dict, skip: set[int] = frozenset()) -> tuple[BufferRegion, ...]:
        out = []
        for key, (buffer, dims_list) in accesses.items():
            if key in skip:
                continue
            ranges = tuple(
                self._merge(buffer, d, [dims[d] for dims in dims_list])
                for d in range(len(buffer.shape))
            )
            out.append(BufferRegion(buffer, ranges))
        return tuple(out)

    def _merge(self, buffer: Buffer, dim: int, items: list[Any]) -> Range:
        full = Range(const(0, buffer.shape[dim].dtype), buffer.shape[dim])
        if any(item is _FULL for item in items):
            return full
        first = items[0]
        if all(isinstance(item, _Exact) for item in items) and all(
            same_expr(item.min, first.min) and same_expr(item.extent, first.extent) for item in items[1:]
        ):
            return Range(first.min, first.extent)
        from tvm.arith import IntervalSet, union

        sets = [
            item if isinstance(item, IntervalSet)
            else IntervalSet.from_range(Range(item.min, item.extent))
            for item in items
        ]
        merged = union(sets, self.analyzer)
        if merged.is_empty():  # only accesses under loops that run zero times
            return Range(sets[0].min_value, const(0, sets[0].min_value.dtype))
        return merged.to_range(self.analyzer)


def _index_range(index: PrimExpr) -> Any:
    if isinstance(index, Ramp):
        stride = index.stride
        if not isinstance(stride, IntImm):
            return _FULL
        span = stride.value * (index.lanes - 1)
        if span >= 0:
            return (index.base, const(span + 1, index.base.dtype))
        return (index.base + span, const(1 - span, index.base.dtype))
    return (index, const(1, index.dtype))
