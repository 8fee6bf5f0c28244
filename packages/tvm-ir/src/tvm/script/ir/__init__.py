"""TVMScript for modules: ``from tvm.script import ir as I``.

``@I.ir_module`` turns a class whose methods are decorated functions of any dialect
(``@T.prim_func`` from tvm-tir, ``@R.function`` from tvm-relax, a vendor's) into a
:class:`tvm.ir.IRModule`; inside it, functions call each other by name or as ``cls.name``.
``I.module_attrs({...})`` sets module attributes, ``I.parse(text)`` parses script text and
``mod.script()`` / ``mod.show()`` print a module back (:func:`print_module`).

Dialects plug in without this module naming them: a function printer registered with
:func:`tvm.ir.module.register_script_printer`, a decorator registered with
:func:`tvm.script.parser_core.register_decorator` (functions parsed on their own) or with
:func:`register_module_function` (functions parsed with the module as context).
"""

from tvm.ir.base import GlobalVar

from .entry import ir_module, module_attrs, parse
from .parser import FunctionParser, ModuleContext, register_module_function
from .printer import ScriptContext, print_module

__all__ = [
    "ir_module", "module_attrs", "parse", "print_module", "GlobalVar", "ScriptContext",
    "ModuleContext", "FunctionParser", "register_module_function",
]
