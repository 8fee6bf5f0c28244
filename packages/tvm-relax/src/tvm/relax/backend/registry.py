"""External backends (BYOC): fusion patterns with checks, and code generators.

A backend is a :class:`Backend`: a name (``"cblas"``), its :class:`FusionPattern`\\ s (named
``"<backend>.<op>"``, most specific first) and a codegen ``codegen(funcs) ->
tvm.runtime.Module`` that compiles the functions partitioned for it.  Plugins contribute
backends through the hook ``tvm_relax_register_backends(register)`` (declared here); code
in the process can call :func:`register_backend`.  A backend that cannot work on this
machine (its library is missing) still registers, with ``unavailable`` saying why: its
patterns are matched only to say, in the offload report, what it would have taken.

A pattern's ``check(ctx) -> bool | str | None`` sees the match (:class:`PatternCheckContext`):
``None``/``True`` accept, ``False`` or a string (the reason, e.g. ``"dtype float16, needs
float32"``) reject.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Optional, Union

from tvm.ffi.plugin import add_hookspecs, hookspec

from ..dpl.pattern import Match, Pattern

__all__ = [
    "FusionPattern", "PatternCheckContext", "Backend", "BackendSpecs", "register_backend",
    "unregister_backend", "get_backend", "list_backends", "get_patterns_with_prefix",
    "get_pattern", "backend_of_pattern",
]

CheckResult = Union[bool, str, None]


@dataclasses.dataclass(frozen=True)
class PatternCheckContext:
    """What a pattern's check sees: the match, the matched root value, the annotated
    sub-patterns' values (``ctx.annotated["lhs"]``), ``var -> value`` of the matched
    bindings and the pattern's name."""

    match: Match
    root: Any
    annotated: Mapping[str, Any]
    bindings: Mapping[Any, Any]
    pattern: str = ""

    @property
    def backend(self) -> str:
        return self.pattern.split(".", 1)[0]


@dataclasses.dataclass(frozen=True)
class FusionPattern:
    """``name`` (``"cblas.matmul"``), the dataflow ``pattern``, named sub-patterns whose
    matched values the check reads (``annotations``), and the optional ``check``."""

    name: str
    pattern: Pattern
    annotations: Mapping[str, Pattern] = dataclasses.field(default_factory=dict)
    check: Optional[Callable[[PatternCheckContext], CheckResult]] = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise TypeError(f"FusionPattern: name must be a non-empty str, got {self.name!r}")
        if not isinstance(self.pattern, Pattern):
            raise TypeError(f"FusionPattern {self.name}: pattern must be a dpl Pattern, got "
                            f"{type(self.pattern).__name__}")
        if self.check is not None and not callable(self.check):
            raise TypeError(f"FusionPattern {self.name}: check must be callable")

    @property
    def backend(self) -> str:
        """The backend the pattern belongs to: the name up to the first dot."""
        return self.name.split(".", 1)[0]

    def run_check(self, ctx: PatternCheckContext) -> Optional[str]:
        """None if the match is accepted, else why not."""
        if self.check is None:
            return None
        result = self.check(ctx)
        if result is None or result is True:
            return None
        if result is False:
            return "the pattern's check rejected it"
        if isinstance(result, str):
            return result
        raise TypeError(f"FusionPattern {self.name}: check returned {type(result).__name__}; "
                        "expected bool, str (the reason) or None")


@dataclasses.dataclass(frozen=True)
class Backend:
    """An external code generator and its patterns (see the module docstring)."""

    name: str
    patterns: Sequence[FusionPattern]
    codegen: Callable[[Sequence[tuple[str, Any]]], Any]
    unavailable: Optional[str] = None
    package: str = ""
    merge: bool = False  # group adjacent composites into one function (MergeCompositeFunctions)
    bind_constants: bool = True  # constants stay inside the partitions (else: arguments)
    #: the layouts its kernels prefer, ``{"relax.nn.conv2d": ["NHWC", "OHWI"]}``: with
    #: ``relax.build(offload=...)`` the graph passes convert to them before partitioning
    desired_layouts: Optional[Mapping[str, Sequence[str]]] = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.isidentifier():
            raise TypeError(f"Backend: name must be an identifier, got {self.name!r}")
        object.__setattr__(self, "patterns", tuple(self.patterns))
        for p in self.patterns:
            if not isinstance(p, FusionPattern) or p.backend != self.name:
                raise ValueError(f"Backend {self.name}: pattern {p!r} must be a FusionPattern "
                                 f"named '{self.name}.<op>'")
        if not callable(self.codegen):
            raise TypeError(f"Backend {self.name}: codegen must be callable")


class BackendSpecs:
    """Hook specifications of tvm.relax.backend."""

    @hookspec
    def tvm_relax_register_backends(self, register: Callable[[Backend], None]) -> None:
        """Call ``register(Backend(...))`` once per external backend the plugin provides."""


add_hookspecs(BackendSpecs)

_lock = threading.RLock()
_LOCAL: dict[str, Backend] = {}
_PLUGIN: dict[str, tuple[Backend, str]] = {}
_loaded_from: list[Any] = [None]


def register_backend(backend: Backend, override: bool = False) -> Backend:
    """Register a backend in-process (an in-process one wins over a plugin's)."""
    if not isinstance(backend, Backend):
        raise TypeError(f"register_backend expects a Backend, got {type(backend).__name__}")
    with _lock:
        if backend.name in _LOCAL and _LOCAL[backend.name] is not backend and not override:
            raise ValueError(f"backend {backend.name!r} is already registered; pass "
                             "override=True to replace it")
        _LOCAL[backend.name] = backend
    return backend


def unregister_backend(name: str) -> None:
    """Remove an in-process backend (tests)."""
    with _lock:
        if _LOCAL.pop(name, None) is None:
            raise KeyError(f"no in-process backend named {name!r}")


def _all() -> dict[str, Backend]:
    from tvm.ffi.plugin import collect_plugin_table

    collect_plugin_table("tvm_relax_register_backends", Backend, "backend", _PLUGIN,
                          _loaded_from)
    out = {name: entry for name, (entry, _) in _PLUGIN.items()}
    out.update(_LOCAL)
    return out


def list_backends() -> list[Backend]:
    """Every registered backend (plugins' and in-process), by name."""
    return [b for _, b in sorted(_all().items())]


def get_backend(name: str) -> Backend:
    """The backend ``name``; a KeyError that lists the known ones (and says what to install)."""
    backends = _all()
    if name not in backends:
        known = ", ".join(sorted(backends)) or "none"
        raise KeyError(f"no external backend named {name!r} is registered (known: {known}); "
                       f"install its plugin, e.g. `pip install tvm-contrib-{name}`")
    return backends[name]


def get_patterns_with_prefix(prefix: str) -> list[FusionPattern]:
    """The patterns whose names start with ``prefix`` (``"cblas"``), in priority order;
    an unavailable backend offers none."""
    out = []
    for backend in list_backends():
        if backend.unavailable is None:
            out.extend(p for p in backend.patterns if p.name.startswith(prefix))
    return out


def get_pattern(name: str) -> FusionPattern:
    """The pattern called ``name`` (``"cblas.matmul"``)."""
    backend = get_backend(name.split(".", 1)[0])
    for p in backend.patterns:
        if p.name == name:
            return p
    raise KeyError(f"backend {backend.name!r} has no pattern {name!r}; it has: "
                   f"{', '.join(p.name for p in backend.patterns)}")


def backend_of_pattern(name: str) -> str:
    """``"cblas.matmul"`` -> ``"cblas"``."""
    return name.split(".", 1)[0]
