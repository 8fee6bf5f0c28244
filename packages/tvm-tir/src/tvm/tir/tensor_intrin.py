"""Tensor intrinsics for ``Schedule.tensorize``: a description and an implementation.

::

    TensorIntrin.register("dot_4", dot_desc, dot_impl)
    sch.tensorize(loop, "dot_4")

``desc`` is a PrimFunc computing, in ordinary loops and blocks, what the intrinsic
computes over its buffer parameters (usually under a root block declaring the regions);
``impl`` has parameters of the same number, dtypes and shapes and a body doing it the fast
way (a hardware instruction, a vendor call, a vector expression).  ``tensorize`` matches
``desc`` against a (blockized) subtree and replaces the subtree by ``impl``'s body, its
buffers bound to the matched regions with ``match_buffers``.

Plugins provide intrinsics through the hook ``tvm_tir_register_tensor_intrins(register)``
(:mod:`tvm.tir.hooks`), calling ``register(TensorIntrinDef(name, desc, impl))``; they are
collected the first time a name is looked up (their signatures checked as ``register``
checks them; a plugin whose entry is wrong is reported by name and skipped).  An intrinsic
registered in-process wins over a plugin's of the same name.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Optional

from tvm.ffi import Object, register_object

from .function import PrimFunc

__all__ = ["TensorIntrin", "TensorIntrinDef"]

_REGISTRY: dict[str, TensorIntrin] = {}
_PLUGIN: dict[str, tuple[Any, str]] = {}  # name -> (TensorIntrinDef, plugin)
_loaded_from: list[Any] = [None]
_MADE: dict[int, TensorIntrin] = {}  # id(TensorIntrinDef) -> its TensorIntrin


@dataclasses.dataclass(frozen=True)
class TensorIntrinDef:
    """A tensor intrinsic as a plugin registers it: its name, ``desc`` and ``impl``
    (checked on construction as :meth:`TensorIntrin.register` checks them)."""

    name: str
    desc: PrimFunc
    impl: PrimFunc

    def __post_init__(self) -> None:
        _validate(self.name, self.desc, self.impl)


def _validate(name: Any, desc: Any, impl: Any) -> None:
    if not isinstance(name, str) or not name:
        raise ValueError(f"TensorIntrin.register: name must be a non-empty str, got {name!r}")
    for what, func in (("desc", desc), ("impl", impl)):
        if not isinstance(func, PrimFunc):
            raise TypeError(f"TensorIntrin.register({name!r}): {what} must be a PrimFunc, "
                            f"got {type(func).__name__}")
    _check_signatures(name, desc, impl)


def _plugin_intrins() -> dict[str, Any]:
    from tvm.ffi.plugin import collect_plugin_table

    from . import hooks  # noqa: F401 - declares the hook

    collect_plugin_table("tvm_tir_register_tensor_intrins", TensorIntrinDef, "tensor intrinsic",
                         _PLUGIN, _loaded_from)
    return {name: entry for name, (entry, _) in _PLUGIN.items()}


@register_object("tir.TensorIntrin")
class TensorIntrin(Object):
    """A pair of PrimFuncs: what the intrinsic computes (``desc``) and how (``impl``)."""

    desc: PrimFunc
    impl: PrimFunc

    @staticmethod
    def register(name: str, desc: PrimFunc, impl: PrimFunc, override: bool = False
                 ) -> TensorIntrin:
        """Register an intrinsic under ``name`` (ValueError if taken, unless ``override``)."""
        _validate(name, desc, impl)
        if name in _REGISTRY and not override:
            raise ValueError(f"TensorIntrin.register: {name!r} is already registered; pass "
                             "override=True to replace it")
        intrin = TensorIntrin(desc, impl)
        _REGISTRY[name] = intrin
        return intrin

    @staticmethod
    def get(name: str, allow_missing: bool = False) -> Optional[TensorIntrin]:
        """The intrinsic registered under ``name``, in-process or by a plugin (KeyError
        listing the known ones)."""
        intrin = _REGISTRY.get(name)
        if intrin is None:
            entry = _plugin_intrins().get(name)
            if entry is not None:
                intrin = _MADE.get(id(entry))
                if intrin is None:
                    intrin = _MADE[id(entry)] = TensorIntrin(entry.desc, entry.impl)
        if intrin is None and not allow_missing:
            known = ", ".join(TensorIntrin.list()) or "none"
            raise KeyError(f"no tensor intrinsic named {name!r} (registered: {known})")
        return intrin

    @staticmethod
    def list() -> list[str]:  # noqa: A003
        """Names of every intrinsic, in-process and from plugins."""
        return sorted(set(_REGISTRY) | set(_plugin_intrins()))


def _check_signatures(name: str, desc: PrimFunc, impl: PrimFunc) -> None:
    if len(desc.params) != len(impl.params):
        raise ValueError(f"TensorIntrin {name!r}: desc has {len(desc.params)} parameters, impl "
                         f"{len(impl.params)}")
    from tvm.arith import Analyzer

    ana = Analyzer()
    for k, (dp, ip) in enumerate(zip(desc.params, impl.params)):
        db, ib = desc.buffer_map.get(dp), impl.buffer_map.get(ip)
        if (db is None) != (ib is None):
            raise ValueError(f"TensorIntrin {name!r}: parameter {k} is a buffer in only one of "
                             "desc and impl")
        if db is None:
            continue
        if db.dtype != ib.dtype or len(db.shape) != len(ib.shape) or not all(
                ana.can_prove(a == b) for a, b in zip(db.shape, ib.shape)):
            raise ValueError(
                f"TensorIntrin {name!r}: buffer parameter {k} is {db.dtype}{list(db.shape)} in "
                f"desc but {ib.dtype}{list(ib.shape)} in impl"
            )
