"""Bit-exact conversions between low-precision element types and ordinary ones, as TIR.

The low-precision types (:func:`tvm.ffi.dtype.is_low_precision`: ``float8_*``, ``float6_*``,
``float4_e2m1fn``, ``int4``/``uint4``/``int2``/``uint2``) live in memory as one byte per
element holding the bit pattern in the low bits (the ``ml_dtypes`` layout).  The builders
here turn such a byte (a ``uint8`` expression, any lanes) into an ordinary value and back,
with integer and float arithmetic every backend has, generic over the format's exponent and
mantissa widths, bias and special encodings (:class:`~tvm.ffi.dtype.FloatFormat`):

* :func:`decode` -- bits to the *compute type*: ``float32`` for the float formats (exact:
  every value of these formats is a float32), ``int32`` for the integers (sign-extended);
* :func:`encode` -- a ``float16/32/64``, ``bfloat16``, integer or bool value to bits,
  bit-exact with ``ml_dtypes`` ``astype``.  A value that is not float32 is first converted
  to float32 (as ``ml_dtypes`` does, so a float64 rounds twice).  Floats round to nearest,
  ties to even; out of range is *non-saturating*: infinity where the format has one
  (``float8_e5m2``), else NaN (``e4m3fn`` and the ``fnuz`` formats), and the largest
  finite value for the formats without NaN (``float4_e2m1fn``, ``float6_*``).
  ``float8_e8m0fnu`` rounds to the nearest power of two, ties up (and anything above
  ``2**-127`` below ``2**-126`` up); zero, negatives, infinity and NaN become its NaN
  ``0xFF``.  To a 2/4-bit integer, integers wrap to the low bits (like C casts) and floats
  truncate toward zero, a value the type cannot hold (NaN and infinities too) giving 0 (ONNX
  leaves it undefined; its node suite's reference, through ml_dtypes >= 0.6, gives 0);
* :func:`encode_constant` / :func:`decode_constant` -- the same conversions on Python
  numbers (through ``ml_dtypes``, which the TIR conversions match bit for bit), for
  constant folding.

Values used several times are bound with ``Let`` (``share=False`` repeats them instead; the
expressions then grow quickly when conversions nest).
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np
from tvm.ffi.dtype import DTypeCode, FloatFormat, float_format, is_low_precision, parse_dtype

from ..expr import (
    GT, LT, And, Broadcast, Cast, FloatImm, IntImm, Let, PrimExpr, Select, Var, element_of,
    lanes_of, with_lanes,
)
from ..op import bitwise_and, bitwise_or, bitwise_xor, reinterpret, shift_left, shift_right
from ..op import max as _max
from ..op import min as _min

__all__ = [
    "compute_dtype", "decode", "encode", "encode_constant", "decode_constant", "cast_array",
    "is_low_precision_float", "is_low_precision_int",
]


def is_low_precision_float(dtype: str) -> bool:
    """A low-precision float format (any lanes)."""
    return float_format(parse_dtype(dtype)[0]) is not None


def is_low_precision_int(dtype: str) -> bool:
    """``int4``/``uint4``/``int2``/``uint2`` (any lanes)."""
    return is_low_precision(dtype) and not is_low_precision_float(dtype)


def compute_dtype(dtype: str) -> str:
    """The ordinary dtype arithmetic on ``dtype`` is done in: float32 or int32 (same lanes)."""
    base = "float32" if is_low_precision_float(dtype) else "int32"
    return with_lanes(base, lanes_of(dtype))


# --------------------------------------------------------------------------- helpers


def _t(base: str, like: PrimExpr) -> str:
    return with_lanes(base, lanes_of(like.dtype))


def _cast(base: str, x: PrimExpr) -> PrimExpr:
    dtype = _t(base, x)
    return x if x.dtype == dtype else Cast(dtype, x)


def _u(base: str, value: int, like: PrimExpr) -> PrimExpr:
    """An integer constant of ``base`` with ``like``'s lanes."""
    imm = IntImm(base, value)
    lanes = lanes_of(like.dtype)
    return imm if lanes == 1 else Broadcast(imm, lanes)


def _simple(x: PrimExpr) -> bool:
    if isinstance(x, Broadcast):
        x = x.value
    return isinstance(x, (Var, IntImm, FloatImm))


def _share(x: PrimExpr, body: Callable[[PrimExpr], PrimExpr], share: bool, hint: str) -> PrimExpr:
    """``body(x)``, with ``x`` bound to a variable by a Let when it is worth it."""
    if not share or _simple(x):
        return body(x)
    var = Var(hint, x.dtype)
    return Let(var, x, body(var))


def _is_float(dtype: str) -> bool:
    return parse_dtype(dtype)[0] in (DTypeCode.FLOAT, DTypeCode.BFLOAT)


# --------------------------------------------------------------------------- decode


def decode(bits: PrimExpr, dtype: str, share: bool = True) -> PrimExpr:
    """The value of the ``dtype`` element(s) whose bit patterns ``bits`` (``uint8``, any
    lanes) holds, as :func:`compute_dtype` (float32 or int32)."""
    code, nbits, _ = parse_dtype(dtype)
    fmt = float_format(code)
    if fmt is None:
        if not is_low_precision(dtype):
            raise TypeError(f"decode: {dtype} is not a low-precision dtype")
        return _decode_int(bits, code == DTypeCode.INT, nbits)
    return _share(_cast("uint32", bits), lambda b: _decode_float(b, fmt), share, "lp_bits")


def _decode_int(bits: PrimExpr, signed: bool, nbits: int) -> PrimExpr:
    v = _cast("int32", bitwise_and(bits, (1 << nbits) - 1))
    if not signed:
        return v
    half = 1 << (nbits - 1)
    return bitwise_xor(v, half) - half


def _decode_float(b: PrimExpr, fmt: FloatFormat) -> PrimExpr:
    """``b``: the byte widened to uint32 (bits above a 4/6-bit format's are ignored)."""
    f32 = _t("float32", b)
    if fmt.bits < 8:
        b = bitwise_and(b, (1 << fmt.bits) - 1)
    if fmt.kind == "e8m0":
        out = Select(b == 0xFF, _u("uint32", 0x7FC00000, b),
                     Select(b == 0, _u("uint32", 0x00400000, b), shift_left(b, 23)))
        return reinterpret(f32, out)
    E, M, B = fmt.exponent_bits, fmt.mantissa_bits, fmt.bias
    e = bitwise_and(shift_right(b, M), (1 << E) - 1)
    m = bitwise_and(b, (1 << M) - 1)
    normal = bitwise_or(shift_left(e + (127 - B), 23), shift_left(m, 23 - M))
    # subnormals: m * 2**(1 - B - M), exact in float32
    tiny = Cast(f32, m) * FloatImm("float32", math.ldexp(1.0, 1 - B - M))
    mag = Select(e == 0, reinterpret(_t("uint32", b), tiny), normal)
    all_ones_e = (1 << E) - 1
    if fmt.kind == "ieee":
        special = Select(m == 0, _u("uint32", 0x7F800000, b), _u("uint32", 0x7FC00000, b))
        mag = Select(e == all_ones_e, special, mag)
    elif fmt.kind == "fn":
        mag = Select(bitwise_and(b, (1 << (E + M)) - 1) == (1 << (E + M)) - 1,
                     _u("uint32", 0x7FC00000, b), mag)
    sign = shift_left(shift_right(b, E + M), 31)
    out = bitwise_or(sign, mag)
    if fmt.kind == "fnuz":
        out = Select(b == 1 << (E + M), _u("uint32", 0x7FC00000, b), out)
    return reinterpret(f32, out)


# --------------------------------------------------------------------------- encode


# float32, the source of every float encoding: exponent bits, mantissa bits, bias
_SE, _SM, _SB = 8, 23, 127


def encode(value: PrimExpr, dtype: str, share: bool = True) -> PrimExpr:
    """The bit patterns (``uint8``, ``value``'s lanes) of ``value`` converted to ``dtype``.

    ``value`` has an ordinary dtype: a float (float16/bfloat16 widen exactly to float32
    first), an integer or bool.  See the module docstring for the rounding rules.
    """
    code, nbits, _ = parse_dtype(dtype)
    fmt = float_format(code)
    if fmt is None:
        if not is_low_precision(dtype):
            raise TypeError(f"encode: {dtype} is not a low-precision dtype")
        return _encode_int(value, nbits, code == DTypeCode.INT, share)
    x = _cast("float32", value)
    u = reinterpret(_t("uint32", x), x)
    return _share(u, lambda u: _encode_float(u, fmt, share), share, "lp_src")


def _encode_int(value: PrimExpr, nbits: int, signed: bool, share: bool) -> PrimExpr:
    mask = (1 << nbits) - 1
    code, bits, _ = parse_dtype(value.dtype)
    if _is_float(value.dtype):
        # truncated toward zero; a value whose truncation the type cannot hold (NaN and the
        # infinities too) gives 0, as the ONNX node suite's reference (ml_dtypes >= 0.6) does
        x = value if bits in (32, 64) and code == DTypeCode.FLOAT else _cast("float32", value)
        fdt = element_of(x.dtype)
        lo, hi = _int_range(nbits, signed)
        zero = FloatImm(fdt, 0.0)
        below, above = FloatImm(fdt, float(lo - 1)), FloatImm(fdt, float(hi + 1))
        safe = _share(x, lambda x: Select(And(GT(x, below), LT(x, above)), x, zero), share,
                      "lp_src")
        ivalue = Cast(_t("int32", x), safe)
    elif code == DTypeCode.BOOL:
        ivalue = _cast("int32", value)
    else:
        ivalue = value if bits >= 32 else _cast("int32", value)
    return _cast("uint8", bitwise_and(ivalue, mask))


def _encode_float(u: PrimExpr, fmt: FloatFormat, share: bool) -> PrimExpr:
    """Bits of ``fmt`` from ``u``, the bits of a float32 (as uint32)."""
    se, sm, sb, carrier = _SE, _SM, _SB, "uint32"
    s = shift_right(u, se + sm)
    a = bitwise_and(u, (1 << (se + sm)) - 1)
    inf_bits = ((1 << se) - 1) << sm
    is_nan = a > inf_bits
    is_inf = a == inf_bits
    exps = _cast("int32", shift_right(a, sm))
    mant = bitwise_and(a, (1 << sm) - 1)
    if fmt.kind == "e8m0":
        return _encode_e8m0(s, a, exps, mant, is_nan, is_inf)
    M, B = fmt.mantissa_bits, fmt.bias
    sig = Select(exps == 0, mant, bitwise_or(mant, 1 << sm))
    et = _max(exps, 1) - sb  # unbiased exponent of the source value
    # Drop sm - M bits (more for results in the target's subnormal range), rounding to
    # nearest even; past sm + 2 bits everything rounds to 0, so the shift stops there.
    shift = _min(sm - M + _max((1 - B) - et, 0), sm + 2)
    sh = _cast(carrier, shift)

    def round_and_pack(sig: PrimExpr, sh: PrimExpr) -> PrimExpr:
        one = _u(carrier, 1, sh)
        q = shift_right(sig, sh)
        rem = bitwise_and(sig, shift_left(one, sh) - 1)
        half = shift_left(one, sh - 1)
        up = (rem > half) | ((rem == half) & (bitwise_and(q, 1) == 1))
        q = q + _cast(carrier, up)
        return _cast("uint32", q) + shift_left(_cast("uint32", _max(et + (B - 1), 0)), M)

    mag = _share(sig, lambda s_: _share(sh, lambda sh_: round_and_pack(s_, sh_), share,
                                         "lp_shift"), share, "lp_sig")
    return _share(mag, lambda mag: _finish(mag, s, is_nan, is_inf, fmt), share, "lp_mag")


def _finish(mag: PrimExpr, s: PrimExpr, is_nan: PrimExpr, is_inf: PrimExpr,
            fmt: FloatFormat) -> PrimExpr:
    """Overflow, infinity, NaN and the sign, per the format's kind."""
    E, M = fmt.exponent_bits, fmt.mantissa_bits
    top = 1 << (E + M)  # the sign bit
    sign = shift_left(s, E + M)
    if fmt.kind == "ieee":
        inf_mag = ((1 << E) - 1) << M
        mag = _min(mag, _u("uint32", inf_mag, mag))  # overflow -> infinity
        mag = Select(is_inf, _u("uint32", inf_mag, mag), mag)
        mag = Select(is_nan, _u("uint32", inf_mag | (1 << (M - 1)), mag), mag)
        out = bitwise_or(sign, mag)
    elif fmt.kind == "fn":
        nan_mag = top - 1
        mag = Select(is_nan | is_inf | (mag >= nan_mag), _u("uint32", nan_mag, mag), mag)
        out = bitwise_or(sign, mag)
    elif fmt.kind == "fnuz":
        nan = is_nan | is_inf | (mag > top - 1)
        out = Select(nan, _u("uint32", top, mag),
                     Select(mag == 0, _u("uint32", 0, mag), bitwise_or(sign, mag)))
    else:  # "finite": saturate; NaN becomes a zero of the opposite sign, as ml_dtypes does
        mag = _min(mag, _u("uint32", top - 1, mag))
        mag = Select(is_inf, _u("uint32", top - 1, mag), mag)
        out = Select(is_nan, shift_left(bitwise_xor(s, 1), E + M), bitwise_or(sign, mag))
    return _cast("uint8", out)


def _encode_e8m0(s: PrimExpr, a: PrimExpr, exps: PrimExpr, mant: PrimExpr, is_nan: PrimExpr,
                 is_inf: PrimExpr) -> PrimExpr:
    # e8m0 and float32 share the bias 127: the exponent field, plus one from a mantissa
    # of 1.5 up (nearest power of two, ties up)
    up = _cast("int32", mant >= (1 << (_SM - 1)))
    # float32 subnormals: 2**-127 (0x00) up to that value, 2**-126 above it (as ml_dtypes)
    sub = _cast("int32", mant > (1 << (_SM - 1)))
    enc = Select(exps == 0, sub, exps + up)
    bad = is_nan | is_inf | (s == 1) | (a == 0) | (enc > 254)
    return _cast("uint8", Select(bad, _u("int32", 0xFF, enc), enc))


# --------------------------------------------------------------------------- constants


def _int_range(nbits: int, signed: bool) -> tuple[int, int]:
    """The values a 2/4-bit integer type holds."""
    return (-(1 << (nbits - 1)), (1 << (nbits - 1)) - 1) if signed else (0, (1 << nbits) - 1)


def _np_type(dtype: str) -> Any:
    from tvm.ffi.dtype import to_numpy_dtype

    return to_numpy_dtype(element_of(dtype))


def encode_constant(value: Any, src_dtype: str, dtype: str) -> int:
    """The bit pattern of the Python number ``value`` (of ordinary ``src_dtype``) converted
    to the low-precision ``dtype``, as :func:`encode` computes it."""
    code, nbits, _ = parse_dtype(dtype)
    if float_format(code) is None:
        mask = (1 << nbits) - 1
        if isinstance(value, float) or _is_float(src_dtype):
            v = float(value)
            lo, hi = _int_range(nbits, code == DTypeCode.INT)
            return int(v) & mask if math.isfinite(v) and lo <= int(v) <= hi else 0
        return int(value) & mask
    with np.errstate(all="ignore"):
        if _is_float(src_dtype):
            src = _np_type(src_dtype) if parse_dtype(src_dtype)[1] <= 32 else np.float64
            arr = np.array(float(value), dtype=np.float64).astype(src).astype(np.float32)
        else:
            arr = np.array(int(value), dtype=np.float64).astype(np.float32)
    return int(cast_array(arr, dtype).view(np.uint8))


def cast_array(values: Any, dtype: str) -> np.ndarray:
    """``values`` (a numpy array or number) converted to ``dtype`` as compiled code converts
    it, for evaluating casts at compile time: ``astype`` (``ml_dtypes`` for the low-precision
    float formats, which :func:`encode` matches bit for bit), except floats to a 2/4-bit
    integer, which follow :func:`encode`'s rule (truncated toward zero; 0 when the type cannot
    hold the result, NaN and infinities included), which ``ml_dtypes`` before 0.6 left to
    chance."""
    arr = np.asarray(values)
    target = _np_type(dtype)
    if not (is_low_precision_int(dtype) and arr.dtype.kind == "f"):
        with np.errstate(all="ignore"):
            out = arr.astype(target)
        if element_of(dtype) == "float8_e8m0fnu" and arr.dtype.kind == "f":
            # above 2**-127 and below 2**-126 rounds up (ml_dtypes 0.7 rounds part down)
            x = arr.astype(np.float64)
            window = (x > 2.0**-127) & (x < 2.0**-126)
            out = np.where(window, np.uint8(1), out.view(np.uint8)).astype(np.uint8).view(target)
        return out
    code, nbits, _ = parse_dtype(dtype)
    lo, hi = _int_range(nbits, code == DTypeCode.INT)
    with np.errstate(all="ignore"):
        t = np.trunc(arr.astype(np.float64))
        t = np.where(np.isfinite(t) & (t >= lo) & (t <= hi), t, 0.0)
    return t.astype(np.int32).astype(target)


def decode_constant(bits: int, dtype: str) -> Any:
    """The value (a float, or an int for the integer types) of the bit pattern ``bits``."""
    arr = np.array(int(bits) & 0xFF, dtype=np.uint8).view(_np_type(dtype))
    if is_low_precision_int(dtype):
        return int(arr.astype(np.int32))
    return float(arr.astype(np.float32))
