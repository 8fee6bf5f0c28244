"""Helpers shared by the block-level primitives (cache, compute_at, inline, reduction, ...).

* :class:`ScopeRewriter` rebuilds a scope block in one pass: statements removed, new
  statements inserted at positions of a loop's or block's body, blocks rewritten by a
  function; it records ``{old Block: new Block}`` for :meth:`ScheduleState.replace`.
* region helpers: the region a block accesses, expressed in loop variables
  (:func:`block_region_in_loops`) and relaxed over some loops (:func:`relax_ranges`).
* :class:`BufferReplacer` swaps buffers (and optionally rewrites their indices) in loads,
  stores, regions and allocations.
* :func:`copy_nest` makes the loop nest + block copying a region of one buffer to another
  (cache_read / cache_write / pad_einsum).
"""

from __future__ import annotations

import re
from typing import Any, Callable, Optional, Sequence

from ...analysis.block_region import infer_block_access_regions
from ...buffer import Buffer, decl_buffer
from ...expr import (
    BufferLoad, IntImm, IterVar, IterVarType, PrimExpr, Range, Var, const,
)
from ...expr_util import is_const_int
from ...functor import StmtExprMutator, StmtExprVisitor
from ...stmt import Block, BlockRealize, BufferRegion, BufferStore, For, ForKind, SeqStmt, Stmt
from ...stmt_functor import substitute
from .. import analysis as A
from ..error import ScheduleError
from ..state import ScheduleState, StmtSRef

__all__ = [
    "ScopeRewriter", "rewrite_scope", "body_items", "child_position", "removal_stmt",
    "block_names", "unique_block_name", "check_storage_scope", "BufferReplacer",
    "block_region_in_loops", "relax_ranges", "clip_to_shape", "loop_dom_map", "copy_nest",
    "new_buffer_like", "find_region", "make_analyzer", "conj",
    "program_order", "lowest_common_ancestor", "refresh_regions", "loop_names",
    "fresh_loop_vars",
]


# -- small expression helpers ---------------------------------------------------------------
def is_true(e: Any) -> bool:
    return isinstance(e, IntImm) and e.dtype == "bool" and e.value == 1


def conj(conds: Sequence[PrimExpr]) -> PrimExpr:
    """``a and b and ...`` (``True`` when empty)."""
    out: Optional[PrimExpr] = None
    for c in conds:
        if is_true(c):
            continue
        out = c if out is None else out & c
    return out if out is not None else const(True, "bool")


def make_analyzer(loop_srefs: Sequence[StmtSRef] = ()) -> Any:
    """An Analyzer that knows the ranges of the given loops."""
    from tvm.arith import Analyzer

    ana = Analyzer()
    for s in loop_srefs:
        loop = s.loop
        ana.bind(loop.loop_var, Range(loop.min, loop.extent), allow_override=True)
    return ana


# -- the body of a loop or block as a list --------------------------------------------------
def body_items(stmt: Stmt) -> list[Stmt]:
    """The statements of a For's or Block's body (a SeqStmt flattened)."""
    body = stmt.body  # type: ignore[attr-defined]
    return list(body.seq) if isinstance(body, SeqStmt) else [body]


class _Contains(StmtExprVisitor):
    def __init__(self, target: Stmt):
        self.target = target
        self.found = False

    def visit_expr(self, expr: Any) -> None:
        return None

    def visit_stmt(self, stmt: Stmt) -> None:
        if self.found:
            return
        if stmt is self.target:
            self.found = True
            return
        super().visit_stmt(stmt)


def child_position(loc: StmtSRef, sref: StmtSRef) -> int:
    """Index of the item of ``loc``'s body (loop or block) that contains ``sref``."""
    below = sref
    while below.parent is not None and below.parent is not loc:
        below = below.parent
    if below.parent is not loc:
        raise ValueError(f"{sref!r} is not under {loc!r}")
    items = body_items(loc.stmt)  # type: ignore[arg-type]
    for k, item in enumerate(items):
        if item is below.stmt or (isinstance(item, BlockRealize) and item.block is below.stmt):
            return k
    for k, item in enumerate(items):
        finder = _Contains(below.stmt)  # type: ignore[arg-type]
        finder.visit_stmt(item)
        if finder.found:
            return k
    raise ValueError(f"{sref!r} not found in the body of {loc!r}")


def removal_stmt(sref: StmtSRef) -> Stmt:
    """The statement to delete for an sref: a block's BlockRealize, or the loop."""
    return sref.realize if sref.is_block else sref.stmt  # type: ignore[return-value]


def program_order(state: ScheduleState, func_name: str) -> dict[int, int]:
    """``id(sref) -> pre-order index`` over the function."""
    return {id(s): k for k, s in enumerate(state.iter_srefs(func_name))}


def subtree_end(sref: StmtSRef, order: dict[int, int]) -> int:
    """The largest pre-order index inside ``sref``'s subtree."""
    last = sref
    while last.children:
        last = last.children[-1]
    return order[id(last)]


def lowest_common_ancestor(srefs: Sequence[StmtSRef]) -> StmtSRef:
    """The deepest sref enclosing all of ``srefs`` (strictly, for each one)."""
    chains = [list(reversed(list(s.ancestors()))) for s in srefs]
    common = None
    for level in zip(*chains):
        if all(x is level[0] for x in level):
            common = level[0]
        else:
            break
    if common is None:
        raise ValueError("the srefs have no common ancestor")
    return common


# -- rebuilding a scope ---------------------------------------------------------------------
class ScopeRewriter(StmtExprMutator):
    """One pass over a scope block applying removals, insertions and block rewrites.

    ``removals``: statements to delete; ``replacements``: ``{id(old stmt): new stmt}``;
    ``inserts``: ``{id(For or Block): [(pos, stmt), ...]}`` inserting before the ``pos``-th
    item of the original body (``pos == len(items)`` appends); ``block_fns``:
    ``{id(Block): fn(block) -> Block}`` applied after the block's children were rewritten.
    ``reuse`` collects ``{old Block: new Block}``.
    """

    def __init__(self, removals: Sequence[Stmt] = (),
                 inserts: Optional[dict[int, list[tuple[int, Stmt]]]] = None,
                 block_fns: Optional[dict[int, Callable[[Block], Block]]] = None,
                 replacements: Optional[dict[int, Stmt]] = None):
        self.removals = {id(s) for s in removals}
        self.replacements = replacements or {}
        self.inserts = inserts or {}
        self.block_fns = block_fns or {}
        self.reuse: dict[Block, Block] = {}
        self.primitive = "rewrite"  # set by rewrite_scope, for error messages
        # ids of the Blocks and Fors that enclose a change (None: visit everything); a
        # subtree outside it is returned as it is, so a change costs its depth, not the
        # size of the scope
        self.touched: Optional[set[int]] = None

    def targets(self) -> list[int]:
        """Ids of every statement the rewriter changes or owns a change of."""
        return [*self.removals, *self.replacements, *self.inserts, *self.block_fns]

    def visit_expr(self, expr: Any) -> Any:
        return expr

    def visit_buffer(self, buffer: Any) -> Any:
        return buffer

    def visit_stmt(self, stmt: Stmt) -> Any:
        if id(stmt) in self.removals:
            return None
        if id(stmt) in self.replacements:
            return self.replacements[id(stmt)]
        touched = self.touched
        if touched is not None:
            key = id(stmt.block) if isinstance(stmt, BlockRealize) else id(stmt)
            if isinstance(stmt, (For, Block, BlockRealize)) and key not in touched:
                return stmt
        return super().visit_stmt(stmt)

    def visit_seq_stmt_(self, op: SeqStmt) -> Any:
        items = [self.visit_stmt(s) for s in op.seq]
        if all(a is b for a, b in zip(items, op.seq)):
            return op
        return _seq([s for s in items if s is not None])

    def _body(self, owner: Stmt, body: Stmt) -> Any:
        ins = self.inserts.get(id(owner))
        if not ins:
            return self.visit_stmt(body)
        items = list(body.seq) if isinstance(body, SeqStmt) else [body]
        out: list[Stmt] = []
        for k in range(len(items) + 1):
            out.extend(s for pos, s in ins if pos == k)
            if k < len(items):
                new = self.visit_stmt(items[k])
                if new is not None:
                    out.append(new)
        return _seq(out)

    def visit_for_(self, op: For) -> Any:
        body = self._body(op, op.body)
        if body is None:
            return None  # an emptied loop goes too
        return op if body is op.body else op.with_fields(body=body)

    def visit_block_(self, op: Block) -> Any:
        body = self._body(op, op.body)
        if body is None:
            raise ScheduleError(self.primitive, "the block would be left empty: it holds nothing "
                                "but the statement being removed", op)
        init = self.visit_stmt(op.init) if op.init is not None else None
        new = op if body is op.body and init is op.init else op.with_fields(body=body, init=init)
        fn = self.block_fns.get(id(op))
        if fn is not None:
            new = fn(new)
        if new is not op:
            self.reuse[op] = new
        return new

    def visit_block_realize_(self, op: BlockRealize) -> Any:
        block = self.visit_stmt(op.block)
        if block is None:
            return None
        return op if block is op.block else op.with_fields(block=block)


def _seq(items: list[Stmt]) -> Optional[Stmt]:
    flat: list[Stmt] = []
    for s in items:
        flat.extend(s.seq if isinstance(s, SeqStmt) else [s])
    if not flat:
        return None
    return flat[0] if len(flat) == 1 else SeqStmt(tuple(flat))


def rewrite_scope(state: ScheduleState, scope: StmtSRef, rewriter: ScopeRewriter,
                  extra_reuse: Optional[dict[Block, Block]] = None) -> Block:
    """Apply ``rewriter`` to the scope block and commit it; returns the new scope block."""
    old = scope.block
    rewriter.primitive = state.current_primitive
    rewriter.touched = _enclosing(state, scope, rewriter.targets())
    new = rewriter.visit_stmt(old)
    reuse = dict(rewriter.reuse)
    reuse.update(extra_reuse or {})
    if new is not old:
        reuse[old] = new
        state.replace({old: new}, block_reuse=reuse, func_name=scope.func_name)
    return new


def _enclosing(state: ScheduleState, scope: StmtSRef, targets: list[int]) -> Optional[set[int]]:
    """Ids of the Blocks and Fors from each target (a statement id) up to ``scope``, or
    None when a target is not a Block, For or BlockRealize of the scope (then the rewriter
    visits everything)."""
    index = state._func_index(scope.func_name).by_id
    realizes: Optional[dict[int, StmtSRef]] = None
    out: set[int] = {id(scope.stmt)}
    for target in targets:
        sref = index.get(target)
        if sref is None:
            if realizes is None:
                realizes = {id(s.realize): s for s in scope_srefs(scope)
                            if s.realize is not None}
            sref = realizes.get(target)
        if sref is None or not (sref is scope or scope.is_ancestor_of(sref)):
            return None
        node: Optional[StmtSRef] = sref
        while node is not None and id(node.stmt) not in out:
            out.add(id(node.stmt))
            node = node.parent
    return out


def scope_srefs(scope: StmtSRef) -> list[StmtSRef]:
    """The srefs under ``scope`` (blocks and loops, not entering nested blocks' bodies
    beyond their own sref)."""
    out: list[StmtSRef] = []
    stack = list(scope.children)
    while stack:
        s = stack.pop()
        out.append(s)
        stack.extend(s.children)
    return out


# -- naming and scopes ----------------------------------------------------------------------
def loop_names(state: ScheduleState, func_name: str) -> set[str]:
    """Names of the loop variables of the function."""
    return {s.loop.loop_var.name for s in state.iter_srefs(func_name) if s.is_loop}


def fresh_loop_vars(n: int, dtype: str, taken: set[str], prefix: str = "ax") -> list[Var]:
    """``n`` loop variables ``ax<k>`` whose names no loop of the function uses yet (equal
    names would make the order of terms in simplified expressions arbitrary)."""
    out = []
    k = 0
    while len(out) < n:
        name = f"{prefix}{k}"
        k += 1
        if name not in taken:
            taken.add(name)
            out.append(Var(name, dtype))
    return out


def block_names(state: ScheduleState, func_name: str) -> set[str]:
    return {s.block.name_hint for s in state.iter_srefs(func_name) if s.is_block}


def unique_block_name(state: ScheduleState, func_name: str, base: str,
                      taken: Sequence[str] = ()) -> str:
    """``base``, or ``base_1``, ``base_2`` ... when a block of the function has that name."""
    names = block_names(state, func_name) | set(taken)
    if base not in names:
        return base
    k = 1
    while f"{base}_{k}" in names:
        k += 1
    return f"{base}_{k}"


_SCOPE_RANKS = ("global", "shared", "local", "warp", "wmma", "texture", "metal")
_SCOPE_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z0-9_]+)*$")


def check_storage_scope(primitive: str, scope: Any, *subjects: Any) -> str:
    if not isinstance(scope, str) or not _SCOPE_RE.match(scope) \
            or scope.split(".")[0] not in _SCOPE_RANKS:
        raise ScheduleError(
            primitive, f"invalid storage scope {scope!r}", *subjects,
            hint="use global, shared, shared.dyn, local, warp, wmma.* or global.texture",
        )
    return scope


def new_buffer_like(buffer: Buffer, name: str, scope: Optional[str] = None,
                    shape: Optional[Sequence[Any]] = None, dtype: Optional[str] = None) -> Buffer:
    """A fresh compact buffer (new data variable) with ``buffer``'s dtype and shape."""
    return decl_buffer(
        tuple(buffer.shape) if shape is None else tuple(shape),
        dtype or buffer.dtype, name,
        scope=scope if scope is not None else buffer.scope,
    )


# -- buffer replacement ----------------------------------------------------------------------
class BufferReplacer(StmtExprMutator):
    """Swaps buffers by identity everywhere (loads, stores, regions, allocations, matches).

    ``index_fn(old_buffer, indices) -> indices`` rewrites the indices of accesses to the
    replaced buffers; ``region_fn(old_buffer, ranges) -> ranges`` the declared regions.
    Rebuilt blocks are recorded in ``reuse``.
    """

    def __init__(self, buffer_map: dict[int, Buffer],
                 index_fn: Optional[Callable[[Buffer, tuple], tuple]] = None,
                 region_fn: Optional[Callable[[Buffer, tuple], tuple]] = None):
        self.buffer_map = buffer_map
        self.index_fn = index_fn
        self.region_fn = region_fn
        self.reuse: dict[Block, Block] = {}

    def visit_buffer(self, buffer: Buffer) -> Buffer:
        return self.buffer_map.get(id(buffer), buffer)

    def _indices(self, old: Buffer, indices: tuple) -> tuple:
        indices = tuple(self.visit_expr(i) for i in indices)
        if self.index_fn is not None and id(old) in self.buffer_map:
            indices = tuple(self.index_fn(old, indices))
        return indices

    def visit_buffer_load_(self, op: BufferLoad) -> PrimExpr:
        indices = self._indices(op.buffer, op.indices)
        buffer = self.visit_buffer(op.buffer)
        if buffer is op.buffer and all(a is b for a, b in zip(indices, op.indices)):
            return op
        return BufferLoad(buffer, indices, span=op.span)

    def visit_buffer_store_(self, op: BufferStore) -> Stmt:
        value = self.visit_expr(op.value)
        indices = self._indices(op.buffer, op.indices)
        buffer = self.visit_buffer(op.buffer)
        if buffer is op.buffer and value is op.value and \
                all(a is b for a, b in zip(indices, op.indices)):
            return op
        return BufferStore(buffer, value, indices, span=op.span)

    def visit_buffer_region_(self, op: BufferRegion) -> BufferRegion:
        buffer = self.visit_buffer(op.buffer)
        if buffer is op.buffer:
            return op
        region = op.region
        if self.region_fn is not None:
            region = tuple(self.region_fn(op.buffer, region))
        return BufferRegion(buffer, region)

    def visit_block_(self, op: Block) -> Stmt:
        new = self.generic_mutate(op)
        if new is not op:
            self.reuse[op] = new
        return new


# -- regions ---------------------------------------------------------------------------------
def find_region(regions: Sequence[BufferRegion], buffer: Buffer) -> Optional[BufferRegion]:
    for r in regions:
        if r.buffer is buffer:
            return r
    return None


def block_region_in_loops(block_sref: StmtSRef, region: BufferRegion) -> list[tuple[PrimExpr,
                                                                                    PrimExpr]]:
    """``[(min, extent)]`` of a region of the block with its iteration variables replaced by
    their bindings (so in terms of loop variables)."""
    realize = A.get_block_realize(block_sref)
    vmap = {iv.var: v for iv, v in zip(realize.block.iter_vars, realize.iter_values)}
    return [(substitute(r.min, vmap), substitute(r.extent, vmap)) for r in region.region]


def loop_dom_map(loop_srefs: Sequence[StmtSRef]) -> dict[Var, Range]:
    return {s.loop.loop_var: Range(s.loop.min, s.loop.extent) for s in loop_srefs}


def relax_ranges(ranges: Sequence[tuple[PrimExpr, PrimExpr]], dom_map: dict[Var, Range],
                 ana: Any) -> list[Any]:
    """IntervalSets of each dimension when the ``dom_map`` variables range over their
    domains (the other variables stay symbolic)."""
    from tvm.arith import IntervalSet, eval_set

    out = []
    for lo, ext in ranges:
        if is_const_int(ext, 1):
            s = eval_set(lo, dom_map, ana)
        else:
            lo_set = eval_set(lo, dom_map, ana)
            hi_set = eval_set(lo + ext - 1, dom_map, ana)
            s = IntervalSet(lo_set.min_value, hi_set.max_value)
        out.append(s)
    return out


def clip_to_shape(sets: Sequence[Any], buffer: Buffer, ana: Any) -> list[Range]:
    """Ranges of the sets clipped to the buffer's shape (an unbounded set: the whole
    dimension)."""
    out = []
    for s, dim in zip(sets, buffer.shape):
        if not s.is_bounded():
            out.append(Range(const(0, dim.dtype), dim))
            continue
        lo, hi = s.min_value, s.max_value
        if not ana.can_prove(lo >= 0):
            lo = ana.simplify(_max(lo, const(0, lo.dtype)))
        if not ana.can_prove(hi < dim):
            hi = ana.simplify(_min(hi, dim - 1))
        out.append(Range(lo, ana.simplify(hi - lo + 1)))
    return out


def _max(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    from ...op import max as tmax

    return tmax(a, b)


def _min(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    from ...op import min as tmin

    return tmin(a, b)


def refresh_regions(block: Block) -> Block:
    """The block with its reads/writes recomputed from its body."""
    reads, writes = infer_block_access_regions(block)
    if _same_regions(reads, block.reads) and _same_regions(writes, block.writes):
        return block
    return block.with_fields(reads=reads, writes=writes)


def _same_regions(a: Sequence[BufferRegion], b: Sequence[BufferRegion]) -> bool:
    from tvm.ffi import structural_equal

    return len(a) == len(b) and all(
        x.buffer is y.buffer and structural_equal(x.region, y.region) for x, y in zip(a, b)
    )


# -- a copy nest --------------------------------------------------------------------------------
def copy_nest(src: Buffer, dst: Buffer, region: Sequence[Range], name: str,
              value_fn: Optional[Callable[[list[Var]], PrimExpr]] = None,
              taken_names: Optional[set[str]] = None) -> tuple[Stmt, Block]:
    """``for ax0, ax1 ...: block name: dst[v] = src[v]`` over ``region`` (one loop per
    dimension, ``v_k = region[k].min + ax_k``, the block variables ranging over ``dst``'s
    shape).  Returns ``(loop nest, block)``.

    ``value_fn(vars)`` replaces the stored value; ``taken_names`` are the loop names to
    avoid (the function's)."""
    taken = set(taken_names or ())
    loop_vars = [fresh_loop_vars(1, r.extent.dtype, taken)[0] for r in region]
    block_vars = [Var(f"v{k}", r.extent.dtype) for k, r in enumerate(region)]
    iter_vars = tuple(
        IterVar(Range(const(0, ext.dtype), ext), v, IterVarType.DATA_PAR)
        for v, ext in zip(block_vars, dst.shape)
    )
    value = value_fn(block_vars) if value_fn else BufferLoad(src, tuple(block_vars))
    block = refresh_regions(Block(iter_vars, (), (), name,
                                  BufferStore(dst, value, tuple(block_vars))))
    bindings = tuple(v if is_const_int(r.min, 0) else r.min + v for v, r in zip(loop_vars, region))
    body: Stmt = BlockRealize(bindings, True, block)
    for var, r in reversed(list(zip(loop_vars, region))):
        body = For(var, const(0, var.dtype), r.extent, ForKind.SERIAL, body)
    return body, block
