"""Shared pieces of the quantized operators: parameter checks, per-channel constants."""

from __future__ import annotations

import math
from typing import Any, Optional, Sequence

import numpy as np

from ...expr import Call, Expr
from ...struct_info import TensorStructInfo
from ..base import normalize_axis, op_error

__all__ = ["QUANT_DTYPES", "float_params", "int_params", "check_quant_dtype", "check_channels",
           "param_args", "pick"]

#: integer dtypes a quantized tensor may have
QUANT_DTYPES = ("int8", "uint8", "int16", "uint16", "int32")


def float_params(op: str, what: str, value: Any, positive: bool = True) -> tuple:
    """A scale (a number or a sequence of numbers) as a non-empty tuple of finite floats."""
    try:
        values = np.asarray(value, dtype="float64").reshape(-1)
    except (TypeError, ValueError):
        raise ValueError(f"{op}: {what} must be numbers, got {value!r}") from None
    if values.size == 0:
        raise ValueError(f"{op}: {what} must not be empty")
    for v in values:
        if not math.isfinite(v) or (positive and v <= 0):
            raise ValueError(f"{op}: {what} must be finite and positive, got {float(v)}")
    # quantization parameters are float32 in every format: keep exactly their value
    return tuple(float(np.float32(v)) for v in values)


def int_params(op: str, what: str, value: Any, dtype: Optional[str] = None,
               per_channel: bool = True) -> tuple:
    """A zero point (an int or a sequence of ints) as a non-empty tuple of ints, each within
    ``dtype``'s range when given; equal per-channel values become one (per tensor)."""
    from ...topi.qnn import INT_RANGES

    arr = np.asarray(value)
    if arr.dtype.kind not in "iu" and not (arr.dtype.kind == "f" and np.all(arr == np.round(arr))):
        raise ValueError(f"{op}: {what} must be integers, got {value!r}")
    values = tuple(int(v) for v in arr.reshape(-1))
    if not values:
        raise ValueError(f"{op}: {what} must not be empty")
    if per_channel and len(set(values)) == 1:
        values = values[:1]  # equal per-channel zero points are one per-tensor value
    if dtype is not None:
        lo, hi = INT_RANGES[dtype]
        bad = [v for v in values if not lo <= v <= hi]
        if bad:
            raise ValueError(f"{op}: {what} {bad[0]} is outside the range [{lo}, {hi}] of {dtype}")
    return values


def check_quant_dtype(op: str, what: str, dtype: str) -> str:
    if dtype not in QUANT_DTYPES:
        raise ValueError(f"{op}: {what} must be one of {', '.join(QUANT_DTYPES)}, got {dtype!r}")
    return dtype


def check_channels(call: Call, x: TensorStructInfo, axis: int, params: dict[str, tuple]) -> None:
    """Per-channel parameters (tuples longer than 1) must match the length of ``axis``."""
    from .._utils import const_dim

    if x.ndim == -1 or all(len(v) == 1 for v in params.values()):
        return
    if x.ndim == 0:
        raise op_error(call, "per-channel parameters need a tensor with a channel axis")
    ax = normalize_axis(call, axis, x.ndim)
    size = const_dim(x.shape_values[ax]) if x.shape_values is not None else None
    for name, v in params.items():
        if len(v) > 1 and size is not None and len(v) != size:
            raise op_error(call, f"{name} has {len(v)} values but axis {axis} has {size} "
                                 "channels")


def pick(values: tuple, n: int) -> np.ndarray:
    """``values`` (length 1 or ``n``) as an array of length ``n``."""
    arr = np.asarray(values)
    return np.broadcast_to(arr, (n,)).copy() if arr.size == 1 else arr


def param_args(values: Sequence[Any], dtype: str) -> tuple[Any, Optional[Expr]]:
    """A per-tensor value as a Python number (the compute embeds it), a per-channel one as a
    Relax constant (passed to the kernel as a tensor)."""
    from ...expr import const

    if len(values) == 1:
        return values[0], None
    return None, const(np.asarray(values, dtype=dtype))
