"""RewriteParallelVectorizeUnroll: the root annotations of ParallelizeVectorizeUnroll
made real, with traced primitives (so the candidate's trace replays it).

For every leaf block, in program order, its loops are read from the outside in and from
the inside out:

* parallel: the outermost serial loops over data-parallel iterations only, with constant
  extents, while their product stays within ``meta_schedule.parallel`` (the loop that
  passes it still joins) and each loop holds just the next one; fused, then ``parallel``;
  a nest whose outer loop is parallel already (shared with an earlier block) is left;
* vectorize: the innermost loop, the block directly under it, when it drives the last
  index of the block's store (contiguous lanes; a fused loop's ``// n`` and ``% n`` would
  not be) and its extent is within ``meta_schedule.vectorize``;
* unroll: the serial loops above those, innermost first, while the steps they cover (a
  vector step counts one) stay within ``meta_schedule.unroll_explicit``; ``unroll``.

The annotations are removed (``unannotate``).  A schedule without them is left as it is.
"""

from __future__ import annotations

from typing import Any, Optional

from tvm.tir.expr_util import const_int
from tvm.tir.schedule import analysis as A
from tvm.tir.schedule.error import ScheduleError
from tvm.tir.stmt import BlockRealize, BufferStore, For, ForKind
from tvm.tir.stmt_functor import free_vars

from ..schedule_rule.parallel_vectorize_unroll import PARALLEL_ATTR, UNROLL_ATTR, VECTORIZE_ATTR
from .postproc import Postproc

__all__ = ["RewriteParallelVectorizeUnroll", "root_block", "leaf_blocks"]


def root_block(sch: Any) -> Any:
    """The BlockRV of the root block of the function ``sch`` works on."""
    return sch.get_block(sch.state.root(sch.func_working_on).block.name_hint)


def leaf_blocks(sch: Any, parent: Any = None) -> list[Any]:
    """BlockRVs of the blocks with no block inside, in program order."""
    parent = root_block(sch) if parent is None else parent
    out = []
    for child in sch.get_child_blocks(parent):
        inner = leaf_blocks(sch, child)
        out.extend(inner if inner else [child])
    return out


def _annotation(anns: Any, key: str) -> Optional[int]:
    if key not in anns:
        return None
    value = const_int(anns[key])
    if value is None:
        raise ScheduleError("RewriteParallelVectorizeUnroll", f"annotation {key!r} is "
                            f"{anns[key]!r}, not an integer")
    return value


def _data_parallel(sch: Any, loop: Any) -> bool:
    from tvm.tir.expr import IterVarType

    return all(use.iter_var.iter_type == IterVarType.DATA_PAR
               for use in A.loop_users(sch.get_sref(loop)))


def _plain(sch: Any, loop: Any) -> Optional[int]:
    """The loop's constant extent when it is serial and unbound, else None."""
    f: For = sch.get(loop)
    if f.kind != ForKind.SERIAL or f.thread_binding is not None or f.annotations:
        return None
    return const_int(f.extent)


def _drives_last_index(sch: Any, block: Any, loop: Any) -> bool:
    """The loop's variable reaches the last index of the block's store through a
    data-parallel iteration variable."""
    b = sch.get(block)
    if not isinstance(b.body, BufferStore) or not b.body.indices:
        return False
    last = set(free_vars(b.body.indices[-1]))
    return any(use.iter_var.var in last for use in A.loop_users(sch.get_sref(loop))
               if use.block.block is b)


class RewriteParallelVectorizeUnroll(Postproc):
    """See the module doc."""

    name = "rewrite_parallel_vectorize_unroll"

    def apply(self, sch: Any) -> bool:
        root = root_block(sch)
        anns = sch.get(root).annotations
        par = _annotation(anns, PARALLEL_ATTR)
        vec = _annotation(anns, VECTORIZE_ATTR)
        unroll = _annotation(anns, UNROLL_ATTR)
        for key, value in ((PARALLEL_ATTR, par), (VECTORIZE_ATTR, vec), (UNROLL_ATTR, unroll)):
            if value is not None:
                sch.unannotate(root, key)
        if par is None and vec is None and unroll is None:
            return True
        for block in leaf_blocks(sch):
            if par is not None and par > 1:
                self._parallel(sch, block, par)
            vectorized = self._vectorize(sch, block, vec) if vec is not None and vec > 1 else 0
            if unroll:
                self._unroll(sch, block, unroll, vectorized)
        return True

    @staticmethod
    def _parallel(sch: Any, block: Any, limit: int) -> None:
        loops = sch.get_loops(block)
        chosen, prod = [], 1
        for loop in loops:
            ext = _plain(sch, loop)
            if ext is None or not _data_parallel(sch, loop):
                break
            chosen.append(loop)
            prod *= ext
            if prod > limit or not isinstance(sch.get(loop).body, For):
                break
        if not chosen or prod <= 1:
            return
        fused = sch.fuse(*chosen) if len(chosen) > 1 else chosen[0]
        sch.parallel(fused)

    @staticmethod
    def _vectorize(sch: Any, block: Any, limit: int) -> int:
        """Vectorize the innermost loop when it may run as one vector step; returns how
        many loops were vectorized (0 or 1)."""
        loops = sch.get_loops(block)
        if not loops:
            return 0
        loop = loops[-1]
        ext = _plain(sch, loop)
        if ext is None or ext <= 1 or ext > limit or \
                not isinstance(sch.get(loop).body, BlockRealize) or \
                not _data_parallel(sch, loop) or not _drives_last_index(sch, block, loop):
            return 0
        sch.vectorize(loop)
        return 1

    @staticmethod
    def _unroll(sch: Any, block: Any, limit: int, vectorized: int) -> None:
        loops = sch.get_loops(block)
        if vectorized:
            loops = loops[:-1]  # the fused vector loop (one step)
        steps = 1
        for k in range(len(loops) - 1, -1, -1):
            loop = loops[k]
            f = sch.get(loop)
            inner_ok = isinstance(f.body, (For, BlockRealize))
            ext = _plain(sch, loop)
            if ext is None or not inner_ok or steps * ext > limit:
                break
            steps *= ext
            if ext > 1:
                sch.unroll(loop)
