"""Simplify: arithmetic simplification of every expression of a PrimFunc.

Every index, condition, extent and value — scalar or vector — is simplified by one
:class:`tvm.arith.Analyzer` that knows each loop variable's range, each block iteration
variable's domain, the range of each ``let`` value and, inside an ``if``, its condition
(constant folding per dtype, exact identities, ramps and broadcasts, canonical index
arithmetic and bound reasoning all live in :mod:`tvm.arith`).  Statements are simplified
too:

* ``if`` with a provable (or provably false) condition keeps only the branch taken;
* a loop of extent 1 (other than a thread binding) becomes its body with the loop variable
  replaced by the loop's ``min``;
* ``let`` of a constant or a variable is inlined;
* ``assert`` of a provable condition is dropped.
"""

from __future__ import annotations

from typing import Any

from tvm.ir.transform import FunctionPass

from ..expr import GE, LT, And, FloatImm, IntImm, Not, PrimExpr, Range, Var, is_int_dtype, lanes_of
from ..expr_util import const_int
from ..function import PrimFunc
from ..functor import StmtExprMutator
from ..stmt import AssertStmt, Block, For, ForKind, IfThenElse, LetStmt
from ..stmt_functor import substitute
from ._common import no_op, prim_func_pass

__all__ = ["Simplify", "simplify"]


class _Simplifier(StmtExprMutator):
    """Statement-level rules over one analyzer that collects what each scope knows."""

    def __init__(self) -> None:
        from tvm.arith import Analyzer  # tvm.arith imports tvm.tir: not at module level

        self.analyzer = Analyzer()

    def visit_expr(self, e: PrimExpr) -> PrimExpr:
        return self.analyzer.simplify(e)

    def visit_for_(self, op: For) -> Any:
        ana = self.analyzer
        lo, extent = ana.simplify(op.min), ana.simplify(op.extent)
        if const_int(extent) == 1 and op.kind != ForKind.THREAD_BINDING:
            return self.visit_stmt(substitute(op.body, {op.loop_var: lo}))
        if const_int(lo) is not None and const_int(extent) is not None:
            ana.bind(op.loop_var, Range(lo, extent), allow_override=True)
            body = self.visit_stmt(op.body)
        else:
            # A symbolic range holds inside the body only: bound as a scoped constraint, the
            # fact ``lo + extent - 1 >= var`` cannot leak out (after a loop of extent g,
            # ``g > 0`` is not known).
            var = op.loop_var
            with ana.constraint_scope(And(GE(var, lo), LT(var, lo + extent))):
                body = self.visit_stmt(op.body)
        if lo is op.min and extent is op.extent and body is op.body:
            return op
        return op.with_fields(min=lo, extent=extent, body=body)

    def visit_if_then_else_(self, op: IfThenElse) -> Any:
        ana = self.analyzer
        cond = ana.simplify(op.condition)
        if ana.can_prove(cond):
            return self.visit_stmt(op.then_case)
        if ana.can_prove(Not(cond)):
            return no_op() if op.else_case is None else self.visit_stmt(op.else_case)
        with ana.constraint_scope(cond):
            then_case = self.visit_stmt(op.then_case)
        else_case = op.else_case
        if else_case is not None:
            with ana.constraint_scope(Not(cond)):
                else_case = self.visit_stmt(else_case)
        if cond is op.condition and then_case is op.then_case and else_case is op.else_case:
            return op
        return IfThenElse(cond, then_case, else_case, span=op.span)

    def visit_let_stmt_(self, op: LetStmt) -> Any:
        ana = self.analyzer
        value = ana.simplify(op.value)
        if isinstance(value, (IntImm, FloatImm, Var)):
            return self.visit_stmt(substitute(op.body, {op.var: value}))
        if is_int_dtype(value.dtype) and lanes_of(value.dtype) == 1:
            # Only the value's range is recorded: binding the value itself would let the
            # analyzer substitute it into later expressions, moving loads past stores.
            ana.update(op.var, ana.const_int_bound(value), override=True)
        body = self.visit_stmt(op.body)
        if value is op.value and body is op.body:
            return op
        return op.with_fields(value=value, body=body)

    def visit_assert_stmt_(self, op: AssertStmt) -> Any:
        if self.analyzer.can_prove(op.condition):
            return self.visit_stmt(op.body)
        return self.generic_mutate(op)

    def visit_block_(self, op: Block) -> Any:
        ana = self.analyzer
        for iv in op.iter_vars:
            if iv.dom is not None:
                dom = Range(ana.simplify(iv.dom.min), ana.simplify(iv.dom.extent))
                ana.bind(iv.var, dom, allow_override=True)
        return self.generic_mutate(op)


def simplify(func: PrimFunc) -> PrimFunc:
    """``func`` with its expressions and statements simplified (see the module docstring)."""
    body = _Simplifier().visit_stmt(func.body)
    return func if body is func.body else func.with_body(body)


def Simplify() -> FunctionPass:  # noqa: N802
    """The pass form of :func:`simplify`."""
    return prim_func_pass(simplify, "tir.Simplify")
