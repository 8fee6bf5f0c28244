"""ONNX conversions to the low-precision types: saturation and ``float8_e8m0fnu`` rounding.

Shared by Cast/CastLike (``ops_math``) and QuantizeLinear (``ops_quant``).  Each conversion
exists twice, as Relax (compiled) and as numpy (import-time constant folding), and both give
the same bits: a plain ``astype`` to a low-precision dtype is the bit-exact ``ml_dtypes``
conversion on both sides (see ``tvm.tir.transform.low_precision_codec``).

* ``saturate`` (Cast-19+, QuantizeLinear-19+, default 1) applies to the float8 formats: the
  value is clamped to the format's finite range first (NaN stays NaN, infinity becomes the
  largest finite value); ``saturate=0`` is the plain non-saturating conversion.
* ``float8_e8m0fnu`` (Cast-24+) takes the exponent of the float32 value (the sign is
  ignored, 0 becomes ``2**-127``, infinity and NaN ``0xFF``) and rounds by ``round_mode``:
  ``"up"`` (default: any fraction rounds up), ``"down"`` (truncate) or ``"nearest"``; with
  ``saturate`` the largest exponent never rounds up into NaN.
"""

from __future__ import annotations

from typing import Any


from .common import R

__all__ = [
    "SATURATING", "ROUND_MODES", "round_mode", "finite_max", "saturate",
    "cast_e8m0",
]

#: Targets the ``saturate`` attribute applies to.
SATURATING = frozenset({"float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz"})
ROUND_MODES = ("up", "down", "nearest")
E8M0 = "float8_e8m0fnu"
_STANDARD_FLOATS = ("float16", "float32", "float64")


def round_mode(ctx: Any) -> str:
    """The node's ``round_mode`` attribute, checked (default ``"up"``)."""
    mode = ctx.attr("round_mode", "up")
    if mode not in ROUND_MODES:
        raise ctx.error(f"attribute round_mode must be one of {list(ROUND_MODES)}, got {mode!r}")
    return mode


def finite_max(dtype: str) -> float:
    """The largest finite value of a low-precision float ``dtype``."""
    import ml_dtypes

    from .common import np_dtype_of

    return float(ml_dtypes.finfo(np_dtype_of(dtype)).max)


def saturate(ctx: Any, x: Any, src: str, dtype: str) -> Any:
    """``x`` (of dtype ``src``) clamped to ``dtype``'s finite range, NaN kept, in a float
    dtype that converts to ``dtype`` exactly as ``src`` would."""
    if src not in _STANDARD_FLOATS and src != "bfloat16":
        x = R.astype(x, "float32")  # integers and other low-precision types: exact
    hi = finite_max(dtype)
    return R.where(R.isnan(x), x, R.clip(x, -hi, hi))


def cast_e8m0(ctx: Any, x: Any, src: str, saturate_: bool, mode: str) -> Any:
    """``x`` (of dtype ``src``) converted to ``float8_e8m0fnu`` the ONNX way
    (``relax.cast_e8m0``)."""
    if src not in _STANDARD_FLOATS and src != "bfloat16":
        x = R.astype(x, "float32")  # integers and other low-precision types: exact
    return R.cast_e8m0(x, mode, saturate_)
