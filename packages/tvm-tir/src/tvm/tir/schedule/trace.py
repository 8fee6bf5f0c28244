"""Trace: the instructions a schedule ran, with the decisions of its random samples.

::

    print(sch.trace)                 # Python: b0 = sch.get_block("C") ...
    text = sch.trace.as_json()       # JSON text; Trace.from_json(text) reads it back
    new = tir.Schedule(func)
    sch.trace.apply_to_schedule(new)               # the same program
    t2 = sch.trace.with_decision(inst, [8, 16])    # an auto-tuner's mutation

JSON layout: ``{"version": 1, "insts": [[kind, inputs, attrs, outputs], ...],
"decisions": [[inst_index, decision], ...]}``.  Handles are ``{"rv": "l1"}`` (named in
order of definition: ``b`` blocks, ``l`` loops, ``v`` sampled values); expressions are
``{"expr": <tvm.ffi JSON>, "rvs": [names of the ExprRVs they use]}``.
"""

from __future__ import annotations

import inspect
import json
from typing import Any, Callable, Optional

from tvm.ffi import Object, from_json, to_json

from ..expr import (
    Add, FloorDiv, FloorMod, FloatImm, IntImm, Max, Min, Mul, PrimExpr, StringImm, Sub, Var,
)
from ..stmt_functor import free_vars, substitute
from .handles import BlockRV, ExprRV, LoopRV
from .instruction import Instruction, InstructionKind, get_instruction_kind

__all__ = ["Trace"]

DecisionProvider = Callable[[Instruction, list, list, Any], Any]
_JSON_VERSION = 1


class Trace:
    """An ordered list of :class:`Instruction` and ``{instruction: decision}``."""

    def __init__(self, insts: Optional[list[Instruction]] = None,
                 decisions: Optional[dict[Instruction, Any]] = None):
        self.insts: list[Instruction] = list(insts or [])
        self.decisions: dict[Instruction, Any] = dict(decisions or {})

    # -- editing ----------------------------------------------------------------------------
    def append(self, inst: Instruction, decision: Any = None) -> None:
        self.insts.append(inst)
        if decision is not None:
            self.decisions[inst] = decision

    def pop(self) -> Optional[Instruction]:
        """Remove and return the last instruction (``None`` when empty)."""
        if not self.insts:
            return None
        inst = self.insts.pop()
        self.decisions.pop(inst, None)
        return inst

    def get_decision(self, inst: Instruction) -> Any:
        return self.decisions.get(inst)

    def copy(self) -> Trace:
        return Trace(self.insts, self.decisions)

    def with_decision(self, inst: Instruction, decision: Any, remove_postproc: bool = True
                      ) -> Trace:
        """A copy of the trace where ``inst`` (a sampling instruction of it) takes
        ``decision``.  (``remove_postproc`` is accepted for TVM compatibility; this trace
        has no post-processing section.)"""
        if inst not in self.decisions and not inst.kind.has_decision:
            raise ValueError(f"with_decision: {inst.kind.name} is not a sampling instruction")
        if not any(i is inst for i in self.insts):
            raise ValueError(f"with_decision: {inst!r} is not an instruction of this trace")
        new = self.copy()
        new.decisions[inst] = _freeze_decision(decision)
        return new

    def simplified(self, remove_postproc: bool = True) -> Trace:
        """The trace without pure instructions whose outputs nothing uses."""
        used: set[int] = set()
        kept: list[Instruction] = []
        for inst in reversed(self.insts):
            if inst.kind.pure and not any(id(o) in used for o in inst.outputs):
                continue
            kept.append(inst)
            for rv in _rvs_in(inst.inputs):
                used.add(id(rv))
        kept.reverse()
        return Trace(kept, {i: d for i, d in self.decisions.items() if i in set(kept)})

    # -- replay -----------------------------------------------------------------------------
    def apply_to_schedule(self, sch: Any, remove_postproc: bool = False,
                          decision_provider: Optional[DecisionProvider] = None) -> None:
        """Run every instruction on ``sch`` (a fresh Schedule of the same program).

        ``decision_provider(inst, inputs, attrs, decision)`` may return another decision
        for a sampling instruction.
        """
        rv_map: dict[int, Any] = {}
        for inst in self.insts:
            inputs = [_translate(x, rv_map) for x in inst.inputs]
            attrs = list(inst.attrs)
            decision = self.decisions.get(inst)
            if decision_provider is not None and inst.kind.has_decision:
                decision = decision_provider(inst, inputs, attrs, decision)
            outputs = inst.kind.apply(sch, inputs, attrs, decision)
            if len(outputs) != len(inst.outputs):
                raise ValueError(
                    f"replaying {inst.kind.name}: it now gives {len(outputs)} results, the "
                    f"trace recorded {len(inst.outputs)}; the schedule is not of the same "
                    "program"
                )
            for old, new in zip(inst.outputs, outputs):
                rv_map[id(old)] = new

    # -- printing ---------------------------------------------------------------------------
    def as_python(self, remove_postproc: bool = False) -> list[str]:
        """One line of Python per instruction (``sch`` is the schedule)."""
        names = _Names()
        lines = []
        for inst in self.insts:
            kind = inst.kind
            args = []
            values = dict(zip(kind.inputs, inst.inputs))
            values.update(zip(kind.attrs, inst.attrs))
            for pos, param in enumerate(kind.params):
                value = values[param]
                default = kind.default(param)
                if param == kind.varargs:
                    args.extend(_py(v, names) for v in value)
                    continue
                if pos > 0 and _is_default(value, default):
                    continue
                text = _py(value, names)
                args.append(text if pos == 0 else f"{param}={text}")
            if inst in self.decisions:
                args.append(f"decision={_py(self.decisions[inst], names)}")
            call = f"sch.{kind.method}({', '.join(args)})"
            outs = [names.define(rv) for rv in inst.outputs]
            if kind.outputs == "none":
                lines.append(call)
            elif kind.outputs == "one":
                lines.append(f"{outs[0]} = {call}")
            elif not outs:
                lines.append(f"_ = {call}")
            elif len(outs) == 1:
                lines.append(f"({outs[0]},) = {call}")
            else:
                lines.append(f"{', '.join(outs)} = {call}")
        return lines

    def show(self) -> None:
        print(str(self))

    def __str__(self) -> str:
        return "\n".join(self.as_python())

    def __repr__(self) -> str:
        return f"Trace({len(self.insts)} instructions)"

    def __len__(self) -> int:
        return len(self.insts)

    # -- JSON -------------------------------------------------------------------------------
    def as_json(self, remove_postproc: bool = False, indent: Optional[int] = None) -> str:
        names = _Names()
        insts = []
        index: dict[int, int] = {}
        for k, inst in enumerate(self.insts):
            index[id(inst)] = k
            inputs = [_enc(x, names) for x in inst.inputs]
            attrs = [_enc(x, names) for x in inst.attrs]
            outputs = [names.define(rv) for rv in inst.outputs]
            insts.append([inst.kind.name, inputs, attrs, outputs])
        decisions = [[index[id(i)], _enc(d, names)] for i, d in self.decisions.items()
                     if id(i) in index]
        return json.dumps({"version": _JSON_VERSION, "insts": insts, "decisions": decisions},
                          indent=indent)

    @staticmethod
    def from_json(text: Any) -> Trace:
        """Read :meth:`as_json` output (a string or the parsed dict) with fresh handles."""
        data = json.loads(text) if isinstance(text, str) else text
        if not isinstance(data, dict) or "insts" not in data:
            raise ValueError("Trace.from_json: expected an object with an 'insts' list")
        rvs: dict[str, Any] = {}
        insts = []
        for pos, entry in enumerate(data["insts"]):
            if not (isinstance(entry, list) and len(entry) == 4):
                raise ValueError(f"Trace.from_json: instruction {pos} must be "
                                 f"[kind, inputs, attrs, outputs], got {entry!r}")
            name, inputs, attrs, outputs = entry
            kind = get_instruction_kind(name)
            ins = [_dec(x, rvs, f"instruction {pos} ({name})") for x in inputs]
            ats = [_dec(x, rvs, f"instruction {pos} ({name})") for x in attrs]
            outs = [_new_rv(o, rvs) for o in outputs]
            _check_arity(kind, ins, ats, pos)
            insts.append(Instruction(kind, ins, ats, outs))
        decisions = {}
        for k, dec in data.get("decisions", []):
            decisions[insts[k]] = _freeze_decision(_dec(dec, rvs, f"decision of {k}"))
        return Trace(insts, decisions)


def _check_arity(kind: InstructionKind, inputs: list, attrs: list, pos: int) -> None:
    if len(inputs) != len(kind.inputs) or len(attrs) != len(kind.attrs):
        raise ValueError(
            f"Trace.from_json: instruction {pos} ({kind.name}) has {len(inputs)} inputs and "
            f"{len(attrs)} attrs, expected {len(kind.inputs)} and {len(kind.attrs)}"
        )


def _freeze_decision(d: Any) -> Any:
    return tuple(_freeze_decision(x) for x in d) if isinstance(d, (list, tuple)) else d


def _is_default(value: Any, default: Any) -> bool:
    if default is _EMPTY:
        return False
    if isinstance(value, (Object, BlockRV, LoopRV)):
        return False
    try:
        return bool(value == default) and type(value) is type(default)
    except Exception:  # noqa: BLE001 - an odd value simply prints
        return False


_EMPTY = inspect.Parameter.empty


class _Names:
    """Names handles in order of definition: b0, l1, v2 ..."""

    def __init__(self) -> None:
        self.names: dict[int, str] = {}

    def define(self, rv: Any) -> str:
        if id(rv) not in self.names:
            self.names[id(rv)] = f"{rv._prefix}{len(self.names)}"
        return self.names[id(rv)]

    def get(self, rv: Any) -> str:
        name = self.names.get(id(rv))
        if name is None:  # a handle from outside the trace: name it anyway
            name = self.define(rv)
        return name


def _rvs_in(value: Any) -> list[Any]:
    if isinstance(value, (BlockRV, LoopRV, ExprRV)):
        return [value]
    if isinstance(value, (list, tuple)):
        return [rv for v in value for rv in _rvs_in(v)]
    if isinstance(value, PrimExpr):
        return [v for v in free_vars(value) if isinstance(v, ExprRV)]
    return []


def _translate(value: Any, rv_map: dict[int, Any]) -> Any:
    if isinstance(value, (BlockRV, LoopRV, ExprRV)):
        if id(value) not in rv_map:
            raise ValueError(f"trace uses {value!r} before any instruction defines it")
        return rv_map[id(value)]
    if isinstance(value, (list, tuple)):
        return [_translate(v, rv_map) for v in value]
    if isinstance(value, PrimExpr):
        vmap = {v: rv_map[id(v)] for v in free_vars(value) if id(v) in rv_map}
        return substitute(value, vmap) if vmap else value
    return value


# -- Python text ---------------------------------------------------------------------------
_PY_OPS = {Add: "+", Sub: "-", Mul: "*", FloorDiv: "//", FloorMod: "%"}


def _py(value: Any, names: _Names) -> str:
    if isinstance(value, (BlockRV, LoopRV, ExprRV)):
        return names.get(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_py(v, names) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_py(k, names)}: {_py(v, names)}" for k, v in value.items()) + "}"
    if isinstance(value, IntImm):
        return str(value.value) if value.dtype == "int32" else f"T.{value.dtype}({value.value})"
    if isinstance(value, FloatImm):
        return f"T.{value.dtype}({value.value!r})"
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, StringImm):
        return json.dumps(value.value)
    if type(value) in _PY_OPS:
        return f"({_py(value.a, names)} {_PY_OPS[type(value)]} {_py(value.b, names)})"
    if isinstance(value, (Min, Max)):
        return f"T.{type(value).__name__.lower()}({_py(value.a, names)}, {_py(value.b, names)})"
    if isinstance(value, Var):
        return value.name
    return repr(value)


# -- JSON values ---------------------------------------------------------------------------
def _enc(value: Any, names: _Names) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (BlockRV, LoopRV, ExprRV)):
        return {"rv": names.get(value)}
    if isinstance(value, (list, tuple)):
        return [_enc(v, names) for v in value]
    if isinstance(value, dict):
        return {"dict": [[_enc(k, names), _enc(v, names)] for k, v in value.items()]}
    if isinstance(value, PrimExpr):
        rvs = [v for v in free_vars(value) if isinstance(v, ExprRV)]
        return {"expr": to_json(value), "rvs": [names.get(v) for v in rvs]}
    if isinstance(value, Object):
        return {"obj": to_json(value)}
    raise TypeError(f"Trace.as_json: cannot encode {type(value).__name__} {value!r}")


def _dec(value: Any, rvs: dict[str, Any], where: str) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, list):
        return [_dec(v, rvs, where) for v in value]
    if isinstance(value, dict):
        if "rv" in value:
            if value["rv"] not in rvs:
                raise ValueError(f"Trace.from_json: {where} uses {value['rv']!r} before it "
                                 "is defined")
            return rvs[value["rv"]]
        if "dict" in value:
            return {_dec(k, rvs, where): _dec(v, rvs, where) for k, v in value["dict"]}
        if "expr" in value:
            expr = from_json(value["expr"])
            free = [v for v in free_vars(expr) if isinstance(v, ExprRV)]
            names = value.get("rvs", [])
            if len(free) != len(names):
                raise ValueError(f"Trace.from_json: {where}: expression uses {len(free)} "
                                 f"sampled values but lists {len(names)}")
            return substitute(expr, {v: rvs[n] for v, n in zip(free, names)})
        if "obj" in value:
            return from_json(value["obj"])
    raise ValueError(f"Trace.from_json: {where}: cannot decode {value!r}")


def _new_rv(name: Any, rvs: dict[str, Any]) -> Any:
    if not isinstance(name, str) or not name:
        raise ValueError(f"Trace.from_json: output names must be strings, got {name!r}")
    cls = {"b": BlockRV, "l": LoopRV, "v": None}.get(name[0])
    if name[0] == "v":
        rv = ExprRV(name, "int32")
    elif cls is not None:
        rv = cls()
    else:
        raise ValueError(f"Trace.from_json: output name {name!r} must start with b, l or v")
    rvs[name] = rv
    return rv
