"""Well-formedness of Relax programs.

A module (or function) is well formed when:

* every variable is defined once and used only where it is visible (after its binding, in
  its SeqExpr; a DataflowVar only inside its dataflow block; DataflowVars are defined only
  in dataflow blocks);
* it is in A-normal form: call arguments, tuple fields, TupleGetItem operands and If
  conditions are leaves; function bodies and If branches are SeqExprs whose body is a leaf;
* every expression has StructInfo, and every symbolic variable it mentions is defined (by
  the function's parameters or an earlier match_cast); a return StructInfo only uses the
  parameters' symbolic variables;
* called global variables exist in the module and public functions' ``global_symbol``
  matches their name;
* dataflow blocks hold no If and no impure calls, and pure functions call no impure
  operators or functions (unless the function has the attribute ``relax.force_pure``).
"""

from __future__ import annotations

from typing import Any, Optional, Union

from tvm.ir.base import GlobalVar
from tvm.ir.module import IRModule
from tvm.ir.op import Op
from tvm.tir.expr import PrimExpr, Var as TirVar
from tvm.tir.stmt_functor import free_vars as _tir_free_vars

from ..errors import WellFormedError
from ..expr import (
    BindingBlock,
    Call,
    DataflowBlock,
    DataflowVar,
    Expr,
    Function,
    If,
    MatchCast,
    SeqExpr,
    Tuple,
    TupleGetItem,
    Var,
    VarBinding,
    is_leaf,
)
from ..expr_functor import ExprVisitor
from ..struct_info import FuncStructInfo, StructInfo
from .struct_info_analysis import definable_tir_vars_in_struct_info, tir_vars_in_struct_info

__all__ = ["well_formed", "verify_well_formed", "well_formed_problems"]


def _free_tir_vars(sinfo: StructInfo) -> list[TirVar]:
    """The symbolic variables of ``sinfo`` except those a function type binds (the ones
    its parameters mention)."""
    from ..struct_info import TupleStructInfo

    if isinstance(sinfo, FuncStructInfo):
        bound = {id(v) for p in sinfo.params or () for v in tir_vars_in_struct_info(p)}
        return [v for v in _free_tir_vars(sinfo.ret) if id(v) not in bound]
    if isinstance(sinfo, TupleStructInfo):
        out: dict[int, TirVar] = {}
        for field in sinfo.fields:
            for v in _free_tir_vars(field):
                out.setdefault(id(v), v)
        return list(out.values())
    return tir_vars_in_struct_info(sinfo)


class _Checker(ExprVisitor):
    def __init__(self, mod: Optional[IRModule], check_struct_info: bool):
        self.mod = mod
        self.check_sinfo = check_struct_info
        self.problems: list[str] = []
        self.where = "<expr>"
        self.ever_defined: set[int] = set()
        self.visible: list[set[int]] = [set()]
        self.dataflow_vars: Optional[set[int]] = None
        self.sym: list[set[int]] = [set()]
        self.purity: list[bool] = []
        self.reported_sym: set[tuple[int, str]] = set()

    # -- helpers ------------------------------------------------------------------------------
    def err(self, message: str) -> None:
        self.problems.append(f"{self.where}: {message}")

    def _is_visible(self, var: Var) -> bool:
        return any(id(var) in scope for scope in self.visible)

    def _sym_ok(self, v: TirVar) -> bool:
        return any(id(v) in s for s in self.sym)

    def _check_sym_sinfo(self, sinfo: Optional[StructInfo], what: str) -> None:
        if sinfo is None:
            return
        for v in _free_tir_vars(sinfo):
            self._check_sym(v, what)

    def _check_sym(self, v: TirVar, what: str) -> None:
        if not self._sym_ok(v) and (id(v), self.where) not in self.reported_sym:
            self.reported_sym.add((id(v), self.where))
            self.err(f"symbolic variable {v.name!r} used in {what} is not defined")

    def _leaf(self, expr: Any, what: str) -> None:
        if not is_leaf(expr):
            self.err(f"{what} must be a leaf (variable, constant, ...) in normal form, got "
                     f"{getattr(expr, '_type_key', type(expr).__name__)}")

    # -- expressions --------------------------------------------------------------------------
    def visit_expr(self, expr: Any) -> None:
        if isinstance(expr, Expr) and not isinstance(expr, (Var, Function)):
            sinfo = getattr(expr, "struct_info_", None)
            if sinfo is None:
                if self.check_sinfo:
                    self.err(f"{expr._type_key} has no StructInfo (not normalised)")
            else:
                self._check_sym_sinfo(sinfo, f"the StructInfo of a {expr._type_key}")
        super().visit_expr(expr)

    def visit_var_(self, var: Var) -> None:
        if self._is_visible(var):
            return
        if id(var) in self.ever_defined:
            kind = "DataflowVar" if isinstance(var, DataflowVar) else "variable"
            self.err(f"{kind} {var.name_hint!r} is used outside the scope that defines it")
        else:
            self.err(f"variable {var.name_hint!r} is used but never defined")

    def visit_global_var_(self, gv: GlobalVar) -> None:
        if self.mod is not None and gv not in self.mod:
            self.err(f"global function @{gv.name_hint} is not in the module")

    def visit_prim_expr(self, expr: PrimExpr) -> None:
        for v in _tir_free_vars(expr):
            self._check_sym(v, "an expression")

    def visit_call_(self, call: Call) -> None:
        if isinstance(call.op, Expr) and not is_leaf(call.op) and not isinstance(call.op, Function):
            self._leaf(call.op, "the callee")
        for i, arg in enumerate(call.args):
            self._leaf(arg, f"argument {i} of a call")
        self._check_purity(call)
        super().visit_call_(call)

    def _check_purity(self, call: Call) -> None:
        op = call.op
        if isinstance(op, Op):
            pure = op.get_attr("FPurity", True)
            name = op.name
        else:
            sinfo = None
            if isinstance(op, GlobalVar) and self.mod is not None and op in self.mod:
                sinfo = getattr(self.mod[op], "struct_info_", None)
            elif isinstance(op, Expr):
                sinfo = getattr(op, "struct_info_", None)
            pure = sinfo.purity if isinstance(sinfo, FuncStructInfo) else True
            name = getattr(op, "name_hint", None) or getattr(op, "global_symbol", "function")
        if pure:
            return
        if self.dataflow_vars is not None:
            self.err(f"impure call to {name} inside a dataflow block")
        elif self.purity and self.purity[-1]:
            self.err(f"impure call to {name} inside a pure function")

    def visit_tuple_(self, expr: Tuple) -> None:
        for i, f in enumerate(expr.fields):
            self._leaf(f, f"tuple field {i}")
        super().visit_tuple_(expr)

    def visit_tuple_get_item_(self, expr: TupleGetItem) -> None:
        self._leaf(expr.tuple_value, "the TupleGetItem operand")
        super().visit_tuple_get_item_(expr)

    def visit_if_(self, expr: If) -> None:
        self._leaf(expr.cond, "the If condition")
        for name in ("true_branch", "false_branch"):
            if not isinstance(getattr(expr, name), SeqExpr):
                self.err(f"If.{name} must be a SeqExpr")
        super().visit_if_(expr)

    def visit_seq_expr_(self, expr: SeqExpr) -> None:
        self.visible.append(set())
        self.sym.append(set())
        try:
            for block in expr.blocks:
                self.visit_binding_block(block)
            self._leaf(expr.body, "the SeqExpr body")
            self.visit_expr(expr.body)
        finally:
            self.visible.pop()
            self.sym.pop()

    def visit_function_(self, func: Function) -> None:
        outer = self.where
        name = func.attrs.get("global_symbol") if func.attrs else None
        if name is not None and outer == "<expr>":
            self.where = f"@{name}"
        self.visible.append(set())
        self.sym.append(set())
        self.purity.append(func.is_pure and not (func.attrs or {}).get("relax.force_pure", False))
        try:
            for p in func.params:
                for v in definable_tir_vars_in_struct_info(p.struct_info):
                    self.sym[-1].add(id(v))
            for p in func.params:
                self.visit_var_def(p)
            if not isinstance(func.body, SeqExpr):
                self.err("the function body must be a SeqExpr")
            self.visit_expr(func.body)
            if func.ret_struct_info is None:
                if self.check_sinfo:
                    self.err("the function has no return StructInfo")
            else:
                self._check_sym_sinfo(func.ret_struct_info, "the return StructInfo")
        finally:
            self.visible.pop()
            self.sym.pop()
            self.purity.pop()
            self.where = outer

    # -- bindings -----------------------------------------------------------------------------
    def visit_dataflow_block_(self, block: DataflowBlock) -> None:
        self.dataflow_vars = set()
        try:
            self.visit_binding_block_(block)
        finally:
            for scope in self.visible:
                scope.difference_update(self.dataflow_vars)
            self.dataflow_vars = None

    def visit_binding_block_(self, block: BindingBlock) -> None:
        for binding in block.bindings:
            self.visit_binding(binding)

    def visit_var_binding_(self, binding: VarBinding) -> None:
        if self.dataflow_vars is not None and isinstance(binding.value, If):
            self.err(f"If is not allowed in a dataflow block (binding {binding.var.name_hint!r})")
        super().visit_var_binding_(binding)

    def visit_match_cast_(self, binding: MatchCast) -> None:
        self.visit_expr(binding.value)
        for v in definable_tir_vars_in_struct_info(binding.struct_info):
            self.sym[-1].add(id(v))
        self.visit_struct_info(binding.struct_info)
        self.visit_var_def(binding.var)

    def visit_struct_info(self, sinfo: StructInfo) -> None:
        self._check_sym_sinfo(sinfo, "a StructInfo")

    def visit_var_def_(self, var: Var) -> None:
        if id(var) in self.ever_defined:
            self.err(f"variable {var.name_hint!r} is defined more than once")
        if isinstance(var, DataflowVar):
            if self.dataflow_vars is None:
                self.err(f"DataflowVar {var.name_hint!r} is defined outside a dataflow block")
            else:
                self.dataflow_vars.add(id(var))
        self.ever_defined.add(id(var))
        self.visible[-1].add(id(var))
        self._check_sym_sinfo(var.struct_info, f"the StructInfo of {var.name_hint!r}")


def well_formed_problems(
    obj: Union[IRModule, Function], check_struct_info: bool = True
) -> list[str]:
    """Every well-formedness problem found, as messages naming the function."""
    if isinstance(obj, IRModule):
        checker = _Checker(obj, check_struct_info)
        for gv, func in obj.functions.items():
            if not isinstance(func, Function):
                continue
            checker.where = f"@{gv.name_hint}"
            symbol = func.attrs.get("global_symbol") if func.attrs else None
            if symbol is not None and symbol != gv.name_hint:
                checker.err(f"global_symbol {symbol!r} differs from the function's name")
            checker.visit_expr(func)
        return checker.problems
    if isinstance(obj, Expr):
        checker = _Checker(None, check_struct_info)
        checker.visit_expr(obj)
        return checker.problems
    raise TypeError(f"well_formed expects an IRModule or a Relax expression, got {type(obj).__name__}")


def well_formed(obj: Union[IRModule, Function], check_struct_info: bool = True) -> bool:
    """Whether ``obj`` is well formed (see the module docstring)."""
    return not well_formed_problems(obj, check_struct_info)


def verify_well_formed(obj: Union[IRModule, Function], check_struct_info: bool = True) -> None:
    """Raise :class:`WellFormedError` listing every problem, if any."""
    problems = well_formed_problems(obj, check_struct_info)
    if problems:
        raise WellFormedError(problems)
