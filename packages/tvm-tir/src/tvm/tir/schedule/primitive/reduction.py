"""decompose_reduction and rfactor.

``decompose_reduction(C, loop)`` takes the ``init`` out of reduction block ``C`` into a new
block ``C_init`` placed right before ``loop`` (an ancestor loop of ``C``), under copies
(``i_init`` ...) of the loops from ``loop`` down that drive ``C``'s data-parallel
iterations.  ``C`` keeps its name and no longer has an init.

``rfactor(loop, factor_axis)`` splits the reduction over ``loop`` (a loop driving only
reduction iterations of the single block ``C`` below it) into two stages:

* ``C_rf`` computes partial results ``C_rf[..., r, ...]`` (``r`` the iteration of ``loop``,
  at dimension ``factor_axis`` of the new buffer) where ``r`` is a data-parallel iteration,
  so ``loop`` can then be parallelized; it starts from the reducer's identity;
* ``C`` (same name and handle) reduces ``C_rf`` over ``r`` into the original buffer,
  starting from the original init, under copies of the loops that drive its data-parallel
  iterations plus ``loop``, placed right after the loop nest of ``C_rf``.

The update must be ``C[idx] = C[idx] op rhs`` with ``op`` one of ``+ * min max``.
"""

from __future__ import annotations

from typing import Optional

from tvm.ffi import structural_equal

from ...buffer import Buffer
from ...expr import (
    Add, And, BufferLoad, IterVar, IterVarType, Max, Mul, Min, PrimExpr, Range, Var, const,
)
from ...expr_util import is_const_int
from ...op import max_value, min_value
from ...stmt import Block, BlockRealize, BufferStore, For, Stmt
from ...stmt_functor import free_vars, substitute, uses_var
from .. import analysis as A
from ..error import ScheduleError
from ..handles import BlockRV, LoopRV
from ..instruction import instruction
from ..state import ScheduleState, StmtSRef
from ._util import (
    ScopeRewriter, child_position, conj, new_buffer_like, refresh_regions,
    rewrite_scope, unique_block_name,
)

__all__ = ["decompose_reduction", "rfactor", "ReductionMixin", "match_reducer"]


def _conjuncts(e: PrimExpr) -> list[PrimExpr]:
    if isinstance(e, And):
        return _conjuncts(e.a) + _conjuncts(e.b)
    return [e]


def _keep_predicate(pred: PrimExpr, vmap: dict, allowed: set[int]) -> PrimExpr:
    """The conjuncts of ``pred`` that only use variables in ``allowed`` (after ``vmap``)."""
    kept = []
    for c in _conjuncts(pred):
        c = substitute(c, vmap)
        if all(id(v) in allowed for v in free_vars(c)):
            kept.append(c)
    return conj(kept)


def _drop_predicate(pred: PrimExpr, vmap: dict, banned: set[int]) -> PrimExpr:
    """The conjuncts of ``pred`` that use no variable in ``banned`` (after ``vmap``)."""
    kept = []
    for c in _conjuncts(pred):
        c = substitute(c, vmap)
        if not any(id(v) in banned for v in free_vars(c)):
            kept.append(c)
    return conj(kept)


def _outer_vars(loop_srefs: list[StmtSRef]) -> set[int]:
    """Variables of all loops enclosing the first of ``loop_srefs`` (not themselves)."""
    out = set()
    if loop_srefs:
        for anc in loop_srefs[0].ancestors():
            if anc.is_loop:
                out.add(id(anc.loop.loop_var))
    return out


def _copy_loops(loops: list[StmtSRef], body: Stmt, vmap: dict[Var, Var]) -> Stmt:
    for s in reversed(loops):
        loop = s.loop
        body = For(vmap[loop.loop_var], substitute(loop.min, vmap),
                   substitute(loop.extent, vmap), loop.kind, body, loop.thread_binding,
                   dict(loop.annotations))
    return body


# -- decompose_reduction ----------------------------------------------------------------------
def decompose_reduction(state: ScheduleState, block_sref: StmtSRef, loop_sref: StmtSRef
                        ) -> StmtSRef:
    """Move the init of a reduction block into a new block before ``loop_sref``."""
    prim = "decompose_reduction"
    block = block_sref.block
    if block.init is None:
        raise ScheduleError(prim, "the block has no init to decompose", block)
    A.check_reduction_block(prim, block_sref)
    loops = A.get_loops(block_sref)
    if not any(s is loop_sref for s in loops):
        raise ScheduleError(prim, "the loop is not an ancestor of the block (within its "
                            "scope)", block, loop_sref.stmt)
    k = next(n for n, s in enumerate(loops) if s is loop_sref)
    realize = block_sref.realize
    reduce_values = [v for iv, v in zip(block.iter_vars, realize.iter_values)
                     if iv.iter_type == IterVarType.COMM_REDUCE]
    for s in loops[:k]:
        if any(uses_var(v, lambda x, s=s: x is s.loop.loop_var) for v in reduce_values):
            raise ScheduleError(
                prim, f"the loop is inside reduction loop {s.loop.loop_var.name!r}; the init "
                "must go above every loop of the reduction", block, loop_sref.stmt,
            )
    data_par = [(iv, v) for iv, v in zip(block.iter_vars, realize.iter_values)
                if iv.iter_type == IterVarType.DATA_PAR]
    chosen = [s for s in loops[k:]
              if any(uses_var(v, lambda x, s=s: x is s.loop.loop_var) for _, v in data_par)]
    loop_map = {s.loop.loop_var: Var(f"{s.loop.loop_var.name}_init", s.loop.loop_var.dtype)
                for s in chosen}
    iv_map = {iv.var: Var(f"{iv.var.name}_init", iv.var.dtype) for iv, _ in data_par}
    iter_vars = tuple(IterVar(iv.dom, iv_map[iv.var], IterVarType.DATA_PAR)
                      for iv, _ in data_par)
    values = tuple(substitute(v, loop_map) for _, v in data_par)
    body = substitute(block.init, iv_map)
    name = unique_block_name(state, block_sref.func_name, f"{block.name_hint}_init")
    init_block = refresh_regions(Block(iter_vars, (), (), name, body))
    # keep the conjuncts that do not mention a loop left out of the copy (a reduction
    # loop); symbolic shape variables (``i < n``) are kept
    banned = {id(s.loop.loop_var) for s in loops[k:] if s not in chosen}
    pred = _drop_predicate(realize.predicate, loop_map, banned)
    nest = _copy_loops(chosen, BlockRealize(values, pred, init_block), loop_map)
    parent = loop_sref.parent
    pos = child_position(parent, loop_sref)
    scope = A.get_scope_root(block_sref)

    def update(b: Block) -> Block:
        return refresh_regions(b.with_fields(init=None))

    rewriter = ScopeRewriter(inserts={id(parent.stmt): [(pos, nest)]},
                             block_fns={id(block): update})
    rewrite_scope(state, scope, rewriter)
    return state.get_sref(init_block, block_sref.func_name)  # type: ignore[return-value]


# -- reducers ---------------------------------------------------------------------------------
_REDUCERS = {Add: "add", Mul: "mul", Max: "max", Min: "min"}


def _identity(kind: str, dtype: str) -> PrimExpr:
    if kind == "add":
        return const(0, dtype)
    if kind == "mul":
        return const(1, dtype)
    if kind == "max":
        return min_value(dtype)
    return max_value(dtype)


def _combine(kind: str, a: PrimExpr, b: PrimExpr) -> PrimExpr:
    return {"add": Add, "mul": Mul, "max": Max, "min": Min}[kind](a, b)


def match_reducer(block: Block) -> Optional[tuple[str, BufferStore, PrimExpr]]:
    """``(kind, store, rhs)`` for an update ``C[idx] = C[idx] op rhs`` (either operand
    order), or None."""
    store = block.body
    if not isinstance(store, BufferStore):
        return None
    kind = _REDUCERS.get(type(store.value))
    if kind is None:
        return None
    a, b = store.value.a, store.value.b
    for acc, rhs in ((a, b), (b, a)):
        if isinstance(acc, BufferLoad) and acc.buffer is store.buffer and \
                structural_equal(acc.indices, store.indices):
            return kind, store, rhs
    return None


# -- rfactor ----------------------------------------------------------------------------------
def rfactor(state: ScheduleState, loop_sref: StmtSRef, factor_axis: int) -> StmtSRef:
    """Factor the reduction over ``loop_sref`` into an rfactor block; returns ``C_rf``."""
    prim = "rfactor"
    loop = loop_sref.loop
    blocks = A.blocks_under(loop_sref)
    if len(blocks) != 1:
        raise ScheduleError(prim, f"the loop must contain exactly one block, it contains "
                            f"{len(blocks)}", loop)
    block_sref = blocks[0]
    block = block_sref.block
    if block.init is None or not A.is_reduction_block(block_sref):
        raise ScheduleError(prim, "the block under the loop is not a reduction block with an "
                            "init", block, loop)
    matched = match_reducer(block)
    init = block.init
    if matched is None or not isinstance(init, BufferStore) or \
            init.buffer is not matched[1].buffer or \
            not structural_equal(init.indices, matched[1].indices):
        raise ScheduleError(
            prim, "the block is not a recognised reduction: expected init C[idx] = x and "
            "update C[idx] = C[idx] op rhs with op one of +, *, min, max", block,
        )
    kind, store, rhs = matched
    buffer: Buffer = store.buffer
    ndim = len(buffer.shape)
    if isinstance(factor_axis, bool) or not isinstance(factor_axis, int) or \
            not -(ndim + 1) <= factor_axis <= ndim:
        raise ScheduleError(prim, f"factor_axis {factor_axis!r} is out of range [{-(ndim + 1)}"
                            f", {ndim}] for the {ndim}-d buffer {buffer.name!r}", block)
    if factor_axis < 0:
        factor_axis += ndim + 1
    users = A.loop_users(loop_sref)
    if not users or any(u.iter_var.iter_type != IterVarType.COMM_REDUCE for u in users):
        raise ScheduleError(prim, "the loop must drive reduction iterations only", loop)
    loops = A.get_loops(block_sref)
    realize = block_sref.realize
    bindings = list(zip(block.iter_vars, realize.iter_values))
    dp = [(iv, v) for iv, v in bindings if iv.iter_type == IterVarType.DATA_PAR]
    red = [(iv, v) for iv, v in bindings if iv.iter_type == IterVarType.COMM_REDUCE]

    def used_by(s: StmtSRef, group: list) -> bool:
        return any(uses_var(v, lambda x: x is s.loop.loop_var) for _, v in group)

    for s in loops:
        if used_by(s, dp) and used_by(s, red):
            raise ScheduleError(prim, "the loop drives both data-parallel and reduction "
                                "iterations of the block", s.stmt, block)
    rf_var = loop.loop_var
    touched = [(iv, v) for iv, v in red if uses_var(v, lambda x: x is rf_var)]
    untouched = [(iv, v) for iv, v in red if not uses_var(v, lambda x: x is rf_var)]
    dtype = rf_var.dtype

    # The rfactor block: fresh iteration variables.
    v_rf = Var(f"v{rf_var.name}", dtype)
    rf_iv = IterVar(Range(const(0, dtype), loop.extent), v_rf, IterVarType.DATA_PAR)
    rf_value = rf_var if is_const_int(loop.min, 0) else rf_var - loop.min
    new_ivs: list[IterVar] = []
    new_vals: list[PrimExpr] = []
    vmap: dict[Var, PrimExpr] = {}
    for iv, v in dp + untouched:
        nv = Var(iv.var.name, iv.var.dtype)
        vmap[iv.var] = nv
        new_ivs.append(IterVar(iv.dom, nv, iv.iter_type))
        new_vals.append(v)
    loop_to_iter: dict[Var, PrimExpr] = {rf_var: v_rf if is_const_int(loop.min, 0) else v_rf + loop.min}
    extra_ivs: list[IterVar] = []
    extra_vals: list[PrimExpr] = []
    for s in loops:
        if s is loop_sref or not used_by(s, touched):
            continue
        lv = s.loop.loop_var
        nv = Var(f"v{lv.name}", lv.dtype)
        extra_ivs.append(IterVar(Range(s.loop.min, s.loop.extent), nv, IterVarType.COMM_REDUCE))
        extra_vals.append(lv)
        loop_to_iter[lv] = nv
    for iv, v in touched:
        vmap[iv.var] = substitute(v, loop_to_iter)
    rf_shape = list(buffer.shape)
    rf_shape.insert(factor_axis, loop.extent)
    rf_buffer = new_buffer_like(buffer, f"{buffer.name}_rf", shape=rf_shape)

    def rf_index(indices: tuple, var: PrimExpr) -> tuple:
        out = list(indices)
        out.insert(factor_axis, var)
        return tuple(out)

    rf_idx = rf_index(tuple(substitute(i, vmap) for i in store.indices), v_rf)
    rf_store = BufferStore(rf_buffer, _combine(kind, BufferLoad(rf_buffer, rf_idx),
                                               substitute(rhs, vmap)), rf_idx)
    rf_init = BufferStore(rf_buffer, _identity(kind, buffer.dtype), rf_idx)
    func_name = block_sref.func_name
    rf_name = unique_block_name(state, func_name, f"{block.name_hint}_rf")
    rf_block = refresh_regions(Block(
        tuple(new_ivs[:len(dp)] + [rf_iv] + new_ivs[len(dp):] + extra_ivs), (), (), rf_name,
        rf_store, rf_init,
    ))
    rf_realize = BlockRealize(tuple(new_vals[:len(dp)] + [rf_value] + new_vals[len(dp):]
                                    + extra_vals), realize.predicate, rf_block)

    # The write-back block: the original block reducing over the rfactor dimension.
    k = next(n for n, s in enumerate(loops) if s is loop_sref)
    top = k
    while top > 0 and len(A.blocks_under(loops[top - 1])) == 1:
        top -= 1  # the outermost loop holding nothing but this block
    nest_loops = loops[top:]
    copied = [s for s in nest_loops if s is loop_sref or used_by(s, dp)]
    lmap = {s.loop.loop_var: Var(s.loop.loop_var.name, s.loop.loop_var.dtype) for s in copied}
    v_wb = Var(f"v{rf_var.name}", dtype)
    wb_iv = IterVar(Range(const(0, dtype), loop.extent), v_wb, IterVarType.COMM_REDUCE)
    wb_idx = rf_index(tuple(store.indices), v_wb)
    wb_store = BufferStore(buffer, _combine(kind, BufferLoad(buffer, store.indices),
                                            BufferLoad(rf_buffer, wb_idx)), store.indices)
    wb_block = refresh_regions(block.with_fields(
        iter_vars=tuple(iv for iv, _ in dp) + (wb_iv,), body=wb_store, init=init,
    ))
    rf_copy = lmap[rf_var]
    wb_values = tuple(substitute(v, lmap) for _, v in dp) + \
        (rf_copy if is_const_int(loop.min, 0) else rf_copy - loop.min,)
    banned = {id(s.loop.loop_var) for s in nest_loops if s not in copied}
    wb_pred = _drop_predicate(realize.predicate, lmap, banned)
    wb_nest = _copy_loops(copied, BlockRealize(wb_values, wb_pred, wb_block), lmap)
    parent = loops[top].parent
    pos = child_position(parent, loops[top]) + 1
    scope = A.get_scope_root(block_sref)

    def alloc(b: Block) -> Block:
        return b.with_fields(alloc_buffers=tuple(b.alloc_buffers) + (rf_buffer,))

    rewriter = ScopeRewriter(replacements={id(realize): rf_realize},
                             inserts={id(parent.stmt): [(pos, wb_nest)]},
                             block_fns={id(scope.block): alloc})
    rewrite_scope(state, scope, rewriter, {block: wb_block})
    return state.get_sref(rf_block, func_name)  # type: ignore[return-value]


class ReductionMixin:
    """decompose_reduction / rfactor methods of :class:`Schedule`."""

    @instruction("DecomposeReduction", inputs=("block", "loop"), outputs="one")
    def decompose_reduction(self, block: BlockRV, loop: LoopRV) -> BlockRV:
        """Split the init of reduction ``block`` into a new block placed before ``loop``;
        returns the init block."""
        sref = self._block_sref(block, "decompose_reduction")
        loop_sref = self._loop_sref(loop, "decompose_reduction")
        return self._new_rv(decompose_reduction(self._state, sref, loop_sref))

    @instruction("RFactor", inputs=("loop",), attrs=("factor_axis",), outputs="one")
    def rfactor(self, loop: LoopRV, factor_axis: int) -> BlockRV:
        """Factor the reduction over ``loop`` into a block computing partial results
        (returned) and the original block combining them."""
        return self._new_rv(rfactor(self._state, self._loop_sref(loop, "rfactor"),
                                    factor_axis))
