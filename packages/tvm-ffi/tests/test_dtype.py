"""Data type strings: parsing, printing, numpy mapping."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tvm.ffi.dtype import (
    LOW_PRECISION_FLOAT_CODES,
    DTypeCode,
    float_format,
    format_dtype,
    from_numpy_dtype,
    is_float_code,
    is_low_precision,
    parse_dtype,
    storage_bytes,
    storage_dtype,
    to_numpy_dtype,
)

CANONICAL = {
    "float32": (DTypeCode.FLOAT, 32, 1),
    "float16": (DTypeCode.FLOAT, 16, 1),
    "float64": (DTypeCode.FLOAT, 64, 1),
    "float8_e4m3fn": (DTypeCode.FLOAT8_E4M3FN, 8, 1),
    "float8_e4m3fnuz": (DTypeCode.FLOAT8_E4M3FNUZ, 8, 1),
    "float8_e5m2": (DTypeCode.FLOAT8_E5M2, 8, 1),
    "float8_e5m2fnuz": (DTypeCode.FLOAT8_E5M2FNUZ, 8, 1),
    "float8_e8m0fnu": (DTypeCode.FLOAT8_E8M0FNU, 8, 1),
    "float8_e3m4": (DTypeCode.FLOAT8_E3M4, 8, 1),
    "float8_e4m3": (DTypeCode.FLOAT8_E4M3, 8, 1),
    "float8_e4m3b11fnuz": (DTypeCode.FLOAT8_E4M3B11FNUZ, 8, 1),
    "float6_e2m3fn": (DTypeCode.FLOAT6_E2M3FN, 6, 1),
    "float6_e3m2fn": (DTypeCode.FLOAT6_E3M2FN, 6, 1),
    "float4_e2m1fn": (DTypeCode.FLOAT4_E2M1FN, 4, 1),
    "float8_e4m3fnx4": (DTypeCode.FLOAT8_E4M3FN, 8, 4),
    "float4_e2m1fnx16": (DTypeCode.FLOAT4_E2M1FN, 4, 16),
    "float8_e5m2x2": (DTypeCode.FLOAT8_E5M2, 8, 2),
    "bfloat16": (DTypeCode.BFLOAT, 16, 1),
    "int8": (DTypeCode.INT, 8, 1),
    "int16": (DTypeCode.INT, 16, 1),
    "int32": (DTypeCode.INT, 32, 1),
    "int64": (DTypeCode.INT, 64, 1),
    "int4": (DTypeCode.INT, 4, 1),
    "int2": (DTypeCode.INT, 2, 1),
    "uint4": (DTypeCode.UINT, 4, 1),
    "uint2": (DTypeCode.UINT, 2, 1),
    "int4x8": (DTypeCode.INT, 4, 8),
    "int1": (DTypeCode.INT, 1, 1),
    "uint8": (DTypeCode.UINT, 8, 1),
    "uint16": (DTypeCode.UINT, 16, 1),
    "uint32": (DTypeCode.UINT, 32, 1),
    "uint64": (DTypeCode.UINT, 64, 1),
    "uint1": (DTypeCode.UINT, 1, 1),
    "bool": (DTypeCode.BOOL, 8, 1),
    "boolx4": (DTypeCode.BOOL, 8, 4),
    "float32x8": (DTypeCode.FLOAT, 32, 8),
    "int8x16": (DTypeCode.INT, 8, 16),
    "bfloat16x2": (DTypeCode.BFLOAT, 16, 2),
    "complex64": (DTypeCode.COMPLEX, 64, 1),
    "complex128": (DTypeCode.COMPLEX, 128, 1),
    "handle": (DTypeCode.HANDLE, 64, 1),
    "void": (DTypeCode.HANDLE, 0, 0),
}


def test_codes_are_dlpacks():
    assert [int(c) for c in DTypeCode] == list(range(18))
    assert DTypeCode.INT == 0 and DTypeCode.FLOAT == 2 and DTypeCode.BFLOAT == 4
    assert DTypeCode.BOOL == 6 and DTypeCode.HANDLE == 3
    # DLPack 1.1 codes of the low-precision float formats
    assert DTypeCode.FLOAT8_E3M4 == 7 and DTypeCode.FLOAT8_E4M3FN == 10
    assert DTypeCode.FLOAT8_E5M2 == 12 and DTypeCode.FLOAT8_E8M0FNU == 14
    assert DTypeCode.FLOAT4_E2M1FN == 17


@pytest.mark.parametrize("text, triple", CANONICAL.items())
def test_parse_and_format_round_trip(text, triple):
    assert parse_dtype(text) == triple
    assert format_dtype(*triple) == text


@pytest.mark.parametrize(
    "alias, canonical",
    [
        ("int", "int32"),
        ("uint", "uint32"),
        ("float", "float32"),
        ("bfloat", "bfloat16"),
        ("complex", "complex64"),
        ("floatx4", "float32x4"),
        ("float32x1", "float32"),
        ("void*", "handle"),
        (" float16 ", "float16"),
        ("float8", "float8_e4m3fn"),
        ("float8x4", "float8_e4m3fnx4"),
        ("float8_e4m3fnx1", "float8_e4m3fn"),
    ],
)
def test_aliases_parse_to_the_canonical_form(alias, canonical):
    assert format_dtype(*parse_dtype(alias)) == canonical


def test_parse_returns_dtype_codes():
    code, bits, lanes = parse_dtype("uint8x4")
    assert code is DTypeCode.UINT and (bits, lanes) == (8, 4)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "float31",
        "float128",
        "int7",
        "uint128",
        "bfloat32",
        "complex32",
        "float32x0",
        "float32x",
        "float32x8x2",
        "x8",
        "Float32",
        "int 8",
        "bool8",
        "str",
        "float32_",
        "-int8",
        "int3",
        "float8_e4m3fnuzz",
        "float8_e9m0",
        "float8_",
        "float5_e2m2",
        "float8_e4m3fnx0",
        "float8_e4m3fnx",
        "bfloat8",
    ],
)
def test_bad_strings_raise_value_error(text):
    with pytest.raises(ValueError, match="unknown dtype") as info:
        parse_dtype(text)
    assert repr(text) in str(info.value)
    assert "float32x8" in str(info.value)  # says what would be accepted


@pytest.mark.parametrize("value", [32, None, b"float32", np.float32])
def test_non_strings_raise_type_error(value):
    with pytest.raises(TypeError, match="dtype must be a string"):
        parse_dtype(value)


@pytest.mark.parametrize(
    "triple",
    [
        (DTypeCode.FLOAT, 7, 1),
        (DTypeCode.INT, 32, 0),
        (DTypeCode.BFLOAT, 32, 1),
        (DTypeCode.BOOL, 1, 1),
        (DTypeCode.HANDLE, 64, 4),
        (DTypeCode.INT, 32, -2),
        (DTypeCode.FLOAT, 8, 1),
        (DTypeCode.FLOAT8_E4M3FN, 16, 1),
        (DTypeCode.FLOAT4_E2M1FN, 8, 1),
    ],
)
def test_format_rejects_what_parse_would_not_read(triple):
    with pytest.raises(ValueError, match="no dtype string"):
        format_dtype(*triple)


def test_format_rejects_unknown_codes():
    with pytest.raises(ValueError):
        format_dtype(99, 32, 1)


LEGAL = [
    (DTypeCode.INT, (1, 2, 4, 8, 16, 32, 64)),
    (DTypeCode.UINT, (1, 2, 4, 8, 16, 32, 64)),
    (DTypeCode.FLOAT, (16, 32, 64)),
    *[(code, (float_format(code).bits,)) for code in LOW_PRECISION_FLOAT_CODES],
    (DTypeCode.BFLOAT, (16,)),
    (DTypeCode.COMPLEX, (64, 128)),
    (DTypeCode.BOOL, (8,)),
]


@st.composite
def triples(draw):
    code, bits = draw(st.sampled_from(LEGAL))
    return code, draw(st.sampled_from(bits)), draw(st.integers(1, 64))


@settings(max_examples=100, deadline=None)
@given(triples())
def test_format_then_parse_is_identity(triple):
    assert parse_dtype(format_dtype(*triple)) == triple


NUMPY = {
    "float32": np.float32,
    "float16": np.float16,
    "float64": np.float64,
    "int8": np.int8,
    "int16": np.int16,
    "int32": np.int32,
    "int64": np.int64,
    "uint8": np.uint8,
    "uint16": np.uint16,
    "uint32": np.uint32,
    "uint64": np.uint64,
    "bool": np.bool_,
    "complex64": np.complex64,
    "complex128": np.complex128,
    "bfloat16": ml_dtypes.bfloat16,
    "float8_e4m3fn": ml_dtypes.float8_e4m3fn,
    "float8_e4m3fnuz": ml_dtypes.float8_e4m3fnuz,
    "float8_e5m2": ml_dtypes.float8_e5m2,
    "float8_e5m2fnuz": ml_dtypes.float8_e5m2fnuz,
    "float8_e8m0fnu": ml_dtypes.float8_e8m0fnu,
    "float8_e3m4": ml_dtypes.float8_e3m4,
    "float8_e4m3": ml_dtypes.float8_e4m3,
    "float8_e4m3b11fnuz": ml_dtypes.float8_e4m3b11fnuz,
    "float6_e2m3fn": ml_dtypes.float6_e2m3fn,
    "float6_e3m2fn": ml_dtypes.float6_e3m2fn,
    "float4_e2m1fn": ml_dtypes.float4_e2m1fn,
    "int4": ml_dtypes.int4,
    "uint4": ml_dtypes.uint4,
    "int2": ml_dtypes.int2,
    "uint2": ml_dtypes.uint2,
}


@pytest.mark.parametrize("text, np_type", NUMPY.items())
def test_to_numpy_dtype(text, np_type):
    dt = to_numpy_dtype(text)
    assert isinstance(dt, np.dtype) and dt == np.dtype(np_type)
    assert from_numpy_dtype(dt) == text
    assert from_numpy_dtype(np_type) == text


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("float32x4", "vector dtype 'float32x4'"),
        ("handle", "handle has no numpy equivalent"),
        ("void", "handle has no numpy equivalent"),
        ("int1", "sub-byte dtype 'int1'"),
        ("uint1", "sub-byte dtype 'uint1'"),
        ("float31", "unknown dtype"),
    ],
)
def test_to_numpy_dtype_errors(text, fragment):
    with pytest.raises(ValueError, match=fragment):
        to_numpy_dtype(text)


def test_from_numpy_dtype_accepts_any_dtype_spelling():
    assert from_numpy_dtype("float32") == "float32"
    assert from_numpy_dtype(np.dtype("int16")) == "int16"
    assert from_numpy_dtype(np.zeros(2, "uint8").dtype) == "uint8"
    assert from_numpy_dtype(bool) == "bool"


@pytest.mark.parametrize("dtype", [object, np.str_, "datetime64[ns]", np.longdouble, "V4"])
def test_from_numpy_dtype_rejects_unmapped_types(dtype):
    if np.dtype(dtype) == np.float64:  # platforms where long double is double
        pytest.skip("long double is float64 here")
    with pytest.raises(ValueError, match="dtype"):
        from_numpy_dtype(dtype)


def test_float8_alias_reads_as_e4m3fn():
    assert parse_dtype("float8") == parse_dtype("float8_e4m3fn")
    assert to_numpy_dtype("float8") == np.dtype(ml_dtypes.float8_e4m3fn)


@pytest.mark.parametrize("code", sorted(LOW_PRECISION_FLOAT_CODES))
def test_float_formats_agree_with_ml_dtypes(code):
    fmt = float_format(code)
    info = ml_dtypes.finfo(getattr(ml_dtypes, fmt.name))
    assert (fmt.exponent_bits, fmt.mantissa_bits) == (info.nexp, info.nmant)
    # e8m0 has no subnormals: its smallest exponent is that of the encoding 0
    assert (1 - fmt.bias if fmt.kind != "e8m0" else -fmt.bias) == info.minexp
    assert is_float_code(code) and is_low_precision(fmt.name)
    assert fmt.has_sign == (fmt.kind != "e8m0")
    assert fmt.bits == fmt.exponent_bits + fmt.mantissa_bits + fmt.has_sign


def test_float_code_predicates():
    assert is_float_code(DTypeCode.FLOAT) and is_float_code(DTypeCode.BFLOAT)
    assert not is_float_code(DTypeCode.INT) and float_format(DTypeCode.FLOAT) is None
    assert is_low_precision("int4") and is_low_precision("uint2x4")
    assert not is_low_precision("int8") and not is_low_precision("bfloat16")
    assert not is_low_precision("uint1")


@pytest.mark.parametrize(
    "text, nbytes, storage",
    [
        ("float32", 4, "float32"),
        ("float32x4", 16, "float32x4"),
        ("bool", 1, "bool"),
        ("int4", 1, "uint8"),
        ("uint2x8", 8, "uint8x8"),
        ("float4_e2m1fn", 1, "uint8"),
        ("float8_e4m3fnx4", 4, "uint8x4"),
        ("float6_e3m2fn", 1, "uint8"),
        ("int64", 8, "int64"),
    ],
)
def test_storage_is_one_byte_per_narrow_element(text, nbytes, storage):
    assert storage_bytes(text) == nbytes
    assert storage_dtype(text) == storage
    if parse_dtype(text)[2] == 1 and text != "bool":
        assert to_numpy_dtype(text).itemsize == nbytes  # the numpy (ml_dtypes) layout


def test_from_numpy_dtype_refuses_the_other_byte_order():
    import sys

    other = ">" if sys.byteorder == "little" else "<"
    with pytest.raises(ValueError, match="-endian and this machine is"):
        from_numpy_dtype(np.dtype(other + "f4"))
    native = "<" if sys.byteorder == "little" else ">"
    assert from_numpy_dtype(np.dtype(native + "i8")) == "int64"
    assert from_numpy_dtype(np.dtype("|u1")) == "uint8"  # no byte order
