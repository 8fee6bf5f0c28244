"""``DataType``: an immutable dtype value (``float32``, ``int8``, ``bfloat16``, ``float32x8``).

A thin value class over the one dtype parser, :func:`tvm.ffi.dtype.parse_dtype`.  It compares
equal to its string form (``DataType("float") == "float32"``), hashes like it, and
serialises through :func:`tvm.ffi.to_json` as a JSON value.
"""

from __future__ import annotations

from typing import Any

from tvm.ffi import register_json_value
from tvm.ffi.dtype import (
    LOW_PRECISION_FLOAT_CODES,
    DTypeCode,
    FloatFormat,
    float_format,
    format_dtype,
    from_numpy_dtype,
    is_float_code,
    is_low_precision,
    parse_dtype,
    storage_bytes,
    to_numpy_dtype,
)

__all__ = ["DataType", "DTypeCode"]


class DataType:
    """A dtype as the DLPack triple ``(code, bits, lanes)``.

    ``DataType("float32x8")``, ``DataType(numpy.int8)``, ``DataType(other_datatype)`` or
    ``DataType.from_parts(code, bits, lanes)``.  Instances are immutable and interned.
    """

    __slots__ = ("code", "bits", "lanes", "_text")

    code: DTypeCode
    bits: int
    lanes: int

    _cache: dict[str, DataType] = {}

    def __new__(cls, dtype: str | DataType | Any) -> DataType:
        if isinstance(dtype, DataType):
            return dtype
        if not isinstance(dtype, str):
            try:
                dtype = from_numpy_dtype(dtype)
            except (TypeError, ValueError):
                raise TypeError(
                    f"DataType expects a dtype string such as 'float32' (or a numpy dtype), "
                    f"got {type(dtype).__name__} {dtype!r}"
                ) from None
        cached = cls._cache.get(dtype)
        if cached is not None:
            return cached
        code, bits, lanes = parse_dtype(dtype)
        self = cls._make(code, bits, lanes)
        if len(cls._cache) < 4096:
            cls._cache[dtype] = self
        return self

    @classmethod
    def _make(cls, code: int, bits: int, lanes: int) -> DataType:
        text = format_dtype(code, bits, lanes)
        cached = cls._cache.get(text)
        if cached is not None:
            return cached
        self = object.__new__(cls)
        object.__setattr__(self, "code", DTypeCode(code))
        object.__setattr__(self, "bits", int(bits))
        object.__setattr__(self, "lanes", int(lanes))
        object.__setattr__(self, "_text", text)
        cls._cache[text] = self
        return self

    @classmethod
    def from_parts(cls, code: int, bits: int, lanes: int = 1) -> DataType:
        """Build from a DLPack triple; validated by round-tripping through the parser."""
        try:
            code = DTypeCode(code)
        except ValueError:
            codes = ", ".join(f"{c.value} ({c.name})" for c in DTypeCode)
            raise ValueError(f"invalid dtype code {code!r}; expected one of {codes}") from None
        text = format_dtype(code, bits, lanes)
        if parse_dtype(text) != (DTypeCode(code), bits, lanes):
            raise ValueError(f"invalid dtype triple (code={code}, bits={bits}, lanes={lanes})")
        return cls(text)

    # -- immutability and value semantics --------------------------------------------------
    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"DataType is immutable (cannot set {name!r})")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"DataType is immutable (cannot delete {name!r})")

    def __eq__(self, other: object) -> bool:
        if isinstance(other, DataType):
            return self._text == other._text
        if isinstance(other, str):
            if other == self._text:
                return True
            try:
                return parse_dtype(other) == (self.code, self.bits, self.lanes)
            except (TypeError, ValueError):
                return False
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    def __hash__(self) -> int:
        return hash(self._text)

    def __str__(self) -> str:
        return self._text

    def __repr__(self) -> str:
        return f"DataType({self._text!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (DataType, (self._text,))

    def __copy__(self) -> DataType:
        return self

    def __deepcopy__(self, memo: dict) -> DataType:
        return self

    # -- predicates -------------------------------------------------------------------------
    def is_int(self) -> bool:
        """Signed integer (any lanes)."""
        return self.code == DTypeCode.INT

    def is_uint(self) -> bool:
        """Unsigned integer (any lanes)."""
        return self.code == DTypeCode.UINT

    def is_integer(self) -> bool:
        """Signed or unsigned integer."""
        return self.code in (DTypeCode.INT, DTypeCode.UINT)

    def is_float(self) -> bool:
        """IEEE float (``float16``..``float64``); ``bfloat16`` is :meth:`is_bfloat`, the
        low-precision formats (``float8_e4m3fn`` ...) are :meth:`is_low_precision_float`."""
        return self.code == DTypeCode.FLOAT

    def is_bfloat(self) -> bool:
        """``bfloat16``."""
        return self.code == DTypeCode.BFLOAT

    def is_floating_point(self) -> bool:
        """Any float: IEEE, bfloat or a low-precision format."""
        return is_float_code(self.code)

    def is_low_precision_float(self) -> bool:
        """A low-precision float format (``float8_*``, ``float6_*``, ``float4_e2m1fn``)."""
        return self.code in LOW_PRECISION_FLOAT_CODES

    def is_float8(self) -> bool:
        """An 8-bit float format (``float8_e4m3fn``, ``float8_e5m2``, ``float8_e8m0fnu`` ...)."""
        return self.code in LOW_PRECISION_FLOAT_CODES and self.bits == 8

    def is_float4(self) -> bool:
        """``float4_e2m1fn``."""
        return self.code == DTypeCode.FLOAT4_E2M1FN

    def is_low_precision(self) -> bool:
        """A low-precision float or a 2/4-bit integer: stored one byte per element and
        rewritten to ``uint8`` storage by TIR's LegalizeLowPrecision."""
        return is_low_precision(self._text)

    @property
    def float_format(self) -> FloatFormat | None:
        """The :class:`~tvm.ffi.dtype.FloatFormat` of a low-precision float, else None."""
        return float_format(self.code)

    def is_float16(self) -> bool:
        return self.code == DTypeCode.FLOAT and self.bits == 16

    def is_complex(self) -> bool:
        return self.code == DTypeCode.COMPLEX

    def is_bool(self) -> bool:
        return self.code == DTypeCode.BOOL

    def is_handle(self) -> bool:
        """An opaque pointer (``handle``), not ``void``."""
        return self.code == DTypeCode.HANDLE and self.bits != 0

    def is_void(self) -> bool:
        return self.code == DTypeCode.HANDLE and self.bits == 0

    def is_scalar(self) -> bool:
        return self.lanes == 1

    def is_vector(self) -> bool:
        return self.lanes > 1

    # -- derived types ----------------------------------------------------------------------
    @property
    def element_of(self) -> DataType:
        """The scalar type of one lane: ``float32x8`` -> ``float32``."""
        return self if self.lanes == 1 else DataType._make(self.code, self.bits, 1)

    def with_lanes(self, lanes: int) -> DataType:
        """Same element type with ``lanes`` lanes."""
        if not isinstance(lanes, int) or isinstance(lanes, bool) or lanes < 1:
            raise ValueError(f"lanes must be a positive int, got {lanes!r}")
        if self.is_void() or self.is_handle():
            raise ValueError(f"{self} cannot be vectorised")
        return DataType._make(self.code, self.bits, lanes)

    def with_bits(self, bits: int) -> DataType:
        """Same kind and lanes with ``bits`` bits (``int32`` -> ``int64``)."""
        return DataType.from_parts(self.code, bits, self.lanes)

    @property
    def bytes(self) -> int:
        """Storage size of one value (all lanes); an element narrower than a byte takes a
        whole byte (:func:`tvm.ffi.dtype.storage_bytes`)."""
        return storage_bytes(self._text)

    @property
    def numpy_dtype(self) -> Any:
        """The numpy dtype of a scalar type (``bfloat16``, ``float8_*``, ``int4`` ... through
        ml_dtypes)."""
        return to_numpy_dtype(self._text)


register_json_value(DataType, "ir.DataType", str, DataType)
