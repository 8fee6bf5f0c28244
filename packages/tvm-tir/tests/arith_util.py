"""Shared helpers for the tvm.arith tests: a reference evaluator and a compact printer."""

from __future__ import annotations

from typing import Any

from tvm.tir import expr as E


def _trunc_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def evaluate(e: Any, env: dict, lane: int = 0) -> Any:
    """Evaluate an integer/bool TIR expression with unbounded Python ints and floor/trunc
    semantics per node; raises ZeroDivisionError on a division by zero.  For a vector
    expression, the value of lane ``lane`` (``Ramp``/``Broadcast`` give it per lane)."""
    t = type(e)
    if t in (E.Var, E.SizeVar):
        return env[e]
    if t is E.IntImm:
        return e.value
    if t is E.FloatImm:
        return e.value
    if t is E.Ramp:
        return evaluate(e.base, env) + lane * evaluate(e.stride, env)
    if t is E.Broadcast:
        return evaluate(e.value, env)
    if t is E.Cast:
        return evaluate(e.value, env, lane)
    if t is E.Select:
        c = evaluate(e.condition, env, lane)
        return evaluate(e.true_value, env, lane) if c else evaluate(e.false_value, env, lane)
    if t is E.Not:
        return not evaluate(e.a, env, lane)
    if t is E.And:
        return bool(evaluate(e.a, env, lane)) and bool(evaluate(e.b, env, lane))
    if t is E.Or:
        return bool(evaluate(e.a, env, lane)) or bool(evaluate(e.b, env, lane))
    a, b = evaluate(e.a, env, lane), evaluate(e.b, env, lane)
    if t is E.Add:
        return a + b
    if t is E.Sub:
        return a - b
    if t is E.Mul:
        return a * b
    if t is E.FloorDiv:
        return a // b
    if t is E.FloorMod:
        return a % b
    if t is E.Div:
        return _trunc_div(a, b)
    if t is E.Mod:
        return a - b * _trunc_div(a, b)
    if t is E.Min:
        return min(a, b)
    if t is E.Max:
        return max(a, b)
    if t is E.LT:
        return a < b
    if t is E.LE:
        return a <= b
    if t is E.GT:
        return a > b
    if t is E.GE:
        return a >= b
    if t is E.EQ:
        return a == b
    if t is E.NE:
        return a != b
    raise NotImplementedError(t.__name__)


_OPS = {E.Add: "+", E.Sub: "-", E.Mul: "*", E.FloorDiv: "//", E.FloorMod: "%", E.LT: "<",
        E.LE: "<=", E.GT: ">", E.GE: ">=", E.EQ: "==", E.NE: "!=", E.And: "and", E.Or: "or"}


def fmt(e: Any) -> str:
    """A compact infix rendering for assertion messages."""
    t = type(e)
    if isinstance(e, E.Var):
        return e.name
    if t in (E.IntImm, E.FloatImm):
        return str(e.value) if e.dtype in ("int32", "float32") else f"{e.dtype}({e.value})"
    if t in _OPS:
        return f"({fmt(e.a)} {_OPS[t]} {fmt(e.b)})"
    if t in (E.Min, E.Max, E.Div, E.Mod):
        return f"{t.__name__.lower()}({fmt(e.a)}, {fmt(e.b)})"
    if t is E.Not:
        return f"not {fmt(e.a)}"
    if t is E.Select:
        return f"select({fmt(e.condition)}, {fmt(e.true_value)}, {fmt(e.false_value)})"
    if t is E.Cast:
        return f"{e.dtype}({fmt(e.value)})"
    if t is E.Ramp:
        return f"ramp({fmt(e.base)}, {fmt(e.stride)}, {e.lanes})"
    if t is E.Broadcast:
        return f"x{e.lanes}({fmt(e.value)})"
    return repr(e)
