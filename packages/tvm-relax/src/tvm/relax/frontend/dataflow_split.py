"""Frontends emit a whole graph into one dataflow block, control flow included; Relax keeps
``If`` out of dataflow blocks.  :func:`split_dataflow_at_if` cuts every dataflow block at
its ``If`` bindings (the If in an ordinary binding block of its own, the bindings before and
after in dataflow blocks), and makes the DataflowVars used across a cut plain Vars.  The
branches' own blocks are cut the same way (nested Ifs).
"""

from __future__ import annotations

from typing import Any

from tvm.ir.module import IRModule

from ..analysis.var_analysis import free_vars
from ..expr import (
    BindingBlock, DataflowBlock, DataflowVar, Function, If, SeqExpr, Var, VarBinding,
)
from ..expr_functor import ExprMutator, ExprVisitor

__all__ = ["split_dataflow_at_if"]


def _segments(block: DataflowBlock) -> list[Any]:
    """``block`` cut at its If bindings: DataflowBlocks and one-binding BindingBlocks."""
    out: list[Any] = []
    run: list[Any] = []
    for binding in block.bindings:
        if isinstance(binding, VarBinding) and isinstance(binding.value, If):
            if run:
                out.append(DataflowBlock(run, span=block.span))
                run = []
            out.append(BindingBlock([binding], span=block.span))
        else:
            run.append(binding)
    if run:
        out.append(DataflowBlock(run, span=block.span))
    return out


class _Escapes(ExprVisitor):
    """The DataflowVars that a cut separates from a use (and the vars Ifs bind)."""

    def __init__(self) -> None:
        super().__init__()
        self.escaping: set[int] = set()

    def visit_seq_expr_(self, seq: SeqExpr) -> None:
        home: dict[int, int] = {}
        pieces = [p for block in seq.blocks
                  for p in (_segments(block) if isinstance(block, DataflowBlock) else [block])]
        for k, piece in enumerate(pieces):
            for binding in piece.bindings:
                value = binding.value
                for var in free_vars(value):
                    if isinstance(var, DataflowVar) and home.get(id(var), k) != k:
                        self.escaping.add(id(var))
                if isinstance(value, If):
                    self.escaping.add(id(binding.var))
                home[id(binding.var)] = k
        for var in free_vars(seq.body):
            if isinstance(var, DataflowVar):
                self.escaping.add(id(var))
        super().visit_seq_expr_(seq)


class _Split(ExprMutator):
    def __init__(self, mod: IRModule, escaping: set[int]):
        super().__init__(mod)
        self.escaping = escaping

    def visit_dataflow_var_def_(self, var: DataflowVar) -> Var:
        if id(var) not in self.escaping:
            return super().visit_dataflow_var_def_(var)
        new = Var(var.name_hint, self.visit_struct_info(var.struct_info), span=var.span)
        self.var_remap[var] = new
        return new

    def visit_seq_expr_(self, seq: SeqExpr) -> Any:
        blocks = [p for block in seq.blocks
                  for p in (_segments(block) if isinstance(block, DataflowBlock) else [block])]
        if len(blocks) != len(seq.blocks):
            seq = SeqExpr(blocks, seq.body, span=seq.span)
        return super().visit_seq_expr_(seq)


def _has_if(func: Function) -> bool:
    found = []

    class _Find(ExprVisitor):
        def visit_if_(self, expr: If) -> None:
            found.append(expr)

    _Find().visit_expr(func)
    return bool(found)


def split_dataflow_at_if(mod: IRModule) -> IRModule:
    """``mod`` with no If inside a dataflow block (the same module when none is)."""
    for gv, func in list(mod.functions.items()):
        if not isinstance(func, Function) or not _has_if(func):
            continue
        finder = _Escapes()
        finder.visit_expr(func)
        new = _Split(mod, finder.escaping).visit_expr(func)
        if new is not func:
            mod = mod.with_function(gv, new)
    return mod
