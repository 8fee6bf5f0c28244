"""Default GPU schedules, shared by every GPU target (CUDA, OpenCL, Metal).

A target plugin answers ``tvm_tir_default_schedule`` with :func:`apply_default_gpu_schedule`;
the rules only depend on the target's limits (``max_num_threads``, ``thread_warp_size``,
``max_shared_memory_per_block``).  For each PrimFunc not marked ``tir.is_scheduled``:

1. elementwise blocks that only feed other blocks are inlined into their consumers;
2. the first rule that applies schedules the rest:

   * **matmul** (:mod:`.matmul`): shared-memory tiles of both operands, a register tile of
     the result per thread; other (elementwise) blocks get their own kernels;
   * **row pipeline** (:mod:`.reduction`): reductions followed by an elementwise block over
     the same rows (softmax, layer norm) in one kernel, one block per row;
   * **per block**: every block its own kernel — reductions with a cross-thread reduction
     (or one thread per output), elementwise blocks fused, split and bound
     (:mod:`.elementwise`);

3. when none applies, the **fallback** (:mod:`.fallback`): each block gets the per-block
   schedule if it can, else its data-parallel outer loops bound (one thread per output);
4. whatever is still outside a kernel — blocks without data-parallel loops, loop-level code
   with no blocks (scans, sorts, scatters) — becomes a kernel of its own: independent outer
   loops spread over threads, anything else on one thread (:func:`.fallback.bind_unbound`).

So every function comes out with all of its buffer accesses inside kernels.  The scheduled
function is marked ``tir.is_scheduled``; a function so marked, or already lowered
(``tir.blocks_lowered``), is left alone.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Optional

from tvm.ir.module import IRModule

from ...function import PrimFunc
from ...stmt import Block, BlockRealize, BufferStore
from ..error import ScheduleError
from ..schedule import Schedule
from .common import GPUParams, RuleNotApplicable, block_kind
from .elementwise import schedule_elementwise
from .fallback import bind_unbound, run_block_fallbacks, schedule_block_fallback
from .matmul import schedule_matmul
from .reduction import schedule_reduction, schedule_row_pipeline, schedule_spatial_or_reduction

__all__ = ["apply_default_gpu_schedule", "schedule_gpu_func", "GPUParams", "RULES",
           "schedule_elementwise", "schedule_reduction", "schedule_row_pipeline",
           "schedule_matmul", "schedule_block_fallback", "bind_unbound", "RuleNotApplicable"]

logger = logging.getLogger("tvm.tir.schedule.gpu_rules")
SCHEDULED_ATTR = "tir.is_scheduled"


def _blocks(sch: Schedule) -> list[Any]:
    return sch.get_child_blocks(sch.get_block("root"))


def inline_elementwise(sch: Schedule) -> None:
    """Inline every spatial block that writes no function output into its consumers."""
    progress = True
    while progress:
        progress = False
        for b in _blocks(sch):
            block = sch.get(b)
            if block_kind(sch, b) != "spatial" or not isinstance(block.body, BufferStore):
                continue
            if not sch.get_consumers(b):
                continue
            try:
                sch.compute_inline(b)
            except ScheduleError:
                continue
            progress = True
            break


def _rule_matmul(sch: Schedule, params: GPUParams) -> None:
    blocks = _blocks(sch)
    reductions = [b for b in blocks if block_kind(sch, b) == "reduction"]
    if len(reductions) != 1:
        raise RuleNotApplicable("not exactly one reduction")
    others = [b for b in blocks if b is not reductions[0]]
    schedule_matmul(sch, reductions[0], params)
    for b in others:
        schedule_spatial_or_reduction(sch, b, params)


def _rule_row_pipeline(sch: Schedule, params: GPUParams) -> None:
    schedule_row_pipeline(sch, _blocks(sch), params)


def _rule_per_block(sch: Schedule, params: GPUParams) -> None:
    for b in _blocks(sch):
        schedule_spatial_or_reduction(sch, b, params)


#: The rules in the order they are tried.
RULES: list[tuple[str, Callable[[Schedule, GPUParams], None]]] = [
    ("matmul", _rule_matmul),
    ("row_pipeline", _rule_row_pipeline),
    ("per_block", _rule_per_block),
]


def _has_blocks(func: PrimFunc) -> bool:
    body = func.body
    return isinstance(body, BlockRealize) or isinstance(body, Block)


def schedule_gpu_func(func: PrimFunc, target: Any = None,
                      params: Optional[GPUParams] = None) -> PrimFunc:
    """``func`` scheduled by the first rule that applies, else by the fallback (see the
    module docstring); unchanged when it is already scheduled or needs no kernel."""
    if func.attrs.get(SCHEDULED_ATTR) or func.attrs.get("tir.blocks_lowered"):
        return func
    params = params or GPUParams.from_target(target)
    if not _has_blocks(func):
        bound = bind_unbound(func, params)
        return func if bound is func else bound.with_attr(SCHEDULED_ATTR, True)
    reasons = []
    for name, rule in RULES:
        sch = Schedule(func)
        try:
            if not _blocks(sch):
                reasons.append("the root block has no child blocks")
                break
            inline_elementwise(sch)
            rule(sch, params)
        except (RuleNotApplicable, ScheduleError) as err:
            reasons.append(f"{name}: {err}")
            continue
        logger.debug("gpu default schedule: rule %s", name)
        scheduled = bind_unbound(sch.mod[sch.func_working_on], params)
        return scheduled.with_attr(SCHEDULED_ATTR, True)
    logger.debug("gpu default schedule: fallback (%s)", "; ".join(reasons))
    sch = Schedule(func)
    inline_elementwise(sch)
    sch = run_block_fallbacks(sch, _blocks(sch), params,
                              [schedule_spatial_or_reduction, schedule_block_fallback])
    return bind_unbound(sch.mod[sch.func_working_on], params).with_attr(SCHEDULED_ATTR, True)


def apply_default_gpu_schedule(mod: IRModule, target: Any = None) -> IRModule:
    """Every unscheduled PrimFunc of ``mod`` scheduled for the GPU ``target``."""
    params = GPUParams.from_target(target)
    funcs = {}
    changed = False
    for gv, func in mod.items():
        if isinstance(func, PrimFunc):
            new = schedule_gpu_func(func, target, params)
            changed = changed or new is not func
            funcs[gv] = new
        else:
            funcs[gv] = func
    return IRModule(funcs, mod.attrs) if changed else mod
