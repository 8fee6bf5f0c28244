"""Reductions (sum, max, min, ...) and row-wise groups (softmax, layer norm).

Reduction rule, for ``C[s...] = C[s...] (+) f(X[...])``:

* when the output's last index ``v`` is contiguous (or absent) in every load, the loop of
  ``v`` is split by a vector length and its inner part moved below the reduction loops:
  every iteration of the reduction updates a vector of outputs (a reduction over a
  non-innermost axis, e.g. ``sum(axis=0)``);
* otherwise (a reduction over the innermost axis) the innermost reduction loop is split
  by a vector length and ``rfactor``-ed: a vector of partial results is accumulated, then
  reduced once per output (when the rfactor primitive applies; scalar otherwise);
* the data-parallel loops outside are fused into one parallel loop.

Row group: an output block ``F`` that combines its input with reductions over the same
rows (softmax: max, exp, sum, divide; layer norm: mean and variance, normalize).  Every
producer is computed under ``F``'s row loop (``compute_at``), so one row is read from
cache by each stage; the row loop is parallel, the stages' inner loops are vectorized and
their reductions partially vectorized as above.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from tvm.tir.schedule.rules import loop_extent

from .analysis import BlockInfo, analyze_block, match_contraction
from .common import has_primitive, parallelize_outer, reorder, try_primitive, vector_factor
from .cpu import CPUInfo
from .elementwise import schedule_loops_spatial

__all__ = ["schedule_reduction", "RowGroup", "find_row_group", "schedule_row_group"]


def _vector_spatial(info: BlockInfo) -> Optional[int]:
    """The output's last index variable if every load reads it contiguously (or not)."""
    if info.write is None or not info.write.forms:
        return None
    last = info.write.forms[-1]
    if last is None or len(last) != 1:
        return None
    v = next(iter(last))
    if info.kinds[v] != "S":
        return None
    if not all(acc.contiguous_in(v) or not acc.uses(v) for acc in info.loads):
        return None
    if not any(acc.uses(v) for acc in info.loads):
        return None
    return v


def _work(info: BlockInfo) -> Optional[int]:
    total = 1
    for e in info.extents:
        if e is None:
            return None
        total *= e
    return total


def schedule_reduction(sch: Any, block: Any, info: BlockInfo, cpu: CPUInfo,
                       parallel: bool = True) -> None:
    """The reduction rule (see the module docstring) for a block with trivial bindings."""
    if not info.trivial_binding or "O" in info.kinds:
        raise ValueError(f"block {info.name!r}: reductions need trivial loop bindings")
    loops = sch.get_loops(block)
    lanes = cpu.lanes(info.dtype)
    spatial = [loops[k] for k in info.spatial]
    reduce = [loops[k] for k in info.reduce]
    v = _vector_spatial(info)
    factor = vector_factor(info.extents[v], lanes, 2) if v is not None else None
    if v is not None and factor is not None:
        vloop = loops[v]
        if factor == info.extents[v]:
            vo, vi = None, vloop
        else:
            vo, vi = sch.split(vloop, [None, factor])
        outer = [lp for k, lp in zip(info.spatial, spatial) if k != v]
        if vo is not None:
            outer.append(vo)
        reorder(sch, [*outer, *reduce, vi])
        sch.vectorize(vi)
        init = try_primitive(sch, "decompose_reduction", block, reduce[0]) if reduce else None
        if init not in (None, True):
            sch.vectorize(sch.get_loops(init)[-1])
        if parallel:
            parallelize_outer(sch, outer, cpu.parallel_tasks, _work(info))
        return
    reorder(sch, [*spatial, *reduce])
    _vectorize_inner_reduction(sch, block, info, reduce, lanes, spatial_count=len(spatial))
    if parallel:
        parallelize_outer(sch, spatial, cpu.parallel_tasks, _work(info))


def _vectorize_inner_reduction(sch: Any, block: Any, info: BlockInfo, reduce: list,
                               lanes: int, spatial_count: int) -> Optional[Any]:
    """Split the innermost reduction loop by a vector length, ``rfactor`` the lanes into a
    vector of partial results and vectorize it (its init too); returns the rfactor block,
    or None when the extent has no vector factor or the reduction does not factor."""
    if not reduce or info.reducer is None:
        return None
    inner = reduce[-1]
    ext = loop_extent(sch, inner)
    factor = vector_factor(ext, lanes, 1)
    if factor is None or factor == ext:
        return None
    ko, ki = sch.split(inner, [None, factor])
    rf = try_primitive(sch, "rfactor", ki, spatial_count)
    if rf is None:
        return None
    sch.vectorize(ki)  # the lane loop is now data-parallel and innermost in C_rf's nest
    init = try_primitive(sch, "decompose_reduction", rf, reduce[0] if len(reduce) > 1 else ko)
    if init not in (None, True):
        sch.vectorize(sch.get_loops(init)[-1])
    # the combining block reduces the lanes in one short loop: its init goes before it
    lane_loops = sch.get_loops(block)
    if lane_loops:
        try_primitive(sch, "decompose_reduction", block, lane_loops[-1])
    return rf


# -- row groups ----------------------------------------------------------------------------
@dataclass
class RowGroup:
    """Blocks computed per row of ``output`` (the last block); ``rows`` leading loops of
    ``output`` are the row loops."""

    blocks: list[Any]
    output: Any
    rows: int


def find_row_group(sch: Any, anchor: Any, root_blocks: list[Any],
                   done: Optional[set[str]] = None) -> Optional[RowGroup]:
    """The row group a non-contraction reduction ``anchor`` belongs to, if any.

    The group ends at the first data-parallel block after ``anchor`` that depends on it
    and feeds nothing but contractions (or nothing: a function output): the softmax
    normalization, the layer-norm output.  Its members are the blocks before it that it
    depends on, except blocks already scheduled (``done``: a matmul producing the rows).
    """
    if not has_primitive(sch, "compute_at"):
        return None
    done = done or set()
    infos = {id(b): analyze_block(sch, b) for b in root_blocks}
    names = [sch.get(b).name_hint for b in root_blocks]
    start = names.index(sch.get(anchor).name_hint)
    output = None
    for b in root_blocks[start + 1:]:
        if not infos[id(b)].is_spatial or not _reaches(sch, anchor, b):
            continue
        consumers = sch.get_consumers(b)
        if all(match_contraction(analyze_block(sch, c)) is not None for c in consumers):
            output = b
            break
    if output is None:
        return None
    out_info = infos[id(output)]
    end = names.index(sch.get(output).name_hint)
    members = [b for b in root_blocks[:end]
               if sch.get(b).name_hint not in done and _reaches(sch, b, output)]
    if not members or any(match_contraction(infos[id(b)]) is not None for b in members):
        return None
    reductions = [infos[id(b)] for b in members if infos[id(b)].is_reduction]
    if not reductions:
        return None
    rows = _row_count(out_info, infos, members)
    if rows == 0 or rows >= len(out_info.ivars):
        return None
    for b in [*members, output]:
        if not infos[id(b)].trivial_binding:
            return None
        ext = infos[id(b)].extents[:rows]
        if ext != out_info.extents[:rows] and None not in ext:
            return None
    return RowGroup(members + [output], output, rows)


def _row_count(out_info: BlockInfo, infos: dict, members: list[Any]) -> int:
    """How many leading iteration variables of the output block index the rows: those its
    loads of members' buffers use (``maxelem[i, 0]`` with keepdims reads row ``i``), which
    must be a prefix of its variables; 0 when they are not."""
    written = {id(r.buffer) for b in members for r in infos[id(b)].sref.block.writes}
    every = set(range(len(out_info.ivars)))
    used: set[int] = set()
    for acc in out_info.loads:
        if id(acc.buffer) not in written:
            continue
        reads = set().union(*acc.vars_in) if acc.vars_in else set()
        if reads != every:  # not an elementwise read (``exp[i, j]``): a per-row value
            used |= reads
    if not used:
        return 0
    rows = max(used) + 1
    return rows if used == set(range(rows)) else 0


def _reaches(sch: Any, producer: Any, consumer: Any) -> bool:
    """Whether ``consumer`` depends on ``producer`` through blocks of the scope."""
    target = sch.get(consumer).name_hint
    seen: set[str] = set()
    stack = [producer]
    while stack:
        b = stack.pop()
        for c in sch.get_consumers(b):
            name = sch.get(c).name_hint
            if name == target:
                return True
            if name not in seen:
                seen.add(name)
                stack.append(c)
    return False


def schedule_row_group(sch: Any, group: RowGroup, cpu: CPUInfo) -> None:
    """Compute every member under the output's row loop; vectorize the stages."""
    out_loops = sch.get_loops(group.output)
    row_loops = out_loops[:group.rows]
    row = sch.fuse(*row_loops) if len(row_loops) > 1 else row_loops[0]
    for b in reversed(group.blocks[:-1]):
        sch.compute_at(b, row, preserve_unit_loops=False)
    for b in group.blocks:
        info = analyze_block(sch, b)
        loops = sch.get_loops(b)[1:]
        if info.is_reduction:
            _schedule_row_reduction(sch, b, info, loops, cpu)
        else:
            schedule_loops_spatial(sch, loops, None, cpu, parallel=False, dtype=info.dtype)
    ext = loop_extent(sch, row)
    out_info = analyze_block(sch, group.output)
    work = _work(out_info)
    if ext is None or ext > 1:
        parallel = parallelize_outer(sch, [row], cpu.parallel_tasks, work)
        if parallel is not None:
            _localize_row_buffers(sch, parallel, group.output)


#: most bytes of per-row intermediates :func:`_localize_row_buffers` puts on the stack
LOCAL_ROW_BYTES = 64 * 1024


def _elem_bytes(block: Any) -> int:
    """Bytes per element of the first buffer ``block`` writes."""
    from tvm.ffi.dtype import storage_bytes

    return storage_bytes(block.writes[0].buffer.dtype) if block.writes else 4


def _localize_row_buffers(sch: Any, row: Any, output: Any) -> None:
    """Put the intermediates computed under the parallel row loop (maximum, exponentials,
    sums and their rfactor lanes) in ``local`` scope when every stage's loops inside the row
    have constant extents and one row of them fits :data:`LOCAL_ROW_BYTES`: lowering
    (CompactBufferAllocation) then allocates one row of each per iteration, on the stack,
    instead of the whole tensor on the heap per call (a softmax's exponentials: a fresh
    512 KiB per call, touched page by page).  Only under a parallel loop: a serial loop
    keeps a local buffer outside it, whole."""
    out_name = sch.get(output).name_hint
    blocks = [b for b in sch.get_child_blocks(row) if sch.get(b).name_hint != out_name]
    total = 0
    for b in blocks:
        size = 1
        for lp in sch.get_loops(b)[1:]:
            ext = loop_extent(sch, lp)
            if ext is None:
                return
            size *= ext
        total += size * max(1, _elem_bytes(sch.get(b)))
    if total > LOCAL_ROW_BYTES:
        return  # rows too long for the stack: keep the intermediates on the heap
    func = sch.mod[sch.func_working_on]
    params = {id(buf) for buf in func.buffer_map.values()}
    for b in blocks:
        for i, region in enumerate(sch.get(b).writes):
            if id(region.buffer) not in params and region.buffer.scope in ("global", ""):
                try_primitive(sch, "set_scope", b, i, "local")


def _schedule_row_reduction(sch: Any, block: Any, info: BlockInfo, loops: list,
                            cpu: CPUInfo) -> None:
    """A reduction computed under a row loop: its remaining loops are reductions (and
    maybe unit data-parallel loops); vectorize partially through rfactor."""
    reduce = [lp for lp in loops if not _is_spatial_loop(sch, block, lp)]
    _vectorize_inner_reduction(sch, block, info, reduce, cpu.lanes(info.dtype),
                               spatial_count=len(info.spatial))


def _is_spatial_loop(sch: Any, block: Any, loop: Any) -> bool:
    from tvm.tir.schedule import analysis as A

    return A.is_data_par_loop(sch.get_sref(loop))
