"""DLPack ctypes structures: layouts against dlpack.h, dtype strings, and a real producer."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tvm.ffi.dlpack import (
    DLPACK_FLAG_BITMASK_IS_COPIED,
    DLPACK_FLAG_BITMASK_READ_ONLY,
    ArgTypeCode,
    DLDataType,
    DLDataTypeCode,
    DLDevice,
    DLDeviceType,
    DLManagedTensor,
    DLManagedTensorDeleter,
    DLManagedTensorVersioned,
    DLPackVersion,
    DLTensor,
    TVMValue,
)
from tvm.ffi.dtype import DTypeCode

PTR = ctypes.sizeof(ctypes.c_void_p)
is_64bit = pytest.mark.skipif(PTR != 8, reason="layout numbers are for 64-bit platforms")


def offsets(struct) -> dict[str, int]:
    return {name: getattr(struct, name).offset for name, *_ in struct._fields_}


# ------------------------------------------------------------------ layouts (dlpack.h 1.1)


def test_small_struct_layouts():
    assert ctypes.sizeof(DLDevice) == 8
    assert offsets(DLDevice) == {"device_type": 0, "device_id": 4}
    assert ctypes.sizeof(DLDataType) == 4
    assert offsets(DLDataType) == {"code": 0, "bits": 1, "lanes": 2}
    assert ctypes.sizeof(DLPackVersion) == 8
    assert ctypes.sizeof(TVMValue) == 8


@is_64bit
def test_dltensor_layout():
    assert ctypes.sizeof(DLTensor) == 48
    assert offsets(DLTensor) == {
        "data": 0,
        "device": 8,
        "ndim": 16,
        "dtype": 20,
        "shape": 24,
        "strides": 32,
        "byte_offset": 40,
    }


@is_64bit
def test_managed_tensor_layouts():
    assert ctypes.sizeof(DLManagedTensor) == 64
    assert offsets(DLManagedTensor) == {"dl_tensor": 0, "manager_ctx": 48, "deleter": 56}
    assert ctypes.sizeof(DLManagedTensorVersioned) == 80
    assert offsets(DLManagedTensorVersioned) == {
        "version": 0,
        "manager_ctx": 8,
        "deleter": 16,
        "flags": 24,
        "dl_tensor": 32,
    }


def test_enum_values_match_header():
    assert DLDeviceType.kDLCPU == 1
    assert DLDeviceType.kDLCUDA == 2
    assert DLDeviceType.kDLCUDAHost == 3
    assert DLDeviceType.kDLOpenCL == 4
    assert DLDeviceType.kDLVulkan == 7
    assert DLDeviceType.kDLMetal == 8
    assert DLDeviceType.kDLVPI == 9
    assert DLDeviceType.kDLROCM == 10
    assert DLDeviceType.kDLExtDev == 12
    assert DLDeviceType.kDLOneAPI == 14
    assert DLDeviceType.kDLHexagon == 16
    # the DLPack type codes agree with the dtype module
    for code in DLDataTypeCode:
        assert DTypeCode(int(code)) == int(code)
    assert (DLPACK_FLAG_BITMASK_READ_ONLY, DLPACK_FLAG_BITMASK_IS_COPIED) == (1, 2)


def test_arg_type_codes():
    assert [(c.name, int(c)) for c in ArgTypeCode] == [
        ("kInt", 0),
        ("kUInt", 1),
        ("kFloat", 2),
        ("kOpaqueHandle", 3),
        ("kNull", 4),
        ("kDLTensorHandle", 7),
    ]


def test_tvm_value_is_a_union():
    v = TVMValue()
    v.v_float64 = 1.0
    assert v.v_int64 == 0x3FF0000000000000  # IEEE-754 bits of 1.0
    v.v_handle = 0x1234
    assert v.v_int64 == 0x1234
    args = (TVMValue * 3)()
    assert ctypes.sizeof(args) == 24


# ------------------------------------------------------------------ device and dtype


def test_device():
    dev = DLDevice(DLDeviceType.kDLCUDA, 1)
    assert (dev.device_type, dev.device_id) == (2, 1)
    assert dev.type_enum is DLDeviceType.kDLCUDA
    assert repr(dev) == "DLDevice(kDLCUDA, 1)"
    assert DLDevice() == DLDevice(DLDeviceType.kDLCPU, 0)
    assert DLDevice(99, 0).type_enum == 99
    assert repr(DLDevice(99, 0)) == "DLDevice(99, 0)"


@pytest.mark.parametrize(
    "text, triple",
    [
        ("float32", (2, 32, 1)),
        ("float16", (2, 16, 1)),
        ("int8", (0, 8, 1)),
        ("uint64", (1, 64, 1)),
        ("bfloat16", (4, 16, 1)),
        ("bool", (6, 8, 1)),
        ("float32x8", (2, 32, 8)),
        ("handle", (3, 64, 1)),
    ],
)
def test_dtype_from_str(text, triple):
    dt = DLDataType.from_str(text)
    assert (dt.code, dt.bits, dt.lanes) == triple
    assert str(dt) == text
    assert dt == DLDataType(*triple)


def test_dtype_errors():
    with pytest.raises(ValueError, match="unknown dtype 'floaty'"):
        DLDataType.from_str("floaty")
    with pytest.raises(ValueError, match=r"DLDataType.lanes must be in \[0, 65535\], got 70000"):
        DLDataType(2, 32, 70000)
    with pytest.raises(ValueError, match="DLDataType.bits"):
        DLDataType(2, 256, 1)
    assert repr(DLDataType(42, 8, 1)) == "DLDataType(code=42, bits=8, lanes=1)"
    assert repr(DLDataType.from_str("int8")) == "DLDataType(int8)"


def test_itemsize():
    assert DLDataType.from_str("float32x4").itemsize == 16
    assert DLDataType.from_str("int4").itemsize == 1
    assert DLDataType.from_str("bool").itemsize == 1


_dtype_text = st.builds(
    lambda base, lanes: base if lanes == 1 else f"{base}x{lanes}",
    st.sampled_from(
        [
            "int8",
            "int16",
            "int32",
            "int64",
            "uint8",
            "uint32",
            "float16",
            "float32",
            "float64",
            "bfloat16",
            "bool",
        ]
    ),
    st.sampled_from([1, 2, 4, 8, 16, 64, 1024]),
)


@settings(max_examples=60, deadline=None)
@given(_dtype_text)
def test_dtype_round_trip_through_struct_bytes(text):
    dt = DLDataType.from_str(text)
    copy = DLDataType.from_buffer_copy(bytes(dt))
    assert str(copy) == text


# ------------------------------------------------------------------ tensors


def _dltensor_of(arr: np.ndarray, keep: list) -> DLTensor:
    shape = (ctypes.c_int64 * arr.ndim)(*arr.shape)
    strides = (ctypes.c_int64 * arr.ndim)(*(s // arr.itemsize for s in arr.strides))
    keep += [shape, strides]
    return DLTensor(
        data=arr.ctypes.data,
        device=DLDevice(DLDeviceType.kDLCPU, 0),
        ndim=arr.ndim,
        dtype=DLDataType.from_str(str(arr.dtype)),
        shape=ctypes.cast(shape, ctypes.POINTER(ctypes.c_int64)),
        strides=ctypes.cast(strides, ctypes.POINTER(ctypes.c_int64)),
        byte_offset=0,
    )


def test_dltensor_views_numpy_memory():
    arr = np.arange(12, dtype="float32").reshape(3, 4)[:, ::2]
    keep: list = []
    t = _dltensor_of(arr, keep)
    assert t.shape_tuple == (3, 2)
    assert t.strides_tuple == (4, 2)
    assert str(t.dtype) == "float32"
    base = ctypes.cast(t.data, ctypes.POINTER(ctypes.c_float))
    got = [[base[i * t.strides[0] + j * t.strides[1]] for j in range(2)] for i in range(3)]
    assert got == arr.tolist()
    assert "shape=(3, 2)" in repr(t) and "dtype=float32" in repr(t)


def test_dltensor_null_strides_and_bad_shape():
    t = DLTensor()
    assert t.shape_tuple == () and t.strides_tuple is None
    t.ndim = 2
    with pytest.raises(ValueError, match="ndim=2 but a NULL shape"):
        t.shape_tuple  # noqa: B018


def test_deleter_is_callable_through_the_struct():
    called = []

    @DLManagedTensorDeleter
    def deleter(ptr):
        called.append(ptr.contents.manager_ctx)

    managed = DLManagedTensor(manager_ctx=0xABC, deleter=deleter)
    managed.deleter(ctypes.pointer(managed))
    assert called == [0xABC]


_capsule_get = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_get.restype = ctypes.c_void_p
_capsule_get.argtypes = [ctypes.py_object, ctypes.c_char_p]


def test_reads_a_numpy_dlpack_capsule():
    """numpy's own DLPack producer fills our struct layout exactly."""
    arr = np.arange(6, dtype="int16").reshape(2, 3)
    capsule = arr.__dlpack__()
    managed = DLManagedTensor.from_address(_capsule_get(capsule, b"dltensor"))
    t = managed.dl_tensor
    assert t.data == arr.ctypes.data
    assert t.device == DLDevice(DLDeviceType.kDLCPU, 0)
    assert t.ndim == 2 and t.shape_tuple == (2, 3)
    assert str(t.dtype) == "int16"
    assert t.strides_tuple in (None, (3, 1))
    assert t.byte_offset == 0
    del capsule  # its destructor calls the producer's deleter


def test_reads_a_versioned_numpy_capsule():
    arr = np.ones((4,), dtype="float64")
    try:
        capsule = arr.__dlpack__(max_version=(1, 0))
    except TypeError:
        pytest.skip("numpy without versioned DLPack")
    managed = DLManagedTensorVersioned.from_address(_capsule_get(capsule, b"dltensor_versioned"))
    assert managed.version.major == 1
    assert managed.dl_tensor.shape_tuple == (4,)
    assert str(managed.dl_tensor.dtype) == "float64"
    assert managed.dl_tensor.data == arr.ctypes.data
    assert not managed.flags & DLPACK_FLAG_BITMASK_IS_COPIED
