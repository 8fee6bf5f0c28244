"""Reductions: one block per row reduced by a group of threads, and fused row pipelines
(softmax, layer norm).

:func:`schedule_reduction` (one reduction block): the spatial loops are fused and bound to
``blockIdx.x``; the reduction loops are fused, split by ``T`` (a power of two up to the
block size) and the inner part bound to ``threadIdx.x``, so the threads of a block reduce
one output together (a cross-thread reduction: warp shuffles or a shared-memory tree, see
LowerCrossThreadReduction).  Short reductions (fewer than a warp of iterations) or reducers
that cannot be combined across threads give one thread per output instead.

:func:`schedule_row_pipeline` (several blocks over the same rows, e.g. softmax = max, sum of
exp, normalize): the last block's row loops are bound to ``blockIdx.x`` and every earlier
block is computed at that loop, its remaining loops split by ``T`` and bound to
``threadIdx.x``; the per-row reduction results (the row max and sum) become ``local``, so
each thread keeps the all-reduced value in a register (an elementwise intermediate that
could not be inlined stays in device memory, with barriers between its writers and
readers).  The whole pipeline is one kernel.
"""

from __future__ import annotations

from typing import Any, Optional

from ...transform.lower_cross_thread_reduction import (
    CrossThreadReductionError, match_reduction_update,
)
from ..error import ScheduleError
from ..handles import BlockRV, LoopRV
from ..rules import RuleNotApplicable, block_kind, loop_extent, loop_roles
from .common import GPUParams, next_pow2
from .elementwise import schedule_elementwise

__all__ = ["schedule_reduction", "schedule_row_pipeline", "cross_thread_ok"]


def cross_thread_ok(block: Any) -> bool:
    """Whether the threads can combine partial results of the block (``+ * max min``)."""
    try:
        match_reduction_update(block)
    except CrossThreadReductionError:
        return False
    return True


def _split_roles(sch: Any, block: BlockRV) -> tuple[list[LoopRV], list[LoopRV]]:
    roles = loop_roles(sch, block)
    if any(r == "SR" for _, r in roles):
        raise RuleNotApplicable(f"a loop of block {sch.get(block).name_hint!r} drives both "
                                "spatial and reduction iterations")
    spatial = [lp for lp, r in roles if r != "R"]
    reduce = [lp for lp, r in roles if r == "R"]
    if any(a is not b for a, b in zip([lp for lp, _ in roles], spatial + reduce)):
        sch.reorder(*spatial, *reduce)
    return spatial, reduce


def _extent(sch: Any, loops: list[LoopRV]) -> Optional[int]:
    total = 1
    for lp in loops:
        e = loop_extent(sch, lp)
        if e is None:
            return None
        total *= e
    return total


def _threads_for(extent: Optional[int], params: GPUParams) -> int:
    if extent is None:
        return params.max_threads
    return max(1, min(params.max_threads, next_pow2(extent)))


def schedule_reduction(sch: Any, block: BlockRV, params: GPUParams) -> None:
    """Schedule one reduction block (see the module docstring)."""
    spatial, reduce = _split_roles(sch, block)
    if not reduce:
        raise RuleNotApplicable("no reduction loop")
    r_extent = _extent(sch, reduce)
    short = r_extent is not None and r_extent < max(params.warp_size, 32)
    if (short or not cross_thread_ok(sch.get(block))) and spatial:
        _thread_per_output(sch, spatial, params)
        return
    if not cross_thread_ok(sch.get(block)):
        raise RuleNotApplicable(f"block {sch.get(block).name_hint!r} reduces everything with "
                                "a reducer threads cannot combine")
    r = sch.fuse(*reduce) if len(reduce) > 1 else reduce[0]
    _, tx = sch.split(r, [None, _threads_for(r_extent, params)])
    sch.bind(tx, "threadIdx.x")
    if spatial:
        bx = sch.fuse(*spatial) if len(spatial) > 1 else spatial[0]
        sch.bind(bx, "blockIdx.x")


def _thread_per_output(sch: Any, spatial: list[LoopRV], params: GPUParams) -> None:
    fused = sch.fuse(*spatial) if len(spatial) > 1 else spatial[0]
    extent = loop_extent(sch, fused)
    threads = params.max_threads if extent is None else min(params.max_threads, extent)
    bx, tx = sch.split(fused, [None, threads])
    sch.bind(bx, "blockIdx.x")
    sch.bind(tx, "threadIdx.x")


def _row_loops(sch: Any, block: BlockRV, rows: int) -> list[LoopRV]:
    loops = sch.get_loops(block)
    if len(loops) < rows:
        raise RuleNotApplicable("fewer loops than row dimensions")
    return loops


def schedule_row_pipeline(sch: Any, blocks: list[BlockRV], params: GPUParams) -> None:
    """Fuse a chain of blocks over the same rows into one kernel (see the module
    docstring)."""
    if len(blocks) < 2:
        raise RuleNotApplicable("a row pipeline needs several blocks")
    reductions = [b for b in blocks[:-1] if block_kind(sch, b) == "reduction"]
    if not reductions or any(block_kind(sch, b) not in ("spatial", "reduction")
                             for b in blocks):
        raise RuleNotApplicable("not a chain of reductions and elementwise blocks")
    row_extents: Optional[list[Any]] = None
    widest = 1
    for b in reductions:
        if not cross_thread_ok(sch.get(b)):
            raise RuleNotApplicable("a reducer threads cannot combine")
        spatial, reduce = _split_roles(sch, b)
        ext = [sch.get(lp).extent for lp in spatial]
        if row_extents is None:
            row_extents = ext
        elif not _same_extents(row_extents, ext):
            raise RuleNotApplicable("the reductions do not share their rows")
        widest = max(widest, _extent(sch, reduce) or params.max_threads)
    rows = len(row_extents or [])
    if rows == 0:
        raise RuleNotApplicable("the reductions have no row loops")
    last = blocks[-1]
    if block_kind(sch, last) == "reduction":
        _split_roles(sch, last)
    loops = _row_loops(sch, last, rows)
    if not _same_extents(row_extents, [sch.get(lp).extent for lp in loops[:rows]]):
        raise RuleNotApplicable("the last block does not iterate over the same rows")
    threads = _threads_for(widest, params)
    row = sch.fuse(*loops[:rows]) if rows > 1 else loops[0]
    rest = loops[rows:]
    if rest:
        col = sch.fuse(*rest) if len(rest) > 1 else rest[0]
        _, tx = sch.split(col, [None, threads])
        sch.bind(tx, "threadIdx.x")
    sch.bind(row, "blockIdx.x")
    for b in reversed(blocks[:-1]):
        if block_kind(sch, b) == "reduction":
            # every thread gets the all-reduced row value: keep it in a register; an
            # elementwise stage shared between threads stays in (device) memory
            try:
                sch.set_scope(b, 0, "local")
            except ScheduleError:
                pass  # a function output keeps its global memory
        sch.compute_at(b, row)
        inner = sch.get_loops(b)[1:]
        if inner:
            fused = sch.fuse(*inner) if len(inner) > 1 else inner[0]
            _, tx = sch.split(fused, [None, threads])
            sch.bind(tx, "threadIdx.x")
        elif block_kind(sch, b) == "reduction":
            raise RuleNotApplicable("a reduction left without loops")


def _same_extents(a: Optional[list[Any]], b: list[Any]) -> bool:
    from tvm.ffi import structural_equal

    return a is not None and len(a) == len(b) and all(structural_equal(x, y)
                                                       for x, y in zip(a, b))


def schedule_spatial_or_reduction(sch: Any, block: BlockRV, params: GPUParams) -> None:
    """Schedule one block on its own (its own kernel)."""
    kind = block_kind(sch, block)
    if kind == "reduction":
        schedule_reduction(sch, block, params)
    elif kind == "spatial":
        schedule_elementwise(sch, block, params)
    else:
        raise RuleNotApplicable(f"block {sch.get(block).name_hint!r} has iterations that are "
                                "neither spatial nor reductions")
