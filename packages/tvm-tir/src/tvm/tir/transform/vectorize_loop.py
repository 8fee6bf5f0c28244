"""VectorizeLoop: ``vectorized`` loops become vector expressions.

For a loop ``for i in T.vectorized(m, m + n)`` with a constant extent ``n``, the loop
variable becomes ``Ramp(m, 1, n)`` and the body is widened: scalars meeting vectors are
broadcast, loads and stores get vector (ramp) indices, ``Select``/``Cast``/comparisons and
lane-wise intrinsics (``TVectorizable`` ops) work on ``n`` lanes.  Loop-invariant parts
stay scalar.  Vectors longer than the hardware's are fine: the code generator splits them.

When the body cannot be vectorized exactly, the loop becomes a ``serial`` loop (the scalar
fallback) with its body unchanged: a non-constant extent; a nested loop, ``while``,
allocation or block; an ``if``/``assert`` whose condition depends on the loop variable; a
call that is not lane-wise or has side effects; a reduction into a location that does not
depend on the loop variable; a buffer both written and read (or written twice) at
different indices in the body, whose lanes could depend on each other; an existing vector
expression that depends on the loop variable.
"""

from __future__ import annotations

import logging
from typing import Any, Optional

from tvm.ffi import structural_equal
from tvm.ir.op import Op
from tvm.ir.transform import FunctionPass

from tvm.arith import const_fold as F
from tvm.ffi.dtype import DTypeCode, parse_dtype

from ..expr import (
    GE, GT, LE, LT,
    Add, And, BinaryOp, BufferLoad, Call, Cast, CmpOp, IntImm, Let, Mul, Not, Or,
    PrimExpr, Ramp, Select, Sub, Var, lanes_of, with_lanes,
)
from ..function import PrimFunc
from ..functor import StmtExprMutator
from ..stmt import (
    AssertStmt, AttrStmt, BufferStore, DeclBuffer, Evaluate, For,
    ForKind, IfThenElse, LetStmt, Stmt,
)
from ..stmt_functor import post_order_visit, substitute, uses_var
from ..expr_util import const_int, has_side_effect
from ._common import (
    broadcast_to, prim_func_pass,
)

__all__ = ["VectorizeLoop", "vectorize_loop", "vectorize_body", "NotVectorizable"]

logger = logging.getLogger("tvm.tir.transform")


class NotVectorizable(Exception):
    """Raised inside the vectorizer when a loop body must stay scalar (with the reason)."""


def _lanes(e: PrimExpr) -> int:
    return lanes_of(e.dtype)


def _widens_int(src: str, dst: str) -> bool:
    """``src`` -> ``dst`` is a widening cast between signed integer scalar types."""
    (sk, sb, sl), (dk, db, dl) = parse_dtype(src), parse_dtype(dst)
    return sl == dl == 1 and sk == dk == DTypeCode.INT and db > sb


class _Vectorizer(StmtExprMutator):
    """Rewrites the body of one loop with its variable replaced by a ramp."""

    def __init__(self, var: Var, ramp: Ramp) -> None:
        self.var = var
        self.ramp = ramp
        self.lanes = ramp.lanes
        self.widened: dict[Var, Var] = {}  # scalar let variables -> their vector versions

    def _depends(self, node: Any) -> bool:
        """Whether ``node`` uses the loop variable, directly or through a widened let."""
        return uses_var(node, lambda v: v is self.var or v in self.widened)

    # -- expressions ---------------------------------------------------------------------
    def visit_var_(self, v: Var) -> Any:
        return self.ramp if v is self.var else self.widened.get(v, v)

    def visit_binary_op_(self, e: BinaryOp) -> Any:
        a, b = self.visit_expr(e.a), self.visit_expr(e.b)
        if a is e.a and b is e.b:
            return e
        if isinstance(e, Add):
            return F.add(a, b)
        if isinstance(e, Sub):
            return F.sub(a, b)
        if isinstance(e, Mul):
            return F.mul(a, b)
        return type(e)(a, b, span=e.span)

    def visit_cmp_op_(self, e: CmpOp) -> Any:
        a, b = self.visit_expr(e.a), self.visit_expr(e.b)
        return e if a is e.a and b is e.b else type(e)(a, b, span=e.span)

    def _logical(self, e: Any, cls: type) -> Any:
        a, b = self.visit_expr(e.a), self.visit_expr(e.b)
        if a is e.a and b is e.b:
            return e
        lanes = max(_lanes(a), _lanes(b))
        return cls(broadcast_to(a, lanes), broadcast_to(b, lanes), span=e.span)

    def visit_and_(self, e: And) -> Any:
        return self._logical(e, And)

    def visit_or_(self, e: Or) -> Any:
        return self._logical(e, Or)

    def visit_not_(self, e: Not) -> Any:
        a = self.visit_expr(e.a)
        return e if a is e.a else Not(a, span=e.span)

    def visit_select_(self, e: Select) -> Any:
        c = self.visit_expr(e.condition)
        t, f = self.visit_expr(e.true_value), self.visit_expr(e.false_value)
        if c is e.condition and t is e.true_value and f is e.false_value:
            return e
        lanes = max(_lanes(c), _lanes(t), _lanes(f))
        if _lanes(c) > 1:
            c = broadcast_to(c, lanes)
        return Select(c, broadcast_to(t, lanes), broadcast_to(f, lanes), span=e.span)

    def visit_cast_(self, e: Cast) -> Any:
        v = self.visit_expr(e.value)
        if v is e.value:
            return e
        if isinstance(v, Ramp) and _widens_int(v.base.dtype, e.dtype):
            # int64(ramp(b, s)) == ramp(int64(b), int64(s)): the index of a loop over an
            # int32 extent inside int64 arithmetic stays a ramp (a contiguous access)
            return Ramp(Cast(e.dtype, v.base), Cast(e.dtype, v.stride), v.lanes, span=e.span)
        return Cast(with_lanes(e.dtype, _lanes(v)), v, span=e.span)

    def visit_buffer_load_(self, e: BufferLoad) -> Any:
        indices = tuple(self.visit_expr(i) for i in e.indices)
        if all(a is b for a, b in zip(indices, e.indices)):
            return e
        if lanes_of(e.buffer.dtype) > 1:
            raise NotVectorizable(f"load from the vector-typed buffer {e.buffer.name!r}")
        return BufferLoad(e.buffer, indices, span=e.span)

    def visit_call_(self, e: Call) -> Any:
        args = tuple(self.visit_expr(a) for a in e.args)
        if all(a is b for a, b in zip(args, e.args)):
            return e
        op = e.op
        if not (isinstance(op, Op) and op.get_attr("TVectorizable", False)):
            name = op.name if isinstance(op, Op) else repr(op)
            raise NotVectorizable(f"call to {name}, which is not lane-wise (TVectorizable)")
        lanes = max(_lanes(a) for a in args)
        if op.name == "tir.if_then_else" and _lanes(args[0]) > 1:
            branches_read = any(
                isinstance(x, BufferLoad) or isinstance(x, Call)
                for arg in args[1:]
                for x in _subexprs(arg)
            )
            if branches_read:
                raise NotVectorizable(
                    "if_then_else guarding a load with a lane-dependent condition"
                )
        args = tuple(broadcast_to(a, lanes) for a in args)
        return Call(with_lanes(e.dtype, lanes), op, args, span=e.span)

    def visit_let_(self, e: Let) -> Any:
        value = self.visit_expr(e.value)
        if _lanes(value) > 1 and _lanes(e.value) == 1:
            var = self.widened[e.var] = Var(e.var.name, value.dtype)
            return Let(var, value, self.visit_expr(e.body), span=e.span)
        body = self.visit_expr(e.body)
        if value is e.value and body is e.body:
            return e
        return Let(e.var, value, body, span=e.span)

    def _already_vector(self, e: Any) -> Any:
        if self._depends(e):
            raise NotVectorizable(f"{type(e).__name__} depending on the loop variable")
        return e

    visit_ramp_ = _already_vector
    visit_broadcast_ = _already_vector
    visit_shuffle_ = _already_vector
    visit_reduce_ = _already_vector

    # -- statements ----------------------------------------------------------------------
    def visit_buffer_store_(self, s: BufferStore) -> Any:
        value = self.visit_expr(s.value)
        indices = tuple(self.visit_expr(i) for i in s.indices)
        lanes = max((_lanes(i) for i in indices), default=1)
        if lanes == 1:
            if _lanes(value) > 1:
                raise NotVectorizable(
                    f"store to {s.buffer.name!r} at an index independent of the loop variable "
                    "of a value that depends on it (a reduction)"
                )
            if any(isinstance(x, BufferLoad) and x.buffer.data is s.buffer.data
                   for x in _subexprs(value)):
                raise NotVectorizable(
                    f"update of {s.buffer.name!r} at an index independent of the loop variable "
                    "(it would run once instead of once per lane)"
                )
            return s
        if lanes_of(s.buffer.dtype) > 1:
            raise NotVectorizable(f"store to the vector-typed buffer {s.buffer.name!r}")
        return BufferStore(s.buffer, broadcast_to(value, lanes), indices, span=s.span)

    def visit_if_then_else_(self, s: IfThenElse) -> Any:
        if self._depends(s.condition):
            raise NotVectorizable("an if whose condition depends on the loop variable")
        return self.generic_mutate(s)

    def visit_assert_stmt_(self, s: AssertStmt) -> Any:
        if self._depends(s.condition) or any(self._depends(a) for a in s.message_args):
            raise NotVectorizable("an assert that depends on the loop variable")
        return self.generic_mutate(s)

    def visit_let_stmt_(self, s: LetStmt) -> Any:
        value = self.visit_expr(s.value)
        if _lanes(value) > 1 and _lanes(s.value) == 1:
            var = self.widened[s.var] = Var(s.var.name, value.dtype)
            return LetStmt(var, value, self.visit_stmt(s.body), span=s.span)
        body = self.visit_stmt(s.body)
        if value is s.value and body is s.body:
            return s
        return s.with_fields(value=value, body=body)

    def visit_attr_stmt_(self, s: AttrStmt) -> Any:
        if self._depends(s.value) or self._depends(s.node):
            raise NotVectorizable(f"attribute {s.attr_key!r} depending on the loop variable")
        return s.with_fields(body=self.visit_stmt(s.body))

    def visit_evaluate_(self, s: Evaluate) -> Any:
        if has_side_effect(s.value):
            raise NotVectorizable("a call with side effects")
        return s.with_fields(value=self.visit_expr(s.value))

    def visit_decl_buffer_(self, s: DeclBuffer) -> Any:
        if self._depends(s.buffer.shape) or self._depends(s.buffer.elem_offset):
            raise NotVectorizable(f"buffer {s.buffer.name!r} declared per iteration")
        return s.with_fields(body=self.visit_stmt(s.body))

    def _unsupported(self, s: Stmt) -> Any:
        raise NotVectorizable(f"a nested {type(s).__name__}")

    visit_for_ = _unsupported
    visit_while_ = _unsupported
    visit_allocate_ = _unsupported
    visit_block_ = _unsupported
    visit_block_realize_ = _unsupported


def _subexprs(expr: PrimExpr) -> list[Any]:
    out: list[Any] = []
    post_order_visit(expr, out.append)
    return out


def _check_lane_independence(body: Stmt) -> None:
    """Every buffer written in ``body`` is written and read at one index only."""
    stores: dict[Var, list[tuple]] = {}
    loads: dict[Var, list[tuple]] = {}

    def visit(node: Any) -> None:
        if isinstance(node, BufferStore):
            stores.setdefault(node.buffer.data, []).append(node.indices)
        elif isinstance(node, BufferLoad):
            loads.setdefault(node.buffer.data, []).append(node.indices)

    post_order_visit(body, visit)
    for data, written in stores.items():
        first = written[0]
        for other in written[1:] + loads.get(data, []):
            if not structural_equal(first, other):
                raise NotVectorizable(
                    f"buffer {data.name!r} is written and accessed at different indices, so "
                    "lanes could depend on each other"
                )


def vectorize_body(loop: For) -> Stmt:
    """The body of the vectorized ``loop`` as vector code; raises :class:`NotVectorizable`."""
    lanes = const_int(loop.extent)
    if lanes is None:
        raise NotVectorizable("the extent is not a constant")
    if lanes < 1:
        raise NotVectorizable(f"the extent is {lanes}")
    if lanes == 1:
        return substitute(loop.body, {loop.loop_var: loop.min})
    _check_lane_independence(loop.body)
    ramp = Ramp(loop.min, IntImm(loop.min.dtype, 1), lanes)
    return _Vectorizer(loop.loop_var, ramp).visit_stmt(loop.body)


def _conjuncts(e: PrimExpr) -> list[PrimExpr]:
    return _conjuncts(e.a) + _conjuncts(e.b) if isinstance(e, And) else [e]


def _upper_bound_in(cond: PrimExpr, var: Var) -> bool:
    """``cond`` is ``x < y`` / ``x <= y`` (or ``y > x`` / ``y >= x``) whose ``x - y`` grows
    by a positive constant per step of ``var``: once false it stays false, so it holds for
    every lane iff it holds for the last one."""
    from tvm.arith import Analyzer  # tvm.arith imports this package: not at module level

    if isinstance(cond, (LT, LE)):
        gap = Sub(cond.a, cond.b)
    elif isinstance(cond, (GT, GE)):
        gap = Sub(cond.b, cond.a)
    else:
        return False
    if not uses_var(gap, lambda v: v is var):
        return False
    step = Analyzer().simplify(Sub(substitute(gap, {var: Add(var, IntImm(var.dtype, 1))}), gap))
    value = const_int(step)
    return value is not None and value > 0


class _TailGuards(StmtExprMutator):
    """Drops the lane-dependent upper-bound conjuncts of every ``if`` in a loop body
    (collecting them); raises :class:`NotVectorizable` for any other lane-dependent one."""

    def __init__(self, var: Var) -> None:
        self.var = var
        self.bounds: list[PrimExpr] = []

    def visit_if_then_else_(self, s: IfThenElse) -> Any:
        keep: list[PrimExpr] = []
        for c in _conjuncts(s.condition):
            if not uses_var(c, lambda v: v is self.var):
                keep.append(c)
            elif s.else_case is None and _upper_bound_in(c, self.var):
                self.bounds.append(c)
            else:
                raise NotVectorizable("a lane-dependent condition that is no upper bound")
        then = self.visit_stmt(s.then_case)
        if not keep:
            return then
        cond = keep[0]
        for c in keep[1:]:
            cond = And(cond, c)
        return IfThenElse(cond, then, s.else_case, span=s.span)


def _vectorize_with_tail(loop: For) -> Optional[Stmt]:
    """A vectorized loop whose stores are guarded by an upper bound on the lanes (the last,
    partial tile of a split over a symbolic or non-dividing extent) as ``if <every lane
    passes>: <vector code, unguarded> else: <the loop, serial>``; None when the guards are
    of another kind or the body does not vectorize without them."""
    lanes = const_int(loop.extent)
    if lanes is None or lanes <= 1:
        return None
    guards = _TailGuards(loop.loop_var)
    try:
        body = guards.visit_stmt(loop.body)
        if not guards.bounds:
            return None
        vector = vectorize_body(loop.with_fields(body=body))
    except NotVectorizable:
        return None
    last = {loop.loop_var: Add(loop.min, IntImm(loop.min.dtype, lanes - 1))}
    full = substitute(guards.bounds[0], last)
    for c in guards.bounds[1:]:
        full = And(full, substitute(c, last))
    return IfThenElse(full, vector, loop.with_fields(kind=ForKind.SERIAL), span=loop.span)


class _LoopVectorizer(StmtExprMutator):
    def __init__(self) -> None:
        self.fallbacks: list[str] = []

    def visit_for_(self, op: For) -> Any:
        body = self.visit_stmt(op.body)
        loop = op if body is op.body else op.with_fields(body=body)
        if loop.kind != ForKind.VECTORIZED:
            return loop
        try:
            return vectorize_body(loop)
        except NotVectorizable as reason:
            split = _vectorize_with_tail(loop)
            if split is not None:
                return split
            logger.debug("VectorizeLoop: loop %s stays serial: %s", loop.loop_var.name, reason)
            self.fallbacks.append(f"{loop.loop_var.name}: {reason}")
            return loop.with_fields(kind=ForKind.SERIAL)


def vectorize_loop(func: PrimFunc) -> PrimFunc:
    """``func`` with every vectorized loop turned into vector code or a serial loop."""
    body = _LoopVectorizer().visit_stmt(func.body)
    return func if body is func.body else func.with_body(body)


def VectorizeLoop() -> FunctionPass:  # noqa: N802
    """The pass form of :func:`vectorize_loop`."""
    return prim_func_pass(vectorize_loop, "tir.VectorizeLoop")
