import copy
import pickle

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tvm.ffi import from_json, structural_equal, structural_hash, to_json
from tvm.ffi.dtype import DTypeCode
from tvm.ir import DataType, GlobalVar, IRModule


def test_parts_and_str():
    t = DataType("float32x8")
    assert (t.code, t.bits, t.lanes) == (DTypeCode.FLOAT, 32, 8)
    assert str(t) == "float32x8"
    assert repr(t) == "DataType('float32x8')"
    assert DataType("float") == "float32"
    assert str(DataType("bool")) == "bool"


@pytest.mark.parametrize(
    "text, preds",
    [
        ("int8", {"is_int", "is_integer", "is_scalar"}),
        ("uint16", {"is_uint", "is_integer", "is_scalar"}),
        ("float16", {"is_float", "is_floating_point", "is_float16", "is_scalar"}),
        ("bfloat16", {"is_bfloat", "is_floating_point", "is_scalar"}),
        ("bool", {"is_bool", "is_scalar"}),
        ("handle", {"is_handle", "is_scalar"}),
        ("float32x4", {"is_float", "is_floating_point", "is_vector"}),
        ("complex64", {"is_complex", "is_scalar"}),
    ],
)
def test_predicates(text, preds):
    t = DataType(text)
    names = [
        "is_int",
        "is_uint",
        "is_integer",
        "is_float",
        "is_bfloat",
        "is_floating_point",
        "is_float16",
        "is_complex",
        "is_bool",
        "is_handle",
        "is_void",
        "is_scalar",
        "is_vector",
    ]
    assert {n for n in names if getattr(t, n)()} == preds


def test_void():
    assert DataType("void").is_void() and not DataType("void").is_handle()


def test_lanes_and_element():
    t = DataType("int8")
    v = t.with_lanes(16)
    assert v == "int8x16" and v.element_of is t and v.element_of == "int8"
    assert DataType("float32").with_bits(64) == "float64"
    assert (
        v.bytes == 16 and DataType("int4").bytes == 1 and DataType("int4").with_lanes(4).bytes == 4
    )  # one byte per element, also for 4-bit types (the ml_dtypes layout)
    with pytest.raises(ValueError, match="lanes"):
        t.with_lanes(0)
    with pytest.raises(ValueError, match="cannot be vectorised"):
        DataType("handle").with_lanes(4)
    with pytest.raises(ValueError):
        DataType("float32").with_bits(7)


def test_equality_and_hash():
    assert DataType("float32") == DataType("float")
    assert DataType("float32") == "float32" and "float32" == DataType("float32")
    assert DataType("float32") != "float16"
    assert DataType("float32") != "not a dtype"
    assert DataType("float32") != 3
    assert hash(DataType("float32")) == hash("float32")
    assert len({DataType("int8"), DataType("int8"), "int8"}) == 1
    assert DataType("int8") is DataType("int8")  # interned


def test_immutable_and_copies():
    t = DataType("int32")
    with pytest.raises(AttributeError, match="immutable"):
        t.bits = 64
    assert copy.copy(t) is t and copy.deepcopy(t) is t
    assert pickle.loads(pickle.dumps(t)) == t


def test_numpy():
    assert DataType("float32").numpy_dtype == np.float32
    assert DataType("bfloat16").numpy_dtype == np.dtype(ml_dtypes.bfloat16)
    assert DataType(np.int16) == "int16"
    assert DataType(np.dtype("uint8")) == "uint8"
    with pytest.raises(ValueError, match="vector"):
        _ = DataType("float32x4").numpy_dtype


def test_errors():
    with pytest.raises(ValueError, match="unknown dtype 'flaot32'"):
        DataType("flaot32")
    with pytest.raises(TypeError, match="dtype string"):
        DataType(3.5)
    with pytest.raises(ValueError, match="invalid dtype code 99"):
        DataType.from_parts(99, 32)
    with pytest.raises(ValueError):
        DataType.from_parts(DTypeCode.INT, 7)
    assert DataType.from_parts(DTypeCode.UINT, 8, 4) == "uint8x4"


def test_json_and_structural_inside_objects():
    gv = GlobalVar("f")
    value = {"dtypes": [DataType("float32x4"), DataType("int8")], "gv": gv}
    back = from_json(to_json(value))
    assert back["dtypes"][0] is DataType("float32x4")
    assert structural_equal(back, value)
    assert structural_hash(DataType("int8")) == structural_hash(DataType("int8"))
    assert not structural_equal(DataType("int8"), DataType("int16"))
    assert not structural_equal(
        IRModule(attrs={"d": DataType("int8")}), IRModule(attrs={"d": "int8"})
    )


_dtypes = st.one_of(
    st.sampled_from(["int", "uint"]).flatmap(
        lambda k: st.sampled_from([8, 16, 32, 64]).map(lambda b: f"{k}{b}")
    ),
    st.sampled_from(["float16", "float32", "float64", "bfloat16", "bool"]),
)


@settings(max_examples=60, deadline=None)
@given(_dtypes, st.integers(1, 64))
def test_roundtrip_property(base, lanes):
    t = DataType(base).with_lanes(lanes)
    assert DataType(str(t)) is t
    assert DataType.from_parts(t.code, t.bits, t.lanes) == t
    assert t.element_of == base
    assert from_json(to_json(t)) == t


@pytest.mark.parametrize(
    "text, float8, float4, low_float, low",
    [
        ("float8_e4m3fn", True, False, True, True),
        ("float8_e5m2x4", True, False, True, True),
        ("float8_e8m0fnu", True, False, True, True),
        ("float4_e2m1fn", False, True, True, True),
        ("int4", False, False, False, True),
        ("uint2", False, False, False, True),
        ("float16", False, False, False, False),
        ("int8", False, False, False, False),
    ],
)
def test_low_precision_predicates(text, float8, float4, low_float, low):
    t = DataType(text)
    assert t.is_float8() == float8 and t.is_float4() == float4
    assert t.is_low_precision_float() == low_float and t.is_low_precision() == low
    assert t.is_floating_point() == (low_float or text.startswith("float"))
    assert (t.float_format is not None) == low_float
    assert not (low_float and t.is_float())  # float8 formats have their own type codes


def test_low_precision_numpy_round_trip():
    for np_type in (ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2fnuz, ml_dtypes.int4,
                    ml_dtypes.float4_e2m1fn, ml_dtypes.uint2):
        t = DataType(np_type)
        assert str(t) == np.dtype(np_type).name and t.numpy_dtype == np.dtype(np_type)
    assert DataType("float8") == "float8_e4m3fn" and str(DataType("float8")) == "float8_e4m3fn"
