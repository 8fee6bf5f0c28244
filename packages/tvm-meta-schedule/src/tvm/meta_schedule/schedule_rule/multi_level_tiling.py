"""MultiLevelTiling: the tuner's tiling of a reduction with data reuse (matmul, conv).

For a structure such as ``"SSRSRS"`` (CPU), every spatial loop of the block is split into
as many tiles as the structure has ``S`` and every reduction loop into as many as it has
``R``, the factors drawn by ``sample_perfect_tile`` (the innermost at most
``max_innermost_factor``, a few vector registers of the output's dtype by default), and the
tiles are reordered level by level::

    S0 S1 R0 S2 R1 S3     (S0: the outer tiles of every spatial loop, ...)

The write side (``reuse_write``): an elementwise consumer (bias, relu) is computed per
tile of level 1 or 2 (``reverse_compute_at``), otherwise the block accumulates into a
write cache (``cache_write`` "global") copied back per tile.  With ``"may"`` the untouched
variant is a candidate too: every variant is one design space.

Operand packing (``pack_operands``): the operand read along the output's last variable
and walked by the reduction (a matmul's ``B[k, j]``, a dense layer's ``W[j, k]``, a conv's
weights in HWIO) is copied in the kernel into panels ``P[j // NR, k, j % NR]`` (``cache_read`` +
``transform_layout``), and the innermost tile of ``j`` is then exactly ``NR`` (the outer
tiles of ``j`` are sampled), so the innermost tile reads one contiguous stream; ``NR`` is
1, 2 or 4 vector registers (``pack_registers``).  A layout-free constant's copy is
annotated ``layout_rewrite_preproc`` (packed once at compile time).  A structural choice
cannot be a replayable decision, so each packed variant is another design space.

Loop kinds (parallel, vectorize, unroll) are left to ParallelizeVectorizeUnroll and its
postprocessor; the block is annotated ``meta_schedule.tiling_structure`` for them and for
RewriteReductionBlock.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

from tvm.tir.expr import BufferLoad, IterVarType, Var
from tvm.tir.expr_util import const_int
from tvm.tir.schedule.error import ScheduleError
from tvm.tir.schedule.rules import (
    RuleNotApplicable, ScheduleRule, block_kind, claim, fork, loop_extent, loop_roles,
)
from tvm.tir.stmt import BufferStore
from tvm.tir.stmt_functor import free_vars, post_order_visit

from .target_info import cpu_info

__all__ = ["MultiLevelTiling", "TILING_ATTR", "LAYOUT_REWRITE_ATTR"]

#: block annotation naming the tile structure a block was tiled with
TILING_ATTR = "meta_schedule.tiling_structure"
#: cache-read block annotation: the copy of a layout-free constant, done at compile time
LAYOUT_REWRITE_ATTR = "layout_rewrite_preproc"

_REUSE = ("may", "must", "no")


class MultiLevelTiling(ScheduleRule):
    """Sampled multi-level tiling with a write cache (see the module doc).

    ``structure``: a string of ``S`` and ``R`` (``"SSRSRS"`` for CPU); ``reuse_write``:
    ``"may"`` / ``"must"`` / ``"no"``; ``write_levels``: the ``S`` levels (1-based) whose
    tiles the write cache or consumer is computed under; ``pack_operands``: ``"may"`` /
    ``"must"`` / ``"no"``, with panels of ``pack_registers`` vector registers;
    ``max_innermost_factor``: the innermost tile limit (None: four
    vector registers of the block's dtype, from hook ``tvm_tir_cpu_info``).
    """

    name = "multi_level_tiling"

    def __init__(self, structure: str = "SSRSRS", reuse_write: str = "may",
                 write_levels: Sequence[int] = (1, 2), pack_operands: str = "may",
                 max_innermost_factor: Optional[int] = None, cpu: Any = None,
                 pack_registers: Sequence[int] = (1, 2, 4)):
        if not structure or set(structure) - {"S", "R"} or "S" not in structure:
            raise ValueError(f"MultiLevelTiling: structure must be a string of S and R with at "
                             f"least one S, got {structure!r}")
        if reuse_write not in _REUSE or pack_operands not in _REUSE:
            raise ValueError(f"MultiLevelTiling: reuse_write and pack_operands must be one of "
                             f"{_REUSE}, got {reuse_write!r}, {pack_operands!r}")
        levels = [int(lv) for lv in write_levels]
        if any(not 1 <= lv <= structure.count("S") for lv in levels):
            raise ValueError(f"MultiLevelTiling: write_levels {levels} must lie in "
                             f"[1, {structure.count('S')}] for structure {structure!r}")
        if max_innermost_factor is not None and max_innermost_factor < 1:
            raise ValueError("MultiLevelTiling: max_innermost_factor must be positive")
        self.structure = structure
        self.reuse_write = reuse_write
        self.write_levels = levels
        self.pack_operands = pack_operands
        self.pack_registers = [int(r) for r in pack_registers]
        if any(r < 1 for r in self.pack_registers):
            raise ValueError("MultiLevelTiling: pack_registers must be positive")
        self.max_innermost_factor = max_innermost_factor
        self.cpu = cpu

    def initialize_with_tune_context(self, context: Any) -> None:
        if self.cpu is None:
            self.cpu = cpu_info(context.target)

    # -- matching ---------------------------------------------------------------------------
    def applies(self, sch: Any, block: Any) -> bool:
        b = sch.get(block)
        if block_kind(sch, block) != "reduction" or b.init is None or TILING_ATTR in \
                b.annotations or not isinstance(b.body, BufferStore):
            return False
        for loop, role in loop_roles(sch, block):
            if role == "SR" or loop_extent(sch, loop) is None:
                return False
        return _has_reuse(b)

    # -- candidates -------------------------------------------------------------------------
    def apply(self, sch: Any, block: Any) -> list[Any]:
        levels: list[Optional[int]] = []
        if self.reuse_write in ("may", "no"):
            levels.append(None)
        if self.reuse_write in ("may", "must"):
            levels.extend(self.write_levels)
        lanes = self._lanes(sch, block)
        limit = self.max_innermost_factor or 4 * lanes
        packs: list[Optional[int]] = [None]
        if self.pack_operands != "no":
            widths = [r * lanes for r in self.pack_registers if r * lanes <= limit]
            widths = [w for w in dict.fromkeys(widths) if _pack_operand(sch, block, w)]
            if widths:
                packs = widths if self.pack_operands == "must" else [None, *widths]
            elif self.pack_operands == "must":
                raise RuleNotApplicable("no operand to pack into panels")
        variants = [(lv, pk) for pk in packs for lv in levels]
        trials = [sch] + [fork(sch) for _ in variants[1:]]
        out, errors = [], []
        for trial, (level, pack) in zip(trials, variants):
            try:
                self._tile(trial, block, level, pack, lanes)
            except (ScheduleError, RuleNotApplicable) as err:
                errors.append(str(err))
                continue
            out.append(trial)
        if not out:
            raise RuleNotApplicable("; ".join(errors))
        return out

    def _lanes(self, sch: Any, block: Any) -> int:
        cpu = self.cpu if self.cpu is not None else cpu_info("llvm")
        self.cpu = cpu
        return cpu.lanes(sch.get(block).writes[0].buffer.dtype)

    def _tile(self, sch: Any, block: Any, level: Optional[int], nr: Optional[int],
              lanes: int) -> None:
        name = sch.get(block).name_hint
        vec_var = None
        if nr is not None:
            _pack(sch, block, nr)
            vec_var = _vec_loop_var(sch, block)
        limit = self.max_innermost_factor or 4 * lanes
        tiles: dict[str, list[list[Any]]] = {
            k: [[] for _ in range(self.structure.count(k))] for k in "SR"}
        for loop, role in loop_roles(sch, block):
            kind = "R" if role == "R" else "S"
            levels = tiles[kind]
            if not levels:
                raise RuleNotApplicable(f"structure {self.structure!r} has no {kind} level for "
                                        "a loop of that kind")
            if vec_var is not None and sch.get(loop).loop_var is vec_var and len(levels) > 1:
                # the packed operand's panels: the innermost tile is exactly one panel
                outer, inner = sch.split(loop, [None, nr])
                parts = [outer]
                if len(levels) > 2:
                    factors = sch.sample_perfect_tile(outer, n=len(levels) - 1,
                                                      max_innermost_factor=limit)
                    parts = sch.split(outer, factors)
                parts = [*parts, inner]
            else:
                factors = sch.sample_perfect_tile(loop, n=len(levels),
                                                  max_innermost_factor=limit)
                parts = sch.split(loop, factors) if len(levels) > 1 else [loop]
            for lvl, part in enumerate(parts):
                levels[lvl].append(part)
        order: list[Any] = []
        seen = {"S": 0, "R": 0}
        for ch in self.structure:
            order.extend(tiles[ch][seen[ch]])
            seen[ch] += 1
        sch.reorder(*order)
        sch.annotate(block, TILING_ATTR, self.structure)
        if level is None:
            return
        at = tiles["S"][level - 1][-1]
        consumer = _fusible_consumer(sch, block)
        if consumer is not None:
            sch.reverse_compute_at(consumer, at, preserve_unit_loops=True)
            claim(sch, consumer, f"epilogue of {name}")
        else:
            write_back = sch.cache_write(block, 0, "global")
            sch.reverse_compute_at(write_back, at, preserve_unit_loops=True)
            claim(sch, write_back, f"write cache of {name}")

    def __repr__(self) -> str:
        return f"MultiLevelTiling({self.structure!r}, reuse_write={self.reuse_write!r}, " \
               f"pack_operands={self.pack_operands!r})"


def _has_reuse(block: Any) -> bool:
    """Some read misses a spatial iteration variable: its values are reused across it."""
    spatial = {iv.var for iv in block.iter_vars if iv.iter_type == IterVarType.DATA_PAR}
    for region in block.reads:
        used: set = set()
        for rng in region.region:
            used.update(free_vars(rng.min))
        if spatial - used:
            return True
    return False


def _fusible_consumer(sch: Any, block: Any) -> Optional[Any]:
    """The one elementwise (spatial, single-store) consumer of ``block``, if any."""
    consumers = sch.get_consumers(block)
    if len(consumers) != 1:
        return None
    cons = consumers[0]
    if block_kind(sch, cons) != "spatial" or not isinstance(sch.get(cons).body, BufferStore):
        return None
    return cons


def _vec_loop_var(sch: Any, block: Any) -> Optional[Var]:
    """The variable of the loop that drives the output's last index alone."""
    realize = sch.get_sref(block).realize
    vec = realize.block.body.indices[-1]
    for iv, value in zip(realize.block.iter_vars, realize.iter_values):
        if iv.var is vec and isinstance(value, Var):
            return value
    return None


def _pack_operand(sch: Any, block: Any, lanes: int) -> Optional[tuple[int, Any, int]]:
    """``(read index, buffer, dimension)`` of the operand to pack into panels of ``lanes``:
    read with plain iteration variables, the output's last variable in one dimension
    (``B[k, j]`` or ``W[j, k]``; its extent a multiple of ``lanes``, driven by one loop) and
    a reduction variable in another."""
    b = sch.get(block)
    store = b.body
    if not store.indices or not isinstance(store.indices[-1], Var) or lanes < 2 or \
            _vec_loop_var(sch, block) is None:
        return None
    vec = store.indices[-1]
    kinds = {iv.var: iv.iter_type for iv in b.iter_vars}
    loads = _loads(store.value)
    for index, region in enumerate(b.reads):
        buf = region.buffer
        if buf is store.buffer:
            continue
        found = [ld for ld in loads if ld.buffer is buf]
        if len(found) != 1:
            continue
        idx = list(found[0].indices)
        if not idx or any(not isinstance(i, Var) for i in idx) or \
                sum(1 for i in idx if i is vec) != 1:
            continue
        dim = next(d for d, i in enumerate(idx) if i is vec)
        if not any(kinds.get(i) == IterVarType.COMM_REDUCE for i in idx):
            continue
        extent = const_int(buf.shape[dim])
        if extent is None or extent % lanes or extent == lanes:
            continue
        return index, buf, dim
    return None


def _pack(sch: Any, block: Any, lanes: int) -> None:
    """Copy the operand of :func:`_pack_operand` into ``lanes``-wide panels (see the module
    doc; ``lanes`` is the panel width NR) and order the copy's loops so that each step
    writes ``lanes`` contiguous values."""
    found = _pack_operand(sch, block, lanes)
    if found is None:
        raise RuleNotApplicable("no operand to pack into panels")
    index, buf, vdim = found
    b = sch.get(block)
    load = next(ld for ld in _loads(b.body.value) if ld.buffer is buf)
    kinds = {iv.var: iv.iter_type for iv in b.iter_vars}
    ndim = len(buf.shape)
    rdims = [d for d in range(ndim)
             if d != vdim and kinds.get(load.indices[d]) == IterVarType.COMM_REDUCE]
    others = [d for d in range(ndim) if d != vdim and d not in rdims]
    cache = sch.cache_read(block, index, "global")
    if _layout_free(sch, buf):
        sch.annotate(cache, LAYOUT_REWRITE_ATTR, True)

    def panels(*idx: Any) -> tuple:
        return (*[idx[d] for d in others], idx[vdim] // lanes, *[idx[d] for d in rdims],
                idx[vdim] % lanes)

    sch.transform_layout(cache, ("write", 0), panels)
    loops = sch.get_loops(cache)
    if len(loops) == ndim:
        vo, vi = sch.split(loops[vdim], [None, lanes])
        sch.reorder(*[loops[d] for d in others], vo, *[loops[d] for d in rdims], vi)


def _layout_free(sch: Any, buffer: Any) -> bool:
    """Whether ``buffer`` is a parameter listed in the PrimFunc's ``layout_free_buffers``."""
    func = sch.mod[sch.func_working_on]
    for i in func.attrs.get("layout_free_buffers") or ():
        if int(i) < len(func.params) and func.buffer_map.get(func.params[int(i)]) is buffer:
            return True
    return False


def _loads(expr: Any) -> list[Any]:
    out: list[Any] = []
    post_order_visit(expr, lambda n: out.append(n) if isinstance(n, BufferLoad) else None)
    return out
