"""AutoBind: every block still outside a GPU kernel gets one, with a sampled block size.

The data-parallel loops at the top of the block's nest are fused, split ``[None, T]`` with
the thread count ``T`` drawn by ``sch.sample_categorical`` among powers of two up to the
target's threads per block (and not above the loop's extent rounded up to a power of two),
and bound to ``blockIdx.x`` / ``threadIdx.x``; a reduction or other loops below stay serial
in each thread.  A block whose nest starts with no data-parallel loop runs on one thread
(two unit loops bound to ``blockIdx.x`` and ``threadIdx.x``).

It is the last GPU rule: elementwise blocks, the epilogues and reductions the other rules
did not take, and whatever a tuned design space leaves outside kernels.
"""

from __future__ import annotations

from typing import Any, Sequence

from tvm.tir.schedule.gpu_rules.common import next_pow2
from tvm.tir.schedule.rules import ScheduleRule, loop_extent, loop_roles

__all__ = ["AutoBind", "in_kernel", "thread_candidates"]


def in_kernel(sch: Any, block: Any) -> bool:
    """Whether a loop around ``block`` is bound to a thread axis (it is inside a kernel)."""
    return any(sch.get(lp).thread_binding is not None for lp in sch.get_loops(block))


def thread_candidates(extents: Sequence[int], max_threads: int, extent: Any = None,
                      minimum: int = 1) -> list[int]:
    """The ``extents`` not above ``max_threads`` nor (for a constant ``extent``) above
    ``extent`` rounded up to a power of two, and at least ``minimum``; the smallest allowed
    one when none is left."""
    cap = max_threads if extent is None else min(max_threads, next_pow2(max(1, extent)))
    out = sorted({int(e) for e in extents if minimum <= int(e) <= cap})
    if not out:
        allowed = [int(e) for e in extents if int(e) <= max_threads]
        out = [min(allowed)] if allowed else [max(1, min(max_threads, cap))]
    return out


class AutoBind(ScheduleRule):
    """Bind a block outside any kernel to ``blockIdx.x`` / ``threadIdx.x`` (see the module
    docstring); ``thread_extents`` are the block sizes sampled from."""

    name = "auto_bind"

    def __init__(self, max_threads_per_block: int = 1024,
                 thread_extents: Sequence[int] = (32, 64, 128, 256, 512, 1024)):
        if max_threads_per_block < 1:
            raise ValueError(f"AutoBind: max_threads_per_block must be positive, got "
                             f"{max_threads_per_block}")
        if not thread_extents or any(int(t) < 1 for t in thread_extents):
            raise ValueError(f"AutoBind: thread_extents must be positive ints, got "
                             f"{list(thread_extents)}")
        self.max_threads_per_block = int(max_threads_per_block)
        self.thread_extents = tuple(int(t) for t in thread_extents)

    @classmethod
    def from_target(cls, target: Any, **kwargs: Any) -> AutoBind:
        from tvm.ir.target import as_target
        from tvm.tir.transform._gpu import gpu_limits

        kwargs.setdefault("max_threads_per_block",
                          gpu_limits(as_target(target)).max_num_threads)
        return cls(**kwargs)

    def applies(self, sch: Any, block: Any) -> bool:
        return not in_kernel(sch, block)

    def apply(self, sch: Any, block: Any) -> list[Any]:
        roles = loop_roles(sch, block)
        outer = []
        for lp, role in roles:
            if role != "S":
                break
            outer.append(lp)
        if not outer:
            loops = [lp for lp, _ in roles]
            tx = sch.add_unit_loop(loops[0] if loops else block)
            bx = sch.add_unit_loop(tx)
            sch.bind(bx, "blockIdx.x")
            sch.bind(tx, "threadIdx.x")
            return [sch]
        fused = sch.fuse(*outer) if len(outer) > 1 else outer[0]
        cands = thread_candidates(self.thread_extents, self.max_threads_per_block,
                                  loop_extent(sch, fused))
        threads = sch.sample_categorical(cands, [1.0 / len(cands)] * len(cands))
        bx, tx = sch.split(fused, [None, threads])
        sch.bind(bx, "blockIdx.x")
        sch.bind(tx, "threadIdx.x")
        return [sch]


