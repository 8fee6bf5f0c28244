"""``BaseFunc`` and ``GlobalVar``: what an :class:`~tvm.ir.IRModule` holds and names."""

from __future__ import annotations

from typing import Any, NoReturn

from tvm.ffi import Object, register_object, tree_field

__all__ = ["BaseFunc", "GlobalVar", "FrozenDict"]


class FrozenDict(dict):
    """A ``dict`` that refuses in-place changes (IR objects hold these for their maps).

    It is still a ``dict`` for structural equality and JSON; ``dict(d)`` or ``d.copy()``
    gives an ordinary, mutable copy.
    """

    __slots__ = ()

    def _readonly(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise TypeError(
            "this mapping belongs to an immutable IR object; build a new object instead "
            "(e.g. func.with_attr(key, value) or mod.with_function(name, func))"
        )

    __setitem__ = __delitem__ = __ior__ = _readonly
    clear = pop = popitem = setdefault = update = _readonly  # type: ignore[assignment]

    def copy(self) -> dict:  # type: ignore[override]
        return dict(self)

    def __repr__(self) -> str:
        return dict.__repr__(self)


def _check_attrs(owner: str, attrs: Any) -> FrozenDict:
    if attrs is None:
        return FrozenDict()
    if not isinstance(attrs, dict):
        raise TypeError(f"{owner}.attrs must be a dict with str keys, got {type(attrs).__name__}")
    for key in attrs:
        if not isinstance(key, str):
            raise TypeError(f"{owner}.attrs keys must be str, got {type(key).__name__} {key!r}")
    return attrs if isinstance(attrs, FrozenDict) else FrozenDict(attrs)


@register_object()
class BaseFunc(Object):
    """Base of every function kind an IRModule can hold (TIR PrimFunc, Relax Function, ...).

    ``attrs`` is a keyword-only ``dict[str, Any]`` field (e.g. ``{"global_symbol": "main"}``).
    Subclasses that define ``__post_init__`` must call ``BaseFunc.__post_init__(self)``.
    """

    _type_key = "ir.BaseFunc"

    attrs: dict = tree_field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        Object.__post_init__(self)
        object.__setattr__(self, "attrs", _check_attrs(type(self).__name__, self.attrs))

    def get_attr(self, key: str, default: Any = None) -> Any:
        """The attribute ``key``, or ``default``."""
        return self.attrs.get(key, default) if self.attrs else default

    def with_attr(self, key: str, value: Any) -> Any:
        """A copy with attribute ``key`` set to ``value``."""
        return self.with_fields(attrs={**(self.attrs or {}), key: value})

    def with_attrs(self, attrs: dict[str, Any]) -> Any:
        """A copy with several attributes set."""
        return self.with_fields(attrs={**(self.attrs or {}), **attrs})

    def without_attr(self, key: str) -> Any:
        """A copy without attribute ``key`` (itself if absent)."""
        if not self.attrs or key not in self.attrs:
            return self
        return self.with_fields(attrs={k: v for k, v in self.attrs.items() if k != key})


@register_object("ir.GlobalVar")
class GlobalVar(Object):
    """The name of a function in an IRModule.

    Calls refer to functions through it.  Structural equality compares global variables by
    name (``name_hint`` is a tree field), so two modules with the same functions compare
    equal whatever GlobalVar objects they use.
    """

    name_hint: str

    def __post_init__(self) -> None:
        if not isinstance(self.name_hint, str) or not self.name_hint:
            raise ValueError(f"GlobalVar name must be a non-empty str, got {self.name_hint!r}")

    def __str__(self) -> str:
        return f"@{self.name_hint}"
