"""TVMScript of a whole :class:`~tvm.ir.IRModule` (``@I.ir_module class Module:``).

Relax functions are printed by :class:`tvm.script.relax.printer.FunctionPrinter` sharing one
:class:`~tvm.script.relax.printer.ScriptContext` (global functions as ``cls.name``, one
metadata table); every other function kind by the printer its package registered with
:func:`tvm.ir.module.register_script_printer` (``@T.prim_func`` for TIR).  The metadata block,
when there is one, follows the class.
"""

from __future__ import annotations

from typing import Any

from tvm.ir.module import IRModule, lookup_script_printer
from tvm.relax.expr import Function
from tvm.script.parser_core import deep_recursion

__all__ = ["print_module"]

_PRELUDES = {
    "I": "from tvm.script import ir as I",
    "R": "from tvm.script import relax as R",
    "T": "from tvm.script import tir as T",
}


def _indent(text: str, prefix: str = "    ") -> str:
    return "\n".join(prefix + line if line.strip() else "" for line in text.split("\n"))


def print_module(mod: IRModule, name: str = "Module") -> str:
    """The module as TVMScript; it parses back (``I.parse``) to a structurally equal module."""
    from tvm.script.relax.printer import FunctionPrinter, ScriptContext

    if not any(isinstance(f, Function) for f in mod.functions.values()):
        return mod.default_script(name)  # nothing Relax-specific to print
    ctx = ScriptContext(class_name=name)
    preludes = [_PRELUDES["I"]]
    bodies: list[str] = []
    with deep_recursion():
        if mod.attrs:
            bodies.append(f"I.module_attrs({FunctionPrinter(ctx).value(dict(mod.attrs))})")
            if "T." in bodies[-1]:
                preludes.append(_PRELUDES["T"])
        for gv, func in mod.functions.items():
            if isinstance(func, Function):
                text = FunctionPrinter(ctx).print_function(func, gv.name_hint)
                needed = ["R", "T"] if "T." in text else ["R"]
            else:
                entry = lookup_script_printer(type(func))
                if entry is None:
                    bodies.append(f"# {func._type_key}: no TVMScript printer is registered for "
                                  f"{type(func).__name__}\n{gv.name_hint} = {func!r}")
                    continue
                printer, prelude = entry
                text = printer(func, gv.name_hint)
                needed = []
                if prelude and prelude not in preludes:
                    preludes.append(prelude)
            for alias in needed:
                if _PRELUDES[alias] not in preludes:
                    preludes.append(_PRELUDES[alias])
            bodies.append(text.rstrip("\n"))
    known = list(_PRELUDES.values())
    preludes.sort(key=lambda p: known.index(p) if p in known else len(known))
    head = "".join(f"# {p}\n" for p in preludes)
    body = "\n\n".join(_indent(b) for b in bodies) if bodies else "    pass"
    text = f"{head}\n@I.ir_module\nclass {name}:\n{body}\n"
    if ctx.metadata:
        text += "\n" + ctx.metadata.text()
    return text


def module_script(mod: Any, name: str = "Module") -> str:
    """Entry registered with :func:`tvm.ir.module.register_module_script_printer`."""
    return print_module(mod, name)
