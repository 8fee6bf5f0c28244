"""Target parameters and the matmul pattern of the default GPU rules (block kinds, loop
roles and extents come from :mod:`tvm.tir.schedule.rules`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from ...expr import BufferLoad, Cast, IterVarType, Mul, Var
from ...stmt import Block, BufferStore
from ...stmt_functor import free_vars

__all__ = ["GPUParams", "matmul_operands", "next_pow2"]


@dataclass(frozen=True)
class GPUParams:
    """What the rules need to know about the target."""

    max_threads: int = 256
    warp_size: int = 32
    max_shared_memory: int = 49152
    vector_lanes: int = 4

    @staticmethod
    def from_target(target: Any) -> GPUParams:
        from ...transform._gpu import gpu_limits

        limits = gpu_limits(target)
        return GPUParams(max_threads=max(1, min(limits.max_num_threads, 256)),
                         warp_size=max(1, limits.thread_warp_size),
                         max_shared_memory=limits.max_shared_memory_per_block)


def next_pow2(n: int) -> int:
    p = 1
    while p < n:
        p *= 2
    return p


def _load(e: Any) -> Optional[BufferLoad]:
    while isinstance(e, Cast):
        e = e.value
    return e if isinstance(e, BufferLoad) else None


def matmul_operands(block: Block) -> Optional[tuple[Any, Any]]:
    """``(A, B)`` buffers when ``block`` computes ``C[...] += A[...] * B[...]`` with one
    reduction variable indexing both operands and the two last spatial variables of ``C``
    split between them (a matmul, possibly batched or transposed); else None."""
    st = block.body
    reduce = [iv.var for iv in block.iter_vars if iv.iter_type == IterVarType.COMM_REDUCE]
    spatial = [iv.var for iv in block.iter_vars if iv.iter_type == IterVarType.DATA_PAR]
    if len(reduce) != 1 or len(spatial) < 2 or not isinstance(st, BufferStore):
        return None
    v = st.value
    if not hasattr(v, "a") or not hasattr(v, "b") or type(v).__name__ != "Add":
        return None
    acc, prod = (v.a, v.b) if _load(v.a) is not None and _load(v.a).buffer is st.buffer \
        else (v.b, v.a)
    if _load(acc) is None or _load(acc).buffer is not st.buffer:
        return None
    while isinstance(prod, Cast):
        prod = prod.value
    if not isinstance(prod, Mul):
        return None
    a, b = _load(prod.a), _load(prod.b)
    if a is None or b is None:
        return None
    k = reduce[0]

    def uses(load: BufferLoad) -> set[Var]:
        return {x for i in load.indices for x in free_vars(i)}

    ua, ub = uses(a), uses(b)
    i, j = spatial[-2], spatial[-1]
    if k not in ua or k not in ub:
        return None
    if i in ua and j in ub and j not in ua and i not in ub:
        return a.buffer, b.buffer
    if j in ua and i in ub and i not in ua and j not in ub:
        return b.buffer, a.buffer
    return None
