"""The ``@I.ir_module`` class parser: a class body of decorated functions becomes an IRModule.

* Every method name is a global function: ``cls.name``, ``Module.name`` (the class name)
  and the bare ``name`` refer to its :class:`~tvm.ir.GlobalVar` inside the class.
* Non-Relax functions (``@T.prim_func`` ...) are parsed by their dialect's parser
  (:func:`tvm.script.parser_core.parse_definition`), first.
* Relax functions are parsed in class order; a call of another Relax function takes the
  callee's signature from its annotations, or parses the callee first when its return is
  not annotated (recursion then needs the annotation).
* ``I.module_attrs({...})`` sets the module's attributes.
"""

from __future__ import annotations

import ast
import difflib
from collections.abc import Mapping, Sequence
from typing import Any, Optional

from tvm.ir.base import BaseFunc, GlobalVar
from tvm.ir.diagnostics import DiagnosticError
from tvm.ir.module import IRModule
from tvm.relax.expr import Function
from tvm.relax.struct_info import StructInfo
from tvm.script.parser_core import ExprEvaluator, Source, VarTable, parse_definition

from .metadata import env_with_metadata

__all__ = ["ModuleAttrs", "ModuleNamespace", "parse_ir_module"]


class ModuleAttrs:
    """``I.module_attrs({...})`` inside an ``@I.ir_module`` class."""

    __slots__ = ("attrs",)

    def __init__(self, attrs: dict):
        self.attrs = attrs


class ModuleNamespace:
    """``cls`` (and the class name) inside an ``@I.ir_module`` class: its functions."""

    __slots__ = ("_name", "_gvs")

    def __init__(self, name: str, gvs: dict[str, GlobalVar]):
        self._name = name
        self._gvs = gvs

    def __getattr__(self, name: str) -> GlobalVar:
        if name.startswith("__"):
            raise AttributeError(name)
        gv = self._gvs.get(name)
        if gv is None:
            raise AttributeError(self.unknown_attribute_message(name))
        return gv

    def __dir__(self) -> list[str]:
        return sorted(self._gvs)

    def __repr__(self) -> str:
        return f"<IRModule class {self._name}>"

    def unknown_attribute_message(self, name: str) -> str:
        close = difflib.get_close_matches(name, list(self._gvs), n=1, cutoff=0.6)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        listing = ", ".join(sorted(self._gvs)) or "none"
        return (f"the module class {self._name!r} has no function {name!r}{hint} "
                f"(functions: {listing})")


class _ModuleParser:
    """Parses one class; also the module context of its Relax functions' parsers."""

    def __init__(self, node: ast.ClassDef, source: Source, env: Sequence[Mapping[str, Any]],
                 options: dict):
        unknown = set(options) - {"check_well_formed"}
        if unknown:
            raise source.error(f"unknown @I.ir_module option(s) {sorted(unknown)}; known: "
                               "check_well_formed", node)
        self.node = node
        self.source = source
        self.check_well_formed = bool(options.get("check_well_formed", True))
        self.defs: list[ast.FunctionDef] = []
        self.attrs: dict[str, Any] = {}
        env = env_with_metadata(source, env)
        evaluator = ExprEvaluator(source, VarTable(env))
        for stmt in node.body:
            if isinstance(stmt, ast.FunctionDef):
                self.defs.append(stmt)
            elif isinstance(stmt, ast.Pass) or (
                isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
            ):
                continue
            elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
                value = evaluator.eval(stmt.value)
                if not isinstance(value, ModuleAttrs):
                    raise source.error("an @I.ir_module class body holds functions and "
                                       "I.module_attrs({...}) only", stmt)
                self.attrs.update(value.attrs)
            else:
                raise source.error("an @I.ir_module class body holds decorated functions and "
                                   f"I.module_attrs({{...}}) only, found {type(stmt).__name__}",
                                   stmt)
        self.gvs: dict[str, GlobalVar] = {}
        for d in self.defs:
            if d.name in self.gvs:
                raise source.error(f"the module defines function {d.name!r} twice", d)
            self.gvs[d.name] = GlobalVar(d.name)
        namespace = ModuleNamespace(node.name, self.gvs)
        self.env: list[Mapping[str, Any]] = [
            {**self.gvs, "cls": namespace, node.name: namespace}, *env
        ]
        self.evaluator = ExprEvaluator(source, VarTable(self.env))
        self.functions: dict[str, BaseFunc] = {}
        self.relax: dict[str, Any] = {}  # name -> RelaxParser
        self.in_progress: set[str] = set()
        self._base: Optional[IRModule] = None

    # -- module context for Relax parsers -------------------------------------------------------
    def builder_module(self) -> IRModule:
        if self._base is None:
            self._base = IRModule({self.gvs[n]: f for n, f in self.functions.items()
                                   if not isinstance(f, Function)})
        return self._base

    def callee_struct_info(self, gv: GlobalVar) -> Optional[StructInfo]:
        name = gv.name_hint
        func = self.functions.get(name)
        if isinstance(func, Function):
            return func.struct_info_
        parser = self.relax.get(name)
        if parser is None:
            return None
        declared = parser.signature_struct_info()
        if declared is not None:
            return declared
        if name in self.in_progress:
            raise self.source.error(
                f"function {name!r} is called recursively but has no return annotation; "
                f"annotate its return StructInfo (def {name}(...) -> R.Tensor(...))",
                parser.node)
        return self._parse_relax(name).struct_info_

    # -- parsing ------------------------------------------------------------------------------
    def _relax_options(self, node: ast.FunctionDef) -> Optional[dict]:
        """The @R.function options of ``node``, or None for other dialects."""
        from tvm.script.relax.entry import function as relax_function

        for dec in node.decorator_list:
            target = dec.func if isinstance(dec, ast.Call) else dec
            if self.evaluator.eval(target) is relax_function:
                if isinstance(dec, ast.Call):
                    if dec.args:
                        raise self.source.error("decorator options must be given by keyword", dec)
                    return self.evaluator.eval_arguments(dec)[1]
                return {}
        return None

    def _parse_relax(self, name: str) -> Function:
        parser = self.relax[name]
        self.in_progress.add(name)
        try:
            func = parser.parse()
        finally:
            self.in_progress.discard(name)
        self.functions[name] = func
        return func

    def parse(self) -> IRModule:
        from tvm.script.relax.parser import RelaxParser

        pending = []
        for d in self.defs:
            options = self._relax_options(d)
            if options is None:
                func = parse_definition(d, self.source, self.env)
                if not isinstance(func, BaseFunc):
                    raise self.source.error(
                        f"{d.name!r} did not parse into a function (got {type(func).__name__})", d)
                self.functions[d.name] = func
            else:
                self.relax[d.name] = RelaxParser(d, self.source, self.env, options, self)
                pending.append(d.name)
        for name in pending:
            if name not in self.functions:
                self._parse_relax(name)
        mod = IRModule({self.gvs[d.name]: self.functions[d.name] for d in self.defs}, self.attrs)
        if self.check_well_formed and any(p.check_well_formed for p in self.relax.values()):
            from tvm.relax.analysis import well_formed_problems

            problems = well_formed_problems(mod)
            if problems:
                raise DiagnosticError(
                    f"the parsed module {self.node.name!r} is not well formed: "
                    + "; ".join(problems), self.source.span(self.node))
        return mod


def parse_ir_module(node: ast.AST, source: Source, env: Sequence[Mapping[str, Any]],
                    options: dict) -> IRModule:
    """Parse an ``@I.ir_module`` class definition into an IRModule."""
    if not isinstance(node, ast.ClassDef):
        raise source.error("@I.ir_module decorates a class definition", node)
    return _ModuleParser(node, source, env, options).parse()
