"""Elementwise (spatial) blocks: fuse the loops, split by the block size, bind.

``B[i, j] = f(A[i, j])`` becomes ``for bx in blockIdx.x: for tx in threadIdx.x`` over the
fused iteration space; when the extent is a multiple of ``threads * vector_lanes`` and the
block only touches 32-bit data, the innermost ``vector_lanes`` iterations are vectorized
(``float4`` loads and stores on CUDA, ``vload4`` on OpenCL).
"""

from __future__ import annotations

from typing import Any

from ...expr import BufferLoad
from ...stmt import BufferStore
from ...stmt_functor import post_order_visit
from ..handles import BlockRV
from ..rules import RuleNotApplicable, loop_extent
from .common import GPUParams

__all__ = ["schedule_elementwise", "vectorizable"]

_VECTOR_DTYPES = ("float32", "int32", "uint32")


def vectorizable(block: Any) -> bool:
    """Whether every access of the block's body is to 32-bit data (a native vector type)."""
    if not isinstance(block.body, BufferStore):
        return False
    ok = [True]

    def visit(x: Any) -> None:
        if isinstance(x, (BufferLoad, BufferStore)) and x.buffer.dtype not in _VECTOR_DTYPES:
            ok[0] = False

    post_order_visit(block.body, visit)
    return ok[0]


def schedule_elementwise(sch: Any, block: BlockRV, params: GPUParams) -> None:
    """Bind a spatial block to ``blockIdx.x``/``threadIdx.x`` (see the module docstring)."""
    loops = sch.get_loops(block)
    if not loops:
        raise RuleNotApplicable(f"block {sch.get(block).name_hint!r} has no loops to bind")
    fused = sch.fuse(*loops) if len(loops) > 1 else loops[0]
    extent = loop_extent(sch, fused)
    threads = params.max_threads
    lanes = params.vector_lanes
    if (lanes > 1 and extent is not None and extent % (threads * lanes) == 0
            and vectorizable(sch.get(block))):
        bx, tx, vec = sch.split(fused, [None, threads, lanes])
        sch.vectorize(vec)
    elif extent is not None and extent <= threads:
        bx, tx = sch.split(fused, [1, extent])
    else:
        bx, tx = sch.split(fused, [None, threads])
    sch.bind(bx, "blockIdx.x")
    sch.bind(tx, "threadIdx.x")
