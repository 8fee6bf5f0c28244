"""pad_einsum: pad the iteration space of an einsum-like block to multiples.

``pad_einsum(block, [32, 32, 16])`` rounds the extent of each iteration variable of
``block`` up to a multiple of the given factor.  The block must be einsum-like: one
BufferStore whose every buffer access (stores and loads) is indexed by plain iteration
variables, each buffer dimension as long as the variable indexing it, in a perfect loop
nest of its own with one loop per variable; a reduction must be ``C = C + rhs`` with
``rhs`` a product in which every padded reduction variable indexes some factor (so the
zero padding adds nothing).

Every buffer with a padded dimension gets a padded copy ``X_pad``: inputs are copied by a
block ``X_pad`` (zero outside the original extents) before the loop nest, the block
computes into ``C_pad`` over the padded extents, and a block ``C_pad`` copies the valid
part back to ``C`` after it.
"""

from __future__ import annotations

from typing import Any, Sequence

from ...buffer import Buffer
from ...expr import Add, BufferLoad, Cast, IntImm, IterVar, IterVarType, Mul, PrimExpr, Range, Var, const
from ...functor import StmtExprVisitor
from ...op import if_then_else
from ...stmt import Block, BufferStore, For
from .. import analysis as A
from ..error import ScheduleError
from ..handles import BlockRV
from ..instruction import instruction
from ..state import ScheduleState, StmtSRef
from ._util import (
    BufferReplacer, ScopeRewriter, child_position, conj, copy_nest, loop_names,
    new_buffer_like, refresh_regions, rewrite_scope, unique_block_name,
)

__all__ = ["pad_einsum", "PadEinsumMixin"]


class _Accesses(StmtExprVisitor):
    def __init__(self) -> None:
        self.accesses: list[tuple[Buffer, tuple, bool]] = []

    def visit_buffer_load_(self, op: BufferLoad) -> None:
        self.accesses.append((op.buffer, op.indices, False))
        for i in op.indices:
            self.visit_expr(i)

    def visit_buffer_store_(self, op: BufferStore) -> None:
        self.accesses.append((op.buffer, op.indices, True))
        self.visit_expr(op.value)
        for i in op.indices:
            self.visit_expr(i)


def _factors(e: PrimExpr) -> list[PrimExpr]:
    if isinstance(e, Mul):
        return _factors(e.a) + _factors(e.b)
    return [e]


def _load_of(e: PrimExpr) -> Any:
    while isinstance(e, Cast):
        e = e.value
    return e if isinstance(e, BufferLoad) else None


def pad_einsum(state: ScheduleState, block_sref: StmtSRef, padding: Sequence[int]) -> None:
    """Pad the block's iteration space to multiples of ``padding`` (see the module doc)."""
    prim = "pad_einsum"
    block = block_sref.block
    realize = block_sref.realize
    ivs = list(block.iter_vars)
    if len(padding) != len(ivs):
        raise ScheduleError(prim, f"padding has {len(padding)} factors, the block has "
                            f"{len(ivs)} iteration variables", block)
    for p in padding:
        if isinstance(p, bool) or not isinstance(p, int) or p <= 0:
            raise ScheduleError(prim, f"padding factors must be positive ints, got "
                                f"{list(padding)}", block)
    store = block.body
    if not isinstance(store, BufferStore):
        raise ScheduleError(prim, "the block's body is not a single BufferStore", block)
    loops = A.get_loops(block_sref)
    if len(loops) != len(ivs) or not A.is_trivial_binding(block_sref) or \
            len(A.blocks_under(loops[0])) != 1 or any(
                a.loop.body is not b.loop for a, b in zip(loops, loops[1:])):
        raise ScheduleError(prim, "the block must sit in a perfect loop nest of its own, one "
                            "loop per iteration variable bound to it", block)
    by_var = {id(iv.var): k for k, iv in enumerate(ivs)}
    new_ext: list[int] = []
    for iv, p in zip(ivs, padding):
        if iv.iter_type not in (IterVarType.DATA_PAR, IterVarType.COMM_REDUCE) or \
                not isinstance(iv.dom.extent, IntImm) or not isinstance(iv.dom.min, IntImm) \
                or iv.dom.min.value != 0:
            raise ScheduleError(prim, f"iteration variable {iv.var.name!r} must be data-parallel"
                                " or reduction with a constant domain starting at 0", block)
        ext = iv.dom.extent.value
        new_ext.append((ext + p - 1) // p * p)
    changed = {k for k, iv in enumerate(ivs) if new_ext[k] != iv.dom.extent.value}
    if not changed:
        return
    collector = _Accesses()
    collector.visit_stmt(store)
    if block.init is not None:
        collector.visit_stmt(block.init)
    padded: dict[int, Buffer] = {}
    for buf, idx, _ in collector.accesses:
        dims = []
        for d, i in enumerate(idx):
            k = by_var.get(id(i)) if isinstance(i, Var) else None
            if k is None:
                raise ScheduleError(prim, f"{buf.name}[...] index {d} is {i!r}, not an "
                                    "iteration variable; the block is not einsum-like", block)
            if not (isinstance(buf.shape[d], IntImm) and
                    buf.shape[d].value == ivs[k].dom.extent.value):
                raise ScheduleError(prim, f"dimension {d} of {buf.name!r} is {buf.shape[d]!r} "
                                    f"but {ivs[k].var.name!r} ranges over "
                                    f"{ivs[k].dom.extent.value}", block)
            dims.append(k)
        if any(k in changed for k in dims) and id(buf) not in padded:
            shape = [const(new_ext[k], buf.shape[d].dtype) for d, k in enumerate(dims)]
            padded[id(buf)] = new_buffer_like(buf, f"{buf.name}_pad", shape=shape)
    _check_reduction(prim, block, store, ivs, changed, padded)
    out_buf = store.buffer
    func_name = block_sref.func_name
    taken: list[str] = []
    loop_taken = loop_names(state, func_name)
    before, after = [], []
    for buf in _unique([b for b, _, is_store in collector.accesses if not is_store]):
        if id(buf) not in padded or buf is out_buf:
            continue
        pbuf = padded[id(buf)]
        name = unique_block_name(state, func_name, f"{buf.name}_pad", taken)
        taken.append(name)
        nest, _ = copy_nest(buf, pbuf, [Range(0, s) for s in pbuf.shape], name,
                            value_fn=_guarded_load(buf, pbuf), taken_names=loop_taken)
        loop_taken |= {v.name for v in _nest_vars(nest)}
        before.append(nest)
    if id(out_buf) in padded:
        pbuf = padded[id(out_buf)]
        name = unique_block_name(state, func_name, f"{out_buf.name}_pad", taken)
        nest, _ = copy_nest(pbuf, out_buf, [Range(0, s) for s in out_buf.shape], name,
                            taken_names=loop_taken)
        after.append(nest)
    new_ivs = tuple(IterVar(Range(const(0, iv.var.dtype), const(new_ext[k], iv.var.dtype)),
                            iv.var, iv.iter_type) for k, iv in enumerate(ivs))
    replacer = BufferReplacer(padded)
    new_block = refresh_regions(replacer.visit_stmt(block).with_fields(iter_vars=new_ivs))
    body: Any = realize.with_fields(block=new_block)
    for k in reversed(range(len(loops))):
        body = loops[k].loop.with_fields(body=body, extent=const(new_ext[k],
                                                                 loops[k].loop.extent.dtype))
    scope = A.get_scope_root(block_sref)
    parent = loops[0].parent
    pos = child_position(parent, loops[0])
    inputs = [b for b in _unique([b for b, _, st in collector.accesses if not st])
              if b is not out_buf and id(b) in padded]
    allocs = tuple(padded[id(b)] for b in inputs)
    if id(out_buf) in padded:
        allocs += (padded[id(out_buf)],)

    def alloc(b: Block) -> Block:
        return b.with_fields(alloc_buffers=tuple(b.alloc_buffers) + allocs)

    inserts = [(pos, s) for s in before] + [(pos + 1, s) for s in after]
    rewriter = ScopeRewriter(replacements={id(loops[0].stmt): body},
                             inserts={id(parent.stmt): inserts},
                             block_fns={id(scope.block): alloc})
    rewrite_scope(state, scope, rewriter, {block: new_block})


def _nest_vars(nest: Any) -> list[Var]:
    out = []
    while isinstance(nest, For):
        out.append(nest.loop_var)
        nest = nest.body
    return out


def _unique(buffers: list[Buffer]) -> list[Buffer]:
    out: list[Buffer] = []
    for b in buffers:
        if not any(b is o for o in out):
            out.append(b)
    return out


def _guarded_load(buf: Buffer, pbuf: Buffer) -> Any:
    """``buf[v]`` where ``v`` is inside ``buf``'s padded dimensions, else 0."""

    def value(vs: list[Var]) -> PrimExpr:
        cond = conj([v < s for v, s, p in zip(vs, buf.shape, pbuf.shape)
                     if s.value != p.value])
        return if_then_else(cond, BufferLoad(buf, tuple(vs)), const(0, buf.dtype))

    return value


def _check_reduction(prim: str, block: Block, store: BufferStore, ivs: list[IterVar],
                     changed: set[int], padded: dict[int, Buffer]) -> None:
    reduce_changed = [k for k in changed if ivs[k].iter_type == IterVarType.COMM_REDUCE]
    if not reduce_changed:
        return
    value = store.value
    acc = None
    if isinstance(value, Add):
        for a, b in ((value.a, value.b), (value.b, value.a)):
            if isinstance(a, BufferLoad) and a.buffer is store.buffer:
                acc = b
    if acc is None:
        raise ScheduleError(prim, "padding a reduction needs the update C = C + rhs (a sum)",
                            block)
    for k in reduce_changed:
        var = ivs[k].var
        if not any(load is not None and id(load.buffer) in padded and
                   any(i is var for i in load.indices)
                   for load in map(_load_of, _factors(acc))):
            raise ScheduleError(
                prim, f"padding reduction variable {var.name!r} would change the result: no "
                "factor of the summed product is a load indexed by it", block,
            )


class PadEinsumMixin:
    """pad_einsum method of :class:`Schedule`."""

    @instruction("PadEinsum", inputs=("block",), attrs=("padding",))
    def pad_einsum(self, block: BlockRV, padding: Sequence[int]) -> None:
        """Pad the iteration space of the einsum-like ``block`` to multiples of
        ``padding`` (one factor per iteration variable)."""
        pad_einsum(self._state, self._block_sref(block, "pad_einsum"), list(padding))
