"""Checks of field values against the annotations an object class declares its fields with.

:func:`tvm.ffi.from_json` builds nodes without running their constructors (the stored
fields are the node's state), so nothing else would notice a document whose ``tir.Add.a``
holds a string: the node would load and fail much later, deep inside a printer or a pass.
:func:`field_checks` compiles each declared annotation once per class into a
:class:`FieldCheck`, which the reader applies to every decoded field value.

Understood annotations: ``str``, ``int``, ``float`` (ints too), ``bool``, ``None``, any
class (an :class:`~tvm.ffi.Object` subclass, an enum, ...: ``isinstance``), ``Optional`` /
``Union`` / ``X | Y``, ``Literal[...]``, ``tuple`` / ``list`` / ``Sequence`` (loaded as
tuples; ``tuple[X, ...]``, ``tuple[X, Y]`` and ``list[X]`` check the items) and ``dict`` /
``Mapping`` (``dict[K, V]`` checks keys and values).  ``Any``, ``object`` and anything else
(callables, type variables, an annotation that does not resolve) accept every value.
"""

from __future__ import annotations

import collections.abc as cabc
import sys
import threading
import types
import typing
from collections.abc import Callable
from typing import Any

try:
    import numpy as _np

    _INTS: tuple[type, ...] = (int, _np.integer)
    _FLOATS: tuple[type, ...] = (int, float, _np.integer, _np.floating)
    _BOOLS: tuple[type, ...] = (bool, _np.bool_)
except ImportError:  # pragma: no cover
    _INTS, _FLOATS, _BOOLS = (int,), (int, float), (bool,)

__all__ = ["FieldCheck", "field_checks", "describe_value"]

_NONE = type(None)
_SEQUENCES = (tuple, list, cabc.Sequence)
_MAPPINGS = (dict, cabc.Mapping)


class FieldCheck:
    """What one annotation admits: ``test(value)`` says whether ``value`` fits,
    ``expected`` says what fits in words, :meth:`explain` locates a misfit.  When the
    check is a plain ``isinstance``, ``classes`` holds its classes (callers test inline)."""

    __slots__ = ("expected", "test", "classes", "_items")

    def __init__(self, expected: str, test: Callable[[Any], bool],
                 items: Callable[[Any], Any] | None = None,
                 classes: tuple[type, ...] | None = None) -> None:
        self.expected = expected
        self.test = test
        self.classes = classes
        # for containers: value -> (sub-path, check, item) of the first misfit item, or None
        self._items = items

    def explain(self, value: Any) -> tuple[str, str, Any]:
        """``(path below the field, expected, offending value)`` for a value that misfits."""
        if self._items is not None:
            found = self._items(value)
            if found is not None:
                sub, check, item = found
                deeper, expected, bad = check.explain(item)
                return sub + deeper, expected, bad
        return "", self.expected, value


def _isinstance_check(expected: str, classes: Any) -> FieldCheck:
    classes = classes if isinstance(classes, tuple) else (classes,)
    return FieldCheck(expected, lambda v: isinstance(v, classes), classes=classes)


def _union(checks: list[FieldCheck], allow_none: bool) -> FieldCheck:
    expected = " or ".join([c.expected for c in checks] + (["None"] if allow_none else []))
    if all(c.classes is not None for c in checks):
        classes = tuple(k for c in checks for k in c.classes or ()) + (
            (_NONE,) if allow_none else ())
        return FieldCheck(expected, lambda v: isinstance(v, classes), classes=classes)
    tests = tuple(c.test for c in checks)
    if len(tests) == 1 and allow_none:
        only = tests[0]
        return FieldCheck(expected, lambda v: v is None or only(v))
    return FieldCheck(expected, lambda v: (v is None and allow_none) or any(t(v) for t in tests))


def _sequence(args: tuple[Any, ...], origin: Any) -> FieldCheck:
    if not args or (len(args) == 2 and args[1] is Ellipsis and _compile(args[0]) is None):
        return _isinstance_check("a sequence (JSON array)", tuple)
    if len(args) == 2 and args[1] is Ellipsis or origin is not tuple:
        item = _compile(args[0])
        if item is None:
            return _isinstance_check("a sequence (JSON array)", tuple)
        test = item.test

        def first_misfit(v: Any) -> Any:
            for i, x in enumerate(v):
                if not test(x):
                    return f"[{i}]", item, x
            return None

        return FieldCheck(f"a sequence of {item.expected}",
                          lambda v: isinstance(v, tuple) and all(test(x) for x in v),
                          lambda v: first_misfit(v) if isinstance(v, tuple) else None)
    if args == ((),):  # tuple[()]
        return FieldCheck("an empty sequence", lambda v: v == ())
    items = [_compile(a) for a in args]
    n = len(items)

    def fits(v: Any) -> bool:
        return isinstance(v, tuple) and len(v) == n and all(
            c is None or c.test(x) for c, x in zip(items, v))

    def misfit(v: Any) -> Any:
        if not isinstance(v, tuple) or len(v) != n:
            return None
        for i, (c, x) in enumerate(zip(items, v)):
            if c is not None and not c.test(x):
                return f"[{i}]", c, x
        return None

    names = ", ".join("any value" if c is None else c.expected for c in items)
    return FieldCheck(f"a sequence of {n} ({names})", fits, misfit)


def _mapping(args: tuple[Any, ...]) -> FieldCheck:
    key = _compile(args[0]) if args else None
    value = _compile(args[1]) if len(args) > 1 else None
    if key is None and value is None:
        return _isinstance_check("a dict", dict)
    key_test = key.test if key is not None else (lambda k: True)
    value_test = value.test if value is not None else (lambda x: True)

    def misfit(v: Any) -> Any:
        if not isinstance(v, dict):
            return None
        for k, x in v.items():
            if key is not None and not key_test(k):
                return f".keys()[{k!r}]", key, k
            if value is not None and not value_test(x):
                return f"[{k!r}]", value, x
        return None

    names = (key.expected if key else "any key", value.expected if value else "any value")
    return FieldCheck(
        f"a dict of {names[0]} to {names[1]}",
        lambda v: isinstance(v, dict) and all(key_test(k) and value_test(x)
                                              for k, x in v.items()),
        misfit)


def _compile(ann: Any) -> FieldCheck | None:
    """The check of annotation ``ann``, or ``None`` when it admits any value."""
    if ann is Any or ann is object:
        return None
    if ann is None or ann is _NONE:
        return _isinstance_check("None", _NONE)
    origin = typing.get_origin(ann)
    args = typing.get_args(ann)
    if origin is typing.Union or origin is types.UnionType:
        allow_none = _NONE in args
        checks = [_compile(a) for a in args if a is not _NONE]
        if any(c is None for c in checks):
            return None
        return _union([c for c in checks if c is not None], allow_none)
    if origin is typing.Literal:
        allowed = args
        return FieldCheck(" or ".join(repr(a) for a in allowed),
                          lambda v: any(v == a and type(v) is type(a) for a in allowed))
    if origin is typing.Annotated:
        return _compile(args[0])
    if ann in _SEQUENCES or origin in _SEQUENCES:
        return _sequence(args, origin)
    if ann in _MAPPINGS or origin in _MAPPINGS:
        return _mapping(args)
    if ann is bool:
        return _isinstance_check("a bool", _BOOLS)
    if ann is int:
        return _isinstance_check("an int", _INTS)
    if ann is float:
        return _isinstance_check("a number", _FLOATS)
    if ann is str:
        return _isinstance_check("a str", str)
    if isinstance(ann, type) and origin is None:
        key = getattr(ann, "_type_key", None)
        what = f"{key} node" if key is not None else ann.__qualname__
        return _isinstance_check(_article(what), ann)
    return None


def _article(what: str) -> str:
    return f"{'an' if what[:1].lower() in 'aeiou' else 'a'} {what}"


def _annotations(cls: type) -> dict[str, Any]:
    """The resolved annotation of every field of ``cls`` (a string that names nothing
    resolvable maps to ``Any``)."""
    try:
        return typing.get_type_hints(cls)
    except Exception:  # an unresolvable name in one annotation: resolve field by field
        pass
    hints: dict[str, Any] = {}
    for klass in reversed(cls.__mro__):
        module = sys.modules.get(klass.__module__)
        namespace = dict(vars(module)) if module is not None else {}
        for name, ann in klass.__dict__.get("__annotations__", {}).items():
            if isinstance(ann, str):
                try:
                    ann = eval(ann, namespace, dict(vars(klass)))  # noqa: S307 - own source
                except Exception:
                    ann = Any
            hints[name] = ann
    return hints


_lock = threading.Lock()
_CACHE: dict[type, tuple[tuple[str, FieldCheck], ...]] = {}


def field_checks(cls: type) -> tuple[tuple[str, FieldCheck], ...]:
    """``(field name, check)`` for each declared field of object class ``cls`` whose
    annotation restricts its value; compiled once per class."""
    found = _CACHE.get(cls)
    if found is not None:
        return found
    with _lock:
        found = _CACHE.get(cls)
        if found is None:
            hints = _annotations(cls)
            compiled = []
            for info in cls._field_infos:
                check = _compile(hints.get(info.name, Any))
                if check is not None:
                    compiled.append((info.name, check))
            found = _CACHE[cls] = tuple(compiled)
    return found


def describe_value(value: Any, limit: int = 60) -> str:
    """A short description of ``value`` for error messages: its type and a brief repr."""
    key = getattr(type(value), "_type_key", None)
    if key is not None:
        return _article(f"{key} node")
    if value is None:
        return "None"
    text = repr(value)
    if len(text) > limit:
        text = text[:limit] + "..."
    return f"{type(value).__name__} {text}"
