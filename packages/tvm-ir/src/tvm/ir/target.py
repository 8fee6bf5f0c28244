"""Targets: what to compile for (``Target("llvm -mcpu=znver3 -num-cores=2")``).

A :class:`TargetKind` declares a kind of target: its name, DLPack device type, typed
attributes with defaults and default keys.  Kinds come from target plugins, which implement
the hook ``tvm_register_target_kinds(register)`` and call ``register(TargetKind(...))``;
they are collected lazily the first time a target is asked for.  In-process code (tests,
notebooks) uses :func:`register_target_kind`.

The core asks this registry for what it needs instead of naming a plugin.  A kind declares
``capabilities`` (:data:`HOST_JIT`: it compiles in-process for the machine it runs on and
loads the result at once), and :func:`host_target` returns a Target of the kind that has
one, so constant folding and weight prepacking compile with whatever host JIT is installed.
A kind also declares its ``lowering_passes`` (name -> factory): they are registered with
:func:`tvm.ir.transform.register_pass` under their names when the kind is registered, and
``tvm.tir.build`` runs them at the end of its default pipeline, where pass instruments see
them.

Named targets (:class:`TargetTag`: a board or CPU generation, ``Target("raspberry-pi-4")``)
come the same way, from plugins implementing ``tvm_register_target_tags(register)`` or from
:func:`register_target_tag`; a tag stands for a target string of a registered kind, and
options after its name replace the tag's.  :meth:`Target.list_tags` lists them.

A :class:`Target` is an IR object (it serialises and compares structurally) holding the
kind's name, every attribute value (defaults filled in), the keys and an optional host.
``str(target)`` is the canonical string (only non-default attributes, sorted), which parses
back to an equal target.  The host is not part of the string; ``target.export()`` gives a
dict that includes it.
"""

from __future__ import annotations

import dataclasses
import difflib
import re
import shlex
import threading
import types
from collections.abc import Callable, Mapping
from typing import Any

from tvm.ffi import Object, PluginError, TVMError, register_object, tree_field
from tvm.ffi.plugin import (
    collect_plugin_table,
    DISABLE_ENV,
    add_hookspecs,
    hookspec,
    list_plugins,
)

from .base import FrozenDict
from .transform import register_pass

__all__ = [
    "Target",
    "TargetKind",
    "TargetError",
    "UnknownTargetKindError",
    "TargetKindSpecs",
    "TargetTag",
    "register_target_tag",
    "unregister_target_tag",
    "get_target_tag",
    "list_target_tags",
    "register_target_kind",
    "unregister_target_kind",
    "get_target_kind",
    "list_target_kinds",
    "target_kind_plugin",
    "host_target",
    "as_target",
    "HOST_JIT",
    "KNOWN_TARGET_DISTRIBUTIONS",
    "KNOWN_CAPABILITY_DISTRIBUTIONS",
]


class TargetError(TVMError, ValueError):
    """A malformed target: bad string, unknown attribute, ill-typed value."""


class UnknownTargetKindError(TargetError, PluginError):
    """No installed plugin provides the requested target kind."""


# kind name -> the distribution that provides it, for "pip install ..." hints.
KNOWN_TARGET_DISTRIBUTIONS: dict[str, str] = {
    "llvm": "tvm-target-llvm",
    "c": "tvm-target-c",
    "cuda": "tvm-target-cuda",
    "nvptx": "tvm-target-cuda",
    "opencl": "tvm-target-opencl",
    "metal": "tvm-target-metal",
    "rocm": "tvm-target-rocm",
    "vulkan": "tvm-target-vulkan",
}

#: capability of a kind that compiles in-process for the machine it runs on and loads the
#: result at once (a host JIT): what compile-time evaluation asks :func:`host_target` for.
HOST_JIT = "host-jit"

# capability -> a distribution that provides a kind with it, for "pip install ..." hints.
KNOWN_CAPABILITY_DISTRIBUTIONS: dict[str, str] = {HOST_JIT: "tvm-target-llvm"}

_SCALAR_TYPES = (str, int, bool, float)
_LIST_TYPES = (list[str], list[int])
_RESERVED = ("kind", "keys", "host")
_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-]*$")
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


_EXAMPLES = {
    str: "e.g. -{0}=value",
    int: "e.g. -{0}=4",
    bool: "e.g. -{0}=true, -{0}=false or the flag -{0}",
    float: "e.g. -{0}=1.5",
    list[str]: "a comma-separated list, e.g. -{0}=a,b",
    list[int]: "a comma-separated list of ints, e.g. -{0}=1,2",
}


def _type_name(t: Any) -> str:
    return t.__name__ if isinstance(t, type) else str(t)


def _normalize_type(t: Any) -> Any:
    if t is list:
        return list[str]
    if t in _SCALAR_TYPES or t in _LIST_TYPES:
        return t
    raise TypeError(
        f"unsupported target attribute type {t!r}; use str, int, bool, float, list[str] or "
        "list[int]"
    )


def _convert(kind: str, attr: str, t: Any, value: Any) -> Any:
    """``value`` (a string from a target string, or a Python value) as type ``t``."""

    def bad() -> TargetError:
        return TargetError(
            f"target kind {kind!r}: attribute {attr!r} expects {_type_name(t)}, got "
            f"{type(value).__name__} {value!r} ({_EXAMPLES[t].format(attr)})"
        )

    if t is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in _TRUE + _FALSE:
            return value.strip().lower() in _TRUE
        raise bad()
    if t is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, str):
            try:
                return int(value.strip(), 0)
            except ValueError:
                raise bad() from None
        raise bad()
    if t is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, str):
            try:
                return float(value.strip())
            except ValueError:
                raise bad() from None
        raise bad()
    if t is str:
        if isinstance(value, str):
            return value
        raise bad()
    elem = t.__args__[0]
    if isinstance(value, str):
        items: list[Any] = [v.strip() for v in value.split(",") if v.strip()]
    elif isinstance(value, (list, tuple)):
        items = list(value)
    else:
        raise bad()
    try:
        return tuple(_convert(kind, attr, elem, v) for v in items)
    except TargetError:
        raise bad() from None


def _format_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return ",".join(str(v) for v in value)
    return str(value)


@dataclasses.dataclass(frozen=True)
class TargetKind:
    """A kind of target.

    ``attrs`` maps attribute names to ``(type, default)``; types are str, int, bool, float,
    list[str] or list[int]; a default of None means "unset".  ``canonicalize``, if given,
    receives the full attribute dict and returns it adjusted (e.g. a host-CPU default).
    ``package`` names the distribution that provides the kind.  ``capabilities`` are what
    the core may ask the registry for (:data:`HOST_JIT`, see :func:`host_target`).
    ``lowering_passes`` maps pass names (``"tir.llvm.PromoteLoopAccumulators"``) to
    zero-argument factories of the TIR passes that targets of this kind run at the end of
    ``tvm.tir.build``'s default pipeline, in order; they are registered by name with
    :func:`tvm.ir.transform.register_pass` when the kind is registered.
    """

    name: str
    device_type: int
    attrs: Mapping[str, tuple[Any, Any]] = dataclasses.field(default_factory=dict)
    default_keys: tuple[str, ...] = ()
    package: str = ""
    canonicalize: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    doc: str = ""
    capabilities: frozenset[str] = frozenset()
    lowering_passes: Mapping[str, Callable[[], Any]] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME_RE.match(self.name):
            raise ValueError(f"invalid target kind name {self.name!r}")
        if not isinstance(self.device_type, int) or isinstance(self.device_type, bool):
            raise TypeError(f"target kind {self.name!r}: device_type must be an int (DLPack code)")
        attrs: dict[str, tuple[Any, Any]] = {}
        for attr, spec in dict(self.attrs).items():
            if not isinstance(attr, str) or not _NAME_RE.match(attr) or attr in _RESERVED:
                raise ValueError(f"target kind {self.name!r}: invalid attribute name {attr!r}")
            if isinstance(spec, tuple) and len(spec) == 2:
                t, default = spec
            else:
                t, default = spec, None
            t = _normalize_type(t)
            if default is not None:
                default = _convert(self.name, attr, t, default)
            attrs[attr] = (t, default)
        object.__setattr__(self, "attrs", types.MappingProxyType(attrs))
        keys = self.default_keys
        if isinstance(keys, str):
            keys = (keys,)
        object.__setattr__(self, "default_keys", tuple(keys) or (self.name,))
        caps = self.capabilities
        if isinstance(caps, str):
            caps = (caps,)
        if not all(isinstance(c, str) and c for c in caps):
            raise TypeError(f"target kind {self.name!r}: capabilities must be strings, got {caps!r}")
        object.__setattr__(self, "capabilities", frozenset(caps))
        passes = dict(self.lowering_passes)
        for pass_name, factory in passes.items():
            if not isinstance(pass_name, str) or not pass_name or not callable(factory):
                raise TypeError(
                    f"target kind {self.name!r}: lowering_passes maps pass names to "
                    f"zero-argument factories of passes, got {pass_name!r}: {factory!r}"
                )
        object.__setattr__(self, "lowering_passes", types.MappingProxyType(passes))

    def resolve_attr(self, name: str) -> str | None:
        """The declared spelling of ``name`` (``num_cores`` finds ``num-cores``), or None."""
        for candidate in (name, name.replace("_", "-"), name.replace("-", "_")):
            if candidate in self.attrs:
                return candidate
        return None

    def unknown_attr(self, name: str) -> TargetError:
        close = difflib.get_close_matches(name, list(self.attrs), n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        listing = ", ".join(sorted(self.attrs)) or "none"
        return TargetError(
            f"target kind {self.name!r} has no attribute {name!r}{hint} (attributes: {listing})"
        )


@dataclasses.dataclass(frozen=True)
class TargetTag:
    """A named target: ``Target(name)`` stands for ``target`` (a target string or dict of a
    registered kind), e.g. a board with its triple, CPU, features and core count.

    Options after the name replace the tag's (``Target("<tag> -num-cores=2")``).  ``doc``
    says what the name describes; ``package`` names the distribution that provides it.
    """

    name: str
    target: str | Mapping[str, Any]
    doc: str = ""
    package: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME_RE.match(self.name):
            raise ValueError(f"invalid target tag name {self.name!r}")
        spec = self.spec()
        if not isinstance(spec.get("kind"), str) or "host" in spec:
            raise ValueError(f"target tag {self.name!r}: its target needs a kind and no host, "
                             f"got {self.target!r}")
        if isinstance(self.target, Mapping):
            object.__setattr__(self, "target", types.MappingProxyType(dict(self.target)))

    def spec(self) -> dict[str, Any]:
        """The tag's target as a dict (``kind`` plus attributes)."""
        if isinstance(self.target, str):
            kind, options = _parse_string(self.target)
            return {"kind": kind, **options}
        return dict(self.target)


class TargetKindSpecs:
    """Hook specifications of tvm.ir.target."""

    @hookspec
    def tvm_register_target_kinds(self, register: Callable[[TargetKind], None]) -> None:
        """Call ``register(TargetKind(...))`` once per target kind the plugin provides."""

    @hookspec
    def tvm_register_target_tags(self, register: Callable[[TargetTag], None]) -> None:
        """Call ``register(TargetTag(...))`` once per named target (board, CPU generation)
        the plugin provides."""


add_hookspecs(TargetKindSpecs)

# --------------------------------------------------------------------------- registry

_lock = threading.RLock()
_LOCAL_KINDS: dict[str, TargetKind] = {}
_PLUGIN_KINDS: dict[str, tuple[TargetKind, str]] = {}  # name -> (kind, plugin name)
_loaded_from: list[Any] = [None]  # (manager, implementations) the plugin kinds came from


def register_target_kind(kind: TargetKind, override: bool = False) -> TargetKind:
    """Register a kind in-process; re-registering a name needs ``override=True``."""
    if not isinstance(kind, TargetKind):
        raise TypeError(f"register_target_kind expects a TargetKind, got {type(kind).__name__}")
    with _lock:
        existing = _LOCAL_KINDS.get(kind.name)
        if existing is not None and existing is not kind and not override:
            raise ValueError(
                f"target kind {kind.name!r} is already registered (by "
                f"{existing.package or 'in-process code'}); pass override=True to replace it"
            )
        _LOCAL_KINDS[kind.name] = kind
    _register_passes(kind)
    return kind


def _register_passes(kind: TargetKind) -> None:
    """Make the kind's lowering passes findable by name (``get_pass``, instruments), unless
    its distribution already declares them under entry-point group ``tvm.passes`` (then the
    declared entry is the one table row, found before any Target is made)."""
    from .transform import _declared_passes

    declared = _declared_passes()
    for pass_name, factory in kind.lowering_passes.items():
        if pass_name not in declared:
            register_pass(factory, pass_name)


def unregister_target_kind(name: str) -> None:
    """Remove an in-process kind (tests)."""
    with _lock:
        if _LOCAL_KINDS.pop(name, None) is None:
            raise KeyError(f"no in-process target kind named {name!r}")


def _load_plugin_kinds() -> None:
    """(Re)collect the plugins' kinds when the manager or its set of implementations changed."""
    collect_plugin_table("tvm_register_target_kinds", TargetKind, "target kind",
                          _PLUGIN_KINDS, _loaded_from, _register_passes)


def _all_kinds() -> dict[str, TargetKind]:
    """Plugin kinds overlaid with in-process ones (an in-process registration wins)."""
    _load_plugin_kinds()
    kinds = {name: kind for name, (kind, _) in _PLUGIN_KINDS.items()}
    kinds.update(_LOCAL_KINDS)
    return kinds


def target_kind_plugin(name: str) -> str | None:
    """The name of the plugin that provides target kind ``name`` (``None`` for a kind
    registered in-process, or an unknown one): the plugin that owns hook requests for it,
    whose failure :func:`tvm.ffi.call_hook` reports instead of taking another's answer."""
    _load_plugin_kinds()
    if name in _LOCAL_KINDS:
        return None
    entry = _PLUGIN_KINDS.get(name)
    return entry[1] if entry is not None else None


def list_target_kinds(capability: str | None = None) -> list[str]:
    """Names of every available target kind (plugins included), sorted; with
    ``capability``, only the kinds that declare it (e.g. :data:`HOST_JIT`)."""
    kinds = _all_kinds()
    return sorted(n for n, k in kinds.items() if capability is None or capability in k.capabilities)


_LOCAL_TAGS: dict[str, TargetTag] = {}
_PLUGIN_TAGS: dict[str, tuple[TargetTag, str]] = {}  # name -> (tag, plugin name)
_tags_loaded_from: list[Any] = [None]


def register_target_tag(tag: TargetTag, override: bool = False) -> TargetTag:
    """Register a named target in-process; re-registering a name needs ``override=True``."""
    if not isinstance(tag, TargetTag):
        raise TypeError(f"register_target_tag expects a TargetTag, got {type(tag).__name__}")
    with _lock:
        existing = _LOCAL_TAGS.get(tag.name)
        if existing is not None and existing != tag and not override:
            raise ValueError(f"target tag {tag.name!r} is already registered; pass "
                             "override=True to replace it")
        _LOCAL_TAGS[tag.name] = tag
    return tag


def unregister_target_tag(name: str) -> None:
    """Remove an in-process tag (tests)."""
    with _lock:
        if _LOCAL_TAGS.pop(name, None) is None:
            raise KeyError(f"no in-process target tag named {name!r}")


def list_target_tags() -> dict[str, TargetTag]:
    """Every named target (plugins' tags overlaid with in-process ones), sorted by name."""
    collect_plugin_table("tvm_register_target_tags", TargetTag, "target tag", _PLUGIN_TAGS,
                          _tags_loaded_from)
    tags = {name: tag for name, (tag, _) in _PLUGIN_TAGS.items()}
    tags.update(_LOCAL_TAGS)
    return dict(sorted(tags.items()))


def get_target_tag(name: str) -> TargetTag:
    """The tag called ``name``; a :class:`TargetError` with close matches otherwise."""
    tags = list_target_tags()
    tag = tags.get(name)
    if tag is not None:
        return tag
    close = difflib.get_close_matches(name, list(tags), n=3, cutoff=0.6)
    hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
    raise TargetError(f"unknown target tag {name!r}{hint} (Target.list_tags() lists "
                      f"{len(tags)} tags)")


def host_target(capability: str = HOST_JIT, *, allow_none: bool = False) -> Target | None:
    """A Target (default attributes) of an installed kind with ``capability``, by default
    a host JIT: what the core compiles with when it evaluates code at compile time.

    In-process registrations come first, then plugin kinds in the order the plugins
    registered them.  With none installed: None if ``allow_none``, else
    :class:`UnknownTargetKindError` saying what to install.
    """
    kinds = _all_kinds()
    local = [k for name, k in kinds.items() if name in _LOCAL_KINDS]
    plugin = [k for name, k in kinds.items() if name not in _LOCAL_KINDS]
    for kind in local + plugin:
        if capability in kind.capabilities:
            return Target(kind.name)
    if allow_none:
        return None
    installed = ", ".join(sorted(kinds)) or "none"
    dist = KNOWN_CAPABILITY_DISTRIBUTIONS.get(capability)
    what = "compiles for this machine in-process" if capability == HOST_JIT else "declares it"
    hint = f"; install one, e.g. pip install {dist}" if dist else ""
    raise UnknownTargetKindError(
        f"no installed target kind has the capability {capability!r} (a kind that {what}); "
        f"installed target kinds: {installed}{hint}"
    )


def as_target(target: str | dict | Target | None = None) -> Target:
    """``target`` as a :class:`Target` (a Target is returned as is).  None means the
    innermost ``with Target(...)``, else :func:`host_target`: the documented default of
    the functions that compile (``tvm.tir.build``, ``tvm.relax.build``)."""
    if isinstance(target, Target):
        return target
    if target is None:
        current = Target.current()
        return current if current is not None else host_target()  # type: ignore[return-value]
    if isinstance(target, (str, dict)):
        return Target(target)
    raise TypeError(
        f"target must be a string (e.g. the kind name), dict or Target, or None for the "
        f"current or host target; got {type(target).__name__} {target!r}"
    )


def get_target_kind(name: str) -> TargetKind:
    """The kind called ``name``; :class:`UnknownTargetKindError` explains what to install."""
    kinds = _all_kinds()
    kind = kinds.get(name)
    if kind is not None:
        return kind
    raise UnknownTargetKindError(_unknown_kind_message(name, kinds))


def _unknown_kind_message(name: str, kinds: dict[str, TargetKind]) -> str:
    installed = ", ".join(sorted(kinds)) or "none"
    parts = [f"unknown target kind {name!r}; installed target kinds: {installed}."]
    dist = KNOWN_TARGET_DISTRIBUTIONS.get(name)
    for info in list_plugins():
        if info.name != name and (dist is None or info.distribution != dist):
            continue
        if info.status == "blocked":
            parts.append(
                f"The plugin {info.name!r} ({info.distribution}) is disabled by {DISABLE_ENV}."
            )
        elif info.status == "failed":
            parts.append(
                f"The plugin {info.name!r} ({info.distribution} {info.version}) failed to load: "
                f"{info.error}."
            )
    if dist is not None:
        parts.append(f"Target kind {name!r} is provided by {dist}: pip install {dist}")
    else:
        tags = list_target_tags()
        close = difflib.get_close_matches(name, [*kinds, *tags], n=3, cutoff=0.6)
        if close:
            parts.append(f"Did you mean {', '.join(repr(c) for c in close)}?")
        parts.append(f"It is not a target tag either ({len(tags)} named targets: "
                     "Target.list_tags()).")
        parts.append("A plugin distribution registers kinds through the 'tvm' entry point group.")
    return " ".join(parts)


# --------------------------------------------------------------------------- Target

_state = threading.local()


def _target_stack() -> list[Target]:
    stack = getattr(_state, "stack", None)
    if stack is None:
        stack = _state.stack = []
    return stack


def _parse_string(text: str) -> tuple[str, dict[str, Any]]:
    try:
        tokens = shlex.split(text)
    except ValueError as err:
        raise TargetError(f"target string {text!r}: {err}") from None
    if not tokens:
        raise TargetError("empty target string: expected a kind such as 'llvm -mcpu=znver3'")
    kind, options = tokens[0], {}
    if kind.startswith("-"):
        raise TargetError(f"target string {text!r} must start with the kind, got {kind!r}")
    for tok in tokens[1:]:
        if not tok.startswith("-") or tok.strip("-") == "":
            raise TargetError(f"target string {text!r}: expected -key=value or -flag, got {tok!r}")
        key, eq, value = tok.lstrip("-").partition("=")
        if key in options:
            raise TargetError(f"target string {text!r} sets -{key} twice")
        options[key] = value if eq else "true"
    return kind, options


@register_object("target.Target")
class Target(Object):
    """A compilation target.

    ``Target("llvm -mcpu=znver3 -mattr=+avx2,+fma")``, ``Target({"kind": "cuda", "arch":
    "sm_90"})``, ``Target(other)``, any of them with ``host=`` (a Target, string or dict).
    Attributes read as ``target.mcpu`` (``num_cores`` for ``num-cores``) or ``target.attrs``.
    """

    kind_name: str
    attrs: dict
    keys: tuple
    host: Any = tree_field(default=None)

    def __init__(self, target: str | dict | Target, host: str | dict | Target | None = None):
        if isinstance(target, Target):
            spec: dict[str, Any] = target.export()
        elif isinstance(target, str):
            kind, options = _parse_string(target)
            spec = {"kind": kind, **options}
        elif isinstance(target, dict):
            spec = dict(target)
        else:
            raise TypeError(f"Target expects a string, dict or Target, got {type(target).__name__}")
        if host is not None:
            spec["host"] = host
        self._build(spec)

    def _build(self, spec: dict[str, Any]) -> None:
        if "kind" not in spec:
            raise TargetError(f"target dict {spec!r} lacks 'kind'")
        kind_name = spec.pop("kind")
        if not isinstance(kind_name, str):
            raise TargetError(f"target kind must be a str, got {kind_name!r}")
        if kind_name not in _all_kinds() and kind_name in list_target_tags():
            # a named target: its attributes, replaced by the options given after the name
            spec = {**get_target_tag(kind_name).spec(), **spec}
            kind_name = spec.pop("kind")
        kind = get_target_kind(kind_name)
        host = spec.pop("host", None)
        keys = spec.pop("keys", None)
        attrs: dict[str, Any] = {a: d for a, (_, d) in kind.attrs.items() if d is not None}
        for key, value in spec.items():
            attr = kind.resolve_attr(key) if isinstance(key, str) else None
            if attr is None:
                raise kind.unknown_attr(str(key))
            attrs[attr] = _convert(kind.name, attr, kind.attrs[attr][0], value)
        if kind.canonicalize is not None:
            adjusted = kind.canonicalize(dict(attrs))
            attrs = {}
            for attr, value in adjusted.items():
                if attr not in kind.attrs:
                    raise kind.unknown_attr(attr)
                attrs[attr] = _convert(kind.name, attr, kind.attrs[attr][0], value)
        if keys is None:
            key_tuple = kind.default_keys
        else:
            given = _convert(kind.name, "keys", list[str], keys)
            key_tuple = given + tuple(k for k in kind.default_keys if k not in given)
        if host is not None and not isinstance(host, Target):
            host = Target(host)
        if host is not None and host.host is not None:
            raise TargetError(f"the host of a {kind.name!r} target cannot itself have a host")
        object.__setattr__(self, "kind_name", kind.name)
        object.__setattr__(
            self, "attrs", FrozenDict(sorted((k, v) for k, v in attrs.items() if v is not None))
        )
        object.__setattr__(self, "keys", key_tuple)
        object.__setattr__(self, "host", host)

    def with_fields(self, **changes: Any) -> Target:
        """A validated copy with some of ``kind_name``, ``attrs``, ``keys``, ``host`` replaced."""
        unknown = set(changes) - {"kind_name", "attrs", "keys", "host"}
        if unknown:
            raise TypeError(f"Target has no fields {sorted(unknown)}")
        if all(getattr(self, k) is v for k, v in changes.items()):
            return self
        spec = {
            "kind": changes.get("kind_name", self.kind_name),
            **changes.get("attrs", self.attrs),
            "keys": changes.get("keys", self.keys),
            "host": changes.get("host", self.host),
        }
        return Target(spec)

    def with_host(self, host: str | dict | Target | None) -> Target:
        """This target with another host (None removes it)."""
        spec = self.export()
        spec.pop("host", None)
        return Target(spec, host=host)

    # -- reflection ---------------------------------------------------------------------------
    @property
    def kind(self) -> TargetKind:
        return get_target_kind(self.kind_name)

    @property
    def device_type(self) -> int:
        """The DLPack device type of the kind."""
        return self.kind.device_type

    def get_attr(self, name: str, default: Any = None) -> Any:
        """An attribute value (``-``/``_`` spellings both work), or ``default``."""
        attr = self.kind.resolve_attr(name)
        if attr is None:
            return default
        return self.attrs.get(attr, default)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name in ("kind_name", "attrs", "keys", "host"):
            raise AttributeError(name)
        try:
            kind = self.kind
        except UnknownTargetKindError as err:
            raise AttributeError(f"{name!r}: {err}") from None
        attr = kind.resolve_attr(name)
        if attr is None:
            raise AttributeError(str(kind.unknown_attr(name))) from None
        return self.attrs.get(attr)

    def export(self) -> dict[str, Any]:
        """A dict form that ``Target(...)`` accepts, host included."""
        spec: dict[str, Any] = {"kind": self.kind_name, **self.attrs, "keys": list(self.keys)}
        spec = {k: list(v) if isinstance(v, tuple) else v for k, v in spec.items()}
        if self.host is not None:
            spec["host"] = self.host.export()
        return spec

    def __str__(self) -> str:
        try:
            kind: TargetKind | None = self.kind
        except UnknownTargetKindError:  # e.g. loaded from JSON without the plugin installed
            kind = None
        parts = [self.kind_name]
        for attr, value in self.attrs.items():
            if kind is not None and attr in kind.attrs and value == kind.attrs[attr][1]:
                continue
            parts.append(shlex.quote(f"-{attr}={_format_value(value)}"))  # quotes only if needed
        if kind is None or self.keys != kind.default_keys:
            parts.append(shlex.quote(f"-keys={','.join(self.keys)}"))
        return " ".join(parts)

    def __repr__(self) -> str:
        host = f", host={str(self.host)!r}" if self.host is not None else ""
        return f"Target({str(self)!r}{host})"

    # -- current target -------------------------------------------------------------------
    def __enter__(self) -> Target:
        _target_stack().append(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        stack = _target_stack()
        if stack and stack[-1] is self:
            stack.pop()

    @staticmethod
    def current(allow_none: bool = True) -> Target | None:
        """The innermost ``with target:`` target; None (or TargetError) when there is none."""
        stack = _target_stack()
        if stack:
            return stack[-1]
        if not allow_none:
            raise TargetError("no current target: use `with Target(...):` or pass a target")
        return None

    @staticmethod
    def list_kinds() -> list[str]:
        """Names of the available target kinds (loads plugins)."""
        return list_target_kinds()

    @staticmethod
    def list_tags() -> dict[str, str]:
        """Named targets (``Target("raspberry-pi-4")``): name -> what it describes and the
        target it stands for (loads plugins)."""
        out = {}
        for name, tag in list_target_tags().items():
            try:
                text = str(Target(tag.spec()))
            except TargetError as err:  # its kind is not installed, or it does not parse
                text = f"unusable here: {err}"
            out[name] = f"{tag.doc} ({text})" if tag.doc else text
        return out
