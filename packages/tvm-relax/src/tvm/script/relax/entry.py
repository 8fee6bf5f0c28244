"""Entry points of the Relax TVMScript parser: ``@R.function`` and ``R.parse(text)``.

``@R.function`` is registered with :func:`tvm.script.parser_core.register_decorator`, so
``@I.ir_module`` and :func:`tvm.script.parser_core.from_source` find the Relax parser from
a definition's decorator.  Inside an ``@I.ir_module`` class body the decorator leaves the
method alone: the module parser parses it with the other functions of the class.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Mapping, Sequence
from typing import Any, Optional

from tvm.relax.expr import Function
from tvm.script.ir.metadata import env_with_metadata
from tvm.script.parser_core import Source
from tvm.script.parser_core.entry import from_source as _from_source
from tvm.script.parser_core.entry import function_env, in_class_body, register_decorator

from .parser import parse_function

__all__ = ["function", "parse"]

_OPTIONS = ("private", "pure", "check_well_formed")


def _handler(node: ast.AST, source: Source, env: Sequence[Mapping[str, Any]],
             options: dict) -> Function:
    if not isinstance(node, ast.FunctionDef):
        raise source.error("@R.function decorates a function definition", node)
    return parse_function(node, source, env_with_metadata(source, env), options)


def _decorate(func: Any, options: dict, frame: Any) -> Any:
    if isinstance(func, str):
        return parse(func)
    if in_class_body(frame):
        func.__tvm_script_dialect__ = ("relax", dict(options))
        return func
    source = Source.from_object(func)
    module = source.parse()
    node = next((n for n in module.body if isinstance(n, ast.FunctionDef)), None)
    if node is None:
        raise source.error(f"no function definition found in the source of {func!r}")
    env = env_with_metadata(source, function_env(func, frame))
    return parse_function(node, source, env, options)


def function(
    func: Any = None,
    *,
    private: bool = False,
    pure: bool = True,
    check_well_formed: bool = True,
) -> Any:
    """``@R.function`` / ``@R.function(private=True, pure=False)``: parse a Python function
    into a :class:`tvm.relax.Function` (also takes script text)."""
    options = {"private": private, "pure": pure, "check_well_formed": check_well_formed}
    frame = sys._getframe(1)
    if func is None:
        return lambda f: _decorate(f, options, frame)
    return _decorate(func, options, frame)


def parse(text: str, env: Optional[Mapping[str, Any]] = None) -> Any:
    """Parse TVMScript text holding an ``@R.function`` (a bare ``def`` is taken as one) or an
    ``@I.ir_module`` class; ``env`` adds names the text may use."""

    def default(node: ast.AST, source: Source, names: Sequence[Mapping[str, Any]],
                options: dict) -> Function:
        return _handler(node, source, names, options)

    import tvm.script.relax as R  # noqa: N812

    names: dict[str, Any] = {"R": R}
    if env:
        names.update(env)
    return _from_source(text, env=names, default=default)


register_decorator(function, _handler)
