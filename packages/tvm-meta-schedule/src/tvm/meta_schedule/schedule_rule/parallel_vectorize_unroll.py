"""ParallelizeVectorizeUnroll: how wide the function may run, as sampled annotations.

The rule annotates the function's root block, as MetaSchedule does:

* ``meta_schedule.parallel``: the most parallel iterations to fuse, ``num_cores x jobs``
  with ``jobs`` drawn by ``sample_categorical`` from ``jobs_per_core`` (no annotation on one
  core);
* ``meta_schedule.vectorize``: the most vector lanes to fuse (``max_vectorize_extent``);
* ``meta_schedule.unroll_explicit``: the most loop steps to unroll, drawn from
  ``unroll_max_steps``.

The postprocessor :class:`~tvm.meta_schedule.postproc.RewriteParallelVectorizeUnroll`
turns them into ``fuse`` + ``parallel`` / ``vectorize`` / ``unroll`` on every loop nest of
the candidate, with traced primitives, so the candidate replays.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

from tvm.tir.schedule.rules import ScheduleRule

from .target_info import cpu_info, num_cores

__all__ = ["ParallelizeVectorizeUnroll", "PARALLEL_ATTR", "VECTORIZE_ATTR", "UNROLL_ATTR"]

PARALLEL_ATTR = "meta_schedule.parallel"
VECTORIZE_ATTR = "meta_schedule.vectorize"
UNROLL_ATTR = "meta_schedule.unroll_explicit"


class ParallelizeVectorizeUnroll(ScheduleRule):
    """Annotate the root block (see the module doc).  ``num_cores`` None: from the target
    (hook ``tvm_tir_cpu_info``) when initialized with a tune context, else 1."""

    name = "parallel_vectorize_unroll"
    claims_block = False
    #: offered the function's root block, not the blocks under it (PostOrderApply)
    on_root = True

    def __init__(self, jobs_per_core: Sequence[int] = (1, 4, 16, 64),
                 max_vectorize_extent: int = 64,
                 unroll_max_steps: Sequence[int] = (0, 16, 64, 512),
                 num_cores: Optional[int] = None):
        jobs = [int(j) for j in jobs_per_core]
        steps = [int(s) for s in unroll_max_steps]
        if any(j < 1 for j in jobs) or any(s < 0 for s in steps):
            raise ValueError(f"ParallelizeVectorizeUnroll: jobs_per_core {jobs} must be "
                             f"positive and unroll_max_steps {steps} non-negative")
        if max_vectorize_extent < 0:
            raise ValueError("ParallelizeVectorizeUnroll: max_vectorize_extent must be >= 0")
        self.jobs_per_core = jobs
        self.max_vectorize_extent = int(max_vectorize_extent)
        self.unroll_max_steps = steps
        self.num_cores = num_cores

    def initialize_with_tune_context(self, context: Any) -> None:
        if self.num_cores is None:
            self.num_cores = num_cores(cpu_info(context.target))

    def applies(self, sch: Any, block: Any) -> bool:
        anns = sch.get(block).annotations
        return not any(k in anns for k in (PARALLEL_ATTR, VECTORIZE_ATTR, UNROLL_ATTR))

    def transform(self, sch: Any, block: Any) -> None:
        cores = self.num_cores or 1
        if cores > 1 and self.jobs_per_core:
            extents = [cores * j for j in self.jobs_per_core]
            par = sch.sample_categorical(extents, [1.0 / len(extents)] * len(extents))
            sch.annotate(block, PARALLEL_ATTR, par)
        if self.max_vectorize_extent > 1:
            sch.annotate(block, VECTORIZE_ATTR, self.max_vectorize_extent)
        if self.unroll_max_steps:
            steps = self.unroll_max_steps
            unroll = sch.sample_categorical(steps, [1.0 / len(steps)] * len(steps))
            sch.annotate(block, UNROLL_ATTR, unroll)
