"""AddRFactor: a reduction over a small output, factored so its reduction runs in parallel.

When a reduction block's spatial extent offers fewer parallel tasks than
``num_cores x max_jobs_per_core`` and its reduction is long (at least
``min_reduction_extent``), the rule returns two candidates: the block as it is (for later
rules) and the block whose fused reduction loop is split by ``sample_perfect_tile(n=2)``
and factored over the outer part (``rfactor``): the partial sums ``C_rf`` are data-parallel
over that part, and ``C`` combines them.  The rule only prepares the block
(``claims_block = False``); MultiLevelTiling / RandomComputeLocation / the
parallel-vectorize postprocessor handle the blocks it leaves.
"""

from __future__ import annotations

from typing import Any, Optional

from tvm.tir.schedule.error import ScheduleError
from tvm.tir.schedule.rules import ScheduleRule, block_kind, fork, loop_extent, loop_roles

from .target_info import cpu_info, num_cores

__all__ = ["AddRFactor", "RF_ATTR"]

#: annotation of the partial-result block an rfactor made (not factored again)
RF_ATTR = "meta_schedule.random_compute_producer"


class AddRFactor(ScheduleRule):
    """Sampled rfactor of a reduction with a small spatial extent (see the module doc)."""

    name = "add_rfactor"
    claims_block = False

    def __init__(self, max_jobs_per_core: int = 16, max_innermost_factor: Optional[int] = 64,
                 min_reduction_extent: int = 64, num_cores: Optional[int] = None):
        if max_jobs_per_core < 1 or min_reduction_extent < 2:
            raise ValueError("AddRFactor: max_jobs_per_core must be >= 1 and "
                             "min_reduction_extent >= 2")
        self.max_jobs_per_core = max_jobs_per_core
        self.max_innermost_factor = max_innermost_factor
        self.min_reduction_extent = min_reduction_extent
        self.num_cores = num_cores

    def initialize_with_tune_context(self, context: Any) -> None:
        if self.num_cores is None:
            self.num_cores = num_cores(cpu_info(context.target))

    def applies(self, sch: Any, block: Any) -> bool:
        b = sch.get(block)
        if block_kind(sch, block) != "reduction" or b.init is None or RF_ATTR in b.annotations:
            return False
        roles = loop_roles(sch, block)
        if any(role not in ("S", "R", "") for _, role in roles):
            return False
        spatial, reduce = 1, 1
        seen_r = False
        for loop, role in roles:
            ext = loop_extent(sch, loop)
            if ext is None:
                return False
            if role == "R":
                seen_r = True
                reduce *= ext
            elif seen_r and ext != 1:
                return False  # a spatial loop inside the reduction: not a plain nest
            else:
                spatial *= ext
        limit = (self.num_cores or 1) * self.max_jobs_per_core
        return seen_r and spatial < limit and reduce >= self.min_reduction_extent

    def apply(self, sch: Any, block: Any) -> list[Any]:
        factored = fork(sch)
        roles = loop_roles(factored, block)
        rloops = [loop for loop, role in roles if role == "R"]
        fused = factored.fuse(*rloops) if len(rloops) > 1 else rloops[0]
        factors = factored.sample_perfect_tile(fused, n=2,
                                               max_innermost_factor=self.max_innermost_factor)
        outer, _ = factored.split(fused, factors)
        try:
            rf = factored.rfactor(outer, 0)
        except ScheduleError:
            return [sch]  # rfactor refuses this reduction: only the block as it is
        factored.annotate(rf, RF_ATTR, 1)
        return [sch, factored]
