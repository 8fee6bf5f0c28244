"""Tensors of the low-precision types (float8, float4, int4, int2): numpy (ml_dtypes) arrays
in and out, one byte per element, DLPack round trips with the DLPack 1.1 type codes, and
VM storage."""

from __future__ import annotations

import numpy as np
import pytest

import tvm.runtime as rt
from tvm.ffi.dlpack import DLDataType
from tvm.runtime.vm import StoragePool

ml_dtypes = pytest.importorskip("ml_dtypes")

LOW = ["float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu",
       "float4_e2m1fn", "int4", "uint4", "int2", "uint2"]


def _array(dtype: str) -> np.ndarray:
    """A (3, 4) array of ``dtype`` holding valid bit patterns 0..11 (modulo its width)."""
    bits = 8 if dtype.startswith("float8") else 2 if dtype.endswith("2") else 4
    codes = (np.arange(12) % (1 << bits)).astype(np.uint8)
    return codes.reshape(3, 4).view(getattr(ml_dtypes, dtype))


@pytest.mark.parametrize("dtype", LOW)
def test_numpy_arrays_in_and_out(dtype):
    a = _array(dtype)
    t = rt.tensor(a)
    assert t.dtype == dtype and t.shape == (3, 4) and t.nbytes == 12
    back = t.numpy()
    assert back.dtype == a.dtype and np.array_equal(back.view(np.uint8), a.view(np.uint8))
    e = rt.empty((5,), dtype)
    assert e.nbytes == 5 and e.numpy().dtype == a.dtype
    e.copyfrom(a.reshape(-1)[:5])
    assert np.array_equal(e.numpy().view(np.uint8), a.view(np.uint8).reshape(-1)[:5])
    view = t.create_view((4,), dtype, byte_offset=4)
    assert np.array_equal(view.numpy().view(np.uint8), a.view(np.uint8)[1])


@pytest.mark.parametrize("dtype", LOW)
def test_dlpack_round_trip_keeps_the_type_code(dtype):
    a = _array(dtype)
    t = rt.tensor(a)
    dl = t._dltensor().dtype
    assert str(dl) == dtype and DLDataType.from_str(dtype).itemsize == 1
    if dtype.startswith("float"):
        assert dl.code >= 7  # the DLPack 1.1 code of the format
    for versioned in (None, (1, 1)):
        capsule = t.__dlpack__() if versioned is None else t.__dlpack__(max_version=versioned)
        u = rt.from_dlpack(capsule)
        assert u.dtype == dtype and u.data_ptr == t.data_ptr
        assert np.array_equal(u.numpy().view(np.uint8), a.view(np.uint8))


def test_tensor_rejects_a_mismatched_low_precision_copy():
    t = rt.empty((4,), "float8_e4m3fn")
    with pytest.raises(ValueError, match="float8_e5m2"):
        t.copyfrom(np.zeros(4, ml_dtypes.float8_e5m2))


def test_vm_storage_allocates_one_byte_per_element():
    pool = StoragePool(rt.cpu())
    s = pool.alloc(16)
    t = s.alloc_tensor(0, (16,), "int4")
    assert t.dtype == "int4" and t.numpy().dtype == np.dtype(ml_dtypes.int4)
    with pytest.raises(ValueError, match="needs 17 bytes"):
        s.alloc_tensor(1, (16,), "float4_e2m1fn")
