"""``IRModule``: a set of named functions (TIR, Relax, ...) plus module attributes.

Design choice (mutability).  An IRModule is a registered, immutable-by-default Object with two
fields: ``functions`` (``GlobalVar -> BaseFunc``, kept sorted by name so that equality does
not depend on insertion order) and ``attrs``.  Passes build new modules with
:meth:`IRModule.with_function`, :meth:`~IRModule.without_function` and
:meth:`~IRModule.with_attr`.

For familiarity with TVM, ``mod["f"] = func``, :meth:`~IRModule.update_func`,
:meth:`~IRModule.add`, :meth:`~IRModule.remove` and ``del mod["f"]`` also exist.  They change
*that module object* copy-on-write: the module gets a fresh functions map and the old map is
never touched, so earlier snapshots (``mod.functions`` taken before, modules derived from it
with ``with_function``, a pass's input module) keep their content.  Inside passes prefer the
``with_*`` methods.

Printing: ``mod.script()`` is :func:`tvm.script.ir.print_module`, which assembles TVMScript
from the per-function printers that packages register with :func:`register_script_printer`
(TIR registers ``PrimFunc``, Relax registers ``Function``); an unregistered function kind
prints as a commented generic form.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, ItemsView, Iterator
from typing import Any

from tvm.ffi import Object, register_object, register_repr, tree_field

from .base import BaseFunc, FrozenDict, GlobalVar, _check_attrs

__all__ = [
    "IRModule",
    "FunctionNotFoundError",
    "register_script_printer",
    "lookup_script_printer",
    "script_preludes",
    "register_expr_wrapper",
]

# function class -> (printer(func, name, ctx) -> text, prelude import line or None)
_SCRIPT_PRINTERS: dict[type, tuple[Callable[[Any, str, Any], str], str | None]] = {}
# expression class -> function wrapping an expression into a BaseFunc (for from_expr)
_EXPR_WRAPPERS: dict[type, Callable[[Any], BaseFunc]] = {}


def register_script_printer(
    func_type: type, printer: Callable[[Any, str, Any], str], prelude: str | None = None
) -> None:
    """Make ``IRModule.script()`` print ``func_type`` functions (and subclasses) with ``printer``.

    ``printer(func, name, ctx)`` returns the function's TVMScript, decorator and
    ``def name(...)`` included, unindented; ``ctx`` is the
    :class:`tvm.script.ir.ScriptContext` the module's functions share (the class name for
    ``cls.name`` references, the metadata table).  ``prelude`` is the import the text needs,
    e.g. ``"from tvm.script import tir as T"``; the module header lists it as a comment.
    """
    if not isinstance(func_type, type):
        raise TypeError(f"register_script_printer expects a class, got {func_type!r}")
    if not callable(printer):
        raise TypeError("register_script_printer: printer must be callable(func, name, ctx)")
    _SCRIPT_PRINTERS[func_type] = (printer, prelude)


def lookup_script_printer(
    func_type: type,
) -> tuple[Callable[[Any, str, Any], str], str | None] | None:
    """The ``(printer, prelude)`` registered for ``func_type`` (or a base class), or None."""
    return _lookup_by_mro(_SCRIPT_PRINTERS, func_type)


def script_preludes() -> list[str]:
    """The prelude import lines of the registered printers (one each)."""
    return sorted({p for _, p in _SCRIPT_PRINTERS.values() if p})


def register_expr_wrapper(expr_type: type, wrap: Callable[[Any], BaseFunc]) -> None:
    """Teach :meth:`IRModule.from_expr` to wrap a non-function expression into a function."""
    _EXPR_WRAPPERS[expr_type] = wrap


def _lookup_by_mro(table: dict[type, Any], cls: type) -> Any:
    for base in cls.__mro__:
        found = table.get(base)
        if found is not None:
            return found
    return None


class FunctionNotFoundError(KeyError):
    """A function or global variable name that the module does not define."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class _FunctionTable(FrozenDict):
    """A module's ``GlobalVar -> function`` map with an index by name (lookups by name stay
    O(1) in modules of thousands of functions).  :func:`_table` makes checked, sorted ones."""

    __slots__ = ("by_name", "checked")

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.by_name: dict[str, GlobalVar] = {gv.name_hint: gv for gv in self}
        self.checked = False


def _table(by_name: dict[str, tuple[GlobalVar, BaseFunc]]) -> _FunctionTable:
    """The table of checked ``name -> (GlobalVar, function)`` entries, sorted by name."""
    table = _FunctionTable((by_name[n][0], by_name[n][1]) for n in sorted(by_name))
    table.checked = True
    return table


def _check_entry(key: Any, func: Any) -> GlobalVar:
    """The GlobalVar for a ``key -> func`` entry (a name gets a new one); checks both."""
    if isinstance(key, str):
        gv = GlobalVar(key)
    elif isinstance(key, GlobalVar):
        gv = key
    else:
        raise TypeError(
            f"IRModule function keys must be str or GlobalVar, got {type(key).__name__} {key!r}"
        )
    if not isinstance(func, BaseFunc):
        raise TypeError(
            f"IRModule function {gv.name_hint!r} must be a BaseFunc (PrimFunc, relax "
            f"Function, ...), got {type(func).__name__}"
        )
    return gv


def _normalize_functions(functions: Any) -> FrozenDict:
    if isinstance(functions, _FunctionTable) and functions.checked:
        return functions  # checked when it was made, and immutable
    if functions is None:
        return _table({})
    if not isinstance(functions, dict):
        raise TypeError(
            f"IRModule functions must be a dict of name or GlobalVar -> BaseFunc, got "
            f"{type(functions).__name__}"
        )
    by_name: dict[str, tuple[GlobalVar, BaseFunc]] = {}
    for key, func in functions.items():
        gv = _check_entry(key, func)
        if gv.name_hint in by_name:
            raise ValueError(f"IRModule defines the global name {gv.name_hint!r} twice")
        by_name[gv.name_hint] = (gv, func)
    return _table(by_name)


@register_object("ir.IRModule")
class IRModule(Object):
    """``IRModule({"main": func, gv: other}, attrs={"name": "demo"})``.

    Keys may be names or :class:`GlobalVar` objects; names get new global variables.
    """

    functions: dict = tree_field(default=None)
    attrs: dict = tree_field(default=None)

    def __post_init__(self) -> None:
        object.__setattr__(self, "functions", _normalize_functions(self.functions))
        object.__setattr__(self, "attrs", _check_attrs("IRModule", self.attrs))

    # -- construction -------------------------------------------------------------------------
    @staticmethod
    def from_expr(
        expr: Any,
        functions: dict[GlobalVar | str, BaseFunc] | None = None,
        attrs: dict[str, Any] | None = None,
        name: str = "main",
    ) -> IRModule:
        """A module whose ``name`` function is ``expr`` (wrapped into a function if needed)."""
        if not isinstance(expr, BaseFunc):
            wrap = _lookup_by_mro(_EXPR_WRAPPERS, type(expr))
            if wrap is None:
                raise TypeError(
                    f"IRModule.from_expr: cannot make a function of {type(expr).__name__}; "
                    "pass a BaseFunc, or import the package that registers a wrapper for it"
                )
            expr = wrap(expr)
        funcs: dict[GlobalVar | str, BaseFunc] = dict(functions or {})
        funcs[name] = expr
        return IRModule(funcs, attrs)

    # -- lookup -------------------------------------------------------------------------------
    def _find(self, key: GlobalVar | str) -> GlobalVar | None:
        table = self.functions
        if isinstance(key, GlobalVar):
            if key in table:
                return key
            name = key.name_hint
        elif isinstance(key, str):
            name = key
        else:
            raise TypeError(f"IRModule keys are str or GlobalVar, got {type(key).__name__}")
        index = getattr(table, "by_name", None)
        if index is not None:
            return index.get(name)
        for gv in table:  # a map set without IRModule's constructor
            if gv.name_hint == name:
                return gv
        return None

    def _missing(self, key: GlobalVar | str) -> FunctionNotFoundError:
        name = key.name_hint if isinstance(key, GlobalVar) else str(key)
        names = [gv.name_hint for gv in self.functions]
        close = difflib.get_close_matches(name, names, n=3)
        hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        listing = ", ".join(names) if names else "none"
        return FunctionNotFoundError(
            f"IRModule has no function named {name!r}{hint} (functions: {listing})"
        )

    def get_global_var(self, name: str) -> GlobalVar:
        """The GlobalVar named ``name``; FunctionNotFoundError (a KeyError) lists the names."""
        gv = self._find(name)
        if gv is None:
            raise self._missing(name)
        return gv

    def get_global_vars(self) -> list[GlobalVar]:
        """All global variables, sorted by name."""
        return list(self.functions)

    def __getitem__(self, key: GlobalVar | str) -> BaseFunc:
        gv = self._find(key)
        if gv is None:
            raise self._missing(key)
        return self.functions[gv]

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, (str, GlobalVar)):
            return False
        return self._find(key) is not None

    def __iter__(self) -> Iterator[GlobalVar]:
        return iter(self.functions)

    def items(self) -> ItemsView[GlobalVar, BaseFunc]:
        """``(GlobalVar, function)`` pairs sorted by name."""
        return self.functions.items()

    def get_attr(self, key: str, default: Any = None) -> Any:
        return self.attrs.get(key, default)

    # -- functional updates (return new modules) ------------------------------------------
    def _with(self, functions: dict[GlobalVar | str, BaseFunc]) -> _FunctionTable:
        """The functions with ``functions`` added or replaced (existing GlobalVars kept)."""
        by_name = {gv.name_hint: (gv, f) for gv, f in self.functions.items()}
        for key, func in functions.items():
            gv = _check_entry(key, func)
            existing = by_name.get(gv.name_hint)
            if existing is None:
                by_name[gv.name_hint] = (gv, func)
                continue
            if isinstance(key, GlobalVar) and key is not existing[0]:
                raise ValueError(
                    f"IRModule already has a different GlobalVar named {key.name_hint!r}; "
                    "use mod.get_global_var(name) to update it"
                )
            by_name[gv.name_hint] = (existing[0], func)
        return _table(by_name)

    def with_function(self, key: GlobalVar | str, func: BaseFunc) -> IRModule:
        """A new module where ``key`` names ``func`` (the existing GlobalVar is kept)."""
        return IRModule(self._with({key: func}), self.attrs)

    def with_functions(self, functions: dict[GlobalVar | str, BaseFunc]) -> IRModule:
        """A new module with several functions added or replaced."""
        return IRModule(self._with(functions), self.attrs)

    def without_function(self, key: GlobalVar | str) -> IRModule:
        """A new module without ``key``; FunctionNotFoundError if absent."""
        gv = self.get_global_var(key.name_hint if isinstance(key, GlobalVar) else key)
        return IRModule({g: f for g, f in self.functions.items() if g is not gv}, self.attrs)

    def with_attr(self, key: str, value: Any) -> IRModule:
        """A new module with module attribute ``key`` set."""
        return IRModule(self.functions, {**self.attrs, key: value})

    def without_attr(self, key: str) -> IRModule:
        return IRModule(self.functions, {k: v for k, v in self.attrs.items() if k != key})

    def copy(self) -> IRModule:
        """A distinct module object with the same content."""
        return IRModule(self.functions, self.attrs)

    # -- copy-on-write, in-place updates (TVM style) ----------------------------------------
    def _replace_functions(self, funcs: dict[GlobalVar, BaseFunc]) -> None:
        object.__setattr__(self, "functions", _normalize_functions(funcs))

    def __setitem__(self, key: GlobalVar | str, func: BaseFunc) -> None:
        """``mod["f"] = func`` adds or replaces, copy-on-write (see the module docstring)."""
        self._replace_functions(self._with({key: func}))

    def add(self, key: GlobalVar | str, func: BaseFunc, update: bool = False) -> GlobalVar:
        """Add ``func`` in place; returns its GlobalVar.  Existing names need ``update=True``."""
        if not update and self._find(key) is not None:
            name = key.name_hint if isinstance(key, GlobalVar) else key
            raise ValueError(
                f"IRModule already defines {name!r}; use update=True or update_func to replace it"
            )
        self[key] = func
        return self.get_global_var(key.name_hint if isinstance(key, GlobalVar) else key)

    def update_func(self, key: GlobalVar | str, func: BaseFunc) -> None:
        """Replace an existing function in place; FunctionNotFoundError if absent."""
        if self._find(key) is None:
            raise self._missing(key)
        self[key] = func

    def update(self, other: IRModule) -> None:
        """Add or replace every function of ``other`` in place (by name)."""
        funcs = dict(self.functions)
        for gv, func in other.functions.items():
            existing = self._find(gv.name_hint)
            funcs[existing if existing is not None else gv] = func
        self._replace_functions(funcs)

    def remove(self, key: GlobalVar | str) -> None:
        """Remove a function in place; FunctionNotFoundError if absent."""
        gv = self._find(key)
        if gv is None:
            raise self._missing(key)
        self._replace_functions({g: f for g, f in self.functions.items() if g is not gv})

    __delitem__ = remove

    # -- printing -----------------------------------------------------------------------------
    def script(self, name: str = "Module", show_meta: bool = True) -> str:
        """The module as TVMScript (``@I.ir_module class Module: ...``, see
        :func:`tvm.script.ir.print_module`); it parses back. ``show_meta=False`` leaves out
        the metadata block (the values of large constants)."""
        from tvm.script.ir.printer import print_module

        return print_module(self, name, show_meta)

    def show(self, name: str = "Module", show_meta: bool = False) -> None:
        """Print :meth:`script`, without the metadata block unless ``show_meta``."""
        print(self.script(name, show_meta), end="")

    def __str__(self) -> str:
        return self.script(show_meta=False)


register_repr(IRModule, IRModule.__str__)
