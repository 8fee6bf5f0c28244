"""Integer contractions: int8/uint8 products accumulated in int32 (``relax.qnn.matmul`` /
``dense`` / ``conv2d`` legalized), tensorized with the target's dot-product instruction.

For ``C[.., r, v] += int32(A[.., k]) * int32(B[.., v, .., k])`` with the roles of
:func:`~.analysis.match_contraction` (``v`` the output's last index, ``r`` the row beside
it) and a reduction variable ``k`` that ``A`` reads contiguously in its last dimension (a
matmul's ``k``, an NHWC convolution's input channel), the nest becomes::

    B -> P[.., v // NT, <other reduction dims>, k // G, v % NT * G + k % G]   (packed copy)
    for <shared, row-side outer, v_o>, r_o        (parallel, fused)
      init tile (unrolled rows, vector columns)
      for <other reduction loops>, k_o            # kh, kw of a convolution; k // G
        for r_i in unroll(MR)
          for v_v in unroll(NV)
            dot(C[r, v_v*L : +L], A[r, k_o*G : +G], P[v_o, .., k_o, v_v*L*G : +L*G])
      epilogue tile (zero-point corrections, requantize ... reverse_compute_at)

``dot`` is one :mod:`~tvm.target.llvm.dot_intrin` intrinsic (``L`` int32 lanes, ``G``
products per lane: VNNI ``vpdpbusd`` 16x4 or 8x4, AVX2/AVX-512 ``vpmaddwd`` on widened
operands 8x2 or 16x2, NEON ``sdot`` 4x4, ``smlal`` 8x1), chosen by the target's features
and the operand dtypes; ``NT = NV * L`` lanes make one packed panel, the NV vectors of a
step one contiguous run.  The copy of a constant weight is marked ``layout_rewrite_preproc``
(``relax.build`` packs it at compile time), and so are the blocks that reduce the constant
weight alone (the ``sum_k w[n, k]`` of the zero-point correction): they move to compile
time with the packing.

Shapes that do not fit (``k`` not a multiple of ``G``, ``v`` not of ``L``, the row extent
without a divisor that fits the registers, operands read in other ways) raise
:class:`~tvm.tir.schedule.rules.RuleNotApplicable`; the block then gets the float-style
micro-kernel of :mod:`.contraction` (vectorized int32 multiply-adds).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Sequence

from tvm.tir.expr import BufferLoad, Cast, IntImm
from tvm.tir.schedule.rules import RuleNotApplicable, loop_extent

from .analysis import BlockInfo, Contraction
from .common import parallelize_outer, try_primitive
from .cpu import CPUInfo
from .elementwise import schedule_loops_spatial

__all__ = ["Int8Plan", "plan_int8", "check_int8", "schedule_int8", "int8_tile_choices",
           "weight_only_reductions", "materialize_int8_padding"]

#: most rows of one tile (each one an accumulator per vector)
MAX_MR = 8
#: vectors of one tile row
NV_CHOICES = (4, 2, 1)
#: registers besides the accumulators and the weights: the broadcast activation, a temporary
SPARE_REGISTERS = 2


@dataclass(frozen=True)
class Int8Plan:
    """How :func:`schedule_int8` tiles one integer contraction."""

    intrin: str          # registered tensor intrinsic
    lanes: int           # L
    group: int           # G
    con: Contraction
    a: int               # index of the broadcast operand in con.operands
    b: int               # index of the vector-side (weight) operand
    kg: int              # the reduction variable grouped by G
    mr: int              # rows per tile
    nv: int              # vectors per tile row
    #: the dimension of the broadcast operand that ``kg`` indexes, when it is not the last:
    #: the operand is copied with that dimension split, ``[.., c // G, .., c % G]``
    repack_a: Optional[int] = None


def _int8_load(e: Any, padded: dict[int, Any]) -> Optional[BufferLoad]:
    """The 8-bit load of a factor ``int32(X[...])`` (or of a padding check around it that
    ``materialize_padding`` turns into a padded copy: ``padded`` maps the checks' ids to
    their :class:`~tvm.tir.schedule.primitive.padding.PaddedLoad`), else None."""
    pad = padded.get(id(e))
    if pad is not None and pad.cast == "int32":
        return pad.load if pad.load.buffer.dtype in ("int8", "uint8") else None
    if isinstance(e, Cast) and e.dtype == "int32" and isinstance(e.value, BufferLoad) and \
            e.value.buffer.dtype in ("int8", "uint8"):
        return e.value
    return None


def _factors(info: BlockInfo) -> Optional[tuple[BufferLoad, BufferLoad]]:
    """The two loads of an update ``int32(X[..]) * int32(Y[..])``, in order."""
    from tvm.tir.expr import Mul
    from tvm.tir.schedule.primitive.padding import padded_loads

    u = info.update
    if not isinstance(u, Mul):
        return None
    padded = {id(p.call): p for p in padded_loads(info.sref.block)}
    x, y = _int8_load(u.a, padded), _int8_load(u.b, padded)
    if x is None or y is None:
        return None
    return x, y


def materialize_int8_padding(sch: Any, block: Any) -> list[Any]:
    """Give ``block`` padded copies of its padded 8-bit operands (the padding holds the
    input zero point), so that its update is a plain ``int32(X[..]) * int32(W[..])`` the
    dot-product intrinsic matches; returns the padding blocks made."""
    from tvm.tir.schedule.primitive.padding import padded_loads

    made = []
    while True:
        pads = padded_loads(sch.get(block))
        if not pads:
            return made
        reads = sch.get(block).reads
        index = next(k for k, r in enumerate(reads) if r.buffer is pads[0].load.buffer)
        made.append(sch.materialize_padding(block, index))


def _exact_dims(op: Any, info: BlockInfo) -> bool:
    """Each dimension of the operand is indexed by one iteration variable with coefficient
    1 and nothing else, or by a constant."""
    from .analysis import linear_form

    for d, form in enumerate(op.forms):
        if form is None:
            return False
        lf = linear_form(op.load.indices[d], info.ivars)
        if lf is None:
            return False
        if not form:
            if not isinstance(op.load.indices[d], IntImm):
                return False
            continue
        if len(form) != 1 or next(iter(form.values())) != 1 or lf[1]:
            return False
    return True


def _divisor_at_most(n: Optional[int], top: int) -> int:
    if n is None:
        return 1
    return max(d for d in range(1, max(1, min(n, top)) + 1) if n % d == 0)


def plan_int8(info: BlockInfo, cpu: CPUInfo) -> Optional[Int8Plan]:
    """The :class:`Int8Plan` for an integer contraction block on ``cpu``, or None when
    the block is not one or does not fit the target's dot-product intrinsic (the reason
    is raised as RuleNotApplicable by :func:`check_int8`)."""
    try:
        return check_int8(info, cpu)
    except RuleNotApplicable:
        return None


def check_int8(info: BlockInfo, cpu: CPUInfo) -> Int8Plan:
    """:func:`plan_int8`, raising RuleNotApplicable with the reason instead of None.

    The output's last variable is tried first as the vector variable, then the output
    variables the broadcast operand does not read (the output channel of an NCHW
    convolution: the tile then accumulates channels-last and is written back)."""
    from .analysis import contraction_candidates

    if not info.is_reduction or info.dtype != "int32" or info.store is None:
        raise RuleNotApplicable("not an int32 reduction")
    loads = _factors(info)
    if loads is None:
        raise RuleNotApplicable("the update is not int32(X[..]) * int32(Y[..]) of 8-bit X, Y")
    reasons = []
    for con in contraction_candidates(info):
        try:
            return _check_con(info, con, loads, cpu)
        except RuleNotApplicable as err:
            reasons.append(str(err))
    raise RuleNotApplicable("; ".join(reasons) or "not a contraction")


def _check_con(info: BlockInfo, con: Contraction, loads: tuple, cpu: CPUInfo) -> Int8Plan:
    from ..dot_intrin import dot_intrin, pick_dot_intrin

    if con.guarded or con.fusable is not None:
        raise RuleNotApplicable("the vector variable is guarded or fused")
    ids = [next(n for n, op in enumerate(con.operands) if op.load is ld) for ld in loads]
    vec_side = [n for n in ids if con.operands[n].uses(con.vec)]
    if len(vec_side) != 1:
        raise RuleNotApplicable("exactly one operand must be read along the vector variable")
    b = vec_side[0]
    a = next(n for n in ids if n != b)
    if ids.index(a) != 0:
        raise RuleNotApplicable("the broadcast operand is not the first factor")
    A, B = con.operands[a], con.operands[b]
    # the grouped reduction variable: one that alone indexes a dimension of A (its last
    # preferably: then A needs no copy)
    alone = [d for d, f in enumerate(A.forms) if f is not None and len(f) == 1
             and info.kinds[next(iter(f))] == "R" and next(iter(f.values())) == 1
             and sum(1 for u in A.vars_in if next(iter(f)) in u) == 1]
    if not alone:
        raise RuleNotApplicable("no reduction variable indexes a dimension of the broadcast "
                                "operand alone")
    a_dim = alone[-1]
    kg = next(iter(A.forms[a_dim]))
    if not _exact_dims(B, info) or sum(1 for u in B.vars_in if kg in u) != 1 or \
            sum(1 for u in B.vars_in if con.vec in u) != 1:
        raise RuleNotApplicable("the weight is not indexed by one variable per dimension")
    idx = info.ivars[0].dtype if info.ivars else "int32"
    name = pick_dot_intrin(cpu.arch, cpu.features, A.buffer.dtype, B.buffer.dtype, idx)
    if name is None:
        raise RuleNotApplicable(f"the target has no dot product of {A.buffer.dtype} x "
                                f"{B.buffer.dtype}")
    d = dot_intrin(name)
    ext_k, ext_v = info.extents[kg], info.extents[con.vec]
    if ext_k is None or ext_k % d.group:
        raise RuleNotApplicable(f"the reduction extent {ext_k} is not a multiple of {d.group}")
    if ext_v is None or ext_v % d.lanes:
        raise RuleNotApplicable(f"the vector extent {ext_v} is not a multiple of {d.lanes}")
    for dim, used in zip(B.buffer.shape, B.vars_in):
        if used and (not isinstance(dim, IntImm) or dim.value != info.extents[next(iter(used))]):
            raise RuleNotApplicable("the weight's dimensions are not the iteration extents")
    repack = a_dim != len(A.forms) - 1
    if repack and not isinstance(A.buffer.shape[a_dim], IntImm) or \
            repack and A.buffer.shape[a_dim].value % d.group:
        raise RuleNotApplicable("the broadcast operand's grouped dimension does not divide")
    mr, nv = _tile(info, con, d, cpu)
    return Int8Plan(name, d.lanes, d.group, con, a, b, kg, mr, nv, a_dim if repack else None)


def _tile(info: BlockInfo, con: Contraction, d: Any, cpu: CPUInfo) -> tuple[int, int]:
    """``(MR, NV)``: the first of :func:`int8_tile_choices`."""
    choices = int8_tile_choices(info, con, d, cpu)
    if not choices:
        raise RuleNotApplicable("no tile fits the registers")
    return choices[0]


def int8_tile_choices(info: BlockInfo, con: Contraction, d: Any, cpu: CPUInfo
                 ) -> list[tuple[int, int]]:
    """The tiles ``(MR, NV)`` that fit, best first: the most accumulators (``MR * NV``)
    beside the weight vectors (one register each, widened or not: ``vpmovsxbw`` loads and
    widens) and the broadcast; among equals the most products per load.  The others are
    what a tuner measures besides the first."""
    ext_r = info.extents[con.row] if con.row is not None else 1
    vectors = info.extents[con.vec] // d.lanes  # type: ignore[operator]
    scored = []
    for nv in NV_CHOICES:
        if vectors % nv:
            continue
        budget = cpu.vector_registers - nv - SPARE_REGISTERS
        if budget < nv:
            continue
        top = min(MAX_MR, budget // nv)
        for mr in sorted({_divisor_at_most(ext_r, t) for t in range(1, top + 1)}, reverse=True):
            scored.append(((mr * nv, mr * nv / (mr + nv), nv), mr, nv))
    scored.sort(reverse=True)
    return [(mr, nv) for _, mr, nv in scored]


def weight_only_reductions(sch: Any, block: Any, buffer: Any) -> list[Any]:
    """Root blocks other than ``block`` that reduce ``buffer`` alone (read only it, and
    write a buffer of the function's own): the ``sum_k w[n, k]`` of a zero-point
    correction."""
    from tvm.tir.schedule.rules import root_blocks

    out = []
    for other in root_blocks(sch):
        blk = sch.get(other)
        if blk is sch.get(block) or blk.init is None:
            continue
        if len(blk.reads) == 1 and blk.reads[0].buffer is buffer and len(blk.writes) == 1:
            out.append(other)
    return out


def _pack_weight(sch: Any, block: Any, plan: Int8Plan, info: BlockInfo, cpu: CPUInfo,
                 layout_free: bool) -> None:
    """Copy the weight into ``P[others.., v // NT, reduce dims.., kg // G, v % NT * G +
    kg % G]``; the copy of a layout-free parameter is annotated ``layout_rewrite_preproc``."""
    con = plan.con
    op = con.operands[plan.b]
    nt, g = plan.nv * plan.lanes, plan.group
    reads = sch.get(block).reads
    index = next(k for k, r in enumerate(reads) if r.buffer is op.buffer)
    var_of = [next(iter(u)) if u else None for u in op.vars_in]
    dv = var_of.index(con.vec)
    dk = var_of.index(plan.kg)
    rdims = [d for d, k in enumerate(var_of) if k is not None and k != plan.kg
             and info.kinds[k] == "R"]
    others = [d for d in range(len(var_of)) if d not in (dv, dk) and d not in rdims]
    cache = sch.cache_read(block, index, "global", consumer_blocks=[block])
    if layout_free:
        sch.annotate(cache, "layout_rewrite_preproc", True)

    def packed(*idx: Any) -> tuple:
        return (*[idx[d] for d in others], idx[dv] // nt, *[idx[d] for d in rdims],
                idx[dk] // g, idx[dv] % nt * g + idx[dk] % g)

    sch.transform_layout(cache, ("write", 0), packed)
    loops = sch.get_loops(cache)
    if len(loops) == len(var_of):
        # walk the copy in the packed order: each step writes G * NT contiguous bytes
        vo, vi = sch.split(loops[dv], [None, nt])
        ko, ki = sch.split(loops[dk], [None, g])
        order = [*[loops[d] for d in others], vo, *[loops[d] for d in rdims], ko, vi, ki]
        sch.reorder(*order)
        loops = order
    schedule_loops_spatial(sch, loops, None, cpu, dtype=op.buffer.dtype, vectorize=False)


def _repack_activation(sch: Any, block: Any, plan: Int8Plan, cpu: CPUInfo) -> None:
    """Lay the broadcast operand out as ``[.., c // G, .., c % G]`` (NCHW -> NCHWc): the
    padded copy in place when there is one, else a copy made per call."""
    op = plan.con.operands[plan.a]
    d, g = plan.repack_a, plan.group

    def blocked(*idx: Any) -> tuple:
        return (*idx[:d], idx[d] // g, *idx[d + 1:], idx[d] % g)

    from tvm.tir.schedule.rules import root_blocks

    writers = [b for b in root_blocks(sch)
               if any(w.buffer is op.buffer for w in sch.get(b).writes)]
    if len(writers) == 1:
        sch.transform_layout(writers[0], ("write", 0), blocked)
        return
    reads = sch.get(block).reads
    index = next(k for k, r in enumerate(reads) if r.buffer is op.buffer)
    cache = sch.cache_read(block, index, "global", consumer_blocks=[block])
    sch.transform_layout(cache, ("write", 0), blocked)
    schedule_loops_spatial(sch, sch.get_loops(cache), None, cpu, dtype=op.buffer.dtype,
                           vectorize=False)


def schedule_int8(sch: Any, block: Any, info: BlockInfo, plan: Int8Plan, cpu: CPUInfo,
                  epilogue: Sequence[Any] = (), layout_free: bool = False) -> Any:
    """The integer micro-kernel (module docstring) for ``block`` by ``plan``; ``epilogue``
    lists elementwise consumers to compute per output tile, in order.  Returns the
    tensorized block (``block`` itself is gone)."""
    from .contraction import _transpose_accumulator

    con = plan.con
    _pack_weight(sch, block, plan, info, cpu, layout_free)
    if plan.repack_a is not None:
        _repack_activation(sch, block, plan, cpu)
    if con.transpose_output:
        epilogue = [_transpose_accumulator(sch, block, con, plan.nv * plan.lanes), *epilogue]
    loops = sch.get_loops(block)
    by_var = dict(enumerate(loops))
    jo, jv, ji = sch.split(by_var[con.vec], [None, plan.nv, plan.lanes])
    ko, ki = sch.split(by_var[plan.kg], [None, plan.group])
    ro = ri = None
    if con.row is not None:
        ext_r = info.extents[con.row]
        if plan.mr == ext_r:
            ro, ri = None, by_var[con.row]
        elif plan.mr > 1:
            ro, ri = sch.split(by_var[con.row], [None, plan.mr])
        else:
            ro = by_var[con.row]
    shared = [by_var[k] for k in con.shared if k != con.row]
    row_group = [by_var[k] for k in con.row_group if k != con.row]
    vec_group = [by_var[k] for k in con.vec_group if k != con.row]
    other_reduce = [by_var[k] for k in con.reduce if k != plan.kg]
    outer = shared + row_group + vec_group + [jo] + ([ro] if ro is not None else [])
    inner = ([ri] if ri is not None else []) + [jv, ji, ki]
    sch.reorder(*outer, *other_reduce, ko, *inner)
    first_reduce = other_reduce[0] if other_reduce else ko
    init = sch.decompose_reduction(block, first_reduce)
    init_loops = sch.get_loops(init)[len(outer):]
    sch.vectorize(init_loops[-1])
    for lp in init_loops[:-1]:
        sch.unroll(lp)
    step = sch.blockize(ji)
    sch.tensorize(step, plan.intrin)
    if ri is not None and (loop_extent(sch, ri) or 1) > 1:
        sch.unroll(ri)
    if plan.nv > 1:
        sch.unroll(jv)
    for epi in epilogue:
        if try_primitive(sch, "reverse_compute_at", epi, outer[-1]) is None:
            break
        schedule_loops_spatial(sch, sch.get_loops(epi)[len(outer):], None, cpu,
                               parallel=False, dtype=_out_dtype(sch, epi))
    work: Optional[int] = 1
    for e in info.extents:
        work = None if e is None or work is None else work * e
    parallelize_outer(sch, outer, cpu.parallel_tasks, work)
    return step


def _out_dtype(sch: Any, block: Any) -> str:
    writes = sch.get(block).writes
    return writes[0].buffer.dtype if writes else "int32"
