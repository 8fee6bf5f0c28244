"""Bit-level conversions: ``relax.bitcast`` (reinterpret the bits of each element as another
dtype of the same width) and ``relax.cast_e8m0`` (the conversion to ``float8_e8m0fnu`` with
a rounding mode and saturation, ONNX Cast-24).

Both keep the shape; their legalization is an elementwise TIR ``reinterpret`` kernel and their
numpy semantics are declared beside them.
"""

from __future__ import annotations

from typing import Any

import numpy as _np
from tvm.ffi import register_object
from tvm.ir.dtype import DataType

from ..expr import Call, Expr
from ..struct_info import StructInfo, TensorStructInfo, canonical_dtype
from ._lower import te_call
from .base import Attrs, arg_tensor, make_call, op_error, register_op

__all__ = ["bitcast", "cast_e8m0", "BitcastAttrs", "CastE8M0Attrs", "E8M0_ROUND_MODES"]

E8M0 = "float8_e8m0fnu"
#: ``cast_e8m0``'s rounding modes: any fraction rounds up, truncate, or to nearest even.
E8M0_ROUND_MODES = ("up", "down", "nearest")


def _same_shape(x: TensorStructInfo, dtype: str) -> StructInfo:
    return TensorStructInfo(x.shape, dtype, x.ndim, x.vdevice)


# -- bitcast -----------------------------------------------------------------------------------
@register_object("relax.attrs.BitcastAttrs")
class BitcastAttrs(Attrs):
    dtype: str = "float32"


@register_op("relax.bitcast", inputs=("x",), attrs=BitcastAttrs, op_pattern="elemwise")
def bitcast(x: Expr, dtype: str) -> Call:
    """``x``'s elements reinterpreted, bit for bit, as ``dtype`` (the same bit width; the
    shape is kept).  ``bool`` is not a bit pattern and is rejected."""
    return make_call("relax.bitcast", [x], BitcastAttrs(dtype=canonical_dtype(dtype, "bitcast")))


@bitcast.infer
def _infer_bitcast(call: Call, ctx: Any) -> StructInfo:
    x = arg_tensor(call, 0)
    to = call.attrs.dtype
    if to == "bool":
        raise op_error(call, "cannot reinterpret bits as bool")
    if x.is_unknown_dtype:
        return _same_shape(x, to)
    if x.dtype == "bool":
        raise op_error(call, "cannot reinterpret the bits of a bool tensor")
    src_t, to_t = DataType(x.dtype), DataType(to)
    if src_t.lanes != 1 or to_t.lanes != 1:
        raise op_error(call, f"needs scalar element types, got {x.dtype} and {to}")
    if src_t.bits != to_t.bits:
        raise op_error(call, f"{x.dtype} ({src_t.bits} bits) and {to} ({to_t.bits} bits) "
                             "differ in width")
    return _same_shape(x, to)


@bitcast.legalize
def _legalize_bitcast(bb: Any, call: Call) -> Expr:
    from tvm import te
    from tvm.tir.op import reinterpret

    to = call.attrs.dtype

    def fn(x: Any) -> Any:
        return te.compute(x.shape, lambda *i: reinterpret(to, x[i]), name="bitcast")

    return te_call(bb, call, fn, call.args[0])


@bitcast.evaluate
def _eval_bitcast(call: Call, x: Any) -> Any:
    return _np.ascontiguousarray(x).view(DataType(call.attrs.dtype).numpy_dtype)


# -- cast_e8m0 ---------------------------------------------------------------------------------
@register_object("relax.attrs.CastE8M0Attrs")
class CastE8M0Attrs(Attrs):
    round_mode: str = "up"
    saturate: bool = True


@register_op("relax.cast_e8m0", inputs=("x",), attrs=CastE8M0Attrs, op_pattern="elemwise")
def cast_e8m0(x: Expr, round_mode: str = "up", saturate: bool = True) -> Call:
    """``x`` (a float tensor) converted to ``float8_e8m0fnu``: the exponent of the float32
    value (the sign is ignored, 0 gives ``2**-127``, infinity and NaN ``0xFF``), rounded by
    ``round_mode`` (``"up"``: any fraction rounds up; ``"down"``: truncate; ``"nearest"``:
    to nearest, ties to even); with ``saturate`` the largest exponent never rounds up into
    NaN."""
    if round_mode not in E8M0_ROUND_MODES:
        raise ValueError(f"cast_e8m0: round_mode must be one of {list(E8M0_ROUND_MODES)}, "
                         f"got {round_mode!r}")
    return make_call("relax.cast_e8m0", [x],
                     CastE8M0Attrs(round_mode=round_mode, saturate=bool(saturate)))


@cast_e8m0.infer
def _infer_cast_e8m0(call: Call, ctx: Any) -> StructInfo:
    from ._elementwise import is_float

    x = arg_tensor(call, 0)
    if not x.is_unknown_dtype and not is_float(x.dtype):
        raise op_error(call, f"needs a floating-point tensor, got dtype {x.dtype}")
    if call.attrs.round_mode not in E8M0_ROUND_MODES:
        raise op_error(call, f"round_mode must be one of {list(E8M0_ROUND_MODES)}, got "
                             f"{call.attrs.round_mode!r}")
    return _same_shape(x, E8M0)


@cast_e8m0.legalize
def _legalize_cast_e8m0(bb: Any, call: Call) -> Expr:
    from tvm import te, tir
    from tvm.tir.op import bitwise_and, reinterpret, shift_right

    mode, saturate = call.attrs.round_mode, bool(call.attrs.saturate)

    def convert(v: Any) -> Any:
        f = v if v.dtype == "float32" else v.astype("float32")
        u = reinterpret("uint32", f)
        exp = tir.Cast("int32", bitwise_and(shift_right(u, 23), 0xFF))
        special = exp == 0xFF
        if mode == "down":
            up = tir.const(False, "bool")
        elif mode == "up":
            up = bitwise_and(u, 0x7FFFFF) > 0
        else:
            g = bitwise_and(u, 0x400000) > 0
            r = bitwise_and(u, 0x200000) > 0
            s = bitwise_and(u, 0x1FFFFF) > 0
            up = g & (r | s | (exp > 0))
        if saturate:
            up = up & (exp != 0xFE)
        bits = tir.Select(special, tir.const(0xFF, "int32"), exp + tir.Cast("int32", up))
        return reinterpret(E8M0, tir.Cast("uint8", bits))

    def fn(t: Any) -> Any:
        return te.compute(t.shape, lambda *i: convert(t[i]), name="cast_e8m0")

    return te_call(bb, call, fn, call.args[0])


@cast_e8m0.evaluate
def _eval_cast_e8m0(call: Call, x: Any) -> Any:
    u = _np.asarray(x).astype(_np.float32).view(_np.uint32)
    exp = ((u >> 23) & 0xFF).astype(_np.int32)
    mode = call.attrs.round_mode
    if mode == "down":
        up = _np.zeros(u.shape, bool)
    elif mode == "up":
        up = (u & 0x7FFFFF) > 0
    else:
        g, r, s = (u & 0x400000) > 0, (u & 0x200000) > 0, (u & 0x1FFFFF) > 0
        up = g & (r | s | (exp > 0))
    if call.attrs.saturate:
        up &= exp != 0xFE
    bits = _np.where(exp == 0xFF, 0xFF, exp + up.astype(_np.int32)).astype(_np.uint8)
    return bits.view(DataType(E8M0).numpy_dtype)
