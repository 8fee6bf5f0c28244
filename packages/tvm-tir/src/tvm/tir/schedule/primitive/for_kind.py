"""Loop kinds: parallel, vectorize, unroll and bind (GPU thread axes).

A loop can run its iterations concurrently (parallel, vectorized, bound to a thread axis)
only if every block iteration it drives is data-parallel: a loop feeding a reduction
iteration would race on the accumulator.  ``threadIdx`` axes are the exception TVM makes
for cross-thread reductions (a reduction block driven by a threadIdx loop).
"""

from __future__ import annotations

import re
from typing import Optional

from ...expr import IterVar, IterVarType, Var
from ...stmt import ForKind
from ...stmt_functor import uses_var
from .. import analysis as A
from ..error import ScheduleError
from ..handles import LoopRV
from ..instruction import instruction
from ..state import ScheduleState, StmtSRef

__all__ = ["set_loop_kind", "check_parallelizable", "check_no_shared_writes", "ForKindMixin", "THREAD_AXIS_PATTERN"]

THREAD_AXIS_PATTERN = re.compile(r"^(blockIdx\.[xyz]|threadIdx\.[xyz]|vthread(\.[xyz])?)$")

_VERB = {
    ForKind.PARALLEL: "parallel",
    ForKind.VECTORIZED: "vectorize",
    ForKind.UNROLLED: "unroll",
    ForKind.THREAD_BINDING: "bind",
}


def check_parallelizable(primitive: str, loop_sref: StmtSRef,
                         thread_axis: Optional[str] = None) -> None:
    """Raise unless every block iteration driven by the loop may run concurrently."""
    allow_reduce = thread_axis is not None and thread_axis.startswith("threadIdx")
    for use in A.loop_users(loop_sref):
        kind = use.iter_var.iter_type
        if kind == IterVarType.DATA_PAR:
            continue
        if kind == IterVarType.COMM_REDUCE and allow_reduce and A.is_reduction_block(use.block):
            continue
        what = "reduction" if kind == IterVarType.COMM_REDUCE else kind.name.lower()
        raise ScheduleError(
            primitive, f"the loop drives the {what} iteration variable "
            f"{use.iter_var.var.name!r} of block {use.block.block.name_hint!r}; only loops over "
            f"data-parallel iterations can be {_done(primitive)}", loop_sref,
            hint="split or reorder so that the reduction loop stays serial, or use rfactor",
        )


def check_no_shared_writes(primitive: str, loop_sref: StmtSRef) -> None:
    """Raise if a block under the loop would write the same place in every iteration.

    A block whose data-parallel iterations do not follow the loop variable (and whose write
    regions do not mention it) repeats its writes in each iteration: run concurrently, the
    iterations race on the buffers it writes, unless those are allocated under the loop.
    """
    var = loop_sref.loop.loop_var
    local: set[int] = set()
    for block in A.blocks_under(loop_sref):
        local.update(id(b) for b in block.block.alloc_buffers)
    for block in A.get_child_blocks(loop_sref):
        blk = block.block
        shared = [w for w in blk.writes if id(w.buffer) not in local]
        if not shared:
            continue
        if any(iv.iter_type == IterVarType.DATA_PAR and uses_var(value, lambda v: v is var)
               for iv, value in A.iter_bindings(block)):
            continue
        if any(uses_var(r.min, lambda v: v is var) for w in shared for r in w.region):
            continue
        raise ScheduleError(
            primitive, f"block {blk.name_hint!r} under the loop writes "
            f"{shared[0].buffer.name!r} at the same place in every iteration (its iterations "
            "do not follow the loop variable), so running the iterations concurrently would "
            "race on it", loop_sref,
            hint="compute the block under the loop only for the loop's own part "
            "(compute_at/reverse_compute_at with an exact region), or move it out of the loop",
        )


def _done(primitive: str) -> str:
    return {"parallel": "parallel", "vectorize": "vectorized", "bind": "bound to a thread "
            "axis"}.get(primitive, primitive)


def set_loop_kind(state: ScheduleState, loop_sref: StmtSRef, kind: ForKind,
                  thread_axis: Optional[str] = None) -> None:
    """Change the kind of a loop after checking that the change is legal."""
    primitive = _VERB.get(kind, "set_loop_kind")
    loop = loop_sref.loop
    binding = None
    if kind == ForKind.THREAD_BINDING:
        if not isinstance(thread_axis, str) or not THREAD_AXIS_PATTERN.match(thread_axis):
            raise ScheduleError(
                "bind", f"unknown thread axis {thread_axis!r}; expected blockIdx.x/y/z, "
                "threadIdx.x/y/z, vthread or vthread.x/y/z", loop_sref,
            )
        binding = IterVar(None, Var(thread_axis, loop.loop_var.dtype), IterVarType.THREAD_INDEX,
                          thread_axis)
    if kind in (ForKind.PARALLEL, ForKind.VECTORIZED, ForKind.THREAD_BINDING):
        check_parallelizable(primitive, loop_sref, thread_axis)
    if kind == ForKind.PARALLEL:
        check_no_shared_writes(primitive, loop_sref)
    new = loop.with_fields(kind=kind, thread_binding=binding)
    if new is not loop:
        state.replace({loop: new}, func_name=loop_sref.func_name)


class ForKindMixin:
    """parallel / vectorize / unroll / bind methods of :class:`Schedule`."""

    @instruction("Parallel", inputs=("loop",), outputs="none")
    def parallel(self, loop: LoopRV) -> None:
        """Run the iterations of ``loop`` in parallel (data-parallel iterations only)."""
        set_loop_kind(self._state, self._loop_sref(loop, "parallel"), ForKind.PARALLEL)

    @instruction("Vectorize", inputs=("loop",), outputs="none")
    def vectorize(self, loop: LoopRV) -> None:
        """Vectorize ``loop`` (data-parallel iterations only)."""
        set_loop_kind(self._state, self._loop_sref(loop, "vectorize"), ForKind.VECTORIZED)

    @instruction("Unroll", inputs=("loop",), outputs="none")
    def unroll(self, loop: LoopRV) -> None:
        """Unroll ``loop`` fully when lowered."""
        set_loop_kind(self._state, self._loop_sref(loop, "unroll"), ForKind.UNROLLED)

    @instruction("Bind", inputs=("loop",), attrs=("thread_axis",), outputs="none")
    def bind(self, loop: LoopRV, thread_axis: str) -> None:
        """Bind ``loop`` to a GPU thread axis (``"blockIdx.x"``, ``"threadIdx.y"``,
        ``"vthread"``)."""
        set_loop_kind(self._state, self._loop_sref(loop, "bind"), ForKind.THREAD_BINDING,
                      thread_axis)
