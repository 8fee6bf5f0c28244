"""CanonicalizeBindings: remove bindings that only rename or re-check a value.

::

    mod = relax.transform.CanonicalizeBindings()(mod)

* ``y = x`` (a variable bound to another): uses of ``y`` become ``x`` and the binding
  goes.  A dataflow block's output ``gv = lv`` (``lv`` a DataflowVar bound in the same
  block) instead makes ``lv``'s binding define ``gv`` directly.
* ``y = match_cast(x, S)`` where ``x``'s StructInfo already fits ``S`` (so the check
  always passes and defines no new symbolic variable): treated as ``y = x``.
* ``y = t[i]`` where ``t`` is a tuple literal or a variable bound to one: ``y = field i``
  (then the rule above if that field is a variable).

A non-dataflow variable is never replaced by a DataflowVar (which is not visible after
its block).
"""

from __future__ import annotations

from typing import Any, Optional

from tvm.ffi import structural_equal
from tvm.ir.module import IRModule
from tvm.ir.transform import PassContext, module_pass

from ..analysis.struct_info_analysis import is_base_of
from ..expr import (
    BindingBlock,
    DataflowBlock,
    DataflowVar,
    Expr,
    Function,
    MatchCast,
    Tuple,
    TupleGetItem,
    Var,
    VarBinding,
)
from ..expr_functor import ExprMutator
from ._graph_utils import map_relax_functions

__all__ = ["CanonicalizeBindings", "canonicalize_bindings"]


class _Canonicalizer(ExprMutator):
    def __init__(self, mod: Optional[IRModule]):
        super().__init__(mod)
        self._tuples: dict[int, tuple[Var, Tuple]] = {}
        self._rename: dict[int, Var] = {}   # id(lv) -> gv that lv's binding defines instead
        self._emitted_targets: set[int] = set()
        self.changed = False

    # -- helpers ------------------------------------------------------------------------------
    def _known_tuple(self, expr: Any) -> Optional[Tuple]:
        if isinstance(expr, Tuple):
            return expr
        if isinstance(expr, Var):
            entry = self._tuples.get(id(expr))
            if entry is not None and entry[0] is expr:
                return entry[1]
        return None

    def _simplify(self, value: Expr) -> Expr:
        if isinstance(value, TupleGetItem):
            tup = self._known_tuple(value.tuple_value)
            if tup is not None and 0 <= value.index < len(tup.fields):
                return tup.fields[value.index]
        return value

    @staticmethod
    def _can_alias(var: Var, value: Expr) -> bool:
        return isinstance(value, Var) and (
            isinstance(var, DataflowVar) or not isinstance(value, DataflowVar)
        )

    def _trivial_cast(self, binding: MatchCast, value: Expr) -> bool:
        sinfo = getattr(value, "struct_info_", None)
        return sinfo is not None and is_base_of(binding.struct_info, sinfo, self.builder_.analyzer)

    # -- blocks -------------------------------------------------------------------------------
    def visit_dataflow_block_(self, block: DataflowBlock) -> BindingBlock:
        saved = self._rename
        self._rename = self._plan_renames(block)
        try:
            return self.visit_binding_block_(block)
        finally:
            self._rename = saved

    def _plan_renames(self, block: DataflowBlock) -> dict[int, Var]:
        """For each output ``gv = lv`` (lv bound in this block), let lv's binding define gv."""
        alias: dict[int, Var] = {}     # dataflow var -> what it is a plain copy of
        bound_here: dict[int, Var] = {}
        rename: dict[int, Var] = {}
        for b in block.bindings:
            value = b.value
            if isinstance(b, VarBinding) and isinstance(value, Var):
                value = alias.get(id(value), value)
                if isinstance(b.var, DataflowVar):
                    alias[id(b.var)] = value
                    continue
                if (isinstance(value, DataflowVar) and id(value) in bound_here
                        and id(value) not in rename):
                    rename[id(value)] = b.var
                    continue
            if isinstance(b, VarBinding):
                bound_here[id(b.var)] = b.var
        return rename

    # -- bindings -----------------------------------------------------------------------------
    def visit_var_binding_(self, binding: VarBinding) -> None:
        var = binding.var
        if id(var) in self._emitted_targets:  # `gv = lv` whose lv binding already defined gv
            self.changed = True
            return
        value = self._simplify(self.visit_expr(binding.value))
        if isinstance(value, Var) and value is not var:
            if self._can_alias(var, value):
                self.var_remap[var] = value
                self.changed = True
                return
        target = self._rename.get(id(var))
        if target is not None:
            self._emit_as(target, binding, value)
            return
        if value is not binding.value:
            self.changed = True
        self._emit(binding, var, value)

    def _emit_as(self, target: Var, binding: VarBinding, value: Expr) -> None:
        """Emit ``binding`` (of a DataflowVar) as the definition of output ``target``."""
        sinfo = getattr(value, "struct_info_", None) or binding.var.struct_info
        new = target
        if not structural_equal(target.struct_info, sinfo):
            new = Var(target.name_hint, sinfo, span=target.span)
            self.var_remap[target] = new
        self.var_remap[binding.var] = new
        self._emitted_targets.add(id(target))
        self.changed = True
        self.builder_.emit_normalized(VarBinding(new, value, span=binding.span))
        self._note(new, value)

    def _emit(self, binding: VarBinding, var: Var, value: Expr) -> None:
        new_var = self.visit_var_def(var)
        sinfo = getattr(value, "struct_info_", None)
        if sinfo is not None and not structural_equal(new_var.struct_info, sinfo):
            new_var = type(var)(var.name_hint, sinfo, span=var.span)
        if new_var is not var:
            self.var_remap[var] = new_var
        if new_var is var and value is binding.value:
            self.builder_.emit_normalized(binding)
        else:
            self.builder_.emit_normalized(VarBinding(new_var, value, span=binding.span))
        self._note(new_var, value)

    def _note(self, var: Var, value: Expr) -> None:
        if isinstance(value, Tuple):
            self._tuples[id(var)] = (var, value)

    def visit_match_cast_(self, binding: MatchCast) -> None:
        value = self.visit_expr(binding.value)
        if isinstance(value, Var) and self._trivial_cast(binding, value) and self._can_alias(
            binding.var, value
        ):
            self.var_remap[binding.var] = value
            self.changed = True
            return
        super().visit_match_cast_(binding)


def canonicalize_bindings(func: Function, mod: Optional[IRModule] = None) -> Function:
    """``func`` with renaming bindings removed (see the module docstring)."""
    out = func
    for _ in range(8):  # a rewrite can expose another (``gv = t[1]`` -> ``gv = lv``)
        mutator = _Canonicalizer(mod)
        new = mutator.visit_expr(out)
        if not mutator.changed:
            break
        out = new
    return out


def CanonicalizeBindings() -> Any:  # noqa: N802 - pass constructors are CamelCase
    """The pass removing var-to-var bindings, trivial match_casts and known tuple lookups."""

    @module_pass(opt_level=1, name="CanonicalizeBindings")
    def canonicalize(mod: IRModule, ctx: PassContext) -> IRModule:
        return map_relax_functions(mod, lambda f, gv: canonicalize_bindings(f, mod))

    return canonicalize
