"""Entry points of the Relax TVMScript parser: ``@R.function`` and ``R.parse(text)``.

``@R.function`` is registered with :func:`tvm.script.parser_core.register_decorator`, so
:func:`tvm.script.parser_core.from_source` finds the Relax parser from a definition's
decorator, and with :func:`tvm.script.ir.register_module_function`, so ``@I.ir_module``
parses Relax functions after the PrimFuncs of the class, with the module as context (a call
of another function of the class takes the callee's signature).  Inside an ``@I.ir_module``
class body the decorator leaves the method alone: the module parser parses it.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Mapping, Sequence
from typing import Any, Optional

from tvm.ir.base import GlobalVar
from tvm.ir.module import IRModule
from tvm.relax.expr import Function
from tvm.relax.struct_info import StructInfo
from tvm.script.ir.metadata import env_with_metadata
from tvm.script.ir.parser import ModuleContext, register_module_function
from tvm.script.parser_core import Source
from tvm.script.parser_core.entry import from_source as _from_source
from tvm.script.parser_core.entry import function_env, in_class_body, register_decorator

from .parser import RelaxParser, parse_function

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


class _RelaxModule:
    """What a :class:`RelaxParser` asks the ``@I.ir_module`` class it is parsed in."""

    def __init__(self, module: ModuleContext):
        self.module = module

    def builder_module(self) -> IRModule:
        return self.module.first_round_module()

    def callee_struct_info(self, gv: GlobalVar) -> Optional[StructInfo]:
        name = gv.name_hint
        func = self.module.functions.get(name)
        if isinstance(func, Function):
            return func.struct_info_
        parser = self.module.parser_of(name)
        if not isinstance(parser, RelaxParser):
            return None
        declared = parser.signature_struct_info()
        if declared is not None:
            return declared
        if self.module.in_progress(name):
            raise self.module.source.error(
                f"function {name!r} is called recursively but has no return annotation; "
                f"annotate its return StructInfo (def {name}(...) -> R.Tensor(...))",
                parser.node)
        return self.module.function(name).struct_info_


def _module_parser(node: ast.FunctionDef, source: Source, env: Sequence[Mapping[str, Any]],
                   options: dict, module: ModuleContext) -> RelaxParser:
    return RelaxParser(node, source, env, options, _RelaxModule(module))


def _verify_module(mod: IRModule) -> list[str]:
    from tvm.relax.analysis import well_formed_problems

    return well_formed_problems(mod)


register_decorator(function, _handler)
register_module_function(function, _module_parser, _verify_module)
