"""Small pieces the C-like printers share: dtype facts, literals, identifiers, names.

Nothing here knows about a particular language; :class:`~.c_like.CLikePrinter` turns these
facts into spellings through its overridable methods.
"""

from __future__ import annotations

import math
import re
import struct
from dataclasses import dataclass
from functools import lru_cache

from tvm.ffi.dtype import DTypeCode, format_dtype, parse_dtype

__all__ = [
    "CodegenError", "DType", "dtype_of", "float_to_bf16_bits", "c_string_literal",
    "sanitize_identifier", "NameTable", "C_KEYWORDS", "count_printf_conversions",
]


class CodegenError(ValueError):
    """The printer met something it cannot express in the target language."""


@dataclass(frozen=True)
class DType:
    """Facts about one dtype string, cached: ``dtype_of("float32x8").lanes == 8``."""

    text: str
    code: int
    bits: int
    lanes: int

    @property
    def element(self) -> DType:
        return self if self.lanes == 1 else dtype_of(format_dtype(self.code, self.bits, 1))

    def with_lanes(self, lanes: int) -> DType:
        return dtype_of(format_dtype(self.code, self.bits, lanes))

    @property
    def is_float(self) -> bool:
        return self.code in (DTypeCode.FLOAT, DTypeCode.BFLOAT)

    @property
    def is_bf16(self) -> bool:
        return self.code == DTypeCode.BFLOAT

    @property
    def is_f16(self) -> bool:
        return self.code == DTypeCode.FLOAT and self.bits == 16

    @property
    def is_half_like(self) -> bool:
        """float16 or bfloat16: computed in float32 and rounded back after each operation."""
        return self.is_bf16 or self.is_f16

    @property
    def is_int(self) -> bool:
        return self.code in (DTypeCode.INT, DTypeCode.UINT)

    @property
    def is_signed(self) -> bool:
        return self.code == DTypeCode.INT

    @property
    def is_unsigned(self) -> bool:
        return self.code == DTypeCode.UINT

    @property
    def is_bool(self) -> bool:
        return self.code == DTypeCode.BOOL

    @property
    def is_handle(self) -> bool:
        return self.code == DTypeCode.HANDLE and self.bits != 0

    @property
    def is_void(self) -> bool:
        return self.code == DTypeCode.HANDLE and self.bits == 0

    @property
    def is_vector(self) -> bool:
        return self.lanes > 1

    @property
    def nbytes(self) -> int:
        """Bytes of one value (all lanes); bool and sub-byte types take a byte per lane
        (:func:`tvm.ffi.dtype.storage_bytes`)."""
        return max(1, (self.bits + 7) // 8) * self.lanes


@lru_cache(maxsize=1024)
def dtype_of(text: str) -> DType:
    """The :class:`DType` of a dtype string (``"void"`` included)."""
    if text in (None, "void", ""):
        return DType("void", DTypeCode.HANDLE, 0, 0)
    code, bits, lanes = parse_dtype(str(text))
    return DType(format_dtype(code, bits, lanes), int(code), bits, lanes)


def float_to_bf16_bits(value: float) -> int:
    """``value`` rounded to bfloat16 (nearest-even, NaN stays a quiet NaN), as 16 bits."""
    if math.isnan(value):
        return 0x7FC0
    try:
        bits = struct.unpack("<I", struct.pack("<f", value))[0]
    except OverflowError:  # beyond float32: infinity of the right sign
        return 0x7F80 if value > 0 else 0xFF80
    bits += ((bits >> 16) & 1) + 0x7FFF
    return (bits >> 16) & 0xFFFF


_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r", "?": "\\?"}


def c_string_literal(text: str, max_chunk: int = 0) -> str:
    """``text`` as a C string literal (UTF-8 bytes; non-printable bytes as octal escapes).

    With ``max_chunk`` the literal is split into adjacent pieces of that many bytes (long
    literals stay within every compiler's limits and stay readable).
    """
    out: list[str] = []
    for byte in text.encode("utf-8"):
        ch = chr(byte)
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif 32 <= byte < 127:
            out.append(ch)
        else:
            out.append(f"\\{byte:03o}")
    if not max_chunk or len(out) <= max_chunk:
        return '"' + "".join(out) + '"'
    pieces = ["".join(out[i:i + max_chunk]) for i in range(0, len(out), max_chunk)]
    return "\n  ".join(f'"{p}"' for p in pieces)


_PRINTF_CONV = re.compile(r"%(%|[-+ #0]*\d*(?:\.\d+)?(?:hh|h|ll|l|z|j|t|L)?[diouxXeEfgGcsp])")


def count_printf_conversions(fmt: str) -> int:
    """How many arguments the printf format ``fmt`` consumes (``%%`` consumes none)."""
    return sum(1 for m in _PRINTF_CONV.finditer(fmt) if m.group(1) != "%")


C_KEYWORDS = frozenset("""
auto break case char const continue default do double else enum extern float for goto if
inline int long register restrict return short signed sizeof static struct switch typedef
union unsigned void volatile while _Bool _Complex _Imaginary _Float16 bool true false NULL
alignas alignof asm typeof half kernel global local constant private device thread
threadgroup this new delete class template typename namespace operator main
""".split())

# libc / libm names a kernel may call: locals never shadow them.
_LIBC_NAMES = frozenset("""
malloc free calloc realloc aligned_alloc posix_memalign memcpy memset snprintf vsnprintf
printf abort exp expf exp2 exp2f expm1 expm1f log logf log2 log2f log10 log10f log1p
log1pf sqrt sqrtf sin sinf cos cosf tan tanf sinh sinhf cosh coshf tanh tanhf asin asinf
acos acosf atan atanf asinh asinhf acosh acoshf atanh atanhf erf erff floor floorf ceil
ceilf trunc truncf round roundf nearbyint nearbyintf fabs fabsf pow powf fmod fmodf atan2
atan2f copysign copysignf hypot hypotf nextafter nextafterf ldexp ldexpf isnan isinf
isfinite INFINITY NAN va_list va_start va_end min max abs
""".split())

_IDENT_BAD = re.compile(r"[^A-Za-z0-9_]")


def sanitize_identifier(hint: str) -> str:
    """A C identifier close to ``hint`` (``A.shape`` -> ``A_shape``, ``0x`` -> ``v_0x``)."""
    name = _IDENT_BAD.sub("_", hint or "v")
    name = re.sub(r"__+", "_", name)
    if not name or name[0].isdigit():
        name = "v_" + name
    if name.startswith("_"):
        name = "v" + name
    if name.startswith("tvm_") or name.startswith("TVM"):
        name = "v_" + name
    return name


class NameTable:
    """Unique C identifiers for the variables of one function (or for module globals).

    A name is derived from a hint and made unique with a numeric suffix; ``reserved`` names
    (keywords, globals, libc functions) are never handed out.
    """

    def __init__(self, reserved: frozenset[str] | set[str] = frozenset(), parent: NameTable | None = None):
        self._used: set[str] = set(C_KEYWORDS) | set(_LIBC_NAMES) | set(reserved)
        if parent is not None:
            self._used |= parent._used
        self._counters: dict[str, int] = {}

    def reserve(self, name: str) -> None:
        self._used.add(name)

    def is_used(self, name: str) -> bool:
        return name in self._used

    def release(self, name: str) -> None:
        """Give ``name`` back (its C scope closed); later ``fresh`` calls may reuse it."""
        self._used.discard(name)

    def fresh(self, hint: str) -> str:
        base = sanitize_identifier(hint)
        name = base
        if name in self._used:
            k = self._counters.get(base, 0)
            while True:
                k += 1
                name = f"{base}_{k}"
                if name not in self._used:
                    break
            self._counters[base] = k
        self._used.add(name)
        return name
