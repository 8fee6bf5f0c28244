"""Multi-level tiling for GPUs: the design space of a contraction (matmul, batched matmul,
convolution) on CUDA, OpenCL and Metal.

Tile structure ``"SSSRRSRS"``: every spatial loop is split into five sampled levels and every
reduction loop into three (``sch.sample_perfect_tile``)::

    S0 -> blockIdx.x     (the output tile of a thread block)
    S1                   (sub-tiles of a thread: TVM's vthread level, see below)
    S2 -> threadIdx.x    (the threads of the block)
    R0                   (reduction steps; each stages both operands in shared memory)
    R1, S3, R2, S4       (per-thread register tile, reduction steps inside it)

Each level's loops (one per spatial or reduction loop of the block) are fused where bound.
The operands are copied into ``shared`` buffers computed at the outermost ``R0`` loop; the
copy's loops are fused, split by the thread count of the block and a sampled vector length
(``sch.sample_categorical``) and bound to ``threadIdx.x`` (a cooperative fetch). The result
accumulates in a ``local`` write cache that is copied back per block, each thread writing
its own sub-tile (or, when the block's only consumer is elementwise, through that consumer:
a bias add or activation is computed on the registers).  The accumulator's init is
decomposed out of the reduction (``decompose_reduction`` at ``R0``: each thread zeroes its
registers once).  The kernel's unroll limit is sampled too and applied by the
RewriteUnrollGPU postprocessor.

Where the loops go, and how this differs from TVM: the kernel is ``S0 R0 S2 S1 R1 S3 R2
S4``.  ``compute_at`` here does not relax thread-bound loops for shared buffers (TVM's
does), so a copy computed under the ``threadIdx`` loop would stage one thread's region
only; with ``R0`` above the threads the copy covers the block's tile (a thread-bound loop
is not a real loop: the threads run ``R0`` in step, separated by barriers).  ``S1`` is not
bound to ``vthread``: virtual threads lower to serial loops, and CompactBufferAllocation
keeps a ``local`` buffer out of serial loops, so strided virtual-thread sub-tiles would
size each thread's accumulator to their bounding box.  Instead ``S1`` is a serial loop
inside the thread loop whose sub-tiles are adjacent (the index order of a spatial loop is
``S0 S2 S1 S3 S4``): the accumulator is exactly ``S1*S3*S4`` per dimension, and the
whole register tile can be unrolled (constant register indices).

The thread count (the product of the ``S2`` factors) is sampled like any other factor; a
candidate over the target's threads or shared memory is rejected by the VerifyGPUCode
postprocessor.
"""

from __future__ import annotations

import functools
import operator
import random
from typing import Any, Sequence

from tvm.tir.schedule.rules import (
    RuleNotApplicable, ScheduleRule, block_kind, claim, is_output_block, loop_extent,
    loop_roles,
)
from tvm.tir.schedule.sampling import sample_perfect_tile_factors
from tvm.tir.stmt import BufferStore

from ..postproc.rewrite_unroll_gpu import UNROLL_KEY
from .auto_bind import in_kernel

__all__ = ["MultiLevelTilingGPU", "bind_tile_to_threads", "cooperative_fetch"]


def _product(values: Sequence[Any]) -> Any:
    return functools.reduce(operator.mul, values)


def _loops_under(sch: Any, block: Any, anchor: Any) -> list[Any]:
    """The loops of ``block`` below ``anchor`` (a loop enclosing it)."""
    loops = sch.get_loops(block)
    anchor_stmt = sch.get(anchor)
    stmts = [sch.get(lp) for lp in loops]
    idx = next((k for k, s in enumerate(stmts) if s is anchor_stmt), None)
    if idx is None:
        raise RuleNotApplicable("the anchor loop does not enclose the block")
    return loops[idx + 1:]


def cooperative_fetch(sch: Any, block: Any, anchor: Any, threads: Any,
                      vector_lens: Sequence[int]) -> None:
    """Spread a copy block computed at ``anchor`` over the ``threads`` (an int or a sampled
    value) of the thread block: its loops are fused, split ``[None, threads, vec]`` with
    ``vec`` sampled from ``vector_lens``, bound to ``threadIdx.x`` and vectorized."""
    inner = _loops_under(sch, block, anchor)
    if not inner:
        raise RuleNotApplicable("the shared-memory copy has no loops")
    fused = sch.fuse(*inner) if len(inner) > 1 else inner[0]
    if len(vector_lens) > 1:
        vec = sch.sample_categorical(list(vector_lens), [1.0 / len(vector_lens)] * len(vector_lens))
        _, tx, vv = sch.split(fused, [None, threads, vec])
        sch.vectorize(vv)
    else:
        _, tx, vv = sch.split(fused, [None, threads, vector_lens[0] if vector_lens else 1])
        if vector_lens and vector_lens[0] > 1:
            sch.vectorize(vv)
    sch.bind(tx, "threadIdx.x")


def bind_tile_to_threads(sch: Any, block: Any, anchor: Any, thread_factors: Sequence[Any],
                         inner_factors: Sequence[Any]) -> None:
    """Bind the loops of ``block`` under ``anchor`` (one per spatial dimension of a tile) to
    the same ``threadIdx.x`` layout as the tile's producer: dimension ``d`` is split
    ``[None, thread_factors[d], inner_factors[d]]`` and the thread parts are fused."""
    inner = _loops_under(sch, block, anchor)
    if len(inner) != len(thread_factors):
        raise RuleNotApplicable(f"the tile has {len(inner)} loops, expected "
                                f"{len(thread_factors)}")
    outs, threads, rest = [], [], []
    for lp, t, r in zip(inner, thread_factors, inner_factors):
        o, tt, ii = sch.split(lp, [None, t, r])
        outs.append(o)
        threads.append(tt)
        rest.append(ii)
    sch.reorder(*outs, *threads, *rest)
    tx = sch.fuse(*threads) if len(threads) > 1 else threads[0]
    sch.bind(tx, "threadIdx.x")


class MultiLevelTilingGPU(ScheduleRule):
    """Sampled ``SSSRRSRS`` tiling with thread binding, shared-memory operands and a local
    accumulator (see the module docstring).

    ``max_threads_per_block`` is the target's (see :meth:`from_target`): the schedule the
    rule makes draws its spatial tiles until their thread count fits it (replays draw
    freely, and VerifyGPUCode rejects what does not fit); ``max_innermost_factor`` bounds
    the innermost factor of every split (the register tile); ``vector_load_lens`` are the
    vector lengths the cooperative fetch samples from; ``unroll_max_steps`` the unroll
    limits a kernel samples from (annotation ``meta_schedule.gpu_unroll_max_step`` on its
    blockIdx loop, applied by the RewriteUnrollGPU postprocessor).  The default stops at
    16 statements: InjectStorageSync compares every pair of shared accesses since the last
    barrier, so a register tile unrolled 64 times or more takes minutes to build (raise it
    once that pass is linear)."""

    name = "multi_level_tiling_gpu"

    def __init__(self, structure: str = "SSSRRSRS", max_threads_per_block: int = 1024,
                 max_innermost_factor: int = 64,
                 vector_load_lens: Sequence[int] = (1, 2, 4),
                 unroll_max_steps: Sequence[int] = (0, 16)):
        if structure != "SSSRRSRS":
            raise ValueError(f"MultiLevelTilingGPU: only the structure 'SSSRRSRS' is "
                             f"supported, got {structure!r}")
        if max_threads_per_block < 1 or max_innermost_factor < 1:
            raise ValueError("MultiLevelTilingGPU: thread limits and max_innermost_factor "
                             "must be positive")
        if any(int(v) < 1 for v in vector_load_lens):
            raise ValueError(f"MultiLevelTilingGPU: vector lengths must be positive, got "
                             f"{list(vector_load_lens)}")
        self.structure = structure
        self.max_threads_per_block = int(max_threads_per_block)
        self.max_innermost_factor = int(max_innermost_factor)
        self.vector_load_lens = tuple(int(v) for v in vector_load_lens)
        if not unroll_max_steps or any(int(v) < 0 for v in unroll_max_steps):
            raise ValueError(f"MultiLevelTilingGPU: unroll steps must be non-negative, got "
                             f"{list(unroll_max_steps)}")
        self.unroll_max_steps = tuple(int(v) for v in unroll_max_steps)

    @classmethod
    def from_target(cls, target: Any, **kwargs: Any) -> MultiLevelTilingGPU:
        """The rule for ``target``'s limits (``max_num_threads``)."""
        from tvm.ir.target import as_target
        from tvm.tir.transform._gpu import gpu_limits

        limits = gpu_limits(as_target(target))
        kwargs.setdefault("max_threads_per_block", limits.max_num_threads)
        return cls(**kwargs)

    # -- matching ------------------------------------------------------------------------------
    def applies(self, sch: Any, block: Any) -> bool:
        if block_kind(sch, block) != "reduction" or in_kernel(sch, block):
            return False
        roles = [r for _, r in loop_roles(sch, block)]
        if any(r not in ("S", "R") for r in roles) or "S" not in roles or "R" not in roles:
            return False
        if any(loop_extent(sch, lp) is None for lp in sch.get_loops(block)):
            return False
        return _indexed_by_own_vars(sch, block) and bool(self._reused_reads(sch, block))

    @staticmethod
    def _reused_reads(sch: Any, block: Any) -> list[int]:
        """Indices of the reads worth staging in shared memory: buffers the block does not
        write whose accesses leave out a spatial iteration (so threads share them)."""
        from tvm.tir.expr import IterVarType
        from tvm.tir.stmt_functor import free_vars

        b = sch.get(block)
        written = {id(w.buffer) for w in b.writes}
        spatial = {iv.var for iv in b.iter_vars if iv.iter_type == IterVarType.DATA_PAR}
        out = []
        for k, region in enumerate(b.reads):
            if id(region.buffer) in written:
                continue
            used = {v for rg in region.region for v in free_vars(rg.min)}
            if spatial - used:
                out.append(k)
        return out

    # -- the transformation --------------------------------------------------------------------
    def _fitting_tiles(self, sch: Any, spatial: list[Any], tries: int = 64) -> list[Any]:
        """Five-level tiles of the ``spatial`` loops whose thread level (S2) fits
        ``max_threads_per_block``, drawn from the schedule's random state (all None when
        ``tries`` draws find none: the sampling instructions then draw themselves)."""
        rng = random.Random(sch.fork_seed())
        extents = [loop_extent(sch, lp) for lp in spatial]
        for _ in range(tries):
            tiles = [sample_perfect_tile_factors(rng, e, 5, self.max_innermost_factor)
                     for e in extents]
            if _product([t[2] for t in tiles]) <= self.max_threads_per_block:
                return tiles
        return [None] * len(spatial)

    def apply(self, sch: Any, block: Any) -> list[Any]:
        roles = loop_roles(sch, block)
        spatial = [lp for lp, r in roles if r == "S"]
        reduce = [lp for lp, r in roles if r == "R"]
        read_buffers = [sch.get(block).reads[k].buffer for k in self._reused_reads(sch, block)]
        mif = self.max_innermost_factor
        s_tiles: list[tuple[list[Any], list[Any]]] = []  # (loops by level, factors)
        for lp, first in zip(spatial, self._fitting_tiles(sch, spatial)):
            f = sch.sample_perfect_tile(lp, n=5, max_innermost_factor=mif, decision=first)
            # index order S0 S2 S1 S3 S4: a thread's sub-tiles (S1) are adjacent
            l0, l2, l1, l3, l4 = sch.split(lp, [f[0], f[2], f[1], f[3], f[4]])
            s_tiles.append(([l0, l1, l2, l3, l4], f))
        r_tiles: list[list[Any]] = []
        for lp in reduce:
            factors = sch.sample_perfect_tile(lp, n=3, max_innermost_factor=mif)
            r_tiles.append(sch.split(lp, factors))
        level = [[t[0][k] for t in s_tiles] for k in range(5)]
        r_level = [[t[k] for t in r_tiles] for k in range(3)]
        sch.reorder(*level[0], *r_level[0], *level[2], *level[1], *r_level[1], *level[3],
                    *r_level[2], *level[4])
        thread_factors = [f[2] for _, f in s_tiles]
        threads = _product(thread_factors)
        # Caches first, while each level is one loop per dimension: the regions under
        # unfused loops are exact rectangles (under a fused blockIdx loop, region analysis
        # can fail, and a write-back moved there would cover every block's tile).
        # The accumulator in registers, written back per block, each thread its sub-tile
        # (through the elementwise epilogue, when there is one):
        outer = level[0][-1]
        epilogue = _elementwise_epilogue(sch, block)
        if epilogue is not None:
            sch.set_scope(block, 0, "local")
            write_back = epilogue
            claim(sch, epilogue, f"{self.report} (epilogue)")
        else:
            write_back = sch.cache_write(block, 0, "local")
        sch.reverse_compute_at(write_back, outer, preserve_unit_loops=True)
        bind_tile_to_threads(sch, write_back, outer, thread_factors,
                             [f[1] * f[3] * f[4] for _, f in s_tiles])
        # both operands staged in shared memory once per R0 step, fetched by all threads:
        r0 = r_level[0][0]
        for buf in read_buffers:
            index = next(k for k, r in enumerate(sch.get(block).reads) if r.buffer is buf)
            staged = sch.cache_read(block, index, "shared")
            sch.compute_at(staged, r0, preserve_unit_loops=True)
            cooperative_fetch(sch, staged, r0, threads, self.vector_load_lens)
        bx = _fuse(sch, level[0])
        sch.bind(bx, "blockIdx.x")
        if len(self.unroll_max_steps) > 1 or self.unroll_max_steps[0] > 0:
            steps = list(self.unroll_max_steps)
            step = sch.sample_categorical(steps, [1 / len(steps)] * len(steps))
            sch.annotate(bx, UNROLL_KEY, step)
        _fuse(sch, level[1])
        sch.bind(_fuse(sch, level[2]), "threadIdx.x")
        # the accumulator's init before the reduction, on the threads' own registers
        # (copied loops keep their thread binding), not tested in the innermost loop
        sch.decompose_reduction(block, r0)
        return [sch]


def _fuse(sch: Any, loops: list[Any]) -> Any:
    return sch.fuse(*loops) if len(loops) > 1 else loops[0]


def _indexed_by_own_vars(sch: Any, block: Any) -> bool:
    """Whether the block writes ``X[v0, v1, ...]`` with its data-parallel iteration
    variables in order, each bound to one loop variable, the loops in the same order."""
    from tvm.tir.expr import IterVarType, Var

    realize = sch.get_sref(block).realize
    b = realize.block
    spatial = [iv.var for iv in b.iter_vars if iv.iter_type == IterVarType.DATA_PAR]
    if len(b.writes) != 1 or not isinstance(b.body, BufferStore):
        return False
    if len(b.body.indices) != len(spatial) or any(
            i is not v for i, v in zip(b.body.indices, spatial)):
        return False
    loop_vars = [sch.get(lp).loop_var for lp in sch.get_loops(block)]
    values = [val for iv, val in zip(b.iter_vars, realize.iter_values)
              if iv.iter_type == IterVarType.DATA_PAR]
    if any(not isinstance(v, Var) for v in values):
        return False
    positions = [next((k for k, lv in enumerate(loop_vars) if lv is v), -1) for v in values]
    return -1 not in positions and positions == sorted(positions)


def _elementwise_epilogue(sch: Any, block: Any) -> Any:
    """The only consumer of ``block``'s output when it is an elementwise block over the same
    shape that reads the output at its own indices (a bias add, an activation), and the
    output is no function output; else None."""
    from tvm.tir.expr import BufferLoad
    from tvm.tir.stmt_functor import post_order_visit

    consumers = sch.get_consumers(block)
    if len(consumers) != 1 or is_output_block(sch, block):
        return None
    consumer = consumers[0]
    if block_kind(sch, consumer) != "spatial" or not _indexed_by_own_vars(sch, consumer):
        return None
    out = sch.get(block).writes[0].buffer
    store = sch.get(consumer).body
    if len(store.buffer.shape) != len(out.shape) or not all(
            _same_const(a, b) for a, b in zip(store.buffer.shape, out.shape)):
        return None
    ok = [True]

    def visit(node: Any) -> None:
        if isinstance(node, BufferLoad) and node.buffer is out and (
                len(node.indices) != len(store.indices)
                or any(i is not j for i, j in zip(node.indices, store.indices))):
            ok[0] = False

    post_order_visit(store.value, visit)
    return consumer if ok[0] else None


def _same_const(a: Any, b: Any) -> bool:
    """Whether two constant extents are equal."""
    from tvm.tir.expr_util import const_int

    ca, cb = const_int(a), const_int(b)
    return ca is not None and ca == cb
