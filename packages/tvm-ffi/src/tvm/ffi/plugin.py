"""The pluggy plugin host shared by every tvm package.

One ``pluggy.PluginManager("tvm")`` serves the whole process.  It is created the first
time :func:`get_plugin_manager` is called (the first time anything asks for a target or a
device), and at that moment it imports and registers every entry point of group ``tvm``::

    [project.entry-points.tvm]
    llvm = "tvm.target.llvm.plugin"

Core packages add their hook specifications with :func:`add_hookspecs` at import time
(before or after the entry points were loaded), and in-process plugins (the CPU device
API of tvm-runtime, say) join with :func:`register_plugin`.  Hook implementations use the
:data:`hookimpl` marker; specifications use :data:`hookspec`.

A plugin that fails to import or to register is reported with a
:class:`PluginLoadWarning` naming it, its distribution and version, and is recorded as
``"failed"`` in :func:`list_plugins`; the other plugins still load.  That includes a plugin
that raises ``SystemExit`` at import; ``KeyboardInterrupt`` always propagates.

Hooks are called through :func:`call_hook`, which runs each implementation on its own: one
that raises is reported with a :class:`PluginHookWarning` naming the plugin (and recorded in
its :attr:`PluginInfo.hook_errors`), and the others still answer.  When the request belongs
to one plugin (the plugin of the target kind being compiled for, say) and that plugin
fails, its error propagates, with a note naming the plugin, instead of another plugin's
answer being taken.

Environment variables (declared in :mod:`tvm.ffi.knobs`; read when the manager is created,
and again by :func:`reload_plugins`):

``TVM_DISABLE_PLUGINS=a,b``
    Comma-separated plugin (entry-point) names that are blocked: never imported, listed
    with status ``"blocked"``.  Built-in plugins can be blocked by name too.
``TVM_TRACE_PLUGINS=1``
    Trace plugin loading and every hook call.  Lines go straight to ``sys.stderr``
    (no logging configuration needed), one before and one after each call; a
    :func:`call_hook` call is traced per implementation, and a failure gets a line too::

        [tvm-plugin] calling tvm_device_api(device_type=2) on cuda
        [tvm-plugin] hook tvm_device_api(device_type=2) -> <CUDADeviceAPI ...>

The ``logging`` logger ``"tvm.plugin"`` receives load events at DEBUG level (with the
traceback of a failed plugin) whether or not tracing is on.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import importlib.metadata as _metadata
import logging
import reprlib
import sys
import threading
import types
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import pluggy

from .error import PluginError
from .knobs import DISABLE_PLUGINS, TRACE_PLUGINS

__all__ = [
    "collect_plugin_table",
    "PROJECT_NAME",
    "ENTRY_POINT_GROUP",
    "DISABLE_ENV",
    "TRACE_ENV",
    "hookspec",
    "hookimpl",
    "PluginLoadWarning",
    "PluginHookWarning",
    "PluginInfo",
    "call_hook",
    "get_plugin_manager",
    "add_hookspecs",
    "register_plugin",
    "unregister_plugin",
    "list_plugins",
    "get_plugin_info",
    "format_plugin_table",
    "reload_plugins",
    "blocked_plugins",
]

PROJECT_NAME = "tvm"
ENTRY_POINT_GROUP = "tvm"
DISABLE_ENV = DISABLE_PLUGINS.name
TRACE_ENV = TRACE_PLUGINS.name

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
"""Marks a function of a spec module/class as a tvm hook specification."""

hookimpl = pluggy.HookimplMarker(PROJECT_NAME)
"""Marks a function of a plugin as the implementation of a tvm hook."""

logger = logging.getLogger("tvm.plugin")


class PluginLoadWarning(UserWarning):
    """A tvm plugin failed to import or register; the other plugins still load."""


class PluginHookWarning(PluginLoadWarning):
    """A tvm plugin's hook implementation raised; the other plugins were asked instead.

    A subclass of :class:`PluginLoadWarning`, so one filter silences every report of a
    broken plugin."""


#: What a plugin's code may raise without taking the process down with it: ``SystemExit``
#: from a plugin is a bug of the plugin, not a request of the user; ``KeyboardInterrupt``
#: (and other ``BaseException``\ s) propagate.
_PLUGIN_FAILURES = (Exception, SystemExit)


@dataclasses.dataclass(frozen=True)
class PluginInfo:
    """One row of :func:`list_plugins`."""

    name: str
    distribution: str
    version: str
    status: str  # "loaded" | "failed" | "blocked"
    error: str | None = None
    module: str | None = None
    hooks: tuple[str, ...] = ()  # the hooks a loaded plugin implements
    hook_errors: tuple[str, ...] = ()  # "hook: Error: message", the last failure per hook


@dataclasses.dataclass
class _Record:
    name: str
    distribution: str
    version: str | None  # None: look it up from the distribution when listed
    status: str
    error: str | None = None
    module: str | None = None
    plugin: Any = None
    hook_errors: dict[str, str] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class _Builtin:
    plugin: Any
    distribution: str
    version: str | None


_lock = threading.RLock()
_pm: pluggy.PluginManager | None = None
_ready = False  # the entry points of the current manager have been loaded
_specs: list[Any] = []  # every add_hookspecs argument, in order
_spec_owner: dict[str, Any] = {}  # hook name -> the namespace that declared it
_builtins: dict[str, _Builtin] = {}
_records: list[_Record] = []

_trace_repr = reprlib.Repr()
_trace_repr.maxstring = 60
_trace_repr.maxother = 60
_trace_repr.maxlist = 6
_trace_repr.maxdict = 6


# --------------------------------------------------------------------------- environment


def _trace(line: str) -> None:
    stream = sys.stderr  # looked up per call so redirections are honoured
    stream.write(f"[tvm-plugin] {line}\n")
    stream.flush()


def _format_call(hook_name: str, kwargs: Mapping[str, object]) -> str:
    args = ", ".join(f"{k}={_trace_repr.repr(v)}" for k, v in kwargs.items())
    return f"{hook_name}({args})"


def _install_tracing(pm: pluggy.PluginManager) -> None:
    def before(
        hook_name: str, impls: Sequence[pluggy.HookImpl], kwargs: Mapping[str, object]
    ) -> None:
        names = ", ".join(impl.plugin_name for impl in reversed(impls)) or "no plugins"
        _trace(f"calling {_format_call(hook_name, kwargs)} on {names}")

    def after(
        outcome: pluggy.Result[Any],
        hook_name: str,
        impls: Sequence[pluggy.HookImpl],
        kwargs: Mapping[str, object],
    ) -> None:
        exc = outcome.exception
        if exc is not None:
            result = f"raised {type(exc).__name__}: {exc}"
        else:
            result = _trace_repr.repr(outcome.get_result())
        _trace(f"hook {_format_call(hook_name, kwargs)} -> {result}")

    pm.add_hookcall_monitoring(before, after)


# --------------------------------------------------------------------------- loading


def _module_of(obj: Any, fallback: str | None = None) -> str | None:
    if isinstance(obj, types.ModuleType):
        return obj.__name__
    return getattr(obj, "__module__", None) or fallback


def _entry_point_dist(ep: Any) -> tuple[str, str | None]:
    dist = getattr(ep, "dist", None)
    if dist is None:
        return "unknown", "unknown"
    name = getattr(dist, "name", None)
    if not name:
        try:
            name = dist.metadata["Name"]
        except Exception:  # malformed metadata must not stop loading
            name = None
    version = getattr(dist, "version", None)
    return str(name or "unknown"), str(version or "unknown")


def _entry_point_module(ep: Any) -> str | None:
    module = getattr(ep, "module", None)
    if module:
        return str(module)
    value = getattr(ep, "value", None)
    return str(value).split(":")[0].strip() if value else None


def _describe(err: BaseException) -> str:
    return f"{type(err).__name__}: {err}"


def _report_failure(record: _Record, err: BaseException) -> None:
    record.status = "failed"
    record.error = _describe(err)
    record.plugin = None
    version = record.version or _lookup_version(record.distribution)
    message = f"tvm plugin {record.name!r} ({record.distribution} {version}) failed to load: {record.error}"
    logger.debug("%s", message, exc_info=(type(err), err, err.__traceback__))
    if TRACE_PLUGINS.get():
        _trace(message)
    warnings.warn(message, PluginLoadWarning, stacklevel=2)


def _register_into(pm: pluggy.PluginManager, record: _Record, obj: Any) -> None:
    """Register ``obj`` under ``record.name``, updating the record; never raises."""
    try:
        registered = pm.register(obj, record.name)
    except _PLUGIN_FAILURES as err:  # validation error, duplicate name or object
        if pm.get_plugin(record.name) is obj:  # undo a partial registration
            try:
                pm.unregister(plugin=obj, name=record.name)
            except Exception:  # pragma: no cover - best effort clean-up
                logger.debug("could not unregister %r", record.name, exc_info=True)
        _report_failure(record, err)
        return
    if registered is None:
        record.status = "blocked"
        return
    record.status = "loaded"
    record.plugin = obj
    record.module = _module_of(obj, record.module)
    logger.debug(
        "loaded tvm plugin %r (%s) from %s", record.name, record.distribution, record.module
    )
    if TRACE_PLUGINS.get():
        _trace(f"loaded plugin {record.name!r} ({record.distribution}) from {record.module}")


def _load_builtin(
    pm: pluggy.PluginManager, name: str, builtin: _Builtin, blocked: set[str]
) -> None:
    record = _Record(
        name, builtin.distribution, builtin.version, "blocked", module=_module_of(builtin.plugin)
    )
    _records.append(record)
    if name not in blocked:
        _register_into(pm, record, builtin.plugin)


def _load_entry_points(pm: pluggy.PluginManager, blocked: set[str]) -> None:
    try:
        eps = list(_metadata.entry_points(group=ENTRY_POINT_GROUP))
    except Exception as err:
        warnings.warn(
            f"could not enumerate tvm plugins (entry points of group {ENTRY_POINT_GROUP!r}): "
            f"{_describe(err)}",
            PluginLoadWarning,
            stacklevel=2,
        )
        return
    eps.sort(key=lambda ep: (str(ep.name), _entry_point_dist(ep)[0]))
    for ep in eps:
        dist, version = _entry_point_dist(ep)
        record = _Record(str(ep.name), dist, version, "blocked", module=_entry_point_module(ep))
        _records.append(record)
        if record.name in blocked:
            logger.debug("tvm plugin %r is blocked by %s", record.name, DISABLE_ENV)
            continue
        try:
            obj = ep.load()
        except _PLUGIN_FAILURES as err:  # any import-time failure of one plugin is isolated
            _report_failure(record, err)
            continue
        _register_into(pm, record, obj)


def _start() -> None:
    """Create the manager and load every plugin; called with the lock held."""
    global _pm, _ready
    pm = pluggy.PluginManager(PROJECT_NAME)
    blocked = set(DISABLE_PLUGINS.get())
    for name in sorted(blocked):
        pm.set_blocked(name)
    for namespace in _specs:
        pm.add_hookspecs(namespace)
    if TRACE_PLUGINS.get():
        _install_tracing(pm)
    _pm = pm  # visible to plugins that ask for the manager while being imported
    try:
        for name, builtin in list(_builtins.items()):
            _load_builtin(pm, name, builtin, blocked)
        _load_entry_points(pm, blocked)
    finally:
        _ready = True


def get_plugin_manager() -> pluggy.PluginManager:
    """The process-wide ``PluginManager("tvm")``, loading the plugins on first use.

    Do not cache it across :func:`reload_plugins`; call this again instead.
    """
    pm = _pm
    if pm is not None and _ready:
        return pm
    with _lock:
        if _pm is None:
            _start()
        assert _pm is not None
        return _pm


def reload_plugins() -> pluggy.PluginManager:
    """Drop the manager and load everything again (re-reading the environment); for tests."""
    global _pm, _ready
    with _lock:
        _pm = None
        _ready = False
        _records.clear()
        return get_plugin_manager()


@contextlib.contextmanager
def blocked_plugins(names: Iterable[str] | None = None) -> Any:
    """Reload the plugins with ``names`` blocked (default: every plugin that is not built
    in) for the duration of the ``with`` block, then reload them as they were; for tests
    that must not depend on which distributions are installed."""
    if names is None:
        names = [p.name for p in list_plugins() if p.distribution != "builtin"]
    old = DISABLE_PLUGINS.raw()
    os.environ[DISABLE_ENV] = ",".join([*names, *([old] if old else [])])

    def reload() -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PluginLoadWarning)
            reload_plugins()

    try:
        reload()
        yield
    finally:
        if old is None:
            os.environ.pop(DISABLE_ENV, None)
        else:
            os.environ[DISABLE_ENV] = old
        reload()


# --------------------------------------------------------------------------- specs


def _spec_names(namespace: Any) -> list[str]:
    scratch = pluggy.PluginManager(PROJECT_NAME)
    return [n for n in dir(namespace) if scratch.parse_hookspec_opts(namespace, n) is not None]


def add_hookspecs(namespace: Any) -> None:
    """Add the ``@hookspec`` functions of a module or class to the plugin manager.

    Idempotent, and valid before or after the plugins are loaded.  An already loaded
    plugin whose implementation does not match a new spec is unregistered and reported
    as failed (with a :class:`PluginLoadWarning`) instead of breaking the caller's import.
    """
    with _lock:
        if any(s is namespace for s in _specs):
            return
        names = _spec_names(namespace)
        if not names:
            raise ValueError(
                f"add_hookspecs: no @tvm.ffi.hookspec functions found in {namespace!r}"
            )
        for name in names:
            owner = _spec_owner.get(name)
            if owner is not None:
                raise PluginError(
                    f"hook spec {name!r} of {_describe_namespace(namespace)} is already "
                    f"declared by {_describe_namespace(owner)}"
                )
        if _pm is not None:
            _evict_mismatching_plugins(_pm, namespace)
            _pm.add_hookspecs(namespace)
        _specs.append(namespace)
        for name in names:
            _spec_owner[name] = namespace


def _describe_namespace(namespace: Any) -> str:
    if isinstance(namespace, types.ModuleType):
        return f"module {namespace.__name__}"
    return (
        f"{getattr(namespace, '__module__', '?')}.{getattr(namespace, '__qualname__', namespace)}"
    )


def _evict_mismatching_plugins(pm: pluggy.PluginManager, namespace: Any) -> None:
    """Check the registered plugins against the specs of ``namespace`` before adding them."""
    scratch = pluggy.PluginManager(PROJECT_NAME)
    scratch.add_hookspecs(namespace)
    for name, plugin in pm.list_name_plugin():
        if plugin is None:  # blocked
            continue
        try:
            scratch.register(plugin, name)
        except pluggy.PluginValidationError as err:
            pm.unregister(plugin=plugin, name=name)
            record = next((r for r in _records if r.name == name and r.plugin is plugin), None)
            if record is None:  # registered directly on the manager by someone else
                record = _Record(name, "unknown", "unknown", "failed", module=_module_of(plugin))
                _records.append(record)
            _report_failure(record, err)


# --------------------------------------------------------------------------- calling


def _hook_caller(pm: pluggy.PluginManager, hook: str) -> pluggy.HookCaller:
    caller = getattr(pm.hook, hook, None)
    if caller is None or caller.spec is None:
        raise PluginError(
            f"no hook spec named {hook!r} is declared (is the package that declares it "
            "imported?)"
        )
    return caller


def _record_of(name: str, plugin: Any) -> _Record | None:
    return next((r for r in _records if r.name == name and r.plugin is plugin), None)


def _describe_plugin(name: str, record: _Record | None) -> str:
    if record is None:
        return f"tvm plugin {name!r}"
    version = record.version or _lookup_version(record.distribution)
    return f"tvm plugin {name!r} ({record.distribution} {version})"


def call_hook(
    hook: str,
    /,
    *,
    owner: str | None = None,
    required: bool = False,
    kwargs_for: Callable[[str], Mapping[str, Any]] | None = None,
    **kwargs: Any,
) -> Any:
    """Call hook ``hook`` with ``kwargs``, one plugin implementation at a time.

    Returns what pluggy would: the first answer that is not ``None`` for a ``firstresult``
    hook (``None`` when nobody answers), else the list of answers that are not ``None``.
    An implementation that raises (``SystemExit`` included) is skipped: it is reported with
    a :class:`PluginHookWarning` naming its plugin and recorded in that plugin's
    :attr:`PluginInfo.hook_errors`, and the other implementations are still called.

    A failure is the caller's error instead when no other answer may replace it:

    * ``owner`` names the plugin the request belongs to (the plugin of the target kind
      asked for); its failure propagates at once, since another plugin's answer would be
      wrong;
    * ``required=True`` (the caller cannot go on without an answer): when nobody answered
      and plugins failed, the failure propagates (several: a
      :class:`~tvm.ffi.PluginError` listing them).

    A propagated exception keeps its type and gets a note naming the plugin and the hook;
    ``SystemExit`` becomes a :class:`~tvm.ffi.PluginError` naming them.
    ``kwargs_for(name)`` gives extra keyword arguments for plugin ``name`` (a registration
    hook hands each plugin its own ``register`` callback).
    """
    pm = get_plugin_manager()
    caller = _hook_caller(pm, hook)
    spec = caller.spec
    assert spec is not None
    firstresult = bool(spec.opts.get("firstresult", False))
    impls = caller.get_hookimpls()
    wrappers = [i for i in impls if i.hookwrapper or i.wrapper]
    results: list[Any] = []
    failures: list[tuple[pluggy.HookImpl, BaseException]] = []
    answered = False
    for impl in reversed(impls):  # pluggy's order: last registered (or tryfirst) first
        if impl.hookwrapper or impl.wrapper:
            continue
        call_kwargs = dict(kwargs)
        if kwargs_for is not None:
            call_kwargs.update(kwargs_for(impl.plugin_name))
        missing = [a for a in spec.argnames if a not in call_kwargs]
        if missing:
            raise TypeError(f"call_hook({hook!r}): missing hook arguments {missing}")
        try:
            # pluggy's own executor for one implementation (plus any wrappers), so argument
            # mapping and TVM_TRACE_PLUGINS tracing behave as for a plain ``pm.hook`` call.
            answer = pm._hookexec(hook, [impl, *wrappers], call_kwargs, firstresult)
        except _PLUGIN_FAILURES as err:
            if owner is not None and impl.plugin_name == owner:
                raise _propagated(hook, kwargs, impl, err)  # noqa: B904 - err itself, or chained
            failures.append((impl, err))
            continue
        if firstresult:
            if answer is not None:
                results.append(answer)
                answered = True
                break
        else:
            results.extend(a for a in answer if a is not None)
            answered = answered or bool(results)
    if required and failures and not answered:
        if len(failures) == 1:
            impl, err = failures[0]
            raise _propagated(hook, kwargs, impl, err)
        listed = "; ".join(
            f"{_plugin_message(hook, kwargs, impl, err)}" for impl, err in failures
        )
        raise PluginError(f"no plugin answered, and several failed: {listed}") from (
            failures[0][1]
        )
    for impl, err in failures:
        _report_hook_failure(hook, kwargs, impl, err)
    if firstresult:
        return results[0] if results else None
    return results


def _plugin_message(
    hook: str, kwargs: Mapping[str, Any], impl: pluggy.HookImpl, err: BaseException
) -> str:
    who = _describe_plugin(impl.plugin_name, _record_of(impl.plugin_name, impl.plugin))
    return f"{who} failed in hook {_format_call(hook, kwargs)}: {_describe(err)}"


def _propagated(
    hook: str, kwargs: Mapping[str, Any], impl: pluggy.HookImpl, err: BaseException
) -> BaseException:
    """The exception to raise for a failure nobody else may answer for."""
    message = _plugin_message(hook, kwargs, impl, err)
    logger.debug("%s", message, exc_info=(type(err), err, err.__traceback__))
    if isinstance(err, SystemExit):
        converted = PluginError(message)
        converted.__cause__ = err
        return converted
    err.add_note(message)
    return err


def _report_hook_failure(
    hook: str, kwargs: Mapping[str, Any], impl: pluggy.HookImpl, err: BaseException
) -> None:
    """Record and report one failed implementation that other plugins answered for."""
    with _lock:
        record = _record_of(impl.plugin_name, impl.plugin)
        if record is not None:
            record.hook_errors[hook] = _describe(err)
    message = _plugin_message(hook, kwargs, impl, err)
    logger.debug("%s", message, exc_info=(type(err), err, err.__traceback__))
    if TRACE_PLUGINS.get():
        _trace(message)
    warnings.warn(f"{message}; the other plugins were asked instead", PluginHookWarning,
                  stacklevel=3)


# --------------------------------------------------------------------------- built-ins


_collect_lock = threading.RLock()


def collect_plugin_table(hook: str, cls: type, what: str,
                          table: dict[str, tuple[Any, str]], loaded: list[Any],
                          on_add: Callable[[Any], None] | None = None) -> None:
    """(Re)fill ``table`` (name -> (entry, plugin)) from the plugins implementing ``hook``
    (``hook(register)``, one ``register(cls(...))`` per entry, each with a ``name``) when the
    manager or its set of implementations changed; a broken plugin warns without hiding the
    others.  ``loaded`` is a one-item list the caller keeps (what the table was filled from);
    ``on_add(entry)`` runs for each entry taken.  The registries of target kinds, tags,
    external backends and tensor intrinsics all fill their plugin part with it."""
    pm = get_plugin_manager()
    impls = getattr(pm.hook, hook).get_hookimpls()
    key = (pm, tuple((impl.plugin_name, id(impl.plugin)) for impl in impls))
    if loaded[0] == key:
        return
    with _collect_lock:
        if loaded[0] == key:
            return
        table.clear()
        loaded[0] = key

        offered: dict[str, list[Any]] = {impl.plugin_name: [] for impl in impls}

        def kwargs_for(plugin: str) -> dict[str, Any]:
            def register(entry: Any) -> None:
                if not isinstance(entry, cls):
                    raise TypeError(f"register() expects a {cls.__name__}, got "
                                    f"{type(entry).__name__}")
                offered[plugin].append(entry)

            return {"register": register}

        # one broken plugin is reported (naming it) without hiding the others' entries
        call_hook(hook, kwargs_for=kwargs_for)
        for impl in impls:  # registration order: on a clash the first plugin's entry stays
            for entry in offered[impl.plugin_name]:
                if entry.name in table:
                    other = table[entry.name][1]
                    warnings.warn(
                        f"tvm plugin {impl.plugin_name!r} registers {what} {entry.name!r}, "
                        f"which plugin {other!r} already provides; keeping the first",
                        PluginLoadWarning,
                        stacklevel=2,
                    )
                    continue
                table[entry.name] = (entry, impl.plugin_name)
                if on_add is not None:
                    on_add(entry)



def register_plugin(
    plugin: Any, name: str, *, distribution: str = "builtin", version: str | None = None
) -> None:
    """Register an in-process plugin (a module, class or object with ``@hookimpl``\\ s).

    It joins the manager now if it exists, else when it is created; it survives
    :func:`reload_plugins`.  ``version=None`` looks the distribution's version up when
    listed.  Registering a name twice raises :class:`~tvm.ffi.PluginError`.
    """
    if not isinstance(name, str) or not name:
        raise TypeError(f"register_plugin: name must be a non-empty str, got {name!r}")
    with _lock:
        existing = _builtins.get(name)
        if existing is not None:
            raise PluginError(
                f"a built-in tvm plugin named {name!r} is already registered "
                f"(from {_module_of(existing.plugin)}); unregister_plugin({name!r}) first"
            )
        builtin = _Builtin(plugin, distribution, version)
        _builtins[name] = builtin
        if _pm is not None:
            _load_builtin(_pm, name, builtin, {name} if _pm.is_blocked(name) else set())


def unregister_plugin(name: str) -> None:
    """Remove a plugin (built-in, or loaded from an entry point) by name.

    Removing a built-in does not trigger plugin loading; removing any other name does.
    """
    with _lock:
        builtin = _builtins.pop(name, None)
        pm = _pm if builtin is not None else get_plugin_manager()
        found = builtin is not None
        if pm is not None and pm.get_plugin(name) is not None:
            pm.unregister(name=name)
            found = True
        before = len(_records)
        _records[:] = [r for r in _records if r.name != name]
        if not found and len(_records) == before:
            raise PluginError(f"no tvm plugin named {name!r} is registered")


# --------------------------------------------------------------------------- listing


def _lookup_version(distribution: str) -> str:
    if distribution in ("builtin", "unknown"):
        return "unknown"
    try:
        return _metadata.version(distribution)
    except Exception:
        return "unknown"


def _info(pm: pluggy.PluginManager, record: _Record) -> PluginInfo:
    hooks: tuple[str, ...] = ()
    if record.status == "loaded" and record.plugin is not None:
        callers = pm.get_hookcallers(record.plugin) or []
        hooks = tuple(sorted(hc.name for hc in callers))
    return PluginInfo(
        name=record.name,
        distribution=record.distribution,
        version=record.version or _lookup_version(record.distribution),
        status=record.status,
        error=record.error,
        module=record.module,
        hooks=hooks,
        hook_errors=tuple(f"{h}: {e}" for h, e in sorted(record.hook_errors.items())),
    )


def list_plugins() -> list[PluginInfo]:
    """Every known plugin (built-in first, then entry points by name), loading if needed."""
    pm = get_plugin_manager()
    with _lock:
        return [_info(pm, r) for r in _records]


def get_plugin_info(name: str) -> PluginInfo | None:
    """The :class:`PluginInfo` of the plugin called ``name`` (``None`` if unknown).

    Packages use it to explain why nothing handles a target: "plugin 'cuda' failed to
    load: ..." reads better than "unknown target".
    """
    for info in list_plugins():
        if info.name == name:
            return info
    return None


def format_plugin_table(plugins: Iterable[PluginInfo] | None = None) -> str:
    """A readable text table of :func:`list_plugins` (or of the given rows)."""
    rows = list(list_plugins() if plugins is None else plugins)
    if not rows:
        return f"no tvm plugins installed (entry-point group {ENTRY_POINT_GROUP!r})"
    header = ("NAME", "DISTRIBUTION", "VERSION", "STATUS", "MODULE", "DETAIL")
    table: list[tuple[str, ...]] = [header]
    for p in rows:
        if p.status == "failed":
            detail = p.error or ""
        elif p.status == "blocked":
            detail = f"blocked by {DISABLE_ENV}"
        else:
            detail = f"hooks: {', '.join(p.hooks)}" if p.hooks else "no hooks"
            if p.hook_errors:
                detail += f"; failed in {'; '.join(p.hook_errors)}"
        table.append((p.name, p.distribution, p.version, p.status, p.module or "-", detail))
    widths = [max(len(row[i]) for row in table) for i in range(len(header) - 1)]
    lines = []
    for row in table:
        cells = [cell.ljust(w) for cell, w in zip(row, widths)]
        lines.append("  ".join([*cells, row[-1]]).rstrip())
    return "\n".join(lines)
