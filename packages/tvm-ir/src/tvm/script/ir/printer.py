"""TVMScript of a whole :class:`~tvm.ir.IRModule` (``@I.ir_module class Module:``).

The module level knows no dialect: each function prints with the printer its package
registered with :func:`tvm.ir.module.register_script_printer` (``@T.prim_func`` for TIR,
``@R.function`` for Relax), called as ``printer(func, name, ctx)``.  The functions of one
module share a :class:`ScriptContext`: the class name global functions are referenced
through (``cls.name``) and one metadata table, printed after the class when not empty.
Module attributes print as Python values; IR objects among them go to the metadata table.
"""

from __future__ import annotations

import re
from typing import Any, Optional

from tvm.ffi import Object
from tvm.ir.module import IRModule, lookup_script_printer, script_preludes
from tvm.script.parser_core import deep_recursion, python_value

from .metadata import MetadataTable

__all__ = ["ScriptContext", "print_module"]

_MODULE_PRELUDE = "from tvm.script import ir as I"
_ALIAS = re.compile(r"^from \S+ import \S+ as (\w+)$")


class ScriptContext:
    """State shared by the functions of one printed script: the class name global
    functions are referenced through (None for a lone function) and the metadata table."""

    def __init__(self, class_name: Optional[str] = None):
        self.class_name = class_name
        self.metadata = MetadataTable()


def _indent(text: str, prefix: str = "    ") -> str:
    return "\n".join(prefix + line if line.strip() else "" for line in text.split("\n"))


def _alias(prelude: str) -> Optional[str]:
    match = _ALIAS.match(prelude)
    return match.group(1) if match else None


def _attr_value(value: Any, ctx: ScriptContext) -> str:
    text = python_value(value, lambda v: _attr_value(v, ctx))
    if text is not None:
        return text
    if isinstance(value, Object):
        return ctx.metadata.ref(value)
    return repr(value)  # no TVMScript form: shown, but it will not parse back


def print_module(mod: IRModule, name: str = "Module", show_meta: bool = True) -> str:
    """The module as TVMScript; it parses back (``I.parse``) to a structurally equal module
    when every function kind in it has a registered printer. ``show_meta=False`` replaces the
    metadata block (the values of large constants) by a one-line note."""
    ctx = ScriptContext(class_name=name)
    known: set[str] = set()  # preludes of the printers used
    bodies: list[str] = []
    with deep_recursion():
        if mod.attrs:
            bodies.append(f"I.module_attrs({_attr_value(dict(mod.attrs), ctx)})")
        for gv, func in mod.functions.items():
            entry = lookup_script_printer(type(func))
            if entry is None:
                bodies.append(f"# {func._type_key}: no TVMScript printer is registered for "
                              f"{type(func).__name__}\n{gv.name_hint} = {func!r}")
                continue
            printer, prelude = entry
            if prelude:
                known.add(prelude)
            bodies.append(printer(func, gv.name_hint, ctx).rstrip("\n"))
    text = "\n".join(bodies)
    # a printer's text may use another dialect's namespace (Relax prints ``T.int64()``)
    for prelude in script_preludes():
        alias = _alias(prelude)
        if alias and re.search(rf"(?<![\w.]){alias}\.", text):
            known.add(prelude)
    preludes = [_MODULE_PRELUDE, *sorted(known, key=lambda p: (_alias(p) or p, p))]
    head = "".join(f"# {p}\n" for p in preludes)
    body = "\n\n".join(_indent(b) for b in bodies) if bodies else "    pass"
    out = f"{head}\n@I.ir_module\nclass {name}:\n{body}\n"
    if ctx.metadata:
        out += "\n" + ctx.metadata.text(show_meta)
    return out
