"""Runtime modules: named compiled functions, loaders by file format.

:class:`Module` is the base every runtime module shares (functions by name, imported
modules, source, export).  :class:`NativeModule` is a module of compiled kernels following
``docs/abi.md``, built from a *symbol lookup* (a ``dlopen``-ed library here, an LLVM JIT in
tvm-target-llvm) by :func:`module_from_symbols`.  :func:`load_module` picks a loader by file
suffix through the ``tvm_runtime_module_loader`` hook; ``.so``/``.dylib``/``.dll`` are built in.
"""

from __future__ import annotations

import contextvars
import ctypes
import json
import os
import threading
from collections.abc import Callable, Collection, Iterator
from typing import Any

from tvm.ffi.plugin import hookimpl

from .error import FunctionNotFoundError, HostMismatchError, ModuleLoadError
from .file_seal import check_seal, write_file
from .host import file_arch, host_arch, host_mismatch
from .packed_func import PackedCFunc, install_runtime_slots

__all__ = [
    "Module",
    "NativeModule",
    "SharedLibraryModule",
    "module_from_symbols",
    "load_module",
    "register_module_loader",
    "META_SYMBOL",
    "ABI_VERSION",
]

#: The NUL-terminated JSON metadata every compiled module defines.
META_SYMBOL = "__tvm_module_meta"
#: The metadata ``version`` this runtime reads.
ABI_VERSION = 1

_SHARED_LIBRARY_FORMATS = ("so", "dylib", "dll")
#: set by ``load_module(..., trusted=True)`` for the loaders it calls
_TRUSTED: contextvars.ContextVar[bool] = contextvars.ContextVar("tvm_load_trusted", default=False)


class Module:
    """A runtime module: named functions plus imported modules.

    Subclasses fill ``self._functions`` (name -> callable) and may override
    :meth:`get_source` and :meth:`export_library`.
    """

    type_key: str = "module"

    def __init__(self, type_key: str | None = None) -> None:
        if type_key is not None:
            self.type_key = type_key
        self._functions: dict[str, Callable[..., Any]] = {}
        self._imports: list[Module] = []
        self._sources: dict[str, str] = {}
        self._entry_name: str | None = None

    # ------------------------------------------------------------------ functions

    @property
    def function_names(self) -> list[str]:
        """Names of the functions this module defines (not those of imported modules)."""
        return list(self._functions)

    def get_function(
        self, name: str, allow_missing: bool = False, query_imports: bool = True
    ) -> Any:
        """The function called ``name`` (searching imported modules too).

        Raises :class:`~tvm.runtime.error.FunctionNotFoundError` unless ``allow_missing``,
        in which case ``None`` is returned.
        """
        if not isinstance(name, str):
            raise TypeError(f"function name must be a str, got {type(name).__name__}")
        found = self._lookup(name, query_imports)
        if found is None and not allow_missing:
            names = ", ".join(self.function_names) or "none"
            raise FunctionNotFoundError(
                f"module of type {self.type_key!r} has no function {name!r}; it defines: {names}"
            )
        return found

    def _lookup(self, name: str, query_imports: bool) -> Any:
        func = self._functions.get(name)
        if func is None and query_imports:
            for m in self._imports:
                func = m._lookup(name, True)
                if func is not None:
                    break
        return func

    def __getitem__(self, name: str) -> Any:
        return self.get_function(name)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self._lookup(name, True) is not None

    def __iter__(self) -> Iterator[str]:
        return iter(self._functions)

    @property
    def entry_name(self) -> str | None:
        """The name of the entry function (declared, or the only function), if any."""
        if self._entry_name is not None:
            return self._entry_name
        if len(self._functions) == 1:
            return next(iter(self._functions))
        return None

    @property
    def entry_func(self) -> Any:
        """The entry function; AttributeError when the module has none."""
        name = self.entry_name
        if name is None:
            raise AttributeError(
                f"module of type {self.type_key!r} has no entry function (it defines "
                f"{len(self._functions)} functions and declares no entry); use mod[name]"
            )
        return self.get_function(name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.entry_func(*args, **kwargs)

    # ------------------------------------------------------------------ imports

    @property
    def imported_modules(self) -> list[Module]:
        """Modules this one imports (their functions are reachable through it)."""
        return list(self._imports)

    def import_module(self, module: Module) -> None:
        """Make ``module``'s functions reachable from this module."""
        if not isinstance(module, Module):
            raise TypeError(
                f"import_module expects a tvm.runtime.Module, got {type(module).__name__}"
            )
        if module is self or self in _all_imports(module):
            raise ValueError(f"import_module: importing {module!r} would create a cycle")
        self._imports.append(module)

    # ------------------------------------------------------------------ source / export

    @property
    def source_formats(self) -> list[str]:
        """The formats :meth:`get_source` answers, the main one first."""
        return list(self._sources)

    def get_source(self, fmt: str = "") -> str:
        """The source of format ``fmt`` (``""``: the module's main source)."""
        if fmt == "" and self._sources:
            return next(iter(self._sources.values()))
        if fmt in self._sources:
            return self._sources[fmt]
        have = ", ".join(repr(k) for k in self._sources) or "none"
        raise ValueError(
            f"module of type {self.type_key!r} has no source of format {fmt!r} "
            f"(formats available: {have})"
        )

    def export_library(self, path: str | os.PathLike[str], **kwargs: Any) -> None:
        """Write the module as a shared library; modules that cannot, say so."""
        raise NotImplementedError(
            f"module of type {self.type_key!r} ({type(self).__name__}) cannot be exported "
            "as a library"
        )

    def __repr__(self) -> str:
        return f"<tvm.runtime.Module type_key={self.type_key!r} functions={self.function_names}>"


def _all_imports(module: Module) -> list[Module]:
    out, stack = [], list(module._imports)
    while stack:
        m = stack.pop()
        out.append(m)
        stack.extend(m._imports)
    return out


class NativeModule(Module):
    """Compiled kernels found through a symbol lookup (``name -> address or None``).

    Reads ``__tvm_module_meta`` (unless ``meta`` is given), fills the runtime slots and
    wraps each listed function as a :class:`PackedCFunc`.  ``keepalive`` is whatever owns
    the code (a ``CDLL``, a JIT engine); the module and its functions keep it alive.

    Code this machine cannot run (metadata ``triple``/``features`` that
    :func:`~tvm.runtime.host.host_mismatch` rejects) raises :class:`HostMismatchError`
    here when ``host_check="load"`` (loaded files); with ``"call"`` (a JIT that also
    builds for other CPUs, to export) the module loads and each function raises it when
    called.  Either way none of that code ever runs.  ``allow_features`` are missing
    features known not to matter (the JIT checked its code does not use them).
    """

    def __init__(
        self,
        lookup_symbol: Callable[[str], int | None],
        type_key: str,
        *,
        meta: dict[str, Any] | None = None,
        keepalive: Any = None,
        origin: str = "module",
        host_check: str = "load",
        allow_features: Collection[str] = (),
    ) -> None:
        super().__init__(type_key)
        self._lookup_symbol = lookup_symbol
        self._keepalive = keepalive
        self.origin = origin
        if meta is None:
            meta = read_module_meta(lookup_symbol, origin)
        self.meta: dict[str, Any] = _validate_meta(meta, origin)
        self.target: str = str(self.meta.get("target", ""))
        problem = host_mismatch(self.meta, allow_features)
        self.host_problem: str | None = None
        if host_check not in ("load", "call"):
            raise ValueError(f"host_check must be 'load' or 'call', got {host_check!r}")
        if problem is not None:
            if host_check == "load":
                raise HostMismatchError(f"{origin} cannot run on this machine: {problem}")
            self.host_problem = f"{origin} cannot run on this machine: {problem}"
        self.slots = install_runtime_slots(lookup_symbol)
        for fmeta in self.meta["functions"]:
            symbol = fmeta.get("symbol") or fmeta["name"]
            addr = lookup_symbol(symbol)
            if not addr:
                raise ModuleLoadError(
                    f"{origin}: function {fmeta['name']!r} is listed in {META_SYMBOL} but its "
                    f"symbol {symbol!r} is missing"
                )
            if self.host_problem is None:
                self._functions[fmeta["name"]] = PackedCFunc(addr, fmeta, self)
            else:
                self._functions[fmeta["name"]] = UnrunnableFunc(fmeta, self.host_problem)
        entry = self.meta.get("entry")
        if entry is not None:
            if entry not in self._functions:
                raise ModuleLoadError(
                    f"{origin}: entry function {entry!r} is not among its functions"
                )
            self._entry_name = entry

    def lookup_symbol(self, name: str) -> int | None:
        """The address of symbol ``name`` in the module's code, or ``None``."""
        return self._lookup_symbol(name) or None


class UnrunnableFunc:
    """A kernel this machine cannot run: calling it raises :class:`HostMismatchError`."""

    def __init__(self, meta: dict[str, Any], problem: str) -> None:
        self.meta = dict(meta)
        self.name: str = str(meta["name"])
        self.problem = problem

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise HostMismatchError(f"cannot call {self.name!r}: {self.problem}")

    def __repr__(self) -> str:
        return f"<UnrunnableFunc {self.name} ({self.problem})>"


def read_module_meta(lookup_symbol: Callable[[str], int | None], origin: str = "module") -> dict:
    """Parse the ``__tvm_module_meta`` JSON string found through ``lookup_symbol``."""
    addr = lookup_symbol(META_SYMBOL)
    if not addr:
        raise ModuleLoadError(
            f"{origin} defines no {META_SYMBOL} symbol: it is not a tvm module (compiled "
            "kernels carry their metadata there, see docs/abi.md)"
        )
    text = ctypes.string_at(int(addr))
    try:
        meta = json.loads(text.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ModuleLoadError(f"{origin}: {META_SYMBOL} is not valid JSON: {err}") from err
    return meta


def _validate_meta(meta: Any, origin: str) -> dict[str, Any]:
    if not isinstance(meta, dict):
        raise ModuleLoadError(
            f"{origin}: {META_SYMBOL} must be a JSON object, got {type(meta).__name__}"
        )
    version = meta.get("version")
    if version != ABI_VERSION:
        raise ModuleLoadError(
            f"{origin}: {META_SYMBOL} has version {version!r}; this runtime reads version "
            f"{ABI_VERSION} (rebuild the module, or upgrade tvm-runtime)"
        )
    funcs = meta.get("functions")
    if not isinstance(funcs, list):
        raise ModuleLoadError(f"{origin}: {META_SYMBOL}['functions'] must be a list")
    for i, f in enumerate(funcs):
        if not isinstance(f, dict) or not isinstance(f.get("name"), str):
            raise ModuleLoadError(f"{origin}: {META_SYMBOL}['functions'][{i}] has no 'name'")
    return meta


def module_from_symbols(
    lookup_symbol: Callable[[str], int | None],
    type_key: str,
    *,
    meta: dict[str, Any] | None = None,
    keepalive: Any = None,
    origin: str = "module",
    cls: type[NativeModule] = NativeModule,
    host_check: str = "load",
    allow_features: Collection[str] = (),
) -> NativeModule:
    """Build a module of compiled kernels from a symbol lookup (shared by the .so loader and
    JITs; ``host_check`` and ``allow_features`` as for :class:`NativeModule`)."""
    return cls(lookup_symbol, type_key, meta=meta, keepalive=keepalive, origin=origin,
               host_check=host_check, allow_features=allow_features)


class SharedLibraryModule(NativeModule):
    """A compiled module loaded from a shared library (``.so``/``.dylib``/``.dll``).

    The file's seal (:mod:`.file_seal`) is checked before ``dlopen``: a library tvm did not
    write, or one truncated or corrupted since, is refused unless ``trusted`` (default: what
    ``load_module(..., trusted=...)`` was called with)."""

    def __init__(self, path: str | os.PathLike[str], trusted: bool | None = None) -> None:
        path = os.fspath(path)
        if not os.path.exists(path):
            raise FileNotFoundError(f"load_module: no such file: {path!r}")
        arch = file_arch(path)
        if arch is not None and arch != host_arch():
            raise HostMismatchError(
                f"load_module: {path!r} is a shared library for {arch} and this machine is "
                f"{host_arch()}; run it there (or under qemu-user), or rebuild it for this "
                "machine"
            )
        if not (_TRUSTED.get() if trusted is None else trusted):
            check_seal(path)
        try:
            lib = ctypes.CDLL(os.path.abspath(path), mode=getattr(os, "RTLD_LOCAL", 0))
        except OSError as err:
            raise ModuleLoadError(
                f"load_module: cannot load {path!r} as a shared library: {err}"
            ) from err
        self.path = path
        self._lib = lib

        def lookup(name: str) -> int | None:
            try:
                return ctypes.addressof(ctypes.c_char.in_dll(lib, name))
            except ValueError:
                return None

        super().__init__(lookup, "so", keepalive=lib, origin=repr(path))

    def export_library(self, path: str | os.PathLike[str], **kwargs: Any) -> None:
        """Copy the library file to ``path``."""
        if kwargs:
            raise TypeError(
                f"SharedLibraryModule.export_library takes no options, got {sorted(kwargs)}"
            )
        if os.path.abspath(os.fspath(path)) != os.path.abspath(self.path):
            with open(self.path, "rb") as f:
                write_file(path, [f.read()], 0o755)


# ---------------------------------------------------------------------- loaders

_loaders: dict[str, Callable[[str], Module]] = {}
_loaders_lock = threading.Lock()


def register_module_loader(
    fmt: str, loader: Callable[[str], Module], override: bool = False
) -> None:
    """Register ``loader(path) -> Module`` for files with suffix ``fmt`` (in-process)."""
    fmt = fmt.lstrip(".").lower()
    with _loaders_lock:
        if fmt in _loaders and not override:
            raise ValueError(f"a module loader for format {fmt!r} is already registered")
        _loaders[fmt] = loader


class BuiltinModuleLoaderPlugin:
    """The built-in plugin that loads shared libraries and in-process registered formats."""

    @staticmethod
    @hookimpl(trylast=True)
    def tvm_runtime_module_loader(fmt: str) -> Callable[[str], Module] | None:
        if fmt in _loaders:
            return _loaders[fmt]
        if fmt in _SHARED_LIBRARY_FORMATS:
            return SharedLibraryModule
        return None


def load_module(path: str | os.PathLike[str], fmt: str | None = None, *,
                trusted: bool = False) -> Module:
    """Load a module file; the format is ``fmt`` or the file's suffix (``so``, ...).

    A shared library or VM executable must carry the seal tvm's ``export_library`` writes
    (checked before the file is opened as a library, see :mod:`.file_seal`); ``trusted=True``
    loads one without (a library you built yourself and trust)."""
    from .hooks import call_runtime_hook

    path = os.fspath(path)
    if fmt is None:
        suffix = os.path.splitext(path)[1]
        if not suffix:
            raise ModuleLoadError(
                f"load_module: {path!r} has no file suffix; pass fmt= (e.g. fmt='so')"
            )
        fmt = suffix[1:]
    fmt = fmt.lstrip(".").lower()
    if not os.path.exists(path):
        raise FileNotFoundError(f"load_module: no such file: {path!r}")
    loader = call_runtime_hook("tvm_runtime_module_loader", fmt=fmt, required=True)
    if loader is None:
        known = sorted(set(_SHARED_LIBRARY_FORMATS) | set(_loaders))
        raise ModuleLoadError(
            f"load_module: no loader for format {fmt!r} (file {path!r}); built in or "
            f"registered: {', '.join(known)}; a plugin can add formats through the "
            "tvm_runtime_module_loader hook"
        )
    token = _TRUSTED.set(bool(trusted))
    try:
        module = loader(path)
    finally:
        _TRUSTED.reset(token)
    if not isinstance(module, Module):
        raise ModuleLoadError(
            f"load_module: the loader for format {fmt!r} returned {type(module).__name__}, "
            "not a tvm.runtime.Module"
        )
    return module
