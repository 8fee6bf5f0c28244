"""Printer utilities shared by the TVMScript printers.

* :class:`NameTable` gives IR objects (variables, buffers) unique, valid Python names
  derived from their name hints (``i``, ``i_1``, ``A_data``);
* :class:`DocBuilder` collects indented lines;
* literal helpers (:func:`str_literal`, :func:`float_literal`, :func:`python_value`) and
  Python operator precedences (:data:`PREC`) with :func:`wrap` to parenthesise a
  sub-expression.
"""

from __future__ import annotations

import keyword
import math
import re
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, Optional

from tvm.ffi import Object
from tvm.ffi.structural import deep_recursion

__all__ = ["NameTable", "DocBuilder", "sanitize_name", "str_literal", "float_literal",
           "python_value", "PREC", "wrap", "deep_recursion"]

_NOT_IDENT = re.compile(r"\W")
_SUFFIX = re.compile(r"^(.*?)_(\d+)$")


def sanitize_name(hint: str, default: str = "v") -> str:
    """A valid Python identifier close to ``hint`` (``threadIdx.x`` -> ``threadIdx_x``)."""
    name = _NOT_IDENT.sub("_", hint or "") or default
    if name[0].isdigit():
        name = f"{default}_{name}"
    if keyword.iskeyword(name) or keyword.issoftkeyword(name):
        name += "_"
    return name


class NameTable:
    """Assigns each object one unique Python name for the whole printed text.

    Objects are keyed by identity; ``reserved`` names (``T``, ``I``, builtins the script
    uses) are never handed out.
    """

    def __init__(self, reserved: Iterable[str] = ()):
        self._used: set[str] = set(reserved)
        self._names: dict[int, str] = {}
        self._alive: list[Any] = []  # keeps keyed objects alive so that ids stay unique

    def get(self, obj: Any) -> str | None:
        return self._names.get(id(obj))

    def __contains__(self, obj: Any) -> bool:
        return id(obj) in self._names

    def fresh(self, hint: str, default: str = "v") -> str:
        """A new unique name, not tied to an object."""
        base = sanitize_name(hint, default)
        if base not in self._used:
            self._used.add(base)
            return base
        match = _SUFFIX.match(base)
        stem, n = (match.group(1), int(match.group(2))) if match else (base, 0)
        while True:
            n += 1
            candidate = f"{stem}_{n}"
            if candidate not in self._used:
                self._used.add(candidate)
                return candidate

    def define(self, obj: Any, hint: str, default: str = "v") -> str:
        """Name ``obj`` (a new unique name derived from ``hint``)."""
        name = self.fresh(hint, default)
        self._names[id(obj)] = name
        self._alive.append(obj)
        return name

    def alias(self, obj: Any, text: str) -> None:
        """Name ``obj`` by an expression text such as ``A.data`` (not reserved as a name)."""
        self._names[id(obj)] = text
        self._alive.append(obj)


class DocBuilder:
    """Lines of text at an indentation depth."""

    def __init__(self, indent: str = "    ", depth: int = 0):
        self.lines: list[str] = []
        self.unit = indent
        self.depth = depth

    def line(self, text: str) -> None:
        self.lines.append(self.unit * self.depth + text)

    def extend(self, lines: Iterable[str]) -> None:
        self.lines.extend(lines)

    @contextmanager
    def indent(self) -> Iterator[None]:
        self.depth += 1
        try:
            yield
        finally:
            self.depth -= 1

    def text(self) -> str:
        return "\n".join(self.lines) + ("\n" if self.lines else "")

    def __len__(self) -> int:
        return len(self.lines)


def str_literal(value: str) -> str:
    """A double-quoted Python string literal for ``value``."""
    out = ['"']
    for ch in value:
        if ch == '"' or ch == "\\":
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif ord(ch) < 32 or ord(ch) == 127:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def float_literal(value: float) -> str:
    """A literal that reads back as exactly ``value``: ``1.5``, ``"inf"``, ``"nan"``."""
    if math.isnan(value):
        return '"nan"'
    if math.isinf(value):
        return '"inf"' if value > 0 else '"-inf"'
    return repr(float(value))


def python_value(v: Any, item: Callable[[Any], str]) -> Optional[str]:
    """Source text of a plain Python value (None, bool, int, float, str, or a list, tuple or
    dict whose items ``item`` prints), or None when ``v`` is something else (an IR node)."""
    if v is None or isinstance(v, bool):
        return repr(v)
    if isinstance(v, int) and not isinstance(v, Object):
        return repr(int(v))
    if isinstance(v, float):
        text = float_literal(v)
        return f"float({text})" if text.startswith('"') else text
    if isinstance(v, str):
        return str_literal(v)
    if isinstance(v, list):
        return "[" + ", ".join(item(x) for x in v) + "]"
    if isinstance(v, tuple):
        inner = ", ".join(item(x) for x in v)
        return f"({inner},)" if len(v) == 1 else f"({inner})"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{item(k)}: {item(x)}" for k, x in v.items()) + "}"
    return None


# Python operator precedences, loosest first.
PREC = {
    "lambda": 0, "ifexp": 1, "or": 2, "and": 3, "not": 4, "compare": 5, "|": 6, "^": 7,
    "&": 8, "shift": 9, "+": 10, "*": 11, "unary": 12, "**": 13, "atom": 16,
}


def wrap(text: str, prec: int, need: int) -> str:
    """``text`` parenthesised when its precedence ``prec`` is below ``need``."""
    return f"({text})" if prec < need else text
