"""Instructions: one recorded call of a schedule primitive.

Each primitive is a :class:`Schedule` method decorated with :func:`instruction`, which
declares the instruction kind: its name, which parameters are *inputs* (handles, sampled
values, numbers that may be handles: ``loop``, ``factors``) and which are *attrs* (plain
values: names, flags), how the result is returned, and whether the primitive is pure (does
not change the IR) or takes a random *decision*.

Calling a decorated method runs it through :meth:`Schedule._run_instruction`, which resolves
nothing itself but (1) snapshots the state, (2) runs the body, rolling the state back if it
raises, and (3) appends ``Instruction(kind, inputs, attrs, outputs)`` (and the decision) to
``sch.trace``.  Calls made from inside another primitive are not recorded.

Replaying (:meth:`InstructionKind.apply`) calls the same method by name with the recorded
arguments, so a trace is exactly the sequence of public calls.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from typing import Any, Callable, Optional

__all__ = [
    "InstructionKind", "Instruction", "instruction", "Decided", "get_instruction_kind",
    "list_instruction_kinds",
]

_KINDS: dict[str, InstructionKind] = {}


@dataclasses.dataclass(frozen=True)
class InstructionKind:
    """What is known about a primitive, for recording, printing, JSON and replay."""

    name: str
    method: str
    params: tuple[str, ...]          # signature order, without ``self`` and ``decision``
    inputs: tuple[str, ...]          # handle-carrying parameters
    attrs: tuple[str, ...]           # plain-valued parameters
    defaults: tuple[tuple[str, Any], ...]
    outputs: str                     # "one" | "list" | "none"
    pure: bool
    has_decision: bool
    varargs: Optional[str] = None    # the ``*loops`` parameter, if any

    def default(self, param: str) -> Any:
        for key, value in self.defaults:
            if key == param:
                return value
        return inspect.Parameter.empty

    def apply(self, sch: Any, inputs: list, attrs: list, decision: Any = None) -> list:
        """Call the primitive on ``sch``; returns its outputs as a list."""
        kwargs = dict(zip(self.inputs, inputs))
        kwargs.update(zip(self.attrs, attrs))
        if self.has_decision:
            kwargs["decision"] = decision
        args = list(kwargs.pop(self.varargs)) if self.varargs else []
        result = getattr(sch, self.method)(*args, **kwargs)
        return flatten_outputs(self, result)


def flatten_outputs(kind: InstructionKind, result: Any) -> list:
    if kind.outputs == "none":
        return []
    if kind.outputs == "one":
        return [result]
    return list(result)


class Instruction:
    """``kind`` applied to ``inputs`` (handles and values) and ``attrs``, giving ``outputs``."""

    __slots__ = ("kind", "inputs", "attrs", "outputs")

    def __init__(self, kind: InstructionKind, inputs: Any, attrs: Any, outputs: Any):
        self.kind = kind
        self.inputs = _freeze(list(inputs))
        self.attrs = _freeze(list(attrs))
        self.outputs = tuple(outputs)

    def __repr__(self) -> str:
        return f"Instruction({self.kind.name}, inputs={list(self.inputs)!r}, " \
               f"attrs={list(self.attrs)!r})"


def _freeze(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    return value


@dataclasses.dataclass(frozen=True)
class Decided:
    """Returned by a sampling primitive's body: its result and the decision taken."""

    result: Any
    decision: Any


def instruction(
    name: str,
    *,
    inputs: tuple[str, ...] = (),
    attrs: tuple[str, ...] = (),
    outputs: str = "none",
    pure: bool = False,
    decision: bool = False,
) -> Callable[[Callable], Callable]:
    """Declare a Schedule method as a recorded primitive (see the module doc).

    Every parameter of the method but ``self`` (and ``decision`` for sampling primitives)
    must be listed in ``inputs`` or ``attrs``; a ``*loops`` parameter is recorded as a list.  ``outputs`` is ``"one"`` (a single handle),
    ``"list"`` (a list of handles) or ``"none"``.  A method with ``decision=True`` takes a
    ``decision`` keyword (``None``: sample one) and returns :class:`Decided`.
    """
    if outputs not in ("one", "list", "none"):
        raise ValueError(f"instruction {name!r}: outputs must be 'one', 'list' or 'none'")

    def wrap(fn: Callable) -> Callable:
        sig = inspect.signature(fn)
        params = tuple(p for p in sig.parameters if p not in ("self", "decision"))
        if decision and "decision" not in sig.parameters:
            raise TypeError(f"instruction {name!r}: a sampling method needs a decision= param")
        declared = set(inputs) | set(attrs)
        if declared != set(params) or set(inputs) & set(attrs):
            raise TypeError(
                f"instruction {name!r}: inputs {inputs} and attrs {attrs} must partition the "
                f"parameters {params} of {fn.__name__}"
            )
        defaults = tuple(
            (p, sig.parameters[p].default) for p in params
            if sig.parameters[p].default is not inspect.Parameter.empty
        )
        varargs = next((p for p in params
                        if sig.parameters[p].kind is inspect.Parameter.VAR_POSITIONAL), None)
        kind = InstructionKind(name, fn.__name__, params, tuple(inputs), tuple(attrs), defaults,
                               outputs, pure, decision, varargs)
        if name in _KINDS and _KINDS[name].method != kind.method:
            raise ValueError(f"instruction kind {name!r} is already registered by "
                             f"{_KINDS[name].method}")
        _KINDS[name] = kind

        @functools.wraps(fn)
        def method(self: Any, *args: Any, **kwargs: Any) -> Any:
            return self._run_instruction(kind, fn, sig, args, kwargs)

        method.instruction_kind = kind  # type: ignore[attr-defined]
        return method

    return wrap


def get_instruction_kind(name: str) -> InstructionKind:
    """The kind registered under ``name`` (``"Split"``); KeyError lists the known ones."""
    try:
        return _KINDS[name]
    except KeyError:
        raise KeyError(
            f"unknown schedule instruction kind {name!r}; known: {', '.join(sorted(_KINDS))}"
        ) from None


def list_instruction_kinds() -> list[str]:
    return sorted(_KINDS)

