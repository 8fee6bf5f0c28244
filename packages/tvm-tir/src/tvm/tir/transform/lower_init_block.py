"""LowerInitBlock: fold a block's ``init`` statement into its body.

A reduction block ``with init: C[i, j] = 0; C[i, j] += A[i, k] * B[k, j]`` becomes::

    if k == k_dom.min:          # every reduction iter var at the start of its domain
        C[i, j] = 0
    C[i, j] += A[i, k] * B[k, j]

as in TVM.  With several reduction iter vars the condition is their conjunction; a block
without reduction iter vars runs ``init`` unconditionally before the body.
"""

from __future__ import annotations

from typing import Any

from tvm.ir.transform import FunctionPass

from ..expr import EQ, And, IterVarType, PrimExpr
from ..function import PrimFunc
from ..functor import StmtExprMutator
from ..stmt import Block, IfThenElse, stmt_seq
from ._common import prim_func_pass

__all__ = ["LowerInitBlock", "lower_init_block", "lower_block_init"]


def lower_block_init(block: Block) -> Block:
    """``block`` without ``init``: the init guarded by "first reduction iteration" is
    prepended to the body (the same block when it has no init)."""
    if block.init is None:
        return block
    cond: PrimExpr | None = None
    for iv in block.iter_vars:
        if iv.iter_type != IterVarType.COMM_REDUCE:
            continue
        if iv.dom is None:
            raise ValueError(
                f"LowerInitBlock: reduction iter var {iv.var.name!r} of block "
                f"{block.name_hint!r} has no domain; its init cannot be placed"
            )
        first = EQ(iv.var, iv.dom.min)
        cond = first if cond is None else And(cond, first)
    init = block.init if cond is None else IfThenElse(cond, block.init)
    return block.with_fields(body=stmt_seq(init, block.body), init=None)


class _InitLowerer(StmtExprMutator):
    def visit_block_(self, block: Block) -> Any:
        new = self.generic_mutate(block)
        return lower_block_init(new)


def lower_init_block(func: PrimFunc) -> PrimFunc:
    """``func`` with every block's ``init`` lowered (see the module docstring)."""
    body = _InitLowerer().visit_stmt(func.body)
    return func if body is func.body else func.with_body(body)


def LowerInitBlock() -> FunctionPass:  # noqa: N802
    """The pass form of :func:`lower_init_block`."""
    return prim_func_pass(lower_init_block, "tir.LowerInitBlock")
