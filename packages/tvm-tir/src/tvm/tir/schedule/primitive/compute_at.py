"""compute_at / reverse_compute_at: move a block under a loop, computing there only what is
needed there (compute_at) or what can be consumed there (reverse_compute_at).

``compute_at(B, loop)`` moves the producer ``B`` under ``loop`` of its consumers:

1. the region of ``B``'s outputs that the consumers under ``loop`` read is inferred with
   :mod:`tvm.arith` integer sets, relaxing the loops below ``loop`` (``loop`` and the loops
   around it stay symbolic);
2. each iteration variable of ``B`` that indexes an output dimension directly
   (``B[vi, vj] = ...``, or ``B[vi + c]``) iterates over the values whose access meets
   that dimension's region; the others (e.g. a reduction variable) over their whole
   domain;
3. new loops ``ax0, ax1, ...`` are generated over those ranges (a unit one only with
   ``preserve_unit_loops``), clipped to the block's domain by a predicate where the
   clipping cannot be proven unnecessary, and ``B`` is inserted before its first consumer
   in ``loop``'s body (``index=-1``; ``-2`` the earliest legal position; ``k`` the ``k``-th).

``reverse_compute_at(C, loop)`` moves a consumer ``C`` under ``loop`` of its producers.
Each iteration of ``loop`` runs the points of ``C`` whose inputs are complete once the
producers under ``loop`` have written their region of this iteration: when that region
moves up with the loop, the points whose last input (``v + c + ext - 1`` for an access
``B[v + c : v + c + ext]``) is in it, when it moves down those whose first input is, so
each point runs once and after its inputs.  If the direction is unknown, all points run
every iteration (correct, since the last iteration sees complete inputs, but slow).

Preconditions (ScheduleError otherwise): the block is complete or a reduction block, the
loop is in the same scope and does not already enclose it, all consumers of a block that
compute_at moves are under the loop (all producers of a block that reverse_compute_at
moves are under it, or finished before the loop starts: the sums of a constant computed
ahead of the kernel), and the block's producers run before (consumers after) the position
it moves to.
"""

from __future__ import annotations

from typing import Any, Optional

from ...expr import Add, IntImm, PrimExpr, Sub, Var, const
from ...expr_util import is_const_int
from ...stmt import BlockRealize, For, ForKind, Stmt
from .. import analysis as A
from ..error import ScheduleError
from ..handles import BlockRV, LoopRV
from ..instruction import instruction
from ..state import ScheduleState, StmtSRef
from ._util import (
    ScopeRewriter, block_region_in_loops, body_items, child_position, conj, find_region,
    fresh_loop_vars, loop_dom_map, loop_names, make_analyzer, program_order,
    relax_ranges, removal_stmt, rewrite_scope, subtree_end,
)

__all__ = ["compute_at", "reverse_compute_at", "ComputeAtMixin"]


def _names(srefs: list[StmtSRef]) -> str:
    return ", ".join(repr(s.block.name_hint) for s in srefs)


def _dedupe(srefs: list[StmtSRef]) -> list[StmtSRef]:
    out: list[StmtSRef] = []
    for s in srefs:
        if not any(s is o for o in out):
            out.append(s)
    return out


def _enclosing_loops(loop_sref: StmtSRef) -> list[StmtSRef]:
    out = []
    node: Optional[StmtSRef] = loop_sref
    while node is not None and node.is_loop:
        out.append(node)
        node = node.parent
    return out


def _check_location(prim: str, state: ScheduleState, block_sref: StmtSRef,
                    loop_sref: StmtSRef) -> StmtSRef:
    block = block_sref.block
    scope = block_sref.scope_block()
    if scope is None:
        raise ScheduleError(prim, "the root block cannot be moved", block)
    if loop_sref.scope_block() is not scope:
        raise ScheduleError(
            prim, "the loop is not an ancestor-compatible location: it is not in the scope "
            f"of block {scope.block.name_hint!r} that holds the block", block, loop_sref.stmt,
            hint="pick a loop of a block in the same scope",
        )
    if loop_sref.is_ancestor_of(block_sref):
        raise ScheduleError(prim, "the loop already encloses the block", block, loop_sref.stmt,
                            hint="pick a loop of one of its consumers/producers")
    if not (A.is_complete_block(block_sref) or A.is_reduction_block(block_sref)):
        raise ScheduleError(
            prim, "the block is neither complete nor a reduction block (it must have "
            "data-parallel/reduction iterations only and be the only writer of its outputs)",
            block,
        )
    written = {id(w.buffer) for w in block.writes}
    for other in A.get_child_blocks(scope):
        if other is not block_sref and any(id(w.buffer) in written for w in other.block.writes):
            raise ScheduleError(prim, f"block {other.block.name_hint!r} also writes an output "
                                "of the block", block)
    return scope


def _position(prim: str, loop_sref: StmtSRef, before: list[StmtSRef], after: list[StmtSRef],
              index: int, block: Any) -> int:
    lower = max((child_position(loop_sref, s) + 1 for s in before), default=0)
    upper = min((child_position(loop_sref, s) for s in after),
                default=len(body_items(loop_sref.loop)))
    if lower > upper:
        raise ScheduleError(
            prim, "no position in the loop's body runs after the block's producers and before "
            "its consumers", block, loop_sref.stmt,
        )
    if isinstance(index, bool) or not isinstance(index, int):
        raise ScheduleError(prim, f"index must be an int, got {index!r}", block)
    if index == -1:
        return upper
    if index == -2:
        return lower
    if not lower <= index <= upper:
        raise ScheduleError(prim, f"index {index} is not a legal position: it must be in "
                            f"[{lower}, {upper}] (or -1 for the last, -2 for the first)",
                            block, loop_sref.stmt)
    return index


def _move(state: ScheduleState, block_sref: StmtSRef, loop_sref: StmtSRef,
          preserve_unit_loops: bool, index: int, reverse: bool) -> None:
    prim = "reverse_compute_at" if reverse else "compute_at"
    block = block_sref.block
    scope = _check_location(prim, state, block_sref, loop_sref)
    order = program_order(state, block_sref.func_name)
    deps = A.block_deps(scope)
    before = _dedupe([d.src for d in deps if d.dst is block_sref and d.src is not block_sref])
    after = _dedupe([d.dst for d in deps if d.src is block_sref and d.dst is not block_sref])
    under = loop_sref.is_ancestor_of
    if not reverse:
        related = after
        if not related:
            raise ScheduleError(prim, "the block has no consumer in its scope, so nothing says "
                                "what to compute under the loop", block,
                                hint="use reverse_compute_at to move a consumer")
        outside = [c for c in related if not under(c)]
        if outside:
            raise ScheduleError(prim, f"all consumers of the block must be under the loop; "
                                f"{_names(outside)} are not", block, loop_sref.stmt)
        late = [p for p in before if not under(p) and order[id(p)] > order[id(loop_sref)]]
        if late:
            raise ScheduleError(prim, f"producer(s) {_names(late)} of the block run after the "
                                "loop", block, loop_sref.stmt)
        in_before = [p for p in before if under(p)]
        pos = _position(prim, loop_sref, in_before, related, index, block)
    else:
        related = before
        if not related:
            raise ScheduleError(prim, "the block has no producer in its scope, so nothing says "
                                "what to compute under the loop", block,
                                hint="use compute_at to move a producer")
        # producers finished before the loop starts (a constant's sums ahead of the
        # kernel's nest) are complete at every iteration; the ones under it say what to
        # compute
        late = [p for p in related if not under(p) and order[id(p)] > order[id(loop_sref)]]
        if late:
            raise ScheduleError(prim, f"all producers of the block must be under the loop or "
                                f"run before it; {_names(late)} run after it starts", block,
                                loop_sref.stmt)
        related = [p for p in related if under(p)]
        if not related:
            raise ScheduleError(prim, "no producer of the block is under the loop, so nothing "
                                "says what to compute there", block, loop_sref.stmt)
        end = subtree_end(loop_sref, order)
        early = [c for c in after if not under(c) and order[id(c)] < end]
        if early:
            raise ScheduleError(prim, f"consumer(s) {_names(early)} of the block run before "
                                "the loop ends", block, loop_sref.stmt)
        in_after = [c for c in after if under(c)]
        pos = _position(prim, loop_sref, related, in_after, index, block)

    ana = make_analyzer(_enclosing_loops(loop_sref))
    required = _required_regions(block_sref, loop_sref, related, reverse, ana)
    direction = {key: [_direction(d, loop_sref.loop.loop_var, ana) for d in dims]
                 for key, dims in required.items()}
    taken = loop_names(state, block_sref.func_name)
    realize, loops = _regenerate(prim, block_sref, required, direction, reverse,
                                 preserve_unit_loops, ana, taken)
    nest: Stmt = realize
    for var, ext in reversed(loops):
        nest = For(var, const(0, var.dtype), ext, ForKind.SERIAL, nest)
    target = state.removal_target(block_sref)
    rewriter = ScopeRewriter(removals=[removal_stmt(target)],
                             inserts={id(loop_sref.stmt): [(pos, nest)]})
    rewrite_scope(state, scope, rewriter)


def _required_regions(block_sref: StmtSRef, loop_sref: StmtSRef, related: list[StmtSRef],
                      reverse: bool, ana: Any) -> dict[int, list[Any]]:
    """``id(buffer) -> [IntervalSet per dim]``: what the related blocks under the loop read
    of the block's outputs (or write of its inputs), per iteration of the loop."""
    from tvm.arith import union

    block = block_sref.block
    own = block.reads if reverse else block.writes
    per_buffer: dict[int, list[list[Any]]] = {}
    for other in related:
        regions = other.block.writes if reverse else other.block.reads
        inner = [s for s in A.get_loops(other) if loop_sref.is_ancestor_of(s)]
        for mine in own:
            region = find_region(regions, mine.buffer)
            if region is None:
                continue
            ranges = block_region_in_loops(other, region)
            sets = relax_ranges(ranges, loop_dom_map(inner), ana)
            per_buffer.setdefault(id(mine.buffer), []).append(sets)
    return {key: [union(list(dims), ana) for dims in zip(*lists)]
            for key, lists in per_buffer.items()}


def _regenerate(prim: str, block_sref: StmtSRef, required: dict[int, list[Any]],
                direction: dict[int, list[Optional[int]]], reverse: bool,
                preserve_unit_loops: bool, ana: Any, taken: set[str]
                ) -> tuple[BlockRealize, list[tuple[Var, PrimExpr]]]:
    """The block's new BlockRealize and the loops ``(var, extent)`` to create around it."""
    from tvm.arith import union

    block = block_sref.block
    own = block.reads if reverse else block.writes
    loops: list[tuple[Var, PrimExpr]] = []
    values: list[PrimExpr] = []
    preds: list[PrimExpr] = []
    for iv in block.iter_vars:
        cands = []
        for region in own:
            sets = required.get(id(region.buffer))
            if sets is None:
                continue
            for dim, rng in enumerate(region.region):
                c = _offset(rng.min, iv.var)
                if c is None or not isinstance(rng.extent, IntImm):
                    split = _split_dim_set(region.region, dim, sets, iv.var, ana)
                    if split is not None:
                        cands.append(split)
                    continue
                cands.append(_iteration_set(sets[dim], c, rng.extent.value, reverse,
                                            direction[id(region.buffer)][dim], ana))
        dom_lo = iv.dom.min
        dom_hi = ana.simplify(iv.dom.min + iv.dom.extent - 1)
        s = union(cands, ana) if cands else None
        if s is None or not s.is_bounded() or s.is_empty():
            lo, hi = dom_lo, dom_hi
        else:
            lo, hi = _clip_const(s.min_value, dom_lo, True), _clip_const(s.max_value, dom_hi,
                                                                        False)
        extent = ana.simplify(hi - lo + 1)
        exact_hi = True
        if not isinstance(extent, IntImm):
            bound = ana.const_int_bound(extent).max_value
            dom_ext = iv.dom.extent
            if isinstance(dom_ext, IntImm) and bound <= dom_ext.value:
                extent, exact_hi = const(bound, extent.dtype), False
            else:
                lo, hi, extent = dom_lo, dom_hi, iv.dom.extent
        elif extent.value <= 0:
            raise ScheduleError(prim, f"the region of iteration variable {iv.var.name!r} under "
                                "the loop is empty", block)
        if is_const_int(extent, 1) and not preserve_unit_loops:
            value = lo
        else:
            var = fresh_loop_vars(1, iv.var.dtype, taken)[0]
            loops.append((var, extent))
            ana.bind(var, _range(extent), allow_override=True)
            value = var if is_const_int(lo, 0) else lo + var
        if not exact_hi:
            preds.append(value <= hi)
        if not ana.can_prove(lo >= dom_lo):
            preds.append(value >= dom_lo)
        if not ana.can_prove(hi <= dom_hi):
            preds.append(value <= dom_hi)
        values.append(value)
    pred = conj([ana.simplify(p) for p in preds])
    return BlockRealize(tuple(values), pred, block), loops


def _offset(index: PrimExpr, var: Var) -> Optional[int]:
    """``c`` when ``index`` is ``var + c`` (``c`` a constant), else None."""
    if index is var:
        return 0
    if isinstance(index, (Add, Sub)) and index.a is var and isinstance(index.b, IntImm):
        return index.b.value if isinstance(index, Add) else -index.b.value
    if isinstance(index, Add) and index.b is var and isinstance(index.a, IntImm):
        return index.a.value
    return None


def _split_dim_set(region: Any, dim: int, sets: list[Any], var: Var, ana: Any) -> Any:
    """The values of ``var`` to run when dimension ``dim`` is accessed at ``var // k`` (a
    layout-transformed buffer: ``B[v // k, ..., v % k]``) and ``sets[dim]`` is needed or
    provided there: ``[lo * k, hi * k + k - 1]``.  Exact only if every ``var % k`` dimension
    of the region covers all of ``[0, k)``; None otherwise (or for any other index form)."""
    from tvm.arith import IntervalSet

    from ...expr import FloorDiv, FloorMod
    from ...stmt_functor import uses_var

    rng = region[dim]
    index = rng.min
    if not (isinstance(index, FloorDiv) and index.a is var and isinstance(index.b, IntImm)
            and is_const_int(rng.extent, 1) and index.b.value > 0):
        return None
    k = index.b.value
    s = sets[dim]
    if not s.is_bounded():
        return None
    for other, (r, t) in enumerate(zip(region, sets)):
        m = r.min
        if other == dim or not uses_var(m, lambda v: v is var):
            continue
        if not (isinstance(m, FloorMod) and m.a is var and isinstance(m.b, IntImm)
                and m.b.value == k and t.is_bounded() and ana.can_prove(t.min_value <= 0)
                and ana.can_prove(t.max_value >= k - 1)):
            return None
    return IntervalSet(ana.simplify(s.min_value * k), ana.simplify(s.max_value * k + (k - 1)))


def _direction(s: Any, var: Var, ana: Any) -> Optional[int]:
    """How the region ``s`` moves as ``var`` grows: 1 up, -1 down, 0 not at all, None
    unknown."""
    from tvm.arith import detect_linear_equation

    if not s.is_bounded():
        return None
    coeffs = detect_linear_equation(s.min_value, [var], ana)
    if not coeffs or not isinstance(coeffs[0], IntImm):
        return None
    return (coeffs[0].value > 0) - (coeffs[0].value < 0)


def _iteration_set(s: Any, c: int, ext: int, reverse: bool, direction: Optional[int],
                   ana: Any) -> Any:
    """The values of ``v`` to run when the block accesses ``[v + c, v + c + ext)`` and the
    related blocks need (compute_at) or provide (reverse_compute_at) ``s`` here.

    compute_at runs every ``v`` whose access meets ``s``.  reverse_compute_at runs the
    ``v`` whose inputs are complete once ``s`` is provided: when the provided regions move
    up with the loop, those whose last input ``v + c + ext - 1`` is in ``s`` (moving down:
    whose first input ``v + c``), so that each ``v`` runs once, after all its inputs; when
    the direction is unknown, all of them, every iteration."""
    from tvm.arith import IntervalSet

    if not s.is_bounded() or (reverse and direction is None):
        return IntervalSet.everything()
    if not reverse:
        return IntervalSet(ana.simplify(s.min_value - (c + ext - 1)),
                           ana.simplify(s.max_value - c))
    shift = c if direction < 0 else c + ext - 1
    return IntervalSet(ana.simplify(s.min_value - shift), ana.simplify(s.max_value - shift))


def _range(extent: PrimExpr) -> Any:
    from ...expr import Range

    return Range(const(0, extent.dtype), extent)


def _clip_const(value: PrimExpr, bound: PrimExpr, lower: bool) -> PrimExpr:
    """``max(value, bound)`` (lower) / ``min(value, bound)`` when both are constants."""
    if isinstance(value, IntImm) and isinstance(bound, IntImm):
        v = max(value.value, bound.value) if lower else min(value.value, bound.value)
        return const(v, value.dtype)
    return value


def compute_at(state: ScheduleState, block_sref: StmtSRef, loop_sref: StmtSRef,
               preserve_unit_loops: bool = False, index: int = -1) -> None:
    """Move a producer block under ``loop_sref`` (see the module doc)."""
    _move(state, block_sref, loop_sref, preserve_unit_loops, index, reverse=False)


def reverse_compute_at(state: ScheduleState, block_sref: StmtSRef, loop_sref: StmtSRef,
                       preserve_unit_loops: bool = False, index: int = -1) -> None:
    """Move a consumer block under ``loop_sref`` (see the module doc)."""
    _move(state, block_sref, loop_sref, preserve_unit_loops, index, reverse=True)


class ComputeAtMixin:
    """compute_at / reverse_compute_at methods of :class:`Schedule`."""

    @instruction("ComputeAt", inputs=("block", "loop"),
                 attrs=("preserve_unit_loops", "index"))
    def compute_at(self, block: BlockRV, loop: LoopRV, preserve_unit_loops: bool = False,
                   index: int = -1) -> None:
        """Compute the producer ``block`` under ``loop``, only the region its consumers
        there need.  ``loop`` may be the root/inline marks of sample_compute_location."""
        sref = self._block_sref(block, "compute_at")
        loop_sref = self._loop_sref(loop, "compute_at", allow_marks=True)
        if loop_sref.mark == "root":
            return
        if loop_sref.mark == "inline":
            from .compute_inline import compute_inline

            compute_inline(self._state, sref)
            return
        compute_at(self._state, sref, loop_sref, preserve_unit_loops, index)

    @instruction("ReverseComputeAt", inputs=("block", "loop"),
                 attrs=("preserve_unit_loops", "index"))
    def reverse_compute_at(self, block: BlockRV, loop: LoopRV,
                           preserve_unit_loops: bool = False, index: int = -1) -> None:
        """Compute the consumer ``block`` under ``loop``, the region its producers there
        write.  ``loop`` may be the root/inline marks of sample_compute_location."""
        sref = self._block_sref(block, "reverse_compute_at")
        loop_sref = self._loop_sref(loop, "reverse_compute_at", allow_marks=True)
        if loop_sref.mark == "root":
            return
        if loop_sref.mark == "inline":
            from .compute_inline import reverse_compute_inline

            reverse_compute_inline(self._state, sref)
            return
        reverse_compute_at(self._state, sref, loop_sref, preserve_unit_loops, index)
