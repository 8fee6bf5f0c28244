"""Materialize padding inlined into a contraction: ``if_then_else(0 <= w + rw - 1 < W,
X[..., w + rw - 1], 0)`` becomes a load of a padded copy ``X_pad[..., w + rw]``.

Graph-level legalization inlines a convolution's zero padding as a bounds check on the
input load.  When the check varies along the vectorized variable (the output width of a
depthwise convolution), every lane would need its own mask and the loop stays scalar.
:func:`materialize_padding` rewrites such a block, before scheduling, to read a padded
copy made by a new block placed right before its loop nest (the padding stage a te
definition has); the rules then place that stage like any other (per channel for a
depthwise convolution).  Only bounds checks of the load's own indices against the
buffer's constant shape, with indices linear in the block's iteration variables, are
rewritten; anything else is left as it is.
"""

from __future__ import annotations

from typing import Any, Optional

from tvm.ir.op import Op
from tvm.tir.buffer import decl_buffer
from tvm.tir.expr import (
    GE, GT, LE, LT, And, BufferLoad, Call, FloatImm, IntImm, IterVar, IterVarType, PrimExpr,
    Range, Var,
)
from tvm.tir.function import PrimFunc
from tvm.tir.functor import StmtExprMutator
from tvm.tir.stmt import Block, BlockRealize, BufferRegion, BufferStore, For, SeqStmt

from .analysis import linear_form

__all__ = ["materialize_padding"]


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


def _same(a: PrimExpr, b: PrimExpr) -> bool:
    from tvm.ffi import structural_equal

    return a is b or structural_equal(a, b, map_free_vars=False)


class _Padded:
    """One guarded load ``if_then_else(bounds of X[idx], X[idx], 0)`` and its padding."""

    def __init__(self, call: Call, load: BufferLoad, lo: list[int], hi: list[int]):
        self.call = call
        self.load = load
        self.lo = lo
        self.hi = hi


def _match_guarded(call: Any, block: Block) -> Optional[_Padded]:
    if not (isinstance(call, Call) and isinstance(call.op, Op)
            and call.op.name == "tir.if_then_else"):
        return None
    cond, then, other = call.args
    if not isinstance(then, BufferLoad) or not isinstance(other, (FloatImm, IntImm)) \
            or other.value != 0:
        return None
    buf = then.buffer
    if not all(isinstance(d, IntImm) for d in buf.shape):
        return None
    ivars = [iv.var for iv in block.iter_vars]
    extents = [iv.dom.extent for iv in block.iter_vars]
    if not all(isinstance(e, IntImm) for e in extents):
        return None
    checked: dict[int, set[str]] = {}
    for c in _conjuncts(cond):
        b = _bound(c)
        if b is None:
            return None
        expr, side, k = b
        dim = next((d for d, idx in enumerate(then.indices) if _same(idx, expr)), None)
        if dim is None or k != (0 if side == "lo" else buf.shape[dim].value):
            return None
        checked.setdefault(dim, set()).add(side)
    if not checked:
        return None
    lo, hi = [0] * len(buf.shape), [0] * len(buf.shape)
    for dim in checked:
        idx = then.indices[dim]
        form = linear_form(idx, ivars)
        if form is None:
            return None
        # the index range over the block's domain: its constant part is idx at all vars 0
        low = high = _constant_part(idx, ivars)
        if low is None:
            return None
        for k, coef in form[0].items():
            span = coef * (extents[k].value - 1)
            low, high = low + min(span, 0), high + max(span, 0)
        lo[dim] = max(0, -low)
        hi[dim] = max(0, high - (buf.shape[dim].value - 1))
    if not any(lo) and not any(hi):
        return None
    return _Padded(call, then, lo, hi)


def _constant_part(idx: PrimExpr, ivars: list[Var]) -> Optional[int]:
    from tvm.arith import Analyzer
    from tvm.tir.stmt_functor import substitute

    zero = {v: IntImm(v.dtype, 0) for v in ivars}
    value = Analyzer().simplify(substitute(idx, zero))
    return value.value if isinstance(value, IntImm) else None


class _Collect(StmtExprMutator):
    def __init__(self, block: Block):
        self.block = block
        self.found: list[_Padded] = []

    def visit_call_(self, op: Call) -> Any:
        got = _match_guarded(op, self.block)
        if got is not None:
            self.found.append(got)
            return op
        return self.generic_mutate(op)


class _Replace(StmtExprMutator):
    def __init__(self, table: dict[int, tuple[_Padded, Any]]):
        self.table = table
        self.points: list[BufferRegion] = []  # the padded elements read, one per load

    def visit_call_(self, op: Call) -> Any:
        hit = self.table.get(id(op))
        if hit is None:
            return self.generic_mutate(op)
        from tvm.arith import Analyzer

        pad, buf = hit
        ana = Analyzer()
        idx = tuple(ana.simplify(i + IntImm(i.dtype, lo)) if lo else i
                    for i, lo in zip(pad.load.indices, pad.lo))
        self.points.append(BufferRegion(buf, tuple(Range(i, IntImm(i.dtype, 1)) for i in idx)))
        return BufferLoad(buf, idx)


def _pad_nest(pad: _Padded, buf: Any, name: str) -> Any:
    """The loop nest writing ``buf`` (the padded copy of the load's buffer)."""
    from tvm.tir.op import all as all_
    from tvm.tir.op import if_then_else

    src = pad.load.buffer
    loops, ivs = [], []
    for d, ext in enumerate(buf.shape):
        dt = ext.dtype
        loops.append(Var(f"ax{d}", dt))
        ivs.append(IterVar(Range(IntImm(dt, 0), ext), Var(f"v{d}", dt), IterVarType.DATA_PAR))
    vs = [iv.var for iv in ivs]
    conds = []
    for d, (lo, hi) in enumerate(zip(pad.lo, pad.hi)):
        if lo:
            conds.append(GE(vs[d], IntImm(vs[d].dtype, lo)))
        if lo or hi:
            conds.append(LT(vs[d], IntImm(vs[d].dtype, lo + src.shape[d].value)))
    src_idx = tuple(v - IntImm(v.dtype, lo) if lo else v for v, lo in zip(vs, pad.lo))
    zero = pad.call.args[2]
    value = if_then_else(all_(*conds), BufferLoad(src, src_idx), zero)
    reads = (BufferRegion.full_region(src),)
    writes = (BufferRegion(buf, tuple(Range(v, IntImm(v.dtype, 1)) for v in vs)),)
    block = Block(tuple(ivs), reads, writes, name, BufferStore(buf, value, tuple(vs)))
    stmt: Any = BlockRealize(tuple(loops), IntImm("bool", 1), block)
    for lv, ext in reversed(list(zip(loops, buf.shape))):
        stmt = For(lv, IntImm(ext.dtype, 0), ext, body=stmt)
    return stmt


def _innermost_block(stmt: Any) -> Optional[BlockRealize]:
    while isinstance(stmt, For):
        stmt = stmt.body
    return stmt if isinstance(stmt, BlockRealize) else None


def materialize_padding(func: PrimFunc, blocks: set[str]) -> PrimFunc:
    """``func`` with the guarded loads of the named blocks (each the only block of a
    top-level loop nest of the root) read from padded copies (see the module docstring)."""
    root_realize = func.body
    if not isinstance(root_realize, BlockRealize):
        return func
    root = root_realize.block
    nests = list(root.body.seq) if isinstance(root.body, SeqStmt) else [root.body]
    taken = {b.name for b in root.alloc_buffers} | {b.name for b in func.buffer_map.values()}
    new_nests: list[Any] = []
    allocs = list(root.alloc_buffers)
    changed = False
    for nest in nests:
        realize = _innermost_block(nest)
        if realize is None or realize.block.name_hint not in blocks:
            new_nests.append(nest)
            continue
        block = realize.block
        col = _Collect(block)
        col.visit_stmt(block.body)
        if not col.found:
            new_nests.append(nest)
            continue
        table: dict[int, tuple[_Padded, Any]] = {}
        for pad in col.found:
            src = pad.load.buffer
            shape = [IntImm(d.dtype, d.value + lo + hi)
                     for d, lo, hi in zip(src.shape, pad.lo, pad.hi)]
            name = f"{src.name}_pad"
            while name in taken:
                name += "_"
            taken.add(name)
            buf = decl_buffer(shape, src.dtype, name)
            allocs.append(buf)
            table[id(pad.call)] = (pad, buf)
            new_nests.append(_pad_nest(pad, buf, name))
        rep = _Replace(table)
        body = rep.visit_stmt(block.body)
        still = _loaded_buffers(body)
        reads = [r for r in block.reads if id(r.buffer) in still] + rep.points
        new_block = block.with_fields(body=body, reads=tuple(reads))
        new_nests.append(_replace_block(nest, realize, new_block))
        changed = True
    if not changed:
        return func
    new_root = root.with_fields(body=SeqStmt(tuple(new_nests)), alloc_buffers=tuple(allocs))
    return func.with_body(root_realize.with_fields(block=new_root))


def _loaded_buffers(stmt: Any) -> set[int]:
    from tvm.tir.stmt_functor import post_order_visit

    out: set[int] = set()
    post_order_visit(stmt, lambda n: out.add(id(n.buffer)) if isinstance(n, BufferLoad) else None)
    return out


def _replace_block(stmt: Any, realize: BlockRealize, block: Block) -> Any:
    if stmt is realize:
        return realize.with_fields(block=block)
    return stmt.with_fields(body=_replace_block(stmt.body, realize, block))
