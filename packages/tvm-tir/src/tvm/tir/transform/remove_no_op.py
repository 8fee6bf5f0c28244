"""RemoveNoOp: drop statements that do nothing.

Removed: ``Evaluate`` of an expression without side effects (constants included); loops
with a constant extent ``<= 0`` or a body that does nothing; no-op elements of ``SeqStmt``
(an empty sequence becomes ``Evaluate(0)``, a single element replaces the sequence);
``if`` with a constant condition (the branch taken is kept) or with no-op branches; stores
of a location to itself (``A[i] = A[i]``); ``let``, attribute, allocation and buffer
declaration statements whose body does nothing; ``while`` loops whose condition is false.
Expressions with side effects are kept (as ``Evaluate``).
"""

from __future__ import annotations

from typing import Any

from tvm.ffi import structural_equal
from tvm.ir.transform import FunctionPass

from ..expr import BufferLoad, Not
from ..function import PrimFunc
from ..functor import StmtExprMutator
from ..stmt import (
    Allocate, AttrStmt, BufferStore, DeclBuffer, Evaluate, For, IfThenElse, LetStmt, SeqStmt,
    While, stmt_seq,
)
from ..expr_util import const_int, has_side_effect
from ._common import is_no_op, no_op, prim_func_pass

__all__ = ["RemoveNoOp", "remove_no_op"]


class _NoOpRemover(StmtExprMutator):
    def visit_evaluate_(self, op: Evaluate) -> Any:
        if has_side_effect(op.value):
            return op
        return op if is_no_op(op) else no_op()

    def visit_seq_stmt_(self, op: SeqStmt) -> Any:
        items = [self.visit_stmt(s) for s in op.seq]
        kept = [s for s in items if not is_no_op(s)]
        if not kept:
            return no_op()
        if len(kept) == len(op.seq) and all(a is b for a, b in zip(kept, op.seq)):
            return op
        return stmt_seq(*kept)

    def visit_for_(self, op: For) -> Any:
        extent = const_int(op.extent)
        if extent is not None and extent <= 0:
            return no_op()
        body = self.visit_stmt(op.body)
        if is_no_op(body) and not has_side_effect(op.min) and not has_side_effect(op.extent):
            return no_op()
        return op if body is op.body else op.with_fields(body=body)

    def visit_if_then_else_(self, op: IfThenElse) -> Any:
        cond = const_int(op.condition)
        if cond is not None:
            chosen = op.then_case if cond else op.else_case
            return no_op() if chosen is None else self.visit_stmt(chosen)
        then_case = self.visit_stmt(op.then_case)
        else_case = None if op.else_case is None else self.visit_stmt(op.else_case)
        if else_case is not None and is_no_op(else_case):
            else_case = None
        if is_no_op(then_case):
            if else_case is None:
                return Evaluate(op.condition) if has_side_effect(op.condition) else no_op()
            return IfThenElse(Not(op.condition), else_case, span=op.span)
        if then_case is op.then_case and else_case is op.else_case:
            return op
        return IfThenElse(op.condition, then_case, else_case, span=op.span)

    def visit_buffer_store_(self, op: BufferStore) -> Any:
        value = op.value
        if (
            isinstance(value, BufferLoad)
            and value.buffer.data is op.buffer.data
            and value.buffer.dtype == op.buffer.dtype
            and structural_equal(value.buffer.shape, op.buffer.shape)
            and structural_equal(value.indices, op.indices)
            and not has_side_effect(value)
        ):
            return no_op()
        return op

    def _body_only(self, op: Any, has_effect: bool) -> Any:
        body = self.visit_stmt(op.body)
        if is_no_op(body) and not has_effect:
            return no_op()
        return op if body is op.body else op.with_fields(body=body)

    def visit_let_stmt_(self, op: LetStmt) -> Any:
        return self._body_only(op, has_side_effect(op.value))

    def visit_attr_stmt_(self, op: AttrStmt) -> Any:
        return self._body_only(op, has_side_effect(op.value))

    def visit_allocate_(self, op: Allocate) -> Any:
        return self._body_only(op, False)

    def visit_decl_buffer_(self, op: DeclBuffer) -> Any:
        return self._body_only(op, False)

    def visit_while_(self, op: While) -> Any:
        if const_int(op.condition) == 0:
            return no_op()
        return self.generic_mutate(op)


def remove_no_op(func: PrimFunc) -> PrimFunc:
    """``func`` without no-op statements (see the module docstring)."""
    body = _NoOpRemover().visit_stmt(func.body)
    return func if body is func.body else func.with_body(body)


def RemoveNoOp() -> FunctionPass:  # noqa: N802
    """The pass form of :func:`remove_no_op`."""
    return prim_func_pass(remove_no_op, "tir.RemoveNoOp")
