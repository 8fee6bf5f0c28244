"""RewriteUnrollGPU: unroll the small loop nests of a kernel, as far as a sampled step count.

A GPU rule (MultiLevelTilingGPU) annotates a kernel's ``blockIdx`` loop with
``meta_schedule.gpu_unroll_max_step`` = a sampled value.  Once the candidate's decisions
are known, this postprocessor unrolls (``sch.unroll``) every loop under the annotated one
whose fully unrolled body has at most that many statements (a block counts one) and
holds only serial loops of constant extent and single-store blocks (no thread-bound or
vectorized loop, no branch), then
removes the annotation.  Unrolled register tiles keep their accumulators in registers
(indexed by constants) instead of local memory.  The primitives are recorded, so the
candidate's trace replays them; a step of 0 unrolls nothing.
"""

from __future__ import annotations

from typing import Any

from tvm.tir.stmt import BlockRealize, BufferStore, For, ForKind, SeqStmt

from .postproc import Postproc

__all__ = ["RewriteUnrollGPU", "UNROLL_KEY", "unroll_plan"]

#: the loop annotation the GPU rules put on a kernel: its unroll step limit
UNROLL_KEY = "meta_schedule.gpu_unroll_max_step"


def _const(e: Any) -> Any:
    from tvm.tir.expr_util import const_int

    return const_int(e)


def _unrolled_size(stmt: Any, fits: dict[int, bool], max_step: int) -> tuple[int, bool]:
    """``(statements once fully unrolled, whether it can be)``; marks in ``fits`` (by id
    of the For) the loops whose whole nest unrolls within ``max_step``."""
    if isinstance(stmt, For):
        size, ok = _unrolled_size(stmt.body, fits, max_step)
        ext = _const(stmt.extent)
        ok = ok and stmt.kind in (ForKind.SERIAL, ForKind.UNROLLED) and ext is not None
        total = size * (ext or 1)
        fits[id(stmt)] = ok and total <= max_step
        return total, ok
    if isinstance(stmt, SeqStmt):
        total, ok = 0, True
        for s in stmt.seq:
            n, k = _unrolled_size(s, fits, max_step)
            total, ok = total + n, ok and k
        return total, ok
    if isinstance(stmt, BlockRealize):
        return 1, isinstance(stmt.block.body, BufferStore)
    return 1, False   # anything else (a branch, an opaque nest) is left rolled


def unroll_plan(loop: For, max_step: int) -> set[int]:
    """Ids of the loops under ``loop`` (itself excluded) that unroll within ``max_step``."""
    fits: dict[int, bool] = {}
    if max_step > 0:
        _unrolled_size(loop.body, fits, max_step)
    return {k for k, ok in fits.items() if ok}


class RewriteUnrollGPU(Postproc):
    """Apply the sampled unroll steps of the kernels (see the module docstring)."""

    name = "rewrite_unroll_gpu"

    def apply(self, sch: Any) -> bool:
        from tvm.tir.schedule.rules import root_blocks

        handles: dict[int, Any] = {}   # id of a For of the current IR -> its LoopRV
        for block in root_blocks(sch):
            for lp in sch.get_loops(block):
                handles.setdefault(id(sch.get(lp)), lp)
        plans = []
        for lp in handles.values():
            loop = sch.get(lp)
            if UNROLL_KEY not in loop.annotations:
                continue
            step = _const(loop.annotations[UNROLL_KEY])
            if step is None:
                return False
            plans.append((lp, [handles[k] for k in unroll_plan(loop, step) if k in handles]))
        for lp, inner in plans:
            sch.unannotate(lp, UNROLL_KEY)
            for rv in inner:
                sch.unroll(rv)
        return True
