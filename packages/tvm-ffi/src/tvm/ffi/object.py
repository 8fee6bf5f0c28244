"""The object base for IR nodes: declared, typed, immutable fields with a type key.

An IR node class lists its fields with type annotations at class level and is decorated
with :func:`register_object`.  The decorator turns it into a frozen, slotted dataclass and
records, per field, how the field takes part in structural equality:

* ``tree`` (the default): compared and hashed recursively;
* ``def``: the field *binds* variables (function parameters, loop variables, let-bound
  variables); variables found there are compared by binding position, not identity;
* ``ignore``: not compared at all (source spans, name hints).

Equality, hashing, JSON serialisation and generic rewriting all follow from that one
declaration, so adding a node kind is adding a class.

A class whose instances are *variables* sets ``_is_var = True``: a variable compares by
identity unless it was bound by a ``def`` field (or free-variable mapping is requested).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from typing import Any, ClassVar, TypeVar

__all__ = [
    "Object",
    "FieldInfo",
    "register_object",
    "tree_field",
    "def_field",
    "ignore_field",
    "get_object_type",
    "list_object_types",
    "object_fields",
    "register_repr",
]

_T = TypeVar("_T")

# type key -> class, for deserialisation and introspection.
_TYPE_REGISTRY: dict[str, type] = {}

_FIELD_KIND_KEY = "tvm.sequal"


@dataclasses.dataclass(frozen=True)
class FieldInfo:
    """Reflection of one declared field: its name, annotation and equality kind."""

    name: str
    annotation: Any
    kind: str  # "tree" | "def" | "ignore"


def tree_field(**kwargs: Any) -> Any:
    """A field compared structurally (the default; use it to pass dataclass options)."""
    return _field("tree", kwargs)


def def_field(**kwargs: Any) -> Any:
    """A field that binds the variables it holds (parameters, loop and let variables)."""
    return _field("def", kwargs)


def ignore_field(**kwargs: Any) -> Any:
    """A field that structural equality and hashing ignore (spans, name hints)."""
    return _field("ignore", kwargs)


def _field(kind: str, kwargs: dict[str, Any]) -> Any:
    metadata = dict(kwargs.pop("metadata", {}) or {})
    metadata[_FIELD_KIND_KEY] = kind
    return dataclasses.field(metadata=metadata, **kwargs)


class Object:
    """Base of every IR node.

    Instances are immutable; ``==`` and ``hash`` are by identity (use
    :func:`tvm.ffi.structural_equal` for structure).  Use :meth:`with_fields` to derive a
    changed copy; it returns ``self`` when nothing changes, which mutators rely on.
    """

    __slots__ = ()

    _type_key: ClassVar[str] = "Object"
    _field_infos: ClassVar[tuple[FieldInfo, ...]] = ()
    # (name, binds variables) of the fields structural equality and hashing visit.
    _compared_fields: ClassVar[tuple[tuple[str, bool], ...]] = ()
    _is_var: ClassVar[bool] = False
    _has_custom_init: ClassVar[bool] = False

    @property
    def type_key(self) -> str:
        """The registered type key, e.g. ``"tir.Add"``."""
        return self._type_key

    def same_as(self, other: object) -> bool:
        """Identity comparison, named as in TVM."""
        return self is other

    def __post_init__(self) -> None:
        # Sequences are stored as tuples so that a node cannot change after construction.
        for info in self._field_infos:
            value = getattr(self, info.name)
            frozen = _freeze_seq(value)
            if frozen is not value:
                object.__setattr__(self, info.name, frozen)

    def with_fields(self: _T, **changes: Any) -> _T:
        """A copy with some fields replaced, or ``self`` if every new value is the old one."""
        unknown = set(changes) - {info.name for info in self._field_infos}
        if unknown:
            raise TypeError(f"{self._type_key} has no field(s) {sorted(unknown)}")
        if all(getattr(self, k) is v for k, v in changes.items()):
            return self
        # A raw field copy: constructors may take other arguments than the fields.
        new = object.__new__(type(self))
        for info in self._field_infos:
            value = changes[info.name] if info.name in changes else getattr(self, info.name)
            object.__setattr__(new, info.name, _freeze_seq(value))
        return new

    def iter_fields(self) -> Iterator[tuple[FieldInfo, Any]]:
        """Each declared field with its value, in declaration order."""
        for info in self._field_infos:
            yield info, getattr(self, info.name)

    def __repr__(self) -> str:
        printer = _REPR_HOOKS.get(type(self))
        if printer is None:
            for base in type(self).__mro__[1:]:
                printer = _REPR_HOOKS.get(base)
                if printer is not None:
                    break
        if printer is not None:
            return printer(self)
        return generic_repr(self)

    # Objects are plain values for copy/deepcopy purposes: they are immutable.
    def __copy__(self: _T) -> _T:
        return self

    def __deepcopy__(self: _T, memo: dict) -> _T:
        return self

    def __reduce__(self) -> Any:
        raise TypeError(
            f"{self._type_key} objects are not picklable; use tvm.ffi.to_json / from_json"
        )


def _freeze_seq(value: Any) -> Any:
    """``value`` with every list, also inside lists and tuples, turned into a tuple."""
    if type(value) is list:
        return tuple(_freeze_seq(v) for v in value)
    if type(value) is tuple and value:
        items = tuple(_freeze_seq(v) for v in value)
        if any(new is not old for new, old in zip(items, value)):
            return items
    return value


# class -> function printing an instance; filled by packages that own a printer.
_REPR_HOOKS: dict[type, Callable[[Any], str]] = {}


def register_repr(cls: type, printer: Callable[[Any], str]) -> None:
    """Make ``repr`` of ``cls`` (and subclasses) use ``printer`` (e.g. TVMScript)."""
    _REPR_HOOKS[cls] = printer


def generic_repr(obj: Object, depth: int = 2) -> str:
    """``type_key(field=value, ...)``, shortened below ``depth`` levels."""
    parts = []
    for info, value in obj.iter_fields():
        if info.kind == "ignore" and value is None:
            continue
        parts.append(f"{info.name}={_short(value, depth - 1)}")
    return f"{obj._type_key}({', '.join(parts)})"


def _short(value: Any, depth: int) -> str:
    if isinstance(value, Object):
        if depth <= 0:
            return f"{value._type_key}(...)"
        return generic_repr(value, depth)
    if isinstance(value, (list, tuple)):
        if depth <= 0 and value:
            return "[...]"
        return "[" + ", ".join(_short(v, depth - 1) for v in value) + "]"
    return repr(value)


def register_object(type_key: str | type | None = None) -> Any:
    """Class decorator declaring an IR node kind.

    ``@register_object("tir.Add")`` registers a concrete node under its type key;
    ``@register_object()`` (no key) declares an abstract base that carries fields for its
    subclasses but is not itself serialisable.
    """
    if isinstance(type_key, type):
        return register_object(None)(type_key)

    def wrap(cls: type) -> type:
        if "__slots__" in cls.__dict__:
            raise TypeError(f"{cls.__name__}: declare fields as annotations, not __slots__")
        # A constructor written in a class body is kept, also for its subclasses: the
        # generated one would take raw fields instead of the friendly arguments.
        own_init = "__init__" in cls.__dict__
        inherited_init = any(b.__dict__.get("_has_custom_init", False) for b in cls.__mro__[1:])
        new_cls = dataclasses.dataclass(
            frozen=True, slots=True, eq=False, repr=False, init=not (own_init or inherited_init)
        )(cls)
        if own_init:
            new_cls._has_custom_init = True
        _fix_class_cells(cls, new_cls)
        infos = []
        for f in dataclasses.fields(new_cls):
            kind = f.metadata.get(_FIELD_KIND_KEY, "tree")
            infos.append(FieldInfo(f.name, f.type, kind))
        new_cls._field_infos = tuple(infos)
        new_cls._compared_fields = tuple(
            (info.name, info.kind == "def") for info in infos if info.kind != "ignore"
        )
        if type_key is not None:
            previous = _TYPE_REGISTRY.get(type_key)
            # Re-registering the same class (a module reload) replaces it; another class clashes.
            if previous is not None and _class_name(previous) != _class_name(cls):
                raise ValueError(
                    f"type key {type_key!r} of {_class_name(cls)} is already registered "
                    f"by {_class_name(previous)}"
                )
            new_cls._type_key = type_key
            _TYPE_REGISTRY[type_key] = new_cls
        else:
            # An abstract base is named by its own class, never by an inherited key.
            new_cls._type_key = cls.__dict__.get("_type_key", cls.__name__)
        return new_cls

    return wrap


def _class_name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _fix_class_cells(old: type, new: type) -> None:
    """Point zero-argument ``super()`` in methods at the slotted class dataclass made.

    ``dataclass(slots=True)`` returns a new class, but methods keep a ``__class__`` cell
    naming the original one, which would break ``super()`` calls.
    """
    for member in new.__dict__.values():
        if isinstance(member, (staticmethod, classmethod)):
            member = member.__func__
        elif isinstance(member, property):
            for fn in (member.fget, member.fset, member.fdel):
                _fix_function_cells(fn, old, new)
            continue
        _fix_function_cells(member, old, new)


def _fix_function_cells(fn: Any, old: type, new: type) -> None:
    closure = getattr(fn, "__closure__", None)
    if not closure:
        return
    for cell in closure:
        try:
            if cell.cell_contents is old:
                cell.cell_contents = new
        except ValueError:  # empty cell
            pass


def get_object_type(type_key: str) -> type:
    """The class registered under ``type_key``; a clear error names close matches."""
    try:
        return _TYPE_REGISTRY[type_key]
    except KeyError:
        import difflib

        close = difflib.get_close_matches(type_key, list(_TYPE_REGISTRY), n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise KeyError(
            f"unknown object type key {type_key!r}{hint} "
            "(is the package that defines it installed and imported?)"
        ) from None


def list_object_types() -> list[str]:
    """All registered type keys, sorted."""
    return sorted(_TYPE_REGISTRY)


def object_fields(obj_or_cls: Any) -> tuple[FieldInfo, ...]:
    """Reflection: the declared fields of an object or class."""
    return obj_or_cls._field_infos
