from __future__ import annotations

import ctypes
import gc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tvm.runtime as rt
from tvm.ffi.dlpack import DLTensor


def test_empty_is_aligned_and_described():
    t = rt.empty((3, 5), "float32")
    assert t.shape == (3, 5) and t.dtype == "float32" and t.ndim == 2
    assert t.device == rt.cpu(0) and t.strides is None and t.is_contiguous
    assert t.data_ptr % 64 == 0
    assert t.nbytes == 60 and t.size == 15
    dl = t.handle.contents
    assert isinstance(dl, DLTensor)
    assert dl.shape_tuple == (3, 5) and dl.strides_tuple is None
    assert str(dl.dtype) == "float32" and dl.device.device_type == 1 and dl.data == t.data_ptr


def test_empty_shape_and_dtype_errors():
    with pytest.raises(ValueError, match=r"shape\[1\] must be >= 0"):
        rt.empty((2, -1))
    with pytest.raises(TypeError, match=r"shape\[0\] must be an int"):
        rt.empty((2.0,))
    with pytest.raises(ValueError, match="unknown dtype"):
        rt.empty((2,), "float31")
    with pytest.raises(ValueError, match="cannot live in a CPU tensor"):
        rt.empty((2,), "float32x4")


def test_tensor_from_list_and_numpy():
    t = rt.tensor([[1, 2], [3, 4]], dtype="float32")
    assert t.dtype == "float32"
    np.testing.assert_array_equal(t.numpy(), [[1, 2], [3, 4]])
    a = np.arange(6, dtype="int16").reshape(2, 3)
    u = rt.tensor(a)
    assert u.dtype == "int16" and u.data_ptr % 64 == 0
    a[0, 0] = 100  # tensor() copies
    assert u.numpy()[0, 0] == 0
    assert rt.tensor(True).dtype == "bool" and rt.tensor(True).shape == ()
    assert rt.tensor(np.float16(1.5)).dtype == "float16"


def test_numpy_returns_a_copy():
    t = rt.tensor(np.ones(4, "float32"))
    n = t.numpy()
    n[:] = 7
    assert t.numpy().tolist() == [1, 1, 1, 1]
    assert np.asarray(t).tolist() == [1, 1, 1, 1]


def test_tensor_bad_data():
    with pytest.raises(TypeError, match="does not convert to a numeric array"):
        rt.tensor([object()])
    with pytest.raises(TypeError, match="cannot convert"):
        rt.tensor([[1, 2], [3]])


def test_copyfrom_checks():
    t = rt.empty((2, 3), "float32")
    t.copyfrom(np.arange(6, dtype="float32").reshape(2, 3))
    assert t.numpy()[1, 2] == 5
    t.copyfrom([[0, 1, 2], [3, 4, 5]])
    with pytest.raises(ValueError, match=r"shape mismatch: the source has shape \(3, 2\)"):
        t.copyfrom(np.zeros((3, 2), "float32"))
    with pytest.raises(ValueError, match=r"dtype float64 differs.*astype\('float32'\)"):
        t.copyfrom(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="dtype mismatch"):
        t.copyfrom(rt.empty((2, 3), "int32"))
    with pytest.raises(TypeError, match="cannot convert str"):
        t.copyfrom("hello")
    assert t.copyfrom(rt.tensor(np.full((2, 3), 2, "float32"))) is t
    assert (t.numpy() == 2).all()


def test_copyto_device_and_tensor():
    a = rt.tensor(np.arange(4, dtype="int32"))
    b = a.copyto(rt.cpu(0))
    assert b is not a and b.numpy().tolist() == [0, 1, 2, 3]
    c = rt.empty((4,), "int32")
    assert a.copyto(c) is c and c.numpy().tolist() == [0, 1, 2, 3]
    d = a.copyto("cpu")
    assert d.device == rt.cpu(0)


def test_strided_views_from_numpy():
    base = np.arange(24, dtype="float64").reshape(4, 6)
    view = base[::2, 1::3]
    t = rt.from_dlpack(view)
    assert t.strides == (12, 3) and not t.is_contiguous
    assert t.handle.contents.strides_tuple == (12, 3)
    np.testing.assert_array_equal(t.numpy(), view)
    t.copyfrom(np.zeros((2, 2)))
    assert base[0, 1] == 0 and base[2, 4] == 0  # written through the view
    assert base[1, 1] == 7 and base[0, 2] == 2  # untouched


def test_unit_dims_count_as_compact():
    a = np.zeros((1, 4), "float32")[:, :]
    t = rt.from_dlpack(np.lib.stride_tricks.as_strided(a, (1, 4), (1000, 4)))
    assert t.strides is None


def test_handle_stays_valid_while_tensor_lives():
    t = rt.tensor(np.arange(3, dtype="int64"))
    h = t.handle
    assert h is t.handle
    gc.collect()
    values = ctypes.cast(h.contents.data, ctypes.POINTER(ctypes.c_int64))
    assert [values[i] for i in range(3)] == [0, 1, 2]


def test_create_view():
    t = rt.tensor(np.arange(8, dtype="int32"))
    v = t.create_view((2, 2), byte_offset=8)
    assert v.numpy().tolist() == [[2, 3], [4, 5]]
    v.copyfrom(np.zeros((2, 2), "int32"))
    assert t.numpy().tolist() == [0, 1, 0, 0, 0, 0, 6, 7]
    f = t.create_view((8,), "float32")
    assert f.dtype == "float32" and f.data_ptr == t.data_ptr
    with pytest.raises(ValueError, match="needs 36 bytes; the tensor has 32"):
        t.create_view((8,), byte_offset=4)


def test_repr():
    r = repr(rt.tensor([1.0, 2.0]))
    assert "shape=(2,)" in r and "float64" in r and "cpu(0)" in r and "[1. 2.]" in r


@settings(max_examples=40, deadline=None)
@given(
    hnp.arrays(
        dtype=st.sampled_from(["float32", "float64", "int8", "uint16", "int64", "bool"]),
        shape=hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4),
    )
)
def test_roundtrip_property(arr):
    t = rt.tensor(arr)
    assert t.shape == arr.shape and t.dtype == str(arr.dtype)
    np.testing.assert_array_equal(t.numpy(), arr)
    np.testing.assert_array_equal(t.copyto(rt.cpu(0)).numpy(), arr)


# ---------------------------------------------------------------- non-CPU devices


def test_device_tensor_through_device_api(ext_device):
    dev = rt.ext_dev(0)
    assert dev.exist and not rt.ext_dev(5).exist
    t = rt.tensor(np.arange(6, dtype="float32").reshape(2, 3), device=dev)
    assert t.device == dev and ext_device.calls["alloc"] >= 1
    np.testing.assert_array_equal(t.numpy(), np.arange(6).reshape(2, 3))
    back = t.copyto(rt.cpu(0))
    assert back.device == rt.cpu(0)
    np.testing.assert_array_equal(back.numpy(), t.numpy())
    other = rt.empty((2, 3), "float32", "ext_dev:1")
    t.copyto(other)
    assert ext_device.calls["d2d"] == 1
    np.testing.assert_array_equal(other.numpy(), t.numpy())
    view = t.create_view((3,), byte_offset=12)
    assert view.numpy().tolist() == [3, 4, 5] and view.byte_offset == 12
    strided_host = np.zeros((3, 2), "float32").T
    t.copyto(rt.from_dlpack(strided_host))
    np.testing.assert_array_equal(strided_host, t.numpy())
    frees = ext_device.calls.get("free", 0)
    del t, view, other
    gc.collect()
    assert ext_device.calls["free"] == frees + 2


def test_device_tensor_dtype_without_numpy(ext_device):
    t = rt.empty((4,), "float32x4", rt.ext_dev(0))
    assert t.nbytes == 64
    with pytest.raises(ValueError, match="float32x4"):
        t.numpy()
