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
* several accesses to one buffer are merged per dimension into the smallest interval when the
  bounds differ by constants, otherwise into ``min``/``max`` expressions; an index that cannot
  be bounded (a relaxed variable under a non-linear operation) covers the whole dimension.

Regions list buffers in the order of their first access.  Bounds are linear forms over the
remaining variables; a point access keeps its original index expression.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

from ..buffer import Buffer
from ..expr import (
    Add, FloorDiv, FloorMod, IntImm, Max, Min, Mul, PrimExpr, Ramp, Range, Sub, Var, const,
)
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


# ---------------------------------------------------------------------------------------
# linear forms: sum of coef * atom + const, atoms being variables or opaque expressions

class _Lin:
    __slots__ = ("terms", "const")

    def __init__(self, terms: Optional[dict] = None, const_value: int = 0):
        self.terms: dict[int, tuple[PrimExpr, int]] = terms or {}
        self.const = const_value

    def add(self, other: _Lin, scale: int = 1) -> _Lin:
        terms = dict(self.terms)
        for key, (atom, coef) in other.terms.items():
            old = terms.get(key)
            new = (old[1] if old else 0) + coef * scale
            if new:
                terms[key] = (atom, new)
            elif old:
                del terms[key]
        return _Lin(terms, self.const + other.const * scale)

    def scale(self, k: int) -> _Lin:
        if k == 0:
            return _Lin()
        return _Lin({key: (a, c * k) for key, (a, c) in self.terms.items()}, self.const * k)

    def const_diff(self, other: _Lin) -> Optional[int]:
        diff = self.add(other, -1)
        return None if diff.terms else diff.const

    def to_expr(self, dtype: str) -> PrimExpr:
        out: Optional[PrimExpr] = None
        for atom, coef in self.terms.values():
            if out is None:
                out = atom if coef == 1 else atom * coef
            elif coef == 1:
                out = out + atom
            elif coef == -1:
                out = out - atom
            elif coef < 0:
                out = out - atom * (-coef)
            else:
                out = out + atom * coef
        if out is None:
            return const(self.const, dtype)
        if self.const > 0:
            out = out + self.const
        elif self.const < 0:
            out = out - (-self.const)
        return out


class _Atoms:
    """Interns opaque sub-expressions so that equal ones share one linear-form term."""

    def __init__(self) -> None:
        self.opaque: list[tuple[PrimExpr, int]] = []

    def key(self, expr: PrimExpr) -> int:
        if isinstance(expr, Var):
            return id(expr)
        for known, key in self.opaque:
            if same_expr(known, expr):
                return key
        self.opaque.append((expr, id(expr)))
        return id(expr)

    def lin(self, expr: PrimExpr) -> _Lin:
        if isinstance(expr, IntImm):
            return _Lin(const_value=expr.value)
        if isinstance(expr, Add):
            return self.lin(expr.a).add(self.lin(expr.b))
        if isinstance(expr, Sub):
            return self.lin(expr.a).add(self.lin(expr.b), -1)
        if isinstance(expr, Mul):
            a, b = self.lin(expr.a), self.lin(expr.b)
            if not b.terms:
                return a.scale(b.const)
            if not a.terms:
                return b.scale(a.const)
        return _Lin({self.key(expr): (expr, 1)})


# ---------------------------------------------------------------------------------------
# per-dimension access bounds

class _Exact:
    """An access range with no relaxed variable: kept as written."""

    __slots__ = ("min", "extent")

    def __init__(self, min_value: PrimExpr, extent: PrimExpr):
        self.min = min_value
        self.extent = extent


class _Bounds:
    """An access range relaxed over loops: inclusive linear bounds."""

    __slots__ = ("lo", "hi")

    def __init__(self, lo: _Lin, hi: _Lin):
        self.lo = lo
        self.hi = hi


_FULL = object()  # the access may touch the whole dimension


class _Collector(StmtExprVisitor):
    def __init__(self, excluded: set[int]):
        self.excluded = excluded
        self.atoms = _Atoms()
        self.dom: dict[int, tuple[Var, Range]] = {}
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
        lo = self._bound(self.atoms.lin(min_value), upper=False)
        last = self.atoms.lin(min_value).add(self.atoms.lin(extent)).add(_Lin(const_value=-1))
        hi = self._bound(last, upper=True)
        if lo is None or hi is None:
            return _FULL
        return _Bounds(lo, hi)

    def _relaxed(self, expr: PrimExpr) -> bool:
        return uses_var(expr, lambda v: id(v) in self.dom)

    def _unlet(self, expr: PrimExpr) -> PrimExpr:
        for _ in range(len(self.lets) + 1):
            if not uses_var(expr, lambda v: id(v) in self.lets):
                break
            expr = substitute(expr, {var: value for var, value in self.lets.values()})
        return expr

    def _bound(self, lin: _Lin, upper: bool) -> Optional[_Lin]:
        """A bound of ``lin`` over the relaxed loop variables (None when unknown)."""
        out = _Lin(const_value=lin.const)
        for key, (atom, coef) in lin.terms.items():
            side_upper = upper if coef > 0 else not upper
            if key in self.dom and isinstance(atom, Var):
                rng = self.dom[key][1]
                edge = self.atoms.lin(rng.min)
                if side_upper:
                    edge = edge.add(self.atoms.lin(rng.extent)).add(_Lin(const_value=-1))
                bound = self._bound(edge, side_upper)
            elif isinstance(atom, Var) or not self._relaxed(atom):
                bound = _Lin({key: (atom, 1)})
            else:
                bound = self._bound_opaque(atom, side_upper)
            if bound is None:
                return None
            out = out.add(bound, coef)
        return out

    def _bound_opaque(self, atom: PrimExpr, upper: bool) -> Optional[_Lin]:
        divisor = atom.b if isinstance(atom, (FloorDiv, FloorMod)) else None
        if not isinstance(divisor, IntImm) or divisor.value <= 0:
            return None
        if isinstance(atom, FloorMod):
            return _Lin(const_value=divisor.value - 1 if upper else 0)
        inner = self._bound(self.atoms.lin(atom.a), upper)
        if inner is None:
            return None
        if not inner.terms:
            return _Lin(const_value=inner.const // divisor.value)
        expr = FloorDiv(inner.to_expr(atom.dtype), divisor)
        return _Lin({self.atoms.key(expr): (expr, 1)})

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
        los, his = [], []
        for item in items:
            if isinstance(item, _Exact):
                lo = self.atoms.lin(item.min)
                los.append(lo)
                his.append(lo.add(self.atoms.lin(item.extent)).add(_Lin(const_value=-1)))
            else:
                los.append(item.lo)
                his.append(item.hi)
        dtype = _index_dtype(items, buffer.shape[dim].dtype)
        lo = _extreme(los, pick_min=True)
        hi = _extreme(his, pick_min=False)
        if len(lo) == 1 and len(hi) == 1:
            return Range(lo[0].to_expr(dtype), hi[0].add(lo[0], -1).add(_Lin(const_value=1))
                         .to_expr(dtype))
        lo_expr = _fold(Min, [x.to_expr(dtype) for x in lo])
        hi_expr = _fold(Max, [x.to_expr(dtype) for x in hi])
        return Range(lo_expr, hi_expr + 1 - lo_expr)


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


def _index_dtype(items: list[Any], default: str = "int32") -> str:
    for item in items:
        if isinstance(item, _Exact):
            return item.min.dtype
    for item in items:
        for atom, _ in (*item.lo.terms.values(), *item.hi.terms.values()):
            return atom.dtype
    return default


def _extreme(lins: list[_Lin], pick_min: bool) -> list[_Lin]:
    """The candidates that may be the minimum (maximum) of ``lins``."""
    kept: list[_Lin] = []
    for lin in lins:
        dominated = False
        survivors = []
        for cand in kept:
            diff = lin.const_diff(cand)
            if diff is None:
                survivors.append(cand)
            elif (diff >= 0) == pick_min:  # lin is no better than cand
                dominated = True
                survivors.append(cand)
        if not dominated:
            survivors.append(lin)
        kept = survivors
    return kept


def _fold(cls: type, exprs: list[PrimExpr]) -> PrimExpr:
    out = exprs[0]
    for e in exprs[1:]:
        out = cls(out, e)
    return out


