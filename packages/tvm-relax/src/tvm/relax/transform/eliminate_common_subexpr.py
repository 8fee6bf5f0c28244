"""EliminateCommonSubexpr (CSE): reuse the first of structurally equal values in a block.

::

    mod = relax.transform.EliminateCommonSubexpr()(mod)        # alias CommonSubexpressionElimination

Inside each dataflow block, a binding whose value is structurally equal (same operator,
attributes and argument *variables*; constants compared by value) to an earlier binding's
value is replaced by that earlier variable.  A dataflow variable is simply replaced; an
output variable of the block becomes ``gv = lv`` (CanonicalizeBindings then folds it).

Never merged: impure calls (each call has an effect), allocations (``relax.builtin.*``,
``relax.memory.*``, ``relax.vm.*``: two allocations are two buffers), function and ``If``
values.  With ``call_only=True`` only calls are considered (not tuples or tuple lookups).
"""

from __future__ import annotations

from typing import Any, Optional

from tvm.ffi import structural_equal, structural_hash
from tvm.ir.module import IRModule
from tvm.ir.op import Op
from tvm.ir.transform import PassContext, module_pass

from ..expr import (
    BindingBlock,
    Call,
    DataflowBlock,
    DataflowVar,
    Expr,
    Function,
    Tuple,
    TupleGetItem,
    Var,
    VarBinding,
)
from ..expr_functor import ExprMutator
from ._graph_utils import call_is_impure, map_relax_functions

__all__ = ["EliminateCommonSubexpr", "CommonSubexpressionElimination", "eliminate_common_subexpr"]

_NEVER_MERGED_PREFIXES = ("relax.builtin.", "relax.memory.", "relax.vm.")


class _CSE(ExprMutator):
    def __init__(self, mod: Optional[IRModule], call_only: bool):
        super().__init__(mod)
        self.mod = mod
        self.call_only = call_only
        self._table: Optional[dict[int, list[tuple[Expr, Var]]]] = None
        self.changed = False

    def _eligible(self, value: Expr) -> bool:
        if isinstance(value, Call):
            op = value.op
            if isinstance(op, Op) and op.name.startswith(_NEVER_MERGED_PREFIXES):
                return False
            return not call_is_impure(value, self.mod)
        return not self.call_only and isinstance(value, (Tuple, TupleGetItem))

    def visit_dataflow_block_(self, block: DataflowBlock) -> BindingBlock:
        saved = self._table
        self._table = {}
        try:
            return self.visit_binding_block_(block)
        finally:
            self._table = saved

    def visit_function_(self, func: Function) -> Expr:
        saved = self._table
        self._table = None  # a nested function is a new scope
        try:
            return super().visit_function_(func)
        finally:
            self._table = saved

    def visit_var_binding_(self, binding: VarBinding) -> None:
        if self._table is None:
            super().visit_var_binding_(binding)
            return
        value = self.visit_expr(binding.value)
        if not self._eligible(value):
            self._emit(binding, value)
            return
        key = structural_hash(value)
        bucket = self._table.setdefault(key, [])
        for prev_value, prev_var in bucket:
            if structural_equal(prev_value, value):
                self.changed = True
                var = binding.var
                if isinstance(var, DataflowVar) or not isinstance(prev_var, DataflowVar):
                    self.var_remap[var] = prev_var
                else:
                    self.builder_.emit_normalized(VarBinding(var, prev_var, span=binding.span))
                return
        new_var = self._emit(binding, value)
        bucket.append((value, new_var))

    def _emit(self, binding: VarBinding, value: Expr) -> Var:
        var = self.visit_var_def(binding.var)
        sinfo = getattr(value, "struct_info_", None)
        if sinfo is not None and not structural_equal(var.struct_info, sinfo):
            var = type(var)(var.name_hint, sinfo, span=var.span)
        if var is not binding.var:
            self.var_remap[binding.var] = var
        if var is binding.var and value is binding.value:
            self.builder_.emit_normalized(binding)
        else:
            self.builder_.emit_normalized(VarBinding(var, value, span=binding.span))
        return var


def eliminate_common_subexpr(
    func: Function, mod: Optional[IRModule] = None, call_only: bool = False
) -> Function:
    """``func`` with repeated values in dataflow blocks computed once."""
    mutator = _CSE(mod, call_only)
    new = mutator.visit_expr(func)
    return new if mutator.changed else func


def EliminateCommonSubexpr(call_only: bool = False) -> Any:  # noqa: N802
    """The CSE pass (module docstring)."""

    @module_pass(opt_level=2, name="EliminateCommonSubexpr")
    def cse(mod: IRModule, ctx: PassContext) -> IRModule:
        return map_relax_functions(mod, lambda f, gv: eliminate_common_subexpr(f, mod, call_only))

    return cse


CommonSubexpressionElimination = EliminateCommonSubexpr
