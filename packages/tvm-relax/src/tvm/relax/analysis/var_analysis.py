"""Which variables an expression defines, uses and leaves free."""

from __future__ import annotations

from typing import Any, Union

from tvm.ir.base import GlobalVar
from tvm.ir.module import IRModule
from tvm.tir.expr import PrimExpr, Var as TirVar
from tvm.tir.stmt_functor import free_vars as _tir_free_vars

from ..expr import Expr, Function, MatchCast, Var
from ..expr_functor import ExprVisitor
from ..struct_info import StructInfo
from .struct_info_analysis import definable_tir_vars_in_struct_info, tir_vars_in_struct_info

__all__ = [
    "free_vars",
    "bound_vars",
    "all_vars",
    "all_global_vars",
    "get_var2val",
    "free_symbolic_vars",
    "defined_symbolic_vars",
]


class _VarCollector(ExprVisitor):
    def __init__(self) -> None:
        self.bound: dict[int, Var] = {}
        self.used: dict[int, Var] = {}
        self.globals: dict[str, GlobalVar] = {}

    def visit_var_(self, var: Var) -> None:
        self.used.setdefault(id(var), var)

    def visit_var_def_(self, var: Var) -> None:
        self.bound.setdefault(id(var), var)

    def visit_global_var_(self, gv: GlobalVar) -> None:
        self.globals.setdefault(gv.name_hint, gv)


def _collect(expr: Expr) -> _VarCollector:
    c = _VarCollector()
    c.visit_expr(expr)
    return c


def free_vars(expr: Expr) -> list[Var]:
    """Relax variables used in ``expr`` but not bound inside it, in order of first use."""
    c = _collect(expr)
    return [v for k, v in c.used.items() if k not in c.bound]


def bound_vars(expr: Expr) -> list[Var]:
    """Relax variables bound inside ``expr`` (parameters and binding variables)."""
    return list(_collect(expr).bound.values())


def all_vars(expr: Expr) -> list[Var]:
    """Every Relax variable bound or used in ``expr``."""
    c = _collect(expr)
    out = dict(c.bound)
    for k, v in c.used.items():
        out.setdefault(k, v)
    return list(out.values())


def all_global_vars(expr: Expr) -> list[GlobalVar]:
    """Global variables referenced in ``expr``."""
    return list(_collect(expr).globals.values())


class _Var2Val(ExprVisitor):
    def __init__(self) -> None:
        self.table: dict[Var, Expr] = {}

    def visit_var_binding_(self, binding: Any) -> None:
        self.table[binding.var] = binding.value
        super().visit_var_binding_(binding)

    def visit_match_cast_(self, binding: MatchCast) -> None:
        self.table[binding.var] = binding.value
        super().visit_match_cast_(binding)


def get_var2val(obj: Union[Expr, IRModule]) -> dict[Var, Expr]:
    """Each bound variable (of a function, or of every Relax function in a module) to its value."""
    v = _Var2Val()
    if isinstance(obj, IRModule):
        for _, func in obj.functions.items():
            if isinstance(func, Function):
                v.visit_expr(func)
    else:
        v.visit_expr(obj)
    return v.table


class _SymbolicVars(ExprVisitor):
    def __init__(self) -> None:
        self.defined: dict[int, TirVar] = {}
        self.used: dict[int, TirVar] = {}

    def _use_sinfo(self, sinfo: StructInfo) -> None:
        for v in tir_vars_in_struct_info(sinfo):
            self.used.setdefault(id(v), v)

    def visit_function_(self, func: Function) -> None:
        for p in func.params:
            for v in definable_tir_vars_in_struct_info(p.struct_info):
                self.defined.setdefault(id(v), v)
        super().visit_function_(func)
        if func.ret_struct_info is not None:
            self._use_sinfo(func.ret_struct_info)

    def visit_match_cast_(self, binding: MatchCast) -> None:
        super().visit_match_cast_(binding)
        for v in definable_tir_vars_in_struct_info(binding.struct_info):
            self.defined.setdefault(id(v), v)

    def visit_var_def_(self, var: Var) -> None:
        self._use_sinfo(var.struct_info)

    def visit_struct_info(self, sinfo: StructInfo) -> None:
        self._use_sinfo(sinfo)

    def visit_prim_expr(self, expr: PrimExpr) -> None:
        for v in _tir_free_vars(expr):
            self.used.setdefault(id(v), v)


def defined_symbolic_vars(expr: Expr) -> list[TirVar]:
    """Symbolic variables that ``expr`` defines (function parameters, match_cast)."""
    c = _SymbolicVars()
    c.visit_expr(expr)
    return list(c.defined.values())


def free_symbolic_vars(expr: Expr) -> list[TirVar]:
    """Symbolic variables ``expr`` uses without defining them."""
    c = _SymbolicVars()
    c.visit_expr(expr)
    return [v for k, v in c.used.items() if k not in c.defined]
