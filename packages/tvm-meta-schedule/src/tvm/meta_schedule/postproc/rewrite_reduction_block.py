"""RewriteReductionBlock: the init of a tiled reduction as its own block.

A block tiled by MultiLevelTiling (annotated ``meta_schedule.tiling_structure``) with an
init gets ``decompose_reduction`` before its outermost reduction loop, so the init runs
once per output tile in its own loops, which the parallel-vectorize postprocessor
vectorizes like the update.  Other blocks (the default schedule's) are left as they are.
"""

from __future__ import annotations

from typing import Any

from tvm.tir.schedule.rules import loop_roles

from ..schedule_rule.multi_level_tiling import TILING_ATTR
from .postproc import Postproc
from .rewrite_parallel_vectorize_unroll import leaf_blocks

__all__ = ["RewriteReductionBlock"]


class RewriteReductionBlock(Postproc):
    """See the module doc."""

    name = "rewrite_reduction_block"

    def apply(self, sch: Any) -> bool:
        for block in leaf_blocks(sch):
            b = sch.get(block)
            if b.init is None or TILING_ATTR not in b.annotations:
                continue
            first = next((lp for lp, role in loop_roles(sch, block) if "R" in role), None)
            if first is not None:
                sch.decompose_reduction(block, first)
        return True
