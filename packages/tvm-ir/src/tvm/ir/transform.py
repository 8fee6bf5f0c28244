"""Pass infrastructure: passes, pass contexts, sequences and instruments.

A pass maps an :class:`~tvm.ir.IRModule` to an IRModule::

    @module_pass(opt_level=1, name="DropUnused")
    def drop_unused(mod, ctx): ...

    @function_pass(opt_level=0, func_type=PrimFunc)
    class Simplify:
        def transform_function(self, func, mod, ctx): ...

    with PassContext(opt_level=3, instruments=[PassTimingInstrument()]):
        mod = Sequential([drop_unused, Simplify()])(mod)

Calling a pass runs it under :meth:`PassContext.current`: a pass whose ``opt_level`` exceeds
the context's, or whose name is in ``disabled_pass``, is skipped (returns its input); one
in ``required_pass`` always runs.  The passes a pass declares in ``required`` (names looked
up with :func:`get_pass`) run first.  Instruments see every pass except the ``Sequential``
containers themselves.

Passes are found by name with :func:`get_pass` (``required=[...]`` uses it too): each
distribution declares its passes as data, ``name = "module:attribute"`` under the
entry-point group ``tvm.passes`` of its ``pyproject.toml``, and the module is imported only
when the pass is asked for; :func:`list_passes` / :func:`pass_table` show them all without
importing any.  :func:`register_pass` adds one in-process (tests, notebooks).

Debug knobs (PassContext config options, see :func:`list_config_options`):

``ir.verify_after_each_pass`` (bool)
    run every verifier registered with :func:`register_verifier` after each pass.
``ir.check_immutable_module`` (bool)
    fail a pass that changed its input module in place (``mod[...] = ...``).

and the instruments of :mod:`tvm.ir.instrument` (re-exported here):
:class:`PassTimingInstrument` (a timing table), :class:`PrintAfterEachPass` / :class:`DumpIR`
(the module's TVMScript after each pass, to a stream or numbered files).
"""

from __future__ import annotations

import dataclasses
import difflib
import importlib
import importlib.metadata
import inspect
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from tvm.ffi import Object, TVMError, register_object, tree_field

from .base import BaseFunc
from .instrument import DumpIR, PassInstrument, PassTimingInstrument, PrintAfterEachPass
from .module import IRModule

__all__ = [
    "PassInfo",
    "Pass",
    "ModulePass",
    "FunctionPass",
    "Sequential",
    "PassContext",
    "PassInstrument",
    "PassTimingInstrument",
    "PrintAfterEachPass",
    "DumpIR",
    "PrintIR",
    "PassVerificationError",
    "ConfigOption",
    "module_pass",
    "function_pass",
    "register_pass",
    "get_pass",
    "list_passes",
    "pass_table",
    "PassEntry",
    "PASS_ENTRY_POINT_GROUP",
    "register_config_option",
    "list_config_options",
    "register_verifier",
]


class PassVerificationError(TVMError):
    """A verifier rejected the module produced by a pass, or a pass mutated its input."""


# --------------------------------------------------------------------------- PassInfo


@register_object("transform.PassInfo")
class PassInfo(Object):
    """Metadata of a pass: ``opt_level``, ``name``, ``required`` pass names, ``traceable``."""

    opt_level: int
    name: str
    required: tuple = tree_field(default=())
    traceable: bool = tree_field(default=False)

    def __post_init__(self) -> None:
        if isinstance(self.required, str):
            object.__setattr__(self, "required", (self.required,))
        elif self.required is None:
            object.__setattr__(self, "required", ())
        Object.__post_init__(self)
        if (
            not isinstance(self.opt_level, int)
            or isinstance(self.opt_level, bool)
            or self.opt_level < 0
        ):
            raise ValueError(f"pass opt_level must be a non-negative int, got {self.opt_level!r}")
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"pass name must be a non-empty str, got {self.name!r}")
        if not all(isinstance(r, str) for r in self.required):
            raise TypeError(
                f"pass {self.name!r}: required must be pass names, got {self.required!r}"
            )


# --------------------------------------------------------------------------- registries


@dataclasses.dataclass(frozen=True)
class ConfigOption:
    """A registered PassContext config key: its value type, default and documentation."""

    key: str
    type: type | tuple[type, ...]
    default: Any
    doc: str

    def check(self, value: Any) -> Any:
        """``value`` converted to the option's type, or a TypeError naming key and types."""
        types = self.type if isinstance(self.type, tuple) else (self.type,)
        for t in types:
            if t is bool and isinstance(value, bool):
                return value
            if t is int and isinstance(value, int) and not isinstance(value, bool):
                return value
            if t is float and isinstance(value, (int, float)) and not isinstance(value, bool):
                return float(value)
            if t not in (bool, int, float) and isinstance(value, t):
                return value
        names = " or ".join(t.__name__ for t in types)
        raise TypeError(
            f"PassContext config {self.key!r} expects {names}, got {type(value).__name__} {value!r}"
        )


_CONFIG_OPTIONS: dict[str, ConfigOption] = {}
_PASSES: dict[str, PassEntry] = {}  # registered in-process (register_pass)
_VERIFIERS: dict[str, Callable[[IRModule], Any]] = {}


def register_config_option(
    key: str, type: type | tuple[type, ...], default: Any = None, doc: str = ""
) -> ConfigOption:
    """Declare a PassContext config key (e.g. ``"tir.UnrollLoop"``); re-declaring replaces it."""
    if not isinstance(key, str) or not key:
        raise ValueError(f"config key must be a non-empty str, got {key!r}")
    option = ConfigOption(key, type, None, doc)
    if default is not None:
        option = dataclasses.replace(option, default=option.check(default))
    _CONFIG_OPTIONS[key] = option
    return option


def list_config_options() -> dict[str, ConfigOption]:
    """Every registered config key, sorted."""
    return dict(sorted(_CONFIG_OPTIONS.items()))


PASS_ENTRY_POINT_GROUP = "tvm.passes"


@dataclasses.dataclass(frozen=True)
class PassEntry:
    """How :func:`get_pass` finds one named pass: ``loader`` is ``"module:attribute"`` (a
    Pass, or a callable returning one when called without arguments), imported on first use,
    or a callable registered in-process; ``distribution`` declared it (None: registered
    in-process with :func:`register_pass`)."""

    name: str
    loader: str | Callable[[], Any]
    distribution: str | None = None

    @property
    def origin(self) -> str:
        return f"distribution {self.distribution}" if self.distribution else "register_pass"

    def load(self) -> Pass:
        """The pass (imports the module that defines it)."""
        target: Any = self.loader
        if isinstance(target, str):
            module_name, _, attr = target.partition(":")
            try:
                target = importlib.import_module(module_name)
                for part in attr.split(".") if attr else ():
                    target = getattr(target, part)
            except (ImportError, AttributeError) as err:
                raise ValueError(
                    f"pass {self.name!r} ({self.origin}) cannot be loaded from {self.loader!r}: "
                    f"{type(err).__name__}: {err}"
                ) from err
        built = target if isinstance(target, Pass) else target()
        if not isinstance(built, Pass):
            raise TypeError(
                f"the loader of pass {self.name!r} ({self.origin}) returned {built!r}, not a Pass"
            )
        return built


_declared: dict[str, PassEntry] | None = None  # from the entry points, read on first use
_declared_lock = threading.Lock()


def _declared_passes() -> dict[str, PassEntry]:
    """The passes distributions declare under entry-point group ``tvm.passes`` (read from
    their metadata once; nothing is imported)."""
    global _declared
    if _declared is None:
        with _declared_lock:
            if _declared is None:
                table: dict[str, PassEntry] = {}
                for ep in importlib.metadata.entry_points(group=PASS_ENTRY_POINT_GROUP):
                    dist = getattr(ep, "dist", None)
                    name = dist.metadata["Name"] if dist is not None else "?"
                    table.setdefault(ep.name, PassEntry(ep.name, ep.value, name))
                _declared = table
    return _declared


def register_pass(pass_or_loader: Pass | str | Callable[[], Pass], name: str | None = None) -> None:
    """Make a pass findable by name in this process (for ``required=[...]`` and
    :func:`get_pass`); it takes precedence over a declared pass of the same name.

    Give a :class:`Pass`, a ``"module:attribute"`` reference or a zero-argument factory
    (the lazy forms: the pass is built on first use).  Distributions declare their passes as
    data instead, under entry-point group ``tvm.passes`` (``"tir.Simplify" =
    "tvm.tir.transform.simplify:Simplify"``), so naming a pass imports nothing until used.
    """
    if isinstance(pass_or_loader, Pass):
        built = pass_or_loader
        name = name or built.info.name
        _PASSES[name] = PassEntry(name, lambda: built)
    elif isinstance(pass_or_loader, str) or callable(pass_or_loader):
        if name is None:
            raise ValueError("register_pass: a loader or factory needs an explicit name")
        if isinstance(pass_or_loader, str) and ":" not in pass_or_loader:
            raise ValueError(f"register_pass: {pass_or_loader!r} is not 'module:attribute'")
        _PASSES[name] = PassEntry(name, pass_or_loader)
    else:
        raise TypeError(f"register_pass expects a Pass, 'module:attribute' or a factory, "
                        f"got {pass_or_loader!r}")


def pass_table() -> dict[str, PassEntry]:
    """Every pass known by name (declared and registered), sorted; nothing is imported."""
    table = dict(_declared_passes())
    table.update(_PASSES)
    return dict(sorted(table.items()))


def get_pass(name: str) -> Pass:
    """The pass called ``name`` (loaded on first use); ValueError with close matches otherwise."""
    entry = _PASSES.get(name) or _declared_passes().get(name)
    if entry is None:
        known = list(pass_table())
        close = difflib.get_close_matches(name, known, n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise ValueError(
            f"no pass named {name!r} is registered{hint} (a distribution declares its passes "
            f"under entry-point group {PASS_ENTRY_POINT_GROUP!r}; in-process, use "
            "tvm.ir.transform.register_pass)"
        )
    return entry.load()


def list_passes() -> list[str]:
    """Names of every pass :func:`get_pass` finds, sorted (without importing them)."""
    return list(pass_table())


def register_verifier(name: str, verify: Callable[[IRModule], Any]) -> None:
    """Add a module verifier run after each pass when ``ir.verify_after_each_pass`` is on.

    ``verify(mod)`` raises (any exception) when the module is ill-formed.
    """
    if not callable(verify):
        raise TypeError(f"verifier {name!r} must be callable(mod)")
    _VERIFIERS[name] = verify


register_config_option(
    "ir.verify_after_each_pass",
    bool,
    False,
    "Run every registered module verifier after each pass; raise PassVerificationError "
    "naming the pass on the first failure.",
)
register_config_option(
    "ir.check_immutable_module",
    bool,
    False,
    "Fail a pass that modified its input IRModule in place instead of returning a new one.",
)


# --------------------------------------------------------------------------- PassContext


_state = threading.local()


def _stack() -> list[PassContext]:
    stack = getattr(_state, "stack", None)
    if stack is None:
        stack = _state.stack = []
    return stack


_INSTRUMENT_METHODS = (
    "enter_pass_ctx",
    "exit_pass_ctx",
    "should_run",
    "run_before_pass",
    "run_after_pass",
)


class PassContext:
    """The settings passes run under; a context manager (``with PassContext(...):``).

    ``opt_level`` (default 2) skips passes with a higher level; ``required_pass`` names
    passes that always run; ``disabled_pass`` names passes that never run; ``instruments``
    are :class:`PassInstrument`\\ s; ``config`` maps registered option keys to values.
    """

    def __init__(
        self,
        opt_level: int = 2,
        required_pass: Sequence[str] | None = None,
        disabled_pass: Sequence[str] | None = None,
        instruments: Sequence[PassInstrument] | None = None,
        config: dict[str, Any] | None = None,
    ) -> None:
        if not isinstance(opt_level, int) or isinstance(opt_level, bool) or opt_level < 0:
            raise ValueError(f"PassContext opt_level must be a non-negative int, got {opt_level!r}")
        self.opt_level = opt_level
        self.required_pass = _name_set("required_pass", required_pass)
        self.disabled_pass = _name_set("disabled_pass", disabled_pass)
        self.instruments = list(instruments or [])
        for i, inst in enumerate(self.instruments):
            missing = [m for m in _INSTRUMENT_METHODS if not callable(getattr(inst, m, None))]
            if missing:
                raise TypeError(
                    f"PassContext instruments[{i}] ({type(inst).__name__}) is not a "
                    f"PassInstrument: it lacks {', '.join(missing)}"
                )
        self.config = {key: _check_config(key, value) for key, value in (config or {}).items()}

    # -- context management -------------------------------------------------------------------
    @staticmethod
    def current() -> PassContext:
        """The innermost entered context, or a default ``PassContext()``."""
        stack = _stack()
        if stack:
            return stack[-1]
        default = getattr(_state, "default", None)
        if default is None:
            default = _state.default = PassContext()
        return default

    def __enter__(self) -> PassContext:
        entered: list[Any] = []
        try:
            for inst in self.instruments:
                inst.enter_pass_ctx()
                entered.append(inst)
        except BaseException:
            for inst in reversed(entered):
                inst.exit_pass_ctx()
            raise
        _stack().append(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        stack = _stack()
        if stack and stack[-1] is self:
            stack.pop()
        for inst in self.instruments:
            inst.exit_pass_ctx()

    # -- queries ------------------------------------------------------------------------------
    def get_config(self, key: str, default: Any = None) -> Any:
        """The value of a config key: the given one, else the registered default."""
        if key in self.config:
            return self.config[key]
        option = _CONFIG_OPTIONS.get(key)
        if option is None:
            _check_config(key, None)  # raises the unknown-key error
        return option.default if option.default is not None else default

    def pass_enabled(self, info: PassInfo) -> bool:
        """Whether a pass with this info runs under this context."""
        if info.name in self.disabled_pass:
            return False
        if info.name in self.required_pass:
            return True
        return info.opt_level <= self.opt_level

    def __repr__(self) -> str:
        return (
            f"PassContext(opt_level={self.opt_level}, required_pass={sorted(self.required_pass)}, "
            f"disabled_pass={sorted(self.disabled_pass)}, instruments="
            f"{[getattr(i, 'name', type(i).__name__) for i in self.instruments]}, "
            f"config={self.config})"
        )

    # -- running ------------------------------------------------------------------------------
    def run(self, pass_: Pass, mod: IRModule) -> IRModule:
        """Run ``pass_`` on ``mod`` under this context (what ``pass_(mod)`` does)."""
        if not isinstance(mod, IRModule):
            raise TypeError(
                f"pass {pass_.info.name!r} expects an IRModule, got {type(mod).__name__}"
            )
        if not self.pass_enabled(pass_.info):
            return mod
        return self._run_enabled(pass_, mod, ())

    def _run_enabled(self, pass_: Pass, mod: IRModule, chain: tuple[str, ...]) -> IRModule:
        info = pass_.info
        for req in info.required:
            if req in chain or req == info.name:
                raise ValueError(f"pass requirement cycle: {' -> '.join((*chain, info.name, req))}")
            if req in self.disabled_pass:
                raise ValueError(
                    f"pass {info.name!r} requires {req!r}, which the PassContext disables"
                )
            mod = self._run_enabled(get_pass(req), mod, (*chain, info.name))
        if isinstance(pass_, Sequential):
            return pass_._apply(mod, self)
        for inst in self.instruments:
            if not inst.should_run(mod, info):
                return mod
        for inst in self.instruments:
            inst.run_before_pass(mod, info)
        before_funcs, before_attrs = mod.functions, mod.attrs
        try:
            result = pass_._apply(mod, self)
        except Exception as err:
            if hasattr(err, "add_note"):
                err.add_note(f"(while running pass {info.name!r})")
            raise
        if not isinstance(result, IRModule):
            raise TypeError(
                f"pass {info.name!r} must return an IRModule, returned {type(result).__name__}"
            )
        if self.get_config("ir.check_immutable_module") and (
            mod.functions is not before_funcs or mod.attrs is not before_attrs
        ):
            raise PassVerificationError(
                f"pass {info.name!r} modified its input IRModule in place; return "
                "mod.with_function(...) instead of assigning mod[...]"
            )
        for inst in self.instruments:
            inst.run_after_pass(result, info)
        if self.get_config("ir.verify_after_each_pass"):
            _verify(result, info)
        return result


def _verify(mod: IRModule, info: PassInfo) -> None:
    for name, verify in list(_VERIFIERS.items()):
        try:
            verify(mod)
        except Exception as err:
            raise PassVerificationError(
                f"IR verification failed after pass {info.name!r} (verifier {name!r}): "
                f"{type(err).__name__}: {err}"
            ) from err


def _name_set(what: str, names: Sequence[str] | None) -> frozenset[str]:
    if names is None:
        return frozenset()
    if isinstance(names, str):
        names = [names]
    for n in names:
        if not isinstance(n, str):
            raise TypeError(f"PassContext {what} must hold pass names (str), got {n!r}")
    return frozenset(names)


def _check_config(key: Any, value: Any) -> Any:
    option = _CONFIG_OPTIONS.get(key) if isinstance(key, str) else None
    if option is None:
        close = difflib.get_close_matches(str(key), list(_CONFIG_OPTIONS), n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        raise ValueError(
            f"unknown PassContext config option {key!r}{hint} (see "
            "tvm.ir.transform.list_config_options(); packages register theirs on import)"
        )
    return option.check(value)


# --------------------------------------------------------------------------- passes


def _arity(func: Callable[..., Any]) -> int | None:
    """Positional parameters ``func`` takes (None: *args, takes everything)."""
    try:
        params = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):
        return None
    count = 0
    for p in params:
        if p.kind == p.VAR_POSITIONAL:
            return None
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            count += 1
    return count


def _adapt(func: Callable[..., Any], full: int) -> Callable[..., Any]:
    """Call ``func`` with the first as many of ``full`` arguments as it takes."""
    n = _arity(func)
    if n is None or n >= full:
        return func
    if n < 1:
        raise TypeError(f"pass function {func!r} must take at least one argument")
    return lambda *args: func(*args[:n])


class Pass:
    """Base of all passes: ``pass_(mod) -> mod`` under :meth:`PassContext.current`."""

    def __init__(self, info: PassInfo) -> None:
        if not isinstance(info, PassInfo):
            raise TypeError(f"Pass expects a PassInfo, got {type(info).__name__}")
        self._info = info

    @property
    def info(self) -> PassInfo:
        return self._info

    @property
    def name(self) -> str:
        return self._info.name

    def __call__(self, mod: IRModule) -> IRModule:
        from tvm.ffi.structural import deep_recursion

        # passes walk IR recursively: a deep expression (a long fused elementwise chain)
        # must not meet Python's default limit of 1000 frames
        with deep_recursion():
            return PassContext.current().run(self, mod)

    def _apply(self, mod: IRModule, ctx: PassContext) -> IRModule:
        raise NotImplementedError(f"{type(self).__name__} does not implement _apply")

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, opt_level={self._info.opt_level})"


class ModulePass(Pass):
    """A pass from ``pass_func(mod, ctx) -> IRModule`` (``pass_func(mod)`` also accepted)."""

    def __init__(self, pass_func: Callable[..., IRModule], info: PassInfo) -> None:
        super().__init__(info)
        self.pass_func = _adapt(pass_func, 2)

    def _apply(self, mod: IRModule, ctx: PassContext) -> IRModule:
        return self.pass_func(mod, ctx)


class FunctionPass(Pass):
    """Applies ``pass_func(func, mod, ctx) -> func`` to each function of the module.

    Only functions that are instances of ``func_type`` (a class or tuple; None: all) are
    visited.  Returning the function unchanged keeps the module; returning None removes it.
    """

    def __init__(
        self,
        pass_func: Callable[..., BaseFunc | None],
        info: PassInfo,
        func_type: type | tuple[type, ...] | None = None,
    ) -> None:
        super().__init__(info)
        self.pass_func = _adapt(pass_func, 3)
        self.func_type = func_type

    def _apply(self, mod: IRModule, ctx: PassContext) -> IRModule:
        funcs = {}
        changed = False
        for gv, func in mod.items():
            if self.func_type is not None and not isinstance(func, self.func_type):
                funcs[gv] = func
                continue
            new = self.pass_func(func, mod, ctx)
            if new is None:
                changed = True
                continue
            if not isinstance(new, BaseFunc):
                raise TypeError(
                    f"function pass {self.name!r} returned {type(new).__name__} for "
                    f"{gv.name_hint!r}; expected a BaseFunc (or None to remove it)"
                )
            changed = changed or new is not func
            funcs[gv] = new
        return IRModule(funcs, mod.attrs) if changed else mod


class Sequential(Pass):
    """Runs ``passes`` in order, each under the current context's rules."""

    def __init__(
        self,
        passes: Sequence[Pass] | None = None,
        opt_level: int = 0,
        name: str = "sequential",
        required: Sequence[str] | None = None,
        traceable: bool = False,
    ) -> None:
        super().__init__(PassInfo(opt_level, name, tuple(required or ()), traceable))
        self.passes = list(passes or [])
        for i, p in enumerate(self.passes):
            if not isinstance(p, Pass):
                raise TypeError(
                    f"Sequential {name!r}: passes[{i}] must be a Pass, got {type(p).__name__} "
                    f"{p!r} (did you forget to call a pass class?)"
                )

    def _apply(self, mod: IRModule, ctx: PassContext) -> IRModule:
        for p in self.passes:
            mod = ctx.run(p, mod)
        return mod

    def __repr__(self) -> str:
        return f"Sequential(name={self.name!r}, passes=[{', '.join(p.name for p in self.passes)}])"


def _info(
    name: str | None, default_name: str, opt_level: int, required: Any, traceable: bool
) -> PassInfo:
    return PassInfo(opt_level, name or default_name, tuple(required or ()), traceable)


def _wrap_class(cls: type, base: type, method: str, info: PassInfo, extra: dict[str, Any]) -> type:
    if not callable(getattr(cls, method, None)):
        raise TypeError(f"pass class {cls.__name__} must define {method}()")

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        inst = cls(*args, **kwargs)
        self._inst = inst
        base.__init__(self, getattr(inst, method), info, **extra)

    def __getattr__(self: Any, name: str) -> Any:
        if name == "_inst":
            raise AttributeError(name)
        return getattr(self._inst, name)

    wrapped = type(
        cls.__name__,
        (base,),
        {
            "__init__": __init__,
            "__getattr__": __getattr__,
            "__doc__": cls.__doc__,
            "__module__": cls.__module__,
            "__qualname__": cls.__qualname__,
            "pass_class": cls,
        },
    )
    return wrapped


def module_pass(
    pass_func: Callable[..., IRModule] | type | None = None,
    opt_level: int = 0,
    name: str | None = None,
    required: Sequence[str] | None = None,
    traceable: bool = False,
) -> Any:
    """Make a :class:`ModulePass` of a function ``f(mod, ctx)`` or of a class.

    On a class with ``transform_module(self, mod, ctx)``, returns a class whose instances
    are passes (constructor arguments go to the original class).  Usable bare
    (``@module_pass``) or with arguments (``@module_pass(opt_level=2, name="X")``).
    """

    def create(obj: Any) -> Any:
        info = _info(name, getattr(obj, "__name__", "ModulePass"), opt_level, required, traceable)
        if inspect.isclass(obj):
            return _wrap_class(obj, ModulePass, "transform_module", info, {})
        if not callable(obj):
            raise TypeError(f"module_pass decorates a function or class, got {obj!r}")
        return ModulePass(obj, info)

    return create(pass_func) if pass_func is not None else create


def function_pass(
    pass_func: Callable[..., BaseFunc | None] | type | None = None,
    opt_level: int = 0,
    name: str | None = None,
    required: Sequence[str] | None = None,
    traceable: bool = False,
    func_type: type | tuple[type, ...] | None = None,
) -> Any:
    """Make a :class:`FunctionPass` of ``f(func, mod, ctx)`` or of a class.

    ``func_type`` restricts it to one kind of function (``PrimFunc``, relax ``Function``).
    A class needs ``transform_function(self, func, mod, ctx)``.
    """

    def create(obj: Any) -> Any:
        info = _info(name, getattr(obj, "__name__", "FunctionPass"), opt_level, required, traceable)
        if inspect.isclass(obj):
            return _wrap_class(
                obj, FunctionPass, "transform_function", info, {"func_type": func_type}
            )
        if not callable(obj):
            raise TypeError(f"function_pass decorates a function or class, got {obj!r}")
        return FunctionPass(obj, info, func_type)

    return create(pass_func) if pass_func is not None else create


def PrintIR(  # noqa: N802
    header: str = "", stream: TextIO | None = None, show_meta: bool = False
) -> ModulePass:
    """A pass that prints the module's TVMScript (after ``header``) and returns it unchanged;
    the metadata block (large constants) only with ``show_meta``."""

    def print_ir(mod: IRModule, ctx: PassContext) -> IRModule:
        out = stream or sys.stdout
        if header:
            out.write(f"# {header}\n")
        out.write(mod.script(show_meta=show_meta))
        return mod

    return ModulePass(print_ir, PassInfo(0, "PrintIR"))
