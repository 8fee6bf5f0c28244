"""Operators: named, interned primitives shared by TIR intrinsics and Relax operators.

An :class:`Op` is looked up by name (``Op.get("tir.exp")``, ``Op.get("relax.matmul")``) and
carries attributes registered by the packages that define it (``set_attr``), e.g. a Relax
operator's StructInfo inference function or a TIR intrinsic's C symbol.  There is exactly one
``Op`` object per name, so ops compare by identity and structurally by name.
"""

from __future__ import annotations

import difflib
import threading
from typing import Any

from tvm.ffi import Object, register_object

__all__ = ["Op", "register_op_attr"]

_OPS: dict[str, Op] = {}
_ATTRS: dict[str, dict[str, Any]] = {}
_LOCK = threading.Lock()


@register_object("ir.Op")
class Op(Object):
    """A primitive operator, interned by name."""

    name: str

    @classmethod
    def __from_json__(cls, fields: dict[str, Any]) -> Op:
        # Ops are interned: loading one from JSON gives back the registered object.
        return Op.register(fields["name"])

    @staticmethod
    def get(name: str) -> Op:
        """The op named ``name``; a clear error with close matches if none is registered."""
        op = _OPS.get(name)
        if op is None:
            close = difflib.get_close_matches(name, list(_OPS), n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise ValueError(f"unknown operator {name!r}{hint}")
        return op

    @staticmethod
    def register(name: str, **attrs: Any) -> Op:
        """Register (or fetch) the op named ``name`` and set the given attributes."""
        with _LOCK:
            op = _OPS.get(name)
            if op is None:
                op = Op(name)
                _OPS[name] = op
                _ATTRS[name] = {}
        for key, value in attrs.items():
            op.set_attr(key, value)
        return op

    @staticmethod
    def exists(name: str) -> bool:
        return name in _OPS

    @staticmethod
    def list_ops(prefix: str = "") -> list[str]:
        return sorted(n for n in _OPS if n.startswith(prefix))

    def set_attr(self, key: str, value: Any, override: bool = True) -> None:
        """Attach attribute ``key`` (e.g. ``"FInferStructInfo"``) to this op."""
        table = _ATTRS[self.name]
        if key in table and not override:
            raise ValueError(f"attribute {key!r} of op {self.name!r} is already set")
        table[key] = value

    def get_attr(self, key: str, default: Any = None) -> Any:
        return _ATTRS.get(self.name, {}).get(key, default)

    def __repr__(self) -> str:
        return f"Op({self.name!r})"


def register_op_attr(name: str, key: str, value: Any = None, override: bool = True) -> Any:
    """Set an op attribute; usable as a decorator when ``value`` is omitted."""
    if value is not None:
        Op.register(name).set_attr(key, value, override)
        return value

    def wrap(fn: Any) -> Any:
        Op.register(name).set_attr(key, fn, override)
        return fn

    return wrap
