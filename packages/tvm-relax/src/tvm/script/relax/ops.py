"""Relax operators under ``R``: ``R.add``, ``R.nn.softmax``, ``R.image.resize2d`` ...

Nothing is listed by hand: ``R.<path>`` looks up the operator ``relax.<path>`` in the
operator registry (:class:`tvm.ir.Op`), so an operator declared with
:func:`tvm.relax.op.base.register_op` is usable in TVMScript at once.  A namespace that
is not registered yet is imported from ``tvm.relax.op.<namespace>`` on first use.
"""

from __future__ import annotations

import difflib
import importlib
from typing import Any, Optional

from tvm.ir.op import Op
from tvm.relax.expr import Call, as_expr

__all__ = ["OpNamespace", "resolve_op", "op_script_path", "ROOT"]


def _relax_ops() -> list[str]:
    return Op.list_ops("relax.")


def _builder(name: str) -> Optional[Any]:
    """The Python builder of operator ``name`` (its OpSpec), or a generic one."""
    if not Op.exists(name):
        return None
    op = Op.get(name)
    spec = op.get_attr("op_spec")
    if spec is not None:
        return spec
    attrs_type = op.get_attr("attrs_type")

    def build(*args: Any, **attrs: Any) -> Call:
        node_attrs = attrs_type(**attrs) if attrs_type is not None and attrs else (attrs or None)
        return Call(op, [as_expr(a, f"{name} argument") for a in args], node_attrs)

    build.__name__ = name.rsplit(".", 1)[-1]
    build.__doc__ = f"The Relax operator {name}."
    return build


class OpNamespace:
    """The operators whose names start with ``prefix.`` (``relax``, ``relax.nn`` ...)."""

    __slots__ = ("_prefix", "_cache")

    def __init__(self, prefix: str):
        self._prefix = prefix
        self._cache: dict[str, Any] = {}

    def __repr__(self) -> str:
        return f"<Relax operator namespace R{self._prefix[5:]}>"

    @property
    def script_name(self) -> str:
        return "R" + self._prefix[len("relax"):]

    def _lookup(self, name: str) -> Optional[Any]:
        full = f"{self._prefix}.{name}"
        builder = _builder(full)
        if builder is not None:
            return builder
        if any(op.startswith(full + ".") for op in _relax_ops()):
            return OpNamespace(full)
        # an operator family not imported yet: tvm.relax.op.<ns>
        module = "tvm.relax.op" + full[len("relax"):]
        try:
            importlib.import_module(module)
        except ImportError:
            return None
        builder = _builder(full)
        if builder is not None:
            return builder
        if any(op.startswith(full + ".") for op in _relax_ops()):
            return OpNamespace(full)
        return None

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        cache = object.__getattribute__(self, "_cache")
        if name in cache:
            return cache[name]
        value = self._lookup(name)
        if value is None:
            raise AttributeError(self.unknown_message(name))
        cache[name] = value
        return value

    def children(self) -> list[str]:
        """Names directly under this namespace (operators and sub-namespaces)."""
        depth = self._prefix.count(".") + 1
        out = set()
        for op in _relax_ops():
            if op.startswith(self._prefix + "."):
                out.add(op.split(".")[depth])
        return sorted(out)

    def __dir__(self) -> list[str]:
        return self.children()

    def unknown_message(self, name: str) -> str:
        full = f"{self._prefix}.{name}"
        candidates = [op for op in _relax_ops()]
        close = difflib.get_close_matches(full, candidates, n=3, cutoff=0.8)
        if not close:
            close = [op for op in candidates if op.rsplit(".", 1)[-1] == name]
        hint = ""
        if close:
            hint = "; did you mean " + ", ".join("R" + c[len("relax"):] for c in close) + "?"
        return f"unknown Relax operator {full!r} ({self.script_name}.{name}){hint}"


ROOT = OpNamespace("relax")


def resolve_op(path: str) -> Optional[Any]:
    """The value ``R.<path>`` gives for an operator path such as ``nn.softmax``."""
    node: Any = ROOT
    for part in path.split("."):
        try:
            node = getattr(node, part)
        except AttributeError:
            return None
    return node


def op_script_path(op: Op) -> str:
    """``nn.softmax`` for ``relax.nn.softmax`` (what follows ``R.``)."""
    if not op.name.startswith("relax."):
        raise ValueError(f"{op.name!r} is not a Relax operator")
    return op.name[len("relax."):]
