"""Lazy package attributes: names imported from their submodule on first use.

A package whose ``__init__`` must stay cheap (a target plugin's package is imported by the
plugin host before anything is compiled) lists where each public name lives and lets this
module write its ``__getattr__`` and ``__dir__``::

    from tvm.ffi.lazy import lazy_exports

    _EXPORTS = {"build": ".build", "CModule": ".module"}
    __all__ = list(_EXPORTS)
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

``submodules`` names submodules that are themselves the attribute (``relax.transform``).
A name is imported once: the value is stored in the package's globals, so later lookups do
not reach ``__getattr__``.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    module_name: str, exports: Mapping[str, str], submodules: Iterable[str] = ()
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for package ``module_name``.

    ``exports`` maps each lazy name to the module (relative like ``".build"``, or absolute)
    that defines it; ``submodules`` are names of submodules imported on first use.
    """
    table = dict(exports)
    subs = frozenset(submodules)
    both = subs & set(table)
    if both:
        raise ValueError(f"{module_name}: {sorted(both)} are listed both as names and submodules")

    def __getattr__(name: str) -> Any:  # noqa: N807 - the module protocol's name
        if name in subs:
            value = importlib.import_module(f"{module_name}.{name}")
        elif name in table:
            value = getattr(importlib.import_module(table[name], module_name), name)
        else:
            raise AttributeError(f"module {module_name!r} has no attribute {name!r}")
        vars(sys.modules[module_name])[name] = value
        return value

    def __dir__() -> list[str]:  # noqa: N807
        return sorted(set(vars(sys.modules[module_name])) | set(table) | subs)

    return __getattr__, __dir__
