"""CrossThreadReduction: a reduction whose rows are reduced by a group of threads together.

For ``B[i] = sum(A[i, k])`` (a row sum, max, min or product: the reducers threads can
combine, see :func:`tvm.tir.schedule.gpu_rules.reduction.cross_thread_ok`), the reduction
loops are fused and split ``[None, T]``, the inner part bound to ``threadIdx.x``; the
spatial loops are fused and bound to ``blockIdx.x`` (one row per block).  ``T`` is drawn by
``sch.sample_categorical`` among multiples of the warp size (powers of two up to the
target's threads per block, not above the row length rounded up).  No ``rfactor`` is
needed: LowerCrossThreadReduction turns the bound reduction into each thread's partial
result followed by ``tvm_thread_allreduce`` (warp shuffles, or a shared-memory tree).

Rows shorter than ``min_reduction_extent`` (a warp by default) are left to AutoBind (one
thread per output), as the default GPU rules do.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

from tvm.tir.schedule.gpu_rules.reduction import cross_thread_ok
from tvm.tir.schedule.rules import (
    RuleNotApplicable, ScheduleRule, block_kind, loop_extent, loop_roles,
)

from .auto_bind import in_kernel, thread_candidates

__all__ = ["CrossThreadReduction"]


class CrossThreadReduction(ScheduleRule):
    """Bind the reduction loops of a row reduction to ``threadIdx.x`` with a sampled
    thread count (see the module docstring)."""

    name = "cross_thread_reduction"

    def __init__(self, max_threads_per_block: int = 1024, warp_size: int = 32,
                 thread_extents: Optional[Sequence[int]] = None,
                 min_reduction_extent: Optional[int] = None):
        if max_threads_per_block < 1 or warp_size < 1:
            raise ValueError("CrossThreadReduction: thread limits must be positive")
        self.max_threads_per_block = int(max_threads_per_block)
        self.warp_size = int(warp_size)
        lo = warp_size if warp_size > 1 else 16  # OpenCL reports no warps: 16 work items
        if thread_extents is None:
            thread_extents = [lo << k for k in range(16) if lo << k <= max_threads_per_block]
        if not thread_extents or any(int(t) < 1 for t in thread_extents):
            raise ValueError(f"CrossThreadReduction: thread_extents must be positive ints, "
                             f"got {thread_extents!r}")
        self.thread_extents = tuple(int(t) for t in thread_extents)
        self.min_reduction_extent = max(lo, 32) if min_reduction_extent is None \
            else int(min_reduction_extent)

    @classmethod
    def from_target(cls, target: Any, **kwargs: Any) -> CrossThreadReduction:
        from tvm.ir.target import as_target
        from tvm.tir.transform._gpu import gpu_limits

        limits = gpu_limits(as_target(target))
        kwargs.setdefault("max_threads_per_block", limits.max_num_threads)
        kwargs.setdefault("warp_size", limits.thread_warp_size)
        return cls(**kwargs)

    def applies(self, sch: Any, block: Any) -> bool:
        if block_kind(sch, block) != "reduction" or in_kernel(sch, block):
            return False
        roles = loop_roles(sch, block)
        if not roles or any(r not in ("S", "R") for _, r in roles):
            return False
        extent = 1
        for lp, role in roles:
            if role == "R":
                e = loop_extent(sch, lp)
                if e is None:
                    return False
                extent *= e
        return extent >= self.min_reduction_extent and cross_thread_ok(sch.get(block))

    def apply(self, sch: Any, block: Any) -> list[Any]:
        roles = loop_roles(sch, block)
        spatial = [lp for lp, r in roles if r == "S"]
        reduce = [lp for lp, r in roles if r == "R"]
        if not reduce:
            raise RuleNotApplicable("no reduction loop")
        if [lp for lp, _ in roles] != spatial + reduce:
            sch.reorder(*spatial, *reduce)
        r = sch.fuse(*reduce) if len(reduce) > 1 else reduce[0]
        cands = thread_candidates(self.thread_extents, self.max_threads_per_block,
                                  loop_extent(sch, r))
        threads = sch.sample_categorical(cands, [1.0 / len(cands)] * len(cands))
        _, tx = sch.split(r, [None, threads])
        sch.bind(tx, "threadIdx.x")
        if spatial:
            sch.bind(sch.fuse(*spatial) if len(spatial) > 1 else spatial[0], "blockIdx.x")
        else:
            sch.bind(sch.add_unit_loop(sch.get_loops(block)[0]), "blockIdx.x")
        return [sch]
