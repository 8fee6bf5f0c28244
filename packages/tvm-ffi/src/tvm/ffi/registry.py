"""The global function registry: callables found by a dotted name.

Packages register functions under names such as ``"relax.op.add"`` or
``"runtime.cpu.alloc"``; other packages look them up by name without importing the
provider.  Registering a name twice is an error unless ``override=True``; the error says
where the first registration came from.  All operations are thread-safe.

Example::

    @register_func("demo.add_one")
    def add_one(x):
        return x + 1

    get_global_func("demo.add_one")(1)  # -> 2
"""

from __future__ import annotations

import difflib
import threading
from collections.abc import Callable
from typing import Any, TypeVar, overload

from .error import RegistryError

__all__ = ["register_func", "get_global_func", "list_global_func_names", "remove_global_func"]

_F = TypeVar("_F", bound=Callable[..., Any])

_lock = threading.Lock()
# name -> (function, "module.qualname" of where it came from)
_funcs: dict[str, tuple[Callable[..., Any], str]] = {}


def _origin(f: Callable[..., Any]) -> str:
    module = getattr(f, "__module__", None)
    qualname = getattr(f, "__qualname__", None) or getattr(f, "__name__", None)
    if module and qualname:
        return f"{module}.{qualname}"
    if qualname:
        return str(qualname)
    return repr(f)


def _check_name(name: Any, api: str) -> str:
    if callable(name) and not isinstance(name, str):
        raise TypeError(
            f"{api} needs a name as first argument, got the callable {_origin(name)}; "
            f'use @{api}("my.func.name") or {api}("my.func.name", f)'
        )
    if not isinstance(name, str):
        raise TypeError(f"{api}: function name must be a str, got {type(name).__name__}")
    if not name:
        raise ValueError(f"{api}: function name must be a non-empty string")
    return name


def _missing_error(name: str, known: list[str]) -> RegistryError:
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
    hint = (
        f"; did you mean {', '.join(repr(c) for c in close)}?"
        if close
        else f" ({len(known)} functions registered, none with a similar name)"
    )
    return RegistryError(f"global function {name!r} is not registered{hint}")


@overload
def register_func(name: str, f: None = None, override: bool = False) -> Callable[[_F], _F]: ...


@overload
def register_func(name: str, f: _F, override: bool = False) -> _F: ...


def register_func(name: str, f: Callable[..., Any] | None = None, override: bool = False) -> Any:
    """Register ``f`` as the global function ``name``.

    Used directly (``register_func("a.b", f)``, returns ``f``) or as a decorator
    (``@register_func("a.b")``).  A name already registered raises
    :class:`~tvm.ffi.RegistryError` (naming the first registration) unless ``override``.
    """
    _check_name(name, "register_func")

    def do_register(func: _F) -> _F:
        if not callable(func):
            raise TypeError(
                f"register_func({name!r}): expected a callable, got {type(func).__name__}"
            )
        with _lock:
            previous = _funcs.get(name)
            if previous is not None and not override:
                raise RegistryError(
                    f"global function {name!r} is already registered by {previous[1]}; "
                    f"cannot register {_origin(func)} under the same name "
                    "(pass override=True to replace it)"
                )
            _funcs[name] = (func, _origin(func))
        return func

    if f is None:
        return do_register
    return do_register(f)


def get_global_func(name: str, allow_missing: bool = False) -> Callable[..., Any] | None:
    """The function registered as ``name``.

    A missing name raises :class:`~tvm.ffi.RegistryError` listing close matches, or
    returns ``None`` when ``allow_missing`` is true.
    """
    _check_name(name, "get_global_func")
    with _lock:
        entry = _funcs.get(name)
        if entry is not None:
            return entry[0]
        if allow_missing:
            return None
        known = list(_funcs)
    raise _missing_error(name, known)


def list_global_func_names() -> list[str]:
    """The registered names, sorted."""
    with _lock:
        return sorted(_funcs)


def remove_global_func(name: str) -> None:
    """Remove the function registered as ``name``; a missing name raises RegistryError."""
    _check_name(name, "remove_global_func")
    with _lock:
        if name in _funcs:
            del _funcs[name]
            return
        known = list(_funcs)
    raise _missing_error(name, known)
