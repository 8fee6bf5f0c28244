"""Writing PrimExprs in the run-time expression format (:mod:`tvm.runtime.int_expr`).

The VM compiler (shape expressions over heap slots) and the GPU host-program writer
(expressions over argument and let names) both emit expressions with :func:`to_int_expr`;
only how a variable is named differs, which the caller's ``var_key`` decides.
"""

from __future__ import annotations

from typing import Any, Callable, Union

from .. import expr as E

__all__ = ["to_int_expr", "BINARY_OPS"]

#: TIR node -> run-time binary operator
BINARY_OPS: dict[type, str] = {
    E.Add: "add", E.Sub: "sub", E.Mul: "mul", E.Div: "div", E.Mod: "mod",
    E.FloorDiv: "floordiv", E.FloorMod: "floormod", E.Min: "min", E.Max: "max",
    E.EQ: "eq", E.NE: "ne", E.LT: "lt", E.LE: "le", E.GT: "gt", E.GE: "ge",
    E.And: "and", E.Or: "or",
}


def to_int_expr(e: Any, var_key: Callable[[E.Var], Union[int, str]],
                fail: Callable[[str], Exception]) -> Any:
    """``e`` as a run-time expression; ``var_key(var)`` gives a variable's key (a heap slot
    or a name; it raises when the variable is not available) and ``fail(what)`` builds the
    error for an expression the format cannot hold."""

    def conv(x: Any) -> Any:
        if isinstance(x, E.IntImm):
            return bool(x.value) if x.dtype == "bool" else int(x.value)
        if isinstance(x, E.FloatImm):
            return float(x.value)
        if isinstance(x, E.Var):
            return ["var", var_key(x)]
        op = BINARY_OPS.get(type(x))
        if op is not None:
            return [op, conv(x.a), conv(x.b)]
        if isinstance(x, E.Not):
            return ["not", conv(x.a)]
        if isinstance(x, E.Select):
            return ["select", conv(x.condition), conv(x.true_value), conv(x.false_value)]
        if isinstance(x, E.Cast):
            inner = conv(x.value)
            return inner if x.value.dtype == x.dtype else ["cast", x.dtype, inner]
        if isinstance(x, E.Call) and getattr(x.op, "name", "") == "tir.likely":
            return conv(x.args[0])
        if isinstance(x, E.Call) and getattr(x.op, "name", "") == "tir.if_then_else":
            return ["select", *(conv(a) for a in x.args)]
        if isinstance(x, E.Let):
            raise fail("uses a Let expression (run Simplify first)")
        raise fail(f"computes {type(x).__name__} {x}")

    return conv(e)
