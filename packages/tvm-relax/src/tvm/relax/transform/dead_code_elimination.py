"""DeadCodeElimination: drop unused bindings and functions no entry point reaches.

::

    mod = relax.transform.DeadCodeElimination()(mod)
    mod = relax.transform.DeadCodeElimination(entry_functions=["main"])(mod)

Bindings: a binding whose variable is never used afterwards is removed when its value is
pure; calls with side effects (impure operators, impure functions, packed functions that
are not declared pure, PrimFuncs called directly) are kept whatever their use.  A
``match_cast`` is a check as well as a binding: an unused one is removed only when its
StructInfo mentions no symbolic variable (it might define one used later).  The sweep runs
backwards, so whole chains that only fed a dead value go at once; it also runs inside
``If`` branches and nested functions.

Functions: the entry points are the functions with a ``global_symbol`` attribute (visible
from outside) plus ``entry_functions``; every function not reachable from an entry through
``GlobalVar`` references (calls, ``call_tir`` targets) is removed.  A module without any
entry point keeps all its functions.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

from tvm.ir.base import GlobalVar
from tvm.ir.module import IRModule
from tvm.ir.transform import PassContext, module_pass
from tvm.tir.function import PrimFunc
from tvm.tir.stmt_functor import post_order_visit

from ..analysis.struct_info_analysis import tir_vars_in_struct_info
from ..analysis.var_analysis import all_global_vars
from ..expr import Binding, BindingBlock, Function, If, MatchCast, SeqExpr, VarBinding
from ._graph_utils import VarUses, contains_impure_call, map_relax_functions

__all__ = ["DeadCodeElimination", "remove_unused_bindings", "reachable_functions"]


def _removable(binding: Binding, mod: Optional[IRModule]) -> bool:
    if isinstance(binding, MatchCast):
        return not tir_vars_in_struct_info(binding.struct_info) and not contains_impure_call(
            binding.value, mod
        )
    return not contains_impure_call(binding.value, mod)


class _Sweeper:
    """Backward liveness over SeqExprs (recursing into branches and nested functions)."""

    def __init__(self, mod: Optional[IRModule]):
        self.mod = mod
        self.removed = 0

    def expr(self, expr: Any) -> Any:
        if isinstance(expr, SeqExpr):
            return self.seq(expr)
        if isinstance(expr, If):
            then, other = self.expr(expr.true_branch), self.expr(expr.false_branch)
            if then is expr.true_branch and other is expr.false_branch:
                return expr
            new = If(expr.cond, then, other, span=expr.span)
            object.__setattr__(new, "struct_info_", expr.struct_info_)
            return new
        if isinstance(expr, Function):
            if expr.body is None:
                return expr
            body = self.expr(expr.body)
            if body is expr.body:
                return expr
            return expr.with_fields(body=body)
        return expr

    def seq(self, seq: SeqExpr) -> SeqExpr:
        uses = VarUses()
        uses.visit_expr(seq.body)
        new_blocks: list[BindingBlock] = []
        changed = False
        for block in reversed(seq.blocks):
            kept: list[Binding] = []
            for binding in reversed(block.bindings):
                if not uses.used(binding.var) and _removable(binding, self.mod):
                    self.removed += 1
                    changed = True
                    continue
                value = self.expr(binding.value)
                if value is not binding.value:
                    changed = True
                    binding = (
                        VarBinding(binding.var, value, span=binding.span)
                        if isinstance(binding, VarBinding)
                        else MatchCast(binding.var, value, binding.struct_info, span=binding.span)
                    )
                uses.visit_binding(binding)
                kept.append(binding)
            if not kept:
                continue
            if len(kept) == len(block.bindings) and all(
                a is b for a, b in zip(reversed(kept), block.bindings)
            ):
                new_blocks.append(block)
            else:
                new_blocks.append(type(block)(list(reversed(kept)), span=block.span))
        if not changed and len(new_blocks) == len(seq.blocks):
            return seq
        new = SeqExpr(list(reversed(new_blocks)), seq.body, span=seq.span)
        object.__setattr__(new, "struct_info_", seq.struct_info_)
        return new


def remove_unused_bindings(func: Function, mod: Optional[IRModule] = None) -> Function:
    """``func`` without bindings whose (pure) values nobody uses."""
    if not isinstance(func, Function):
        raise TypeError(f"remove_unused_bindings expects a relax.Function, got {type(func).__name__}")
    return _Sweeper(mod).expr(func)


def _referenced_globals(func: Any) -> list[GlobalVar]:
    if isinstance(func, Function):
        return all_global_vars(func) if func.body is not None else []
    if isinstance(func, PrimFunc):
        found: list[GlobalVar] = []

        def visit(node: Any) -> None:
            op = getattr(node, "op", None)
            if isinstance(op, GlobalVar):
                found.append(op)

        post_order_visit(func.body, visit)
        return found
    return []


def reachable_functions(mod: IRModule, entries: Sequence[GlobalVar]) -> set[str]:
    """Names of the functions reachable from ``entries`` (entries included)."""
    seen: set[str] = set()
    stack = [gv.name_hint for gv in entries]
    while stack:
        name = stack.pop()
        if name in seen or name not in mod:
            continue
        seen.add(name)
        stack.extend(gv.name_hint for gv in _referenced_globals(mod[name]))
    return seen


def _entries(mod: IRModule, names: Sequence[str]) -> list[GlobalVar]:
    out = [gv for gv, f in mod.items() if f.attrs.get("global_symbol")]
    for name in names:
        if name not in mod:
            known = ", ".join(sorted(gv.name_hint for gv in mod.get_global_vars()))
            raise ValueError(
                f"DeadCodeElimination: entry function {name!r} is not in the module "
                f"(functions: {known})"
            )
        out.append(mod.get_global_var(name))
    return out


def DeadCodeElimination(  # noqa: N802 - pass constructors are CamelCase
    entry_functions: Optional[Sequence[str]] = None,
) -> Any:
    """The pass removing unused pure bindings and unreachable functions (module docstring)."""
    if isinstance(entry_functions, str):
        entry_functions = [entry_functions]
    names = list(entry_functions or [])
    for n in names:
        if not isinstance(n, str):
            raise TypeError(f"DeadCodeElimination: entry_functions must be names, got {n!r}")

    @module_pass(opt_level=1, name="DeadCodeElimination")
    def dead_code_elimination(mod: IRModule, ctx: PassContext) -> IRModule:
        mod = map_relax_functions(mod, lambda f, gv: remove_unused_bindings(f, mod))
        entries = _entries(mod, names)
        if not entries:
            return mod
        live = reachable_functions(mod, entries)
        dead = [gv for gv in mod.get_global_vars() if gv.name_hint not in live]
        for gv in dead:
            mod = mod.without_function(gv)
        return mod

    return dead_code_elimination
