"""Entry points shared by the TVMScript dialects.

* Decorators register a handler: ``register_decorator(T.prim_func, handler)``; a handler
  turns one decorated ``ast`` definition into IR.  :func:`parse_definition` finds the handler
  of a definition's decorator, so a module parser (``@I.ir_module``) and
  :func:`from_source` reuse the dialect parsers on methods and on text.
* :func:`function_env` collects the names a decorated Python function can see.
* :func:`in_class_body` tells a decorator it is applied inside a class body, where it should
  leave the method for the class decorator to parse.
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .evaluator import ExprEvaluator, VarTable
from .source import Source
from .vocabulary import NAMESPACES, import_module, module_attribute, vocabulary_modules

__all__ = [
    "register_decorator",
    "lookup_decorator",
    "register_namespace",
    "function_env",
    "in_class_body",
    "parse_definition",
    "from_source",
]

# A handler: (definition node, source, environment, decorator keyword options) -> IR object.
Handler = Callable[[ast.AST, Source, Sequence[Mapping[str, Any]], dict], Any]

_DECORATORS: dict[int, tuple[Any, Handler]] = {}


def register_decorator(decorator: Any, handler: Handler) -> None:
    """Make ``@decorator`` (or ``@decorator(**options)``) parse with ``handler``."""
    _DECORATORS[id(decorator)] = (decorator, handler)


def lookup_decorator(obj: Any) -> Handler | None:
    entry = _DECORATORS.get(id(obj))
    return entry[1] if entry is not None and entry[0] is obj else None


def register_namespace(alias: str, module: str) -> None:
    """Let script text use ``alias`` (e.g. ``T``) for ``module`` without an import line."""
    NAMESPACES[alias] = module


def function_env(func: Any, caller_frame: Any = None) -> list[Mapping[str, Any]]:
    """What ``func``'s body can name: its closure, the caller's locals, its globals."""
    env: list[Mapping[str, Any]] = []
    closure = getattr(func, "__closure__", None)
    if closure:
        cells: dict[str, Any] = {}
        for name, cell in zip(func.__code__.co_freevars, closure):
            try:
                cells[name] = cell.cell_contents
            except ValueError:  # a cell not yet filled
                pass
        env.append(cells)
    if caller_frame is not None and caller_frame.f_locals is not getattr(func, "__globals__", None):
        env.append(dict(caller_frame.f_locals))
    env.append(getattr(func, "__globals__", {}))
    return env


def in_class_body(frame: Any) -> bool:
    """Whether ``frame`` runs a class body (where ``__module__`` and ``__qualname__`` live)."""
    if frame is None or frame.f_code.co_name == "<module>":
        return False
    local = frame.f_locals
    return "__module__" in local and "__qualname__" in local


def parse_definition(
    node: ast.AST, source: Source, env: Sequence[Mapping[str, Any]], default: Handler | None = None
) -> Any:
    """Parse a decorated function or class definition with its decorator's handler.

    ``default`` handles a definition without a registered decorator (``T.parse`` of a bare
    ``def``); without it such a definition is an error.
    """
    evaluator = ExprEvaluator(source, VarTable(env, source.trusted))
    for dec in node.decorator_list:  # type: ignore[attr-defined]
        options: dict[str, Any] = {}
        if isinstance(dec, ast.Call):
            fn = evaluator.eval(dec.func)
            if dec.args:
                raise source.error("decorator options must be given by keyword", dec)
            _, options = evaluator.eval_arguments(dec)
        else:
            fn = evaluator.eval(dec)
        handler = lookup_decorator(fn)
        if handler is not None:
            return handler(node, source, env, options)
    if default is not None:
        return default(node, source, env, {})
    kind = "class" if isinstance(node, ast.ClassDef) else "function"
    name = getattr(node, "name", "?")
    raise source.error(
        f"{kind} {name!r} has no TVMScript decorator (such as @T.prim_func or @I.ir_module)", node
    )


def _default_env(text: str) -> dict[str, Any]:
    env: dict[str, Any] = {}
    for alias, module in NAMESPACES.items():
        if alias + "." in text or "@" + alias in text:
            try:
                env[alias] = importlib.import_module(module)
            except ImportError:
                pass
    return env


def from_source(
    text: str,
    env: Mapping[str, Any] | None = None,
    name: str = "<string>",
    default: Handler | None = None,
) -> Any:
    """Parse TVMScript text: the (last) decorated definition in it, as IR.

    The text is data: it is evaluated under :mod:`.vocabulary`'s rules and never runs Python
    of its own (an import statement may name a TVMScript namespace only, such as
    ``from tvm.script import tir as T``).  ``T``/``I``/``R`` are available without imports.
    Extra names (say, for meta values) come from ``env``: the caller's own values.
    """
    source = Source.from_text(text, name)
    module = source.parse()
    names: dict[str, Any] = _default_env(text)
    if env:
        names.update(env)
    definitions: list[ast.AST] = []
    for stmt in module.body:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            _run_import(stmt, source, names)
        elif isinstance(stmt, (ast.FunctionDef, ast.ClassDef)):
            definitions.append(stmt)
        elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            continue  # a docstring
        else:
            raise source.error(
                "TVMScript text may hold imports and decorated definitions only, "
                f"found {type(stmt).__name__}",
                stmt,
            )
    if not definitions:
        raise source.error("no function or class definition found in the TVMScript text")
    result = None
    for node in definitions:
        try:
            result = parse_definition(node, source, [names], default)
        except RecursionError:
            # a last resort: the evaluator and the dialect parsers report deep nesting at the
            # expression; this catches what an IR constructor or check underneath hit
            raise source.error(f"{getattr(node, 'name', 'the definition')!r} is nested too "
                               "deeply to parse; split deep expressions into named parts",
                               node) from None
    return result


def _run_import(stmt: ast.stmt, source: Source, names: dict[str, Any]) -> None:
    """An import statement of script text: TVMScript namespaces only (nothing else is
    imported, so no module of the text's choosing runs)."""
    try:
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                if not alias.asname:
                    raise ImportError(f"`import {alias.name}` binds a package that is not a "
                                      "TVMScript namespace; use `from tvm.script import tir "
                                      "as T` (or `import ... as NAME`)")
                names[alias.asname] = import_module(alias.name, source.trusted)
        else:
            assert isinstance(stmt, ast.ImportFrom)
            if stmt.level:
                raise ImportError("relative imports are not supported in TVMScript text")
            for alias in stmt.names:
                if alias.name == "*":
                    raise ImportError("`import *` is not supported in TVMScript text")
                if stmt.module in vocabulary_modules():
                    module = import_module(stmt.module, source.trusted)
                    try:
                        value = module_attribute(module, alias.name)
                    except AttributeError:
                        raise ImportError(f"{stmt.module} has no TVMScript name "
                                          f"{alias.name!r}") from None
                else:
                    value = import_module(f"{stmt.module}.{alias.name}", source.trusted)
                names[alias.asname or alias.name] = value
    except ImportError as err:
        raise source.error(f"import failed: {err}", stmt) from None
