"""Structural equality and hashing over declared object fields.

Two objects are structurally equal when they have the same type and their ``tree`` and
``def`` fields are equal, recursively.  Variables (classes with ``_is_var = True``) compare
by binding position: a variable first met inside a ``def`` field (or anywhere, with
``map_free_vars=True``) is mapped to its counterpart, and every later use must agree with
that mapping.  A variable that was never bound compares by identity.

``structural_hash`` follows the same rules, so ``structural_equal(a, b)`` implies
``structural_hash(a) == structural_hash(b)``.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from enum import Enum
from typing import Any

from .object import Object

try:  # numpy is optional for tvm.ffi; it only matters for constant payloads.
    import numpy as _np
except ImportError:  # pragma: no cover - exercised only without numpy
    _np = None

__all__ = [
    "structural_equal",
    "structural_hash",
    "get_first_structural_mismatch",
    "assert_structural_equal",
    "StructuralMismatch",
]


class StructuralMismatch(ValueError):
    """Raised by :func:`assert_structural_equal`; carries the access path of the mismatch."""

    def __init__(self, message: str, path: str):
        super().__init__(message)
        self.path = path


@contextmanager
def _deep_recursion(limit: int = 20000) -> Iterator[None]:
    old = sys.getrecursionlimit()
    if old < limit:
        sys.setrecursionlimit(limit)
    try:
        yield
    finally:
        if old < limit:
            sys.setrecursionlimit(old)


def _is_ndarray(x: Any) -> bool:
    return _np is not None and isinstance(x, _np.ndarray)


# A mismatch: (reversed path segments, lhs value, rhs value).
_Mismatch = tuple[list[str], Any, Any]


class _EqualChecker:
    def __init__(self, map_free_vars: bool):
        self.map_free_vars = map_free_vars
        self.lhs_to_rhs: dict[int, Any] = {}
        self.rhs_to_lhs: dict[int, Any] = {}
        self.equal_pairs: set[tuple[int, int]] = set()

    def check(self, a: Any, b: Any, defining: bool) -> _Mismatch | None:
        if isinstance(a, Object):
            if not isinstance(b, Object) or type(a) is not type(b):
                return [], a, b
            if a._is_var:
                return self._check_var(a, b, defining)
            key = (id(a), id(b))
            if key in self.equal_pairs:
                return None
            for info in a._field_infos:
                if info.kind == "ignore":
                    continue
                sub = self.check(
                    getattr(a, info.name), getattr(b, info.name), defining or info.kind == "def"
                )
                if sub is not None:
                    sub[0].append("." + info.name)
                    return sub
            self.equal_pairs.add(key)
            return None
        if isinstance(a, (list, tuple)):
            if not isinstance(b, (list, tuple)) or len(a) != len(b):
                return [], a, b
            for i, (x, y) in enumerate(zip(a, b)):
                sub = self.check(x, y, defining)
                if sub is not None:
                    sub[0].append(f"[{i}]")
                    return sub
            return None
        if isinstance(a, dict):
            if not isinstance(b, dict) or len(a) != len(b):
                return [], a, b
            plain = _plain_keys(a) and _plain_keys(b)
            if plain:
                # Value-like keys: compared as a set (type-strict), items in sorted key order.
                keys_b = {_key_id(k): k for k in b}
                if {_key_id(k) for k in a} != keys_b.keys():
                    return [], a, b
                pairs = [(k, a[k], k, b[keys_b[_key_id(k)]]) for k in _sorted_keys(a)]
            else:
                # Object keys: compared pairwise in insertion order.
                pairs = [(ka, va, kb, vb) for (ka, va), (kb, vb) in zip(a.items(), b.items())]
            for ka, va, kb, vb in pairs:
                if not plain:
                    sub = self.check(ka, kb, defining)
                    if sub is not None:
                        sub[0].append(f"[{ka!r}]")
                        return sub
                sub = self.check(va, vb, defining)
                if sub is not None:
                    sub[0].append(f"[{ka!r}]")
                    return sub
            return None
        return None if _leaf_equal(a, b) else ([], a, b)

    def _check_var(self, a: Object, b: Object, defining: bool) -> _Mismatch | None:
        mapped_b = self.lhs_to_rhs.get(id(a))
        mapped_a = self.rhs_to_lhs.get(id(b))
        if mapped_b is not None or mapped_a is not None:
            return None if (mapped_b is b and mapped_a is a) else ([], a, b)
        if not (defining or self.map_free_vars):
            return None if a is b else ([], a, b)
        for info in a._field_infos:
            if info.kind == "ignore":
                continue
            sub = self.check(getattr(a, info.name), getattr(b, info.name), True)
            if sub is not None:
                sub[0].append("." + info.name)
                return sub
        self.lhs_to_rhs[id(a)] = b
        self.rhs_to_lhs[id(b)] = a
        return None


_PLAIN_KEY_TYPES = (str, int, float, bool, bytes, type(None))


def _plain_keys(d: dict) -> bool:
    """Whether every key is a plain value (str, number, bool, bytes, None or an Enum)."""
    return all(type(k) in _PLAIN_KEY_TYPES or isinstance(k, Enum) for k in d)


def _key_id(k: Any) -> tuple[str, Any]:
    # Type-strict: the keys 1, 1.0 and True are different keys here.
    return (f"{type(k).__module__}.{type(k).__qualname__}", k)


def _sorted_keys(d: dict) -> list[Any]:
    def order(k: Any) -> tuple[str, str, Any]:
        kind = type(k).__qualname__
        return (kind, "", k) if type(k) in (str, int, float, bytes) else (kind, repr(k), 0)

    return sorted(d, key=order)


def _leaf_equal(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if _is_ndarray(a):
        return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    if _np is not None and isinstance(a, _np.generic):
        return a.dtype == b.dtype and a.tobytes() == b.tobytes()
    return bool(a == b)


class _Hasher:
    def __init__(self, map_free_vars: bool):
        self.map_free_vars = map_free_vars
        self.var_ids: dict[int, int] = {}
        self.keep_alive: list[Any] = []
        self.memo: dict[int, int] = {}

    def hash(self, x: Any, defining: bool) -> int:
        if isinstance(x, Object):
            if x._is_var:
                return self._hash_var(x, defining)
            cached = self.memo.get(id(x))
            if cached is not None:
                return cached
            parts: list[Any] = [x._type_key]
            for info in x._field_infos:
                if info.kind != "ignore":
                    parts.append(self.hash(getattr(x, info.name), defining or info.kind == "def"))
            h = hash(tuple(parts))
            self.memo[id(x)] = h
            self.keep_alive.append(x)
            return h
        if isinstance(x, (list, tuple)):
            return hash(("seq", len(x), *(self.hash(v, defining) for v in x)))
        if isinstance(x, dict):
            if _plain_keys(x):
                # Sorted, as the checker visits them, so variable numbering agrees too.
                items = [(_key_id(k), self.hash(x[k], defining)) for k in _sorted_keys(x)]
                return hash(("map", tuple(items)))
            return hash(
                ("map", tuple((self.hash(k, defining), self.hash(v, defining)) for k, v in x.items()))
            )
        # CPython hashes -1 like -2; the flag keeps the common constants -1 and -2 apart.
        if type(x) is int:
            return hash(("int", x, x == -1))
        if isinstance(x, float):
            return hash(("float", "nan" if math.isnan(x) else x, x == -1.0))
        if _is_ndarray(x):
            return hash(("ndarray", str(x.dtype), x.shape, x.tobytes()))
        if _np is not None and isinstance(x, _np.generic):
            return hash(("npscalar", str(x.dtype), x.tobytes()))
        if isinstance(x, Enum):
            return hash((type(x).__qualname__, x.value))
        return hash((type(x).__name__, x))

    def _hash_var(self, v: Object, defining: bool) -> int:
        index = self.var_ids.get(id(v))
        if index is None:
            if not (defining or self.map_free_vars):
                return hash(("free-var", id(v)))
            index = len(self.var_ids)
            self.var_ids[id(v)] = index
            self.keep_alive.append(v)
        parts: list[Any] = ["var", v._type_key, index]
        for info in v._field_infos:
            if info.kind != "ignore":
                parts.append(self.hash(getattr(v, info.name), True))
        return hash(tuple(parts))


def structural_equal(lhs: Any, rhs: Any, map_free_vars: bool = False) -> bool:
    """Whether two object graphs are equal up to renaming of bound variables."""
    return get_first_structural_mismatch(lhs, rhs, map_free_vars) is None


def get_first_structural_mismatch(lhs: Any, rhs: Any, map_free_vars: bool = False) -> str | None:
    """The access path (like ``.body.seq[2].value.a``) of the first difference, or None.

    A difference at the top (different types, say) is reported as ``"<root>"``.
    """
    with _deep_recursion():
        result = _EqualChecker(map_free_vars).check(lhs, rhs, False)
    if result is None:
        return None
    return "".join(reversed(result[0])) or "<root>"


def assert_structural_equal(lhs: Any, rhs: Any, map_free_vars: bool = False) -> None:
    """Raise :class:`StructuralMismatch` naming the path and both sides of the first difference."""
    with _deep_recursion():
        result = _EqualChecker(map_free_vars).check(lhs, rhs, False)
    if result is None:
        return
    segments, a, b = result
    path = "".join(reversed(segments)) or "<root>"
    raise StructuralMismatch(
        f"structural mismatch at {path}:\n  lhs: {_brief(a)}\n  rhs: {_brief(b)}", path
    )


def _brief(x: Any, limit: int = 400) -> str:
    text = repr(x)
    return text if len(text) <= limit else text[:limit] + " ..."


def structural_hash(obj: Any, map_free_vars: bool = False) -> int:
    """A hash consistent with :func:`structural_equal`."""
    with _deep_recursion():
        return _Hasher(map_free_vars).hash(obj, False)
