"""materialize_padding: turn a padding check inlined into a block back into a padded copy.

Graph-level legalization inlines a convolution's zero padding as a bounds check on the
input load, ``if_then_else(0 <= h + rh - 1 and h + rh - 1 < H, X[.., h + rh - 1], 0)``.
When that check varies along a vectorized loop every lane needs its own mask and the loop
stays scalar.  ``materialize_padding(block, i)`` undoes the inlining for the ``i``-th
buffer the block reads::

    X_pad = alloc_buffer(X.shape + lo + hi)
    for ax..:                                  # new block "X_pad", right before the
        X_pad[v] = if_then_else(lo <= v < lo + X.shape, X[v - lo], 0)   # block's loop nest
    for ..:                                    # the block, now without the check
        C[..] += X_pad[.., h + rh] * W[..]

``lo``/``hi`` are how far the guarded indices reach below 0 / past the end of ``X`` over
the block's iteration domain.  Only checks of the load's own indices against ``0`` and the
buffer's constant shape, joined by ``and``, with a constant fallback, are rewritten; the
load may be cast (``if_then_else(.., int32(X[..]), 7)`` of a quantized convolution whose
padding holds the input zero point: the copy holds ``X``'s dtype, the fallback value in
it, and the block reads ``int32(X_pad[..])``; the value must fit ``X``'s dtype).  Anything
else is a ScheduleError, and so is a block whose loop nest also writes ``X``, or that pads
one buffer with two different values.
:func:`padded_loads` is the same match as a pure query, for schedule rules.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from tvm.ffi import structural_equal
from tvm.ir.op import Op

from ...buffer import Buffer, decl_buffer
from ...expr import (
    GE, GT, LE, LT, And, BufferLoad, Call, Cast, FloatImm, IntImm, IterVar, IterVarType,
    PrimExpr, Range,
)
from ...functor import StmtExprMutator
from ...stmt import Block, BlockRealize, BufferRegion, BufferStore, For
from ...stmt_functor import post_order_visit
from .. import analysis as A
from ..error import ScheduleError
from ..handles import BlockRV
from ..instruction import instruction
from ..state import ScheduleState, StmtSRef
from ._util import (
    ScopeRewriter, child_position, fresh_loop_vars, loop_names, rewrite_scope, unique_block_name,
)

__all__ = ["materialize_padding", "padded_loads", "PaddedLoad", "PaddingMixin"]

_PRIM = "materialize_padding"


@dataclass
class PaddedLoad:
    """One guarded load ``if_then_else(bounds of X[idx], X[idx], c)`` of a block (the load
    possibly cast): the call, the load, how far its indices reach below 0 (``lo``) and
    past the end (``hi``) per dimension, the fallback and the cast."""

    call: Call
    load: BufferLoad
    lo: list[int]
    hi: list[int]
    #: the fallback value (a constant of the load's dtype)
    value: Any = None
    #: the dtype the load is cast to inside the check (None: not cast)
    cast: Optional[str] = None


def _conjuncts(cond: PrimExpr) -> list[PrimExpr]:
    if isinstance(cond, And):
        return _conjuncts(cond.a) + _conjuncts(cond.b)
    return [cond]


def _bound(c: PrimExpr) -> Optional[tuple[PrimExpr, str, int]]:
    """``(e, "lo", k)`` for ``e >= k`` / ``k <= e``, ``(e, "hi", k)`` for ``e < k`` /
    ``k > e`` (constant ``k``); None otherwise."""
    if isinstance(c, GE) and isinstance(c.b, IntImm):
        return c.a, "lo", c.b.value
    if isinstance(c, LE) and isinstance(c.a, IntImm):
        return c.b, "lo", c.a.value
    if isinstance(c, LT) and isinstance(c.b, IntImm):
        return c.a, "hi", c.b.value
    if isinstance(c, GT) and isinstance(c.a, IntImm):
        return c.b, "hi", c.a.value
    return None


def _match(call: Any, block: Block) -> Optional[PaddedLoad]:
    if not (isinstance(call, Call) and isinstance(call.op, Op)
            and call.op.name == "tir.if_then_else"):
        return None
    cond, then, other = call.args
    cast = None
    if isinstance(then, Cast) and isinstance(then.value, BufferLoad):
        cast, then = then.dtype, then.value
    if not isinstance(then, BufferLoad) or not isinstance(other, (FloatImm, IntImm)):
        return None
    value = _fallback_in(other, then.dtype, cast is not None)
    if value is None:
        return None
    buf = then.buffer
    if not all(isinstance(d, IntImm) for d in buf.shape):
        return None
    doms = [iv.dom for iv in block.iter_vars]
    if not all(isinstance(d.min, IntImm) and isinstance(d.extent, IntImm) for d in doms):
        return None
    checked: dict[int, set[str]] = {}
    for c in _conjuncts(cond):
        b = _bound(c)
        if b is None:
            return None
        expr, side, k = b
        dim = next((d for d, idx in enumerate(then.indices)
                    if idx is expr or structural_equal(idx, expr, map_free_vars=False)), None)
        if dim is None or k != (0 if side == "lo" else buf.shape[dim].value):
            return None
        checked.setdefault(dim, set()).add(side)
    if not checked:
        return None
    from tvm.arith import Analyzer

    ana = Analyzer()
    for iv in block.iter_vars:
        ana.bind(iv.var, iv.dom)
    lo, hi = [0] * len(buf.shape), [0] * len(buf.shape)
    for dim in checked:
        bound = ana.const_int_bound(then.indices[dim])
        if bound.min_value <= -(1 << 60) or bound.max_value >= (1 << 60):
            return None
        lo[dim] = max(0, -bound.min_value)
        hi[dim] = max(0, bound.max_value - (buf.shape[dim].value - 1))
    if not any(lo) and not any(hi):
        return None
    return PaddedLoad(call, then, lo, hi, value, cast)


def _fallback_in(other: Any, dtype: str, cast: bool) -> Optional[PrimExpr]:
    """The fallback constant as a value of the load's ``dtype`` (None when it has none:
    a cast load's fallback must be an integer the load's integer dtype holds)."""
    if not cast:
        return other
    from tvm.ffi.dtype import parse_dtype

    from ...expr import const

    code, bits, lanes = parse_dtype(dtype)
    if lanes != 1 or not isinstance(other, IntImm) or dtype.startswith(("float", "bfloat")):
        return None
    if dtype.startswith("uint"):
        lo_v, hi_v = 0, (1 << bits) - 1
    elif dtype.startswith("int"):
        lo_v, hi_v = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    else:
        return None
    if not lo_v <= other.value <= hi_v:
        return None
    return const(other.value, dtype)


def padded_loads(block: Block) -> list[PaddedLoad]:
    """The guarded loads of ``block``'s body that :func:`materialize_padding` rewrites, in
    the order they appear."""
    found: list[PaddedLoad] = []

    def visit(n: Any) -> None:
        got = _match(n, block)
        if got is not None:
            found.append(got)

    post_order_visit(block.body, visit)
    # a guarded load nested in another one's condition cannot happen (conditions are
    # bounds of indices), so post order is the order of appearance
    return found


class _Replace(StmtExprMutator):
    """Replace each matched call by a load of the padded buffer; collect the points read."""

    def __init__(self, calls: dict[int, PaddedLoad], buf: Buffer, lo: list[int]):
        self.calls = calls
        self.buf = buf
        self.lo = lo
        self.points: list[BufferRegion] = []

    def visit_call_(self, op: Call) -> Any:
        pad = self.calls.get(id(op))
        if pad is None:
            return self.generic_mutate(op)
        from tvm.arith import Analyzer

        ana = Analyzer()
        idx = tuple(ana.simplify(i + IntImm(i.dtype, lo)) if lo else i
                    for i, lo in zip(pad.load.indices, self.lo))
        self.points.append(BufferRegion(self.buf, tuple(Range(i, IntImm(i.dtype, 1))
                                                        for i in idx)))
        load = BufferLoad(self.buf, idx)
        return Cast(pad.cast, load) if pad.cast is not None else load


def _pad_nest(src: Buffer, buf: Buffer, lo: list[int], zero: PrimExpr, name: str,
              taken: set[str]) -> tuple[For, Block]:
    """The loop nest writing ``buf``, the padded copy of ``src``, and its block."""
    from ...op import all as all_
    from ...op import if_then_else
    from ...expr import Var

    loops = fresh_loop_vars(len(buf.shape), buf.shape[0].dtype, taken)
    ivs = [IterVar(Range(IntImm(ext.dtype, 0), ext), Var(f"v{d}", ext.dtype),
                   IterVarType.DATA_PAR) for d, ext in enumerate(buf.shape)]
    vs = [iv.var for iv in ivs]
    conds = []
    for d, low in enumerate(lo):
        pads = low or buf.shape[d].value != src.shape[d].value
        if low:
            conds.append(GE(vs[d], IntImm(vs[d].dtype, low)))
        if pads:
            conds.append(LT(vs[d], IntImm(vs[d].dtype, low + src.shape[d].value)))
    src_idx = tuple(v - IntImm(v.dtype, low) if low else v for v, low in zip(vs, lo))
    value = if_then_else(all_(*conds), BufferLoad(src, src_idx), zero)
    reads = (BufferRegion.full_region(src),)
    writes = (BufferRegion(buf, tuple(Range(v, IntImm(v.dtype, 1)) for v in vs)),)
    block = Block(tuple(ivs), reads, writes, name, BufferStore(buf, value, tuple(vs)))
    stmt: Any = BlockRealize(tuple(loops), IntImm("bool", 1), block)
    for lv, ext in reversed(list(zip(loops, buf.shape))):
        stmt = For(lv, IntImm(ext.dtype, 0), ext, body=stmt)
    return stmt, block


def _loaded(stmt: Any) -> set[int]:
    out: set[int] = set()
    post_order_visit(stmt, lambda n: out.add(id(n.buffer)) if isinstance(n, BufferLoad)
                     else None)
    return out


def materialize_padding(state: ScheduleState, block_sref: StmtSRef, read_buffer_index: int
                        ) -> StmtSRef:
    """Have the block read a padded copy of its ``read_buffer_index``-th buffer instead of
    guarding its loads (see the module docstring); returns the new padding block."""
    block = block_sref.block
    if isinstance(read_buffer_index, bool) or not isinstance(read_buffer_index, int) \
            or not 0 <= read_buffer_index < len(block.reads):
        raise ScheduleError(_PRIM, f"read_buffer_index {read_buffer_index!r} is out of range: "
                            f"the block reads {len(block.reads)} buffer(s)", block)
    src = block.reads[read_buffer_index].buffer
    scope = A.get_scope_root(block_sref)
    if scope is block_sref:
        raise ScheduleError(_PRIM, "cannot pad a buffer of the root block", block)
    pads = [p for p in padded_loads(block) if p.load.buffer is src]
    if not pads:
        raise ScheduleError(
            _PRIM, f"the block reads {src.name!r} without a padding check", block,
            hint="the loads must be if_then_else(bounds of the load's own indices against "
                 "0 and the buffer's constant shape, the load (or its cast), a constant)")
    # the copy goes right before the block's outermost loop (or the block) under the scope
    top = block_sref
    while top.parent is not None and top.parent is not scope:
        top = top.parent
    for other in A.blocks_under(top):
        if any(w.buffer is src for w in other.block.writes):
            raise ScheduleError(_PRIM, f"block {other.block.name_hint!r} writes {src.name!r} "
                                "in the loop nest of the block: the padded copy would be "
                                "stale", block)
    values = {p.value.value for p in pads}
    if len(values) > 1:
        raise ScheduleError(_PRIM, f"the block pads {src.name!r} with several values "
                            f"({', '.join(str(v) for v in sorted(values))}): one padded copy "
                            "cannot hold them", block)
    func_name = block_sref.func_name
    lo = [max(p.lo[d] for p in pads) for d in range(len(src.shape))]
    hi = [max(p.hi[d] for p in pads) for d in range(len(src.shape))]
    func = state.func(func_name)
    taken = {b.name for b in func.buffer_map.values()}
    for s in state.iter_srefs(func_name):
        if s.is_block:
            taken |= {b.name for b in s.block.alloc_buffers}
    name = unique_block_name(state, func_name, f"{src.name}_pad", sorted(taken))
    shape = [IntImm(d.dtype, d.value + a + b) for d, a, b in zip(src.shape, lo, hi)]
    buf = decl_buffer(shape, src.dtype, name)
    nest, pad_block = _pad_nest(src, buf, lo, pads[0].value, name,
                                loop_names(state, func_name))
    rep = _Replace({id(p.call): p for p in pads}, buf, lo)
    body = rep.visit_stmt(block.body)
    still = _loaded(body)
    reads = [r for r in block.reads if id(r.buffer) in still] + rep.points
    new_block = block.with_fields(body=body, reads=tuple(reads))

    def add_alloc(b: Block) -> Block:
        return b.with_fields(alloc_buffers=tuple(b.alloc_buffers) + (buf,))

    pos = child_position(scope, block_sref)
    rewriter = ScopeRewriter(inserts={id(scope.stmt): [(pos, nest)]},
                             block_fns={id(block): lambda _b: new_block,
                                        id(scope.block): add_alloc})
    rewrite_scope(state, scope, rewriter)
    return state.get_sref(pad_block, func_name)  # type: ignore[return-value]


class PaddingMixin:
    """materialize_padding method of :class:`Schedule`."""

    @instruction("MaterializePadding", inputs=("block",), attrs=("read_buffer_index",),
                 outputs="one")
    def materialize_padding(self, block: BlockRV, read_buffer_index: int) -> BlockRV:
        """Replace the padding checks on loads of the block's ``read_buffer_index``-th
        buffer by loads of a padded copy made by a new block (returned) placed before the
        block's loop nest."""
        sref = self._block_sref(block, _PRIM)
        return self._new_rv(materialize_padding(self._state, sref, read_buffer_index))
