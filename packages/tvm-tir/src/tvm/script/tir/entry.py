"""Entry points of the TIR TVMScript parser: ``@T.prim_func`` and ``T.parse(text)``.

``@T.prim_func`` is registered with :func:`tvm.script.parser_core.register_decorator`, so a
module parser (``@I.ir_module``) and :func:`tvm.script.parser_core.from_source` find the TIR
parser from the decorator of a definition.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Mapping, Sequence
from typing import Any, Optional

from tvm.script.parser_core import Source
from tvm.script.parser_core.entry import from_source as _from_source
from tvm.script.parser_core.entry import function_env, in_class_body, register_decorator
from tvm.tir.function import PrimFunc

from .parser import parse_prim_func

__all__ = ["prim_func", "parse"]


def _handler(node: ast.AST, source: Source, env: Sequence[Mapping[str, Any]],
             options: dict) -> PrimFunc:
    unknown = set(options) - {"private", "check_well_formed"}
    if unknown:
        raise source.error(f"unknown @T.prim_func option(s) {sorted(unknown)}; known: private",
                           node)
    return parse_prim_func(node, source, env, bool(options.get("private", False)))


def _decorate(func: Any, private: bool, frame: Any) -> Any:
    if isinstance(func, str):
        return parse(func, private=private)
    if in_class_body(frame):
        # Inside an @I.ir_module class: the module parser parses the method from source.
        func.__tvm_script_dialect__ = ("tir", {"private": private})
        return func
    source = Source.from_object(func)
    module = source.parse()
    node = next((n for n in module.body if isinstance(n, ast.FunctionDef)), None)
    if node is None:
        raise source.error(f"no function definition found in the source of {func!r}")
    return parse_prim_func(node, source, function_env(func, frame), private)


def prim_func(func: Any = None, *, private: bool = False, check_well_formed: bool = True) -> Any:
    """``@T.prim_func`` / ``@T.prim_func(private=True)``: parse a Python function into a
    :class:`~tvm.tir.PrimFunc` (also takes script text)."""
    if func is None:
        return lambda f: _decorate(f, private, sys._getframe(1))
    return _decorate(func, private, sys._getframe(1))


def parse(text: str, env: Optional[Mapping[str, Any]] = None, private: bool = False) -> Any:
    """Parse TVMScript text holding one ``@T.prim_func`` (a bare ``def`` is taken as one).

    ``env`` adds names the text may use; ``private`` applies to a bare ``def``.
    """

    def default(node: ast.AST, source: Source, names: Sequence[Mapping[str, Any]],
                options: dict) -> PrimFunc:
        return parse_prim_func(node, source, names, private)  # type: ignore[arg-type]

    return _from_source(text, env=_with_t(env), default=default)


def _with_t(env: Optional[Mapping[str, Any]]) -> dict:
    import tvm.script.tir as T  # noqa: N812

    names: dict[str, Any] = {"T": T}
    if env:
        names.update(env)
    return names


register_decorator(prim_func, _handler)
