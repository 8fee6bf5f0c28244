"""Data type strings (``float32``, ``int8``, ``bfloat16``, ``float8_e4m3fn``, ``float32x8``).

The one parser and printer of dtype strings, shared by the compiler (``tvm.ir.DataType``)
and the runtime (which must not import the compiler).  A dtype is a DLPack triple
``(code, bits, lanes)``.

Low-precision types.  The float formats of DLPack 1.1 have their own type codes
(``float8_e4m3fn`` is ``(FLOAT8_E4M3FN, 8, 1)``; ``float4_e2m1fn`` is
``(FLOAT4_E2M1FN, 4, 1)``); :func:`float_format` describes each (exponent and mantissa
bits, bias, how it encodes infinity and NaN).  ``int4``/``uint4``/``int2``/``uint2`` are
``INT``/``UINT`` with 4 or 2 bits.  ``float8`` alone is an alias of ``float8_e4m3fn``.

Storage rule: in memory every element of a type narrower than a byte still takes ONE
byte, holding the value's bit pattern in its low bits (the layout of the ``ml_dtypes``
numpy types, e.g. ``int4`` -1 is the byte ``0x0F``).  Every byte-size computation uses
:func:`storage_bytes`, never ``bits // 8``.
"""

from __future__ import annotations

import re
from enum import IntEnum
from functools import lru_cache
from typing import NamedTuple, Optional

__all__ = [
    "DTypeCode", "FloatFormat", "parse_dtype", "format_dtype", "to_numpy_dtype",
    "from_numpy_dtype", "float_format", "is_float_code", "is_low_precision", "storage_bytes",
    "storage_dtype", "LOW_PRECISION_FLOAT_CODES",
]


class DTypeCode(IntEnum):
    """DLPack's ``DLDataTypeCode`` (plus ``HANDLE`` for opaque pointers)."""

    INT = 0
    UINT = 1
    FLOAT = 2
    HANDLE = 3  # opaque pointer (kDLOpaqueHandle)
    BFLOAT = 4
    COMPLEX = 5
    BOOL = 6
    FLOAT8_E3M4 = 7
    FLOAT8_E4M3 = 8
    FLOAT8_E4M3B11FNUZ = 9
    FLOAT8_E4M3FN = 10
    FLOAT8_E4M3FNUZ = 11
    FLOAT8_E5M2 = 12
    FLOAT8_E5M2FNUZ = 13
    FLOAT8_E8M0FNU = 14
    FLOAT6_E2M3FN = 15
    FLOAT6_E3M2FN = 16
    FLOAT4_E2M1FN = 17


class FloatFormat(NamedTuple):
    """A low-precision float format: ``1 + exponent_bits + mantissa_bits`` bits (no sign
    bit for ``e8m0``), ``bias``, and ``kind``, how the top encodings are used:

    * ``"ieee"``: the all-ones exponent holds infinity (mantissa 0) and NaN;
    * ``"fn"``: finite; only all-ones exponent and mantissa is NaN (``float8_e4m3fn``);
    * ``"fnuz"``: finite, no negative zero; the negative-zero pattern ``0x80`` is NaN;
    * ``"finite"``: no infinity and no NaN (``float6_*``, ``float4_e2m1fn``);
    * ``"e8m0"``: unsigned powers of two ``2**(e - 127)``, ``0xFF`` is NaN.
    """

    name: str
    code: DTypeCode
    bits: int
    exponent_bits: int
    mantissa_bits: int
    bias: int
    kind: str

    @property
    def has_sign(self) -> bool:
        return self.kind != "e8m0"


_FORMATS: dict[DTypeCode, FloatFormat] = {
    f.code: f
    for f in (
        FloatFormat("float8_e3m4", DTypeCode.FLOAT8_E3M4, 8, 3, 4, 3, "ieee"),
        FloatFormat("float8_e4m3", DTypeCode.FLOAT8_E4M3, 8, 4, 3, 7, "ieee"),
        FloatFormat("float8_e4m3b11fnuz", DTypeCode.FLOAT8_E4M3B11FNUZ, 8, 4, 3, 11, "fnuz"),
        FloatFormat("float8_e4m3fn", DTypeCode.FLOAT8_E4M3FN, 8, 4, 3, 7, "fn"),
        FloatFormat("float8_e4m3fnuz", DTypeCode.FLOAT8_E4M3FNUZ, 8, 4, 3, 8, "fnuz"),
        FloatFormat("float8_e5m2", DTypeCode.FLOAT8_E5M2, 8, 5, 2, 15, "ieee"),
        FloatFormat("float8_e5m2fnuz", DTypeCode.FLOAT8_E5M2FNUZ, 8, 5, 2, 16, "fnuz"),
        FloatFormat("float8_e8m0fnu", DTypeCode.FLOAT8_E8M0FNU, 8, 8, 0, 127, "e8m0"),
        FloatFormat("float6_e2m3fn", DTypeCode.FLOAT6_E2M3FN, 6, 2, 3, 1, "finite"),
        FloatFormat("float6_e3m2fn", DTypeCode.FLOAT6_E3M2FN, 6, 3, 2, 3, "finite"),
        FloatFormat("float4_e2m1fn", DTypeCode.FLOAT4_E2M1FN, 4, 2, 1, 1, "finite"),
    )
}
_FORMAT_BY_NAME = {f.name: f for f in _FORMATS.values()}

#: Type codes of the low-precision float formats (DLPack 1.1 codes 7..17).
LOW_PRECISION_FLOAT_CODES = frozenset(_FORMATS)
_FLOAT_CODES = frozenset({DTypeCode.FLOAT, DTypeCode.BFLOAT}) | LOW_PRECISION_FLOAT_CODES

_PREFIXES = (
    ("bfloat", DTypeCode.BFLOAT),
    ("float", DTypeCode.FLOAT),
    ("uint", DTypeCode.UINT),
    ("int", DTypeCode.INT),
    ("complex", DTypeCode.COMPLEX),
)

_LEGAL_BITS = {
    DTypeCode.INT: (1, 2, 4, 8, 16, 32, 64),
    DTypeCode.UINT: (1, 2, 4, 8, 16, 32, 64),
    DTypeCode.FLOAT: (16, 32, 64),
    DTypeCode.BFLOAT: (16,),
    DTypeCode.COMPLEX: (64, 128),
}

# The prefixes are spelled out: a lazy ``[a-z]+?`` would read "complex64" as "comple" x 64.
_PATTERN = re.compile(r"^(bfloat|float|uint|int|complex)(\d*)(?:x(\d+))?$")
# Named formats: the lazy name stops before an optional lane suffix ("float8_e4m3fnx4").
_NAMED_PATTERN = re.compile(r"^(float\d_e\w+?)(?:x(\d+))?$")


def float_format(code: int) -> Optional[FloatFormat]:
    """The :class:`FloatFormat` of a low-precision float type code (None for others)."""
    return _FORMATS.get(code)  # type: ignore[call-overload]


def is_float_code(code: int) -> bool:
    """Whether ``code`` is a floating-point type code (IEEE, bfloat or low precision)."""
    return code in _FLOAT_CODES


@lru_cache(maxsize=512)
def parse_dtype(text: str) -> tuple[int, int, int]:
    """``"float32x8"`` -> ``(DTypeCode.FLOAT, 32, 8)``; a clear ValueError otherwise."""
    if not isinstance(text, str):
        raise TypeError(f"dtype must be a string, got {type(text).__name__}")
    s = text.strip()
    if s == "bool":
        return (DTypeCode.BOOL, 8, 1)
    if s in ("handle", "void*"):
        return (DTypeCode.HANDLE, 64, 1)
    if s == "void":
        return (DTypeCode.HANDLE, 0, 0)
    lanes = 1
    m = re.fullmatch(r"(bool)x(\d+)", s)
    if m:
        return (DTypeCode.BOOL, 8, int(m.group(2)))
    m = _NAMED_PATTERN.match(s)
    if m and m.group(1) in _FORMAT_BY_NAME:
        fmt = _FORMAT_BY_NAME[m.group(1)]
        lanes = int(m.group(2)) if m.group(2) else 1
        if lanes >= 1:
            return (fmt.code, fmt.bits, lanes)
    m = _PATTERN.match(s)
    if m:
        prefix, bits_text, lanes_text = m.groups()
        lanes = int(lanes_text) if lanes_text else 1
        if prefix == "float" and bits_text == "8" and lanes >= 1:
            return (DTypeCode.FLOAT8_E4M3FN, 8, lanes)  # "float8": alias of float8_e4m3fn
        for name, code in _PREFIXES:
            if prefix == name:
                default_bits = 32 if code != DTypeCode.COMPLEX else 64
                bits = int(bits_text) if bits_text else default_bits
                if code == DTypeCode.BFLOAT and not bits_text:
                    bits = 16
                if bits not in _LEGAL_BITS[code]:
                    break
                if lanes < 1:
                    break
                return (code, bits, lanes)
    raise ValueError(
        f"unknown dtype {text!r}: expected e.g. float32, float16, bfloat16, int8..int64, "
        "uint8..uint64, int4, uint2, float8_e4m3fn, float8_e5m2, float4_e2m1fn, bool, handle, "
        "optionally with vector lanes as in float32x8"
    )


def format_dtype(code: int, bits: int, lanes: int = 1) -> str:
    """Inverse of :func:`parse_dtype`; a ValueError for a triple no dtype string denotes."""
    code = DTypeCode(code)
    if code == DTypeCode.HANDLE:
        if (bits, lanes) in ((64, 1), (0, 0)):
            return "handle" if bits else "void"
        _no_string(code, bits, lanes, "handle is (64, 1) and void is (0, 0)")
    fmt = _FORMATS.get(code)
    if fmt is not None:
        legal: tuple[int, ...] = (fmt.bits,)
    else:
        legal = (8,) if code == DTypeCode.BOOL else _LEGAL_BITS[code]
    if bits not in legal or lanes < 1:
        _no_string(code, bits, lanes, f"bits must be one of {legal} and lanes at least 1")
    if fmt is not None:
        base = fmt.name
    elif code == DTypeCode.BOOL:
        base = "bool"
    else:
        base = {
            DTypeCode.INT: "int",
            DTypeCode.UINT: "uint",
            DTypeCode.FLOAT: "float",
            DTypeCode.BFLOAT: "bfloat",
            DTypeCode.COMPLEX: "complex",
        }[code] + str(bits)
    return base if lanes == 1 else f"{base}x{lanes}"


def _no_string(code: DTypeCode, bits: int, lanes: int, rule: str) -> None:
    raise ValueError(
        f"no dtype string for (code={code.name}, bits={bits}, lanes={lanes}): "
        f"for {code.name} {rule}"
    )


def is_low_precision(dtype: str) -> bool:
    """Whether ``dtype`` (any lanes) is a low-precision float format or a 2/4-bit integer:
    the types stored one element per byte and legalized to ``uint8`` before code generation."""
    code, bits, _ = parse_dtype(dtype)
    return code in _FORMATS or (code in (DTypeCode.INT, DTypeCode.UINT) and bits in (2, 4))


def storage_bytes(dtype: str) -> int:
    """Bytes one value of ``dtype`` (all lanes) occupies in memory.

    Every element narrower than a byte takes one byte (see the module docstring), so
    ``int4`` is 1 byte, ``float4_e2m1fnx8`` 8 bytes, ``float32x4`` 16 bytes, ``bool`` 1.
    """
    _, bits, lanes = parse_dtype(dtype)
    return max(1, (bits + 7) // 8) * max(lanes, 1)


def storage_dtype(dtype: str) -> str:
    """The ordinary dtype holding ``dtype``'s bit patterns in memory: ``uint8`` (same lanes)
    for the low-precision types of :func:`is_low_precision`, ``dtype`` itself otherwise."""
    if not is_low_precision(dtype):
        return dtype
    lanes = parse_dtype(dtype)[2]
    return "uint8" if lanes == 1 else f"uint8x{lanes}"


_ML_DTYPES_INTS = {(DTypeCode.INT, 4): "int4", (DTypeCode.UINT, 4): "uint4",
                   (DTypeCode.INT, 2): "int2", (DTypeCode.UINT, 2): "uint2"}


def to_numpy_dtype(text: str):
    """The numpy dtype of a scalar dtype string (bfloat16, float8_*, float4_e2m1fn, int4,
    int2 ... through ml_dtypes, one element per byte)."""
    import numpy as np

    code, bits, lanes = parse_dtype(text)
    if code == DTypeCode.HANDLE:
        raise ValueError(f"{text!r}: handle has no numpy equivalent")
    if lanes != 1:
        raise ValueError(f"vector dtype {text!r} has no numpy equivalent")
    if code == DTypeCode.BOOL:
        return np.dtype("bool")
    ml_name = _FORMATS[code].name if code in _FORMATS else _ML_DTYPES_INTS.get((code, bits))
    if code == DTypeCode.BFLOAT:
        ml_name = "bfloat16"
    if ml_name is not None:
        import ml_dtypes

        return np.dtype(getattr(ml_dtypes, ml_name))
    if bits < 8:
        raise ValueError(f"sub-byte dtype {text!r} has no numpy equivalent")
    kind = {DTypeCode.INT: "i", DTypeCode.UINT: "u", DTypeCode.FLOAT: "f", DTypeCode.COMPLEX: "c"}[code]
    return np.dtype(f"{kind}{bits // 8}")


def from_numpy_dtype(dtype) -> str:
    """The dtype string of a numpy dtype (``np.float32`` -> ``"float32"``, an ml_dtypes
    ``float8_e4m3fn`` -> ``"float8_e4m3fn"``).

    A dtype of the other byte order (``">f4"`` on a little-endian machine) is a ValueError:
    tvm's dtypes are in the machine's byte order, and reading such data as one would
    silently give wrong numbers."""
    import sys

    import numpy as np

    dt = np.dtype(dtype)
    if dt.byteorder not in ("=", "|") and dt.byteorder != {"little": "<", "big": ">"}[
            sys.byteorder]:
        order = "big" if dt.byteorder == ">" else "little"
        raise ValueError(
            f"numpy dtype {dt.str!r} is {order}-endian and this machine is "
            f"{sys.byteorder}-endian; convert the data first, e.g. "
            "arr.astype(arr.dtype.newbyteorder('='))")
    if dt == np.bool_:
        return "bool"
    name = dt.name
    parse_dtype(name)  # validate
    return name
