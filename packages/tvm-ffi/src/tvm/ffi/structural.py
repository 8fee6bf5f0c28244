"""Structural equality and hashing over declared object fields.

Two objects are structurally equal when they have the same type and their ``tree`` and
``def`` fields are equal, recursively.  Variables (classes with ``_is_var = True``) compare
by binding position: a variable first met inside a ``def`` field (or anywhere, with
``map_free_vars=True``) is mapped to its counterpart, and every later use must agree with
that mapping.  A variable that was never bound compares by identity.

``structural_hash`` follows the same rules, so ``structural_equal(a, b)`` implies
``structural_hash(a) == structural_hash(b)``.  It is the same in every process (strings,
bytes and None are hashed with a fixed digest, not Python's per-process salted ``hash``), so
it can be stored; only a graph holding a free variable (compared by identity) hashes per
process.
"""

from __future__ import annotations

import functools
import hashlib
import math
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from enum import Enum
from typing import Any, Callable, Generic, Optional, TypeVar

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
    "StructuralMap",
    "deep_recursion",
]

_V = TypeVar("_V")


class StructuralMismatch(ValueError):
    """Raised by :func:`assert_structural_equal`; carries the access path of the mismatch."""

    def __init__(self, message: str, path: str):
        super().__init__(message)
        self.path = path


@contextmanager
def deep_recursion(limit: int = 20000) -> Iterator[None]:
    """Raise Python's recursion limit for a while: deep IR (long chains of scoped
    statements, nested expressions) is walked recursively by the structural algorithms,
    serialisation and the TVMScript parsers and printers."""
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
        kind = type(a)
        if kind is str or kind is int:  # the commonest leaves (names, dtypes, constants)
            return None if type(b) is kind and a == b else ([], a, b)
        if isinstance(a, Object):
            if type(a) is not type(b):
                return [], a, b
            if a._is_var:
                return self._check_var(a, b, defining)
            key = (id(a), id(b))
            if key in self.equal_pairs:
                return None
            for name, binds in a._compared_fields:
                sub = self.check(getattr(a, name), getattr(b, name), defining or binds)
                if sub is not None:
                    sub[0].append("." + name)
                    return sub
            self.equal_pairs.add(key)
            return None
        if kind is tuple or isinstance(a, (list, tuple)):
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
        for name, _ in a._compared_fields:
            sub = self.check(getattr(a, name), getattr(b, name), True)
            if sub is not None:
                sub[0].append("." + name)
                return sub
        self.lhs_to_rhs[id(a)] = b
        self.rhs_to_lhs[id(b)] = a
        return None


_PLAIN_KEY_TYPES = (str, int, float, bool, bytes, type(None))


def _plain_keys(d: dict) -> bool:
    """Whether every key is a plain value (str, number, bool, bytes, None or an Enum)."""
    return all(type(k) in _PLAIN_KEY_TYPES or isinstance(k, Enum) for k in d)


@functools.lru_cache(maxsize=1 << 16)
def _stable_str(s: str) -> int:
    """A hash of ``s`` that every process agrees on (Python's ``hash`` of a str or bytes is
    salted per process); structural hashes are then stable across processes, so they can
    be stored (tuning records, caches on disk)."""
    return int.from_bytes(hashlib.blake2b(s.encode("utf-8", "surrogatepass"),
                                          digest_size=8).digest(), "little")


def _stable_bytes(b: bytes) -> int:
    return int.from_bytes(hashlib.blake2b(b, digest_size=8).digest(), "little")


def _stable_leaf(x: Any) -> Any:
    """``x`` with the parts Python hashes per process (str, bytes, None) made stable."""
    if isinstance(x, str):
        return _stable_str(x)
    if isinstance(x, bytes):
        return _stable_bytes(x)
    if x is None:
        return 0x6E6F6E65  # hash(None) depends on None's address before Python 3.12
    if isinstance(x, tuple):
        return tuple(_stable_leaf(v) for v in x)
    return x


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


# tags of the kinds of value hashed (distinct small ints: ints hash the same in every process)
_STR, _SEQ, _MAP, _INT, _FLOAT, _NDARRAY, _NPSCALAR, _VAR, _FREE_VAR, _NAN = range(1, 11)


class _Hasher:
    def __init__(self, map_free_vars: bool):
        self.map_free_vars = map_free_vars
        self.var_ids: dict[int, int] = {}
        self.keep_alive: list[Any] = []
        self.memo: dict[int, int] = {}

    def hash(self, x: Any, defining: bool) -> int:
        kind = type(x)
        if kind is str:  # the commonest leaf (names, dtypes)
            return hash((_STR, _stable_str(x)))
        if isinstance(x, Object):
            if x._is_var:
                return self._hash_var(x, defining)
            cached = self.memo.get(id(x))
            if cached is not None:
                return cached
            sub = self.hash
            h = hash((_stable_str(x._type_key), *[sub(getattr(x, name), defining or binds)
                                                   for name, binds in x._compared_fields]))
            self.memo[id(x)] = h
            self.keep_alive.append(x)
            return h
        if kind is tuple or isinstance(x, (list, tuple)):
            sub = self.hash
            return hash((_SEQ, len(x), *[sub(v, defining) for v in x]))
        if isinstance(x, dict):
            if _plain_keys(x):
                # Sorted, as the checker visits them, so variable numbering agrees too.
                items = [(_stable_leaf(_key_id(k)), self.hash(x[k], defining))
                         for k in _sorted_keys(x)]
                return hash((_MAP, tuple(items)))
            return hash(
                (_MAP, tuple((self.hash(k, defining), self.hash(v, defining)) for k, v in x.items()))
            )
        # CPython hashes -1 like -2; the flag keeps the common constants -1 and -2 apart.
        if type(x) is int:
            return hash((_INT, x, x == -1))
        if isinstance(x, float):
            return hash((_FLOAT, _NAN if math.isnan(x) else x, x == -1.0))
        if _is_ndarray(x):
            return hash((_NDARRAY, _stable_str(str(x.dtype)), x.shape, _stable_bytes(x.tobytes())))
        if _np is not None and isinstance(x, _np.generic):
            return hash((_NPSCALAR, _stable_str(str(x.dtype)), _stable_bytes(x.tobytes())))
        if isinstance(x, Enum):
            return hash((_stable_str(type(x).__qualname__), _stable_leaf(x.value)))
        return hash((_stable_str(type(x).__name__), _stable_leaf(x)))

    def _hash_var(self, v: Object, defining: bool) -> int:
        index = self.var_ids.get(id(v))
        if index is None:
            if not (defining or self.map_free_vars):
                return hash((_FREE_VAR, id(v)))  # a free variable is itself: per process
            index = len(self.var_ids)
            self.var_ids[id(v)] = index
            self.keep_alive.append(v)
        return hash((_VAR, _stable_str(v._type_key), index,
                     *[self.hash(getattr(v, name), True) for name, _ in v._compared_fields]))


def structural_equal(lhs: Any, rhs: Any, map_free_vars: bool = False) -> bool:
    """Whether two object graphs are equal up to renaming of bound variables."""
    return get_first_structural_mismatch(lhs, rhs, map_free_vars) is None


def get_first_structural_mismatch(lhs: Any, rhs: Any, map_free_vars: bool = False) -> str | None:
    """The access path (like ``.body.seq[2].value.a``) of the first difference, or None.

    A difference at the top (different types, say) is reported as ``"<root>"``.
    """
    with deep_recursion():
        result = _EqualChecker(map_free_vars).check(lhs, rhs, False)
    if result is None:
        return None
    return "".join(reversed(result[0])) or "<root>"


def assert_structural_equal(lhs: Any, rhs: Any, map_free_vars: bool = False) -> None:
    """Raise :class:`StructuralMismatch` naming the path and both sides of the first difference."""
    with deep_recursion():
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
    with deep_recursion():
        return _Hasher(map_free_vars).hash(obj, False)


class StructuralMap(Generic[_V]):
    """A mapping whose keys are found by structural equality (a key structurally equal to a
    stored one finds its value), for caches and deduplication of IR::

        kernels = StructuralMap()
        lib = kernels.get(func)
        if lib is None:
            lib = kernels[func] = compile(func)

    ``max_size`` (optional) bounds the entries: adding one more drops the oldest.  Keys are
    kept alive by the map.
    """

    def __init__(self, map_free_vars: bool = False, max_size: Optional[int] = None):
        if max_size is not None and max_size < 1:
            raise ValueError(f"StructuralMap: max_size must be positive or None, got {max_size}")
        self.map_free_vars = map_free_vars
        self.max_size = max_size
        self._buckets: dict[int, list[tuple[Any, _V]]] = {}
        self._order: list[tuple[int, Any]] = []  # (hash, key) in insertion order
        self._last: tuple[Any, int] | None = None  # the last key hashed, with its hash

    def _hash(self, key: Any) -> int:
        last = self._last
        if last is not None and last[0] is key:
            return last[1]
        h = structural_hash(key, self.map_free_vars)
        self._last = (key, h)
        return h

    def _find(self, key: Any) -> tuple[int, int]:
        """``(hash, index in its bucket)``; the index is -1 when absent."""
        h = self._hash(key)
        for i, (k, _) in enumerate(self._buckets.get(h, ())):
            if k is key or structural_equal(k, key, self.map_free_vars):
                return h, i
        return h, -1

    def get(self, key: Any, default: Optional[_V] = None) -> Optional[_V]:
        """The value of the stored key structurally equal to ``key``, or ``default``."""
        h, i = self._find(key)
        return default if i < 0 else self._buckets[h][i][1]

    def get_or_add(self, key: Any, make: Callable[[], _V]) -> _V:
        """The value stored for ``key``, or ``make()`` stored for it and returned."""
        h, i = self._find(key)
        if i >= 0:
            return self._buckets[h][i][1]
        value = make()
        self[key] = value
        return value

    def __getitem__(self, key: Any) -> _V:
        h, i = self._find(key)
        if i < 0:
            raise KeyError(f"no structurally equal key for {type(key).__name__}")
        return self._buckets[h][i][1]

    def __setitem__(self, key: Any, value: _V) -> None:
        h, i = self._find(key)
        bucket = self._buckets.setdefault(h, [])
        if i >= 0:
            bucket[i] = (bucket[i][0], value)
            return
        bucket.append((key, value))
        self._order.append((h, key))
        if self.max_size is not None and len(self._order) > self.max_size:
            old_h, old_key = self._order.pop(0)
            old_bucket = self._buckets[old_h]
            old_bucket[:] = [(k, v) for k, v in old_bucket if k is not old_key]
            if not old_bucket:
                del self._buckets[old_h]

    def __contains__(self, key: Any) -> bool:
        return self._find(key)[1] >= 0

    def __len__(self) -> int:
        return len(self._order)

    def clear(self) -> None:
        """Forget every entry."""
        self._buckets.clear()
        self._order.clear()
        self._last = None
