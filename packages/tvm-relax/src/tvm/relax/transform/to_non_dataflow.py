"""ToNonDataflow: turn dataflow blocks into ordinary binding blocks.

After it, every binding block is a :class:`~tvm.relax.BindingBlock` and every DataflowVar a
plain :class:`~tvm.relax.Var`, so the VM lowering passes (which insert allocations and impure
calls, and share storage across blocks) can treat a function body as one sequence.
"""

from __future__ import annotations

from typing import Any

from tvm.ir.module import IRModule

from ..expr import BindingBlock, DataflowBlock, DataflowVar, Function, Var
from ..expr_functor import ExprMutator
from ._graph_utils import mutator_pass

__all__ = ["ToNonDataflow", "to_non_dataflow"]


class _ToNonDataflow(ExprMutator):
    def visit_dataflow_var_def_(self, var: DataflowVar) -> Var:
        new = Var(var.name_hint, self.visit_struct_info(var.struct_info), span=var.span)
        self.var_remap[var] = new
        return new

    def visit_dataflow_block_(self, block: DataflowBlock) -> BindingBlock:
        self.builder_.begin_binding_block()
        try:
            for binding in block.bindings:
                self.visit_binding(binding)
        finally:
            new = self.builder_.end_block()
        return new


def to_non_dataflow(func: Function, mod: IRModule | None = None) -> Function:
    """``func`` without dataflow blocks (the same object when it has none)."""
    return _ToNonDataflow(mod).visit_expr(func)


def ToNonDataflow() -> Any:  # noqa: N802 - pass constructors are CamelCase
    """The pass converting every Relax function (see the module docstring)."""

    return mutator_pass("ToNonDataflow", _ToNonDataflow)
