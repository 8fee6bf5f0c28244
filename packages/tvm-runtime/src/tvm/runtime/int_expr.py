"""The one run-time expression format: shape and launch arithmetic as JSON data.

The VM's bytecode (symbolic shapes, allocation sizes, scalar operands) and the host
programs of GPU modules (shape checks, workspace sizes, grid extents, kernel scalars) store
their expressions in this format, evaluate them with :func:`compile_expr` and print them
with :func:`format_expr`; the compilers (``tvm.tir.codegen.int_expr``) write it.  An
expression is JSON::

    7, 2.5, true                  a literal (int64 unless cast; float; bool)
    ["var", key]                  a variable: key is an int (a VM heap slot) or a string
                                  (a host-program name); looked up as env[key]
    ["add", a, b]                 binary: add sub mul div mod floordiv floormod min max
                                  eq ne lt le gt ge and or (div/mod truncate, as C does)
    ["neg", a], ["not", a]        unary
    ["select", c, t, f]           t if c else f (only the chosen side is evaluated)
    ["cast", dtype, a]            a converted to dtype (integers wrap to its width)

Comparisons and logic give bools; arithmetic is Python's (no wrap-around except in casts).
Integer division or modulo by zero raises ``ZeroDivisionError``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, Optional, Union

from tvm.ffi.dtype import DTypeCode, parse_dtype

__all__ = ["ExprError", "BINARY_OPS", "UNARY_OPS", "validate_expr", "compile_expr",
           "evaluate", "format_expr", "is_literal", "cast_value", "expr_vars"]


class ExprError(ValueError):
    """A malformed run-time expression."""


#: binary operator -> Python source template
BINARY_OPS: dict[str, str] = {
    "add": "({0} + {1})", "sub": "({0} - {1})", "mul": "({0} * {1})",
    "div": "_tdiv({0}, {1})", "mod": "_tmod({0}, {1})",
    "floordiv": "_fdiv({0}, {1})", "floormod": "_fmod({0}, {1})",
    "min": "min({0}, {1})", "max": "max({0}, {1})",
    "eq": "({0} == {1})", "ne": "({0} != {1})", "lt": "({0} < {1})", "le": "({0} <= {1})",
    "gt": "({0} > {1})", "ge": "({0} >= {1})",
    "and": "(bool({0}) and bool({1}))", "or": "(bool({0}) or bool({1}))",
}
UNARY_OPS: dict[str, str] = {"neg": "(-{0})", "not": "(not {0})"}
_INFIX = {"add": "+", "sub": "-", "mul": "*", "floordiv": "//", "floormod": "%", "eq": "==",
          "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">=", "and": "&&", "or": "||"}

Key = Union[int, str]


def is_literal(e: Any) -> bool:
    """Whether ``e`` is a literal (an int, float or bool)."""
    return isinstance(e, (int, float))


# ---------------------------------------------------------------------------- validation


def validate_expr(e: Any, var_ok: Optional[Callable[[Any], bool]] = None,
                  what: str = "variable") -> None:
    """Raise :class:`ExprError` unless ``e`` is a well-formed expression; ``var_ok(key)``
    says which variable keys are valid (e.g. heap slots in range)."""
    if isinstance(e, (int, float)):
        return
    if not isinstance(e, list) or not e or not isinstance(e[0], str):
        raise ExprError(f"bad expression {e!r}")
    op, args = e[0], e[1:]
    if op == "var":
        if len(args) != 1 or isinstance(args[0], bool) or not isinstance(args[0], (int, str)):
            raise ExprError(f"bad variable {e!r}")
        if var_ok is not None and not var_ok(args[0]):
            raise ExprError(f"{what} {args[0]!r} is not defined here")
        return
    if op == "cast":
        if len(args) != 2 or not isinstance(args[0], str):
            raise ExprError(f"bad cast {e!r} (expected ['cast', dtype, value])")
        try:
            parse_dtype(args[0])
        except (ValueError, KeyError) as err:
            raise ExprError(f"bad cast {e!r}: {err}") from None
        validate_expr(args[1], var_ok, what)
        return
    arity = 2 if op in BINARY_OPS else 1 if op in UNARY_OPS else 3 if op == "select" else None
    if arity is None:
        raise ExprError(f"unknown expression operator {op!r}")
    if len(args) != arity:
        raise ExprError(f"{op!r} takes {arity} operand(s), got {len(args)}")
    for a in args:
        validate_expr(a, var_ok, what)


def expr_vars(e: Any) -> list[Key]:
    """The variable keys ``e`` uses, in order of first use."""
    out: list[Key] = []

    def walk(x: Any) -> None:
        if isinstance(x, list) and x:
            if x[0] == "var":
                if x[1] not in out:
                    out.append(x[1])
            else:
                for a in x[2:] if x[0] == "cast" else x[1:]:
                    walk(a)

    walk(e)
    return out


# ---------------------------------------------------------------------------- evaluation


def _wrap_int(value: int, dtype: str) -> Any:
    code, bits, _ = parse_dtype(dtype)
    if code == DTypeCode.BOOL:
        return bool(value)
    if code == DTypeCode.UINT:
        return int(value) & ((1 << bits) - 1)
    if code == DTypeCode.INT:
        v = int(value) & ((1 << bits) - 1)
        return v - (1 << bits) if v >= 1 << (bits - 1) else v
    return float(value)


def cast_value(value: Any, dtype: str) -> Any:
    """``value`` converted to ``dtype``: floats, bools, or ints wrapped to the width."""
    code = parse_dtype(dtype)[0]
    if code in (DTypeCode.FLOAT, DTypeCode.BFLOAT):
        return float(value)
    if code == DTypeCode.BOOL:
        return bool(value)
    if isinstance(value, float):
        value = math.trunc(value)
    return _wrap_int(int(value), dtype)


def _tdiv(a: Any, b: Any) -> Any:
    if isinstance(a, float) or isinstance(b, float):
        return a / b
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _tmod(a: Any, b: Any) -> Any:
    if isinstance(a, float) or isinstance(b, float):
        return math.fmod(a, b)
    return a - b * _tdiv(a, b)


def _fdiv(a: Any, b: Any) -> Any:
    if isinstance(a, float) or isinstance(b, float):
        return float(math.floor(a / b))
    return a // b


def _fmod(a: Any, b: Any) -> Any:
    return a - b * _fdiv(a, b)


_GLOBALS = {"_tdiv": _tdiv, "_tmod": _tmod, "_fdiv": _fdiv, "_fmod": _fmod,
            "_cast": cast_value, "min": min, "max": max, "bool": bool, "__builtins__": {}}


def _source(e: Any) -> str:
    if isinstance(e, (int, float)):
        return repr(e) if not isinstance(e, float) or math.isfinite(e) else f"float({str(e)!r})"
    op = e[0]
    if op == "var":
        return f"env[{e[1]!r}]"
    if op == "cast":
        return f"_cast({_source(e[2])}, {e[1]!r})"
    if op == "select":
        return f"({_source(e[2])} if {_source(e[1])} else {_source(e[3])})"
    template = BINARY_OPS.get(op) or UNARY_OPS[op]
    return template.format(*(_source(a) for a in e[1:]))


def compile_expr(e: Any) -> Callable[[Any], Any]:
    """``env -> value`` evaluating a validated expression (``env[key]`` gives variables)."""
    if isinstance(e, (int, float)):
        return lambda env, value=e: value
    if e[0] == "var":
        key = e[1]
        return lambda env: env[key]
    code = compile(f"lambda env: {_source(e)}", "<run-time expression>", "eval")
    return eval(code, dict(_GLOBALS))  # noqa: S307 - generated from a validated expression


def evaluate(e: Any, env: Any) -> Any:
    """The value of ``e`` under ``env`` (a sequence of heap slots or a dict of names);
    :class:`ExprError` if it is malformed, KeyError / IndexError for an unbound variable."""
    validate_expr(e)
    return compile_expr(e)(env)


# ---------------------------------------------------------------------------- text


def format_expr(e: Any, names: Union[Sequence[str], Callable[[Key], str], None] = None) -> str:
    """``(n * 4)``; a variable prints as ``names[key]`` (a sequence of heap-slot names or a
    function), a heap slot without a name as ``h<slot>``, a string key as itself."""
    if isinstance(e, bool):
        return "true" if e else "false"
    if isinstance(e, (int, float)):
        return repr(e)
    op = e[0]
    if op == "var":
        key = e[1]
        if callable(names):
            return names(key)
        if isinstance(key, int):
            return names[key] if names is not None and key < len(names) else f"h{key}"
        return str(key)
    if op == "cast":
        return f"{e[1]}({format_expr(e[2], names)})"
    args = [format_expr(a, names) for a in e[1:]]
    if op in _INFIX:
        return f"({args[0]} {_INFIX[op]} {args[1]})"
    if op == "neg":
        return f"(-{args[0]})"
    if op == "not":
        return f"!{args[0]}"
    return f"{op}({', '.join(args)})"
