"""Matmul: shared-memory tiling of the operands and register blocking of the result.

For ``C[b.., i, j] += A[b.., i, k] * B[b.., k, j]`` (batched or transposed operands too),
with ``TY x TX`` threads each computing a ``VI x VJ`` tile of ``C`` in registers::

    for by in blockIdx.y, bx in blockIdx.x:            # a (TY*VI) x (TX*VJ) tile of C
        C_local = 0                                     # (TY, TX) threads, VI x VJ each
        for ko in range(K // KT):
            A_shared <- A[tile rows, ko*KT : ko*KT+KT]  # all threads cooperate
            B_shared <- B[ko*KT : ko*KT+KT, tile cols]
            for ty, tx (threads), ki, vi, vj (unrolled):
                C_local[vi, vj] += A_shared[.., ki] * B_shared[ki, ..]
        C[tile] <- C_local

``cache_read(..., "shared")`` + ``compute_at(ko)`` stage the operands, ``cache_write(...,
"local")`` keeps the accumulators in registers; CompactBufferAllocation then shrinks the
staging buffers to one tile and InjectStorageSync puts the barriers around the copies.
"""

from __future__ import annotations

from typing import Any

from ...transform._gpu import dtype_bytes
from ..handles import BlockRV, LoopRV
from ..rules import RuleNotApplicable, loop_extent, loop_roles
from .common import GPUParams, matmul_operands

__all__ = ["schedule_matmul", "MatmulConfig", "matmul_config"]


class MatmulConfig:
    """Threads (``ty x tx``), register tile (``vi x vj``) and reduction tile ``kt``."""

    def __init__(self, ty: int, tx: int, vi: int, vj: int, kt: int) -> None:
        self.ty, self.tx, self.vi, self.vj, self.kt = ty, tx, vi, vj, kt

    def shared_bytes(self, dtype: str) -> int:
        return (self.ty * self.vi + self.tx * self.vj) * self.kt * dtype_bytes(dtype)

    def __repr__(self) -> str:
        return (f"MatmulConfig(threads={self.ty}x{self.tx}, regs={self.vi}x{self.vj}, "
                f"kt={self.kt})")


def matmul_config(params: GPUParams, m: int, n: int, dtype: str) -> MatmulConfig:
    """A tile configuration that fits the target's threads and shared memory."""
    t = 16 if params.max_threads >= 256 else 8
    if params.max_threads < 64:
        raise RuleNotApplicable("fewer than 64 threads per block")
    vi = 4 if m >= 4 * t else (2 if m >= 2 * t else 1)
    vj = 4 if n >= 4 * t else (2 if n >= 2 * t else 1)
    cfg = MatmulConfig(t, t, vi, vj, 8)
    while cfg.shared_bytes(dtype) > params.max_shared_memory and cfg.kt > 1:
        cfg.kt //= 2
    return cfg


def _coop_fetch(sch: Any, block: BlockRV, anchor: LoopRV, cfg: MatmulConfig) -> None:
    loops = sch.get_loops(block)
    anchor_var = sch.get(anchor).loop_var
    idx = [sch.get(lp).loop_var for lp in loops].index(anchor_var)
    inner = loops[idx + 1:]
    fused = sch.fuse(*inner) if len(inner) > 1 else inner[0]
    _, ty, tx = sch.split(fused, [None, cfg.ty, cfg.tx])
    sch.bind(ty, "threadIdx.y")
    sch.bind(tx, "threadIdx.x")


def _bind_tile(sch: Any, block: BlockRV, anchor: LoopRV, cfg: MatmulConfig) -> None:
    """Give ``block``'s loops under ``anchor`` (a BM x BN tile) the threads' mapping."""
    loops = sch.get_loops(block)
    anchor_var = sch.get(anchor).loop_var
    idx = [sch.get(lp).loop_var for lp in loops].index(anchor_var)
    inner = loops[idx + 1:]
    if len(inner) < 2:
        raise RuleNotApplicable("the tile of C has fewer than two loops")
    i, j = inner[-2], inner[-1]
    io, ii = sch.split(i, [cfg.ty, cfg.vi])
    jo, ji = sch.split(j, [cfg.tx, cfg.vj])
    sch.reorder(io, jo, ii, ji)
    sch.bind(io, "threadIdx.y")
    sch.bind(jo, "threadIdx.x")


def schedule_matmul(sch: Any, block: BlockRV, params: GPUParams) -> None:
    """Tile ``block`` (a matmul, see :func:`~.common.matmul_operands`) for the GPU."""
    b = sch.get(block)
    operands = matmul_operands(b)
    if operands is None:
        raise RuleNotApplicable(f"block {b.name_hint!r} is not a matmul")
    roles = loop_roles(sch, block)
    kinds = [r for _, r in roles]
    if kinds.count("R") != 1 or kinds[-1] != "R" or any(r not in ("S", "R") for r in kinds) \
            or kinds.count("S") < 2:
        raise RuleNotApplicable("matmul loops are not [batch..., i, j, k]")
    loops = [lp for lp, _ in roles]
    *batch, i, j, k = loops
    m, n, kk = (loop_extent(sch, lp) for lp in (i, j, k))
    if m is None or n is None or kk is None or m < 16 or n < 16:
        raise RuleNotApplicable("the matmul is small or has symbolic extents")
    cfg = matmul_config(params, m, n, b.writes[0].buffer.dtype)
    bi, ti, vi = sch.split(i, [None, cfg.ty, cfg.vi])
    bj, tj, vj = sch.split(j, [None, cfg.tx, cfg.vj])
    ko, ki = sch.split(k, [None, cfg.kt])
    sch.reorder(bi, bj, ko, ti, tj, ki, vi, vj)
    if batch:
        bz = sch.fuse(*batch) if len(batch) > 1 else batch[0]
        sch.bind(bz, "blockIdx.z")
    sch.bind(bi, "blockIdx.y")
    sch.bind(bj, "blockIdx.x")
    sch.bind(ti, "threadIdx.y")
    sch.bind(tj, "threadIdx.x")
    for lp in (ki, vi, vj):
        sch.unroll(lp)
    write_back = sch.cache_write(block, 0, "local")
    sch.reverse_compute_at(write_back, bj)
    _bind_tile(sch, write_back, bj, cfg)
    for buf in operands:
        reads = [r.buffer for r in sch.get(block).reads]
        index = next(x for x, r in enumerate(reads) if r is buf)
        staged = sch.cache_read(block, index, "shared")
        sch.compute_at(staged, ko)
        _coop_fetch(sch, staged, ko, cfg)
    init = sch.decompose_reduction(block, ko)
    init_loops = sch.get_loops(init)
    if not any(sch.get(lp).thread_binding is not None for lp in init_loops):
        _bind_tile(sch, init, bj, cfg)
