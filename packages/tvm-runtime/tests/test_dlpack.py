from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

import tvm.runtime as rt
from tvm.runtime import _dlpack


class DLPackOnly:
    """Exposes only the DLPack protocol of ``inner`` (so numpy shortcuts do not apply)."""

    def __init__(self, inner, legacy=False):
        self.inner = inner
        self.legacy = legacy

    def __dlpack_device__(self):
        return self.inner.__dlpack_device__()

    def __dlpack__(self, **kwargs):
        if self.legacy:
            kwargs.pop("max_version", None)
            if kwargs:
                raise TypeError("legacy producer takes no keywords")
        return self.inner.__dlpack__(**kwargs)


def test_numpy_to_tensor_is_zero_copy():
    a = np.arange(6, dtype="float32").reshape(2, 3)
    t = rt.from_dlpack(a)
    assert t.data_ptr == a.ctypes.data and t.shape == (2, 3) and t.dtype == "float32"
    a[1, 1] = 42
    assert t.numpy()[1, 1] == 42


def test_tensor_to_numpy_is_zero_copy():
    t = rt.tensor(np.zeros(5, "int32"))
    view = np.from_dlpack(t)
    assert view.ctypes.data == t.data_ptr
    view[2] = 9
    assert t.numpy().tolist() == [0, 0, 9, 0, 0]
    assert t.__dlpack_device__() == (1, 0)


def test_numpy_view_outlives_tensor():
    t = rt.tensor(np.arange(4.0))
    view = np.from_dlpack(t)
    del t
    gc.collect()
    assert view.tolist() == [0.0, 1.0, 2.0, 3.0]


def test_generic_producer_goes_through_numpy_on_cpu():
    a = np.arange(4, dtype="uint8")
    t = rt.from_dlpack(DLPackOnly(a))
    assert t.data_ptr == a.ctypes.data


def test_from_dlpack_rejects_non_dlpack():
    with pytest.raises(TypeError, match="list does not support DLPack"):
        rt.from_dlpack([1, 2])
    assert rt.from_dlpack(rt.empty((1,))).shape == (1,)


def test_export_refuses_other_device_and_copy():
    t = rt.empty((2,))
    with pytest.raises(BufferError, match="cannot export a tensor on cpu"):
        t.__dlpack__(dl_device=(2, 0))
    with pytest.raises(BufferError, match="copy=True"):
        t.__dlpack__(copy=True)


@pytest.mark.parametrize("versioned", [False, True])
def test_own_capsules_round_trip_on_cpu(versioned):
    base = np.arange(12, dtype="int16").reshape(3, 4)[:, ::2]
    src = rt.from_dlpack(base)
    capsule = _dlpack.to_capsule(src, src._dltensor(), versioned=versioned)
    t = rt.from_dlpack(capsule)
    assert t.shape == (3, 2) and t.dtype == "int16" and t.strides == (4, 2)
    assert t.data_ptr == base.ctypes.data
    np.testing.assert_array_equal(t.numpy(), base)
    with pytest.raises(BufferError, match="consumed already"):
        rt.from_dlpack(capsule)
    ref = weakref.ref(src)
    del src, capsule
    gc.collect()
    assert ref() is not None  # the consumer's tensor holds the export
    del t
    gc.collect()
    assert ref() is None


def test_zero_size_capsule():
    t = rt.empty((0, 3), "float32")
    u = rt.from_dlpack(_dlpack.to_capsule(t, t._dltensor(), versioned=True))
    assert u.shape == (0, 3) and u.numpy().shape == (0, 3)


def test_unconsumed_capsule_releases_the_tensor():
    t = rt.empty((3,), "float32")
    cap = _dlpack.to_capsule(t, t._dltensor(), versioned=False)
    ref = weakref.ref(t)
    del t
    gc.collect()
    assert ref() is not None
    del cap
    gc.collect()
    assert ref() is None


def test_failed_consumer_keeps_its_exception():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    t = rt.tensor(np.zeros(3, dtype=ml_dtypes.bfloat16))
    with pytest.raises((BufferError, RuntimeError)) as info:
        np.from_dlpack(t)  # numpy cannot import bfloat16: its own error must survive
    assert not isinstance(info.value, SystemError)


def test_read_only_export():
    a = np.arange(3.0)
    a.flags.writeable = False
    t = rt.from_dlpack(a)
    with pytest.raises(BufferError, match="readonly"):
        t.__dlpack__()
    back = np.from_dlpack(t)
    assert not back.flags.writeable and back.tolist() == [0.0, 1.0, 2.0]


def test_bfloat16_uses_own_capsule():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    a = np.array([1.5, -2.0, 3.25], dtype=ml_dtypes.bfloat16)
    t = rt.tensor(a)
    assert t.dtype == "bfloat16"
    u = rt.from_dlpack(DLPackOnly(t))
    assert u.dtype == "bfloat16" and u.data_ptr == t.data_ptr
    np.testing.assert_array_equal(u.numpy().astype("float32"), [1.5, -2.0, 3.25])


@pytest.mark.parametrize("legacy", [False, True])
def test_device_tensor_dlpack_round_trip(ext_device, legacy):
    t = rt.tensor(np.arange(6, dtype="float32").reshape(2, 3), device=rt.ext_dev(0))
    u = rt.from_dlpack(DLPackOnly(t, legacy=legacy))
    assert u.device == rt.ext_dev(0) and u.data_ptr == t.data_ptr and u is not t
    np.testing.assert_array_equal(u.numpy(), t.numpy())
    u.copyfrom(np.zeros((2, 3), "float32"))
    assert (t.numpy() == 0).all()
    ref = weakref.ref(t)
    del t
    gc.collect()
    assert ref() is not None  # the consumer keeps the producer alive
    del u
    gc.collect()
    assert ref() is None


def test_device_export_with_stream_synchronizes(ext_device):
    t = rt.empty((2,), "float32", rt.ext_dev(0))
    cap = t.__dlpack__(stream=1)
    assert ext_device.calls.get("sync", 0) == 1
    del cap


def test_torch_interop():
    torch = pytest.importorskip("torch")
    t = rt.tensor(np.arange(6, dtype="float32").reshape(2, 3))
    pt = torch.from_dlpack(t)
    assert pt.data_ptr() == t.data_ptr and tuple(pt.shape) == (2, 3)
    pt[0, 0] = 5.0
    assert t.numpy()[0, 0] == 5.0
    back = rt.from_dlpack(torch.arange(4, dtype=torch.int64))
    assert back.dtype == "int64" and back.numpy().tolist() == [0, 1, 2, 3]
    strided = torch.arange(12, dtype=torch.float64).reshape(3, 4)[:, 1::2]
    s = rt.from_dlpack(strided)
    np.testing.assert_array_equal(s.numpy(), strided.numpy())
