"""Analyses over the sref tree that primitives share.

Tree queries: :func:`get_loops`, :func:`get_child_blocks`, :func:`blocks_under`,
:func:`loops_between`.  Block properties: :func:`iter_bindings`, :func:`is_reduction_block`,
:func:`is_complete_block`, :func:`is_output_block`, :func:`is_trivial_binding`,
:func:`is_affine_binding`.  Dependences in a scope: :func:`block_deps`,
:func:`get_producers`, :func:`get_consumers`.  Loop facts: :func:`loop_extent`,
:func:`loop_users`.  ``check_*`` variants raise :class:`ScheduleError`.
"""

from __future__ import annotations

from typing import NamedTuple, Optional

from ..buffer import Buffer
from ..expr import (
    Add, Cast, FloorDiv, FloorMod, IntImm, IterVar, IterVarType, Mul, PrimExpr, Sub, Var,
)
from ..expr_util import loop_extent
from ..stmt import BlockRealize
from ..stmt_functor import uses_var
from .error import ScheduleError
from .state import ScheduleState, StmtSRef

__all__ = [
    "get_loops", "get_child_blocks", "blocks_under", "loops_between", "iter_bindings",
    "is_reduction_block", "is_complete_block", "is_output_block", "is_trivial_binding",
    "is_affine_binding", "block_deps", "get_producers", "get_consumers", "Dep",
    "loop_extent", "loop_users", "check_complete_block", "check_reduction_block",
    "output_buffers", "get_block_realize", "get_scope_root", "is_data_par_loop",
]


# -- tree queries -----------------------------------------------------------------------------
def get_block_realize(block_sref: StmtSRef) -> BlockRealize:
    """The BlockRealize that runs the block of ``block_sref``."""
    if block_sref.realize is None:
        raise ScheduleError("get_block_realize", "the block has no BlockRealize", block_sref.stmt)
    return block_sref.realize


def get_scope_root(sref: StmtSRef) -> StmtSRef:
    """The nearest enclosing block; the root block is its own scope."""
    scope = sref.scope_block()
    return scope if scope is not None else sref


def get_loops(block_sref: StmtSRef) -> list[StmtSRef]:
    """The loops around a block, outermost first, up to its enclosing block."""
    loops = []
    for anc in block_sref.ancestors():
        if anc.is_block:
            break
        loops.append(anc)
    loops.reverse()
    return loops


def get_child_blocks(sref: StmtSRef) -> list[StmtSRef]:
    """Blocks directly under a block or loop (not inside another block), in program order."""
    out: list[StmtSRef] = []

    def walk(s: StmtSRef) -> None:
        for c in s.children:
            if c.is_block:
                out.append(c)
            else:
                walk(c)

    walk(sref)
    return out


def blocks_under(sref: StmtSRef, include_nested: bool = True) -> list[StmtSRef]:
    """Every block below ``sref`` (and inside nested blocks too, by default)."""
    out: list[StmtSRef] = []

    def walk(s: StmtSRef) -> None:
        for c in s.children:
            if c.is_block:
                out.append(c)
                if include_nested:
                    walk(c)
            else:
                walk(c)

    walk(sref)
    return out


def loops_between(outer: StmtSRef, inner: StmtSRef) -> list[StmtSRef]:
    """Loops from ``outer`` down to ``inner`` (both included) if ``outer`` encloses ``inner``
    through loops only; otherwise an empty list."""
    chain = [inner]
    for anc in inner.ancestors():
        if anc.is_block:
            return []
        chain.append(anc)
        if anc is outer:
            chain.reverse()
            return chain
    return []


# -- block properties -------------------------------------------------------------------------
def iter_bindings(block_sref: StmtSRef) -> list[tuple[IterVar, PrimExpr]]:
    """``(iter_var, bound value)`` for each iteration variable of the block."""
    realize = get_block_realize(block_sref)
    return list(zip(realize.block.iter_vars, realize.iter_values))


def is_reduction_block(block_sref: StmtSRef) -> bool:
    """A block with an ``init`` or a reduction iteration variable, all iterations either
    data-parallel or reduction."""
    block = block_sref.block
    kinds = {iv.iter_type for iv in block.iter_vars}
    if not kinds <= {IterVarType.DATA_PAR, IterVarType.COMM_REDUCE}:
        return False
    return block.init is not None or IterVarType.COMM_REDUCE in kinds


def is_complete_block(block_sref: StmtSRef, scope_sref: Optional[StmtSRef] = None) -> bool:
    """Data-parallel iterations only, the only writer of its outputs in the scope, and no
    buffer both read and written."""
    block = block_sref.block
    if any(iv.iter_type != IterVarType.DATA_PAR for iv in block.iter_vars):
        return False
    if block.init is not None:
        return False
    written = {id(r.buffer) for r in block.writes}
    if any(id(r.buffer) in written for r in block.reads):
        return False
    scope = scope_sref or get_scope_root(block_sref)
    for other in get_child_blocks(scope):
        if other is not block_sref and any(id(w.buffer) in written for w in other.block.writes):
            return False
    return True


def check_complete_block(primitive: str, block_sref: StmtSRef) -> None:
    if not is_complete_block(block_sref):
        raise ScheduleError(
            primitive, "the block is not complete: it must have only data-parallel iteration "
            "variables, be the only writer of its output buffers in its scope, and not read "
            "what it writes", block_sref.stmt,
        )


def check_reduction_block(primitive: str, block_sref: StmtSRef) -> None:
    if not is_reduction_block(block_sref):
        raise ScheduleError(
            primitive, "the block is not a reduction block: it needs an init or a reduction "
            "iteration variable, and only data-parallel or reduction iteration variables",
            block_sref.stmt,
        )


def output_buffers(state: ScheduleState, func_name: str) -> set[int]:
    """``id`` of the buffers bound to the function's parameters."""
    return {id(b) for b in state.func(func_name).buffer_map.values()}


def is_output_block(state: ScheduleState, block_sref: StmtSRef) -> bool:
    """Whether the block writes a buffer of the function's signature."""
    outs = output_buffers(state, block_sref.func_name)
    return any(id(w.buffer) in outs for w in block_sref.block.writes)


def is_trivial_binding(block_sref: StmtSRef) -> bool:
    """Each iteration variable is bound to exactly the loop variable at its position."""
    loops = get_loops(block_sref)
    bindings = iter_bindings(block_sref)
    if len(loops) != len(bindings):
        return False
    return all(value is loop.loop.loop_var for (_, value), loop in zip(bindings, loops))


def _quasi_affine(expr: PrimExpr, loop_vars: set[int]) -> bool:
    if isinstance(expr, (IntImm, Var)):  # loop variables and symbolic constants
        return True
    if isinstance(expr, (Add, Sub)):
        return _quasi_affine(expr.a, loop_vars) and _quasi_affine(expr.b, loop_vars)
    if isinstance(expr, Mul):
        return (isinstance(expr.a, IntImm) or isinstance(expr.b, IntImm)) and \
            _quasi_affine(expr.a, loop_vars) and _quasi_affine(expr.b, loop_vars)
    if isinstance(expr, (FloorDiv, FloorMod)):
        return isinstance(expr.b, IntImm) and expr.b.value > 0 and \
            _quasi_affine(expr.a, loop_vars)
    if isinstance(expr, Cast):
        return _quasi_affine(expr.value, loop_vars)
    return False


def is_affine_binding(block_sref: StmtSRef) -> bool:
    """Each binding is a quasi-affine form (sums, products by constants, floordiv/floormod
    by positive constants) of the loop variables around the block."""
    loop_vars = {id(s.loop.loop_var) for s in get_loops(block_sref)}
    return all(_quasi_affine(v, loop_vars) for _, v in iter_bindings(block_sref))


# -- loops ------------------------------------------------------------------------------------
class LoopUse(NamedTuple):
    block: StmtSRef
    iter_var: IterVar
    binding: PrimExpr


def loop_users(loop_sref: StmtSRef) -> list[LoopUse]:
    """Every (block, iteration variable) below the loop whose binding uses its variable."""
    var = loop_sref.loop.loop_var
    out = []
    for block in blocks_under(loop_sref):
        for iv, value in iter_bindings(block):
            if uses_var(value, lambda v: v is var):
                out.append(LoopUse(block, iv, value))
    return out


def is_data_par_loop(loop_sref: StmtSRef) -> bool:
    """Whether every block iteration the loop drives is data-parallel."""
    return all(u.iter_var.iter_type == IterVarType.DATA_PAR for u in loop_users(loop_sref))


# -- dependences ------------------------------------------------------------------------------
class Dep(NamedTuple):
    src: StmtSRef
    dst: StmtSRef
    kind: str  # "RAW" | "WAW" | "WAR"
    buffer: Buffer


def block_deps(scope_sref: StmtSRef) -> list[Dep]:
    """Dependences between the child blocks of a scope, from their declared regions."""
    writers: dict[int, list[StmtSRef]] = {}
    readers: dict[int, list[StmtSRef]] = {}
    deps: list[Dep] = []
    for blk in get_child_blocks(scope_sref):
        block = blk.block
        for region in block.reads:
            for w in writers.get(id(region.buffer), []):
                deps.append(Dep(w, blk, "RAW", region.buffer))
        for region in block.writes:
            for w in writers.get(id(region.buffer), []):
                if w is not blk:
                    deps.append(Dep(w, blk, "WAW", region.buffer))
            for r in readers.get(id(region.buffer), []):
                if r is not blk:
                    deps.append(Dep(r, blk, "WAR", region.buffer))
        for region in block.reads:
            readers.setdefault(id(region.buffer), []).append(blk)
        for region in block.writes:
            lst = writers.setdefault(id(region.buffer), [])
            if blk not in lst:
                lst.append(blk)
    return deps


def _in_order(scope: StmtSRef, srefs: list[StmtSRef]) -> list[StmtSRef]:
    wanted = {id(s) for s in srefs}
    return [s for s in get_child_blocks(scope) if id(s) in wanted]


def get_producers(block_sref: StmtSRef) -> list[StmtSRef]:
    """Blocks of the same scope that write what this block reads (RAW) or writes (WAW), in
    program order."""
    scope = get_scope_root(block_sref)
    deps = block_deps(scope)
    return _in_order(scope, [d.src for d in deps
                             if d.dst is block_sref and d.kind in ("RAW", "WAW")])


def get_consumers(block_sref: StmtSRef) -> list[StmtSRef]:
    """Blocks of the same scope that read (RAW) or overwrite (WAW) what this block writes, in
    program order."""
    scope = get_scope_root(block_sref)
    deps = block_deps(scope)
    return _in_order(scope, [d.dst for d in deps
                             if d.src is block_sref and d.kind in ("RAW", "WAW")])
