"""Default GPU schedules, shared by every GPU target (CUDA, OpenCL, Metal): rules of the
framework :mod:`tvm.tir.schedule.rules`.

A GPU target plugin answers ``tvm_tir_schedule_rules`` with :func:`gpu_rules` and
``tvm_tir_default_schedule`` with :func:`apply_default_gpu_schedule`; the rules only depend
on the target's limits (:class:`GPUParams`: ``max_num_threads``, ``thread_warp_size``,
``max_shared_memory_per_block``).  In order, for each PrimFunc not marked
``tir.is_scheduled``:

1. **auto_inline**: elementwise blocks that only feed other blocks are inlined into their
   consumers;
2. **matmul** (:mod:`.matmul`): the only reduction of the function, when it is a matmul:
   shared-memory tiles of both operands, a register tile of the result per thread;
3. **row_pipeline** (:mod:`.reduction`): when all blocks are reductions followed by an
   elementwise block over the same rows (softmax, layer norm), one kernel, one block per row;
4. **per_block**: every block left its own kernel — a reduction with a cross-thread
   reduction (or one thread per output), an elementwise block fused, split and bound
   (:mod:`.elementwise`);
5. **fallback** (:mod:`.fallback`): a block still left gets its data-parallel outer loops
   bound (one thread per output);
6. **single_thread**: a block still outside a kernel (no data-parallel loop, a reducer
   threads cannot combine) runs on one thread, bound through two unit loops;
7. after the rules, whatever is still outside a kernel — loop-level code with no blocks
   (scans, sorts, scatters), or a nest :func:`.fallback.bind_unbound` can prove
   independent — becomes a kernel of its own: independent outer loops spread over
   threads, anything else on one thread (a whole-function step: it works on loops no
   Schedule block describes, so it is not part of the trace; for block programs it has
   nothing left to do in the common cases).

So every function comes out with all of its buffer accesses inside kernels.  The scheduled
function is marked ``tir.is_scheduled``; a function so marked, or already lowered
(``tir.blocks_lowered``), is left alone.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

from tvm.ir.module import IRModule

from ...function import PrimFunc
from ...stmt import Block, BlockRealize
from ..rules import (
    SCHEDULED_ATTR, AutoInline, FirstOf, RuleNotApplicable, ScheduleRule, block_kind, claim,
    claims, root_blocks, rules_for_target, schedule_func, schedule_module,
)
from .common import GPUParams
from .elementwise import schedule_elementwise
from .fallback import bind_unbound, schedule_block_fallback
from .matmul import schedule_matmul
from .reduction import schedule_reduction, schedule_row_pipeline

__all__ = ["apply_default_gpu_schedule", "schedule_gpu_func", "gpu_rules", "GPUParams",
           "MatmulRule", "RowPipelineRule", "ReductionRule", "ElementwiseRule", "FallbackRule",
           "SingleThreadRule",
           "schedule_elementwise", "schedule_reduction", "schedule_row_pipeline",
           "schedule_matmul", "schedule_block_fallback", "bind_unbound", "RuleNotApplicable"]


class MatmulRule(ScheduleRule):
    """The only reduction of the function, a matmul: shared and register tiles."""

    name = "matmul"

    def __init__(self, params: GPUParams):
        self.params = params

    def applies(self, sch: Any, block: Any) -> bool:
        if block_kind(sch, block) != "reduction":
            return False
        return sum(block_kind(sch, b) == "reduction" for b in root_blocks(sch)) == 1

    def transform(self, sch: Any, block: Any) -> None:
        schedule_matmul(sch, block, self.params)


class RowPipelineRule(ScheduleRule):
    """All blocks of the function over the same rows in one kernel (softmax, layer norm)."""

    name = "row_pipeline"

    def __init__(self, params: GPUParams):
        self.params = params

    def applies(self, sch: Any, block: Any) -> bool:
        blocks = root_blocks(sch)
        taken = claims(sch)
        return len(blocks) >= 2 and sch.get(blocks[0]).name_hint == sch.get(block).name_hint \
            and not any(sch.get(b).name_hint in taken for b in blocks)

    def transform(self, sch: Any, block: Any) -> None:
        blocks = root_blocks(sch)
        schedule_row_pipeline(sch, blocks, self.params)
        for b in blocks:
            claim(sch, b, self.report)


class ReductionRule(ScheduleRule):
    """A reduction block as its own kernel (cross-thread or one thread per output)."""

    name = "reduction"

    def __init__(self, params: GPUParams):
        self.params = params

    def applies(self, sch: Any, block: Any) -> bool:
        return block_kind(sch, block) == "reduction"

    def transform(self, sch: Any, block: Any) -> None:
        schedule_reduction(sch, block, self.params)


class ElementwiseRule(ScheduleRule):
    """An elementwise block as its own kernel: fused, split, bound, maybe vectorized."""

    name = "elementwise"

    def __init__(self, params: GPUParams):
        self.params = params

    def applies(self, sch: Any, block: Any) -> bool:
        return block_kind(sch, block) == "spatial"

    def transform(self, sch: Any, block: Any) -> None:
        schedule_elementwise(sch, block, self.params)


class SingleThreadRule(ScheduleRule):
    """A block no other rule could bind (no data-parallel loop at the top of its nest, a
    reducer threads cannot combine) as a kernel of one thread: two unit loops
    (``add_unit_loop``) bound to ``blockIdx.x`` and ``threadIdx.x``.  Left to
    :func:`.fallback.bind_unbound` when that would spread the nest over threads, or when
    the nest holds other blocks or uses a root ``local`` buffer."""

    name = "single_thread"

    def __init__(self, params: GPUParams):
        self.params = params

    def applies(self, sch: Any, block: Any) -> bool:
        from ..analysis import blocks_under
        from .fallback import _accesses, _has_kernel, _parallel_nest, is_local_scope

        sref = sch.get_sref(block)
        top = sref
        while top.parent is not None and top.parent.parent is not None:
            top = top.parent
        stmt = top.realize if top.is_block else top.stmt
        if top.parent is None or _has_kernel(stmt) or not _accesses(stmt):
            return False
        if top.is_loop and (len(blocks_under(top)) != 1
                            or _parallel_nest(top.stmt, [], self.params, "probe") is not None):
            return False
        root = top.parent.block
        local = {id(b) for b in root.alloc_buffers if is_local_scope(b.scope)}
        return not any(id(a.buffer) in local for a in _accesses(stmt))

    def transform(self, sch: Any, block: Any) -> None:
        loops = sch.get_loops(block)
        tx = sch.add_unit_loop(loops[0] if loops else block)
        bx = sch.add_unit_loop(tx)
        sch.bind(bx, "blockIdx.x")
        sch.bind(tx, "threadIdx.x")


class FallbackRule(ScheduleRule):
    """Any block: its data-parallel outer loops bound, one thread per output."""

    name = "fallback"

    def __init__(self, params: GPUParams):
        self.params = params

    def transform(self, sch: Any, block: Any) -> None:
        schedule_block_fallback(sch, block, self.params)


def gpu_rules(params: GPUParams) -> list[ScheduleRule]:
    """The default GPU rules for ``params``, in the order they are tried."""
    return [
        AutoInline(),
        MatmulRule(params),
        RowPipelineRule(params),
        FirstOf("per_block", [ReductionRule(params), ElementwiseRule(params)]),
        FallbackRule(params),
        SingleThreadRule(params),
    ]


def _is_block_program(func: PrimFunc) -> bool:
    return isinstance(func.body, (BlockRealize, Block))


def schedule_gpu_func(func: PrimFunc, target: Any = None, params: Optional[GPUParams] = None,
                      rules: Optional[Sequence[ScheduleRule]] = None,
                      name: str = "main") -> PrimFunc:
    """``func`` scheduled by ``rules`` (default: the rules plugins contribute for
    ``target``, or :func:`gpu_rules` of ``params``), then :func:`.fallback.bind_unbound`;
    unchanged when it is already scheduled or lowered, or needs no kernel."""
    if func.attrs.get(SCHEDULED_ATTR) or func.attrs.get("tir.blocks_lowered"):
        return func
    params = params or GPUParams.from_target(target)
    if not _is_block_program(func):
        bound = bind_unbound(func, params)
        return func if bound is func else bound.with_attr(SCHEDULED_ATTR, True)
    if rules is None:
        rules = _target_rules(target, params)
    return schedule_func(func, rules, name, finish=lambda f: bind_unbound(f, params))


def _target_rules(target: Any, params: GPUParams) -> list[ScheduleRule]:
    """The rules plugins give for ``target``; the shared GPU rules of ``params`` when the
    caller passed its own params or no plugin answers."""
    from tvm.ir.target import Target

    if isinstance(target, Target) and params == GPUParams.from_target(target):
        found = rules_for_target(target)
        if found:
            return found
    return gpu_rules(params)


def apply_default_gpu_schedule(mod: IRModule, target: Any = None) -> IRModule:
    """Every unscheduled PrimFunc of ``mod`` scheduled for the GPU ``target``."""
    params = GPUParams.from_target(target)
    rules = _target_rules(target, params)
    return schedule_module(mod, lambda f, n: schedule_gpu_func(f, target, params, rules, n))
