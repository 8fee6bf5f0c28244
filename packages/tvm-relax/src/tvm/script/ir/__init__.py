"""TVMScript for modules: ``from tvm.script import ir as I``.

``@I.ir_module`` turns a class whose methods are ``@R.function`` (Relax) and
``@T.prim_func`` (TIR) definitions into a :class:`tvm.ir.IRModule`; inside it, functions
call each other by name or as ``cls.name``.  ``I.module_attrs({...})`` sets module
attributes, ``I.parse(text)`` parses script text and ``mod.script()`` / ``mod.show()``
print a module back.
"""

from tvm.ir.base import GlobalVar

from .entry import ir_module, module_attrs, parse
from .printer import print_module

__all__ = ["ir_module", "module_attrs", "parse", "print_module", "GlobalVar"]
