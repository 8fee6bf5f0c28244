"""Unswitch loop-invariant guards out of serial loops before code generation.

A register tile over a symbolic (or non-dividing) extent guards each unrolled row::

    for k in range(K):
        if i0 * 6 + 0 < n: C[r0] = C[r0] + A[r0, k] * B[k]
        if i0 * 6 + 1 < n: C[r1] = C[r1] + A[r1, k] * B[k]
        ...

The guards do not depend on ``k``, but LLVM does not unswitch a loop body this large, and
conditional accumulators cannot live in registers.  :func:`unswitch_invariant_guards`
rewrites such a loop into ``if all guards: <loop without guards> else: <loop as is>``,
so full tiles run the unguarded kernel and only the last, partial tile the guarded one.
A loop qualifies when its body is a sequence of statements among which at least one is an
``if`` without ``else`` whose condition uses no variable bound inside the loop and reads no
buffer the loop writes (a flag or counter updated by the loop is not invariant).

As a pass: :func:`UnswitchInvariantGuards` (``tir.llvm.UnswitchInvariantGuards``), one of the
llvm kind's lowering passes that ``tvm.tir.build`` runs after MakePackedAPI.
"""

from __future__ import annotations

from typing import Any, Optional

from tvm.tir import PrimFunc
from tvm.tir.expr import And, BufferLoad, Let, PrimExpr
from tvm.tir.functor import StmtExprMutator
from tvm.tir.stmt import (
    Allocate, BufferStore, For, ForKind, IfThenElse, LetStmt, SeqStmt, Stmt,
)
from tvm.tir.stmt_functor import free_vars, pre_order_visit
from tvm.tir.transform._common import rename_definitions

__all__ = ["unswitch_invariant_guards", "UnswitchInvariantGuards", "stored_inside", "reads_any"]

#: loops whose body has more statements than this are left alone (code size)
MAX_STATEMENTS = 64


def _bound_inside(loop: For) -> set[int]:
    """``id`` of the variables bound in ``loop``: its own, inner loops', lets', buffers'."""
    out = {id(loop.loop_var)}

    def visit(n: Any) -> bool:
        if isinstance(n, For):
            out.add(id(n.loop_var))
        elif isinstance(n, (LetStmt, Let)):
            out.add(id(n.var))
        elif isinstance(n, Allocate):
            out.add(id(n.buffer_var))
        return True

    pre_order_visit(loop.body, visit)
    return out


def stored_inside(loop: For) -> set[int]:
    """``id`` of the data variables of the buffers ``loop`` stores to."""
    out: set[int] = set()

    def visit(n: Any) -> bool:
        if isinstance(n, BufferStore):
            out.add(id(n.buffer.data))
        return True

    pre_order_visit(loop.body, visit)
    return out


def reads_any(expr: PrimExpr, data: set[int]) -> bool:
    """Whether ``expr`` loads from a buffer whose data variable is in ``data``."""
    found = False

    def visit(n: Any) -> bool:
        nonlocal found
        if isinstance(n, BufferLoad) and id(n.buffer.data) in data:
            found = True
        return not found

    pre_order_visit(expr, visit)
    return found


def _guards(loop: For) -> Optional[list[tuple[int, PrimExpr]]]:
    """``(position, condition)`` of the invariant guards of ``loop``'s body, or None."""
    body = loop.body
    items = list(body.seq) if isinstance(body, SeqStmt) else [body]
    if len(items) > MAX_STATEMENTS:
        return None
    inside = _bound_inside(loop)
    stored = stored_inside(loop)
    found = []
    for pos, item in enumerate(items):
        if isinstance(item, IfThenElse) and item.else_case is None and \
                not any(id(v) in inside for v in free_vars(item.condition)) and \
                not reads_any(item.condition, stored):
            found.append((pos, item.condition))
    return found or None


class _Unswitcher(StmtExprMutator):
    def __init__(self) -> None:
        self.count = 0

    def visit_for_(self, op: For) -> Stmt:
        loop = self.generic_mutate(op)
        if loop.kind != ForKind.SERIAL:
            return loop
        guards = _guards(loop)
        if guards is None:
            return loop
        items = list(loop.body.seq) if isinstance(loop.body, SeqStmt) else [loop.body]
        fast = list(items)
        cond: Optional[PrimExpr] = None
        seen: list[PrimExpr] = []
        for pos, c in guards:
            fast[pos] = items[pos].then_case
            if not any(c is s for s in seen):
                seen.append(c)
                cond = c if cond is None else And(cond, c)
        fast_body = fast[0] if len(fast) == 1 else SeqStmt(tuple(fast))
        self.count += 1
        # the copy gets fresh loop/let variables: each stays defined once
        return IfThenElse(cond, rename_definitions(loop.with_fields(body=fast_body)), loop)


def unswitch_invariant_guards(func: PrimFunc) -> PrimFunc:
    """``func`` with invariant guards unswitched out of its serial loops (see above)."""
    mutator = _Unswitcher()
    body = mutator.visit_stmt(func.body)
    return func if body is func.body else func.with_body(body)


def UnswitchInvariantGuards() -> Any:  # noqa: N802 - pass constructors are CamelCase
    """The pass ``tir.llvm.UnswitchInvariantGuards``: :func:`unswitch_invariant_guards` on
    every PrimFunc."""
    from tvm.ir.transform import function_pass

    return function_pass(lambda func, mod, ctx: unswitch_invariant_guards(func), opt_level=0,
                         name="tir.llvm.UnswitchInvariantGuards", func_type=PrimFunc)
