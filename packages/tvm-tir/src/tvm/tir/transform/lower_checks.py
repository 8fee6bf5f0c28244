"""LowerChecks: turn ``tir.check`` expressions (:func:`tvm.tir.op.checked`) into asserts.

A compute that reads memory at a data-dependent position (a gather's index, a divisor) wraps
the value in ``checked(value, cond, message, *args)``.  This pass replaces each such call by
its ``value`` and puts ``AssertStmt(cond, message, args)`` before the statement that computes
it; a check under a lazy ``if_then_else`` branch only holds when that branch is taken.  An
assert is then hoisted out of every enclosing loop that it does not depend on (its loop
variable unused, the buffers it reads not written in the loop, the extent a positive
constant), so that an index read once per row is checked once per row and the inner loop
stays vectorizable.  Runs right after the blocks are lowered (every target's pipeline).
"""

from __future__ import annotations

from typing import Any

from tvm.ir.op import Op
from tvm.ir.transform import FunctionPass

from ..expr import BufferLoad, Call, Let, Not, Or, PrimExpr, StringImm, Var
from ..expr_util import const_int
from ..function import PrimFunc
from ..functor import StmtExprMutator
from ..stmt import (
    AssertStmt, BufferStore, Evaluate, For, IfThenElse, LetStmt, SeqStmt, Stmt,
)
from ..stmt_functor import post_order_visit, substitute
from ._common import prim_func_pass

__all__ = ["LowerChecks", "lower_checks"]

_CHECK = Op.get("tir.check")
_IF_THEN_ELSE = Op.get("tir.if_then_else")


class _ExprChecks(StmtExprMutator):
    """Strips ``tir.check`` calls from one expression, collecting ``(cond, message, args)``."""

    def __init__(self) -> None:
        self.found: list[tuple[PrimExpr, str, tuple]] = []
        self.guards: list[PrimExpr] = []
        self.lets: dict[Var, PrimExpr] = {}

    def _add(self, cond: PrimExpr, message: str, args: tuple) -> None:
        if self.lets:  # expression-level lets do not reach the statement: inline them
            cond = substitute(cond, self.lets)
            args = tuple(substitute(a, self.lets) for a in args)
        for g in reversed(self.guards):
            cond = Or(Not(g), cond)
        self.found.append((cond, message, args))

    def visit_let_(self, e: Let) -> Any:
        value = self.visit_expr(e.value)
        self.lets[e.var] = value
        body = self.visit_expr(e.body)
        del self.lets[e.var]
        return e if value is e.value and body is e.body else Let(e.var, value, body)

    def visit_call_(self, e: Call) -> Any:
        if e.op is _CHECK:
            # the check first, then the checks inside its value: an operator's own check
            # (an index out of range) is reported before a guard within (a division by
            # the axis size it would compute with that index)
            cond = self.visit_expr(e.args[1])
            args = tuple(self.visit_expr(a) for a in e.args[3:])
            message = e.args[2]
            self._add(cond, message.value if isinstance(message, StringImm) else str(message),
                      args)
            return self.visit_expr(e.args[0])
        if e.op is _IF_THEN_ELSE:
            c = self.visit_expr(e.args[0])
            self.guards.append(c)
            t = self.visit_expr(e.args[1])
            self.guards[-1] = Not(c)
            f = self.visit_expr(e.args[2])
            self.guards.pop()
            if c is e.args[0] and t is e.args[1] and f is e.args[2]:
                return e
            return e.with_fields(args=(c, t, f))
        return self.generic_mutate(e)


def _has_check(node: Any) -> bool:
    found = False

    def f(x: Any) -> None:
        nonlocal found
        if isinstance(x, Call) and x.op is _CHECK:
            found = True

    post_order_visit(node, f)
    return found


def _wrap(checks: list, body: Stmt) -> Stmt:
    for cond, message, args in reversed(checks):
        body = AssertStmt(cond, message, body, args)
    return body


def _reads(node: Any) -> tuple[set, set]:
    """The variables and the buffers ``node`` reads."""
    vs, bufs = set(), set()

    def f(x: Any) -> None:
        if isinstance(x, Var):
            vs.add(x)
        elif isinstance(x, BufferLoad):
            bufs.add(x.buffer.data)

    post_order_visit(node, f)
    return vs, bufs


def _written(node: Any) -> set:
    out = set()

    def f(x: Any) -> None:
        if isinstance(x, BufferStore):
            out.add(x.buffer.data)

    post_order_visit(node, f)
    return out


class _Lowerer(StmtExprMutator):
    def _strip(self, *exprs: PrimExpr) -> tuple[list, list]:
        ec = _ExprChecks()
        return [ec.visit_expr(e) for e in exprs], ec.found

    def visit_buffer_store_(self, s: BufferStore) -> Any:
        if not _has_check(s):
            return s
        (value, *indices), checks = self._strip(s.value, *s.indices)
        return _wrap(checks, s.with_fields(value=value, indices=tuple(indices)))

    def visit_evaluate_(self, s: Evaluate) -> Any:
        if not _has_check(s.value):
            return s
        (value,), checks = self._strip(s.value)
        return _wrap(checks, s.with_fields(value=value))

    def visit_let_stmt_(self, s: LetStmt) -> Any:
        body = self.visit_stmt(s.body)
        value, checks = s.value, []
        if _has_check(value):
            (value,), checks = self._strip(value)
        if value is s.value and body is s.body:
            return s
        return _wrap(checks, s.with_fields(value=value, body=body))

    def visit_if_then_else_(self, s: IfThenElse) -> Any:
        then_case = self.visit_stmt(s.then_case)
        else_case = None if s.else_case is None else self.visit_stmt(s.else_case)
        cond, checks = s.condition, []
        if _has_check(cond):
            (cond,), checks = self._strip(cond)
        if cond is s.condition and then_case is s.then_case and else_case is s.else_case:
            return s
        return _wrap(checks, s.with_fields(condition=cond, then_case=then_case,
                                           else_case=else_case))

    def visit_assert_stmt_(self, s: AssertStmt) -> Any:
        body = self.visit_stmt(s.body)
        cond, checks = s.condition, []
        if _has_check(cond):
            (cond,), checks = self._strip(cond)
        if cond is s.condition and body is s.body:
            return s
        return _wrap(checks, s.with_fields(condition=cond, body=body))

    def visit_for_(self, s: For) -> Any:
        body = self.visit_stmt(s.body)
        (lo, ext), checks = (s.min, s.extent), []
        if _has_check(s.min) or _has_check(s.extent):
            (lo, ext), checks = self._strip(s.min, s.extent)
        loop = s if body is s.body and lo is s.min and ext is s.extent else s.with_fields(
            body=body, min=lo, extent=ext)
        return _wrap(checks, _hoist(loop))


def _hoist(loop: For) -> Stmt:
    """Move the asserts that open ``loop``'s body (directly, or as the first statement of a
    sequence) above the loop when they do not depend on it."""
    extent = const_int(loop.extent)
    if extent is None or extent <= 0:
        return loop
    body, hoisted = loop.body, []
    written = None
    while True:
        head, rest = (body.seq[0], body.seq[1:]) if isinstance(body, SeqStmt) else (body, ())
        if not isinstance(head, AssertStmt):
            break
        vs, bufs = _reads((head.condition, head.message_args))
        if loop.loop_var in vs:
            break
        if written is None:
            written = _written(loop.body)
        if bufs & written:
            break
        hoisted.append(head)
        body = head.body if not rest else SeqStmt((head.body,) + tuple(rest))
    if not hoisted:
        return loop
    out: Stmt = loop.with_fields(body=body)
    for a in reversed(hoisted):
        out = a.with_fields(body=out)
    return out


def lower_checks(func: PrimFunc) -> PrimFunc:
    """``func`` with its ``tir.check`` calls turned into hoisted asserts."""
    if not _has_check(func.body):
        return func
    body = _Lowerer().visit_stmt(func.body)
    return func if body is func.body else func.with_body(body)


def LowerChecks() -> FunctionPass:  # noqa: N802
    """The pass form of :func:`lower_checks`."""
    return prim_func_pass(lower_checks, "tir.LowerChecks")
