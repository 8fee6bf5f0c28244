"""The ``@I.ir_module`` class parser: a class body of decorated functions becomes an IRModule.

The module level knows no dialect.  Each function of the class is parsed by its dialect:

* Every method name is a global function: ``cls.name``, ``Module.name`` (the class name)
  and the bare ``name`` refer to its :class:`~tvm.ir.GlobalVar` inside the class.
* A function whose decorator was registered with
  :func:`tvm.script.parser_core.register_decorator` only (``@T.prim_func``) is parsed first,
  on its own.
* A function whose decorator was registered with :func:`register_module_function` (Relax's
  ``@R.function``) is parsed afterwards, in class order, by a :class:`FunctionParser` its
  dialect made; through the :class:`ModuleContext` it may ask for the functions parsed so far
  and parse another of the module's functions first (to learn a callee's signature).
* ``I.module_attrs({...})`` sets the module's attributes.
* With ``check_well_formed`` (the default) each dialect's module verifier runs on the result.
"""

from __future__ import annotations

import ast
import difflib
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Optional, Protocol

from tvm.ir.base import BaseFunc, GlobalVar
from tvm.ir.diagnostics import DiagnosticError
from tvm.ir.module import IRModule
from tvm.script.parser_core import ExprEvaluator, Source, VarTable, parse_definition

from .metadata import env_with_metadata

__all__ = [
    "ModuleAttrs", "ModuleNamespace", "ModuleContext", "FunctionParser",
    "register_module_function", "parse_ir_module",
]


class FunctionParser(Protocol):
    """A dialect's parser of one function of a module (made before any is parsed)."""

    node: ast.FunctionDef
    check_well_formed: bool

    def parse(self) -> BaseFunc:
        """The parsed function."""


# (node, source, env, decorator options, module) -> the function's parser
ParserFactory = Callable[[ast.FunctionDef, Source, Sequence[Mapping[str, Any]], dict,
                          "ModuleContext"], FunctionParser]
# module -> problems found (empty when well formed)
ModuleVerifier = Callable[[IRModule], Sequence[str]]

_MODULE_FUNCTIONS: dict[int, tuple[Any, ParserFactory, Optional[ModuleVerifier]]] = {}


def register_module_function(decorator: Any, make_parser: ParserFactory,
                             verify: Optional[ModuleVerifier] = None) -> None:
    """Make ``@decorator`` functions in an ``@I.ir_module`` class parse with the parser
    ``make_parser(node, source, env, options, module)`` returns, after the functions of
    other dialects; ``verify(mod)`` lists the problems of the parsed module (well-formedness)."""
    if not callable(make_parser):
        raise TypeError("register_module_function: make_parser must be callable")
    _MODULE_FUNCTIONS[id(decorator)] = (decorator, make_parser, verify)


def _module_function(obj: Any) -> Optional[tuple[ParserFactory, Optional[ModuleVerifier]]]:
    entry = _MODULE_FUNCTIONS.get(id(obj))
    return (entry[1], entry[2]) if entry is not None and entry[0] is obj else None


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


class ModuleContext:
    """One ``@I.ir_module`` class being parsed; what its function parsers may ask."""

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
        evaluator = ExprEvaluator(source, VarTable(env, source.trusted))
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
        self.evaluator = ExprEvaluator(source, VarTable(self.env, source.trusted))
        self.functions: dict[str, BaseFunc] = {}
        self.parsers: dict[str, FunctionParser] = {}  # the functions parsed in the second round
        self._verifiers: dict[int, ModuleVerifier] = {}
        self._in_progress: set[str] = set()
        self._first_round: Optional[IRModule] = None

    # -- what function parsers ask --------------------------------------------------------
    def first_round_module(self) -> IRModule:
        """The functions parsed on their own (PrimFuncs ...), as a module."""
        if self._first_round is None:
            self._first_round = IRModule({self.gvs[n]: f for n, f in self.functions.items()
                                          if n not in self.parsers})
        return self._first_round

    def parser_of(self, name: str) -> Optional[FunctionParser]:
        """The second-round parser of function ``name`` (None for first-round functions)."""
        return self.parsers.get(name)

    def in_progress(self, name: str) -> bool:
        """Whether ``name`` is being parsed now (asking for it again means recursion)."""
        return name in self._in_progress

    def function(self, name: str) -> Optional[BaseFunc]:
        """The parsed function ``name``, parsing it now if it is still pending (None for a
        function being parsed: the caller must do without it)."""
        func = self.functions.get(name)
        if func is not None or name in self._in_progress or name not in self.parsers:
            return func
        return self._parse_second(name)

    # -- parsing ----------------------------------------------------------------------------
    def _module_options(self, node: ast.FunctionDef) -> Optional[tuple[ParserFactory, Any, dict]]:
        """(parser factory, verifier, options) when ``node``'s decorator parses in the second
        round, else None."""
        for dec in node.decorator_list:
            target = dec.func if isinstance(dec, ast.Call) else dec
            found = _module_function(self.evaluator.eval(target))
            if found is None:
                continue
            options: dict = {}
            if isinstance(dec, ast.Call):
                if dec.args:
                    raise self.source.error("decorator options must be given by keyword", dec)
                options = self.evaluator.eval_arguments(dec)[1]
            return found[0], found[1], options
        return None

    def _parse_second(self, name: str) -> BaseFunc:
        parser = self.parsers[name]
        self._in_progress.add(name)
        try:
            func = parser.parse()
        finally:
            self._in_progress.discard(name)
        self._check_function(func, parser.node)
        self.functions[name] = func
        return func

    def _check_function(self, func: Any, node: ast.AST) -> None:
        if not isinstance(func, BaseFunc):
            raise self.source.error(
                f"{getattr(node, 'name', '?')!r} did not parse into a function "
                f"(got {type(func).__name__})", node)

    def parse(self) -> IRModule:
        pending = []
        for d in self.defs:
            found = self._module_options(d)
            if found is None:
                func = parse_definition(d, self.source, self.env)
                self._check_function(func, d)
                self.functions[d.name] = func
            else:
                make_parser, verify, options = found
                self.parsers[d.name] = make_parser(d, self.source, self.env, options, self)
                if verify is not None and self.parsers[d.name].check_well_formed:
                    self._verifiers[id(verify)] = verify
                pending.append(d.name)
        for name in pending:
            if name not in self.functions:
                self._parse_second(name)
        mod = IRModule({self.gvs[d.name]: self.functions[d.name] for d in self.defs}, self.attrs)
        if self.check_well_formed:
            problems = [p for verify in self._verifiers.values() for p in verify(mod)]
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
    return ModuleContext(node, source, env, options).parse()
