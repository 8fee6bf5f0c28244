"""Entry points of the module parser: ``@I.ir_module`` and ``I.parse(text)``."""

from __future__ import annotations

import ast
import sys
from collections.abc import Mapping, Sequence
from typing import Any, Optional

from tvm.ir.module import IRModule
from tvm.script.parser_core import Source
from tvm.script.parser_core.entry import from_source as _from_source
from tvm.script.parser_core.entry import register_decorator

from .parser import ModuleAttrs, parse_ir_module

__all__ = ["ir_module", "module_attrs", "parse"]


def _handler(node: ast.AST, source: Source, env: Sequence[Mapping[str, Any]],
             options: dict) -> IRModule:
    return parse_ir_module(node, source, env, options)


def _decorate(cls: Any, options: dict, frame: Any) -> IRModule:
    if isinstance(cls, str):
        return parse(cls)
    source = Source.from_object(cls)
    tree = source.parse()
    node = next((n for n in tree.body if isinstance(n, ast.ClassDef)), None)
    if node is None:
        raise source.error(f"no class definition found in the source of {cls!r}")
    env: list[Mapping[str, Any]] = []
    if frame is not None:
        if frame.f_locals is not frame.f_globals:
            env.append(dict(frame.f_locals))
        env.append(frame.f_globals)
    return parse_ir_module(node, source, env, options)


def ir_module(mod: Any = None, *, check_well_formed: bool = True) -> Any:
    """``@I.ir_module`` on a class of ``@R.function`` / ``@T.prim_func`` methods: an
    :class:`~tvm.ir.IRModule` (also takes script text)."""
    options = {"check_well_formed": check_well_formed}
    frame = sys._getframe(1)
    if mod is None:
        return lambda cls: _decorate(cls, options, frame)
    return _decorate(mod, options, frame)


def module_attrs(attrs: dict) -> ModuleAttrs:
    """``I.module_attrs({"name": "demo"})`` in an ``@I.ir_module`` class: module attributes."""
    if not isinstance(attrs, dict) or not all(isinstance(k, str) for k in attrs):
        raise TypeError(f"I.module_attrs takes a dict with str keys, got {attrs!r}")
    return ModuleAttrs(attrs)


def parse(text: str, env: Optional[Mapping[str, Any]] = None) -> Any:
    """Parse TVMScript text holding an ``@I.ir_module`` class (or other decorated
    definitions); ``env`` adds names the text may use."""
    import tvm.script.ir as I  # noqa: N812

    names: dict[str, Any] = {"I": I}
    if env:
        names.update(env)
    return _from_source(text, env=names)


register_decorator(ir_module, _handler)
