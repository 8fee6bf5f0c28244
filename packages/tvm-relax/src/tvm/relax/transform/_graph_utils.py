"""Helpers shared by the Relax passes: purity, variable uses, per-function application."""

from __future__ import annotations

from typing import Any, Callable, Optional

from tvm.ir.base import GlobalVar
from tvm.ir.module import IRModule
from tvm.ir.op import Op
from tvm.ir.transform import ModulePass, PassContext, module_pass

from ..expr import Call, ExternFunc, Function, Var
from ..expr_functor import ExprMutator, ExprVisitor
from ..struct_info import FuncStructInfo, StructInfo, TensorStructInfo, TupleStructInfo

__all__ = [
    "call_is_impure",
    "contains_impure_call",
    "VarUses",
    "count_uses",
    "relax_functions",
    "map_relax_functions",
    "mutator_pass",
    "skip_function",
    "UniqueNames",
]

# Functions handed to external code generators are left as they are by the graph passes.
_SKIP_ATTRS = ("Codegen", "Composite")


def skip_function(func: Function) -> bool:
    """Whether graph passes leave ``func`` alone (external codegen / composite functions)."""
    return any(func.attrs.get(key) for key in _SKIP_ATTRS)


def call_is_impure(call: Call, mod: Optional[IRModule] = None) -> bool:
    """Whether calling ``call`` may have visible side effects."""
    op = call.op
    if isinstance(op, Op):
        purity = op.get_attr("FPurity")
        return purity is False
    if isinstance(op, GlobalVar):
        func = mod[op] if mod is not None and op in mod else None
        if isinstance(func, Function):
            return not func.is_pure
        return True  # a PrimFunc called directly writes its arguments; unknown callee
    if isinstance(op, ExternFunc):
        sinfo = op.struct_info_
        return not (isinstance(sinfo, FuncStructInfo) and sinfo.purity)
    sinfo = getattr(op, "struct_info_", None)
    if isinstance(sinfo, FuncStructInfo):
        return not sinfo.purity
    return True


class _ImpureFinder(ExprVisitor):
    def __init__(self, mod: Optional[IRModule]):
        self.mod = mod
        self.found = False

    def visit_call_(self, call: Call) -> None:
        if call_is_impure(call, self.mod):
            self.found = True
            return
        super().visit_call_(call)

    def visit_function_(self, func: Function) -> None:
        pass  # defining a function has no effect; calling it is checked at the call


def contains_impure_call(expr: Any, mod: Optional[IRModule] = None) -> bool:
    """Whether evaluating ``expr`` (not the functions it defines) may have side effects."""
    finder = _ImpureFinder(mod)
    finder.visit_expr(expr)
    return finder.found


class VarUses(ExprVisitor):
    """Counts uses of Relax variables (as values and inside StructInfo shapes)."""

    def __init__(self) -> None:
        self.counts: dict[int, int] = {}

    def visit_var_(self, var: Var) -> None:
        self.counts[id(var)] = self.counts.get(id(var), 0) + 1

    def visit_var_def_(self, var: Var) -> None:
        self.visit_struct_info(var.struct_info)

    def visit_struct_info(self, sinfo: StructInfo) -> None:
        for shape_var in _shape_vars(sinfo):
            self.visit_var_(shape_var)

    def used(self, var: Var) -> bool:
        return self.counts.get(id(var), 0) > 0


def _shape_vars(sinfo: Any) -> list[Var]:
    """Relax variables a StructInfo refers to (a tensor shape given by a shape variable)."""
    if isinstance(sinfo, TensorStructInfo):
        return [sinfo.shape] if isinstance(sinfo.shape, Var) else []
    if isinstance(sinfo, TupleStructInfo):
        return [v for f in sinfo.fields for v in _shape_vars(f)]
    return []


def count_uses(expr: Any) -> dict[int, int]:
    """``id(var) -> number of uses`` over ``expr``."""
    uses = VarUses()
    uses.visit_expr(expr)
    return uses.counts


def relax_functions(
    mod: IRModule, include_skipped: bool = False,
    skip: Optional[Callable[[Function], bool]] = None,
) -> list[tuple[GlobalVar, Function]]:
    """The Relax functions of ``mod`` that have a body, minus those handed to external code
    generators (unless ``include_skipped``) and those ``skip`` rejects."""
    out = []
    for gv, func in mod.items():
        if not isinstance(func, Function) or func.body is None:
            continue
        if (not include_skipped and skip_function(func)) or (skip is not None and skip(func)):
            continue
        out.append((gv, func))
    return out


def map_relax_functions(
    mod: IRModule, fn: Callable[[Function, GlobalVar], Optional[Function]],
    include_skipped: bool = False, skip: Optional[Callable[[Function], bool]] = None,
) -> IRModule:
    """Apply ``fn(func, gv)`` to each of :func:`relax_functions`; a result of None or
    ``func`` itself keeps the function; the same module if nothing changed."""
    updates = {}
    for gv, func in relax_functions(mod, include_skipped, skip):
        new = fn(func, gv)
        if new is not None and new is not func:
            updates[gv] = new
    return mod.with_functions(updates) if updates else mod


def mutator_pass(name: str, make_mutator: Callable[[IRModule], ExprMutator],
                 opt_level: int = 0) -> ModulePass:
    """A module pass rewriting every Relax function with ``make_mutator(mod)`` (one mutator
    per module run, so it may share state across the module's functions)."""

    @module_pass(opt_level=opt_level, name=name)
    def run(mod: IRModule, ctx: PassContext) -> IRModule:
        mutator = make_mutator(mod)
        return map_relax_functions(mod, lambda func, gv: mutator.visit_expr(func))

    return run


class UniqueNames:
    """Fresh global names ``base``, ``base1``, ... not used in a module (remembered per base,
    so that naming many functions stays linear)."""

    def __init__(self) -> None:
        self._next: dict[str, int] = {}

    def fresh(self, mod: IRModule, base: str) -> str:
        k = self._next.get(base, 0)
        name = base if k == 0 else f"{base}{k}"
        while name in mod:
            k += 1
            name = f"{base}{k}"
        self._next[base] = k + 1
        return name
