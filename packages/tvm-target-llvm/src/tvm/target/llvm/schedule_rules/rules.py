"""The default CPU rules, as rules of the framework :mod:`tvm.tir.schedule.rules`.

:func:`cpu_rules` lists them in the order the driver applies them to a PrimFunc:

1. **padding** (:class:`PaddingRule`, prepares only): a contraction whose best
   vectorization an inlined zero padding would mask reads a padded copy of its input
   instead (``sch.materialize_padding``, :mod:`tvm.tir.schedule.primitive.padding`);
2. **inline** (:class:`~tvm.tir.schedule.rules.AutoInline` with :func:`inlinable`):
   data-parallel blocks that only feed others (casts, bias adds, broadcasts) are inlined
   into their consumers, except padding stages and producers of contractions (they keep a
   contiguous copy the micro-kernel reads) and expensive blocks read by several consumers
   (``exp`` in softmax);
3. **int8**: an int8/uint8 contraction into int32 that the target has a dot-product
   instruction for gets the tensorized micro-kernel of :mod:`.int8` (with the sums of its
   constant weight moved to compile time); it runs over all blocks before the anchors, so
   that it sees the contraction before the anchors schedule the weight sums before it;
4. **anchors**, the first that fits each reduction left: every sum-of-products reduction gets
   the micro-kernel of :mod:`.contraction` with its elementwise consumers as epilogue (and
   its padding stage as prologue where that costs nothing extra); row-wise groups (softmax,
   layer norm: reductions whose results one output block combines with its input) get
   :mod:`.reduction`'s fused row schedule; other reductions its reduction rule;
5. **elementwise**: the data-parallel blocks left get the rule of :mod:`.elementwise`.
"""

from __future__ import annotations

from typing import Any

from tvm.ir.op import Op
from tvm.tir.expr import Call
from tvm.tir.schedule.primitive.padding import padded_loads
from tvm.tir.schedule.rules import (
    AutoInline, FirstOf, ScheduleRule, claim, claims, is_output_block, root_blocks,
)
from tvm.tir.stmt_functor import post_order_visit

from .analysis import (
    BlockInfo, analyze_block, contraction_candidates, is_padding_like, match_contraction,
)
from .contraction import choose_contraction, schedule_contraction, tile_choices
from .cpu import CPUInfo
from .elementwise import schedule_loops_spatial, schedule_spatial
from .int8 import (
    check_int8, int8_tile_choices, materialize_int8_padding, plan_int8, schedule_int8,
    weight_only_reductions,
)
from .reduction import find_row_group, schedule_reduction, schedule_row_group

__all__ = ["cpu_rules", "PaddingRule", "Int8DotRule", "ContractionRule", "RowGroupRule",
           "ReductionRule", "ElementwiseRule", "inlinable"]

_MATH_CALLS = ("exp", "log", "tanh", "erf", "sigmoid", "pow", "sqrt", "rsqrt", "sin", "cos",
               "exp2", "log2", "log10", "tan", "atan", "fmod")


class _CPURule(ScheduleRule):
    def __init__(self, cpu: CPUInfo):
        self.cpu = cpu


def _contraction(sch: Any, block: Any, cpu: CPUInfo) -> Any:
    """The contraction the micro-kernel would use for ``block`` (None: not one)."""
    info = analyze_block(sch, block)
    if not info.is_reduction:
        return None
    return choose_contraction(info, contraction_candidates(info), cpu)


class PaddingRule(_CPURule):
    """A contraction whose chosen vectorization is masked by an inlined padding check reads
    padded copies of its guarded inputs instead (one ``materialize_padding`` each)."""

    name = "padding"
    claims_block = False

    def applies(self, sch: Any, block: Any) -> bool:
        con = _contraction(sch, block, self.cpu)
        if con is None or not con.guarded or not padded_loads(sch.get(block)):
            return False
        # the only block of its top-level loop nest
        loops = sch.get_loops(block)
        return not loops or len(sch.get_child_blocks(loops[0])) == 1

    def transform(self, sch: Any, block: Any) -> None:
        while True:
            pads = padded_loads(sch.get(block))
            if not pads:
                return
            reads = sch.get(block).reads
            index = next(k for k, r in enumerate(reads) if r.buffer is pads[0].load.buffer)
            sch.materialize_padding(block, index)


def _has_math(info: BlockInfo) -> bool:
    found = False

    def visit(n: Any) -> None:
        nonlocal found
        if isinstance(n, Call) and isinstance(n.op, Op) and \
                n.op.name.removeprefix("tir.") in _MATH_CALLS:
            found = True

    if info.store is not None:
        post_order_visit(info.store.value, visit)
    return found


def inlinable(sch: Any, block: Any) -> bool:
    """The CPU's test of which data-parallel producers to inline (see the module doc)."""
    info = analyze_block(sch, block)
    if not info.is_spatial or info.store is None or is_output_block(sch, block):
        return False
    if is_padding_like(info):
        return False
    consumers = sch.get_consumers(block)
    if not consumers:
        return False
    for c in consumers:
        cinfo = analyze_block(sch, c)
        if cinfo.is_reduction and match_contraction(cinfo) is not None:
            return False
    return len(consumers) == 1 or not _has_math(info)


def _same_nest(sch: Any, a: Any, b: Any) -> bool:
    """Whether blocks ``a`` and ``b`` share their outermost loop (``b`` was moved into
    ``a``'s nest by reverse_compute_at)."""
    la, lb = sch.get_loops(a), sch.get_loops(b)
    return bool(la and lb) and sch.get(la[0]) is sch.get(lb[0])


def _unit_free(forms: list, info: BlockInfo) -> list:
    """``forms`` without the iteration variables of extent 1 (a broadcast batch index
    ``0`` reads the same element as ``v_n`` over ``n in range(1)``)."""
    return [None if f is None else {k: c for k, c in f.items() if info.extents[k] != 1}
            for f in forms]


def _reads_elementwise(info: BlockInfo, producer_block: Any) -> bool:
    """Every load of the producer's output in ``info`` uses the block's own store indices
    (up to iteration variables of extent 1)."""
    written = {id(r.buffer) for r in producer_block.writes}
    found = False
    for acc in info.loads:
        if id(acc.buffer) in written:
            found = True
            if info.write is None or \
                    _unit_free(acc.forms, info) != _unit_free(info.write.forms, info):
                return False
    return found


def _epilogue(sch: Any, block: Any) -> list[Any]:
    """Elementwise consumers to compute per tile: a chain of single consumers, each reading
    the previous one at its own indices."""
    chain: list[Any] = []
    current = block
    while True:
        consumers = sch.get_consumers(current)
        if len(consumers) != 1:
            break
        nxt = consumers[0]
        info = analyze_block(sch, nxt)
        if not info.is_spatial or not _reads_elementwise(info, sch.get(current)):
            break
        chain.append(nxt)
        current = nxt
    return chain


class Int8DotRule(_CPURule):
    """Integer contractions (int8/uint8 products into int32) tensorized with the target's
    dot-product instruction (:mod:`.int8`, :mod:`~tvm.target.llvm.dot_intrin`); shapes or
    targets it does not fit fall through to :class:`ContractionRule`."""

    name = "int8 dot product"

    def applies(self, sch: Any, block: Any) -> bool:
        return plan_int8(analyze_block(sch, block), self.cpu) is not None

    #: other register tiles (by the model's order) a tuner measures besides the chosen one
    ALTERNATIVE_TILES = 3

    def transform(self, sch: Any, block: Any) -> None:
        self._schedule(sch, block, None)

    def candidates(self, sch: Any, block: Any) -> list[Any]:
        """The default kernel, then the next register tiles of the model (distinct
        schedules only): the int8 kernels' part of a tuner's design space."""
        from tvm.ffi import structural_hash
        from tvm.tir.schedule.error import ScheduleError
        from tvm.tir.schedule.rules import RuleNotApplicable, fork

        from ..dot_intrin import dot_intrin

        plan = check_int8(analyze_block(sch, block), self.cpu)
        tiles = int8_tile_choices(analyze_block(sch, block), plan.con,
                                  dot_intrin(plan.intrin), self.cpu)
        pristine = fork(sch)
        out, seen = [], set()
        for tile in [None, *tiles[1:1 + self.ALTERNATIVE_TILES]]:
            cand = fork(pristine) if out else sch
            try:
                self._schedule(cand, block, tile)
            except (RuleNotApplicable, ScheduleError, ValueError, TypeError):
                if not out:
                    raise
                continue
            key = structural_hash(cand.mod)
            if key not in seen:
                seen.add(key)
                out.append(cand)
        return out

    def _schedule(self, sch: Any, block: Any, tile: Any) -> None:
        from dataclasses import replace

        check_int8(analyze_block(sch, block), self.cpu)
        pads = materialize_int8_padding(sch, block)
        info = analyze_block(sch, block)
        plan = check_int8(info, self.cpu)
        if tile is not None:
            plan = replace(plan, mr=tile[0], nv=tile[1])
        weight = plan.con.operands[plan.b].buffer
        layout_free = _layout_free(sch, weight)
        # the reductions of the constant weight alone (zero-point corrections) run with its
        # packing, at compile time
        sums = weight_only_reductions(sch, block, weight) if layout_free else []
        for s in sums:
            sch.annotate(s, "layout_rewrite_preproc", True)
        epilogue = _epilogue(sch, block)
        step = schedule_int8(sch, block, info, plan, self.cpu, epilogue, layout_free)
        from ..dot_intrin import dot_intrin

        claim(sch, info.name, f"{self.report} ({dot_intrin(plan.intrin).name})")
        for e in epilogue:
            if _same_nest(sch, step, e):
                claim(sch, e, f"epilogue of {info.name}")
        for s in sums:
            claim(sch, s, f"{self.report} (weight sum, compile time)")
        for p in pads:
            schedule_loops_spatial(sch, sch.get_loops(p), None, self.cpu,
                                   dtype=sch.get(p).writes[0].buffer.dtype, vectorize=False)
            claim(sch, p, f"padding of {info.name}")


def _layout_free(sch: Any, buffer: Any) -> bool:
    from .contraction import _layout_free as layout_free

    return layout_free(sch, buffer)


class ContractionRule(_CPURule):
    """Sum-of-products reductions: the register-blocked micro-kernel of :mod:`.contraction`
    with the elementwise consumers as epilogue and padding producers as prologue."""

    name = "contraction"

    def applies(self, sch: Any, block: Any) -> bool:
        return _contraction(sch, block, self.cpu) is not None

    #: other register tiles (by modelled rate) a tuner measures besides the chosen one
    ALTERNATIVE_TILES = 2
    #: cache sizes a tuner tries the chosen tile with (the reduction and panel blocking
    #: follow L1 and L2: a model that is off by 2x either way is measured too)
    CACHE_SCALES = ((0.5, 1.0), (2.0, 1.0), (1.0, 0.5), (1.0, 2.0))

    def transform(self, sch: Any, block: Any) -> None:
        self._schedule(sch, block, self.cpu, None)

    def candidates(self, sch: Any, block: Any) -> list[Any]:
        """The default micro-kernel, then the next register tiles of the model and the
        chosen tile blocked for caches half and twice the modelled size (distinct
        schedules only)."""
        from dataclasses import replace

        from tvm.ffi import structural_hash
        from tvm.tir.schedule.error import ScheduleError
        from tvm.tir.schedule.rules import RuleNotApplicable, fork

        info = analyze_block(sch, block)
        con = choose_contraction(info, contraction_candidates(info), self.cpu)
        tiles = tile_choices(info, con, self.cpu)
        variants: list[tuple[CPUInfo, Any]] = [(self.cpu, None)]
        variants += [(self.cpu, t) for t in tiles[1:1 + self.ALTERNATIVE_TILES]]
        variants += [(replace(self.cpu, l1_bytes=int(self.cpu.l1_bytes * a),
                              l2_bytes=int(self.cpu.l2_bytes * b)), tiles[0])
                     for a, b in self.CACHE_SCALES]
        pristine = fork(sch)
        out, seen = [], set()
        for cpu, tile in variants:
            cand = fork(pristine) if out else sch
            try:
                self._schedule(cand, block, cpu, tile)
            except (RuleNotApplicable, ScheduleError, ValueError, TypeError):
                if not out:
                    raise  # the default itself failed: the rule does not apply
                continue
            key = structural_hash(cand.mod)
            if key not in seen:
                seen.add(key)
                out.append(cand)
        return out

    def _schedule(self, sch: Any, block: Any, cpu: CPUInfo, tile: Any) -> None:
        info = analyze_block(sch, block)
        con = choose_contraction(info, contraction_candidates(info), cpu)
        name = info.name
        epilogue = _epilogue(sch, block)
        prologue = [p for p in sch.get_producers(block)
                    if is_padding_like(analyze_block(sch, p))]
        schedule_contraction(sch, block, info, con, cpu, epilogue, tile, prologue)
        claim(sch, name, self.report)
        for e in epilogue:
            if _same_nest(sch, block, e):
                claim(sch, e, f"epilogue of {name}")
        for p in prologue:
            if _same_nest(sch, block, p):
                claim(sch, p, f"prologue of {name}")


class RowGroupRule(_CPURule):
    """A reduction with the blocks computed per row of one output (softmax, layer norm)."""

    name = "row group"

    def applies(self, sch: Any, block: Any) -> bool:
        return analyze_block(sch, block).is_reduction

    def transform(self, sch: Any, block: Any) -> None:
        from tvm.tir.schedule.rules import RuleNotApplicable

        group = find_row_group(sch, block, root_blocks(sch), set(claims(sch)))
        if group is None:
            raise RuleNotApplicable("the reduction is not part of a row group")
        names = [sch.get(b).name_hint for b in group.blocks]
        schedule_row_group(sch, group, self.cpu)
        for n in names:
            claim(sch, n, self.report)


class ReductionRule(_CPURule):
    """Other reductions: vectorized along the output or through rfactor, parallel outside."""

    name = "reduction"

    def applies(self, sch: Any, block: Any) -> bool:
        return analyze_block(sch, block).is_reduction

    def transform(self, sch: Any, block: Any) -> None:
        schedule_reduction(sch, block, analyze_block(sch, block), self.cpu)


class ElementwiseRule(_CPURule):
    """Data-parallel blocks: vectorized inner loop, parallel outer loop."""

    name = "elementwise"

    def applies(self, sch: Any, block: Any) -> bool:
        return analyze_block(sch, block).is_spatial

    def transform(self, sch: Any, block: Any) -> None:
        schedule_spatial(sch, block, analyze_block(sch, block), self.cpu)


def cpu_rules(cpu: CPUInfo) -> list[ScheduleRule]:
    """The default CPU rules for ``cpu``, in the order they are applied."""
    return [
        PaddingRule(cpu),
        AutoInline(inlinable),
        Int8DotRule(cpu),
        FirstOf("anchor", [ContractionRule(cpu), RowGroupRule(cpu), ReductionRule(cpu)]),
        ElementwiseRule(cpu),
    ]
