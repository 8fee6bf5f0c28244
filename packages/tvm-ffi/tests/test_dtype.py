"""Data type strings: parsing, printing, numpy mapping."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tvm.ffi.dtype import DTypeCode, format_dtype, from_numpy_dtype, parse_dtype, to_numpy_dtype

CANONICAL = {
    "float32": (DTypeCode.FLOAT, 32, 1),
    "float16": (DTypeCode.FLOAT, 16, 1),
    "float64": (DTypeCode.FLOAT, 64, 1),
    "float8": (DTypeCode.FLOAT, 8, 1),
    "bfloat16": (DTypeCode.BFLOAT, 16, 1),
    "int8": (DTypeCode.INT, 8, 1),
    "int16": (DTypeCode.INT, 16, 1),
    "int32": (DTypeCode.INT, 32, 1),
    "int64": (DTypeCode.INT, 64, 1),
    "int4": (DTypeCode.INT, 4, 1),
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
    assert [int(c) for c in DTypeCode] == [0, 1, 2, 3, 4, 5, 6]
    assert DTypeCode.INT == 0 and DTypeCode.FLOAT == 2 and DTypeCode.BFLOAT == 4
    assert DTypeCode.BOOL == 6 and DTypeCode.HANDLE == 3


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
        "float8_e4m3fn",
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
    ],
)
def test_format_rejects_what_parse_would_not_read(triple):
    with pytest.raises(ValueError, match="no dtype string"):
        format_dtype(*triple)


def test_format_rejects_unknown_codes():
    with pytest.raises(ValueError):
        format_dtype(99, 32, 1)


LEGAL = [
    (DTypeCode.INT, (1, 4, 8, 16, 32, 64)),
    (DTypeCode.UINT, (1, 4, 8, 16, 32, 64)),
    (DTypeCode.FLOAT, (8, 16, 32, 64)),
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
    "float8": ml_dtypes.float8_e4m3fn,
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
        ("int4", "sub-byte dtype 'int4'"),
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
