"""Sum-of-products reductions: matmul, batch matmul, dense, conv2d (NCHW, NHWC, depthwise,
grouped): a register-blocked micro-kernel.

For ``C[..., r, v] += X[...] * Y[...]`` with the roles of
:func:`~.analysis.match_contraction`, the loop nest becomes::

    for <shared, outer tile loops> (parallel, fused)
      for v_o, r_o                        # one MR x NR output tile per iteration
        init tile (decompose_reduction: unrolled rows, vectorized columns)
        for <reduction loops>             # k (matmul), rc/ry/rx (conv)
          for r_i in unroll(MR)
            for v_i in vectorized(NR)     # NR = one or two vector registers
              C[r, v] += X[r, k] * Y[k, v]   -> broadcast X, FMA into MR*NR/lanes registers
        epilogue tile (bias, activation ... reverse_compute_at)

``MR`` is chosen so that the ``MR * NR / lanes`` accumulators, the ``NR / lanes`` loaded
vectors and a broadcast fit the target's vector registers, preferring a divisor of the row
extent (a non-dividing MR guards the rows with a predicate).  ``NR`` divides the vector
extent (otherwise the nest is tiled without explicit vectorization).  An operand that reads
the vector variable in another dimension than its last (the weight ``W[j, k]`` of a dense
layer) is first copied into a packed layout ``W[j // NR, k, j % NR]`` (cache_read +
transform_layout), so the kernel loads it contiguously.

When the output's last extent holds no whole vector register (an NCHW convolution on a
56-, 28- or 14-wide image with AVX-512), the kernel vectorizes the output channels
instead: the weights are packed channels-last, the tile accumulates in a channels-last
copy of the output (cache_write + transform_layout) and each finished tile is written back
to NCHW (reverse_compute_at).  Matmul-like nests split the panel loop so that a block of
``K x NR`` panels stays in L2 while the rows sweep it.

A 1x1 convolution (one reduction variable) needs no such transposition: it vectorizes the
image width from half a register up, and when the width holds too few lanes (28, 12) but
the whole image does, it fuses the rows and the width into one vector variable (NCHW is
``W[co, ci] @ X[ci, h * W + w]``); its epilogue then runs per block of output channels,
since a tile of the fused variable is no rectangle of the output.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Optional, Sequence

from tvm.tir.expr_util import const_int
from tvm.tir.schedule.rules import RuleNotApplicable, loop_extent

from .analysis import BlockInfo, Contraction
from .common import largest_factor, parallelize_outer, reorder, try_primitive, vector_factor
from .cpu import CPUInfo
from .elementwise import schedule_loops_spatial

__all__ = ["schedule_contraction", "choose_tile", "tile_choices", "choose_contraction"]

#: vector registers one row of the micro-kernel may span (LLVM splits a vector of 3 or 6
#: registers badly: shuffles through the stack, 20x slower)
ROW_VECTORS = (1, 2, 4)
#: registers a row spans over a symbolic vector extent (its last, partial tile runs serially)
SYMBOLIC_ROW_VECTORS = 2
#: most rows unrolled: for a tile of one vector register / of several (more rows of
#: several registers leave LLVM too few registers for addresses and it spills)
MAX_MR = 16
MAX_MR_MULTI_VECTOR = 8
#: fewest lanes a 1x1 convolution vectorizes its output width by rather than its channels
MIN_HALF_WIDTH = 8
#: vector loads (or broadcasts) a core issues per cycle
LOAD_PORTS = 2
#: how much slower a tile runs when every step of a nested reduction is guarded
GUARDED_NEST_RATE = 0.5
#: shortest reduction whose vector-side operand is worth copying into panels
PACK_MIN_REDUCTION = 128


def tile_rate(mr: int, nv: int, cpu: CPUInfo) -> float:
    """FMAs per cycle of an ``mr`` x ``nv``-register micro-kernel: each reduction step
    issues ``mr * nv`` FMAs, ``nv`` vector loads and ``mr`` broadcasts, and cannot be
    shorter than one FMA latency (each accumulator waits for its previous FMA)."""
    cycles = max(mr * nv / cpu.fma_units, (mr + nv) / LOAD_PORTS, cpu.fma_latency)
    return mr * nv / cycles


def choose_tile(info: BlockInfo, con: Contraction, cpu: CPUInfo) -> tuple[int, Optional[int]]:
    """``(MR, NR)``: rows unrolled and vector lanes of the micro-kernel (``NR`` None when
    the vector extent has no vector factor): the first of :func:`tile_choices`.

    Every ``NR`` of 1, 2 or 4 whole registers dividing the vector extent is tried with the most
    rows whose accumulators, the loaded vectors and a broadcast fit the register file; the
    best :func:`tile_rate` (over all rows: the partial last row tile runs at its own rate)
    wins; among tiles within 2% of it, the one moving the fewest bytes from L2 (see the
    comment below).  An extent holding no whole register
    falls back to half or quarter registers."""
    return tile_choices(info, con, cpu)[0]


def tile_choices(info: BlockInfo, con: Contraction, cpu: CPUInfo
                 ) -> list[tuple[int, Optional[int]]]:
    """The register tiles ``(MR, NR)`` the model considers, best first (the choice of
    :func:`choose_tile`, then the others by modelled rate): what a tuner measures when the
    model of the machine may be wrong."""
    lanes = cpu.lanes(info.dtype)
    ext_v = info.extents[con.vec]
    ext_r = info.extents[con.row] if con.row is not None else None
    regs = cpu.vector_registers
    options: list[tuple[int, int]] = []  # (nv, nr)
    for nv in ROW_VECTORS:
        if ext_v is None and nv <= SYMBOLIC_ROW_VECTORS or \
                ext_v is not None and ext_v % (nv * lanes) == 0:
            options.append((nv, nv * lanes))
    if not options:
        nr = vector_factor(ext_v, lanes)
        if nr is None:
            return [((1 if con.row is None else min(6, ext_r or 6)), None)]
        options = [(1, nr)]
    if con.row is None:
        best = max(nr for _, nr in options[:2])
        return [(1, best)] + [(1, nr) for _, nr in options if nr != best]
    # the guard of a partial row tile is unswitched out of the innermost reduction loop
    # only: under several reduction loops (a convolution's rc, ry, rx) every step is guarded
    nested = sum(1 for k in con.reduce if info.extents[k] != 1) > 1
    scored: list[tuple[float, int, int]] = []  # (rate, mr, nr)
    for nv, nr in options:
        mr_max = min(MAX_MR if nv == 1 else MAX_MR_MULTI_VECTOR, (regs - nv - 1) // nv)
        if mr_max < 1:
            continue
        top = mr_max if ext_r is None else min(mr_max, ext_r)
        for mr in range(top, max(top // 2, 1) - 1, -1):
            rate = _row_rate(mr, nv, ext_r, cpu)
            if nested and ext_r is not None and ext_r % mr:
                rate *= GUARDED_NEST_RATE
            scored.append((rate, mr, nr))
    if not scored:
        return [(1, options[0][1])]
    # Within 2% of the fastest, the tile moving the fewest bytes from L2.  A convolution
    # (vector-side output variables) streams its weight panel (all of K x NR) from L2
    # once per row tile: more rows, less traffic.  A matmul's K x NR panels are blocked
    # to stay near L1 while a row strip of the broadcast operand sits in L1: the most
    # FMAs per load (fewest broadcast streams) wins.
    fastest = max(rate for rate, _, _ in scored)

    def reuse(mr: int, nr: int) -> tuple[float, float]:
        nv = -(-nr // lanes)
        intensity = round(mr * nv / (mr + nv), 3)
        return (mr, intensity) if con.vec_group else (intensity, mr)

    _, _, mr, nr = max((*reuse(mr, nr), mr, nr) for rate, mr, nr in scored
                       if rate >= 0.98 * fastest)
    others = sorted(((rate, *reuse(m, n), m, n) for rate, m, n in scored if (m, n) != (mr, nr)),
                    reverse=True)
    return [(mr, nr)] + [(m, n) for *_, m, n in others]


def _row_rate(mr: int, nv: int, ext_r: Optional[int], cpu: CPUInfo) -> float:
    """:func:`tile_rate` over all rows: the last, partial row tile runs at its own rate."""
    rate = tile_rate(mr, nv, cpu)
    if ext_r is None or ext_r % mr == 0:
        return rate
    full, rest = divmod(ext_r, mr)
    time = full * mr / rate + rest / tile_rate(rest, nv, cpu)
    return ext_r / time


def choose_contraction(info: BlockInfo, candidates: Sequence[Contraction], cpu: CPUInfo
                       ) -> Optional[Contraction]:
    """The way to vectorize (see :func:`~.analysis.contraction_candidates`): along the
    output's last index when its extent holds whole vector registers (half of one for a
    contraction over one variable, a 1x1 convolution: it then needs no transposed copy of
    its output) and no condition (inlined padding) varies along it; otherwise along
    another output variable that does (accumulating channels-last), if any."""
    if not candidates:
        return None
    lanes = cpu.lanes(info.dtype)

    def width(con: Contraction) -> int:
        return vector_factor(info.extents[con.vec], lanes, max_vectors=2) or 0

    first = candidates[0]
    if not first.transpose_output and not first.guarded:
        if width(first) < lanes and first.fusable is not None:
            # the rows of a 1x1 convolution are one contiguous run: vectorize across them
            ext = info.extents[first.fusable] * info.extents[first.vec]  # type: ignore
            if (vector_factor(ext, lanes, max_vectors=2) or 0) >= lanes:
                return first
        single = sum(1 for k in info.reduce if info.extents[k] != 1) <= 1
        if width(first) >= (max(lanes // 2, MIN_HALF_WIDTH) if single else lanes):
            return replace(first, fusable=None)
    better = [c for c in candidates if c.transpose_output and width(c) >= lanes
              and not c.guarded]
    if better:
        return replace(max(better, key=width), fusable=None)
    return replace(first, fusable=None)


def _transpose_accumulator(sch: Any, block: Any, con: Contraction, nr: int) -> Any:
    """Accumulate in a copy of the output laid out ``[..., v // nr, ..., v % nr]`` (the
    vector variable last, contiguous); returns the block writing the copy back."""
    write_back = sch.cache_write(block, 0, "global")
    out = sch.get(block).writes[0].buffer
    ndim = len(out.shape)
    dim = next(d for d, idx in enumerate(sch.get(block).body.indices)
               if idx is sch.get(block).iter_vars[con.vec].var)

    def blocked(*idx: Any) -> tuple:
        head = [idx[d] // nr if d == dim else idx[d] for d in range(ndim)]
        return (*head, idx[dim] % nr)

    sch.transform_layout(block, ("write", 0), blocked)
    return write_back


def _panel_block(sch: Any, vo: Any, info: BlockInfo, con: Contraction, nr: Optional[int],
                 cpu: CPUInfo, kc: Optional[int] = None) -> Optional[tuple[Any, Any]]:
    """Split the loop over vector panels so that one block of panels (K x NR each, or
    KC x NR when the reduction is blocked) fills about half the L2 cache; returns the
    (outer, inner) loops, or None when all panels fit already.  A blocked reduction over a
    symbolic row count gets at least two blocks per core: the blocks are then its only
    parallel loop."""
    if vo is None or nr is None:
        return None
    k = kc or _reduction_size(info, con)
    if k is None:
        return None
    elem = _elem_bytes(info.dtype)
    panels = max(1, (cpu.l2_bytes // 2) // (k * nr * elem))
    count = loop_extent(sch, vo)
    if count is None:
        return None
    spread = kc is not None and con.row is not None and info.extents[con.row] is None and \
        cpu.parallel_tasks > 1
    if spread:
        panels = min(panels, max(1, count // (2 * cpu.parallel_tasks)))
    if count <= panels:
        return None
    block = largest_factor(count, range(panels, 0 if spread else 1, -1))
    if block is None:
        return None
    outer, inner = sch.split(vo, [None, block])
    return outer, inner


def _split(sch: Any, loop: Any, factor: int, ext: Optional[int]) -> tuple[Any, Any]:
    if ext is not None and ext == factor:
        return None, loop
    outer, inner = sch.split(loop, [None, factor])
    return outer, inner


def _layout_free(sch: Any, buffer: Any) -> bool:
    """Whether ``buffer`` is a parameter the caller marked layout-free (PrimFunc attribute
    ``layout_free_buffers``: it only ever receives constants, so it can be packed once)."""
    func = sch.mod[sch.func_working_on]
    for i in func.attrs.get("layout_free_buffers") or ():
        if int(i) < len(func.params) and func.buffer_map.get(func.params[int(i)]) is buffer:
            return True
    return False


def _pack_operands(sch: Any, block: Any, con: Contraction, nr: int, cpu: CPUInfo,
                   operands: Sequence[int], info: BlockInfo) -> None:
    """Copy each of ``operands`` into panels of ``nr`` vector-variable values: the
    dimensions the reduction walks come after the panel index ``v // nr`` and before the
    lane ``v % nr``, every other dimension in front (``W[j, k]`` and ``B[k, j]`` both become
    ``P[j // nr, k, j % nr]``, ``X[n, c, h, w]`` of a 1x1 convolution ``P[n, h, w // nr, c,
    w % nr]``, or with rows and width fused ``P[n, (h*W + w) // nr, c, (h*W + w) % nr]``),
    so the kernel streams one contiguous K x NR panel.  The copy of a layout-free
    parameter is annotated ``layout_rewrite_preproc`` (relax.build then packs it at
    compile time)."""
    walked = {r for r in con.reduce if info.extents[r] != 1}
    lane_vars = {con.vec} | ({con.fusable} if con.fusable is not None else set())
    for n in operands:
        op = con.operands[n]
        reads = sch.get(block).reads
        index = next(k for k, r in enumerate(reads) if r.buffer is op.buffer)
        shape = [const_int(e) if const_int(e) is not None else e for e in op.buffer.shape]
        vdims = [d for d, used in enumerate(op.vars_in) if used & lane_vars]
        rdims = [d for d, used in enumerate(op.vars_in) if used & walked and d not in vdims]
        others = [d for d in range(len(shape)) if d not in vdims and d not in rdims]
        cache = sch.cache_read(block, index, "global")
        if _layout_free(sch, op.buffer):
            sch.annotate(cache, "layout_rewrite_preproc", True)

        def packed(*idx: Any, vdims: list = vdims, rdims: list = rdims, others: list = others,
                   shape: list = shape) -> tuple:
            flat = idx[vdims[0]]
            for d in vdims[1:]:
                flat = flat * shape[d] + idx[d]
            return (*[idx[d] for d in others], flat // nr, *[idx[d] for d in rdims], flat % nr)

        sch.transform_layout(cache, ("write", 0), packed)
        loops = sch.get_loops(cache)
        if len(vdims) == 1 and len(loops) == len(shape) and isinstance(shape[vdims[0]], int) \
                and shape[vdims[0]] % nr == 0:
            # walk the copy in the panels' order: each step writes NR contiguous values
            # (in the source order the writes would land one panel, K x NR, apart)
            vo, vi = sch.split(loops[vdims[0]], [None, nr])
            loops = [*[loops[d] for d in others], vo, *[loops[d] for d in rdims], vi]
            reorder(sch, loops)
        schedule_loops_spatial(sch, loops, None, cpu, dtype=op.buffer.dtype)


def _panel_operands(sch: Any, info: BlockInfo, con: Contraction, mr: int, nr: int
                    ) -> list[int]:
    """The operands to copy into panels: those read along ``vec`` in another dimension
    than the last (``con.pack``), and the vector-side operand read contiguously along
    ``vec`` (a matmul's ``B[k, j]``, a 1x1 convolution's image), when the reduction is long
    enough that its rows sit far apart (conflict misses, one TLB page per row) and there
    are enough row tiles (or it is a layout-free constant) for the copy to pay.  An
    operand read through windows of several reduction loops (a 3x3 convolution's image)
    has no panel layout."""
    chosen = list(con.pack)
    if con.row is None:
        return chosen
    walked = [r for r in con.reduce if info.extents[r] != 1]
    if con.vec_group and len(walked) != 1:
        return chosen
    k = _reduction_size(info, con)
    if k is None or k < PACK_MIN_REDUCTION:
        return chosen
    rows = info.extents[con.row]
    for n, op in enumerate(con.operands):
        if n in chosen or not _panel_readable(op, con, info):
            continue
        if _layout_free(sch, op.buffer) or rows is None or rows >= 4 * mr:
            chosen.append(n)
    return chosen


def _panel_readable(op: Any, con: Contraction, info: BlockInfo) -> bool:
    """``op`` reads ``vec`` (and a fused outer variable) contiguously in its last (two)
    dimensions, each of its dimensions indexed by at most one variable that varies, and
    reads no reduction variable in those last dimensions."""
    if not op.uses(con.vec) or not op.contiguous_in(con.vec):
        return False
    varying = [{k for k in used if info.extents[k] != 1} for used in op.vars_in]
    if any(len(v) > 1 for v in varying):
        return False
    if varying[-1] & set(con.reduce):
        return False
    if con.fusable is not None:  # (its extent already counts as 1: it is in ``vec``)
        if len(op.forms) < 2 or varying[-2] - {con.fusable} or \
                (op.forms[-2] or {}).get(con.fusable) != 1:
            return False
    return True


def _elem_bytes(dtype: str) -> int:
    from tvm.ffi.dtype import parse_dtype

    return max(1, parse_dtype(dtype)[1] // 8)


def _reduction_size(info: BlockInfo, con: Contraction) -> Optional[int]:
    k = 1
    for r in con.reduce:
        if info.extents[r] is None:
            return None
        k *= info.extents[r]
    return k


def _k_block(info: BlockInfo, con: Contraction, mr: int, cpu: CPUInfo) -> Optional[int]:
    """``KC``: the reduction step of a matmul-like nest over one reduction variable, so
    that an ``MR x KC`` strip of the broadcast operand takes at most a quarter of L1 while
    the vector panels stream past it (the largest divisor of K in ``[KC/2, KC]``); None
    when K is short enough already or has no such divisor."""
    if con.vec_group or len(con.reduce) != 1:
        return None
    k = info.extents[con.reduce[0]]
    elem = _elem_bytes(info.dtype)
    kc = cpu.l1_bytes // (4 * max(mr, 1) * elem)
    if k is None or k <= kc or kc < 32:
        return None
    return largest_factor(k, range(kc, kc // 2 - 1, -1))


def schedule_contraction(sch: Any, block: Any, info: BlockInfo, con: Contraction,
                         cpu: CPUInfo, epilogue: Sequence[Any] = (),
                         tile: Optional[tuple[int, Optional[int]]] = None,
                         prologue: Sequence[Any] = ()) -> None:
    """The micro-kernel rule (see the module docstring); ``epilogue`` lists elementwise
    consumer blocks to compute per output tile, in order; ``prologue`` producer blocks
    (padding stages) to compute per iteration of the outermost loop when that loop walks
    disjoint slices of what they produce (the channels of a depthwise convolution);
    ``tile`` overrides :func:`choose_tile`."""
    fused_loop = None
    if con.fusable is not None:
        # one vector variable over (outer, vec): extents as the fused loop will have them
        extents = list(info.extents)
        extents[con.vec] = extents[con.fusable] * extents[con.vec]  # type: ignore[operator]
        extents[con.fusable] = 1
        info = replace(info, extents=extents)
        con = replace(con, vec_group=[k for k in con.vec_group if k != con.fusable])
        loops = sch.get_loops(block)
        fused_loop = sch.fuse(loops[con.fusable], loops[con.vec])
    mr, nr = tile if tile is not None else choose_tile(info, con, cpu)
    if (con.pack or con.transpose_output) and nr is None:
        raise RuleNotApplicable(f"block {info.name!r}: packing needs a vector length dividing "
                            "the vector extent")
    panels = _panel_operands(sch, info, con, mr, nr) if nr is not None else []
    if panels:
        _pack_operands(sch, block, con, nr, cpu, panels, info)  # type: ignore[arg-type]
    if con.transpose_output:
        epilogue = [_transpose_accumulator(sch, block, con, nr), *epilogue]  # type: ignore

    loops = sch.get_loops(block)
    by_var = dict(enumerate(loops))
    if fused_loop is not None:
        by_var = {k: lp for k, lp in enumerate([*loops[:con.fusable], None, *loops[con.fusable:]])
                  if k != con.fusable}
    vo, vi = (None, by_var[con.vec])
    if nr is not None:
        vo, vi = _split(sch, by_var[con.vec], nr, info.extents[con.vec])
    ro = ri = None
    if con.row is not None:
        ro, ri = _split(sch, by_var[con.row], mr, info.extents[con.row])
    shared = [by_var[k] for k in con.shared if k != con.row]
    vec_group = [by_var[k] for k in con.vec_group if k != con.row]
    row_group = [by_var[k] for k in con.row_group if k != con.row]
    reduce = [by_var[k] for k in con.reduce]
    vec_outer = vec_group + ([vo] if vo is not None else [])
    row_outer = row_group + ([ro] if ro is not None else [])
    split_vec = [vo]  # the outer loops over the vector variable
    kc = None if vec_group else _k_block(info, con, mr, cpu)
    head: list[Any] = []  # with a blocked reduction: the data-parallel loops outside it
    k_outer = None  # the loop over the reduction's KC steps
    if vec_group:
        # conv-like: the broadcast operand (weights) of a row block is small; keep it in
        # cache while the vector-side loops sweep the image
        outer = shared + row_outer + vec_outer
    else:
        # matmul-like: keep (K or KC) x NR panels of the vector operand in L2 across rows,
        # and each row strip of the broadcast operand in L1 across the panels
        blocked = _panel_block(sch, vo, info, con, nr, cpu, kc)
        if blocked is not None:
            split_vec = list(blocked)
        panel_outer = [blocked[0]] if blocked is not None else []
        panel_inner = [blocked[1]] if blocked is not None else [vo]
        if kc is not None:
            k_outer, ki = sch.split(reduce[0], [None, kc])
            reduce = [ki]
            head = shared + vec_group + panel_outer
            par_rows = _row_tasks(sch, head, ro, cpu)
            if par_rows is not None:
                rp, ro = sch.split(ro, [par_rows, None])
                row_outer = row_group + [ro]
                head = head + [rp]
            outer = head + [k_outer] + row_outer + panel_inner
        else:
            outer = shared + vec_group + panel_outer + row_outer + panel_inner
    outer = [lp for lp in outer if lp is not None]
    inner = ([ri] if ri is not None else []) + [vi]
    reorder(sch, [*outer, *reduce, *inner])
    if ri is not None and mr > 1:
        sch.unroll(ri)
    if nr is not None:
        sch.vectorize(vi)
    # the init of the tile, before the reduction loops, vectorized like the update
    if reduce:
        init = sch.decompose_reduction(block, k_outer if k_outer is not None else reduce[0])
        _unroll_vectorize(sch, sch.get_loops(init)[len(head) if k_outer is not None
                                                   else len(outer):], nr is not None)
    if k_outer is not None:
        outer = head  # the epilogue and the parallel loop stay outside the blocked reduction
    depth = len(outer)
    if fused_loop is not None:
        # a tile of the fused (rows x width) variable is no rectangle of the output: run the
        # epilogue outside every loop over it
        depth = min((k for k, lp in enumerate(outer) if any(lp is v for v in split_vec)),
                    default=depth)
    if depth:
        for n, epi in enumerate(epilogue):
            if try_primitive(sch, "reverse_compute_at", epi, outer[depth - 1]) is None:
                break
            schedule_loops_spatial(sch, sch.get_loops(epi)[depth:], None, cpu,
                                   parallel=False, dtype=_out_dtype(sch, epi))
            if n == 0:
                outer = outer[:depth]  # the loops below now hold the epilogue too
    work: Optional[int] = 1
    for e in info.extents:
        work = None if e is None or work is None else work * e
    shared_vars = [k for k in con.shared if k != con.row]
    if outer and shared_vars and _prologue_at(sch, outer[0], shared_vars[0], con, prologue, cpu,
                                              info):
        outer = outer[:1]  # the loop now holds the prologue too: nothing to fuse it with
    parallelize_outer(sch, outer, cpu.parallel_tasks, work)


def _row_tasks(sch: Any, head: Sequence[Any], ro: Any, cpu: CPUInfo) -> Optional[int]:
    """How many parallel strips to cut the row tiles into, in front of a blocked reduction
    (only data-parallel loops may run in parallel), when the loops already there offer
    fewer than ``4 x cores`` tasks; None when they suffice or there is no row loop."""
    if ro is None or cpu.parallel_tasks <= 1:
        return None
    have = 1
    for lp in head:
        have *= loop_extent(sch, lp) or 1
    want = 4 * cpu.parallel_tasks
    rows = loop_extent(sch, ro)
    if have >= want or rows is None:
        # a symbolic row count is not cut into strips (the epilogue's region under a strip
        # would not be exact): :func:`_panel_block` makes enough panel blocks instead
        return None
    strips = min(-(-want // have), rows // 4)
    return strips if strips > 1 else None


def _prologue_at(sch: Any, loop: Any, var: int, con: Contraction, prologue: Sequence[Any],
                 cpu: CPUInfo, info: BlockInfo) -> bool:
    """compute_at each prologue block under ``loop`` (driven by iteration variable
    ``var``) when the operand it produces is indexed by exactly ``var`` in one dimension:
    every iteration then computes its own slice, nothing twice."""
    moved = False
    for pro in prologue:
        written = {id(r.buffer) for r in sch.get(pro).writes}
        reads = [op for op in con.operands if id(op.buffer) in written]
        if not reads or not all(any(_indexed_by(op, d, var, info) for d in range(len(op.forms)))
                                for op in reads):
            continue
        if try_primitive(sch, "compute_at", pro, loop) is None:
            continue
        schedule_loops_spatial(sch, sch.get_loops(pro)[1:], None, cpu, parallel=False,
                               dtype=_out_dtype(sch, pro), vectorize=False)
        moved = True
    return moved


def _indexed_by(op: Any, d: int, var: int, info: BlockInfo) -> bool:
    """Dimension ``d`` of the operand is indexed by exactly iteration variable ``var``
    (plus variables of extent 1: ``c // 1 * 1 + rc`` of a depthwise legalization)."""
    from .analysis import linear_form

    form = op.forms[d]
    if form is None or form.get(var) != 1:
        return False
    if any(info.extents[k] != 1 for k in form if k != var):
        return False
    lf = linear_form(op.load.indices[d], info.ivars)
    return lf is not None and not lf[1]


def _out_dtype(sch: Any, block: Any) -> str:
    writes = sch.get(block).writes
    return writes[0].buffer.dtype if writes else "float32"


def _unroll_vectorize(sch: Any, loops: list, vectorize: bool) -> None:
    if not loops:
        return
    if vectorize:
        sch.vectorize(loops[-1])
        loops = loops[:-1]
    for lp in loops:
        ext = loop_extent(sch, lp)
        if ext is not None and ext <= MAX_MR:
            sch.unroll(lp)
