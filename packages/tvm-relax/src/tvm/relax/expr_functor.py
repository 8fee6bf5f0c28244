"""Visitors and mutators over Relax, dispatching on node type.

A subclass handles a node kind by defining ``visit_<snake_case_type>_``:

* expressions: ``visit_var_``, ``visit_dataflow_var_`` (defaults to ``visit_var_``),
  ``visit_constant_``, ``visit_call_``, ``visit_tuple_``, ``visit_tuple_get_item_``,
  ``visit_shape_expr_``, ``visit_prim_value_``, ``visit_string_imm_``,
  ``visit_data_type_imm_``, ``visit_if_``, ``visit_seq_expr_``, ``visit_function_``,
  ``visit_extern_func_``, ``visit_global_var_``, ``visit_op_``;
* blocks: ``visit_binding_block_``, ``visit_dataflow_block_`` (defaults to the former);
* bindings: ``visit_var_binding_``, ``visit_match_cast_``;
* variable definitions: ``visit_var_def_``, ``visit_dataflow_var_def_`` (defaults to the
  former), called for parameters and bound variables;
* ``visit_struct_info`` and ``visit_prim_expr`` for the StructInfo and PrimExprs met.

:class:`ExprMutator` rebuilds what changed and returns the *same* object otherwise.  It
re-emits bindings through its :class:`BlockBuilder` (``self.builder_``), so calls whose
arguments changed get their StructInfo inferred again, and a variable whose value's
StructInfo changed is replaced by a fresh one (uses are remapped through ``var_remap``).
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

from tvm.ffi import structural_equal
from tvm.ir.base import GlobalVar
from tvm.ir.module import IRModule
from tvm.ir.op import Op
from tvm.tir.expr import PrimExpr
from tvm.tir.functor import snake_name

from .block_builder import BlockBuilder
from .expr import (
    Binding,
    BindingBlock,
    Call,
    DataflowBlock,
    DataflowVar,
    Expr,
    Function,
    If,
    MatchCast,
    PrimValue,
    SeqExpr,
    ShapeExpr,
    Tuple,
    TupleGetItem,
    Var,
    VarBinding,
)
from .struct_info import ObjectStructInfo, StructInfo

__all__ = ["ExprVisitor", "ExprMutator"]


def _dispatch(visitor: Any, node: Any, suffix: str = "") -> Optional[Callable[..., Any]]:
    cls = type(visitor)
    table = cls.__dict__.get("_relax_dispatch")
    if table is None:
        table = {}
        cls._relax_dispatch = table  # type: ignore[attr-defined]
    key = (type(node), suffix)
    if key not in table:
        handler = None
        for node_cls in type(node).__mro__:
            fn = getattr(cls, f"visit_{snake_name(node_cls)}{suffix}_", None)
            if fn is not None:
                handler = fn
                break
        table[key] = handler
    return table[key]


class ExprVisitor:
    """Walks a Relax expression (and what it binds) in evaluation order."""

    def visit_expr(self, expr: Any) -> None:
        handler = _dispatch(self, expr)
        if handler is None:
            raise TypeError(f"{type(self).__name__}: no visitor for {type(expr).__name__}")
        handler(self, expr)

    # -- leaves -------------------------------------------------------------------------------
    def visit_var_(self, var: Var) -> None:
        pass

    def visit_dataflow_var_(self, var: DataflowVar) -> None:
        self.visit_var_(var)

    def visit_constant_(self, expr: Any) -> None:
        pass

    def visit_global_var_(self, expr: GlobalVar) -> None:
        pass

    def visit_op_(self, expr: Op) -> None:
        pass

    def visit_extern_func_(self, expr: Any) -> None:
        pass

    def visit_string_imm_(self, expr: Any) -> None:
        pass

    def visit_data_type_imm_(self, expr: Any) -> None:
        pass

    def visit_shape_expr_(self, expr: ShapeExpr) -> None:
        for v in expr.values:
            self.visit_prim_expr(v)

    def visit_prim_value_(self, expr: PrimValue) -> None:
        self.visit_prim_expr(expr.value)

    # -- compound -----------------------------------------------------------------------------
    def visit_call_(self, call: Call) -> None:
        self.visit_expr(call.op)
        for arg in call.args:
            self.visit_expr(arg)
        for sinfo in call.sinfo_args:
            self.visit_struct_info(sinfo)

    def visit_tuple_(self, expr: Tuple) -> None:
        for f in expr.fields:
            self.visit_expr(f)

    def visit_tuple_get_item_(self, expr: TupleGetItem) -> None:
        self.visit_expr(expr.tuple_value)

    def visit_if_(self, expr: If) -> None:
        self.visit_expr(expr.cond)
        self.visit_expr(expr.true_branch)
        self.visit_expr(expr.false_branch)

    def visit_seq_expr_(self, expr: SeqExpr) -> None:
        for block in expr.blocks:
            self.visit_binding_block(block)
        self.visit_expr(expr.body)

    def visit_function_(self, func: Function) -> None:
        for p in func.params:
            self.visit_var_def(p)
        self.visit_expr(func.body)

    # -- blocks, bindings, definitions ----------------------------------------------------------
    def visit_binding_block(self, block: BindingBlock) -> None:
        _dispatch(self, block)(self, block)

    def visit_binding_block_(self, block: BindingBlock) -> None:
        for binding in block.bindings:
            self.visit_binding(binding)

    def visit_dataflow_block_(self, block: DataflowBlock) -> None:
        self.visit_binding_block_(block)

    def visit_binding(self, binding: Binding) -> None:
        _dispatch(self, binding)(self, binding)

    def visit_var_binding_(self, binding: VarBinding) -> None:
        self.visit_expr(binding.value)
        self.visit_var_def(binding.var)

    def visit_match_cast_(self, binding: MatchCast) -> None:
        self.visit_expr(binding.value)
        self.visit_struct_info(binding.struct_info)
        self.visit_var_def(binding.var)

    def visit_var_def(self, var: Var) -> None:
        _dispatch(self, var, "_def")(self, var)

    def visit_var_def_(self, var: Var) -> None:
        pass

    def visit_dataflow_var_def_(self, var: DataflowVar) -> None:
        self.visit_var_def_(var)

    def visit_struct_info(self, sinfo: StructInfo) -> None:
        pass

    def visit_prim_expr(self, expr: PrimExpr) -> None:
        pass


class ExprMutator:
    """Rebuilds a Relax expression; unchanged parts are returned as they are.

    ``builder_`` normalises what is rebuilt (StructInfo inference, A-normal form); pass the
    module when calls to its functions must be inferred.
    """

    def __init__(self, mod: Optional[IRModule] = None):
        self.builder_ = BlockBuilder(mod)
        self.var_remap: dict[Var, Expr] = {}

    def visit_expr(self, expr: Any) -> Any:
        handler = _dispatch(self, expr)
        if handler is None:
            raise TypeError(f"{type(self).__name__}: no mutator for {type(expr).__name__}")
        new = handler(self, expr)
        if isinstance(new, (GlobalVar, Op)) or (
            new is expr and getattr(expr, "struct_info_", None) is not None
        ):
            return new
        return self.builder_.normalize(new)

    def lookup_binding(self, var: Var) -> Optional[Expr]:
        """The value bound to ``var`` (bindings re-emitted during this mutation)."""
        return self.builder_.lookup_binding(var)

    def set_var_remap(self, var: Var, new: Expr) -> None:
        self.var_remap[var] = new

    # -- leaves -------------------------------------------------------------------------------
    def visit_var_(self, var: Var) -> Expr:
        return self.var_remap.get(var, var)

    def visit_dataflow_var_(self, var: DataflowVar) -> Expr:
        return self.visit_var_(var)

    def visit_constant_(self, expr: Any) -> Any:
        return expr

    def visit_global_var_(self, expr: GlobalVar) -> Any:
        return expr

    def visit_op_(self, expr: Op) -> Any:
        return expr

    def visit_extern_func_(self, expr: Any) -> Any:
        return expr

    def visit_string_imm_(self, expr: Any) -> Any:
        return expr

    def visit_data_type_imm_(self, expr: Any) -> Any:
        return expr

    def visit_shape_expr_(self, expr: ShapeExpr) -> Expr:
        values = [self.visit_prim_expr(v) for v in expr.values]
        if all(a is b for a, b in zip(values, expr.values)):
            return expr
        return ShapeExpr(values, span=expr.span)

    def visit_prim_value_(self, expr: PrimValue) -> Expr:
        value = self.visit_prim_expr(expr.value)
        return expr if value is expr.value else PrimValue(value, span=expr.span)

    # -- compound -----------------------------------------------------------------------------
    def visit_call_(self, call: Call) -> Expr:
        op = self.visit_expr(call.op)
        args = [self.visit_expr(a) for a in call.args]
        sinfo_args = [self.visit_struct_info(s) for s in call.sinfo_args]
        if op is call.op and _same(args, call.args) and _same(sinfo_args, call.sinfo_args):
            return call
        return Call(op, args, call.attrs, sinfo_args, span=call.span)

    def visit_tuple_(self, expr: Tuple) -> Expr:
        fields = [self.visit_expr(f) for f in expr.fields]
        return expr if _same(fields, expr.fields) else Tuple(fields, span=expr.span)

    def visit_tuple_get_item_(self, expr: TupleGetItem) -> Expr:
        value = self.visit_expr(expr.tuple_value)
        if value is expr.tuple_value:
            return expr
        return TupleGetItem(value, expr.index, span=expr.span)

    def visit_if_(self, expr: If) -> Expr:
        cond = self.visit_expr(expr.cond)
        then = self.visit_with_new_scope(expr.true_branch)
        other = self.visit_with_new_scope(expr.false_branch)
        if cond is expr.cond and then is expr.true_branch and other is expr.false_branch:
            return expr
        return If(cond, then, other, span=expr.span)

    def visit_seq_expr_(self, expr: SeqExpr) -> Expr:
        blocks = []
        changed = False
        for block in expr.blocks:
            new = self.visit_binding_block(block)
            changed = changed or new is not block
            if new.bindings:
                blocks.append(new)
        self.builder_.begin_binding_block()
        body = self.visit_expr(expr.body)
        prologue = self.builder_.end_block()
        if prologue.bindings:
            blocks.append(prologue)
            changed = True
        if not changed and body is expr.body:
            return expr
        return SeqExpr(blocks, body, span=expr.span)

    def visit_function_(self, func: Function) -> Expr:
        params = [self.visit_var_def(p) for p in func.params]
        body = self.visit_with_new_scope(func.body, params)
        ret = func.ret_struct_info
        new_ret = self.visit_struct_info(ret) if ret is not None else None
        if _same(params, func.params) and body is func.body and new_ret is ret:
            return func
        return Function(params, body, new_ret, func.is_pure, func.attrs, span=func.span)

    def visit_with_new_scope(self, expr: Expr, params: Optional[Sequence[Var]] = None) -> Expr:
        """Mutate a function body or branch in its own scope; the result is a SeqExpr."""
        bb = self.builder_
        bb.begin_scope(params)
        bb.begin_binding_block()
        span, bb._span = bb._span, None  # an enclosing binding's span stays outside
        try:
            new = self.visit_expr(expr)
        finally:
            bb._span = span
            prologue = bb.end_block()
        try:
            if prologue.bindings:
                if isinstance(new, SeqExpr):
                    new = SeqExpr([prologue, *new.blocks], new.body, span=new.span)
                else:
                    new = SeqExpr([prologue], new)
            if new is expr and isinstance(expr, SeqExpr):
                return expr
            return bb.normalize_in_new_scope(new)
        finally:
            bb.end_scope()

    # -- blocks, bindings, definitions ----------------------------------------------------------
    def visit_binding_block(self, block: BindingBlock) -> BindingBlock:
        return _dispatch(self, block)(self, block)

    def visit_binding_block_(self, block: BindingBlock) -> BindingBlock:
        if isinstance(block, DataflowBlock):
            self.builder_.begin_dataflow_block()
        else:
            self.builder_.begin_binding_block()
        try:
            for binding in block.bindings:
                self.visit_binding(binding)
        finally:
            new = self.builder_.end_block()
        if _same(new.bindings, block.bindings):
            return block
        return new

    def visit_dataflow_block_(self, block: DataflowBlock) -> BindingBlock:
        return self.visit_binding_block_(block)

    def visit_binding(self, binding: Binding) -> None:
        """Re-emit ``binding`` (possibly changed) into ``builder_``'s current block."""
        _dispatch(self, binding)(self, binding)

    def visit_var_binding_(self, binding: VarBinding) -> None:
        value = self._visit_bound_value(binding)
        var = self.visit_var_def(binding.var)
        if var is binding.var and value is binding.value:
            self.builder_.emit_normalized(binding)
            return
        new_sinfo = getattr(value, "struct_info_", None)
        if new_sinfo is not None and not isinstance(new_sinfo, ObjectStructInfo) and (
            not structural_equal(var.struct_info, new_sinfo)
        ):
            var = type(var)(var.name_hint, new_sinfo, span=var.span)
        if var is not binding.var:
            self.var_remap[binding.var] = var
        self.builder_.emit_normalized(VarBinding(var, value, span=binding.span))

    def visit_match_cast_(self, binding: MatchCast) -> None:
        value = self._visit_bound_value(binding)
        sinfo = self.visit_struct_info(binding.struct_info)
        var = self.visit_var_def(binding.var)
        if sinfo is not binding.struct_info and var is binding.var:
            var = type(var)(var.name_hint, sinfo, span=var.span)
        if var is not binding.var:
            self.var_remap[binding.var] = var
        if var is binding.var and value is binding.value and sinfo is binding.struct_info:
            self.builder_.emit_normalized(binding)
            return
        self.builder_.emit_normalized(MatchCast(var, value, sinfo, span=binding.span))

    def _visit_bound_value(self, binding: Binding) -> Expr:
        """The mutated value of ``binding``; the bindings emitted meanwhile take its span,
        and so does a call that replaces its value (spans name model layers)."""
        bb, span = self.builder_, binding.span
        prev = bb._span
        if span is not None:
            bb._span = span
        try:
            value = self.visit_expr(binding.value)
        finally:
            bb._span = prev
        return self._keep_span(value, binding)

    @staticmethod
    def _keep_span(value: Expr, binding: Binding) -> Expr:
        """``value`` (replacing ``binding``'s) with the old value's span, else the binding's,
        when it is a new call without one."""
        if value is not binding.value and isinstance(value, Call) and value.span is None:
            span = getattr(binding.value, "span", None) or binding.span
            if span is not None:
                return value.with_fields(span=span)
        return value

    def visit_var_def(self, var: Var) -> Var:
        return _dispatch(self, var, "_def")(self, var)

    def visit_var_def_(self, var: Var) -> Var:
        sinfo = self.visit_struct_info(var.struct_info)
        if sinfo is var.struct_info:
            return var
        new = type(var)(var.name_hint, sinfo, span=var.span)
        self.var_remap[var] = new
        return new

    def visit_dataflow_var_def_(self, var: DataflowVar) -> Var:
        return self.visit_var_def_(var)

    def visit_struct_info(self, sinfo: StructInfo) -> StructInfo:
        return sinfo

    def visit_prim_expr(self, expr: PrimExpr) -> PrimExpr:
        return expr


def _same(a: Sequence[Any], b: Sequence[Any]) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b))
