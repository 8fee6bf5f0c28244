"""``relax.nn.pad``: constant, edge, reflect or wrap padding."""

from __future__ import annotations

from typing import Any, Sequence

from tvm.ffi import register_object

from ...expr import Call, Expr
from ...struct_info import StructInfo
from .._infer import dim_str
from .._lower import te_call
from .._utils import const_dim, int_tuple, out_tensor
from ..base import Attrs, arg_tensor, make_call, op_error, register_op

__all__ = ["pad", "PadAttrs"]

_MODES = ("constant", "edge", "reflect", "wrap")


@register_object("relax.attrs.PadAttrs")
class PadAttrs(Attrs):
    """``pad_width``: (before_0, after_0, before_1, after_1, ...)."""

    pad_width: tuple = ()
    pad_mode: str = "constant"
    pad_value: float = 0.0


@register_op("relax.nn.pad", inputs=("data",), attrs=PadAttrs, op_pattern="injective")
def pad(data: Expr, pad_width: Sequence[Any], pad_mode: str = "constant",
        pad_value: float = 0.0) -> Call:
    """``data`` padded by ``pad_width`` = (before_0, after_0, before_1, ...) or
    ((before_0, after_0), ...); ``pad_mode``: constant (``pad_value``), edge, reflect or
    wrap (numpy's modes of those names)."""
    if pad_mode not in _MODES:
        raise ValueError(f"pad: pad_mode must be one of {', '.join(_MODES)}, got {pad_mode!r}")
    flat: list = []
    for item in pad_width:
        flat.extend(item if isinstance(item, (list, tuple)) else [item])
    width = int_tuple(flat, None, "pad: pad_width")
    if any(w < 0 for w in width):
        raise ValueError(f"pad: pad_width must be non-negative, got {list(width)}")
    return make_call("relax.nn.pad", [data], PadAttrs(pad_width=width, pad_mode=pad_mode,
                                                      pad_value=float(pad_value)))


@pad.infer
def _infer_pad(call: Call, ctx: Any) -> StructInfo:
    x = arg_tensor(call, 0)
    width = call.attrs.pad_width
    if x.ndim == -1:
        return out_tensor(x, None, ndim=-1)
    if len(width) != 2 * x.ndim:
        raise op_error(call, f"pad_width needs 2 values per dimension ({2 * x.ndim}), got "
                             f"{len(width)}")
    values = x.shape_values
    if values is None:
        return out_tensor(x, None, ndim=x.ndim)
    if call.attrs.pad_mode == "reflect":
        for d, v in enumerate(values):
            n = const_dim(v)
            widest = max(width[2 * d], width[2 * d + 1])
            if n is not None and widest and widest >= n:
                raise op_error(call, f"reflect padding of {widest} "
                                     f"needs dimension {d} larger than it (is {dim_str(v)})")
    return out_tensor(x, [v + width[2 * d] + width[2 * d + 1] for d, v in enumerate(values)],
                      ctx=ctx)


@pad.legalize
def _legalize_pad(bb: Any, call: Call) -> Expr:
    from ...topi import transform

    w = call.attrs.pad_width
    return te_call(bb, call, transform.pad, call.args[0], w[0::2], w[1::2], call.attrs.pad_mode,
                   call.attrs.pad_value)
