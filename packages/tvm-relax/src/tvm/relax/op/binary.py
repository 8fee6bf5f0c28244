"""Elementwise binary operators with numpy broadcasting.

Every entry of :data:`BINARY_OPS` declares ``relax.<name>``: two tensors (or scalars, taken
as 0-d tensors) of the same dtype; the output has their broadcast shape and dtype, ``bool``
for comparisons and logical operators.  Python builders: ``relax.op.add(x1, x2)``.
"""

from __future__ import annotations

from typing import Any

from ._elementwise import declare_binary
from .base import OpSpec

# name -> (output dtype override, input dtype requirement, doc)
BINARY_OPS: dict[str, tuple[str, str, str]] = {
    "add": ("", "", "x1 + x2"),
    "subtract": ("", "", "x1 - x2"),
    "multiply": ("", "", "x1 * x2"),
    "divide": ("", "", "x1 / x2 (true division for floats, truncating for integers)"),
    "floor_divide": ("", "", "floor(x1 / x2)"),
    "mod": ("", "", "truncated remainder"),
    "floor_mod": ("", "", "floored remainder (numpy's %)"),
    "power": ("", "", "x1 ** x2"),
    "maximum": ("", "", "elementwise maximum (NaN if either is; x1 on a tie)"),
    "minimum": ("", "", "elementwise minimum (NaN if either is; x1 on a tie)"),
    "atan2": ("", "float", "arctangent of x1 / x2 in the quadrant of (x2, x1)"),
    "copysign": ("", "float", "magnitude of x1 with the sign bit of x2"),
    "hypot": ("", "float", "sqrt(x1 ** 2 + x2 ** 2) without overflow"),
    "equal": ("bool", "", "x1 == x2"),
    "not_equal": ("bool", "", "x1 != x2"),
    "less": ("bool", "", "x1 < x2"),
    "less_equal": ("bool", "", "x1 <= x2"),
    "greater": ("bool", "", "x1 > x2"),
    "greater_equal": ("bool", "", "x1 >= x2"),
    "logical_and": ("bool", "", "x1 and x2"),
    "logical_or": ("bool", "", "x1 or x2"),
    "logical_xor": ("bool", "", "x1 xor x2"),
    "bitwise_and": ("", "int", "x1 & x2 (integers)"),
    "bitwise_or": ("", "int", "x1 | x2 (integers)"),
    "bitwise_xor": ("", "int", "x1 ^ x2 (integers)"),
    "left_shift": ("", "int", "x1 << x2 (integers)"),
    "right_shift": ("", "int", "x1 >> x2 (integers)"),
}


def _declare(name: str, out_dtype: str, require: str, doc: str) -> OpSpec:
    return declare_binary(name, f"``{doc}`` elementwise, with numpy broadcasting.", out_dtype,
                          require)


for _name, (_out, _req, _doc) in BINARY_OPS.items():
    globals()[_name] = _declare(_name, _out, _req, _doc)

__all__ = list(BINARY_OPS)


# -- legalization to TIR (te computes of tvm.relax.topi.elemwise) -----------------------------
from ._lower import binary_legalizer as _binary_legalizer  # noqa: E402

for _name in BINARY_OPS:
    globals()[_name].legalize(_binary_legalizer(_name))


# -- numpy semantics (integer ops also run on object arrays of symbolic shape values) ----------
import numpy as _np  # noqa: E402

from ._numpy import CheckFailed as _CheckFailed, elementwise as _elementwise  # noqa: E402


def _divide(a: Any, b: Any) -> Any:
    """True division for floats, truncating division for integers (TIR's Div)."""
    if a.dtype == object or b.dtype == object:
        return _np.vectorize(_truncdiv, otypes=[object])(a, b)
    if _np.issubdtype(_np.result_type(a, b), _np.integer):
        # a - fmod(a, b) is an exact multiple of b (no overflow, INT_MIN included)
        return (a - _np.fmod(a, b)) // b
    return _np.true_divide(a, b)


def _truncdiv(a: Any, b: Any) -> Any:
    from tvm.tir.expr import PrimExpr

    if isinstance(a, PrimExpr) or isinstance(b, PrimExpr):
        from tvm.tir import op as tir_op

        return tir_op.truncdiv(a, b)
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _int_division(name: str, what: str, fn: Any) -> Any:
    """``fn`` with the kernels' integer semantics (``topi.elemwise._int_division``): a zero
    divisor raises :class:`CheckFailed` with the kernel's message, ``INT_MIN / -1`` wraps
    (remainder 0).  Floats and symbolic values pass through."""

    def f(a: Any, b: Any) -> Any:
        a, b = _np.asarray(a), _np.asarray(b)
        if b.dtype == object:
            zero = any(isinstance(v, (int, _np.integer)) and v == 0 for v in b.flat)
        elif _np.issubdtype(b.dtype, _np.integer) and _np.issubdtype(a.dtype, _np.integer):
            zero = bool((b == 0).any())
        else:
            return fn(a, b)
        if zero:
            raise _CheckFailed(f"{name}: integer {what} by zero")
        with _np.errstate(over="ignore", divide="ignore"):
            return fn(a, b)

    return f


NUMPY_BINARY = {
    "add": _np.add, "subtract": _np.subtract, "multiply": _np.multiply,
    "divide": _int_division("divide", "division", _divide),
    "floor_divide": _int_division("floor_divide", "division", _np.floor_divide),
    "mod": _int_division("mod", "modulo", _np.fmod),
    "floor_mod": _int_division("floor_mod", "modulo", _np.mod),
    "power": _np.power, "maximum": _np.maximum, "minimum": _np.minimum,
    "atan2": _np.arctan2, "copysign": _np.copysign, "hypot": _np.hypot, "equal": _np.equal,
    "not_equal": _np.not_equal, "less": _np.less, "less_equal": _np.less_equal,
    "greater": _np.greater, "greater_equal": _np.greater_equal,
    "logical_and": _np.logical_and, "logical_or": _np.logical_or,
    "logical_xor": _np.logical_xor, "bitwise_and": _np.bitwise_and,
    "bitwise_or": _np.bitwise_or, "bitwise_xor": _np.bitwise_xor,
    "left_shift": _np.left_shift, "right_shift": _np.right_shift,
}
#: the ones that also compute on symbolic shape values (PrimExpr arithmetic)
SYMBOLIC_BINARY = ("add", "subtract", "multiply", "divide", "floor_divide")
for _name, _fn in NUMPY_BINARY.items():
    globals()[_name].evaluate(_elementwise(_fn), symbolic=_name in SYMBOLIC_BINARY)
