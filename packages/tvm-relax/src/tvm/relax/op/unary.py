"""Elementwise unary operators.

Every entry of :data:`UNARY_OPS` declares ``relax.<name>`` over one tensor (or scalar): the
output has the input's shape and dtype (``bool`` for predicates).  Operators marked
``float`` reject integer inputs.  ``astype`` and ``clip`` carry attributes.
"""

from __future__ import annotations

from typing import Any, Optional

from tvm.ffi import register_object

from ..expr import Call, Expr
from ..struct_info import StructInfo, TensorStructInfo, canonical_dtype
from ._elementwise import declare_unary, infer_unary
from .base import Attrs, OpSpec, arg_sinfo, make_call, register_op

# name -> (input requirement "float"/"int"/"", output dtype override, doc)
UNARY_OPS: dict[str, tuple[str, str, str]] = {
    "abs": ("", "", "absolute value"),
    "negative": ("", "", "-x"),
    "sign": ("", "", "sign of x (-1, 0 or 1)"),
    "square": ("", "", "x * x"),
    "exp": ("float", "", "e ** x"),
    "exp2": ("float", "", "2 ** x"),
    "expm1": ("float", "", "e ** x - 1 (accurate near 0)"),
    "log": ("float", "", "natural logarithm"),
    "log2": ("float", "", "base-2 logarithm"),
    "log10": ("float", "", "base-10 logarithm"),
    "log1p": ("float", "", "log(1 + x) (accurate near 0)"),
    "sqrt": ("float", "", "square root"),
    "rsqrt": ("float", "", "1 / sqrt(x)"),
    "sin": ("float", "", "sine"),
    "cos": ("float", "", "cosine"),
    "tan": ("float", "", "tangent"),
    "tanh": ("float", "", "hyperbolic tangent"),
    "asin": ("float", "", "arcsine"),
    "acos": ("float", "", "arccosine"),
    "atan": ("float", "", "arctangent"),
    "sinh": ("float", "", "hyperbolic sine"),
    "cosh": ("float", "", "hyperbolic cosine"),
    "asinh": ("float", "", "inverse hyperbolic sine"),
    "acosh": ("float", "", "inverse hyperbolic cosine"),
    "atanh": ("float", "", "inverse hyperbolic tangent"),
    "sigmoid": ("float", "", "1 / (1 + exp(-x))"),
    "erf": ("float", "", "error function"),
    "floor": ("", "", "round down"),
    "ceil": ("", "", "round up"),
    "round": ("", "", "round half to even"),
    "trunc": ("", "", "round toward zero"),
    "bitwise_not": ("int", "", "~x (integers)"),
    "logical_not": ("", "bool", "not x"),
    "isnan": ("float", "bool", "x is NaN"),
    "isinf": ("float", "bool", "x is infinite"),
    "isfinite": ("float", "bool", "x is finite"),
}


def _declare(name: str, require: str, out_dtype: str, doc: str) -> OpSpec:
    return declare_unary(name, f"Elementwise {doc}.", require, out_dtype)


for _name, (_req, _out, _doc) in UNARY_OPS.items():
    globals()[_name] = _declare(_name, _req, _out, _doc)


@register_object("relax.attrs.AstypeAttrs")
class AstypeAttrs(Attrs):
    dtype: str = "float32"


@register_op("relax.astype", inputs=("x",), attrs=AstypeAttrs, op_pattern="elemwise")
def astype(x: Expr, dtype: str) -> Call:
    """``x`` converted to ``dtype`` elementwise."""
    return make_call("relax.astype", [x], AstypeAttrs(dtype=canonical_dtype(dtype, "astype")))


@astype.infer
def _infer_astype(call: Call, ctx: Any) -> StructInfo:
    sinfo = arg_sinfo(call, 0)
    return infer_unary(call, ctx, "", call.attrs.dtype) if not isinstance(
        sinfo, TensorStructInfo
    ) or sinfo.dtype != call.attrs.dtype else sinfo


@register_object("relax.attrs.ClipAttrs")
class ClipAttrs(Attrs):
    min: Optional[float] = None
    max: Optional[float] = None


@register_op("relax.clip", inputs=("x",), attrs=ClipAttrs, op_pattern="elemwise")
def clip(x: Expr, min: Optional[float] = None, max: Optional[float] = None) -> Call:  # noqa: A002
    """``x`` limited to ``[min, max]`` (a bound of None is open)."""
    return make_call("relax.clip", [x], ClipAttrs(min=min, max=max))


@clip.infer
def _infer_clip(call: Call, ctx: Any) -> StructInfo:
    return infer_unary(call, ctx)


__all__ = [*UNARY_OPS, "astype", "clip", "AstypeAttrs", "ClipAttrs"]


# -- legalization to TIR (te computes of tvm.relax.topi.elemwise) -----------------------------
from ._lower import te_call as _te_call, unary_legalizer as _unary_legalizer  # noqa: E402

for _name in UNARY_OPS:
    globals()[_name].legalize(_unary_legalizer(_name))


# -- numpy semantics --------------------------------------------------------------------------
import numpy as _np  # noqa: E402

from ._numpy import elementwise as _elementwise, erf as _erf  # noqa: E402

NUMPY_UNARY = {
    "abs": _np.abs, "negative": _np.negative, "sign": _np.sign, "square": _np.square,
    "exp": _np.exp, "exp2": _np.exp2, "expm1": _np.expm1, "log": _np.log, "log2": _np.log2,
    "log10": _np.log10, "log1p": _np.log1p, "sqrt": _np.sqrt, "rsqrt": lambda x: 1 / _np.sqrt(x),
    "sin": _np.sin, "cos": _np.cos, "tan": _np.tan, "tanh": _np.tanh, "asin": _np.arcsin,
    "acos": _np.arccos, "atan": _np.arctan, "sinh": _np.sinh, "cosh": _np.cosh,
    "asinh": _np.arcsinh, "acosh": _np.arccosh, "atanh": _np.arctanh,
    "sigmoid": lambda x: 1 / (1 + _np.exp(-x)), "erf": _erf,
    "floor": _np.floor, "ceil": _np.ceil, "round": _np.round, "trunc": _np.trunc,
    "bitwise_not": _np.invert, "logical_not": _np.logical_not, "isnan": _np.isnan,
    "isinf": _np.isinf, "isfinite": _np.isfinite,
}
for _name, _fn in NUMPY_UNARY.items():
    globals()[_name].evaluate(_elementwise(_fn))


@astype.evaluate(symbolic=True)
def _eval_astype(call: Call, x: Any) -> Any:
    from tvm.tir.transform.low_precision_codec import cast_array

    x = _np.asarray(x)
    if x.dtype == object and call.attrs.dtype.startswith(("int", "uint")):
        return x  # symbolic shape values: an integer cast keeps them (they are in range)
    return cast_array(x, call.attrs.dtype)  # the conversions compiled code does


@clip.evaluate
def _eval_clip(call: Call, x: Any) -> Any:
    lo, hi = call.attrs.min, call.attrs.max
    out = _np.asarray(x)
    if lo is not None:
        out = _np.maximum(out, lo).astype(out.dtype)
    if hi is not None:
        out = _np.minimum(out, hi).astype(out.dtype)
    return out


@astype.legalize
def _legalize_astype(bb: Any, call: Call) -> Any:
    from ..topi import elemwise

    return _te_call(bb, call, elemwise.astype, call.args[0], call.attrs.dtype)


@clip.legalize
def _legalize_clip(bb: Any, call: Call) -> Any:
    from ..topi import elemwise

    return _te_call(bb, call, elemwise.clip, call.args[0], call.attrs.min, call.attrs.max)
