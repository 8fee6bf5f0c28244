"""TVMScript for TIR: ``from tvm.script import tir as T``.

``@T.prim_func`` parses a Python function into a :class:`tvm.tir.PrimFunc`; ``T.parse(text)``
parses script text; ``func.script()`` prints one back.  This module is the ``T`` namespace:
buffers (``T.Buffer``, ``T.match_buffer``, ``T.alloc_buffer``, ``T.decl_buffer``), loops
(``T.grid``, ``T.serial``, ``T.parallel``, ``T.vectorized``, ``T.unroll``,
``T.thread_binding``), blocks (``T.block``, ``T.axis``, ``T.reads``, ``T.writes``,
``T.init``, ``T.where``, ``T.block_attr``), scoped statements (``T.allocate``,
``T.LetStmt``, ``T.launch_thread``, ``T.env_thread``, ``T.attr``, ``T.Assert``), expressions
(``T.Cast``, ``T.Select``, ``T.if_then_else``, ``T.Ramp``, ``T.Broadcast``, math intrinsics)
and dtypes (``T.float32(1)``, ``n = T.int64()``; any dtype name works: ``T.float16x4``).
"""

from __future__ import annotations

import re as _re
from typing import Any as _Any

from tvm.tir.expr import (
    EQ, GE, GT, LE, LT, NE, Add, And, Div, FloatImm, FloorDiv, FloorMod, IntImm, Max, Min, Mod,
    Mul, Not, Or, Range, StringImm, Sub,
)
from tvm.tir.op import (
    abs, acos, acosh, all, any, asin, asinh, atan, atan2, atanh, bitwise_and, bitwise_not,
    bitwise_or, bitwise_xor, ceil, copysign, cos, cosh, erf, exp, exp2, exp10, expm1, fabs,
    floor, floordiv, floormod, fmod, hypot, if_then_else, isfinite, isinf, isnan, likely, log,
    log1p, log2, log10, max, min, nearbyint, neg_infinity, nextafter, pow, power, round, rsqrt,
    shift_left, shift_right, sigmoid, sin, sinh, sqrt, tan, tanh, trunc, truncdiv, truncmod,
)

from .ir import (
    Assert, Broadcast, Buffer, Cast, DTypeConstructor, Let, LetStmt, Ramp, Select, Shuffle,
    address_of, alloc_buffer, allocate, attr, axis, block, block_attr, broadcast, call_extern,
    call_intrin, call_pure_extern, decl_buffer, dtype_constructor, env_thread, evaluate,
    func_attr, grid, infinity, init, iter_var, launch_thread, let, match_buffer, max_value,
    min_value, parallel, ramp, reads, reinterpret, serial, thread_binding, unroll, var,
    vectorized, where, writes,
)
from .entry import parse, prim_func
from .printer import script

int8 = dtype_constructor("int8")
int16 = dtype_constructor("int16")
int32 = dtype_constructor("int32")
int64 = dtype_constructor("int64")
uint8 = dtype_constructor("uint8")
uint16 = dtype_constructor("uint16")
uint32 = dtype_constructor("uint32")
uint64 = dtype_constructor("uint64")
float16 = dtype_constructor("float16")
float32 = dtype_constructor("float32")
float64 = dtype_constructor("float64")
bfloat16 = dtype_constructor("bfloat16")
bool = dtype_constructor("bool")  # noqa: A001
handle = dtype_constructor("handle")

_DTYPE_NAME = _re.compile(r"^(u?int\d+|float\d+|bfloat16|bool|float[468]_\w+)(x\d+)?$")

__all__ = [
    "prim_func", "parse", "script",
    # buffers and blocks
    "Buffer", "match_buffer", "alloc_buffer", "decl_buffer", "block", "init", "axis", "reads",
    "writes", "where", "block_attr", "func_attr",
    # loops
    "grid", "serial", "parallel", "vectorized", "unroll", "thread_binding",
    # scoped statements
    "allocate", "LetStmt", "let", "launch_thread", "env_thread", "attr", "Assert", "evaluate",
    # expressions
    "Cast", "Select", "if_then_else", "Ramp", "Broadcast", "ramp", "broadcast", "Shuffle", "Let",
    "call_intrin", "call_extern", "call_pure_extern", "address_of", "likely", "reinterpret",
    "iter_var", "var", "Range", "StringImm", "IntImm", "FloatImm", "max_value", "min_value",
    "infinity", "neg_infinity",
    # node constructors
    "Add", "Sub", "Mul", "Div", "Mod", "FloorDiv", "FloorMod", "Min", "Max", "EQ", "NE", "LT",
    "LE", "GT", "GE", "And", "Or", "Not",
    # math
    "exp", "exp2", "exp10", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "sin",
    "cos", "tan", "sinh", "cosh", "tanh", "asin", "acos", "atan", "asinh", "acosh", "atanh",
    "erf", "sigmoid", "floor", "ceil", "trunc", "round", "nearbyint", "fabs", "pow", "power",
    "fmod", "atan2", "copysign", "hypot", "nextafter", "isnan", "isinf", "isfinite", "abs",
    "max", "min", "truncdiv", "truncmod", "floordiv", "floormod", "all", "any", "bitwise_and",
    "bitwise_or", "bitwise_xor", "bitwise_not", "shift_left", "shift_right",
    # dtypes
    "DTypeConstructor", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
    "uint64", "float16", "float32", "float64", "bfloat16", "bool", "handle",
]


def __getattr__(name: str) -> _Any:
    """Any other dtype name is a constructor too: ``T.float16x4``, ``T.int8x16``."""
    if _DTYPE_NAME.match(name):
        try:
            ctor = dtype_constructor(name)
        except (ValueError, TypeError):
            pass
        else:
            globals()[name] = ctor
            return ctor
    raise AttributeError(f"module 'tvm.script.tir' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
