"""Data type strings (``float32``, ``int8``, ``bfloat16``, ``float32x8``, ``bool``, ``handle``).

The one parser and printer of dtype strings, shared by the compiler (``tvm.ir.DataType``)
and the runtime (which must not import the compiler).  A dtype is a DLPack triple
``(code, bits, lanes)``.
"""

from __future__ import annotations

import re
from enum import IntEnum
from functools import lru_cache

__all__ = ["DTypeCode", "parse_dtype", "format_dtype", "to_numpy_dtype", "from_numpy_dtype"]


class DTypeCode(IntEnum):
    """DLPack's ``DLDataTypeCode`` (plus ``HANDLE`` for opaque pointers)."""

    INT = 0
    UINT = 1
    FLOAT = 2
    HANDLE = 3  # opaque pointer (kDLOpaqueHandle)
    BFLOAT = 4
    COMPLEX = 5
    BOOL = 6


_PREFIXES = (
    ("bfloat", DTypeCode.BFLOAT),
    ("float", DTypeCode.FLOAT),
    ("uint", DTypeCode.UINT),
    ("int", DTypeCode.INT),
    ("complex", DTypeCode.COMPLEX),
)

_LEGAL_BITS = {
    DTypeCode.INT: (1, 4, 8, 16, 32, 64),
    DTypeCode.UINT: (1, 4, 8, 16, 32, 64),
    DTypeCode.FLOAT: (8, 16, 32, 64),
    DTypeCode.BFLOAT: (16,),
    DTypeCode.COMPLEX: (64, 128),
}

# The prefixes are spelled out: a lazy ``[a-z]+?`` would read "complex64" as "comple" x 64.
_PATTERN = re.compile(r"^(bfloat|float|uint|int|complex)(\d*)(?:x(\d+))?$")


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
    m = _PATTERN.match(s)
    if m:
        prefix, bits_text, lanes_text = m.groups()
        for name, code in _PREFIXES:
            if prefix == name:
                default_bits = 32 if code != DTypeCode.COMPLEX else 64
                bits = int(bits_text) if bits_text else default_bits
                if code == DTypeCode.BFLOAT and not bits_text:
                    bits = 16
                lanes = int(lanes_text) if lanes_text else 1
                if bits not in _LEGAL_BITS[code]:
                    break
                if lanes < 1:
                    break
                return (code, bits, lanes)
    raise ValueError(
        f"unknown dtype {text!r}: expected e.g. float32, float16, bfloat16, int8..int64, "
        "uint8..uint64, bool, handle, optionally with vector lanes as in float32x8"
    )


def format_dtype(code: int, bits: int, lanes: int = 1) -> str:
    """Inverse of :func:`parse_dtype`; a ValueError for a triple no dtype string denotes."""
    code = DTypeCode(code)
    if code == DTypeCode.HANDLE:
        if (bits, lanes) in ((64, 1), (0, 0)):
            return "handle" if bits else "void"
        _no_string(code, bits, lanes, "handle is (64, 1) and void is (0, 0)")
    legal = (8,) if code == DTypeCode.BOOL else _LEGAL_BITS[code]
    if bits not in legal or lanes < 1:
        _no_string(code, bits, lanes, f"bits must be one of {legal} and lanes at least 1")
    if code == DTypeCode.BOOL:
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


def to_numpy_dtype(text: str):
    """The numpy dtype of a scalar dtype string (bfloat16 and float8 through ml_dtypes)."""
    import numpy as np

    code, bits, lanes = parse_dtype(text)
    if code == DTypeCode.HANDLE:
        raise ValueError(f"{text!r}: handle has no numpy equivalent")
    if lanes != 1:
        raise ValueError(f"vector dtype {text!r} has no numpy equivalent")
    if code == DTypeCode.BOOL:
        return np.dtype("bool")
    if code == DTypeCode.BFLOAT or (code == DTypeCode.FLOAT and bits == 8):
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16 if code == DTypeCode.BFLOAT else ml_dtypes.float8_e4m3fn)
    if bits < 8:
        raise ValueError(f"sub-byte dtype {text!r} has no numpy equivalent")
    kind = {DTypeCode.INT: "i", DTypeCode.UINT: "u", DTypeCode.FLOAT: "f", DTypeCode.COMPLEX: "c"}[code]
    return np.dtype(f"{kind}{bits // 8}")


def from_numpy_dtype(dtype) -> str:
    """The dtype string of a numpy dtype (``np.float32`` -> ``"float32"``)."""
    import numpy as np

    dt = np.dtype(dtype)
    if dt == np.bool_:
        return "bool"
    name = dt.name
    if name == "bfloat16":
        return "bfloat16"
    if name.startswith("float8"):
        return "float8"
    parse_dtype(name)  # validate
    return name
