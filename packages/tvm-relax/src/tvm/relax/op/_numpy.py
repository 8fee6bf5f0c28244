"""Helpers for operators' numpy semantics (``@spec.evaluate``, op attribute ``FNumpyEval``).

An evaluator is ``fn(call, *values)``: the call (for its attributes and StructInfo) and the
arguments as numpy values.  Evaluators of integer operators also run on numpy *object*
arrays whose entries are Python ints or symbolic ``PrimExpr`` (a shape the ONNX importer
knows up to symbolic dimensions), so they use numpy functions that work on object arrays
where they can.  The driver is :func:`tvm.relax.transform.numpy_eval.evaluate_with_numpy`.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from ..analysis.struct_info_analysis import get_static_shape
from ..expr import Call

__all__ = ["NumpyEvalError", "CheckFailed", "out_shape", "erf", "to_layout", "int_value",
           "elementwise", "check_index"]


class NumpyEvalError(RuntimeError):
    """An op cannot be evaluated with numpy here, or its evaluator disagrees with the call's
    StructInfo."""


class CheckFailed(NumpyEvalError, ValueError):
    """The values fail a check the compiled kernel makes at run time (an index out of range,
    an integer division by zero); the message is the kernel's.  FoldConstant leaves such a
    call unfolded, so the program fails where and when the kernel would."""


def check_index(idx: Any, size: int, op: str, axis: Any) -> np.ndarray:
    """``idx`` (int64) with negative values counted from the end of an axis of length
    ``size``; :class:`CheckFailed` with the kernel's message for a value outside
    ``[-size, size)`` (``tvm.relax.topi._util.checked_index`` is the kernel's side)."""
    idx = np.asarray(idx).astype(np.int64)
    bad = (idx < -size) | (idx >= size)
    if bad.any():
        value = int(idx[bad].flat[0])
        raise CheckFailed(f"{op}: index {value} is out of range for axis {axis} of size {size}")
    return np.where(idx < 0, idx + size, idx)


def out_shape(call: Call) -> tuple[int, ...]:
    """The call's static result shape (shape-only ops take it from the StructInfo, so they do
    not depend on how the attributes spell the axes)."""
    shape = get_static_shape(call.struct_info)
    if shape is None:
        raise NumpyEvalError(f"{call.op.name}: the result shape is not static")
    return shape


_erf = np.vectorize(math.erf, otypes=[np.float64])


def erf(x: np.ndarray) -> np.ndarray:
    """The error function elementwise, in ``x``'s dtype."""
    return _erf(x).astype(np.asarray(x).dtype)


def int_value(v: Any) -> int:
    """An int from an int, numpy integer or ``IntImm``."""
    return int(getattr(v, "value", v))


def elementwise(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The evaluator ``(call, *xs) -> fn(*arrays)`` of an elementwise op."""
    return lambda call, *xs: fn(*(np.asarray(x) for x in xs))


def to_layout(x: np.ndarray, src: str, dst: str) -> np.ndarray:
    """``x`` with its axes reordered from layout ``src`` (e.g. NHWC) to ``dst``."""
    return np.transpose(x, [src.index(c) for c in dst])
