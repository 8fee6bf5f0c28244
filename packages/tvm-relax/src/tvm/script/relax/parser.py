"""TVMScript parser for Relax: a ``def`` (Python ``ast``) becomes a :class:`relax.Function`.

The body is built with a :class:`~tvm.relax.BlockBuilder`, so every binding is normalised
and gets its StructInfo inferred as it is parsed:

* ``lv = R.matmul(a, b)`` emits a binding (a ``DataflowVar`` inside ``with R.dataflow():``
  unless ``R.output`` lists it); an annotation ``lv: R.Tensor((128, 512), "float32") = ...``
  must fit the inferred StructInfo and becomes the variable's StructInfo;
* ``lv = R.match_cast(x, sinfo)`` emits a MatchCast; ``n = T.int64()`` declares a symbolic
  variable (the one of that name from the signature, if any); other Python values are
  plain names;
* ``if c: ... v = a  else: ... v = b`` binds ``v`` to an ``If`` whose branches end with
  the assignments to ``v``; ``return x`` ends the function;
* calls of global functions (``cls.f(x)``, ``f(x)``) take their StructInfo from the
  callee's signature (via :class:`ModuleContext` inside an ``@I.ir_module`` class).

Errors are :class:`~tvm.ir.diagnostics.DiagnosticError` at the offending line and column.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence
from typing import Any, Callable, Optional, Protocol

import numpy as np

from tvm.ir.base import GlobalVar
from tvm.ir.diagnostics import DiagnosticError
from tvm.ir.module import IRModule
from tvm.relax.analysis.struct_info_analysis import (
    BaseCheckResult,
    describe_struct_info,
    erase_to_well_defined,
    params_var_map,
    struct_info_base_check,
)
from tvm.relax.block_builder import BlockBuilder
from tvm.relax.errors import RelaxError
from tvm.relax.expr import (
    Call,
    DataflowVar,
    Expr,
    Function,
    If,
    MatchCast,
    SeqExpr,
    TupleGetItem,
    Var,
    VarBinding,
    as_expr,
)
from tvm.relax.struct_info import FuncStructInfo, ObjectStructInfo, StructInfo
from tvm.script.parser_core import MISSING, ExprEvaluator, Source, VarTable, deep_recursion
from tvm.tir.expr import Var as TirVar

from . import ir
from .ops import ROOT, OpNamespace
from .sinfo import SymbolScope, as_struct_info, symbol_scope

__all__ = ["RelaxParser", "ModuleContext", "parse_function"]

_STMT_NAMES = {
    "For": "for loop", "While": "while loop", "Try": "try statement", "Raise": "raise statement",
    "Delete": "del statement", "Global": "global statement", "Nonlocal": "nonlocal statement",
    "Import": "import statement", "ImportFrom": "import statement", "ClassDef": "class definition",
    "AsyncFunctionDef": "async function", "Match": "match statement", "Assert": "assert",
    "AugAssign": "augmented assignment (x += ...)", "Break": "break", "Continue": "continue",
}


class ModuleContext(Protocol):
    """What the parser of a function inside an ``@I.ir_module`` class asks its module."""

    def callee_struct_info(self, gv: GlobalVar) -> Optional[StructInfo]:
        """The signature of the module's function ``gv`` (parsing it first if needed)."""

    def builder_module(self) -> IRModule:
        """The module's non-Relax functions (PrimFuncs), for call_tir checks."""


def _message(err: BaseException) -> str:
    if isinstance(err, DiagnosticError):
        return err.message
    text = str(err.args[0]) if isinstance(err, KeyError) and err.args else str(err)
    span = getattr(err, "span", None)
    if span is not None and text.endswith(f" (at {span})"):
        text = text[: -len(f" (at {span})")]
    return text or type(err).__name__


class _Evaluator(ExprEvaluator):
    """Expressions of a Relax body: calls of global functions and function-valued variables
    build Relax calls (carrying their source span), ``R.<op>`` errors name the operator."""

    def __init__(self, parser: RelaxParser):
        super().__init__(parser.source, parser.vars)
        self.parser = parser

    def eval_Name(self, node: ast.Name) -> Any:  # noqa: N802
        value = self.table.get(node.id)
        if value is MISSING:
            if node.id in self.parser.sym.vars:
                hint = (f"; the symbolic variable {node.id!r} of the signature must be declared "
                        f"in the body before use: `{node.id} = T.int64()`")
            else:
                hint = self.table.suggest(node.id)
            raise self.error(f"undefined variable {node.id!r}{hint}", node)
        self.check_name(value, node)
        return value

    def eval_Attribute(self, node: ast.Attribute) -> Any:  # noqa: N802
        obj = self.eval(node.value)
        namespace = obj if isinstance(obj, OpNamespace) else None
        if namespace is None and getattr(obj, "__name__", None) == "tvm.script.relax":
            namespace = ROOT
        self.check_attribute(obj, node)
        try:
            return self.get_attribute(obj, node.attr)
        except AttributeError:
            pass
        except Exception as err:  # noqa: BLE001
            raise self.error(_message(err), node) from err
        if namespace is not None:
            raise self.error(namespace.unknown_message(node.attr), node)
        describe = getattr(obj, "unknown_attribute_message", None)
        if describe is not None:
            raise self.error(describe(node.attr), node)
        import difflib

        owner = self.source.segment(node.value)
        candidates = [n for n in dir(obj) if not n.startswith("_")]
        close = difflib.get_close_matches(node.attr, candidates, n=1, cutoff=0.6)
        hint = f"; did you mean {owner}.{close[0]}?" if close else ""
        raise self.error(f"{owner!r} ({type(obj).__name__}) has no attribute {node.attr!r}{hint}",
                         node)

    def call_node(self, node: ast.Call, fn: Any, args: list, kwargs: dict) -> Any:
        if isinstance(fn, GlobalVar) or (isinstance(fn, Expr) and not callable(fn)):
            if kwargs:
                raise self.error("a call of a function takes positional arguments only (use "
                                 "R.call_op(f, ..., sinfo_args=...) for more)", node)
            result = self.guard(node, self.parser.call_function, fn, args)
        else:
            result = super().call_node(node, fn, args, kwargs)
        if isinstance(result, Call) and result.span is None:
            object.__setattr__(result, "span", self.source.span(node))
        return result


class RelaxParser:
    """Parses one ``@R.function`` definition; :meth:`signature` can run before :meth:`parse`
    (a module parser declares every function's signature for calls between them)."""

    def __init__(
        self,
        node: ast.FunctionDef,
        source: Source,
        env: Sequence[Mapping[str, Any]],
        options: Optional[dict] = None,
        module: Optional[ModuleContext] = None,
    ):
        options = dict(options or {})
        unknown = set(options) - {"private", "pure", "check_well_formed"}
        if unknown:
            raise source.error(f"unknown @R.function option(s) {sorted(unknown)}; known: "
                               "private, pure, check_well_formed", node)
        self.node = node
        self.source = source
        self.vars = VarTable(env, source.trusted)
        self.eval = _Evaluator(self)
        self.sym = SymbolScope(env)
        self.module = module
        self.private = bool(options.get("private", False))
        self.pure = bool(options.get("pure", True))
        self.check_well_formed = bool(options.get("check_well_formed", True))
        self.attrs: dict[str, Any] = {}
        self.bb: Optional[BlockBuilder] = None
        self._signature: Optional[tuple[list[Var], Optional[StructInfo]]] = None
        self._dataflow: Optional[dict[str, int]] = None  # output name -> index of last binding
        self._df_index = -1

    # -- helpers ------------------------------------------------------------------------------
    def error(self, message: str, node: Any) -> DiagnosticError:
        return self.source.error(message, node)

    def _diag(self, err: BaseException, node: Any) -> DiagnosticError:
        if isinstance(err, DiagnosticError):
            return err
        span = getattr(err, "span", None) or self.source.span(node)
        return DiagnosticError(_message(err), span)

    def _run(self, node: Any, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(*args)`` with IR errors (shape, dtype, arity ...) reported at ``node``."""
        try:
            return fn(*args)
        except DiagnosticError:
            raise
        except (RelaxError, TypeError, ValueError, KeyError, IndexError) as err:
            raise self._diag(err, node) from err
        except RecursionError:
            raise self.error("this expression is nested too deeply to normalize; bind its "
                             "parts to names (one call per binding)", node) from None

    def _sinfo(self, node: ast.expr, what: str) -> StructInfo:
        value = self.eval.eval(node)
        return self.eval.guard(node, as_struct_info, value, what)

    def _check_annotation(self, ann: StructInfo, inferred: StructInfo, node: ast.AST,
                          what: str) -> None:
        check = struct_info_base_check(ann, inferred, self.bb.analyzer if self.bb else None)
        if check == BaseCheckResult.FAIL_L0:
            raise self.error(
                f"{what}: the annotation {describe_struct_info(ann)} does not match the "
                f"inferred {describe_struct_info(inferred)}", node)

    # -- signature ----------------------------------------------------------------------------
    def signature(self) -> tuple[list[Var], Optional[StructInfo]]:
        """Parameters (with their StructInfo) and the annotated return StructInfo, if any."""
        if self._signature is not None:
            return self._signature
        args = self.node.args
        if args.vararg or args.kwarg or args.kwonlyargs or args.defaults or args.kw_defaults:
            raise self.error("a Relax function takes plain positional parameters only", self.node)
        params: list[Var] = []
        with symbol_scope(self.sym):
            for arg in (*args.posonlyargs, *args.args):
                if arg.annotation is None:
                    raise self.error(f"parameter {arg.arg!r} needs a StructInfo annotation such "
                                     "as R.Tensor((n, 4), \"float32\")", arg)
                sinfo = self._sinfo(arg.annotation, f"the annotation of parameter {arg.arg!r}")
                params.append(Var(arg.arg, sinfo, span=self.source.span(arg)))
            ret = None
            if self.node.returns is not None:
                ret = self._sinfo(self.node.returns, "the return annotation")
        self._signature = (params, ret)
        return self._signature

    def signature_struct_info(self) -> Optional[FuncStructInfo]:
        """The function's StructInfo if its return is annotated (else None)."""
        params, ret = self.signature()
        if ret is None:
            return None
        return FuncStructInfo([p.struct_info for p in params], ret, self.pure)

    # -- function -----------------------------------------------------------------------------
    def parse(self) -> Function:
        params, ret_ann = self.signature()
        base = self.module.builder_module() if self.module is not None else None
        self.bb = BlockBuilder(base)
        with symbol_scope(self.sym), self.bb, deep_recursion():
            seq, ret = self._function_body(self.node, params, ret_ann)
        attrs = dict(self.attrs)
        if self.private:
            if "global_symbol" in attrs:
                raise self.error("a private function cannot set global_symbol", self.node)
        else:
            attrs.setdefault("global_symbol", self.node.name)
        return Function(params, seq, ret, self.pure, attrs, span=self.source.span(self.node))

    def _function_body(self, node: ast.FunctionDef, params: list[Var],
                       ret_ann: Optional[StructInfo]) -> tuple[SeqExpr, StructInfo]:
        """The body of ``node`` as a SeqExpr (in its own scope) and the return StructInfo."""
        stmts = list(node.body)
        if stmts and isinstance(stmts[0], ast.Expr) and isinstance(stmts[0].value, ast.Constant) \
                and isinstance(stmts[0].value.value, str):
            stmts = stmts[1:]
        if not stmts:
            raise self.error("a Relax function body must end with a return statement", node)
        self.bb.begin_scope(params)
        try:
            with self.vars.scope():
                for p, arg in zip(params, (*node.args.posonlyargs, *node.args.args)):
                    self.vars.add(arg.arg, p)
                blocks, body = self._seq(stmts, self._final_return)
        finally:
            self.bb.end_scope()
        body_sinfo = getattr(body, "struct_info_", None) or ObjectStructInfo()
        erased = erase_to_well_defined(body_sinfo, params_var_map(params), {p: p for p in params})
        if ret_ann is not None:
            self._check_annotation(ret_ann, body_sinfo, node.returns, "return value")
        seq = SeqExpr(blocks, body, span=self.source.span(stmts[-1]))
        object.__setattr__(seq, "struct_info_", erased)
        return seq, ret_ann if ret_ann is not None else erased

    def _local_function(self, node: ast.FunctionDef) -> None:
        """``@R.function def f(...)`` inside a function: a local function bound to ``f``."""
        from .entry import function as relax_function

        options: Optional[dict] = None
        for dec in node.decorator_list:
            target = dec.func if isinstance(dec, ast.Call) else dec
            if self.eval.eval(target) is relax_function:
                options = self.eval.eval_arguments(dec)[1] if isinstance(dec, ast.Call) else {}
        if options is None:
            raise self.error("a function defined inside a Relax function must be an "
                             "@R.function", node)
        unknown = set(options) - {"pure", "private", "check_well_formed"}
        if unknown:
            raise self.error(f"unknown @R.function option(s) {sorted(unknown)}", node)
        inner = RelaxParser(node, self.source, [], {"pure": options.get("pure", True)})
        inner.eval, inner.vars, inner.sym = self.eval, self.vars, self.sym
        params, ret_ann = inner.signature()
        saved = (self.attrs, self._dataflow, self._df_index)
        self.attrs, self._dataflow, self._df_index = {}, None, -1
        try:
            seq, ret = self._function_body(node, params, ret_ann)
            attrs = self.attrs
        finally:
            self.attrs, self._dataflow, self._df_index = saved
        func = Function(params, seq, ret, inner.pure, attrs, span=self.source.span(node))
        self._emit(node.name, func, None, None, node)

    def call_function(self, fn: Any, args: list) -> Call:
        """``f(x, y)`` for a global function or a function-valued expression."""
        if isinstance(fn, GlobalVar) and self.module is not None and self.bb is not None:
            sinfo = self.module.callee_struct_info(fn)
            if sinfo is not None:
                self.bb.declare_func(fn.name_hint, sinfo)
        return Call(fn, [as_expr(a, "call argument") for a in args])

    # -- statement lists ------------------------------------------------------------------------
    def _is_dataflow(self, stmt: ast.stmt) -> bool:
        if not isinstance(stmt, ast.With) or len(stmt.items) != 1:
            return False
        item = stmt.items[0]
        if not isinstance(item.context_expr, ast.Call):
            return False
        return self.eval.eval(item.context_expr.func) is ir.dataflow

    def _seq(self, stmts: list[ast.stmt], final: Callable[[ast.stmt], Any]) -> tuple[list, Any]:
        """Binding blocks of ``stmts``; the last statement goes to ``final``."""
        bb = self.bb
        blocks: list = []
        bb.begin_binding_block()
        result = None
        for i, stmt in enumerate(stmts):
            if self._is_dataflow(stmt):
                if i == len(stmts) - 1:
                    final(stmt)  # reports what the list must end with
                block = bb.end_block()
                if block.bindings:
                    blocks.append(block)
                self._dataflow_block(stmt, blocks)
                bb.begin_binding_block()
            elif i == len(stmts) - 1:
                result = final(stmt)
            else:
                self._stmt(stmt)
        block = bb.end_block()
        if block.bindings:
            blocks.append(block)
        return blocks, result

    def _final_return(self, stmt: ast.stmt) -> Expr:
        if not isinstance(stmt, ast.Return):
            if isinstance(stmt, ast.If) and self._if_returns(stmt):
                return self._if_return(stmt)
            raise self.error("a Relax function body must end with a return statement", stmt)
        if stmt.value is None:
            raise self.error("the return statement needs a value", stmt)
        value = self._relax_value(stmt.value, "the return value")
        return self._run(stmt.value, self.bb.normalize_argument, value)

    def _dataflow_block(self, stmt: ast.With, blocks: list) -> None:
        if self._dataflow is not None:
            raise self.error("dataflow blocks cannot be nested", stmt)
        if stmt.items[0].optional_vars is not None:
            raise self.error("`with R.dataflow():` takes no `as` target", stmt.items[0])
        body = list(stmt.body)
        last = body[-1]
        out_call = last.value if isinstance(last, ast.Expr) and isinstance(
            last.value, ast.Call) else None
        if out_call is None or self.eval.eval(out_call.func) is not ir.output:
            raise self.error("a dataflow block must end with R.output(...) listing the variables "
                             "used after it (R.output() if none)", last)
        names: dict[str, int] = {}
        for arg in out_call.args:
            if not isinstance(arg, ast.Name):
                raise self.error("R.output takes variable names", arg)
            names[arg.id] = -1
        if out_call.keywords:
            raise self.error("R.output takes variable names only", out_call)
        for i, s in enumerate(body[:-1]):
            for name in _assigned_names(s):
                if name in names:
                    names[name] = i
        for arg in out_call.args:
            if names[arg.id] < 0:
                raise self.error(f"R.output: {arg.id!r} is not bound in this dataflow block", arg)
        self.bb.begin_dataflow_block()
        self._dataflow = names
        try:
            with self.vars.scope():
                for i, s in enumerate(body[:-1]):
                    self._df_index = i
                    self._stmt(s)
                outputs = [(arg.id, self.eval.eval(arg)) for arg in out_call.args]
        finally:
            self._dataflow = None
            self._df_index = -1
        block = self.bb.end_block()
        for name, var in outputs:
            self.vars.add(name, var)
        if block.bindings:
            blocks.append(block)

    # -- statements -------------------------------------------------------------------------------
    def _stmt(self, stmt: ast.stmt) -> None:
        if isinstance(stmt, ast.Assign):
            if len(stmt.targets) != 1:
                raise self.error("chained assignment (a = b = ...) is not supported", stmt)
            self._assign(stmt.targets[0], stmt.value, None, stmt)
        elif isinstance(stmt, ast.AnnAssign):
            if not isinstance(stmt.target, ast.Name) or stmt.value is None:
                raise self.error("an annotated assignment must be `name: sinfo = value`", stmt)
            self._assign(stmt.target, stmt.value, stmt.annotation, stmt)
        elif isinstance(stmt, ast.Expr):
            self._expr_stmt(stmt)
        elif isinstance(stmt, ast.If):
            self._if(stmt)
        elif isinstance(stmt, ast.Return):
            raise self.error("return must be the last statement of the function", stmt)
        elif isinstance(stmt, ast.With):
            if self._is_dataflow(stmt):
                raise self.error("a dataflow block must be directly in the function body or a "
                                 "branch", stmt)
            raise self.error("the only `with` statement in a Relax function is "
                             "`with R.dataflow():`", stmt)
        elif isinstance(stmt, ast.FunctionDef):
            self._local_function(stmt)
        elif isinstance(stmt, ast.Pass):
            return
        else:
            kind = _STMT_NAMES.get(type(stmt).__name__, type(stmt).__name__)
            raise self.error(f"{kind} is not supported in a Relax function", stmt)

    def _expr_stmt(self, stmt: ast.Expr) -> None:
        if isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str):
            return  # a docstring or comment string
        value = self.eval.eval(stmt.value)
        if isinstance(value, ir.FuncAttrs):
            self.attrs.update(value.attrs)
        elif isinstance(value, ir.Output):
            raise self.error("R.output(...) must be the last statement of a dataflow block", stmt)
        elif isinstance(value, ir.MatchCastValue):
            raise self.error("R.match_cast must be assigned: `v = R.match_cast(x, sinfo)`", stmt)
        elif isinstance(value, Expr):
            self._emit("_", value, None, None, stmt)
        elif value is not None:
            raise self.error(f"this expression ({type(value).__name__}) has no effect in a Relax "
                             "function", stmt)

    def _eval_named(self, node: ast.expr, name: Optional[str]) -> Any:
        """Evaluate an assigned value; ``n = T.int64()`` names (or finds) a symbolic variable."""
        if name is not None and isinstance(node, ast.Call) and not any(
            kw.arg == "name" for kw in node.keywords
        ):
            fn = self.eval.eval(node.func)
            args, kwargs = self.eval.eval_arguments(node)
            if getattr(fn, "__tvmscript_named__", False) is True:
                existing = self.sym.vars.get(name)
                if existing is not None and not args:
                    return existing
                kwargs["name"] = name
            return self.eval.call_node(node, fn, args, kwargs)
        return self.eval.eval(node)

    def _assign(self, target: ast.expr, value_node: ast.expr, ann_node: Optional[ast.expr],
                stmt: ast.stmt) -> None:
        if isinstance(target, ast.Tuple) and ann_node is None:
            self._unpack(target, value_node, stmt)
            return
        if not isinstance(target, ast.Name):
            raise self.error("assignment targets must be names", target)
        name = target.id
        value = self._eval_named(value_node, name)
        if isinstance(value, ir.MatchCastValue):
            ann = None if ann_node is None else self._sinfo(ann_node, "the annotation")
            self._match_cast(name, value, ann, ann_node, stmt)
            return
        relax_value = _as_relax(value)
        if relax_value is None and ann_node is not None:
            relax_value = self.eval.guard(value_node, as_expr, value, "the assigned value")
        if relax_value is None:
            if isinstance(value, TirVar):
                self.sym.add(name, value)
            self.vars.add(name, value)
            return
        ann = None if ann_node is None else self._sinfo(ann_node, "the annotation")
        self._emit(name, relax_value, ann, ann_node, stmt, value_node)

    def _unpack(self, target: ast.Tuple, value_node: ast.expr, stmt: ast.stmt) -> None:
        names = []
        for elt in target.elts:
            if not isinstance(elt, ast.Name):
                raise self.error("tuple assignment targets must be names", elt)
            names.append(elt.id)
        value = _as_relax(self.eval.eval(value_node))
        if value is None:
            raise self.error("only a Relax tuple value can be unpacked", value_node)
        tup = self._emit("_".join(names) or "tup", value, None, None, stmt, value_node)
        for i, name in enumerate(names):
            self._emit(name, TupleGetItem(tup, i), None, None, stmt)

    def _new_var(self, name: str, sinfo: StructInfo, node: ast.AST) -> Var:
        outputs = self._dataflow
        local = outputs is not None and outputs.get(name, -2) != self._df_index
        cls = DataflowVar if local else Var
        return cls(name, sinfo, span=self.source.span(node))

    def _emit(self, name: str, value: Expr, ann: Optional[StructInfo], ann_node: Any,
              stmt: ast.stmt, value_node: Optional[ast.expr] = None) -> Var:
        where = value_node if value_node is not None else stmt
        normalized = self._run(where, self.bb.normalize, value)
        inferred = getattr(normalized, "struct_info_", None) or ObjectStructInfo()
        if ann is not None:
            self._check_annotation(ann, inferred, ann_node, f"variable {name!r}")
        var = self._new_var(name, ann if ann is not None else inferred, stmt)
        self.bb.emit_normalized(VarBinding(var, normalized, span=self.source.span(stmt)))
        if name != "_":
            self.vars.add(name, var)
        return var

    def _match_cast(self, name: str, value: ir.MatchCastValue, ann: Optional[StructInfo],
                    ann_node: Any, stmt: ast.stmt) -> None:
        operand = _as_relax(value.value)
        if operand is None:
            raise self.error(f"R.match_cast takes a Relax value, got {type(value.value).__name__}",
                             stmt)
        operand = self._run(stmt, self.bb.normalize_argument, operand)
        if ann is not None:
            self._check_annotation(ann, value.struct_info, ann_node, f"variable {name!r}")
        var = self._new_var(name, ann if ann is not None else value.struct_info, stmt)
        self.bb.emit_normalized(MatchCast(var, operand, value.struct_info,
                                          span=self.source.span(stmt)))
        self.vars.add(name, var)

    def _relax_value(self, node: ast.expr, what: str) -> Expr:
        value = self.eval.eval(node)
        relax_value = _as_relax(value)
        if relax_value is None:
            relax_value = self.eval.guard(node, as_expr, value, what)
        return relax_value

    # -- if / else ------------------------------------------------------------------------------
    def _condition(self, stmt: ast.If) -> Expr:
        if not stmt.orelse:
            raise self.error("an `if` in a Relax function needs an `else` branch", stmt)
        return self._relax_value(stmt.test, "the condition")

    def _branch(self, stmts: list[ast.stmt], final: Callable[[ast.stmt], Any]) -> tuple[Any, Any]:
        self.bb.begin_scope()
        saved, self._dataflow = self._dataflow, None  # branches hold plain binding blocks
        try:
            with self.vars.scope():
                blocks, result = self._seq(stmts, final)
        finally:
            self.bb.end_scope()
            self._dataflow = saved
        return blocks, result

    def _branch_assign(self, stmt: ast.stmt) -> tuple[str, Optional[StructInfo], Any, Expr]:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(
            stmt.targets[0], ast.Name
        ):
            name, ann_node = stmt.targets[0].id, None
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and (
            stmt.value is not None
        ):
            name, ann_node = stmt.target.id, stmt.annotation
        else:
            raise self.error("each branch of an `if` must end by assigning the value of the `if` "
                             "to a variable (the same name in both branches)", stmt)
        value = self._relax_value(stmt.value, "the branch value")
        ann = None if ann_node is None else self._sinfo(ann_node, "the annotation")
        return name, ann, ann_node, self._run(stmt.value, self.bb.normalize_argument, value)

    def _if(self, stmt: ast.If) -> None:
        cond = self._condition(stmt)
        then_blocks, (name, ann, ann_node, then_value) = self._branch(stmt.body,
                                                                      self._branch_assign)
        else_blocks, (other, else_ann, else_node, else_value) = self._branch(stmt.orelse,
                                                                             self._branch_assign)
        if other != name:
            raise self.error(f"both branches must assign the same variable: the `if` branch "
                             f"assigns {name!r}, the `else` branch {other!r}", stmt.orelse[-1])
        if ann is None:
            ann, ann_node = else_ann, else_node
        node = If(cond, SeqExpr(then_blocks, then_value), SeqExpr(else_blocks, else_value),
                  span=self.source.span(stmt))
        self._emit(name, node, ann, ann_node, stmt, stmt.test)

    @staticmethod
    def _if_returns(stmt: ast.If) -> bool:
        return bool(stmt.body and stmt.orelse and isinstance(stmt.body[-1], ast.Return)
                    and isinstance(stmt.orelse[-1], ast.Return))

    def _if_return(self, stmt: ast.If) -> Expr:
        """A final ``if`` whose branches both ``return``: the function returns the If."""
        cond = self._condition(stmt)
        then_blocks, then_value = self._branch(stmt.body, self._final_return)
        else_blocks, else_value = self._branch(stmt.orelse, self._final_return)
        node = If(cond, SeqExpr(then_blocks, then_value), SeqExpr(else_blocks, else_value),
                  span=self.source.span(stmt))
        return self._emit("ret", node, None, None, stmt, stmt.test)


def _assigned_names(stmt: ast.stmt) -> list[str]:
    if isinstance(stmt, ast.Assign):
        out = []
        for t in stmt.targets:
            if isinstance(t, ast.Name):
                out.append(t.id)
            elif isinstance(t, ast.Tuple):
                out.extend(e.id for e in t.elts if isinstance(e, ast.Name))
        return out
    if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
        return [stmt.target.id]
    if isinstance(stmt, ast.If):
        last = stmt.body[-1] if stmt.body else None
        return _assigned_names(last) if last is not None else []
    return []


def _as_relax(value: Any) -> Optional[Expr]:
    """A Relax expression for values that are one (tuples of expressions become Tuples)."""
    if isinstance(value, Expr):
        return value
    if isinstance(value, np.ndarray):
        return as_expr(value)
    if isinstance(value, (list, tuple)) and (
        not value or any(_as_relax(v) is not None for v in value)
    ):
        if not value:
            return None
        return as_expr([_as_relax(v) or v for v in value])
    return None


def parse_function(
    node: ast.FunctionDef,
    source: Source,
    env: Sequence[Mapping[str, Any]],
    options: Optional[dict] = None,
) -> Function:
    """Parse a standalone ``@R.function`` definition (checked for well-formedness)."""
    parser = RelaxParser(node, source, env, options)
    func = parser.parse()
    if parser.check_well_formed:
        from tvm.relax.analysis import well_formed_problems

        problems = well_formed_problems(func)
        if problems:
            raise source.error(f"the parsed function {node.name!r} is not well formed: "
                               + "; ".join(problems), node)
    return func
