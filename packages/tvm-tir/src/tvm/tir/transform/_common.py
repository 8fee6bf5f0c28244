"""Helpers shared by the lowering passes: pass factories, no-ops, broadcasting and renaming of
definitions.  Expression queries (``const_int``, ``has_side_effect``, ...) live in
:mod:`tvm.tir.expr_util`; index arithmetic that keeps ``Ramp``/``Broadcast`` forms is built
with :mod:`tvm.arith.const_fold`."""

from __future__ import annotations

from typing import Any, Callable, Optional

from tvm.ir.transform import FunctionPass, function_pass

from ..buffer import Buffer
from ..expr import Broadcast, FloatImm, IntImm, Let, PrimExpr, Var, lanes_of
from ..function import PrimFunc
from ..functor import StmtExprMutator
from ..stmt import Evaluate, SeqStmt, Stmt

__all__ = [
    "prim_func_pass", "no_op", "is_no_op", "broadcast_to",
    "rename_definitions", "rebuild_buffer",
]


def prim_func_pass(transform: Callable[[PrimFunc], PrimFunc], name: str) -> FunctionPass:
    """An ``IRModule -> IRModule`` pass applying ``transform`` to every PrimFunc."""

    def run(func: PrimFunc, mod: Any, ctx: Any) -> PrimFunc:
        return transform(func)

    run.__name__ = name
    return function_pass(run, opt_level=0, name=name, func_type=PrimFunc)


# --------------------------------------------------------------------------- statements


def no_op() -> Evaluate:
    """The canonical empty statement, ``Evaluate(0)``."""
    return Evaluate(IntImm("int32", 0))


def is_no_op(stmt: Optional[Stmt]) -> bool:
    """Whether ``stmt`` does nothing: None, an empty SeqStmt or the Evaluate of a constant."""
    if stmt is None:
        return True
    if isinstance(stmt, SeqStmt):
        return all(is_no_op(s) for s in stmt.seq)
    return isinstance(stmt, Evaluate) and isinstance(stmt.value, (IntImm, FloatImm))


# --------------------------------------------------------------------------- vectors


def broadcast_to(expr: PrimExpr, lanes: int) -> PrimExpr:
    """``expr`` with ``lanes`` lanes (a scalar is broadcast; a vector must already match)."""
    have = lanes_of(expr.dtype)
    if have == lanes:
        return expr
    if have != 1:
        raise ValueError(f"cannot broadcast {expr.dtype} to {lanes} lanes")
    return Broadcast(expr, lanes)


# --------------------------------------------------------------------------- renaming


def _same_seq(a: tuple, b: tuple) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b))


def rebuild_buffer(buffer: Buffer, fexpr: Callable[[PrimExpr], PrimExpr], data: Var) -> Buffer:
    """``buffer`` with ``fexpr`` applied to its shape, strides and elem_offset and the given
    data variable; the same object when nothing changes."""
    shape = tuple(fexpr(s) for s in buffer.shape)
    strides = tuple(fexpr(s) for s in buffer.strides)
    offset = None if buffer.elem_offset is None else fexpr(buffer.elem_offset)
    if (data is buffer.data and _same_seq(shape, buffer.shape)
            and _same_seq(strides, buffer.strides) and offset is buffer.elem_offset):
        return buffer
    return buffer.with_fields(data=data, shape=shape, strides=strides, elem_offset=offset)



class _Renamer(StmtExprMutator):
    """Gives every variable defined inside a statement a fresh copy (for duplicated code)."""

    def __init__(self) -> None:
        self.vmap: dict[Var, Var] = {}
        self.bmap: dict[Buffer, Buffer] = {}

    def _fresh(self, var: Var) -> Var:
        new = type(var)(var.name, var.dtype, span=var.span)
        self.vmap[var] = new
        return new

    def visit_var_(self, v: Var) -> Var:
        return self.vmap.get(v, v)

    def visit_buffer(self, buffer: Buffer) -> Buffer:
        cached = self.bmap.get(buffer)
        if cached is not None:
            return cached
        new = rebuild_buffer(buffer, self.visit_expr, self.vmap.get(buffer.data, buffer.data))
        self.bmap[buffer] = new
        return new

    def _define(self, var: Var) -> Var:
        # A new definition: drop buffers cached before it (their data may be this var).
        self.bmap = {b: nb for b, nb in self.bmap.items() if b.data is not var}
        return self._fresh(var)

    def visit_for_(self, op: Any) -> Any:
        loop_var = self._define(op.loop_var)
        return op.with_fields(loop_var=loop_var, min=self.visit_expr(op.min),
                              extent=self.visit_expr(op.extent), body=self.visit_stmt(op.body))

    def visit_let_stmt_(self, op: Any) -> Any:
        value = self.visit_expr(op.value)
        var = self._define(op.var)
        return op.with_fields(var=var, value=value, body=self.visit_stmt(op.body))

    def visit_let_(self, op: Let) -> Any:
        value = self.visit_expr(op.value)
        var = self._define(op.var)
        return Let(var, value, self.visit_expr(op.body), span=op.span)

    def visit_allocate_(self, op: Any) -> Any:
        extents = tuple(self.visit_expr(e) for e in op.extents)
        condition = self.visit_expr(op.condition)
        var = self._define(op.buffer_var)
        return op.with_fields(buffer_var=var, extents=extents, condition=condition,
                              body=self.visit_stmt(op.body))

    def visit_decl_buffer_(self, op: Any) -> Any:
        return op.with_fields(buffer=self.visit_buffer(op.buffer), body=self.visit_stmt(op.body))

    def visit_block_(self, op: Any) -> Any:
        iter_vars = []
        for iv in op.iter_vars:
            dom = None if iv.dom is None else self.visit(iv.dom)
            iter_vars.append(iv.with_fields(dom=dom, var=self._define(iv.var)))
        allocs = []
        for buf in op.alloc_buffers:
            self._define(buf.data)
            allocs.append(self.visit_buffer(buf))
        for match in op.match_buffers:
            self._define(match.buffer.data)
        return op.with_fields(
            iter_vars=tuple(iter_vars),
            alloc_buffers=tuple(allocs),
            reads=self.visit(op.reads),
            writes=self.visit(op.writes),
            match_buffers=self.visit(op.match_buffers),
            init=None if op.init is None else self.visit_stmt(op.init),
            body=self.visit_stmt(op.body),
        )


def rename_definitions(stmt: Stmt) -> Stmt:
    """A copy of ``stmt`` whose loop, let and allocation variables are fresh.

    Used when a statement is duplicated (unrolling), so that every variable stays defined
    exactly once.  Variables used but not defined inside ``stmt`` are kept.
    """
    return _Renamer().visit_stmt(stmt)

