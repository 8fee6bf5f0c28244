"""Elementwise, broadcast and other injective blocks.

The innermost loop (or the two innermost, fused, when every access walks them as one
contiguous run) is split by a vector length and vectorized; the loops outside are fused
into one parallel loop.  A symbolic or odd innermost extent stays a plain serial loop,
which LLVM's loop vectorizer widens at run time, and so does a padding stage (its
``if_then_else`` on the lane index guards a load, which VectorizeLoop keeps scalar).
"""

from __future__ import annotations

from typing import Any, Optional

from tvm.tir.expr import Var
from tvm.tir.schedule.rules import loop_extent

from .analysis import BlockInfo, is_padding_like
from .common import parallelize_outer, vector_factor, vectorize_innermost
from .cpu import CPUInfo

__all__ = ["schedule_spatial", "schedule_loops_spatial"]

#: vectors per vectorized iteration of an elementwise loop (more work per iteration)
ELEMENTWISE_VECTORS = 2


def _suffix_contiguous(info: BlockInfo, inner: int, outer: int) -> bool:
    """Every access uses iteration variables ``outer``, ``inner`` as its last two indices
    (exactly) with buffer extents equal to theirs, or uses neither: fusing the two loops
    keeps every access contiguous."""
    accesses = ([info.write] if info.write else []) + info.loads
    for acc in accesses:
        used = any(outer in u or inner in u for u in acc.vars_in)
        if not used:
            continue
        if len(acc.forms) < 2 or acc.forms[-1] != {inner: 1} or acc.forms[-2] != {outer: 1}:
            return False
        if any(outer in u or inner in u for u in acc.vars_in[:-2]):
            return False
        idx = acc.load.indices
        if not (isinstance(idx[-1], Var) and isinstance(idx[-2], Var)):
            return False
        shape = acc.buffer.shape
        ext = info.extents[inner]
        dim = shape[-1]
        if ext is None or getattr(dim, "value", None) != ext:
            return False
    return True


def schedule_loops_spatial(sch: Any, loops: list, info: Optional[BlockInfo], cpu: CPUInfo,
                           parallel: bool = True, dtype: str = "float32",
                           vectorize: bool = True) -> None:
    """Vectorize the inner end and parallelize the outer end of a nest of data-parallel
    loops (outermost first).  ``info`` describes the block they run when its bindings are
    trivial (it allows fusing the two inner loops); ``dtype`` sets the vector length when
    ``info`` is None."""
    if not loops:
        return
    work: Optional[int] = 1
    for lp in loops:
        e = loop_extent(sch, lp)
        work = None if e is None or work is None else work * e
    lanes = cpu.lanes(info.dtype if info is not None else dtype)
    inner = loops[-1]
    rest = list(loops[:-1])
    ext = loop_extent(sch, inner)
    if info is not None and len(loops) >= 2 and info.trivial_binding and \
            vector_factor(ext, lanes) is None and len(info.ivars) == len(loops):
        n = len(loops)
        outer_ext = loop_extent(sch, loops[-2])
        if ext is not None and outer_ext is not None and \
                vector_factor(ext * outer_ext, lanes) is not None and \
                _suffix_contiguous(info, n - 1, n - 2):
            inner = sch.fuse(loops[-2], loops[-1])
            rest = list(loops[:-2])
    vec_outer = vectorize_innermost(sch, inner, lanes, ELEMENTWISE_VECTORS) \
        if vectorize else None
    if vec_outer is not None and vec_outer is not inner:
        rest.append(vec_outer)
    elif vec_outer is None:
        rest.append(inner)
    if not parallel:
        return
    parallelize_outer(sch, rest, cpu.parallel_tasks, work)


def schedule_spatial(sch: Any, block: Any, info: BlockInfo, cpu: CPUInfo) -> None:
    """The elementwise rule for a data-parallel block at the root of its function."""
    loops = sch.get_loops(block)
    schedule_loops_spatial(sch, loops, info, cpu, vectorize=not is_padding_like(info))
