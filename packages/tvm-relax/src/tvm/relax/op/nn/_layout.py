"""Layout strings and window arguments shared by convolution and pooling declarations."""

from __future__ import annotations

from typing import Any, Optional, Sequence

from tvm.tir.expr import IntImm, PrimExpr

from ...expr import Call
from .._infer import dim_str
from ..base import op_error

__all__ = ["check_layout", "padding_tuple", "window_tuple", "dims_of", "checked_spatial", "SPATIAL"]

SPATIAL = {1: "W", 2: "HW", 3: "DHW"}


def check_layout(layout: str, fixed: str, nsp: int, what: str) -> str:
    """``layout`` must order ``fixed`` letters (e.g. ``NC``) and the spatial letters."""
    spatial = SPATIAL[nsp]
    if not isinstance(layout, str) or sorted(layout) != sorted(fixed + spatial):
        raise ValueError(f"{what} must be a permutation of {fixed + spatial!r}, got {layout!r}")
    if "".join(c for c in layout if c in spatial) != spatial:
        raise ValueError(f"{what}: spatial axes must appear in the order {spatial!r}, got {layout!r}")
    return layout


def window_tuple(value: Any, nsp: int, what: str) -> tuple:
    """An int or ``nsp`` ints (strides, dilation, pool size); all positive."""
    if isinstance(value, int):
        out = (value,) * nsp
    else:
        out = tuple(int(v) for v in value)
        if len(out) == 1:
            out = out * nsp
    if len(out) != nsp:
        raise ValueError(f"{what} must have {nsp} value(s), got {value!r}")
    if any(v <= 0 for v in out):
        raise ValueError(f"{what} must be positive, got {value!r}")
    return out


def padding_tuple(value: Any, nsp: int, what: str = "padding") -> tuple:
    """(before..., after...) from an int, ``nsp`` symmetric values or ``2 * nsp`` values."""
    if isinstance(value, int):
        out = (value,) * (2 * nsp)
    else:
        vals = tuple(int(v) for v in value)
        if len(vals) == 1:
            out = vals * (2 * nsp)
        elif len(vals) == nsp:
            out = vals + vals
        elif len(vals) == 2 * nsp:
            out = vals
        else:
            raise ValueError(f"{what} must have 1, {nsp} or {2 * nsp} values, got {value!r}")
    if any(v < 0 for v in out):
        raise ValueError(f"{what} must be non-negative, got {value!r}")
    return out


def dims_of(layout: str, values: Optional[Sequence[PrimExpr]]) -> Optional[dict]:
    return None if values is None else dict(zip(layout, values))


def checked_spatial(call: Call, ctx: Any, dims: dict, spatial: str, what: str) -> dict:
    """``dims`` with the ``spatial`` entries simplified; a non-positive one is an error."""
    from .._utils import simplify_dims

    out = dict(dims)
    for c in spatial:
        (d,) = simplify_dims(ctx, [dims[c]])
        if isinstance(d, IntImm) and d.value <= 0:
            raise op_error(call, f"{what} is {dim_str(d)}: the input is too small for the window")
        out[c] = d
    return out
