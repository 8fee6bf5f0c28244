"""Small queries on TIR expressions, shared by tvm.arith, the passes, the schedule, the rules
and tvm.relax (one home each, so that they cannot drift apart):

* :func:`const_int` — the value of an integer immediate (``None`` for anything else);
* :func:`const_value` — the value of an int/float immediate or a broadcast of one;
* :func:`is_const_int` — whether an expression is a given integer constant;
* :func:`same_expr` — structural equality of two expressions, optionally also requiring that
  one may stand for the other (no side effects);
* :func:`has_side_effect` — whether evaluating an expression may change state;
* :func:`loop_extent` — the constant extent of a loop (a ``For`` or a loop ``StmtSRef``).
"""

from __future__ import annotations

from typing import Any, Optional, Union

from .expr import Broadcast, Call, FloatImm, IntImm, Var

__all__ = [
    "const_int", "const_value", "is_const_int", "same_expr", "has_side_effect", "loop_extent",
]


def const_int(expr: Any) -> Optional[int]:
    """The value of an integer (or bool) immediate, or of a Python int; ``None`` otherwise."""
    if isinstance(expr, IntImm):
        return expr.value
    if isinstance(expr, int) and not isinstance(expr, bool):
        return expr
    return None


def const_value(expr: Any) -> Union[int, float, None]:
    """The value of an IntImm/FloatImm or of a Broadcast of one; ``None`` otherwise."""
    if isinstance(expr, (IntImm, FloatImm)):
        return expr.value
    if isinstance(expr, Broadcast) and isinstance(expr.value, (IntImm, FloatImm)):
        return expr.value.value
    return None


def is_const_int(expr: Any, value: Optional[int] = None) -> bool:
    """Whether ``expr`` is an integer constant (an IntImm, a Broadcast of one, or a Python
    int), equal to ``value`` when given."""
    if isinstance(expr, Broadcast):
        expr = expr.value
    v = const_int(expr)
    return v is not None and (value is None or v == value)


def same_expr(a: Any, b: Any, pure: bool = False) -> bool:
    """Whether ``a`` and ``b`` are structurally equal (free variables by identity).

    With ``pure=True`` they must also be free of side effects, so that one evaluation may
    replace the other (``x - x -> 0``, ``min(x, x) -> x``)."""
    if a is b:
        return not (pure and has_side_effect(a))
    if type(a) is not type(b):
        return False
    if isinstance(a, IntImm):
        return a.value == b.value and a.dtype == b.dtype
    from tvm.ffi import structural_equal

    if not structural_equal(a, b):
        return False
    return not (pure and has_side_effect(a))


def has_side_effect(node: Any) -> bool:
    """Whether evaluating ``node`` may change state (it calls a non-pure, non-read op)."""
    from .op import effect_kind
    from .stmt_functor import pre_order_visit

    if isinstance(node, (IntImm, FloatImm, Var)):
        return False
    found = False

    def visit(x: Any) -> Any:
        nonlocal found
        if found:
            return False
        if isinstance(x, Call) and effect_kind(x) == "side_effect":
            found = True
            return False
        return None

    pre_order_visit(node, visit)
    return found


def loop_extent(loop: Any) -> Optional[int]:
    """The constant extent of a loop — a ``For`` or the ``StmtSRef`` of one (in a schedule
    rule: ``loop_extent(sch.get(loop_rv))``) — or ``None`` when it is symbolic."""
    from .stmt import For

    return const_int((loop if isinstance(loop, For) else loop.loop).extent)
