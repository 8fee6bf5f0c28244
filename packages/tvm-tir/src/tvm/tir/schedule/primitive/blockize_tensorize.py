"""blockize and tensorize.

``blockize(loop)`` wraps the loop nest under ``loop`` (a perfect nest around one block
``C``) into a new block ``C_o``.  Each binding of ``C`` is divided into a part over the
loops outside ``loop`` and a part over the loops inside: ``v = o * c + i`` with ``i`` in
``[0, c)``.  ``C_o`` gets one iteration variable ``v_o`` (bound to ``o``) per iteration
variable of ``C`` that has an outer part, ``C`` one variable ``v_i`` (bound to ``i``) per
variable with an inner part, and ``v`` becomes ``v_o * c + v_i`` in ``C``.  An ``init`` of
``C`` moves to ``C_o`` (as a block ``C_init`` under copies of the inner loops that drive
its data-parallel variables), since it must run once per outer reduction, not per inner
one.

``tensorize(block_or_loop, intrin)`` (a loop is blockized first) matches the body of the
block structurally against the description of the registered
:class:`~tvm.tir.TensorIntrin`: loops, blocks and expressions must agree, each buffer of
the description binds to one buffer of the block, and an access ``D[x]`` of the
description matches ``T[base + x]`` where ``base`` is where the block's region of ``T``
starts.  The body is then replaced by a fresh copy of the implementation, whose buffers
are bound to the block's regions with ``match_buffers``.
"""

from __future__ import annotations

from typing import Any, Optional, Union

from tvm.ffi import Object

from ...buffer import Buffer
from ...expr import (
    BufferLoad, FloatImm, IntImm, IterVar, IterVarType, PrimExpr, Range, StringImm, Var, const,
)
from ...expr_util import is_const_int
from ...functor import StmtExprMutator
from ...op import floordiv, floormod
from ...stmt import (
    Block, BlockRealize, BufferRegion, BufferStore, For, MatchBufferRegion, SeqStmt, Stmt,
)
from ...stmt_functor import free_vars, substitute, uses_var
from ...tensor_intrin import TensorIntrin
from .. import analysis as A
from ..error import ScheduleError
from ..handles import BlockRV, LoopRV
from ..instruction import instruction
from ..state import ScheduleState, StmtSRef
from ._util import (
    ScopeRewriter, find_region, make_analyzer, refresh_regions, rewrite_scope,
    unique_block_name,
)

__all__ = ["blockize", "tensorize", "BlockizeTensorizeMixin"]


# -- blockize ---------------------------------------------------------------------------------
def _divide(prim: str, value: PrimExpr, iv: IterVar, inner_vars: list[Var],
            outer_vars: set[int], ana: Any, block: Block
            ) -> tuple[PrimExpr, PrimExpr, PrimExpr, Range]:
    """``(outer, inner, c, inner domain)`` with ``value == outer * c + inner``."""
    from tvm.arith import detect_linear_equation

    dtype = value.dtype
    inner_ids = {id(v) for v in inner_vars}
    uses_inner = uses_var(value, lambda v: id(v) in inner_ids)
    uses_outer = uses_var(value, lambda v: id(v) in outer_vars)
    if not uses_inner:
        return value, const(0, dtype), const(1, dtype), iv.dom
    if not uses_outer:
        return const(0, dtype), value, iv.dom.extent, iv.dom
    coeffs = detect_linear_equation(value, inner_vars, ana)
    if coeffs:
        inner: PrimExpr = const(0, dtype)
        for var, a in zip(inner_vars, coeffs[:-1]):
            if is_const_int(a, 0):
                continue
            if not isinstance(a, IntImm):
                coeffs = []
                break
            inner = var * a if is_const_int(inner, 0) else inner + var * a
        base = coeffs[-1] if coeffs else None
        if coeffs and not uses_var(base, lambda v: id(v) in inner_ids):
            s = ana.int_set(inner)
            if s.is_bounded() and ana.can_prove(s.min_value == 0):
                c = ana.simplify(s.max_value + 1)
                if isinstance(c, IntImm) and ana.can_prove(floormod(base, c) == 0):
                    return (ana.simplify(floordiv(base, c)), ana.simplify(inner), c,
                            Range(const(0, dtype), c))
    raise ScheduleError(
        prim, f"the binding {value!r} of iteration variable {iv.var.name!r} cannot be divided "
        "into a part over the loops outside the blockized loop and a part over the loops "
        "inside it (outer * c + inner with inner in [0, c))", block,
    )


def _outer_domain(iv: IterVar, o: PrimExpr, c: PrimExpr, ana: Any) -> Range:
    dtype = iv.var.dtype
    if is_const_int(iv.dom.min, 0):
        return Range(const(0, dtype), ana.simplify(floordiv(iv.dom.extent + c - 1, c)))
    s = ana.int_set(o)
    if s.is_bounded():
        return Range(s.min_value, ana.simplify(s.max_value - s.min_value + 1))
    return Range(const(0, dtype), ana.simplify(floordiv(iv.dom.min + iv.dom.extent + c - 1, c)))


def _check_perfect_nest(prim: str, loop_sref: StmtSRef, inner: StmtSRef) -> list[StmtSRef]:
    loops = A.get_loops(inner)
    chain = loops[next(k for k, s in enumerate(loops) if s is loop_sref):]
    for upper, lower in zip(chain, chain[1:] + [inner]):
        body = upper.loop.body
        if not (body is lower.stmt or (isinstance(body, BlockRealize) and body.block is
                                       lower.stmt)):
            raise ScheduleError(prim, "the loops under the blockized loop must form a perfect "
                                "nest around one block", upper.stmt, inner.stmt)
    return chain


def blockize(state: ScheduleState, loop_sref: StmtSRef, preserve_unit_iters: bool = True
             ) -> StmtSRef:
    """Turn the subtree under ``loop_sref`` into a block; returns the new outer block."""
    prim = "blockize"
    blocks = A.get_child_blocks(loop_sref)
    if len(blocks) != 1:
        raise ScheduleError(prim, f"the loop must contain exactly one block, it contains "
                            f"{len(blocks)}", loop_sref.stmt)
    inner_sref = blocks[0]
    block = inner_sref.block
    realize = inner_sref.realize
    chain = _check_perfect_nest(prim, loop_sref, inner_sref)
    all_loops = A.get_loops(inner_sref)
    inner_vars = [s.loop.loop_var for s in chain]
    outer_vars = {id(s.loop.loop_var) for s in all_loops if not any(s is c for c in chain)}
    for anc in all_loops[0].ancestors() if all_loops else []:
        if anc.is_loop:
            outer_vars.add(id(anc.loop.loop_var))
    ana = make_analyzer(all_loops)
    outer_ivs: list[IterVar] = []
    outer_vals: list[PrimExpr] = []
    inner_ivs: list[IterVar] = []
    inner_vals: list[PrimExpr] = []
    vmap: dict[Var, PrimExpr] = {}
    for iv, value in zip(block.iter_vars, realize.iter_values):
        if iv.iter_type not in (IterVarType.DATA_PAR, IterVarType.COMM_REDUCE):
            raise ScheduleError(prim, f"iteration variable {iv.var.name!r} is neither "
                                "data-parallel nor a reduction", block)
        o, i, c, idom = _divide(prim, value, iv, inner_vars, outer_vars, ana, block)
        dtype = iv.var.dtype
        no_outer = is_const_int(o, 0)
        no_inner = is_const_int(c, 1) and is_const_int(i, 0)
        o_var: Optional[Var] = None
        if not no_outer or preserve_unit_iters:
            if no_inner:
                odom = iv.dom
            elif no_outer:
                odom = Range(const(0, dtype), const(1, dtype))
            else:
                odom = _outer_domain(iv, o, c, ana)
            o_var = Var(f"{iv.var.name}_o", dtype)
            outer_ivs.append(IterVar(odom, o_var, iv.iter_type))
            outer_vals.append(o)
        if no_inner:
            vmap[iv.var] = o_var if o_var is not None else o
            continue
        nv = Var(f"{iv.var.name}_i", dtype)
        inner_ivs.append(IterVar(idom, nv, iv.iter_type))
        inner_vals.append(i)
        vmap[iv.var] = nv if no_outer else o_var * c + nv  # type: ignore[operator]
    new_inner = Block(tuple(inner_ivs), (), (), block.name_hint, substitute(block.body, vmap),
                      None, block.alloc_buffers, block.match_buffers, dict(block.annotations))
    new_inner = refresh_regions(new_inner)
    init = None
    func_name = loop_sref.func_name
    if block.init is not None:
        init = _outer_init(state, func_name, block, inner_ivs, inner_vals, chain, vmap)
    body: Stmt = BlockRealize(tuple(inner_vals), realize.predicate, new_inner)
    for s in reversed(chain):
        body = s.loop.with_fields(body=body)
    name = unique_block_name(state, func_name, f"{block.name_hint}_o")
    outer = refresh_regions(Block(tuple(outer_ivs), (), (), name, body, init))
    outer_realize = BlockRealize(tuple(outer_vals), True, outer)
    scope = A.get_scope_root(inner_sref)
    rewriter = ScopeRewriter(replacements={id(loop_sref.stmt): outer_realize})
    rewrite_scope(state, scope, rewriter, {block: new_inner})
    return state.get_sref(outer, func_name)  # type: ignore[return-value]


def _outer_init(state: ScheduleState, func_name: str, block: Block, inner_ivs: list[IterVar],
                inner_vals: list[PrimExpr], chain: list[StmtSRef], vmap: dict) -> Stmt:
    """The outer block's init: ``C_init`` under copies of the inner data-parallel loops."""
    dp = [(iv, v) for iv, v in zip(inner_ivs, inner_vals) if iv.iter_type == IterVarType.DATA_PAR]
    loops = [s for s in chain if any(uses_var(v, lambda x, s=s: x is s.loop.loop_var)
                                     for _, v in dp)]
    lmap = {s.loop.loop_var: Var(f"{s.loop.loop_var.name}_init", s.loop.loop_var.dtype)
            for s in loops}
    imap = {iv.var: Var(f"{iv.var.name}_init", iv.var.dtype) for iv, _ in dp}
    ivs = tuple(IterVar(iv.dom, imap[iv.var], IterVarType.DATA_PAR) for iv, _ in dp)
    body = substitute(substitute(block.init, vmap), imap)
    name = unique_block_name(state, func_name, f"{block.name_hint}_init")
    init_block = refresh_regions(Block(ivs, (), (), name, body))
    stmt: Stmt = BlockRealize(tuple(substitute(v, lmap) for _, v in dp), True, init_block)
    for s in reversed(loops):
        stmt = For(lmap[s.loop.loop_var], s.loop.min, s.loop.extent, s.loop.kind, stmt)
    return stmt


# -- tensorize: matching ------------------------------------------------------------------------
class _Mismatch(Exception):
    pass


class _Matcher:
    """Structural comparison of a block body (target) with an intrinsic description."""

    def __init__(self, block: Block, desc_buffers: list[Buffer], ana: Any):
        self.block = block
        self.desc_buffers = {id(b) for b in desc_buffers}
        self.ana = ana
        self.var_map: dict[int, Var] = {}      # id(desc var) -> target var
        self.buf_map: dict[int, Buffer] = {}   # id(desc buffer) -> target buffer
        self.bound: dict[int, Buffer] = {}     # id(target buffer) -> desc buffer
        self.regions: dict[int, BufferRegion] = {}

    def fail(self, reason: str) -> None:
        raise _Mismatch(reason)

    # statements
    def stmt(self, t: Any, d: Any) -> None:
        if type(t) is not type(d):
            self.fail(f"a {type(t).__name__} where the description has a {type(d).__name__}")
        if isinstance(t, For):
            self.expr(t.min, d.min)
            self.same_value(t.extent, d.extent, "loop extent")
            self.var_map[id(d.loop_var)] = t.loop_var
            self.stmt(t.body, d.body)
        elif isinstance(t, SeqStmt):
            if len(t.seq) != len(d.seq):
                self.fail(f"{len(t.seq)} statements where the description has {len(d.seq)}")
            for a, b in zip(t.seq, d.seq):
                self.stmt(a, b)
        elif isinstance(t, BlockRealize):
            if len(t.iter_values) != len(d.iter_values):
                self.fail(f"block {t.block.name_hint!r} has {len(t.iter_values)} iteration "
                          f"variables, the description's {d.block.name_hint!r} "
                          f"{len(d.iter_values)}")
            for a, b in zip(t.iter_values, d.iter_values):
                self.expr(a, b)
            self.expr(t.predicate, d.predicate)
            self.stmt(t.block, d.block)
        elif isinstance(t, Block):
            for a, b in zip(t.iter_vars, d.iter_vars):
                if a.iter_type != b.iter_type:
                    self.fail(f"iteration variable {a.var.name!r} is {a.iter_type.name}, the "
                              f"description's {b.var.name!r} {b.iter_type.name}")
                self.same_value(a.dom.extent, b.dom.extent, "iteration extent")
                self.var_map[id(b.var)] = a.var
                # the indices are read with the ranges of the block's own variables
                # (``(v_o * 16 + v_i) // 16`` is ``v_o`` for ``v_i`` in [0, 16))
                self.ana.bind(a.var, a.dom, allow_override=True)
            if (t.init is None) != (d.init is None):
                self.fail(f"block {t.name_hint!r} {'has' if t.init is not None else 'lacks'} "
                          "an init the description does not")
            if t.init is not None:
                self.stmt(t.init, d.init)
            if t.alloc_buffers or d.alloc_buffers or t.match_buffers or d.match_buffers:
                self.fail("blocks allocating or matching buffers are not matched")
            self.stmt(t.body, d.body)
        elif isinstance(t, BufferStore):
            self.access(t.buffer, t.indices, d.buffer, d.indices)
            self.expr(t.value, d.value)
        else:
            self.generic(t, d)

    # expressions
    def expr(self, t: Any, d: Any) -> None:
        if isinstance(d, Var):
            mapped = self.var_map.get(id(d))
            if mapped is None:
                if t is d:
                    return
                self.fail(f"the description's variable {d.name!r} is not bound by a loop or "
                          "block")
            if t is not mapped:
                self.fail(f"{t!r} where the description uses {d.name!r} (bound to "
                          f"{mapped.name!r})")
            return
        if type(t) is not type(d) or getattr(t, "dtype", None) != getattr(d, "dtype", None):
            self.fail(f"{t!r} ({type(t).__name__}, {getattr(t, 'dtype', '')}) where the "
                      f"description has {d!r} ({type(d).__name__}, {getattr(d, 'dtype', '')})")
        if isinstance(t, (IntImm, FloatImm, StringImm)):
            if t.value != d.value:
                self.fail(f"constant {t.value!r} where the description has {d.value!r}")
            return
        if isinstance(t, BufferLoad):
            self.access(t.buffer, t.indices, d.buffer, d.indices)
            return
        self.generic(t, d)

    def generic(self, t: Any, d: Any) -> None:
        if type(t) is not type(d):
            self.fail(f"a {type(t).__name__} where the description has a {type(d).__name__}")
        for info in t._field_infos:
            if info.kind == "ignore":
                continue
            self.value(getattr(t, info.name), getattr(d, info.name))

    def value(self, t: Any, d: Any) -> None:
        if isinstance(t, PrimExpr) and isinstance(d, PrimExpr):
            self.expr(t, d)
        elif isinstance(t, Stmt) and isinstance(d, Stmt):
            self.stmt(t, d)
        elif isinstance(t, (list, tuple)) and isinstance(d, (list, tuple)):
            if len(t) != len(d):
                self.fail(f"{len(t)} operands where the description has {len(d)}")
            for a, b in zip(t, d):
                self.value(a, b)
        elif isinstance(t, Object) and isinstance(d, Object) and not isinstance(t, Buffer):
            if t is not d:
                self.generic(t, d)
        elif t != d and t is not d:
            self.fail(f"{t!r} where the description has {d!r}")

    def same_value(self, t: PrimExpr, d: PrimExpr, what: str) -> None:
        if not self.ana.can_prove(t == d):
            self.fail(f"{what} {t!r} where the description has {d!r}")

    # buffers
    def access(self, tb: Buffer, t_idx: tuple, db: Buffer, d_idx: tuple) -> None:
        self.bind_buffer(tb, db)
        region = self.regions[id(tb)]
        extra = len(tb.shape) - len(db.shape)
        for k, (ti, rng) in enumerate(zip(t_idx, region.region)):
            offset = self.ana.simplify(ti - rng.min)
            if k < extra:
                if not is_const_int(offset, 0) and not self.ana.can_prove(offset == 0):
                    self.fail(f"index {ti!r} of {tb.name!r} is not the start of the block's "
                              "region in a dimension the description does not have")
                continue
            want = substitute(d_idx[k - extra],
                              {v: self.var_map[id(v)] for v in free_vars(d_idx[k - extra])
                               if id(v) in self.var_map})
            if not self.ana.can_prove(offset == want):
                self.fail(f"{tb.name}[...] index {k} is {ti!r}, i.e. {offset!r} into the "
                          f"block's region, where the description has {d_idx[k - extra]!r}")

    def bind_buffer(self, tb: Buffer, db: Buffer) -> None:
        known = self.buf_map.get(id(db))
        if known is not None:
            if known is not tb:
                self.fail(f"description buffer {db.name!r} matches both {known.name!r} and "
                          f"{tb.name!r}")
            return
        if id(db) not in self.desc_buffers:
            self.fail(f"description buffer {db.name!r} is not a parameter of the description")
        if id(tb) in self.bound:
            self.fail(f"{tb.name!r} matches two description buffers")
        if tb.dtype != db.dtype:
            self.fail(f"buffer {tb.name!r} is {tb.dtype}, the description's {db.name!r} "
                      f"{db.dtype}")
        region = find_region(self.block.writes, tb) or find_region(self.block.reads, tb)
        if region is None:
            self.fail(f"the block does not declare a region of {tb.name!r}")
        extra = len(tb.shape) - len(db.shape)
        if extra < 0:
            self.fail(f"{tb.name!r} has fewer dimensions than the description's {db.name!r}")
        for k, rng in enumerate(region.region):  # type: ignore[union-attr]
            want = const(1, rng.extent.dtype) if k < extra else db.shape[k - extra]
            if not self.ana.can_prove(rng.extent == want):
                self.fail(f"the block's region of {tb.name!r} has extent {rng.extent!r} in "
                          f"dimension {k}, the description's {db.name!r} {want!r}")
        self.buf_map[id(db)] = tb
        self.bound[id(tb)] = db
        self.regions[id(tb)] = region  # type: ignore[assignment]


def _desc_body(func: Any) -> tuple[Stmt, tuple]:
    """The body under the description's/implementation's root block, and its allocations."""
    body = func.body
    if isinstance(body, BlockRealize) and not body.block.iter_vars:
        return body.block.body, body.block.alloc_buffers
    return body, ()


class _Renewer(StmtExprMutator):
    """A copy of an implementation body with fresh variables and buffers."""

    def __init__(self, buffers: dict[int, Buffer], vmap: dict[int, Var]):
        self.buffers = buffers
        self.vmap = vmap

    def fresh_var(self, v: Var) -> Var:
        nv = Var(v.name, v.dtype)
        self.vmap[id(v)] = nv
        return nv

    def fresh_buffer(self, b: Buffer) -> Buffer:
        nb = b.with_fields(
            data=self.fresh_var(b.data),
            shape=tuple(self.visit_expr(s) for s in b.shape),
            strides=tuple(self.visit_expr(s) for s in b.strides),
            elem_offset=None if b.elem_offset is None else self.visit_expr(b.elem_offset),
        )
        self.buffers[id(b)] = nb
        return nb

    def visit_var_(self, v: Var) -> PrimExpr:
        return self.vmap.get(id(v), v)

    def visit_buffer(self, b: Buffer) -> Buffer:
        return self.buffers.get(id(b), b)

    def visit_for_(self, op: For) -> Stmt:
        var = self.fresh_var(op.loop_var)
        return For(var, self.visit_expr(op.min), self.visit_expr(op.extent), op.kind,
                   self.visit_stmt(op.body), op.thread_binding, dict(op.annotations))

    def visit_block_(self, op: Block) -> Stmt:
        ivs = tuple(IterVar(self.generic_mutate(iv.dom), self.fresh_var(iv.var), iv.iter_type,
                            iv.thread_tag) for iv in op.iter_vars)
        allocs = tuple(self.fresh_buffer(b) for b in op.alloc_buffers)
        return Block(ivs, self.visit(op.reads), self.visit(op.writes), op.name_hint,
                     self.visit_stmt(op.body),
                     None if op.init is None else self.visit_stmt(op.init), allocs,
                     self.visit(op.match_buffers), dict(op.annotations))


def tensorize(state: ScheduleState, sref: StmtSRef, intrin_name: str,
              preserve_unit_iters: bool = True) -> StmtSRef:
    """Replace the body of a block (or of a loop, blockized first) by the implementation of
    tensor intrinsic ``intrin_name``; returns the tensorized block."""
    prim = "tensorize"
    intrin = TensorIntrin.get(intrin_name, allow_missing=True)
    if intrin is None:
        known = ", ".join(TensorIntrin.list()) or "none"
        raise ScheduleError(prim, f"no tensor intrinsic named {intrin_name!r} is registered "
                            f"(registered: {known})", sref.stmt,
                            hint="register it with tir.TensorIntrin.register(name, desc, impl)")
    if sref.is_loop:
        sref = blockize(state, sref, preserve_unit_iters)
    block = sref.block
    desc, impl = intrin.desc, intrin.impl
    desc_params = [desc.buffer_map[p] for p in desc.params if p in desc.buffer_map]
    desc_body, _ = _desc_body(desc)
    ana = make_analyzer(A.get_loops(sref))
    for iv in block.iter_vars:
        ana.bind(iv.var, iv.dom, allow_override=True)
    matcher = _Matcher(block, desc_params, ana)
    try:
        matcher.stmt(block.body, desc_body)
    except _Mismatch as err:
        raise ScheduleError(prim, f"the block does not match the description of "
                            f"{intrin_name!r}: {err}", block) from None
    matches: list[MatchBufferRegion] = []
    renewer = _Renewer({}, {})
    for dp, ip in zip(desc.params, impl.params):
        db, ib = desc.buffer_map.get(dp), impl.buffer_map.get(ip)
        if db is None:
            continue
        tb = matcher.buf_map.get(id(db))
        if tb is None:
            raise ScheduleError(prim, f"the description's buffer {db.name!r} of {intrin_name!r}"
                                " is not used by its body", block)
        nb = renewer.fresh_buffer(ib)
        matches.append(MatchBufferRegion(nb, matcher.regions[id(tb)]))
    impl_body, impl_allocs = _desc_body(impl)
    new_body = renewer.visit_stmt(impl_body)
    allocs = tuple(renewer.fresh_buffer(b) for b in impl_allocs)
    new_block = block.with_fields(
        body=new_body, match_buffers=tuple(block.match_buffers) + tuple(matches),
        alloc_buffers=tuple(block.alloc_buffers) + allocs,
    )
    state.replace({block: new_block}, block_reuse={block: new_block}, func_name=sref.func_name)
    return state.get_sref(new_block, sref.func_name)  # type: ignore[return-value]


class BlockizeTensorizeMixin:
    """blockize / tensorize methods of :class:`Schedule`."""

    @instruction("Blockize", inputs=("target",), attrs=("preserve_unit_iters",), outputs="one")
    def blockize(self, target: LoopRV, preserve_unit_iters: bool = True) -> BlockRV:
        """Make the loop nest under ``target`` a block of its own (returned)."""
        return self._new_rv(blockize(self._state, self._loop_sref(target, "blockize"),
                                     preserve_unit_iters))

    @instruction("Tensorize", inputs=("block_or_loop",),
                 attrs=("tensor_intrin", "preserve_unit_iters"))
    def tensorize(self, block_or_loop: Union[BlockRV, LoopRV], tensor_intrin: str,
                  preserve_unit_iters: bool = True) -> None:
        """Replace the block (or the blockized loop) by the implementation of the registered
        tensor intrinsic ``tensor_intrin``, after checking it matches the description."""
        sref = self._block_or_loop_sref(block_or_loop, "tensorize")
        if not isinstance(tensor_intrin, str):
            raise TypeError(f"tensorize: tensor_intrin must be a registered name, got "
                            f"{type(tensor_intrin).__name__}")
        tensorize(self._state, sref, tensor_intrin, preserve_unit_iters)

