"""Loop transformations: split, fuse, reorder, add_unit_loop.

Each primitive is a function over the :class:`ScheduleState` and srefs (usable from other
primitives) plus a :class:`Schedule` method in :class:`LoopTransformMixin` that resolves
handles and is recorded in the trace.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence, Union

from ...expr import IntImm, IterVarType, PrimExpr, Range, Var, const
from ...expr_util import is_const_int
from ...functor import StmtExprMutator
from ...op import floordiv, floormod
from ...stmt import Block, BlockRealize, For, ForKind, Stmt
from ...stmt_functor import uses_var
from .. import analysis as A
from ..error import ScheduleError
from ..handles import BlockRV, ExprRV, LoopRV
from ..instruction import instruction
from ..state import ScheduleState, StmtSRef

__all__ = ["split", "fuse", "reorder", "add_unit_loop", "LoopTransformMixin",
           "LoopBodyRewriter"]

Factor = Union[int, PrimExpr, None]


class LoopBodyRewriter(StmtExprMutator):
    """Substitutes loop variables in a loop body, simplifying block bindings with the new
    loops' ranges, and ANDs ``predicate`` into the first-level BlockRealizes."""

    def __init__(self, vmap: dict[Var, PrimExpr], ranges: dict[Var, Range],
                 predicate: Optional[PrimExpr] = None):
        from tvm.arith import Analyzer

        self.vmap = vmap
        self.predicate = predicate
        self.analyzer = Analyzer()
        for var, rng in ranges.items():
            self.analyzer.bind(var, rng)
        self._in_block = 0
        self.guarded = 0

    def visit_var_(self, v: Var) -> PrimExpr:
        return self.vmap.get(v, v)

    def visit_block_(self, op: Block) -> Stmt:
        self._in_block += 1
        try:
            return self.generic_mutate(op)
        finally:
            self._in_block -= 1

    def visit_block_realize_(self, op: BlockRealize) -> Stmt:
        outer = self._in_block == 0
        values = tuple(self.analyzer.simplify(self.visit_expr(v)) for v in op.iter_values)
        pred = self.visit_expr(op.predicate)
        if outer and self.predicate is not None:
            pred = self.predicate if _is_true(pred) else pred & self.predicate
            self.guarded += 1
        if pred is not op.predicate:
            pred = self.analyzer.simplify(pred)
        block = self.visit_stmt(op.block)
        if all(a is b for a, b in zip(values, op.iter_values)) and pred is op.predicate \
                and block is op.block:
            return op
        return op.with_fields(iter_values=values, predicate=pred, block=block)


def _is_true(e: PrimExpr) -> bool:
    return isinstance(e, IntImm) and e.dtype == "bool" and e.value == 1


def _product(values: Sequence[PrimExpr]) -> PrimExpr:
    out = values[0]
    for v in values[1:]:
        out = out * v
    return out


def _check_blocks_under(primitive: str, loop_sref: StmtSRef) -> None:
    if not A.blocks_under(loop_sref):
        raise ScheduleError(primitive, "the loop contains no block", loop_sref)


# -- split ------------------------------------------------------------------------------------
def split(state: ScheduleState, loop_sref: StmtSRef, factors: Sequence[Factor],
          preserve_unit_iters: bool = True) -> list[StmtSRef]:
    """Split a loop into ``len(factors)`` nested loops (outermost first).

    ``factors`` are positive ints (or constant expressions); at most one may be ``None`` and
    is inferred as ``ceildiv(extent, product of the others)``.  When the product exceeds
    the extent, the blocks under the loop get the predicate ``fused index < extent``.
    The new loops are serial.
    """
    loop = loop_sref.loop
    if not factors:
        raise ScheduleError("split", "factors must not be empty", loop_sref)
    _check_blocks_under("split", loop_sref)
    from tvm.arith import Analyzer

    dtype = loop.loop_var.dtype
    ana = Analyzer()
    nones = [k for k, f in enumerate(factors) if f is None]
    if len(nones) > 1:
        raise ScheduleError("split", f"at most one factor may be None (inferred), got "
                            f"{len(nones)} in {list(factors)}", loop_sref)
    known: list[Optional[PrimExpr]] = []
    for f in factors:
        if f is None:
            known.append(None)
            continue
        fe = ana.simplify(const(f, dtype) if isinstance(f, int) else f)
        if isinstance(fe, IntImm) and fe.value <= 0:
            raise ScheduleError("split", f"factors must be positive, got {list(factors)}",
                                loop_sref)
        if fe.dtype != dtype:
            fe = ana.simplify(fe.astype(dtype)) if hasattr(fe, "astype") else fe
        known.append(fe)
    extent = loop.extent
    others = [f for f in known if f is not None]
    if nones:
        prod_others = _product(others) if others else const(1, dtype)
        known[nones[0]] = ana.simplify(floordiv(extent + prod_others - 1, prod_others))
    total = ana.simplify(_product(known))  # type: ignore[arg-type]
    # an inferred factor covers the extent by construction (the prover may not see it
    # through floordiv of a symbolic extent)
    if not nones and not ana.can_prove(total >= extent):
        raise ScheduleError(
            "split", f"the product of the factors [{', '.join(_show(f) for f in known)}] = "
            f"{_show(total)} does not cover the loop extent {_show(extent)}", loop_sref,
            hint="use None for one factor to infer it",
        )
    names = loop.loop_var.name
    new_vars = [Var(f"{names}_{k}", dtype) for k in range(len(known))]
    fused: PrimExpr = const(0, dtype)
    for var, f in zip(new_vars, known):
        unit = is_const_int(f, 1) and not preserve_unit_iters
        fused = fused * f + (const(0, dtype) if unit else var)
    fused = ana.simplify(fused)
    value = fused if is_const_int(loop.min, 0) else loop.min + fused
    predicate = None if ana.can_prove(total == extent) else fused < extent
    ranges = {v: Range(const(0, dtype), f) for v, f in zip(new_vars, known)}
    rewriter = LoopBodyRewriter({loop.loop_var: value}, ranges, predicate)
    body = rewriter.visit_stmt(loop.body)
    for var, f in reversed(list(zip(new_vars, known))):
        body = For(var, const(0, dtype), f, ForKind.SERIAL, body, span=loop.span)
    state.replace({loop: body}, func_name=loop_sref.func_name)
    out = []
    node = state.get_sref(body, loop_sref.func_name)
    for _ in new_vars:
        out.append(node)
        node = node.children[0] if node.children and node.children[0].is_loop else None
    return out


def _show(e: Any) -> str:
    return str(e.value) if isinstance(e, IntImm) else repr(e)


# -- fuse -------------------------------------------------------------------------------------
def fuse(state: ScheduleState, loop_srefs: Sequence[StmtSRef],
         preserve_unit_iters: bool = True) -> StmtSRef:
    """Fuse perfectly nested loops (each the whole body of the previous) into one serial
    loop ``{names}_fused`` of the product extent."""
    if not loop_srefs:
        raise ScheduleError("fuse", "needs at least one loop")
    loops = [s.loop for s in loop_srefs]
    for k, s in enumerate(loop_srefs):
        if any(s is o for o in loop_srefs[:k]):
            raise ScheduleError("fuse", "a loop is listed twice", s)
        if s.loop.kind != ForKind.SERIAL:
            raise ScheduleError("fuse", f"the loop is {s.loop.kind.name.lower()}; only serial "
                                "loops can be fused", s,
                                hint="fuse before parallel/vectorize/unroll/bind")
        if k and loops[k - 1].body is not loops[k]:
            raise ScheduleError(
                "fuse", "the loops are not adjacent: each loop must be the only statement in "
                "the body of the previous one", loop_srefs[k - 1], loop_srefs[k],
            )
        outer_vars = {id(o.loop_var) for o in loops[:k]}
        if k and any(uses_var(e, lambda v, ov=outer_vars: id(v) in ov)
                     for e in (loops[k].min, loops[k].extent)):
            raise ScheduleError("fuse", "the loop's range depends on an outer loop being fused",
                                loop_srefs[k])
    _check_blocks_under("fuse", loop_srefs[-1])
    from tvm.arith import Analyzer

    dtype = loops[0].loop_var.dtype
    ana = Analyzer()
    extents = [ana.simplify(lp.extent) for lp in loops]
    fused_var = Var("_".join(lp.loop_var.name for lp in loops) + "_fused", dtype)
    total = ana.simplify(_product(extents))
    vmap: dict[Var, PrimExpr] = {}
    inner = const(1, dtype)
    for lp, ext in reversed(list(zip(loops, extents))):
        if is_const_int(ext, 1) and not preserve_unit_iters:
            value: PrimExpr = lp.min
        else:
            value = floordiv(fused_var, inner) if not is_const_int(inner, 1) else fused_var
            if lp is not loops[0]:
                value = floormod(value, ext)
            if not is_const_int(lp.min, 0):
                value = lp.min + value
        vmap[lp.loop_var] = value
        inner = ana.simplify(inner * ext)
    rewriter = LoopBodyRewriter(vmap, {fused_var: Range(const(0, dtype), total)})
    body = rewriter.visit_stmt(loops[-1].body)
    new_loop = For(fused_var, const(0, dtype), total, ForKind.SERIAL, body, span=loops[0].span)
    state.replace({loops[0]: new_loop}, func_name=loop_srefs[0].func_name)
    return state.get_sref(new_loop, loop_srefs[0].func_name)  # type: ignore[return-value]


# -- reorder ----------------------------------------------------------------------------------
def reorder(state: ScheduleState, loop_srefs: Sequence[StmtSRef]) -> None:
    """Reorder loops of one nest: the listed loops take, in the order given, the positions
    they occupy in the nest; unlisted loops in between stay where they are."""
    if not loop_srefs:
        raise ScheduleError("reorder", "needs at least one loop")
    for k, s in enumerate(loop_srefs):
        if any(s is o for o in loop_srefs[:k]):
            raise ScheduleError("reorder", "a loop is listed twice", s)
    by_depth = sorted(loop_srefs, key=lambda s: s.depth())
    top, bottom = by_depth[0], by_depth[-1]
    chain = A.loops_between(top, bottom)
    listed = {id(s) for s in loop_srefs}
    if not chain or sum(1 for s in chain if id(s) in listed) != len(loop_srefs):
        raise ScheduleError(
            "reorder", "the loops are not in one loop nest: each must enclose the next "
            "through loops only", *loop_srefs,
        )
    for upper, lower in zip(chain, chain[1:]):
        if upper.loop.body is not lower.loop:
            raise ScheduleError(
                "reorder", "the loops are not perfectly nested: the loop's body holds more "
                "than the next loop of the nest", upper, lower,
            )
    chain_vars = [s.loop.loop_var for s in chain]
    for s in chain[1:]:
        if any(uses_var(e, lambda v: any(v is cv for cv in chain_vars))
               for e in (s.loop.min, s.loop.extent)):
            raise ScheduleError("reorder", "the loop's range depends on another loop of the "
                                "nest", s)
    allowed = (IterVarType.DATA_PAR, IterVarType.COMM_REDUCE)
    for s in loop_srefs:
        for use in A.loop_users(s):
            if use.iter_var.iter_type not in allowed:
                raise ScheduleError(
                    "reorder", f"the loop drives the {use.iter_var.iter_type.name.lower()} "
                    f"iteration variable {use.iter_var.var.name!r} of "
                    f"block {use.block.block.name_hint!r}; only data-parallel and reduction "
                    "iterations can be reordered", s,
                )
    order = iter(loop_srefs)
    new_chain = [next(order) if id(s) in listed else s for s in chain]
    body = bottom.loop.body
    for s in reversed(new_chain):
        body = s.loop.with_fields(body=body)
    state.replace({top.loop: body}, func_name=top.func_name)


def add_unit_loop(state: ScheduleState, sref: StmtSRef) -> StmtSRef:
    """Wrap a loop, or a block's realization, in a new loop of extent 1 (something to bind
    a thread axis to when a block has no loop of its own); returns the new loop."""
    from ._util import fresh_loop_vars, loop_names

    if sref.is_block:
        if sref.parent is None:
            raise ScheduleError("add_unit_loop", "cannot add a loop around the root block",
                                sref.stmt)
        stmt: Stmt = sref.realize  # type: ignore[assignment]
        dtype = "int32"
    else:
        stmt = sref.loop  # type: ignore[assignment]
        dtype = sref.loop.loop_var.dtype
    (var,) = fresh_loop_vars(1, dtype, loop_names(state, sref.func_name), prefix="u")
    loop = For(var, IntImm(dtype, 0), IntImm(dtype, 1), ForKind.SERIAL, stmt)
    state.replace({stmt: loop}, func_name=sref.func_name)
    return state.get_sref(loop, sref.func_name)  # type: ignore[return-value]


class LoopTransformMixin:
    """split / fuse / reorder / add_unit_loop methods of :class:`Schedule`."""

    @instruction("Split", inputs=("loop", "factors"), attrs=("preserve_unit_iters",),
                 outputs="list")
    def split(self, loop: LoopRV, factors: Sequence[Union[int, ExprRV, None]],
              preserve_unit_iters: bool = True) -> list[LoopRV]:
        """Split ``loop`` into ``len(factors)`` loops; one factor may be None (inferred).

        A non-divisible split guards the blocks with a predicate.  Returns the new loops,
        outermost first.
        """
        sref = self._loop_sref(loop, "split")
        if isinstance(factors, (int, PrimExpr)) or factors is None:
            raise TypeError(f"split: factors must be a list, got {factors!r}")
        values = [None if f is None else self._int_value(f, "split", "factor") for f in factors]
        return [self._new_rv(s) for s in split(self._state, sref, values, preserve_unit_iters)]

    @instruction("Fuse", inputs=("loops",), attrs=("preserve_unit_iters",), outputs="one")
    def fuse(self, *loops: LoopRV, preserve_unit_iters: bool = True) -> LoopRV:
        """Fuse perfectly nested loops (outermost first) into one loop."""
        if len(loops) == 1 and isinstance(loops[0], (list, tuple)):
            loops = tuple(loops[0])
        srefs = [self._loop_sref(lp, "fuse") for lp in loops]
        return self._new_rv(fuse(self._state, srefs, preserve_unit_iters))

    @instruction("Reorder", inputs=("ordered_loops",), outputs="none")
    def reorder(self, *ordered_loops: LoopRV) -> None:
        """Reorder loops of one perfect nest into the given order (outermost first)."""
        if len(ordered_loops) == 1 and isinstance(ordered_loops[0], (list, tuple)):
            ordered_loops = tuple(ordered_loops[0])
        reorder(self._state, [self._loop_sref(lp, "reorder") for lp in ordered_loops])

    @instruction("AddUnitLoop", inputs=("block_or_loop",), outputs="one")
    def add_unit_loop(self, block_or_loop: Union[BlockRV, LoopRV]) -> LoopRV:
        """A new loop of extent 1 around ``block_or_loop``; returns it."""
        sref = self._block_or_loop_sref(block_or_loop, "add_unit_loop")
        return self._new_rv(add_unit_loop(self._state, sref))
